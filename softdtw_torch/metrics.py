"""Hard DTW under tslearn's names (``tslearn.metrics``): :func:`dtw`, :func:`dtw_path`,
:func:`cdist_dtw`, the lower bounds :func:`lb_envelope` and :func:`lb_keogh` (defined in
``softdtw_torch._lower_bounds``, which the nearest-neighbour search shares), the masks of the global
constraints :func:`sakoe_chiba_mask` and :func:`itakura_mask`, and the :func:`gamma_soft_dtw` heuristic.

Hard DTW is soft-DTW at ``gamma = 0``: the same operators and kernels (CPU and CUDA), whose cell
math then takes the hard minimum (docs/design/softdtw.md §10), so everything ``soft_dtw`` offers
holds here too: batches, ragged lengths, Sakoe–Chiba bands, the fused mode, float32/float64,
autograd, TorchScript. ``soft_dtw(x, y, gamma=0.0)`` is the squared form, the sum of the squared
Euclidean costs ``||x_i − y_j||²`` along the optimal path; tslearn's ``dtw`` (and ours) is its
square root.

- **Path and ties.** Where several predecessors of a cell tie for the minimum, the path takes the
  first of diagonal, up (i − 1, j), left (i, j − 1): tslearn's ``dtw_path`` rule, which backtracks
  from the last cell. The path is the alignment matrix ``soft_dtw_alignment(x, y, gamma=0.0)``
  returns, 1 on the path and 0 elsewhere.
- **Gradient.** The gradient is the one of the path's cost, the path held fixed: a subgradient
  where the optimal path is not unique (the path of the tie rule above), the gradient elsewhere.
  Forward mode and second derivatives follow the same path. For :func:`dtw` (the square root) the
  gradient at a distance of 0 is 0 (a subgradient of the norm), never NaN.
- **Constraints.** ``bandwidth`` is tslearn's ``sakoe_chiba_radius`` (with its widening by
  ``|N − M|`` for unequal lengths), ``itakura_max_slope`` tslearn's ``itakura_max_slope`` (the
  Itakura parallelogram of :func:`itakura_mask`, on each pair's own lengths); tslearn's
  ``global_constraint`` is implied by which is given. Where the parallelogram leaves a pair with no
  path (a row or a column without an admissible cell), tslearn raises; here the distance is
  ``+inf``, the gradient zero and :func:`dtw_path`'s path empty. Both may be given, which tslearn
  refuses: a path then keeps to the cells both admit. A tensor ``gamma`` cannot be 0 (its gradient
  is undefined there); barycenters and k-means keep ``gamma > 0``.

numpy arrays and lists are read as tslearn reads them (one series per side, (N,) or (N, d), or
datasets for :func:`cdist_dtw`) and give numpy results; tensors give tensors.
"""
from typing import Any, Optional, Tuple, Union

import numpy as np
import torch
from torch import Tensor

from ._errors import public_errors
from ._input import (_check_int, _check_itakura_slope, _checked_argument_types, _datasets_from_arrays, _is_array_input,
                     _pair_from_arrays, _prepare_series, _to_numpy)
from ._lower_bounds import itakura_column_bounds, lb_envelope, lb_keogh
from ._progress import Progress
from .functional import (_cdist_pair_count, _cdist_soft_dtw, _check_cdist_memory, _check_datasets, _unbatched_pair,
                         cdist_soft_dtw, soft_dtw)

__all__ = ["dtw", "dtw_path", "cdist_dtw", "gamma_soft_dtw", "lb_envelope", "lb_keogh", "sakoe_chiba_mask",
           "itakura_mask"]


def _root(squared: Tensor) -> Tensor:
    """sqrt, with gradient 0 (not inf·0 = NaN) where the squared distance is 0."""
    positive = squared > 0
    safe = torch.where(positive, squared, torch.ones_like(squared))
    return torch.where(positive, safe.sqrt(), torch.zeros_like(squared))


def dtw(
    x: Tensor,
    y: Tensor,
    bandwidth: Optional[int] = None,
    x_lengths: Optional[Tensor] = None,
    y_lengths: Optional[Tensor] = None,
    itakura_max_slope: Optional[float] = None,
) -> Tensor:
    """DTW distance between ``x`` (B, N, d) and ``y`` (B, M, d), tslearn's ``dtw``.

    The square root of the smallest sum of squared Euclidean costs over the warping paths.
    Differentiable (module docstring: the gradient along the optimal path, 0 at a distance of 0).

    Parameters
    ----------
    x, y : torch.Tensor, numpy.ndarray or list
        (B, N, d) and (B, M, d), or one unbatched pair (N, d), (M, d). numpy input as tslearn's:
        ``dtw(s1, s2)`` with each series (N,) or (N, d) gives a float.
    bandwidth : int or None, default None
        The Sakoe–Chiba radius (tslearn's ``sakoe_chiba_radius``); ``None``: no band.
    x_lengths, y_lengths : torch.Tensor or None, default None
        Ragged batches, as for :func:`softdtw_torch.functional.soft_dtw`.
    itakura_max_slope : float or None, default None
        The Itakura parallelogram (tslearn's ``itakura_max_slope``, module docstring); a pair it
        leaves with no path is at distance ``+inf``.

    Returns
    -------
    torch.Tensor or float
        The (B,) distances, or a 0-dim tensor for one unbatched pair; a numpy float for numpy input.

    Raises
    ------
    ValueError
        Bad shapes or values (as :func:`softdtw_torch.functional.soft_dtw`, named ``dtw``).
    TypeError
        Wrong types.

    See Also
    --------
    dtw_path : the optimal path as well.
    cdist_dtw : all pairs of two datasets.

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from softdtw_torch.metrics import dtw
    >>> float(dtw(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 2.0, 3.0])))
    0.0
    >>> x = torch.tensor([[0.0], [1.0], [2.0]])
    >>> y = torch.tensor([[0.0], [2.0]])
    >>> dtw(x, y)
    tensor(1.)
    >>> dtw(torch.zeros(2, 3, 1), torch.ones(2, 4, 1)).tolist()  # a batch: sqrt(4 x 1)
    [2.0, 2.0]
    """
    if not torch.jit.is_scripting():
        _, bandwidth, itakura_max_slope, x_lengths, y_lengths = _checked_argument_types(
            "dtw", 0.0, bandwidth, itakura_max_slope, x_lengths, y_lengths)
        if _is_array_input(x, y):
            a, b, la, lb, _ = _pair_from_arrays("dtw", x, y, x_lengths, y_lengths)
            with torch.no_grad():
                return _to_numpy(dtw(a, b, bandwidth, la, lb, itakura_max_slope))
        with public_errors("dtw"):  # soft_dtw's errors name this function (eager only)
            return _root(soft_dtw(x, y, 0.0, bandwidth, x_lengths=x_lengths, y_lengths=y_lengths,
                                  itakura_max_slope=itakura_max_slope))
    return _root(soft_dtw(x, y, 0.0, bandwidth, x_lengths=x_lengths, y_lengths=y_lengths,
                          itakura_max_slope=itakura_max_slope))


def dtw_path(
    x: Any,
    y: Any,
    bandwidth: Optional[int] = None,
    x_lengths: Any = None,
    y_lengths: Any = None,
    itakura_max_slope: Optional[float] = None,
) -> Tuple[Any, Any]:
    """The optimal warping path and the DTW distance, tslearn's ``dtw_path``.

    Ties follow tslearn's rule (module docstring). The paths come from one walk back per pair over
    the forward's table (O(N + M) each, on the input's device); the distances are differentiable
    when a tensor input requires grad. For the path as a differentiable (B, N, M) matrix, use
    ``soft_dtw_alignment(x, y, gamma=0.0)``. Python only (not TorchScript: it returns lists).

    Parameters
    ----------
    x, y : torch.Tensor, numpy.ndarray or list
        One pair (numpy or tensors, (N,) / (N, d) and (M,) / (M, d)), or a batch ((B, N, d) and
        (B, M, d), lengths allowed).
    bandwidth : int or None, default None
        As for :func:`dtw`.
    x_lengths, y_lengths : torch.Tensor, list or None, default None
        Ragged batches (a batch only: single series with lengths raise).
    itakura_max_slope : float or None, default None
        As for :func:`dtw`; a pair with no admissible path gets an empty path and an infinite
        distance (tslearn raises).

    Returns
    -------
    path : list
        For one pair, a list of ``(i, j)`` from ``(0, 0)`` to ``(N − 1, M − 1)``; for a batch, a
        list of B such paths.
    distance : float or torch.Tensor
        For one pair, a float (numpy input) or a 0-dim tensor; for a batch, the (B,) distances.

    Raises
    ------
    ValueError
        Bad shapes or values; lengths given with single series.
    TypeError
        Wrong types.
    torch.OutOfMemoryError
        The DP table beyond what the device can give (the memory preflight).

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.metrics import dtw_path
    >>> path, distance = dtw_path(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 2.0, 3.0]))
    >>> path
    [(0, 0), (1, 1), (1, 2), (2, 3)]
    >>> float(distance)
    0.0
    """
    _, bandwidth, itakura_max_slope, x_lengths, y_lengths = _checked_argument_types(
        "dtw_path", 0.0, bandwidth, itakura_max_slope, x_lengths, y_lengths)
    arrays = _is_array_input(x, y)
    if arrays:
        x, y, x_lengths, y_lengths, unbatched = _pair_from_arrays("dtw_path", x, y, x_lengths, y_lengths)
    else:
        unbatched = _unbatched_pair("dtw_path", x, y)
        if unbatched and (x_lengths is not None or y_lengths is not None):
            raise ValueError("dtw_path: lengths apply to batches of series, got single series with lengths")
    if unbatched:
        x, y = x.unsqueeze(0), y.unsqueeze(0)
    with torch.no_grad():
        squared, cells, lengths = torch.ops.softdtw_torch._dtw_path(x, y, bandwidth, itakura_max_slope, x_lengths,
                                                                    y_lengths)
    if not arrays and torch.is_grad_enabled() and (x.requires_grad or y.requires_grad):
        # The same fused forward, under autograd: the same bits, and a gradient along the path.
        squared = soft_dtw(x, y, 0.0, bandwidth, fused=True, x_lengths=x_lengths, y_lengths=y_lengths,
                           itakura_max_slope=itakura_max_slope)
    distance = _root(squared)
    cells, path_lengths = cells.cpu().numpy(), lengths.tolist()
    paths = [list(zip(cells[b, :n, 0].tolist(), cells[b, :n, 1].tolist())) for b, n in enumerate(path_lengths)]
    if unbatched:
        paths, distance = paths[0], distance[0]
    return paths, (_to_numpy(distance) if arrays else distance)


def cdist_dtw(
    X: Tensor,
    Y: Optional[Tensor] = None,
    bandwidth: Optional[int] = None,
    x_lengths: Optional[Tensor] = None,
    y_lengths: Optional[Tensor] = None,
    chunk_size: int = 1024,
    itakura_max_slope: Optional[float] = None,
    verbose: bool = False,
) -> Tensor:
    """All-pairs DTW distances (A, B') between the series of ``X`` (A, N, d) and ``Y`` (B', M, d).

    tslearn's ``cdist_dtw``. Chunked as :func:`softdtw_torch.functional.cdist_soft_dtw`, so memory
    stays bounded; differentiable.

    Parameters
    ----------
    X : torch.Tensor, numpy.ndarray or list
        (A, N, d). numpy / lists as tslearn's datasets ((A, N), (A, N, d), lists of series of any
        lengths, NaN-padded); the result is then numpy.
    Y : torch.Tensor, numpy.ndarray, list or None, default None
        (B', M, d); ``None`` compares ``X`` with itself (each unordered pair once, the matrix
        symmetric with a zero diagonal).
    bandwidth : int or None, default None
        As for :func:`dtw` (tslearn's ``sakoe_chiba_radius``), each pair on its own lengths.
    x_lengths, y_lengths : torch.Tensor or None, default None
        Ragged datasets, (A,) and (B',).
    chunk_size : int, default 1024
        Pairs per batched call, >= 1.
    itakura_max_slope : float or None, default None
        As for :func:`dtw` (tslearn's ``itakura_max_slope``), each pair on its own lengths.
    verbose : bool, default ``False``
        Report progress per chunk of pairs, as :func:`softdtw_torch.functional.cdist_soft_dtw`
        does (the package's convention, CONTRIBUTING.md "Progress"); the result is the same, bit
        for bit.

    Returns
    -------
    torch.Tensor or numpy.ndarray
        The (A, B') distances; numpy for numpy or list input.

    Raises
    ------
    ValueError
        ``X`` or ``Y`` not 3-D tensors, ``chunk_size`` < 1, bad values.
    TypeError
        Wrong types.
    torch.OutOfMemoryError
        The matrix beyond what the device can give (the memory preflight).

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.metrics import cdist_dtw
    >>> X = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 2.0]])  # two univariate series
    >>> cdist_dtw(X).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    if not torch.jit.is_scripting():
        _, bandwidth, itakura_max_slope, x_lengths, y_lengths = _checked_argument_types(
            "cdist_dtw", 0.0, bandwidth, itakura_max_slope, x_lengths, y_lengths)
        chunk_size = _check_int(chunk_size, "cdist_dtw", "chunk_size", 1)
        if _is_array_input(X, Y):
            a, b, la, lb = _datasets_from_arrays("cdist_dtw", X, Y, x_lengths, y_lengths)
            with torch.no_grad():
                return _to_numpy(cdist_dtw(a, b, bandwidth, la, lb, chunk_size, itakura_max_slope, verbose))
    _check_datasets("cdist_dtw", X, Y)  # before cdist_soft_dtw's own check: errors name cdist_dtw
    if chunk_size < 1:
        raise ValueError("cdist_dtw: chunk_size must be >= 1, got " + str(chunk_size))
    if not torch.jit.is_scripting():  # cdist_soft_dtw's work and errors, under this function's name (eager only)
        _check_cdist_memory("cdist_dtw", X, Y, False)
        with public_errors("cdist_dtw"):
            if verbose:
                total = _cdist_pair_count(X.shape[0], None if Y is None else Y.shape[0], False)
                with Progress(verbose, "cdist_dtw", total, unit="pairs") as progress:
                    return _root(_cdist_soft_dtw(X, Y, 0.0, False, bandwidth, "sqeuclidean", None, x_lengths,
                                                 y_lengths, chunk_size, itakura_max_slope, progress))
            return _root(cdist_soft_dtw(X, Y, 0.0, False, bandwidth, "sqeuclidean", None, x_lengths, y_lengths,
                                        chunk_size, itakura_max_slope))
    squared = cdist_soft_dtw(X, Y, 0.0, False, bandwidth, "sqeuclidean", None, x_lengths, y_lengths, chunk_size,
                             itakura_max_slope)
    return _root(squared)


def sakoe_chiba_mask(sz1: int, sz2: int, radius: int = 1) -> np.ndarray:
    """The cells the Sakoe–Chiba band admits, tslearn's ``sakoe_chiba_mask(sz1, sz2, radius=1)``.

    True where row i may meet column j, i.e. ``j − i`` in
    ``[−radius − max(0, sz1 − sz2), radius + max(0, sz2 − sz1)]`` (the band widened by the length
    difference): the cells ``bandwidth=radius`` admits everywhere in this package.

    Parameters
    ----------
    sz1, sz2 : int
        The lengths of the two series, >= 1.
    radius : int, default 1
        The band's radius, >= 0.

    Returns
    -------
    numpy.ndarray
        A (sz1, sz2) bool array.

    Raises
    ------
    ValueError
        A length < 1 or a negative radius.
    TypeError
        Non-integer arguments.

    Examples
    --------
    >>> from softdtw_torch.metrics import sakoe_chiba_mask
    >>> sakoe_chiba_mask(4, 4, radius=1).astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]])
    """
    who = "sakoe_chiba_mask"
    n, m = _check_int(sz1, who, "sz1", 1), _check_int(sz2, who, "sz2", 1)
    radius = _check_int(radius, who, "radius", 0)
    offset = np.arange(m)[None, :] - np.arange(n)[:, None]
    return (offset >= -(radius + max(0, n - m))) & (offset <= radius + max(0, m - n))


def itakura_mask(sz1: int, sz2: int, max_slope: float = 2.0) -> np.ndarray:
    """The cells the Itakura parallelogram admits, tslearn's ``itakura_mask(sz1, sz2, max_slope=2.0)``.

    The cells ``itakura_max_slope=max_slope`` admits everywhere in this package. Column j admits
    the rows ``[lb_j, ub_j)`` of tslearn's construction (slopes ``max_slope·sz1/sz2`` and
    ``sz1/(sz2·max_slope)`` through the corners, bounds rounded to two decimals). Where the
    parallelogram leaves a row or a column without a cell (no path), tslearn raises; here the mask
    is returned as it is (the distances are then ``+inf``).

    Parameters
    ----------
    sz1, sz2 : int
        The lengths of the two series, >= 1.
    max_slope : float, default 2.0
        The maximum slope, >= 1.

    Returns
    -------
    numpy.ndarray
        A (sz1, sz2) bool array.

    Raises
    ------
    ValueError
        A length < 1 or a slope < 1 (or not finite).
    TypeError
        Arguments of the wrong types.

    Examples
    --------
    >>> from softdtw_torch.metrics import itakura_mask
    >>> itakura_mask(6, 6, max_slope=2.0).astype(int)
    array([[1, 0, 0, 0, 0, 0],
           [0, 1, 1, 0, 0, 0],
           [0, 1, 1, 1, 0, 0],
           [0, 0, 1, 1, 1, 0],
           [0, 0, 0, 1, 1, 0],
           [0, 0, 0, 0, 0, 1]])
    """
    who = "itakura_mask"
    n, m = _check_int(sz1, who, "sz1", 1), _check_int(sz2, who, "sz2", 1)
    slope = _check_itakura_slope(max_slope, who, "max_slope", optional=False)
    lo, hi = itakura_column_bounds(torch.tensor(n), torch.tensor(m), m, slope)
    rows = np.arange(n)[:, None]
    return (rows >= lo.numpy()[None, :]) & (rows < hi.numpy()[None, :])


def gamma_soft_dtw(X: Any, n_samples: int = 100, random_state: Union[None, int, np.random.RandomState] = None
                   ) -> float:
    """tslearn's heuristic for soft-DTW's ``gamma`` on a dataset (tslearn 0.10's ``gamma_soft_dtw``).

    ``2·σ²``, σ the median Euclidean distance between ``n_samples`` time points drawn from all the
    series' time points (padding excluded; with replacement when there are fewer points than
    ``n_samples``), times the square root of the longest length (tslearn's ``sigma_gak``). The
    draw is tslearn's for the same ``random_state`` (scikit-learn's rule), so is the value.

    Parameters
    ----------
    X : numpy.ndarray, list or torch.Tensor
        (A, N), (A, N, d), a list of series of any lengths, NaN-padded, or a tensor (read on the CPU).
    n_samples : int, default 100
        How many time points to draw, >= 2.
    random_state : None, int or numpy.random.RandomState, default None
        The draw's seed (scikit-learn's rule: None is numpy's global RandomState).

    Returns
    -------
    float
        The suggested ``gamma``.

    Raises
    ------
    ValueError
        ``n_samples`` < 2, a bad dataset, an int ``random_state`` out of numpy's range.
    TypeError
        ``n_samples`` not an int, ``random_state`` of another type.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.metrics import gamma_soft_dtw
    >>> X = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 2.0, 3.0]])
    >>> float(gamma_soft_dtw(X, n_samples=5, random_state=0))
    8.0
    """
    from scipy.spatial.distance import pdist

    from ._base import check_random_state

    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)):
        raise TypeError(f"gamma_soft_dtw: expected n_samples to be an int, got {type(n_samples).__name__}")
    if n_samples < 2:
        raise ValueError(f"gamma_soft_dtw: n_samples must be >= 2 (a median of pairwise distances), got {n_samples}")
    rng = check_random_state(random_state, "gamma_soft_dtw")
    data = _prepare_series(X.detach().cpu() if isinstance(X, Tensor) else X, None, "gamma_soft_dtw",
                           allow_groups=False)
    series, lengths = data.x[0].double().numpy(), data.lengths[0].tolist()
    points = np.concatenate([s[:length] for s, length in zip(series, lengths)])  # series by series, in time order
    picked = rng.choice(len(points), size=n_samples, replace=len(points) < n_samples)
    sigma = float(np.median(pdist(points[picked], metric="euclidean"))) * np.sqrt(series.shape[1])
    return 2.0 * sigma ** 2
