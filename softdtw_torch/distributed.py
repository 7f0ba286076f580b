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
import contextlib
import hashlib
import threading
from typing import Any, Callable, Iterator, List, Optional, Sequence

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor

__all__ = ["cdist_soft_dtw", "cdist_dtw", "kneighbors_predict", "transform", "softdtw_barycenter", "fit"]

# The share of the work this thread's call computes, set by ``_sharing`` and read by
# ``functional._pairs_in_chunks`` (eager only).
_active = threading.local()


class _Share:
    """A process group's split of chunked work: chunk k belongs to rank k mod world_size."""

    def __init__(self, who: str, group: Optional[Any]):
        self.who = who
        self.group = group
        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)

    def owns(self, chunk: int) -> bool:
        return chunk % self.world == self.rank


def active_share() -> Optional[_Share]:
    """The share of the current call under :func:`_sharing`, or None (every chunk computed here)."""
    return getattr(_active, "share", None)


@contextlib.contextmanager
def _sharing(who: str, group: Optional[Any]) -> Iterator[_Share]:
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(f"{who}: torch.distributed is not initialized; call "
                           "torch.distributed.init_process_group first (or use softdtw_torch's single-process "
                           "function of the same name)")
    if active_share() is not None:
        raise RuntimeError(f"{who}: already inside a distributed call ({active_share().who})")
    share = _Share(who, group)
    _active.share = share
    try:
        yield share
    finally:
        _active.share = None


def _collective(who: str, call: Any, *args: Any, **kwargs: Any) -> Any:
    """A torch.distributed collective whose failure (a rank that died, the group's timeout) is
    raised under the public function's name, with the backend's message kept."""
    try:
        return call(*args, **kwargs)
    except RuntimeError as error:
        raise RuntimeError(f"{who}: the process group failed while the ranks exchanged results (a rank died or the "
                           f"group's timeout passed): {error}") from error


def _describe(value: Any) -> Any:
    """What must agree between ranks about one input: its shape, dtype and device (or, for a list
    of series, its type and length)."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        return (tuple(value.shape), str(value.dtype), value.device.type)
    if isinstance(value, np.ndarray):
        return (value.shape, str(value.dtype), "numpy")
    return (type(value).__name__, len(value) if hasattr(value, "__len__") else None)


def _check_same_everywhere(who: str, group: Optional[Any], *inputs: Any, settings: Any = None) -> None:
    """Refuses, on every rank, inputs that are not the same on every rank (shape, dtype, device
    type, library version, and ``settings``, a picklable summary of anything else that must agree):
    a rank holding another collection would give another matrix."""
    from . import __version__

    mine = (__version__,) + tuple(_describe(value) for value in inputs) + ((settings,) if settings is not None else ())
    everyone: List[Any] = [None] * dist.get_world_size(group)
    _collective(who, dist.all_gather_object, everyone, mine, group=group)
    for rank, theirs in enumerate(everyone):
        if theirs != mine:
            raise ValueError(f"{who}: every rank must pass the same inputs and run the same softdtw_torch; rank "
                             f"{rank} has {theirs}, rank {dist.get_rank(group)} has {mine} (version, then each "
                             f"input's shape, dtype and device)")


def _raise_if_any_failed(share: _Share, error: Optional[BaseException]) -> None:
    """Every rank says whether its part failed; all raise the first failing rank's error. One small
    tensor collective when all succeeded (the barycenter asks at every evaluation), the messages
    exchanged only after a failure."""
    backend = dist.get_backend(share.group)
    device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
    failed = torch.tensor([0 if error is None else 1], dtype=torch.int32, device=device)
    _collective(share.who, dist.all_reduce, failed, op=dist.ReduceOp.MAX, group=share.group)
    if not int(failed.item()):
        return
    report = None if error is None else (type(error).__name__, str(error))
    reports: List[Any] = [None] * share.world
    _collective(share.who, dist.all_gather_object, reports, report, group=share.group)
    for rank, got in enumerate(reports):
        if got is None:
            continue
        if rank == share.rank and error is not None:
            raise error
        kind = {"ValueError": ValueError, "TypeError": TypeError}.get(got[0], RuntimeError)
        raise kind(f"{share.who}: rank {rank} failed ({got[0]}): {got[1]}")


def gather_chunks(share: _Share, mine: Sequence[Tensor], chunk_sizes: Sequence[int], like: Tensor) -> List[Tensor]:
    """Every chunk's values on every rank: each rank sends its chunks (one tensor, padded to the
    largest share), and chunk k is read from rank k mod world_size's part."""
    totals = [sum(size for k, size in enumerate(chunk_sizes) if k % share.world == r) for r in range(share.world)]
    longest = max(totals) if totals else 0
    mine_flat = torch.cat([like.new_empty((0,))] + list(mine))
    padded = torch.cat([mine_flat, like.new_zeros((longest - mine_flat.numel(),))])
    parts = [torch.empty_like(padded) for _ in range(share.world)]
    _collective(share.who, dist.all_gather, parts, padded.contiguous(), group=share.group)
    chunks, offsets = [], [0] * share.world
    for k, size in enumerate(chunk_sizes):
        r = k % share.world
        chunks.append(parts[r][offsets[r]: offsets[r] + size])
        offsets[r] += size
    return chunks


def _block_bounds(n_rows: int, world: int) -> List[int]:
    """Where each rank's contiguous block of ``n_rows`` rows starts and stops: rank r has rows
    ``bounds[r]:bounds[r + 1]`` (near-equal blocks, in rank order)."""
    return [int(b) for b in np.linspace(0, n_rows, world + 1).round().astype(int)]


def rows_by_rank(n_rows: int, row_shapes: Sequence[Sequence[int]], like: Tensor,
                 compute: Callable[[int, int], Sequence[Tensor]]) -> List[Tensor]:
    """``compute(0, n_rows)`` (tensors of ``n_rows`` rows each, of shapes ``(n_rows, *row_shapes[k])``
    and ``like``'s dtype and device), shared out when a call of this module is active: this rank
    computes its contiguous block of rows, every rank learns whether all blocks succeeded, and every
    block is gathered on every rank. A row's values must not depend on the other rows of its call,
    which holds for the per-pair soft-DTW kernels (each pair's DP runs alone, tested) and for the
    ROCKET transforms (each case alone). Used by the barycenter objective and by k-means."""
    share = active_share()
    if share is None:
        return list(compute(0, n_rows))
    bounds = _block_bounds(n_rows, share.world)
    lo, hi = bounds[share.rank], bounds[share.rank + 1]
    mine: List[Tensor] = []
    error = None
    try:
        if hi > lo:
            mine = [part.reshape(-1) for part in compute(lo, hi)]
    except Exception as caught:  # reported to every rank before any exchange
        error = caught
    _raise_if_any_failed(share, error)
    row_sizes = [int(np.prod(shape)) for shape in row_shapes]
    counts = [bounds[r + 1] - bounds[r] for r in range(share.world)]
    parts = gather_chunks(share, [torch.cat(mine)] if mine else [], [c * sum(row_sizes) for c in counts], like)
    columns: List[List[Tensor]] = [[] for _ in row_shapes]
    for part, count in zip(parts, counts):
        offset = 0
        for k, (shape, size) in enumerate(zip(row_shapes, row_sizes)):
            columns[k].append(part[offset: offset + count * size].reshape(count, *shape))
            offset += count * size
    return [torch.cat(blocks) for blocks in columns]


def pairs_in_chunks(share: _Share, compute_chunk: Any, n_pairs: int, chunk_size: int, like: Tensor) -> Tensor:
    """``functional._pairs_in_chunks`` under a share: this rank computes its chunks
    (``compute_chunk(start)``, the single-process call's batched call for the chunk starting at
    pair ``start``), every rank learns whether all parts succeeded, then every chunk's values are
    gathered on every rank, in the single-process order."""
    starts = list(range(0, n_pairs, chunk_size))
    sizes = [min(chunk_size, n_pairs - start) for start in starts]
    mine: List[Tensor] = []
    error = None
    try:
        for k, start in enumerate(starts):
            if share.owns(k):
                mine.append(compute_chunk(start))
    except Exception as caught:  # reported to every rank before any exchange
        error = caught
    _raise_if_any_failed(share, error)
    return torch.cat([like.new_empty((0,))] + gather_chunks(share, mine, sizes, like))


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
