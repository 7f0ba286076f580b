"""Soft-DTW barycenters (time-series averaging), batched on CPU and CUDA; soft-DTW k-means
(:mod:`softdtw_torch.clustering`) runs on the same batched objective.

The barycenter of series x_1..x_n with weights w_1..w_n is

    z* = argmin_z  Σ_i w_i · sdtw_γ(z, x_i)          (or Σ_i w_i · 𝔇_γ(z, x_i), the divergence)

over z of shape (length, d) (Cuturi & Blondel, ICML 2017, §4; Blondel, Mensch & Vert 2021 for the
divergence). :func:`softdtw_barycenter` solves one such problem, or K of them at once: every
evaluation of the objective of all (still running) problems is ONE batched ``soft_dtw`` call over
the flat list of (problem, member) pairs, so K class barycenters, or the K centers of a k-means
update, cost one kernel launch per evaluation instead of a Python loop over K groups.

How the batch is laid out (shared by the barycenter and k-means): the objective is defined by a
flat list of *pairs* ``(problem k, member series s, weight w)``. A K-group input (K, n, T, d) gives
K·n pairs; members with weight 0 are dropped (not computed at all), which is how k-means passes
clusters of different sizes: each sample is one pair of the cluster it is assigned to, with no
padding members and no wasted DPs. Variable-length members carry their own length (``y_lengths``
of the ragged ``soft_dtw``), so padding never enters a DP.

Solvers:

* ``"lbfgs"`` (default): L-BFGS with a strong-Wolfe line search, as scipy's L-BFGS-B runs it on
  an unconstrained problem, which is what tslearn's ``softdtw_barycenter`` calls: the same
  first step, Moré–Thuente line search (MINPACK-2 ``dcsrch``, same tolerances), memory of 10,
  curvature-pair skipping and stopping tests. Same ``tol`` and ``max_iter`` therefore mean the
  same iterations as tslearn: it takes exactly tslearn's iterations and evaluations and ends at
  its objective to rounding (tests/estimators/test_barycenter.py). ``torch.optim.LBFGS`` is not
  used, for two reasons: (1) it optimises ONE objective; on the stacked (K, length, d) tensor, K
  independent problems would share one curvature history, one line search and one stopping test
  (a problem's result would depend on which other groups it is batched with); (2) its line search
  (cubic interpolation from a first step of 1/||g||₁) follows other trajectories than L-BFGS-B,
  and with tslearn's loose tol = 1e-3 the end point then often differs from tslearn's, lower or
  higher. Here each problem is one coroutine with its own state; the coroutines only meet to
  have their trial points evaluated together, so a problem solved in a batch takes exactly the
  steps it takes alone (tested bit for bit). The optimiser state is float64 numpy on the host (a
  few vectors of length·d per problem); objective and gradient are computed on X's device and dtype.
  The port of L-BFGS-B is :mod:`softdtw_torch._lbfgs`.
* ``"adam"``: Adam with a cosine learning-rate decay, per-problem gradient-norm clipping and
  per-problem early stopping (patience), as in the BGU ``sdtw-cuda-torch`` library; vectorised
  over the K problems; returns each problem's best iterate. With its defaults (200 steps) it
  usually ends below L-BFGS at tol 1e-3, for more evaluations.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch import Tensor

from ._input import _check_bandwidth, _check_int, _check_scalar, _prepare_series, _resample, _to_tensor
from ._lbfgs import _Coroutine, _lbfgs, _Request
from ._ops import _C
from ._progress import Progress
from .distributed import rows_by_rank
from .functional import soft_dtw

__all__ = ["softdtw_barycenter", "SoftDTWKMeans"]

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


# ----------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------
def softdtw_barycenter(
    X: ArrayLike,
    gamma: float = 1.0,
    weights: Optional[ArrayLike] = None,
    tol: Optional[float] = None,
    max_iter: Optional[int] = None,
    init: Optional[ArrayLike] = None,
    *,
    method: str = "lbfgs",
    x_lengths: Optional[ArrayLike] = None,
    length: Optional[int] = None,
    normalize: bool = False,
    lr: Optional[float] = None,
    callback: Optional[Callable[[int, Any], Any]] = None,
    progress: bool = False,
    bandwidth: Optional[int] = None,
    grad_clip: Optional[float] = 1.0,
    patience: int = 10,
    verbose: bool = False,
    return_history: bool = False,
) -> Union[Tensor, np.ndarray, Tuple[Union[Tensor, np.ndarray], Union[List[float], List[List[float]]]]]:
    """Soft-DTW barycenter of one group of series, or of K groups at once.

    Minimises ``Σ_i w_i · sdtw_γ(z, x_i)`` over z (length, d) (Cuturi & Blondel 2017), or
    ``Σ_i w_i · 𝔇_γ(z, x_i)`` with the soft-DTW divergence when ``normalize=True``. Squared
    Euclidean cost, as :func:`softdtw_torch.functional.soft_dtw`.

    The first six arguments are tslearn's, in its order (``X, gamma, weights, tol, max_iter,
    init``); the others are keyword-only. Works on CPU and CUDA (X's device), float32 and float64.
    Not TorchScript-scriptable (it is an optimisation loop around the ``soft_dtw`` operator).

    Parameters
    ----------
    X : torch.Tensor, numpy.ndarray or list
        One group, (n, T, d); (n, T) for n univariate series (tslearn's convention: the result is
        then (length, 1)); or a list of n series (T_i, d) / (T_i,) of different lengths. Or K groups
        (K, n, T, d): the K problems are solved together, every objective evaluation being one
        batched ``soft_dtw`` call over all running problems. Trailing all-NaN time steps are padding
        (tslearn's ``to_time_series_dataset`` format) unless ``x_lengths`` is given.
    gamma : float, default 1.0
        Soft-DTW smoothing, > 0.
    weights : torch.Tensor, numpy.ndarray, list or None, default None
        (n,) or, for K groups, (K, n) (or (n,) shared by all groups); non-negative, with a positive
        sum per group. **Default: ones**, as tslearn's ``softdtw_barycenter`` (and Blondel's
        original code): the objective is the *sum* Σ_i sdtw(z, x_i), so the values in ``history``
        are directly comparable with tslearn's objective. Pass ``weights=1/n`` for the mean; the
        minimiser is the same, only the objective scale (and hence ``tol`` when
        ``|objective| < 1``, see below) changes. Members of weight 0 are skipped (no DP). Unlike
        tslearn, which silently replaces weights of the wrong length by ones, a bad shape raises.
    tol : float or None, default None
        ``"lbfgs"`` (default 1e-3, tslearn's): scipy L-BFGS-B's tests as tslearn uses them
        (``minimize(tol=tol)`` sets ftol = gtol = tol): a problem stops after an iteration where
        ``(f_k − f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) <= tol``, or when ``max |∂f/∂z| <= tol`` (also
        checked at the start). The test is relative, and soft-DTW sums are large (often negative,
        in the thousands for a GunPoint class at γ = 1): 1e-3 stops early, after a few iterations;
        use 1e-6 or less for a converged barycenter. ``"adam"`` (default 1e-5): a problem stops when
        its best objective has not improved by more than ``tol · max(|best|, 1)`` for ``patience``
        consecutive steps.
    max_iter : int or None, default None
        Maximum number of iterations per problem: L-BFGS iterations, scipy's ``maxiter`` (default
        50, tslearn's), or Adam steps (default 200). 0 returns the initialisation.
    init : torch.Tensor, numpy.ndarray, list or None, default None
        Starting barycenter, (length, d) (or (K, length, d) for K groups, or (length, d) shared by
        all). Default: the weighted Euclidean mean of the members, each linearly resampled to
        ``length`` when its length differs (tslearn's initialisation).
    method : {'lbfgs', 'adam'}, default 'lbfgs'
        ``"lbfgs"`` (scipy's L-BFGS-B algorithm, i.e. tslearn's solver, with one independent state
        per problem: same iterates as tslearn for the same tol and max_iter) or ``"adam"`` (cosine
        decay of ``lr`` to 0 over ``max_iter`` steps, gradient-norm clipping, early stopping;
        returns the best iterate).
    x_lengths : torch.Tensor, numpy.ndarray, list or None, default None
        (n,) or (K, n) integer lengths in [1, T]; member i uses ``X[..., i, :x_lengths[i], :]`` only
        (the padding is ignored, whatever it holds).
    length : int or None, default None
        Barycenter length; default the length of ``init`` if given, else the length of the
        longest member.
    normalize : bool, default ``False``
        Minimise the soft-DTW divergence instead of the raw soft-DTW value.
    lr : float or None, default None
        ``"lbfgs"``: scale of the first trial step of each line search (default 1.0, as L-BFGS-B).
        ``"adam"``: the initial learning rate (default 0.1, in the units of X: suits standardised
        series).
    callback : Callable or None, default None
        ``callback(iteration, objective)`` after every iteration (1-based), with the objective as a
        float for one group or a list of K floats (a stopped problem reports its final value).
        Returning ``True`` stops all problems.
    progress : bool, default ``False``
        The former name of ``verbose``, still accepted (either one turns the report on).
    bandwidth : int or None, default None
        Sakoe–Chiba radius (``None``: no band), as in ``soft_dtw``.
    grad_clip : float or None, default 1.0
        ``"adam"`` only: each problem's gradient is rescaled to an L2 norm of at most
        ``grad_clip · Σ_i w_i`` (the bound follows the weights, so it means the same for sums and
        means). ``None`` disables clipping.
    patience : int, default 10
        ``"adam"`` only: steps without significant improvement before a problem stops.
    verbose : bool, default ``False``
        Report the iterations (of ``max_iter``), the objective (summed over the K problems) and how
        many problems still run: a tqdm bar when tqdm is installed, else a few lines on stderr (the
        package's convention, CONTRIBUTING.md "Progress"). A problem that converges early leaves the
        count below ``max_iter``. The result is the same, bit for bit.
    return_history : bool, default ``False``
        Also return the objective's history (see Returns).

    Returns
    -------
    barycenter : torch.Tensor or numpy.ndarray
        As tslearn's ``softdtw_barycenter``: (length, d) for one group or (K, length, d) for K
        groups, in X's dtype, on X's device; a torch tensor if X is a tensor (or a list of tensors),
        a numpy array otherwise (numpy in, numpy out). It does not require grad (the optimisation
        is not differentiated through).
    history : list
        Only with ``return_history=True``, which returns ``(barycenter, history)``: the objective at
        the initialisation and after each iteration, a list of floats for one group, a list of K
        such lists (one per problem, of different lengths when problems stop at different
        iterations) for K groups.

    Raises
    ------
    ValueError
        Bad rank, empty input, NaN/inf inside a series, gamma <= 0, unknown method, weights or
        lengths of the wrong shape or out of range, init of the wrong shape, a callback that is not
        callable; the message starts with ``softdtw_barycenter:``.

    See Also
    --------
    softdtw_torch.clustering.SoftDTWKMeans : k-means on the same batched objective.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.barycenter import softdtw_barycenter
    >>> X = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 4.0, 5.0]])  # two univariate series
    >>> z, history = softdtw_barycenter(X, gamma=1.0, max_iter=5, return_history=True)
    >>> z.shape, z.dtype
    ((4, 1), dtype('float64'))
    >>> history[-1] < history[0]
    True

    K groups at once, as tensors:

    >>> import torch
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> groups = torch.randn(3, 4, 10, 1, dtype=torch.float64)  # 3 groups of 4 series
    >>> z, history = softdtw_barycenter(groups, gamma=1.0, max_iter=10, return_history=True)
    >>> z.shape, len(history)
    (torch.Size([3, 10, 1]), 3)
    """
    name = "softdtw_barycenter"
    gamma, max_iter, tol, lr, bandwidth, patience, grad_clip = _check_solver_options(
        name, gamma, method, max_iter, tol, lr, bandwidth, patience, grad_clip)
    if callback is not None and not callable(callback):
        raise ValueError(f"{name}: expected callback to be callable, got {type(callback).__name__}")

    data = _prepare_series(X, x_lengths, name, allow_groups=True)
    x, lengths = data.x, data.lengths
    K, n, T, d = x.shape
    device, dtype = x.device, x.dtype

    w = _prepare_weights(weights, K, n, data.single, device, dtype, name)
    z0 = _prepare_init(init, length, x, lengths, w, data.single, data.squeeze_2d, name)

    objective = _Objective(
        series=x.reshape(K * n, T, d),
        lengths=lengths.reshape(K * n),
        pair_problem=torch.arange(K, device=device).repeat_interleave(n),
        pair_series=torch.arange(K * n, device=device),
        pair_weight=w.reshape(K * n),
        n_problems=K,
        gamma=gamma,
        bandwidth=bandwidth,
        normalize=normalize,
    )
    z, history = _solve(objective, z0, method, max_iter, tol, lr, callback, verbose or progress, data.single, name,
                        grad_clip=grad_clip, patience=patience)
    if data.single:
        z = z[0]
    out: Union[Tensor, np.ndarray] = z if data.kind == "torch" else z.cpu().numpy()
    if not return_history:
        return out
    return out, (history[0] if data.single else history)


def _check_solver_options(name: str, gamma: Any, method: str, max_iter: Any, tol: Any, lr: Any, bandwidth: Any,
                          patience: Any, grad_clip: Any) -> Tuple[float, int, float, float, Optional[int], int,
                                                                  Optional[float]]:
    """The barycenter's options checked (errors naming ``name``), the method's defaults filled in:
    (gamma, max_iter, tol, lr, bandwidth, patience, grad_clip)."""
    gamma = _check_scalar(gamma, name, "gamma", positive=True)
    if method not in _METHODS:
        raise ValueError(f"{name}: expected method to be one of {_METHODS}, got {method!r}")
    default_max_iter, default_tol, default_lr = _DEFAULTS[method]
    max_iter = default_max_iter if max_iter is None else _check_int(max_iter, name, "max_iter", 0)
    tol = default_tol if tol is None else _check_scalar(tol, name, "tol", nonneg=True)
    lr = default_lr if lr is None else _check_scalar(lr, name, "lr", positive=True)
    bandwidth = _check_bandwidth(bandwidth, name)
    patience = _check_int(patience, name, "patience", 1)
    if grad_clip is not None:
        grad_clip = _check_scalar(grad_clip, name, "grad_clip", positive=True)
    return gamma, max_iter, tol, lr, bandwidth, patience, grad_clip


def _prepare_weights(weights: Any, K: int, n: int, single: bool, device: torch.device, dtype: torch.dtype,
                     name: str) -> Tensor:
    if weights is None:
        return torch.ones(K, n, dtype=dtype, device=device)
    w, _ = _to_tensor(weights, name, "weights")
    w = w.to(device=device, dtype=dtype)
    if single:
        if tuple(w.shape) != (n,):
            raise ValueError(f"{name}: expected weights of shape ({n},) (one per series), got {tuple(w.shape)}")
        w = w.unsqueeze(0)
    elif tuple(w.shape) == (n,):
        w = w.unsqueeze(0).expand(K, n)
    elif tuple(w.shape) != (K, n):
        raise ValueError(f"{name}: expected weights of shape ({K}, {n}) or ({n},), got {tuple(w.shape)}")
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        raise ValueError(f"{name}: expected finite, non-negative weights")
    sums = w.sum(dim=1)
    if bool((sums <= 0).any()):
        bad = int((sums <= 0).nonzero()[0])
        where = "" if single else f" (group {bad})"
        raise ValueError(f"{name}: expected weights with a positive sum{where}, got all zeros")
    return w.contiguous()


def _prepare_init(init: Any, length: Any, x: Tensor, lengths: Tensor, w: Tensor, single: bool,
                  squeeze_2d: bool, name: str) -> Tensor:
    K, n, T, d = x.shape
    if length is not None:
        length = _check_int(length, name, "length", 1)
    if init is not None:
        z0, _ = _to_tensor(init, name, "init")
        z0 = z0.to(device=x.device, dtype=x.dtype)
        if squeeze_2d and z0.dim() == 1:
            z0 = z0.unsqueeze(-1)
        if z0.dim() == 2:
            z0 = z0.unsqueeze(0).expand(K, -1, -1)
        elif z0.dim() != 3 or single or z0.shape[0] != K:
            want = "(length, features)" if single else f"({K}, length, features) or (length, features)"
            raise ValueError(f"{name}: expected init of shape {want}, got {tuple(z0.shape)}")
        if z0.shape[-1] != d or z0.shape[1] == 0:
            raise ValueError(f"{name}: expected init with {d} features and length >= 1, got shape "
                             f"{tuple(z0.shape[1:])}")
        if length is not None and length != z0.shape[1]:
            raise ValueError(f"{name}: length={length} contradicts init of length {z0.shape[1]}")
        if not bool(torch.isfinite(z0).all()):
            raise ValueError(f"{name}: init holds NaN or inf")
        return z0.contiguous().clone()
    L = T if length is None else length
    if L == T and bool((lengths == T).all()):
        members = x
    else:
        members = _resample(x.reshape(K * n, T, d), lengths.reshape(K * n), L).reshape(K, n, L, d)
    wn = w / w.sum(dim=1, keepdim=True)
    # Σ_i wn_i · x_i summed in the members' order (a scan): the same bits at any thread count and
    # whoever computes it (a matrix product's bits depend on the BLAS threads).
    return torch.cumsum(wn[:, :, None, None] * members, dim=1)[:, -1].contiguous()


def __getattr__(name: str) -> Any:
    # SoftDTWKMeans lives in softdtw_torch.clustering (which imports this module's objective and
    # solvers, and scikit-learn); ``from softdtw_torch.barycenter import SoftDTWKMeans`` keeps
    # working, importing scikit-learn only then.
    if name == "SoftDTWKMeans":
        from .clustering import SoftDTWKMeans
        return SoftDTWKMeans
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
