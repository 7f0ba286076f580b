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

from typing import Any, Callable, List, Optional, Tuple, Union

import numpy as np
import torch
from torch import Tensor

from ._barycenter_solvers import _DEFAULTS, _METHODS, ArrayLike, _Objective, _solve
from ._input import _check_bandwidth, _check_int, _check_scalar, _prepare_series, _resample, _to_tensor

__all__ = ["softdtw_barycenter", "SoftDTWKMeans"]

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
