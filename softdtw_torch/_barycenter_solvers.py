"""The batched soft-DTW barycenter objective and its solvers, shared by
:func:`softdtw_torch.barycenter.softdtw_barycenter`, :class:`softdtw_torch.clustering.SoftDTWKMeans`
and the scale-out modules (:mod:`softdtw_torch.distributed`, :mod:`softdtw_torch.dask`). How the
batch is laid out and what each solver does: :mod:`softdtw_torch.barycenter`'s docstring.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch import Tensor

from ._lbfgs import _Coroutine, _lbfgs, _Request
from ._ops import _C
from ._progress import Progress
from ._sharing import rows_by_rank
from .functional import soft_dtw

ArrayLike = Union[Tensor, np.ndarray, Sequence[Any]]

_METHODS = ("lbfgs", "adam")
# Per-method defaults of (max_iter, tol, lr). L-BFGS: tslearn's (and Blondel's) settings. Adam needs
# more, smaller steps: 200 steps from lr 0.1 (in X's units, suits standardised series) with the early
# stop at a 1e-5 relative improvement reach lower objectives than L-BFGS at tol 1e-3 on GunPoint.
_DEFAULTS = {"lbfgs": (50, 1e-3, 1.0), "adam": (200, 1e-5, 0.1)}
# soft_dtw's fused=None rule (kMaxFusedFeatures, csrc/softdtw/constants.h): up to this many
# features the objective runs the fused kernel, through _soft_dtw_fused_value_and_grad.
_MAX_FUSED_FEATURES = _C.SOFTDTW_MAX_FUSED_FEATURES


# ----------------------------------------------------------------------------------------------
# The batched objective
# ----------------------------------------------------------------------------------------------
def _member_terms(zp: Tensor, xb: Tensor, wb: Tensor, lb: Optional[Tensor], gamma: float, bandwidth: Optional[int],
                  need_grad: bool) -> List[Tensor]:
    """Per pair j of a batch: w_j · sdtw_γ(zp_j, xb_j), (P,), and with ``need_grad`` its gradient
    w.r.t. zp_j, (P, L, d); zp at its full length, the members at theirs (``lb``). Each pair's DP
    runs alone, so a pair's terms do not depend on the other pairs of the batch (which is how
    :mod:`softdtw_torch.distributed` and :mod:`softdtw_torch.dask` split the members)."""
    if not need_grad:
        with torch.no_grad():
            return [wb * soft_dtw(zp, xb, gamma, bandwidth, False, None, None, lb)]
    if zp.shape[2] <= _MAX_FUSED_FEATURES:
        # One op call for values and weighted gradients w.r.t. z, no autograd graph, no ∂/∂x
        # (no Itakura slope).
        values, grad = torch.ops.softdtw_torch._soft_dtw_fused_value_and_grad(zp, xb, wb, gamma, bandwidth, None,
                                                                               None, lb)
        return [wb * values, grad]
    zp = zp.detach().requires_grad_(True)
    with torch.enable_grad():
        values = soft_dtw(zp, xb, gamma, bandwidth, False, None, None, lb)
        (grad,) = torch.autograd.grad(values, zp, grad_outputs=wb)
    return [wb * values.detach(), grad]


class _Objective:
    """f_k(z_k) = Σ_{pairs j of problem k} w_j · sdtw_γ(z_k, series[s_j])   (or the divergence).

    ``series`` (S, T, d) with ``lengths`` (S,); pairs (problem, series index, weight) with weight > 0.
    Every call evaluates the requested problems with one batched ``soft_dtw`` call (plus, for the
    divergence, one call for the self-terms sdtw(z_k, z_k), one per problem rather than one per
    pair; the members' self-terms are constants computed once); under
    :mod:`softdtw_torch.distributed`, one call per rank on its block of the pairs, and
    :mod:`softdtw_torch.dask` subclasses it with one task per chunk of the members.
    """

    def __init__(self, series: Tensor, lengths: Tensor, pair_problem: Tensor, pair_series: Tensor,
                 pair_weight: Tensor, n_problems: int, gamma: float, bandwidth: Optional[int], normalize: bool):
        keep = pair_weight > 0
        self.series = series
        self.lengths = lengths
        self.pair_problem = pair_problem[keep]
        self.pair_series = pair_series[keep]
        self.pair_weight = pair_weight[keep].to(series.dtype)
        self.n_problems = n_problems
        self.gamma = gamma
        self.bandwidth = bandwidth
        self.normalize = normalize
        self.full_length = bool((lengths == series.shape[1]).all())
        members_self = None
        if normalize:
            def self_terms(lo: int, hi: int) -> List[Tensor]:
                xs = series.index_select(0, self.pair_series[lo:hi])
                ls = None if self.full_length else lengths.index_select(0, self.pair_series[lo:hi])
                return [soft_dtw(xs, xs, gamma, bandwidth, False, None, ls, ls)]

            with torch.no_grad():
                (members_self,) = rows_by_rank(self.pair_series.numel(), [()], series, self_terms)
        self._set_problem_constants(self.pair_problem, self.pair_weight, members_self)
        self._cache_key: Optional[Tuple[int, ...]] = None
        self._cache: Tuple[Tensor, Tensor, Tensor, Optional[Tensor]] = (series, series, series, None)

    def _set_problem_constants(self, pair_problem: Tensor, pair_weight: Tensor, members_self: Optional[Tensor]) -> None:
        """Per problem: the sum of its pairs' weights, and the divergence's constant
        -½ Σ_j w_j · sdtw_γ(x_j, x_j) from the members' self-terms (0 without the divergence)."""
        zeros = pair_weight.new_zeros(self.n_problems)
        self.weight_sum = zeros.clone().index_add_(0, pair_problem, pair_weight)
        self.const = zeros
        if members_self is not None:
            self.const.index_add_(0, pair_problem, -0.5 * pair_weight * members_self)

    def _pairs_for(self, problems: Tensor) -> Tuple[Tensor, Tensor, Tensor, Optional[Tensor]]:
        """For the requested problems: (row of z per pair, weights, member series, member lengths)."""
        key = tuple(problems.tolist())
        if key != self._cache_key:
            row_of = torch.full((self.n_problems,), -1, dtype=torch.int64, device=problems.device)
            row_of[problems] = torch.arange(problems.numel(), device=problems.device)
            rows = row_of[self.pair_problem]
            sel = (rows >= 0).nonzero().squeeze(1)
            members = self.pair_series.index_select(0, sel)
            xs = self.series.index_select(0, members)
            ls = None if self.full_length else self.lengths.index_select(0, members)
            self._cache = (rows.index_select(0, sel), self.pair_weight.index_select(0, sel), xs, ls)
            self._cache_key = key
        return self._cache

    def _pair_terms(self, z: Tensor, rows: Tensor, w: Tensor, xs: Tensor, ls: Optional[Tensor],
                    need_grad: bool) -> List[Tensor]:
        """Per pair j: w_j · sdtw_γ(z[rows_j], x_j), (P,), and with ``need_grad`` its gradient
        w.r.t. z[rows_j], (P, L, d). Each pair is computed alone (the kernels' pairs do not interact),
        so under a call of :mod:`softdtw_torch.distributed` each rank computes a block of the pairs
        and every rank gathers them all: the same bits as here."""
        L, d = z.shape[1], z.shape[2]

        def block(lo: int, hi: int) -> List[Tensor]:
            return _member_terms(z.index_select(0, rows[lo:hi]), xs[lo:hi], w[lo:hi], None if ls is None else ls[lo:hi],
                                 self.gamma, self.bandwidth, need_grad)

        shapes = [(), (L, d)] if need_grad else [()]
        return rows_by_rank(rows.numel(), shapes, z, block)

    def __call__(self, z: Tensor, problems: Tensor, need_grad: bool = True) -> Tuple[Tensor, Optional[Tensor]]:
        """Objective (S,) and gradient (S, L, d) at z (S, L, d) for ``problems`` (S,) (distinct ids)."""
        rows, w, xs, ls = self._pairs_for(problems)
        z = z.detach()
        terms = self._pair_terms(z, rows, w, xs, ls, need_grad)
        f = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device).index_add_(0, rows, terms[0])
        g = torch.zeros_like(z).index_add_(0, rows, terms[1]) if need_grad else None
        if self.normalize:
            # The barycenters' own terms, -½ Σ_j w_j · sdtw_γ(z_k, z_k): one DP per problem, on every rank.
            zz = z.clone().requires_grad_(need_grad)
            with torch.enable_grad() if need_grad else torch.no_grad():
                own = -0.5 * self.weight_sum[problems] * soft_dtw(zz, zz, self.gamma, self.bandwidth)
            if g is not None:
                g = g + torch.autograd.grad(own.sum(), zz)[0]
            f = f + own.detach() + self.const[problems]
        return f, g


# ----------------------------------------------------------------------------------------------
# Drivers
# ----------------------------------------------------------------------------------------------
def _iteration_done(progress: Progress, objective: Union[float, List[float]], active: int) -> None:
    """One more iteration on ``progress``, with the objective (the sum over the K problems) and how
    many problems still run."""
    if progress.enabled:  # skips the formatting when nothing is reported
        text = f"{objective:.6g}" if isinstance(objective, float) else f"sum {sum(objective):.6g}"
        progress.update(1, f"objective {text}, {active} running")


def _report(objectives: List[float], single: bool) -> Union[float, List[float]]:
    return objectives[0] if single else list(objectives)


def _solve_lbfgs(objective: _Objective, z0: Tensor, max_iter: int, tol: float, lr: float,
                 callback: Optional[Callable[[int, Any], Any]], progress: Progress, single: bool
                 ) -> Tuple[Tensor, List[List[float]]]:
    K, L, d = z0.shape
    device, dtype = z0.device, z0.dtype
    all_problems = torch.arange(K, device=device)
    f0, g0 = objective(z0, all_problems)
    f0_np = f0.double().cpu().numpy()
    g0_np = g0.double().cpu().numpy().reshape(K, L * d)
    x_final = z0.double().cpu().numpy().reshape(K, L * d).copy()
    current = [float(v) for v in f0_np]
    history: List[List[float]] = [[v] for v in current]
    coroutines: Dict[int, _Coroutine] = {}
    requests: Dict[int, _Request] = {}

    def advance(k: int, value: Any) -> None:
        try:
            requests[k] = coroutines[k].send(value)
        except StopIteration:
            del coroutines[k]
            requests.pop(k, None)

    for k in range(K):
        coroutines[k] = _lbfgs(x_final[k].copy(), current[k], g0_np[k], lr, max_iter, tol)
        advance(k, None)
    iteration = 0
    while coroutines:
        # One round = one iteration of every running problem: evaluate all pending trial points
        # together until each problem has finished its line search (or stopped).
        while True:
            waiting = [k for k in coroutines if requests[k][0] == "eval"]
            if not waiting:
                break
            points = np.stack([requests[k][1] for k in waiting]).reshape(len(waiting), L, d)
            z = torch.from_numpy(points).to(device=device, dtype=dtype)
            f, g = objective(z, torch.tensor(waiting, device=device))
            f_np = f.double().cpu().numpy()
            g_np = g.double().cpu().numpy().reshape(len(waiting), L * d)
            for i, k in enumerate(waiting):
                advance(k, (float(f_np[i]), g_np[i]))
        if not requests:
            break
        iteration += 1
        for k, (_, (x_k, f_k)) in requests.items():
            x_final[k] = x_k
            current[k] = f_k
            history[k].append(f_k)
        _iteration_done(progress, _report(current, single), len(requests))
        stop = callback is not None and bool(callback(iteration, _report(current, single)))
        if stop:
            break
        for k in list(requests):
            advance(k, None)
    z = torch.from_numpy(x_final.reshape(K, L, d)).to(device=device, dtype=dtype)
    return z, history


def _solve_adam(objective: _Objective, z0: Tensor, max_iter: int, tol: float, lr: float,
                grad_clip: Optional[float], patience: int,
                callback: Optional[Callable[[int, Any], Any]], progress: Progress, single: bool
                ) -> Tuple[Tensor, List[List[float]]]:
    """Adam, vectorised over the K problems, each with its own clipping, early stopping and best iterate."""
    K = z0.shape[0]
    device, dtype = z0.device, z0.dtype
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    z = z0.clone()
    m = torch.zeros_like(z)
    v = torch.zeros_like(z)
    best_z = z0.clone()
    best_f = torch.full((K,), math.inf, dtype=torch.float64, device=device)
    wait = torch.zeros(K, dtype=torch.int64, device=device)
    active = torch.ones(K, dtype=torch.bool, device=device)
    history: List[List[float]] = [[] for _ in range(K)]
    current = [math.inf] * K
    clip = None if grad_clip is None else grad_clip * objective.weight_sum.to(dtype)  # scales with the weights
    for step in range(max_iter + 1):
        problems = active.nonzero().squeeze(1)
        if problems.numel() == 0:
            break
        f, g = objective(z.index_select(0, problems), problems)
        assert g is not None
        f64 = f.double()
        for k, value in zip(problems.tolist(), f64.tolist()):
            history[k].append(value)
            current[k] = value
        old_best = best_f[problems]
        better = f64 < old_best
        significant = f64 < old_best - tol * torch.clamp(old_best.abs(), min=1.0).nan_to_num(posinf=0.0)
        best_f[problems] = torch.where(better, f64, old_best)
        best_z[problems] = torch.where(better.view(-1, 1, 1), z[problems], best_z[problems])
        wait[problems] = torch.where(significant, torch.zeros_like(wait[problems]), wait[problems] + 1)
        if step > 0:
            _iteration_done(progress, _report(current, single), int(problems.numel()))
            if callback is not None and bool(callback(step, _report(current, single))):
                break
        if step == max_iter:
            break
        active &= wait < patience
        run = active[problems]
        problems = problems[run]
        if problems.numel() == 0:
            break
        g = g[run]
        if clip is not None:
            norms = g.flatten(1).norm(dim=1)
            scale = torch.clamp(clip[problems] / torch.clamp(norms, min=1e-300), max=1.0)
            g = g * scale.view(-1, 1, 1)
        lr_t = lr * 0.5 * (1.0 + math.cos(math.pi * step / max(max_iter, 1)))   # cosine decay to 0
        mk = m[problems].mul_(beta1).add_(g, alpha=1 - beta1)
        vk = v[problems].mul_(beta2).addcmul_(g, g, value=1 - beta2)
        m[problems] = mk
        v[problems] = vk
        t = step + 1
        denom = (vk / (1 - beta2 ** t)).sqrt_().add_(eps)
        z[problems] = z[problems] - lr_t * (mk / (1 - beta1 ** t)) / denom
    return best_z, history


def _solve(objective: _Objective, z0: Tensor, method: str, max_iter: int, tol: float, lr: float,
           callback: Optional[Callable[[int, Any], Any]], verbose: bool, single: bool, name: str,
           grad_clip: Optional[float] = None, patience: int = 10) -> Tuple[Tensor, List[List[float]]]:
    with Progress(verbose, name, max_iter, unit="iterations") as bar:
        if method == "lbfgs":
            return _solve_lbfgs(objective, z0, max_iter, tol, lr, callback, bar, single)
        return _solve_adam(objective, z0, max_iter, tol, lr, grad_clip, patience, callback, bar, single)
