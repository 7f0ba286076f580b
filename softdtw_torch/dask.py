"""The all-pairs matrices, k-NN prediction and the ROCKET family's transforms as Dask graphs, with
the single-process call's bits.

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

Nothing is computed until the caller asks (``.compute()``, ``dask.compute``), on whatever scheduler
is active: threads, processes, or a ``dask.distributed`` cluster, whose workers import
softdtw_torch (and load its extension) when they unpickle the first task. Dask retries the tasks
of a worker that dies, and a retried task computes the same bits. Needs ``dask[array]``
(``dask.distributed`` for a cluster); tested on a ``LocalCluster`` of worker processes
(tests/infra/test_dask_ops.py).
"""
from typing import Any, Optional

import numpy as np
import torch

__all__ = ["cdist_soft_dtw", "cdist_dtw", "kneighbors_predict", "transform"]


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
    block = partial(_cdist_dtw_block, bandwidth=bandwidth, itakura_max_slope=itakura_max_slope)
    return _all_pairs(who, block, X, Y, x_lengths, y_lengths, block_size)


def _cases(who: str, X: Any, chunk_size: int) -> Any:
    da = _dask_array()
    X = _as_numpy(who, "X", X)
    if hasattr(X, "dask"):
        return X.rechunk({0: chunk_size, **{axis: -1 for axis in range(1, X.ndim)}})
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
        Cases per task.

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
    cases = _cases(who, X, chunk_size)
    if cases.ndim != 3:
        raise ValueError(f"{who}: expected X of shape (n_cases, n_channels, n_timepoints), got {cases.ndim}-D")
    width = np.asarray(estimator.transform(np.asarray(cases[:1].compute(scheduler="synchronous")))).shape[1]
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
        Test cases per task.

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
    cases = _cases(who, X, chunk_size)
    classes = getattr(estimator, "classes_", None)
    dtype = np.asarray(classes).dtype if classes is not None else np.float64
    fitted = dask.delayed(estimator, pure=True)
    return cases.map_blocks(_predict_block, fitted, dtype=dtype, drop_axis=list(range(1, cases.ndim)),
                            meta=np.empty((0,), dtype=dtype))


def _predict_block(block, estimator):
    return np.asarray(estimator.predict(np.asarray(block)))
