"""The all-pairs matrices, k-NN prediction, the ROCKET family's transforms, soft-DTW barycenters
and k-means on Dask, with the single-process call's bits.

- :func:`cdist_soft_dtw` and :func:`cdist_dtw` return a dask array of blocks of
  ``block_size`` × ``block_size`` pairs, each block one task: the single-process function on those
  rows and columns. A pair's value does not depend on the other pairs of its batch in the fused
  mode (the default for the squared Euclidean cost and d <= 128) nor in hard DTW, so every value
  has the single-process bits; the unfused mode (``cost="l1"``/``"cosine"``, ``fused=False``,
  d > 128) builds each block's cost tensor with a batched matrix product and agrees within its
  documented rounding (docs/guarantees.md, "ragged batches"). ``Y=None`` computes each block of
  the upper triangle once and mirrors it, as the single-process call mirrors its pairs.
- :func:`transform` maps a fitted ROCKET-family transformer over the chunks of cases
  (``map_blocks``); :func:`kneighbors_predict` maps a fitted k-NN estimator's ``predict`` over the
  chunks of test cases, the training set travelling once with the estimator.
- :func:`softdtw_barycenter` and :func:`fit` (soft-DTW k-means) keep the series where the dask
  array's chunks are (persisted) and run the optimiser here: each evaluation is one task per
  chunk, returning its series' values and gradients, summed here in the series' order as one
  process sums them; k-means' assignments are one task per chunk too (the same bits).

Nothing is computed until the caller asks (``.compute()``, ``dask.compute``), on whatever scheduler
is active: threads, processes, or a ``dask.distributed`` cluster, whose workers import
softdtw_torch (and load its extension) when they unpickle the first task. On a cluster (the
default client), every function first asks each worker which softdtw_torch it imports and
refuses, naming a worker, a cluster where some run another version or cannot load the
extension. Dask retries the tasks of a worker that dies, and a retried task computes the same
bits. Needs ``dask[array]`` (``dask.distributed`` for a cluster); tested on a ``LocalCluster`` of
worker processes (tests/infra/test_dask_ops.py).
"""
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import torch

__all__ = ["cdist_soft_dtw", "cdist_dtw", "kneighbors_predict", "transform", "softdtw_barycenter", "fit"]


def _dask_array():
    try:
        import dask.array as da
    except ImportError as error:  # pragma: no cover - dask is in requirements-dev.txt
        raise ImportError("softdtw_torch.dask needs dask: pip install 'dask[array,distributed]'") from error
    return da


def _as_numpy(who: str, name: str, X: Any) -> Any:
    """X as a numpy array or a dask array (kept lazy); tensors are copied to the host."""
    if X is None:
        return None
    if isinstance(X, torch.Tensor):
        if X.requires_grad and torch.is_grad_enabled():
            raise ValueError(f"{who}: a Dask graph is not differentiable; pass {name} detached (or call the "
                             "single-process function for gradients)")
        return X.detach().cpu().numpy()
    if hasattr(X, "dask") and hasattr(X, "chunks"):
        return X
    X = np.asarray(X)
    if X.dtype == object or not np.issubdtype(X.dtype, np.number) or np.iscomplexobj(X):
        raise TypeError(f"{who}: expected {name} to be a real numeric array, got dtype {X.dtype}")
    return X


def _check_workers(who: str) -> None:
    """On a ``dask.distributed`` cluster (the default client), refuses by name workers that do not
    run this softdtw_torch (another version, or none, or an extension that does not load): their
    tasks would compute something else, or fail one by one. Without a cluster the tasks run here."""
    try:
        from distributed import default_client

        client = default_client()
    except (ImportError, ValueError):  # no dask.distributed, or no client: local schedulers
        return
    from . import __version__

    def worker_version() -> str:  # nested: sent by value, so a worker without softdtw_torch can run it
        try:
            import softdtw_torch
            from softdtw_torch import _ops  # noqa: F401 (loads the extension)

            return softdtw_torch.__version__
        except Exception as error:  # reported below, with the worker named
            return f"no importable softdtw_torch ({type(error).__name__}: {error})"

    others = {address: version for address, version in client.run(worker_version).items() if version != __version__}
    if others:
        address, version = sorted(others.items())[0]
        raise ValueError(f"{who}: every Dask worker must run softdtw_torch {__version__}, as this process does; "
                         f"{len(others)} of them do not, worker {address} has {version}")


def _check_block_size(who: str, block_size: Any) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise TypeError(f"{who}: expected block_size to be an int, got {type(block_size).__name__}")
    if block_size < 1:
        raise ValueError(f"{who}: expected block_size >= 1, got {block_size}")
    return int(block_size)


def _blocks(n: int, size: int):
    return [(start, min(n, start + size)) for start in range(0, n, size)]


def _all_pairs(who: str, pair_block: Any, X: Any, Y: Any, x_lengths: Any, y_lengths: Any, block_size: int) -> Any:
    """The (A, B') matrix as a dask array of blocks, block (I, J) = ``pair_block(X_I, Y_J, lengths)``;
    for ``Y=None`` the blocks above the diagonal are computed once and mirrored, the diagonal ones
    by the symmetric call."""
    import dask
    da = _dask_array()

    X = _as_numpy(who, "X", X)
    Y = _as_numpy(who, "Y", Y)
    if X.ndim not in (2, 3) or (Y is not None and Y.ndim not in (2, 3)):
        raise ValueError(f"{who}: expected X and Y of shape (n_series, length, features) or (n_series, length), "
                         f"got {X.ndim}-D" + ("" if Y is None else f" and {Y.ndim}-D"))
    xl = None if x_lengths is None else np.asarray(torch.as_tensor(x_lengths).cpu())
    yl = None if y_lengths is None else np.asarray(torch.as_tensor(y_lengths).cpu())
    symmetric = Y is None
    dtype = np.float32 if np.dtype(X.dtype) == np.float32 else np.float64  # the single-process result's
    rows = _blocks(X.shape[0], block_size)
    cols = rows if symmetric else _blocks(Y.shape[0], block_size)
    task = dask.delayed(pair_block, pure=True)
    grid = []
    upper = {}
    for I, (r0, r1) in enumerate(rows):
        line = []
        for J, (c0, c1) in enumerate(cols):
            shape = (r1 - r0, c1 - c0)
            if symmetric and J < I:  # the mirror of a block computed above the diagonal
                line.append(upper[(J, I)].T)
                continue
            a_lengths = None if xl is None else xl[r0:r1]
            if symmetric and I == J:
                value = task(X[r0:r1], None, a_lengths, None)
            elif symmetric:
                value = task(X[r0:r1], X[c0:c1], a_lengths, None if xl is None else xl[c0:c1])
            else:
                value = task(X[r0:r1], Y[c0:c1], a_lengths, None if yl is None else yl[c0:c1])
            block = da.from_delayed(value, shape=shape, dtype=dtype)
            if symmetric:
                upper[(I, J)] = block
            line.append(block)
        grid.append(line)
    return da.block(grid)


def _cdist_soft_dtw_block(X, Y, x_lengths, y_lengths, gamma, normalize, bandwidth, cost, fused, itakura_max_slope):
    from .functional import cdist_soft_dtw as single

    X = np.asarray(X)
    Y = None if Y is None else np.asarray(Y)
    return np.asarray(single(X, Y, gamma, normalize, bandwidth, cost, fused, x_lengths, y_lengths, 1024,
                             itakura_max_slope))


def _cdist_dtw_block(X, Y, x_lengths, y_lengths, bandwidth, itakura_max_slope):
    from .metrics import cdist_dtw as single

    X = np.asarray(X)
    Y = None if Y is None else np.asarray(Y)
    return np.asarray(single(X, Y, bandwidth, x_lengths, y_lengths, 1024, itakura_max_slope))


def cdist_soft_dtw(X: Any, Y: Any = None, gamma: float = 1.0, normalize: bool = False, bandwidth: Optional[int] = None,
                   cost: str = "sqeuclidean", fused: Optional[bool] = None, x_lengths: Any = None,
                   y_lengths: Any = None, itakura_max_slope: Optional[float] = None, *, block_size: int = 256) -> Any:
    """:func:`softdtw_torch.functional.cdist_soft_dtw` as a dask array of blocks, one task each.

    Parameters
    ----------
    X, Y : numpy.ndarray, torch.Tensor or dask.array.Array
        (A, N, d) and (B', M, d) (or (A, N) univariate), tslearn's layout; ``Y=None``: X against
        itself. Tensors are copied to the host; the blocks are numpy.
    gamma, normalize, bandwidth, cost, fused, x_lengths, y_lengths, itakura_max_slope
        As for :func:`softdtw_torch.functional.cdist_soft_dtw` (``gamma`` a float).
    block_size : int, default 256
        Rows and columns per block: a block is one task of ``block_size**2`` pairs.

    Returns
    -------
    dask.array.Array
        (A, B'), float32 for float32 input, float64 otherwise; lazy.

    Raises
    ------
    ValueError, TypeError
        Bad shapes, types or ``block_size``; a tensor that requires grad (the graph is not
        differentiable). The single-process function's errors arise when the blocks compute.

    Examples
    --------
    >>> import numpy as np
    >>> import softdtw_torch as st
    >>> from softdtw_torch import dask as sdask
    >>> X = np.random.default_rng(0).normal(size=(7, 20, 2))
    >>> D = sdask.cdist_soft_dtw(X, gamma=0.1, block_size=3)   # 3 x 3 blocks, 6 computed
    >>> D.shape, D.numblocks
    ((7, 7), (3, 3))
    >>> bool(np.array_equal(D.compute(scheduler="synchronous"), st.cdist_soft_dtw(X, gamma=0.1)))
    True
    """
    from functools import partial

    who = "softdtw_torch.dask.cdist_soft_dtw"
    block_size = _check_block_size(who, block_size)
    _check_workers(who)
    if isinstance(gamma, torch.Tensor):
        raise TypeError(f"{who}: expected gamma to be a float (a tensor gamma is for autograd, which a Dask graph "
                        "does not carry)")
    block = partial(_cdist_soft_dtw_block, gamma=gamma, normalize=normalize, bandwidth=bandwidth, cost=cost,
                    fused=fused, itakura_max_slope=itakura_max_slope)
    return _all_pairs(who, block, X, Y, x_lengths, y_lengths, block_size)


def cdist_dtw(X: Any, Y: Any = None, bandwidth: Optional[int] = None, x_lengths: Any = None, y_lengths: Any = None,
              itakura_max_slope: Optional[float] = None, *, block_size: int = 256) -> Any:
    """:func:`softdtw_torch.metrics.cdist_dtw` as a dask array of blocks, one task each, every
    value the single-process bits.

    Parameters
    ----------
    X, Y : numpy.ndarray, torch.Tensor or dask.array.Array
        As for :func:`cdist_soft_dtw`.
    bandwidth, x_lengths, y_lengths, itakura_max_slope
        As for :func:`softdtw_torch.metrics.cdist_dtw`.
    block_size : int, default 256
        Rows and columns per block.

    Returns
    -------
    dask.array.Array
        (A, B') DTW distances; lazy.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch import dask as sdask, metrics
    >>> X = np.random.default_rng(0).normal(size=(5, 15, 1))
    >>> D = sdask.cdist_dtw(X, bandwidth=3, block_size=2)
    >>> bool(np.array_equal(D.compute(scheduler="synchronous"), metrics.cdist_dtw(X, bandwidth=3)))
    True
    """
    from functools import partial

    who = "softdtw_torch.dask.cdist_dtw"
    block_size = _check_block_size(who, block_size)
    _check_workers(who)
    block = partial(_cdist_dtw_block, bandwidth=bandwidth, itakura_max_slope=itakura_max_slope)
    return _all_pairs(who, block, X, Y, x_lengths, y_lengths, block_size)


def _cases(who: str, X: Any, chunk_size: int) -> Any:
    """X as a dask array of chunks of whole cases: a dask array keeps its chunks of cases (its
    other axes are joined), numpy and tensors are cut into chunks of ``chunk_size`` cases."""
    da = _dask_array()
    X = _as_numpy(who, "X", X)
    if hasattr(X, "dask"):
        return X.rechunk({axis: -1 for axis in range(1, X.ndim)})
    return da.from_array(X, chunks=(chunk_size,) + X.shape[1:])


def transform(estimator: Any, X: Any, *, chunk_size: int = 1024) -> Any:
    """A fitted ROCKET-family transformer's ``transform`` mapped over chunks of cases
    (``map_blocks``), each case's features the single-process bits.

    Parameters
    ----------
    estimator : softdtw_torch.rocket.Rocket, softdtw_torch.rocket.MiniRocket, softdtw_torch.rocket.MultiRocket or softdtw_torch.rocket.HydraTransformer
        Fitted; it travels to the workers once, pickled.
    X : numpy.ndarray, torch.Tensor or dask.array.Array
        (n_cases, n_channels, n_timepoints), aeon's layout.
    chunk_size : int, default 1024
        Cases per task, for numpy and tensor input (a dask array keeps its chunks of cases).

    Returns
    -------
    dask.array.Array
        (n_cases, n_features) float32 features; lazy.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch import dask as sdask
    >>> from softdtw_torch.rocket import MiniRocket
    >>> X = np.random.default_rng(0).normal(size=(10, 1, 40)).astype(np.float32)
    >>> rocket = MiniRocket(random_state=0).fit(X)
    >>> F = sdask.transform(rocket, X, chunk_size=4)
    >>> F.shape, F.numblocks
    ((10, 9996), (3, 1))
    >>> bool(np.array_equal(F.compute(scheduler="synchronous"), rocket.transform(X)))
    True
    """
    import dask

    who = f"softdtw_torch.dask.transform ({type(estimator).__name__})"
    chunk_size = _check_block_size(who, chunk_size)
    _check_workers(who)
    cases = _cases(who, X, chunk_size)
    if cases.ndim != 3:
        raise ValueError(f"{who}: expected X of shape (n_cases, n_channels, n_timepoints), got {cases.ndim}-D")
    width = np.asarray(estimator.transform(np.asarray(cases[:1].compute()))).shape[1]
    fitted = dask.delayed(estimator, pure=True)  # one copy in the graph, not one per chunk
    # meta given: dask would otherwise call the function on empty arrays to learn the output's type
    return cases.map_blocks(_transform_block, fitted, dtype=np.float32, drop_axis=[1, 2], new_axis=[1],
                            chunks=(cases.chunks[0], (width,)), meta=np.empty((0, 0), dtype=np.float32))


def _transform_block(block, estimator):
    return np.asarray(estimator.transform(np.asarray(block)))


def kneighbors_predict(estimator: Any, X: Any, *, chunk_size: int = 256) -> Any:
    """A fitted k-NN estimator's ``predict`` mapped over chunks of test cases, each prediction the
    single-process one.

    Parameters
    ----------
    estimator : softdtw_torch.neighbors.KNeighborsTimeSeriesClassifier or softdtw_torch.neighbors.KNeighborsTimeSeriesRegressor
        Fitted; it travels to the workers once, with its training set.
    X : numpy.ndarray, torch.Tensor or dask.array.Array
        (n_cases, length, features), tslearn's layout.
    chunk_size : int, default 256
        Test cases per task, for numpy and tensor input (a dask array keeps its chunks of cases).

    Returns
    -------
    dask.array.Array
        (n_cases,) predictions; lazy.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch import dask as sdask
    >>> from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier
    >>> rng = np.random.default_rng(0)
    >>> knn = KNeighborsTimeSeriesClassifier(n_neighbors=1).fit(rng.normal(size=(8, 20, 1)), [0, 1] * 4)
    >>> test = rng.normal(size=(5, 20, 1))
    >>> got = sdask.kneighbors_predict(knn, test, chunk_size=2).compute(scheduler="synchronous")
    >>> bool(np.array_equal(got, knn.predict(test)))
    True
    """
    import dask

    who = f"softdtw_torch.dask.kneighbors_predict ({type(estimator).__name__})"
    chunk_size = _check_block_size(who, chunk_size)
    _check_workers(who)
    cases = _cases(who, X, chunk_size)
    classes = getattr(estimator, "classes_", None)
    dtype = np.asarray(classes).dtype if classes is not None else np.float64
    fitted = dask.delayed(estimator, pure=True)
    return cases.map_blocks(_predict_block, fitted, dtype=dtype, drop_axis=list(range(1, cases.ndim)),
                            meta=np.empty((0,), dtype=dtype))


def _predict_block(block, estimator):
    return np.asarray(estimator.predict(np.asarray(block)))


class _Chunks:
    """A collection of series kept in a dask array's chunks of cases (persisted on the workers),
    float32 or float64, of one length: what the barycenter and k-means ask of their members, one
    task per chunk."""

    def __init__(self, who: str, X: Any, chunk_size: int):
        import dask.array

        cases = _cases(who, X, chunk_size)
        if cases.ndim not in (2, 3) or cases.shape[0] == 0:
            raise ValueError(f"{who}: expected X of shape (n_series, length, features) or (n_series, length) with at "
                             f"least one series, got shape {cases.shape}")
        # The single-process reader checks the layout and the dtype on the first series.
        from ._input import _prepare_series

        first = _prepare_series(np.asarray(cases[:1].compute()), None, who, allow_groups=False)
        if first.x.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"{who}: expected float32 or float64 series, got {first.x.dtype}")
        self.dtype = first.x.dtype
        self.squeeze_2d = cases.ndim == 2
        self.cases = cases.astype(np.float32 if self.dtype == torch.float32 else np.float64).persist()
        if not bool(dask.array.isfinite(self.cases).all().compute()):
            raise ValueError(f"{who}: X holds NaN or inf (the series of a dask array must be complete and of one "
                             "length)")
        self.n, self.length = self.cases.shape[0], self.cases.shape[1]
        self.features = self.cases.shape[2] if self.cases.ndim == 3 else 1
        self.blocks = list(self.cases.to_delayed().ravel())
        self.bounds = [int(b) for b in np.cumsum((0,) + self.cases.chunks[0])]

    def map(self, task: Any, per_chunk: Sequence[Sequence[Any]], *common: Any) -> List[Any]:
        """``task(chunk, *per_chunk[c], *common)`` for every chunk c, computed at once; the results
        in the chunks' order. Tensors travel as numpy arrays both ways (``_numpy_call``)."""
        import dask

        call = dask.delayed(_numpy_call, pure=True)
        common = tuple(_to_numpy(value) for value in common)
        parts = dask.compute(*[call(task, block, *(_to_numpy(value) for value in mine), *common)
                               for block, mine in zip(self.blocks, per_chunk)])
        return [_from_numpy(part) for part in parts]

    def slices(self, *tensors: torch.Tensor) -> List[Tuple[torch.Tensor, ...]]:
        """Each chunk's rows of ``tensors`` (indexed by series)."""
        return [tuple(t[lo:hi] for t in tensors) for lo, hi in zip(self.bounds[:-1], self.bounds[1:])]

    def take(self, ids: torch.Tensor) -> torch.Tensor:
        """The series ``ids`` (any order, repeats allowed), here, (len(ids), length, features)."""
        return _series_tensor(self.cases[ids.cpu().numpy()].compute())


def _to_numpy(value: Any) -> Any:
    return value.numpy() if isinstance(value, torch.Tensor) else value


def _from_numpy(value: Any) -> Any:
    if isinstance(value, list):
        return [_from_numpy(item) for item in value]
    if isinstance(value, np.ndarray):  # arrays arriving from a worker may be read-only buffers
        return torch.from_numpy(value if value.flags.writeable else value.copy())
    return value


def _numpy_call(task: Any, block: Any, *args: Any) -> Any:
    """``task(block, *args)`` on a worker, with the tensors it takes and returns sent as numpy
    arrays: Dask moves numpy arrays far faster than tensors (a task's round trip with a small
    tensor argument took 35 ms on a LocalCluster here, with a numpy one 10 ms). The bits are the
    same."""
    result = task(block, *(_from_numpy(arg) for arg in args))
    return [_to_numpy(item) for item in result] if isinstance(result, list) else _to_numpy(result)


def _series_tensor(block: Any) -> torch.Tensor:
    x = _from_numpy(np.ascontiguousarray(block))
    return x.unsqueeze(-1) if x.dim() == 2 else x


def _chunk_terms(block: Any, rows: torch.Tensor, weights: torch.Tensor, z: torch.Tensor, gamma: float,
                 bandwidth: Optional[int], need_grad: bool) -> List[torch.Tensor]:
    """One chunk's pairs at z: series i of the chunk is a pair of row ``rows[i]`` of z when
    ``rows[i] >= 0`` and ``weights[i] > 0`` (in order), its terms as ``_barycenter_solvers._member_terms``
    computes them in one process."""
    from ._barycenter_solvers import _member_terms

    x = _series_tensor(block)
    keep = (rows >= 0) & (weights > 0)
    if not bool(keep.any()):
        return [x.new_empty((0,))] + ([x.new_empty((0,) + tuple(z.shape[1:]))] if need_grad else [])
    return _member_terms(z.index_select(0, rows[keep]), x[keep], weights[keep], None, gamma, bandwidth, need_grad)


def _chunk_self_terms(block: Any, weights: torch.Tensor, gamma: float, bandwidth: Optional[int]) -> torch.Tensor:
    """sdtw_γ(x_i, x_i) of the chunk's series of weight > 0."""
    from .functional import soft_dtw

    x = _series_tensor(block)[weights > 0]
    with torch.no_grad():
        return soft_dtw(x, x, gamma, bandwidth) if len(x) else x.new_empty((0,))


def _objective_class():
    from ._barycenter_solvers import _Objective

    class ChunkObjective(_Objective):
        """The barycenter objective of K problems whose members are the chunks' series: series j
        is a pair of problem ``problem[j]`` with weight ``weights[j]`` (dropped at 0). Each
        evaluation is one task per chunk; the terms are summed here in the series' order, as
        ``_Objective`` sums them in one process."""

        def __init__(self, chunks: _Chunks, problem: torch.Tensor, weights: torch.Tensor, n_problems: int,
                     gamma: float, bandwidth: Optional[int], normalize: bool):
            self.chunks, self.problem, self.weights = chunks, problem, weights
            self.n_problems, self.gamma, self.bandwidth, self.normalize = n_problems, gamma, bandwidth, normalize
            kept = weights > 0
            members_self = None
            if normalize:
                members_self = torch.cat(chunks.map(_chunk_self_terms, chunks.slices(weights), gamma, bandwidth))
            self._set_problem_constants(problem[kept], weights[kept], members_self)
            self.series_rows = problem

        def _pairs_for(self, problems: torch.Tensor) -> Any:
            row_of = torch.full((self.n_problems,), -1, dtype=torch.int64)
            row_of[problems] = torch.arange(problems.numel())
            self.series_rows = row_of[self.problem]  # -1: not in the problems evaluated
            kept = (self.series_rows >= 0) & (self.weights > 0)
            return self.series_rows[kept], self.weights[kept], None, None

        def _pair_terms(self, z: torch.Tensor, rows: torch.Tensor, w: torch.Tensor, xs: Any, ls: Any,
                        need_grad: bool) -> List[torch.Tensor]:
            parts = self.chunks.map(_chunk_terms, self.chunks.slices(self.series_rows, self.weights), z, self.gamma,
                                    self.bandwidth, need_grad)
            return [torch.cat([part[k] for part in parts]) for k in range(len(parts[0]))]

    return ChunkObjective


def _default_init(weights: np.ndarray, length: Optional[int], *blocks: Any) -> np.ndarray:
    """The single-process default start (the weighted Euclidean mean, resampled to ``length``),
    computed on one worker from all the members."""
    from .barycenter import _prepare_init

    x = torch.cat([_series_tensor(b) for b in blocks])
    lengths = torch.full((1, x.shape[0]), x.shape[1], dtype=torch.int64)
    return _prepare_init(None, length, x.unsqueeze(0), lengths, _from_numpy(weights).unsqueeze(0), True, False,
                         "softdtw_torch.dask.softdtw_barycenter").numpy()


def softdtw_barycenter(X: Any, gamma: float = 1.0, weights: Any = None, tol: Optional[float] = None,
                       max_iter: Optional[int] = None, init: Any = None, *, method: str = "lbfgs",
                       length: Optional[int] = None, normalize: bool = False, bandwidth: Optional[int] = None,
                       lr: Optional[float] = None, grad_clip: Optional[float] = 1.0, patience: int = 10,
                       chunk_size: int = 1024, verbose: bool = False) -> np.ndarray:
    """:func:`softdtw_torch.barycenter.softdtw_barycenter` of one group whose members stay in a
    dask array's chunks: the optimiser runs here, and each evaluation of the objective is one task
    per chunk of members (their values and gradients at the current barycenter), summed here in the
    members' order, so the result is the single-process one, bit for bit.

    Parameters
    ----------
    X : dask.array.Array, numpy.ndarray or torch.Tensor
        (n, T, d) or (n, T), one group of series of one length (tslearn's layout), float32 or
        float64; persisted on the workers for the iterations.
    gamma, weights, tol, max_iter, method, length, normalize, bandwidth, lr, grad_clip, patience, verbose
        As for :func:`softdtw_torch.barycenter.softdtw_barycenter` (``weights`` a numpy array of n).
    init : numpy.ndarray, torch.Tensor or None, default None
        The start, (length, d). ``None``: the single-process default, the weighted Euclidean mean,
        computed by one task that holds all the members once; pass an ``init`` to keep the members
        off any single worker.
    chunk_size : int, default 1024
        Members per task, for numpy and tensor input (a dask array keeps its chunks of cases).

    Returns
    -------
    numpy.ndarray
        The barycenter, (length, d); (length, 1) for (n, T) input.

    Raises
    ------
    ValueError, TypeError
        As the single-process function, naming ``softdtw_torch.dask.softdtw_barycenter``; NaN or
        inf in the series.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch import dask as sdask
    >>> from softdtw_torch.barycenter import softdtw_barycenter
    >>> X = np.random.default_rng(0).normal(size=(7, 20, 1))
    >>> z = sdask.softdtw_barycenter(X, max_iter=5, chunk_size=3)   # 3 tasks per evaluation
    >>> bool(np.array_equal(z, softdtw_barycenter(X, max_iter=5)))
    True
    """
    import dask

    from ._barycenter_solvers import _solve
    from .barycenter import _check_solver_options, _prepare_init, _prepare_weights

    who = "softdtw_torch.dask.softdtw_barycenter"
    chunk_size = _check_block_size(who, chunk_size)
    gamma, max_iter, tol, lr, bandwidth, patience, grad_clip = _check_solver_options(
        who, gamma, method, max_iter, tol, lr, bandwidth, patience, grad_clip)
    _check_workers(who)
    chunks = _Chunks(who, X, chunk_size)
    n, T, d = chunks.n, chunks.length, chunks.features
    w = _prepare_weights(weights, 1, n, True, torch.device("cpu"), chunks.dtype, who)[0]
    if init is None:
        z0 = _from_numpy(dask.compute(dask.delayed(_default_init)(w.numpy(), length, *chunks.blocks))[0])
    else:
        shape_only = torch.zeros((1, 1, T, d), dtype=chunks.dtype)
        z0 = _prepare_init(init, length, shape_only, torch.full((1, 1), T), w[:1].unsqueeze(0), True, chunks.squeeze_2d,
                           who)
    objective = _objective_class()(chunks, torch.zeros(n, dtype=torch.int64), w, 1, gamma, bandwidth, normalize)
    z, _ = _solve(objective, z0, method, max_iter, tol, lr, None, verbose, True, who, grad_clip=grad_clip,
                  patience=patience)
    return z[0].numpy()


def _kmeans_chunk(block: Any, estimator: Any, question: str, other: Optional[torch.Tensor]) -> torch.Tensor:
    """What soft-DTW k-means asks of one chunk's series, answered by the estimator's own
    single-process code: their self-terms, their values to ``other`` (the centers), or the values
    from ``other`` (some series) to them."""
    x = _series_tensor(block)
    if question == "self":
        return estimator._self_terms(x, None)
    if question == "to":
        return estimator._cdist(x, None, other, None)
    return estimator._cdist(other, None, x, None)


class _ChunkedMembers:
    """:class:`softdtw_torch.clustering._Members`'s five answers from a dask array's chunks, with
    the same bits (every pair's DP runs alone; the values are assembled in the series' order)."""

    def __init__(self, estimator: Any, chunks: _Chunks):
        from sklearn.base import clone

        self.km, self.chunks = estimator, chunks
        self.params_only = clone(estimator)  # what travels with each task: the parameters, not a fit
        self.n, self.length, self.features = chunks.n, chunks.length, chunks.features
        self.device, self.dtype = torch.device("cpu"), chunks.dtype
        self.ragged_lengths = None

    def _ask(self, question: str, other: Optional[torch.Tensor]) -> List[torch.Tensor]:
        return self.chunks.map(_kmeans_chunk, [()] * len(self.chunks.blocks), self.params_only, question, other)

    def self_terms(self) -> torch.Tensor:
        return torch.cat(self._ask("self", None))

    def values_to(self, centers: torch.Tensor) -> torch.Tensor:
        return torch.cat(self._ask("to", centers), dim=0)

    def values_from(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.cat(self._ask("from", self.chunks.take(ids)), dim=1)

    def as_centers(self, ids: torch.Tensor) -> torch.Tensor:
        return self.chunks.take(ids).clone()

    def objective(self, labels: torch.Tensor, k: int) -> Any:
        return _objective_class()(self.chunks, labels, torch.ones(self.n, dtype=self.dtype), k, float(self.km.gamma),
                                  self.km.bandwidth, bool(self.km.metric_normalize))


def fit(estimator: Any, X: Any, y: Any = None, *, chunk_size: int = 1024) -> Any:
    """``estimator.fit(X)`` for a :class:`~softdtw_torch.clustering.SoftDTWKMeans` (or
    :mod:`softdtw_torch.tslearn`'s ``TimeSeriesKMeans``) whose series stay in a dask array's chunks:
    the Lloyd iterations run here, and every soft-DTW computation on the series (their
    self-terms, the assignments to the centers, k-means++'s candidates, the barycenter updates'
    values and gradients) is one task per chunk, so the fit is the single-process one, bit for bit.

    Parameters
    ----------
    estimator : softdtw_torch.clustering.SoftDTWKMeans
        Its parameters are used as ``fit`` uses them; it is fitted in place and returned.
    X : dask.array.Array, numpy.ndarray or torch.Tensor
        (n, T, d) or (n, T), series of one length, float32 or float64; persisted on the workers.
    y : None
        Ignored.
    chunk_size : int, default 1024
        Series per task, for numpy and tensor input (a dask array keeps its chunks of cases).

    Returns
    -------
    softdtw_torch.clustering.SoftDTWKMeans
        The estimator, fitted: ``cluster_centers_`` and ``labels_`` as numpy arrays, ``inertia_``, ``n_iter_``.

    Raises
    ------
    TypeError
        An estimator other than soft-DTW k-means; series that are not float32 or float64.
    ValueError
        NaN or inf in the series, and ``fit``'s own errors.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch import dask as sdask
    >>> from softdtw_torch.clustering import SoftDTWKMeans
    >>> X = np.random.default_rng(0).normal(size=(10, 20, 1))
    >>> km = sdask.fit(SoftDTWKMeans(n_clusters=2, max_iter=3, random_state=0), X, chunk_size=4)
    >>> one = SoftDTWKMeans(n_clusters=2, max_iter=3, random_state=0).fit(X)
    >>> bool(np.array_equal(km.cluster_centers_, one.cluster_centers_))
    True
    """
    from .clustering import SoftDTWKMeans

    who = f"softdtw_torch.dask.fit ({type(estimator).__name__})"
    if not isinstance(estimator, SoftDTWKMeans):
        raise TypeError(f"softdtw_torch.dask.fit: expected a SoftDTWKMeans (or softdtw_torch.tslearn's "
                        f"TimeSeriesKMeans), got {type(estimator).__name__}; for ROCKET transformers use "
                        "softdtw_torch.dask.transform, for k-NN softdtw_torch.dask.kneighbors_predict")
    chunk_size = _check_block_size(who, chunk_size)
    estimator._check_params()
    _check_workers(who)
    chunks = _Chunks(who, X, chunk_size)
    return estimator._fit_members(_ChunkedMembers(estimator, chunks), "numpy", chunks.squeeze_2d)
