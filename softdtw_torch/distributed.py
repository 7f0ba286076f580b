"""The all-pairs matrices, k-NN prediction, the ROCKET family's transforms, soft-DTW barycenters
and k-means across the ranks of a ``torch.distributed`` process group, with the single-process
call's bits.

Every rank calls the same function on the same inputs (each rank holds the collection, as a
training set is held); the work is split across the ranks and the result comes back whole on
every rank:

- :func:`cdist_soft_dtw`, :func:`cdist_dtw` and :func:`kneighbors_predict`: the pairs the
  single-process call computes, in its chunks of ``chunk_size`` pairs, chunk ``k`` on rank
  ``k mod world_size``. Each chunk is the same batched call with the same inputs as in one process,
  so every value has the same bits whatever the number of ranks (the unfused mode included), and
  the matrix is assembled from them as one process assembles it.
- :func:`transform`: a fitted ROCKET-family transformer's features, each rank transforming its
  block of cases; a case's features do not depend on the other cases of its batch.
- :func:`softdtw_barycenter` and :func:`fit` (soft-DTW k-means): every evaluation of the
  objective computes each (barycenter, member) pair's value and gradient on one rank, a block of
  pairs per rank, and gathers them on every rank, which sums them as one process does and takes
  the same optimisation step; k-means also splits its assignments' pairs. Each pair's DP runs
  alone in the kernels (its bits do not depend on the other pairs of the call), so the fit is the
  single-process one, bit for bit, on every rank.

A rank whose part fails does not leave the others waiting: every rank reports whether its part
succeeded before any result is exchanged, and on every rank the call raises the failing rank's
error (its type and message, with the rank named). When a rank dies outright, the others raise
a RuntimeError naming the function as soon as the backend notices (gloo: the closed connection, at
once; otherwise the group's ``timeout``, ``torch.distributed.init_process_group(timeout=...)``). Inputs that differ between ranks in shape, dtype or library version are refused by
name, on every rank, before any work.

Written for gloo (CPU tensors) and NCCL (CUDA tensors); tested with gloo ranks on loopback
(tests/infra/test_distributed_ops.py), NCCL not yet run (no GPU in CI).
"""
import hashlib
from typing import Any, Callable, List, Optional

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor

from ._sharing import (_block_bounds, _check_same_everywhere, _collective, _raise_if_any_failed, _Share, _sharing,
                       gather_chunks)

__all__ = ["cdist_soft_dtw", "cdist_dtw", "kneighbors_predict", "transform", "softdtw_barycenter", "fit"]


def _refuse_autograd(who: str, *tensors: Any) -> None:
    if torch.is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad for t in tensors):
        raise ValueError(f"{who}: the distributed all-pairs matrix is not differentiable (its values are "
                         "exchanged between ranks); call it under torch.no_grad() or pass detached tensors, or use "
                         "softdtw_torch's single-process function for gradients")


def cdist_soft_dtw(X: Any, Y: Any = None, gamma: float = 1.0, normalize: bool = False, bandwidth: Optional[int] = None,
                   cost: str = "sqeuclidean", fused: Optional[bool] = None, x_lengths: Any = None,
                   y_lengths: Any = None, chunk_size: int = 1024, itakura_max_slope: Optional[float] = None,
                   verbose: bool = False, *, group: Optional[Any] = None) -> Any:
    """:func:`softdtw_torch.functional.cdist_soft_dtw` with its pairs split across the ranks of
    ``group`` (default: the world), the whole matrix returned on every rank, bit for bit the
    single-process call's.

    Parameters
    ----------
    X, Y, gamma, normalize, bandwidth, cost, fused, x_lengths, y_lengths, chunk_size, itakura_max_slope, verbose
        As for :func:`softdtw_torch.functional.cdist_soft_dtw`; every rank passes the same values.
        ``verbose`` counts the pairs this rank computes.
    group : torch.distributed.ProcessGroup or None, default None
        The ranks that share the work (``None``: the default group).

    Returns
    -------
    torch.Tensor or numpy.ndarray
        The (A, B') matrix, on every rank.

    Raises
    ------
    ValueError
        Inputs that differ between ranks, or the single-process function's errors (raised on every
        rank, naming the rank where they arose).
    RuntimeError
        torch.distributed not initialized.

    Examples
    --------
    >>> import torch, torch.distributed as dist, tempfile, os
    >>> from softdtw_torch import distributed
    >>> store = os.path.join(tempfile.mkdtemp(), "store")
    >>> dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    >>> X = torch.randn(5, 20, 2, generator=torch.Generator().manual_seed(0))
    >>> import softdtw_torch as st
    >>> torch.equal(distributed.cdist_soft_dtw(X, gamma=0.1), st.cdist_soft_dtw(X, gamma=0.1))
    True
    >>> dist.destroy_process_group()
    """
    from .functional import cdist_soft_dtw as single

    with _sharing("cdist_soft_dtw", group) as share:
        _refuse_autograd(share.who, X, Y, gamma)
        _check_same_everywhere(share.who, group, X, Y)
        return single(X, Y, gamma, normalize, bandwidth, cost, fused, x_lengths, y_lengths, chunk_size,
                      itakura_max_slope, verbose)


def cdist_dtw(X: Any, Y: Any = None, bandwidth: Optional[int] = None, x_lengths: Any = None, y_lengths: Any = None,
              chunk_size: int = 1024, itakura_max_slope: Optional[float] = None, verbose: bool = False, *,
              group: Optional[Any] = None) -> Any:
    """:func:`softdtw_torch.metrics.cdist_dtw` with its pairs split across the ranks of ``group``,
    the whole matrix returned on every rank, bit for bit the single-process call's.

    Parameters
    ----------
    X, Y, bandwidth, x_lengths, y_lengths, chunk_size, itakura_max_slope, verbose
        As for :func:`softdtw_torch.metrics.cdist_dtw`; every rank passes the same values.
    group : torch.distributed.ProcessGroup or None, default None
        The ranks that share the work (``None``: the default group).

    Returns
    -------
    torch.Tensor or numpy.ndarray
        The (A, B') matrix of DTW distances, on every rank.

    Examples
    --------
    >>> import numpy as np, torch.distributed as dist, tempfile, os
    >>> from softdtw_torch import distributed, metrics
    >>> store = os.path.join(tempfile.mkdtemp(), "store")
    >>> dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    >>> X = np.random.default_rng(0).normal(size=(4, 15, 1))
    >>> bool(np.array_equal(distributed.cdist_dtw(X), metrics.cdist_dtw(X)))
    True
    >>> dist.destroy_process_group()
    """
    from .metrics import cdist_dtw as single

    with _sharing("cdist_dtw", group) as share:
        _refuse_autograd(share.who, X, Y)
        _check_same_everywhere(share.who, group, X, Y)
        return single(X, Y, bandwidth, x_lengths, y_lengths, chunk_size, itakura_max_slope, verbose)


def kneighbors_predict(estimator: Any, X: Any, *, group: Optional[Any] = None) -> Any:
    """``estimator.predict(X)`` for a fitted :class:`~softdtw_torch.neighbors.KNeighborsTimeSeriesClassifier`
    or :class:`~softdtw_torch.neighbors.KNeighborsTimeSeriesRegressor`, with the DTW pairs of its
    search split across the ranks of ``group``: the single-process predictions on every rank (the
    search's pruning decisions are the same on every rank, as every rank sees every value).

    Parameters
    ----------
    estimator : softdtw_torch.neighbors.KNeighborsTimeSeriesClassifier or softdtw_torch.neighbors.KNeighborsTimeSeriesRegressor
        Fitted, the same on every rank.
    X : numpy.ndarray or torch.Tensor
        The test series, the same on every rank.
    group : torch.distributed.ProcessGroup or None, default None
        The ranks that share the work.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        ``estimator.predict(X)``.

    Examples
    --------
    >>> import numpy as np, torch.distributed as dist, tempfile, os
    >>> from softdtw_torch import distributed
    >>> from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier
    >>> store = os.path.join(tempfile.mkdtemp(), "store")
    >>> dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    >>> rng = np.random.default_rng(0)
    >>> knn = KNeighborsTimeSeriesClassifier(n_neighbors=1).fit(rng.normal(size=(8, 20, 1)), [0, 1] * 4)
    >>> test = rng.normal(size=(3, 20, 1))
    >>> bool(np.array_equal(distributed.kneighbors_predict(knn, test), knn.predict(test)))
    True
    >>> dist.destroy_process_group()
    """
    with _sharing(f"{type(estimator).__name__}.predict", group) as share:
        _check_same_everywhere(share.who, group, X)
        return estimator.predict(X)


def transform(estimator: Any, X: Any, *, group: Optional[Any] = None, gather: bool = True) -> Any:
    """``estimator.transform(X)`` for a fitted ROCKET-family transformer (``Rocket``, ``MiniRocket``,
    ``MultiRocket``, ``HydraTransformer``), each rank transforming a contiguous block of the cases,
    the features of every case returned on every rank, bit for bit the single-process call's.

    Parameters
    ----------
    estimator : softdtw_torch.rocket.Rocket, softdtw_torch.rocket.MiniRocket, softdtw_torch.rocket.MultiRocket or softdtw_torch.rocket.HydraTransformer
        Fitted, the same on every rank.
    X : numpy.ndarray or torch.Tensor
        (n_cases, n_channels, n_timepoints), the same on every rank.
    group : torch.distributed.ProcessGroup or None, default None
        The ranks that share the work.
    gather : bool, default ``True``
        ``True``: every rank returns every case's features. ``False``: each rank returns its own
        block and where it lies, ``(features, (start, stop))``, cases ``start:stop`` of X, and
        nothing is exchanged but the ranks' success (features are large: 4 bytes each, about
        10,000 per case for MiniRocket, so gathering them can cost as much as computing them).

    Returns
    -------
    numpy.ndarray, torch.Tensor or tuple
        ``estimator.transform(X)``: numpy for numpy input, a tensor for tensor input; with
        ``gather=False``, this rank's rows of it and their case range.

    Examples
    --------
    >>> import numpy as np, torch.distributed as dist, tempfile, os
    >>> from softdtw_torch import distributed
    >>> from softdtw_torch.rocket import MiniRocket
    >>> store = os.path.join(tempfile.mkdtemp(), "store")
    >>> dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    >>> X = np.random.default_rng(0).normal(size=(6, 1, 40)).astype(np.float32)
    >>> rocket = MiniRocket(random_state=0).fit(X)
    >>> bool(np.array_equal(distributed.transform(rocket, X), rocket.transform(X)))
    True
    >>> dist.destroy_process_group()
    """
    who = f"{type(estimator).__name__}.transform"
    with _sharing(who, group) as share:
        _check_same_everywhere(who, group, X)
        n_cases = len(X)
        bounds = _block_bounds(n_cases, share.world)
        lo, hi = bounds[share.rank], bounds[share.rank + 1]
        error, part = None, None
        try:
            # A rank with no cases (fewer cases than ranks) transforms one case to learn the width.
            part = estimator.transform(X[lo:hi] if hi > lo else X[:1])
        except Exception as caught:  # reported to every rank before any exchange
            error = caught
        _raise_if_any_failed(share, error)
        is_tensor = isinstance(part, Tensor)
        features = part if is_tensor else torch.from_numpy(np.ascontiguousarray(part))
        features = features[: hi - lo]
        if not gather:
            return (features if is_tensor else features.numpy()), (lo, hi)
        width = features.shape[1]
        counts = [bounds[r + 1] - bounds[r] for r in range(share.world)]
        flat = features.reshape(-1)
        chunks = gather_chunks(share, [flat], [c * width for c in counts], flat)
        whole = torch.cat(chunks).reshape(n_cases, width)
        return whole if is_tensor else whole.numpy()


def _agreed(share: _Share, callback: Optional[Callable[..., Any]]) -> Optional[Callable[..., Any]]:
    """The user's callback, its stop decision shared: the optimisation stops on every rank when it
    returns True on any rank (ranks that stopped at different iterations would wait for each other)."""
    if callback is None:
        return None

    def agreed(*args: Any) -> bool:
        votes: List[Any] = [None] * share.world
        _collective(share.who, dist.all_gather_object, votes, bool(callback(*args)), group=share.group)
        return any(votes)

    return agreed


def softdtw_barycenter(X: Any, gamma: float = 1.0, weights: Any = None, tol: Optional[float] = None,
                       max_iter: Optional[int] = None, init: Any = None, *, group: Optional[Any] = None,
                       callback: Optional[Callable[..., Any]] = None, **options: Any) -> Any:
    """:func:`softdtw_torch.barycenter.softdtw_barycenter` with the members' soft-DTW terms of every
    evaluation split across the ranks of ``group``: each rank computes the values and gradients of
    a block of the (barycenter, member) pairs, every rank gathers them all and takes the same
    optimisation step, so the barycenter on every rank is the single-process one, bit for bit.

    Every rank holds the members (as for the other functions here); what is split is the work,
    the DPs, whose cost grows with length², while the exchange grows with the barycenter's length
    (one value and length·d gradient entries per member and evaluation).

    Parameters
    ----------
    X, gamma, weights, tol, max_iter, init
        As for :func:`softdtw_torch.barycenter.softdtw_barycenter`; every rank passes the same values.
    group : torch.distributed.ProcessGroup or None, default None
        The ranks that share the work (``None``: the default group).
    callback : Callable or None, default None
        As in the single-process function, called on every rank; returning ``True`` on any rank
        stops every rank.
    **options
        The single-process function's other keyword arguments (``method``, ``x_lengths``,
        ``length``, ``normalize``, ``bandwidth``, ...), the same on every rank.

    Returns
    -------
    torch.Tensor, numpy.ndarray or tuple
        The single-process function's result, on every rank.

    Examples
    --------
    >>> import numpy as np, torch.distributed as dist, tempfile, os
    >>> from softdtw_torch import distributed
    >>> from softdtw_torch.barycenter import softdtw_barycenter
    >>> store = os.path.join(tempfile.mkdtemp(), "store")
    >>> dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    >>> X = np.random.default_rng(0).normal(size=(6, 20, 1))
    >>> bool(np.array_equal(distributed.softdtw_barycenter(X, max_iter=5), softdtw_barycenter(X, max_iter=5)))
    True
    >>> dist.destroy_process_group()
    """
    from .barycenter import softdtw_barycenter as single

    with _sharing("softdtw_barycenter", group) as share:
        _check_same_everywhere(share.who, group, X, weights, init, options.get("x_lengths"),
                               settings=repr(sorted((k, v) for k, v in options.items() if k != "x_lengths"))
                               + repr((gamma, tol, max_iter)))
        return single(X, gamma, weights, tol, max_iter, init, callback=_agreed(share, callback), **options)


def _random_state_summary(random_state: Any) -> Any:
    """What must agree between ranks about a random_state (None: numpy's global generator, which
    is each rank's own)."""
    if isinstance(random_state, np.random.RandomState):
        kind, keys, pos, has_gauss, gauss = random_state.get_state()
        return (kind, hashlib.sha256(keys.tobytes()).hexdigest(), pos, has_gauss, gauss)
    return random_state


def fit(estimator: Any, X: Any, y: Any = None, *, group: Optional[Any] = None, **fit_params: Any) -> Any:
    """``estimator.fit(X, y, **fit_params)`` for a :class:`~softdtw_torch.clustering.SoftDTWKMeans`
    (or tslearn's ``TimeSeriesKMeans`` from :mod:`softdtw_torch.tslearn`), with its soft-DTW work
    split across the ranks of ``group``: the assignments' (series, center) pairs, the series'
    self-terms and the centers' barycenter updates (each rank a block of the members' terms, every
    gradient gathered), so that every rank ends with the single-process fit, bit for bit
    (``cluster_centers_``, ``labels_``, ``inertia_``, ``n_iter_``).

    Parameters
    ----------
    estimator : softdtw_torch.clustering.SoftDTWKMeans
        Unfitted or fitted (it is refitted), the same parameters on every rank, an int
        ``random_state`` (or array ``init``).
    X : numpy.ndarray, torch.Tensor or list
        The series, the same on every rank.
    y : None
        Ignored.
    group : torch.distributed.ProcessGroup or None, default None
        The ranks that share the work.
    **fit_params
        ``x_lengths``, as for ``estimator.fit``.

    Returns
    -------
    softdtw_torch.clustering.SoftDTWKMeans
        The estimator, fitted, on every rank.

    Raises
    ------
    TypeError
        An estimator other than soft-DTW k-means.
    ValueError
        ``random_state=None`` with a random initialisation (each rank would draw its own centers),
        parameters or inputs that differ between ranks, and the estimator's own errors.

    Examples
    --------
    >>> import numpy as np, torch.distributed as dist, tempfile, os
    >>> from softdtw_torch import distributed
    >>> from softdtw_torch.clustering import SoftDTWKMeans
    >>> store = os.path.join(tempfile.mkdtemp(), "store")
    >>> dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    >>> X = np.random.default_rng(0).normal(size=(10, 20, 1))
    >>> km = distributed.fit(SoftDTWKMeans(n_clusters=2, max_iter=3, random_state=0), X)
    >>> one = SoftDTWKMeans(n_clusters=2, max_iter=3, random_state=0).fit(X)
    >>> bool(np.array_equal(km.cluster_centers_, one.cluster_centers_))
    True
    >>> dist.destroy_process_group()
    """
    from .clustering import SoftDTWKMeans

    who = f"{type(estimator).__name__}.fit"
    if not isinstance(estimator, SoftDTWKMeans):
        raise TypeError(f"softdtw_torch.distributed.fit: expected a SoftDTWKMeans (or softdtw_torch.tslearn's "
                        f"TimeSeriesKMeans), got {type(estimator).__name__}; for ROCKET transformers use "
                        "distributed.transform, for k-NN distributed.kneighbors_predict")
    with _sharing(who, group) as share:
        seeded = isinstance(estimator.init, str)  # the initial centers are drawn
        parameters = sorted((k, v) for k, v in estimator.get_params().items() if k not in ("random_state", "init"))
        settings = (repr(parameters), _random_state_summary(estimator.random_state) if seeded else None)
        _check_same_everywhere(share.who, group, X, fit_params.get("x_lengths"), None if seeded else estimator.init,
                               settings=settings)
        if seeded and estimator.random_state is None:  # raised on every rank: all of them agree on it
            raise ValueError(f"{who}: random_state=None draws the initial centers from each rank's own global numpy "
                             "generator; pass an int (or the same RandomState on every rank)")
        return estimator.fit(X, y, **fit_params)
