"""Plotting helpers: alignment matrices and DTW paths, warpings, barycenters and clusters, drawn with
matplotlib.

matplotlib is optional: it is imported when a helper is called, and a helper called without it
raises an :class:`ImportError` that names the helper and ``pip install matplotlib``. Each helper
draws on the ``ax`` (or ``axes``) it is given, or on a new figure, and returns what it drew on, as
seaborn's functions and scikit-learn's displays do: the figure is ``ax.figure``. Series, matrices,
paths and labels may be tensors (on any device; they are detached and read on the CPU), numpy
arrays or lists; the inputs are never modified.

Series follow the package's layout: one series is ``(length,)`` or ``(length, features)``; a data
set is ``(n, length)``, ``(n, length, features)`` or a list of series of any lengths (trailing
all-NaN time steps are padding, tslearn's convention). Multivariate series are drawn one channel at
a time (``channel=``).
"""
from __future__ import annotations

import numbers
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import Tensor

from ._input import _prepare_series, _single_series, _to_tensor

__all__ = ["plot_alignment", "plot_warping", "plot_barycenter", "plot_clusters"]


# ---------------------------------------------------------------------------------------------
# Input checks shared by the helpers
# ---------------------------------------------------------------------------------------------

def _matplotlib(who: str) -> Any:
    """matplotlib itself, or an ImportError naming the helper and how to install it."""
    try:
        import matplotlib
        import matplotlib.axes  # noqa: F401
        import matplotlib.collections  # noqa: F401
    except ImportError as err:
        raise ImportError(f"{who} needs matplotlib, which is not installed: pip install matplotlib") from err
    return matplotlib


def _pyplot(who: str) -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(f"{who} needs matplotlib, which is not installed: pip install matplotlib") from err
    return plt


def _check_ax(ax: Any, who: str, arg: str = "ax") -> None:
    import matplotlib.axes

    if ax is not None and not isinstance(ax, matplotlib.axes.Axes):
        raise TypeError(f"{who}: expected {arg} to be a matplotlib Axes or None, got {type(ax).__name__}")


def _check_kwargs(kwargs: Any, who: str, arg: str) -> Dict[str, Any]:
    if kwargs is None:
        return {}
    if not isinstance(kwargs, dict):
        raise TypeError(f"{who}: expected {arg} to be a dict of matplotlib keyword arguments or None, got "
                        f"{type(kwargs).__name__}")
    return dict(kwargs)


def _check_type(value: Any, who: str, arg: str) -> None:
    """Tensors, numpy arrays and (nested) lists or tuples of numbers are read; anything else is a TypeError."""
    if isinstance(value, (str, bytes, dict, set)) or not isinstance(value, (Tensor, np.ndarray, list, tuple)):
        raise TypeError(f"{who}: expected {arg} to be a tensor, a numpy array or a list, got {type(value).__name__}")


def _series(value: Any, who: str, arg: str) -> np.ndarray:
    """One series, (length,) or (length, features), as a new float64 (length, features) array; trailing
    all-NaN time steps (padding) are dropped."""
    _check_type(value, who, arg)
    t, _ = _to_tensor(value, who, arg)
    if t.dim() not in (1, 2):
        raise ValueError(f"{who}: expected {arg} to be one series, (length,) or (length, features), got a "
                         f"{t.dim()}-D input of shape {tuple(t.shape)}"
                         + (f"; for one series of a batch pass {arg}[b]" if t.dim() == 3 else ""))
    if t.dim() == 2 and t.shape[0] == 1 and t.shape[1] > 1:
        raise ValueError(f"{who}: {arg} of shape {tuple(t.shape)} reads as one time step with {t.shape[1]} features; "
                         f"that looks like aeon's layout (features, length), while {who} reads (length, features): "
                         f"pass {arg}.T")
    t = _single_series(t, who, arg)
    return t.detach().cpu().double().numpy().copy()


def _dataset(value: Any, who: str, arg: str) -> List[np.ndarray]:
    """A data set ((n, length), (n, length, features), a list of series of any lengths, NaN-padded) as a
    list of n new float64 (length_i, features) arrays."""
    _check_type(value, who, arg)
    if isinstance(value, (list, tuple)):
        for s in value:
            if isinstance(s, (str, bytes, dict, set)):
                raise TypeError(f"{who}: expected {arg} to hold series (tensors, arrays or lists of numbers), "
                                f"got an item of type {type(s).__name__}")
    try:
        data = _prepare_series(value, None, who, allow_groups=False)
    except ValueError as err:
        if arg == "X":
            raise
        raise ValueError(f"{err} (reading {arg} as a data set)") from None
    x = data.x[0].detach().cpu().double().numpy()
    lengths = data.lengths[0].tolist()
    return [x[i, :n].copy() for i, n in enumerate(lengths)]


def _channel(channel: Any, features: Sequence[Tuple[str, int]], who: str) -> int:
    """``channel`` checked against the number of features of each named input."""
    if isinstance(channel, bool) or not isinstance(channel, numbers.Integral):
        raise TypeError(f"{who}: expected channel to be an int, got {type(channel).__name__}")
    channel = int(channel)
    for name, d in features:
        if not 0 <= channel < d:
            raise ValueError(f"{who}: channel {channel} is out of range for {name}, which has {d} feature(s) "
                             f"(channels 0 to {d - 1})")
    return channel


_BATCH_HINT = "; dtw_path on a batch returns one path per pair: pass one of them, paths[b]"


def _path(path: Any, who: str, shape: Optional[Tuple[int, int]]) -> np.ndarray:
    """A warping path (a list of (i, j) pairs or an (L, 2) integer array or tensor) as an (L, 2) int64 array,
    each (i, j) checked to lie in ``shape``."""
    if isinstance(path, Tensor):
        if path.is_floating_point() or path.is_complex() or path.dtype == torch.bool:
            raise TypeError(f"{who}: expected path to hold integer indices, got a tensor of dtype {path.dtype}")
        p = path.detach().cpu().numpy()
    elif isinstance(path, (np.ndarray, list, tuple)):
        try:
            p = np.asarray(path)
        except ValueError:
            first = path[0] if len(path) else None
            nested = isinstance(first, (list, tuple, np.ndarray)) and len(first) > 0 and \
                isinstance(first[0], (list, tuple, np.ndarray))
            raise ValueError(f"{who}: expected path to be a list of (i, j) pairs or an (L, 2) array, got a ragged "
                             f"list" + (_BATCH_HINT if nested else "")) from None
        if p.size == 0:
            p = np.zeros((0, 2), dtype=np.int64)
        elif p.dtype == object or p.dtype.kind not in "iu":
            raise TypeError(f"{who}: expected path to hold integer indices (i, j), got "
                            f"{'non-numeric values' if p.dtype == object else f'dtype {p.dtype}'}")
    else:
        raise TypeError(f"{who}: expected path to be a list of (i, j) pairs, an (L, 2) array or tensor, got "
                        f"{type(path).__name__}")
    if p.ndim != 2 or p.shape[1] != 2:
        hint = _BATCH_HINT if p.ndim == 3 and p.shape[-1] == 2 else ""
        raise ValueError(f"{who}: expected path to be a list of (i, j) pairs or an (L, 2) array, got shape "
                         f"{tuple(p.shape)}{hint}")
    p = p.astype(np.int64)
    if shape is not None and len(p):
        n, m = shape
        bad = (p[:, 0] < 0) | (p[:, 0] >= n) | (p[:, 1] < 0) | (p[:, 1] >= m)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{who}: path step {k}, (i, j) = ({p[k, 0]}, {p[k, 1]}), is out of range for "
                             f"series of lengths {n} and {m} (0 <= i < {n}, 0 <= j < {m}); {int(bad.sum())} step(s) "
                             f"out of range in all")
    return p


def _matrix(value: Any, who: str) -> np.ndarray:
    _check_type(value, who, "alignment")
    t, _ = _to_tensor(value, who, "alignment")
    if t.dim() != 2:
        hint = "; for one pair of a batch pass alignment[b]" if t.dim() == 3 else ""
        raise ValueError(f"{who}: expected alignment to be one (N, M) matrix, got a {t.dim()}-D input of shape "
                         f"{tuple(t.shape)}{hint}")
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise ValueError(f"{who}: expected a non-empty alignment matrix, got shape {tuple(t.shape)}")
    return t.detach().cpu().double().numpy().copy()


def _labels(value: Any, who: str, names: Sequence[str]) -> Tuple[str, str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or len(value) != 2:
        raise TypeError(f"{who}: expected labels to be a pair of strings (for {names[0]} and {names[1]}), "
                        f"got {value!r}")
    return str(value[0]), str(value[1])


# ---------------------------------------------------------------------------------------------
# The helpers
# ---------------------------------------------------------------------------------------------

def plot_alignment(
    x: Any,
    y: Any,
    alignment: Any = None,
    path: Any = None,
    ax: Any = None,
    *,
    channel: Optional[int] = None,
    labels: Tuple[str, str] = ("x", "y"),
    title: Optional[str] = None,
    cmap: Any = "viridis",
    colorbar: bool = False,
    series_size: Any = "22%",
    image_kwargs: Optional[Dict[str, Any]] = None,
    path_kwargs: Optional[Dict[str, Any]] = None,
    series_kwargs: Optional[Dict[str, Any]] = None,
) -> Any:
    """Draw an alignment matrix as an image, with the two series along its sides and a warping path on it.

    The matrix is drawn as tslearn's documentation draws DTW paths: ``alignment[i, j]`` at row ``i``
    (counted upwards, ``origin="lower"``) and column ``j``; the series ``x`` along the rows, drawn on
    the left with its time upwards (and its value axis inverted, so that it faces the matrix), and
    ``y`` along the columns, drawn on top. The series' axes are appended to ``ax``
    (``mpl_toolkits.axes_grid1.make_axes_locatable``), which shrinks to make room for them.

    Parameters
    ----------
    x, y : torch.Tensor, numpy.ndarray, list or None
        The two series, ``(N,)`` or ``(N, d)`` and ``(M,)`` or ``(M, d)``; trailing all-NaN time steps
        are padding. ``None`` leaves that side out (``alignment`` is then required).
    alignment : torch.Tensor, numpy.ndarray, list or None
        The ``(N, M)`` matrix to draw: the expected alignment ``E`` of
        :func:`~softdtw_torch.functional.soft_dtw_alignment` (one pair, not a batch), a cost matrix
        (:func:`~softdtw_torch.functional.pairwise_cost`), or any other. ``None``: the squared
        Euclidean cost matrix of ``x`` and ``y``.
    path : list, numpy.ndarray, torch.Tensor or None
        A warping path, a list of ``(i, j)`` pairs as :func:`~softdtw_torch.metrics.dtw_path`
        returns for one pair, or an ``(L, 2)`` integer array; drawn as a line over the matrix
        (through the cells ``(i, j)``). Every ``(i, j)`` must lie in the matrix.
    ax : None or ``matplotlib.axes.Axes``
        Where to draw the matrix; ``None``: a new figure.
    channel : None or int
        The channel of multivariate series to draw along the sides; ``None``: every channel.
    labels : tuple of str
        Names of the two series, for the axis labels; default ``("x", "y")``.
    title : None or str
        A title, over the top series' axes (over ``ax`` when ``y`` is ``None``).
    cmap : str or ``matplotlib.colors.Colormap``, default "viridis"
        The image's colour map.
    colorbar : bool, default ``False``
        Add a colour bar on the right.
    series_size : str or float, default "22%"
        Width of the left and height of the top series' axes: a percentage of ``ax`` or inches.
    image_kwargs, path_kwargs, series_kwargs : dict or None
        Extra keyword arguments of ``imshow`` (the matrix), of ``plot`` for the path (default: a
        white line) and of ``plot`` for the series.

    Returns
    -------
    ``matplotlib.axes.Axes``
        The axes of the matrix. The image is ``ax.images[0]`` and the path ``ax.lines[0]``; the
        series' axes are in ``ax.figure.axes``, labelled ``"x"`` and ``"y"`` (``Axes.get_label()``).

    Raises
    ------
    ValueError
        A series that is not 1-D or 2-D, a matrix that is not 2-D or whose shape is not
        ``(N, M)``, a path that is not ``(L, 2)`` or steps out of the matrix, a channel out of range.
    TypeError
        Inputs of the wrong types (a string for a series, float path indices, ``ax`` not an Axes).
    ImportError
        matplotlib is not installed.

    Examples
    --------
    >>> import matplotlib, matplotlib.axes; matplotlib.use("Agg")
    >>> import torch
    >>> import softdtw_torch as st
    >>> from softdtw_torch.plot import plot_alignment
    >>> generator = torch.Generator().manual_seed(0)
    >>> x = torch.randn(30, 1, dtype=torch.float64, generator=generator)
    >>> y = torch.randn(25, 1, dtype=torch.float64, generator=generator)
    >>> path, distance = st.dtw_path(x, y)
    >>> ax = plot_alignment(x, y, path=path)  # the squared Euclidean costs and the optimal path
    >>> isinstance(ax, matplotlib.axes.Axes)
    True
    >>> D = st.pairwise_cost(x[None], y[None], cost="l1")[0]  # any (N, M) matrix: here the L1 costs
    >>> ax = plot_alignment(x, y, D, path, colorbar=True)
    >>> ax.lines[0].get_xydata().tolist() == [[j, i] for i, j in path]
    True
    >>> ax.figure.savefig("alignment.png")  # doctest: +SKIP
    """
    who = "plot_alignment"
    _matplotlib(who)
    _check_ax(ax, who)
    names = _labels(labels, who, ("x", "y"))
    if colorbar not in (True, False):
        raise TypeError(f"{who}: expected colorbar to be a bool, got {type(colorbar).__name__}")
    image_kwargs = _check_kwargs(image_kwargs, who, "image_kwargs")
    path_kwargs = _check_kwargs(path_kwargs, who, "path_kwargs")
    series_kwargs = _check_kwargs(series_kwargs, who, "series_kwargs")
    xs = None if x is None else _series(x, who, "x")
    ys = None if y is None else _series(y, who, "y")
    if alignment is None:
        if xs is None or ys is None:
            raise ValueError(f"{who}: without alignment both x and y are needed (their squared Euclidean cost "
                             "matrix is drawn)")
        if xs.shape[1] != ys.shape[1]:
            raise ValueError(f"{who}: x and y have {xs.shape[1]} and {ys.shape[1]} features: no cost matrix between "
                             "them; pass alignment")
        matrix = ((xs[:, None, :] - ys[None, :, :]) ** 2).sum(-1)
    else:
        matrix = _matrix(alignment, who)
        for name, s, axis in (("x", xs, 0), ("y", ys, 1)):
            if s is not None and len(s) != matrix.shape[axis]:
                raise ValueError(f"{who}: alignment has shape {matrix.shape}, so {name} should have length "
                                 f"{matrix.shape[axis]} (its {'rows' if axis == 0 else 'columns'}), got {len(s)}")
    N, M = matrix.shape
    p = None if path is None else _path(path, who, (N, M))
    present = [(name, s.shape[1]) for name, s in (("x", xs), ("y", ys)) if s is not None]
    channels: Dict[str, List[int]] = {}
    if channel is not None:
        c = _channel(channel, present, who)
        channels = {name: [c] for name, _ in present}
    else:
        channels = {name: list(range(d)) for name, d in present}

    if ax is None:
        _, ax = _pyplot(who).subplots(figsize=(6.4, 6.0))
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    image = ax.imshow(matrix, **{"origin": "lower", "cmap": cmap, "aspect": "auto", "interpolation": "nearest",
                                 **image_kwargs})
    if p is not None:
        ax.plot(p[:, 1], p[:, 0], **{"color": "white", "lw": 1.5, "label": "path", **path_kwargs})
    ax.set_xlim(-0.5, M - 0.5)
    ax.set_ylim(-0.5, N - 0.5)
    ax.set_xlabel(f"{names[1]}: time step j")
    divider = make_axes_locatable(ax)
    if ys is not None:
        top = divider.append_axes("top", size=series_size, pad=0.08, sharex=ax)
        top.set_label("y")
        for c in channels["y"]:
            top.plot(np.arange(M), ys[:, c], **{"lw": 1.2, **series_kwargs})
        top.tick_params(axis="x", labelbottom=False)
    if xs is not None:
        left = divider.append_axes("left", size=series_size, pad=0.08, sharey=ax)
        left.set_label("x")
        for c in channels["x"]:
            left.plot(xs[:, c], np.arange(N), **{"lw": 1.2, **series_kwargs})
        left.invert_xaxis()  # the series faces the matrix
        left.set_ylabel(f"{names[0]}: time step i")
        ax.tick_params(axis="y", labelleft=False)
    else:
        ax.set_ylabel(f"{names[0]}: time step i")
    if title is not None:
        (top if ys is not None else ax).set_title(str(title))
    if colorbar:
        cax = divider.append_axes("right", size="5%", pad=0.08)
        cax.set_label("colorbar")
        ax.figure.colorbar(image, cax=cax)
    return ax


def plot_warping(
    x: Any,
    y: Any,
    path: Any,
    ax: Any = None,
    *,
    channel: int = 0,
    offset: Optional[float] = None,
    labels: Tuple[str, str] = ("x", "y"),
    x_kwargs: Optional[Dict[str, Any]] = None,
    y_kwargs: Optional[Dict[str, Any]] = None,
    match_kwargs: Optional[Dict[str, Any]] = None,
) -> Any:
    """Draw two series one above the other, with a line between each matched pair of time steps.

    ``x`` is drawn shifted up by ``offset``, ``y`` below it, and each ``(i, j)`` of ``path`` joins
    ``x``'s time step ``i`` to ``y``'s time step ``j``: how a warping path matches the two series.

    Parameters
    ----------
    x, y : torch.Tensor, numpy.ndarray or list
        The two series, ``(N,)`` or ``(N, d)`` and ``(M,)`` or ``(M, d)``; trailing all-NaN time steps
        are padding.
    path : list, numpy.ndarray or torch.Tensor
        The matched pairs: a list of ``(i, j)`` as :func:`~softdtw_torch.metrics.dtw_path` returns
        for one pair, or an ``(L, 2)`` integer array. One line per pair (pass ``path[::3]`` for one
        in three); every ``(i, j)`` must lie in ``[0, N) x [0, M)``.
    ax : None or ``matplotlib.axes.Axes``
        Where to draw; ``None``: a new figure.
    channel : int, default 0
        The channel of multivariate series to draw.
    offset : None or float
        How far up ``x`` is drawn; ``None``: far enough for ``x``'s lowest point to be above
        ``y``'s highest, with a gap of a quarter of the larger range.
    labels : tuple of str
        The series' legend labels; default ``("x", "y")``.
    x_kwargs, y_kwargs, match_kwargs : dict or None
        Extra keyword arguments of ``plot`` for ``x`` and ``y``, and of the
        ``matplotlib.collections.LineCollection`` of the matching lines (default: thin, light grey).

    Returns
    -------
    ``matplotlib.axes.Axes``
        The axes drawn on: ``ax.lines[0]`` is ``x`` (plus the offset), ``ax.lines[1]`` is ``y`` and
        ``ax.collections[0]`` the matching lines, one segment per pair of ``path``.

    Raises
    ------
    ValueError
        A series that is not 1-D or 2-D, a path that is not ``(L, 2)`` or steps out of the series,
        a channel out of range, a non-finite offset.
    TypeError
        Inputs of the wrong types.
    ImportError
        matplotlib is not installed.

    Examples
    --------
    >>> import matplotlib, matplotlib.axes; matplotlib.use("Agg")
    >>> import numpy as np
    >>> import softdtw_torch as st
    >>> from softdtw_torch.plot import plot_warping
    >>> rng = np.random.default_rng(0)
    >>> x, y = rng.standard_normal(40).cumsum(), rng.standard_normal(30).cumsum()
    >>> path, distance = st.dtw_path(x, y)
    >>> ax = plot_warping(x, y, path)
    >>> isinstance(ax, matplotlib.axes.Axes)
    True
    >>> len(ax.collections[0].get_segments()) == len(path)
    True
    """
    who = "plot_warping"
    _matplotlib(who)
    _check_ax(ax, who)
    names = _labels(labels, who, ("x", "y"))
    x_kwargs = _check_kwargs(x_kwargs, who, "x_kwargs")
    y_kwargs = _check_kwargs(y_kwargs, who, "y_kwargs")
    match_kwargs = _check_kwargs(match_kwargs, who, "match_kwargs")
    xs, ys = _series(x, who, "x"), _series(y, who, "y")
    c = _channel(channel, (("x", xs.shape[1]), ("y", ys.shape[1])), who)
    p = _path(path, who, (len(xs), len(ys)))
    a, b = xs[:, c], ys[:, c]
    if offset is None:
        finite_a, finite_b = a[np.isfinite(a)], b[np.isfinite(b)]
        if len(finite_a) and len(finite_b):
            span = max(np.ptp(finite_a), np.ptp(finite_b))
            span = span if span > 0 else 1.0
            offset = float(finite_b.max() - finite_a.min() + 0.25 * span)
        else:
            offset = 1.0
    else:
        if isinstance(offset, bool) or not isinstance(offset, numbers.Real):
            raise TypeError(f"{who}: expected offset to be a float or None, got {type(offset).__name__}")
        offset = float(offset)
        if not np.isfinite(offset):
            raise ValueError(f"{who}: offset must be finite, got {offset}")
    from matplotlib.collections import LineCollection

    if ax is None:
        _, ax = _pyplot(who).subplots(figsize=(8.0, 4.0))
    ax.plot(np.arange(len(a)), a + offset, **{"label": names[0], "lw": 1.5, **x_kwargs})
    ax.plot(np.arange(len(b)), b, **{"label": names[1], "lw": 1.5, **y_kwargs})
    segments = np.stack([np.stack([p[:, 0], a[p[:, 0]] + offset], axis=1),
                         np.stack([p[:, 1], b[p[:, 1]]], axis=1)], axis=1) if len(p) else np.zeros((0, 2, 2))
    matches = LineCollection(segments, **{"colors": "0.7", "linewidths": 0.6, "zorder": 1, "label": "matches",
                                          **match_kwargs})
    ax.add_collection(matches)
    ax.autoscale_view()
    ax.set_xlabel("time step")
    return ax


def _draw_members(ax: Any, members: Sequence[np.ndarray], channel: int, colors: Optional[Sequence[Any]],
                  kwargs: Dict[str, Any]) -> None:
    for k, s in enumerate(members):
        style = {"color": "0.7" if colors is None else colors[k], "lw": 0.8, "alpha": 0.7,
                 "label": "members" if k == 0 else "_nolegend_", **kwargs}
        ax.plot(np.arange(len(s)), s[:, channel], **style)


def plot_barycenter(
    X: Any,
    barycenter: Any,
    ax: Any = None,
    *,
    channel: int = 0,
    label: str = "barycenter",
    member_kwargs: Optional[Dict[str, Any]] = None,
    barycenter_kwargs: Optional[Dict[str, Any]] = None,
) -> Any:
    """Draw a group of series in a light colour and their barycenter over them in bold.

    Parameters
    ----------
    X : torch.Tensor, numpy.ndarray or list
        The members: ``(n, T)``, ``(n, T, d)``, or a list of series of any lengths (each ``(T_i,)``
        or ``(T_i, d)``); trailing all-NaN time steps are padding. Each member is drawn at its own
        length.
    barycenter : torch.Tensor, numpy.ndarray or list
        One series, ``(T',)`` or ``(T', d)``, e.g. from
        :func:`~softdtw_torch.barycenter.softdtw_barycenter`; its length may differ from the
        members'.
    ax : None or ``matplotlib.axes.Axes``
        Where to draw; ``None``: a new figure.
    channel : int, default 0
        The channel of multivariate series to draw.
    label : str, default "barycenter"
        The barycenter's legend label (the members' is ``"members"``).
    member_kwargs, barycenter_kwargs : dict or None
        Extra keyword arguments of ``plot`` for the members (default: thin light grey lines) and
        the barycenter (default: a thick red line).

    Returns
    -------
    ``matplotlib.axes.Axes``
        The axes drawn on: ``ax.lines[:n]`` are the members, in order, and ``ax.lines[n]`` the
        barycenter.

    Raises
    ------
    ValueError
        ``X`` not a data set (1-D, 4-D, empty), a barycenter that is not one series, members and
        barycenter with different numbers of features, a channel out of range.
    TypeError
        Inputs of the wrong types.
    ImportError
        matplotlib is not installed.

    Examples
    --------
    >>> import matplotlib, matplotlib.axes; matplotlib.use("Agg")
    >>> import torch
    >>> from softdtw_torch import softdtw_barycenter
    >>> from softdtw_torch.plot import plot_barycenter
    >>> generator = torch.Generator().manual_seed(0)
    >>> X = torch.randn(5, 20, 1, dtype=torch.float64, generator=generator).cumsum(1)
    >>> z, history = softdtw_barycenter(X, gamma=1.0, max_iter=20, return_history=True)
    >>> ax = plot_barycenter(X, z)
    >>> isinstance(ax, matplotlib.axes.Axes), len(ax.lines)
    (True, 6)
    """
    who = "plot_barycenter"
    _matplotlib(who)
    _check_ax(ax, who)
    member_kwargs = _check_kwargs(member_kwargs, who, "member_kwargs")
    barycenter_kwargs = _check_kwargs(barycenter_kwargs, who, "barycenter_kwargs")
    members = _dataset(X, who, "X")
    z = _series(barycenter, who, "barycenter")
    if z.shape[1] != members[0].shape[1]:
        raise ValueError(f"{who}: the members have {members[0].shape[1]} feature(s) and the barycenter "
                         f"{z.shape[1]}")
    c = _channel(channel, (("X", members[0].shape[1]), ("barycenter", z.shape[1])), who)
    if ax is None:
        _, ax = _pyplot(who).subplots(figsize=(7.0, 4.0))
    _draw_members(ax, members, c, None, member_kwargs)
    ax.plot(np.arange(len(z)), z[:, c], **{"color": "tab:red", "lw": 2.5, "label": str(label), "zorder": 3,
                                           **barycenter_kwargs})
    ax.set_xlabel("time step")
    return ax


def plot_clusters(
    X: Any,
    labels: Any,
    centers: Any = None,
    axes: Any = None,
    *,
    channel: int = 0,
    ncols: Optional[int] = None,
    colors: Optional[Sequence[Any]] = None,
    member_kwargs: Optional[Dict[str, Any]] = None,
    center_kwargs: Optional[Dict[str, Any]] = None,
) -> np.ndarray:
    """Draw one subplot per cluster: its members in a light colour, its center over them in bold.

    Parameters
    ----------
    X : torch.Tensor, numpy.ndarray or list
        The series: ``(n, T)``, ``(n, T, d)``, or a list of series of any lengths.
    labels : torch.Tensor, numpy.ndarray or list
        ``(n,)``: each series' cluster, e.g. ``SoftDTWKMeans.labels_`` or the result of ``predict``.
    centers : torch.Tensor, numpy.ndarray, list or None
        The ``K`` centers, ``(K, T')``, ``(K, T', d)`` or a list, e.g.
        ``SoftDTWKMeans.cluster_centers_``: cluster ``k`` is ``centers[k]``, so ``labels`` must be
        integers in ``[0, K)``; a cluster without members gets a subplot with its center alone.
        ``None``: one subplot per distinct label, in sorted order, members only.
    axes : None, list or numpy.ndarray of ``matplotlib.axes.Axes``
        Where to draw, one per cluster (any shape, read in row-major order; the first ``K`` are
        used). ``None``: a new figure of ``ncols`` columns with exactly one axes per cluster.
    channel : int, default 0
        The channel of multivariate series to draw.
    ncols : None or int
        Columns of the new figure's grid; ``None``: ``min(K, 4)``.
    colors : None or list
        One matplotlib colour per series of ``X`` (e.g. by true class), instead of light grey.
    member_kwargs, center_kwargs : dict or None
        Extra keyword arguments of ``plot`` for the members and the centers (default: a thick
        black line).

    Returns
    -------
    numpy.ndarray
        The ``K`` axes drawn on, one per cluster, in cluster order (an object array); the figure is
        ``axes[0].figure``. Each is titled ``"cluster <label> (<count> series)"``; in each, the
        members come first in ``ax.lines``, in the order of ``X``, then the center.

    Raises
    ------
    ValueError
        ``X`` not a data set, ``labels`` not ``(n,)``, labels out of ``[0, K)`` with centers,
        centers with other features than ``X``, fewer axes than clusters, a channel out of range,
        ``colors`` not one per series.
    TypeError
        Inputs of the wrong types (non-integer labels with centers, ``axes`` holding other than
        Axes).
    ImportError
        matplotlib is not installed.

    Examples
    --------
    >>> import matplotlib, matplotlib.axes; matplotlib.use("Agg")
    >>> import torch
    >>> from softdtw_torch import SoftDTWKMeans
    >>> from softdtw_torch.plot import plot_clusters
    >>> generator = torch.Generator().manual_seed(0)
    >>> X = torch.cat([torch.randn(6, 20, 1, generator=generator) + 2,
    ...                torch.randn(6, 20, 1, generator=generator) - 2]).double()
    >>> km = SoftDTWKMeans(2, gamma=1.0, max_iter=5, random_state=0).fit(X)
    >>> axes = plot_clusters(X, km.labels_, km.cluster_centers_)
    >>> len(axes), isinstance(axes[0], matplotlib.axes.Axes)
    (2, True)
    """
    who = "plot_clusters"
    _matplotlib(who)
    import matplotlib.axes

    member_kwargs = _check_kwargs(member_kwargs, who, "member_kwargs")
    center_kwargs = _check_kwargs(center_kwargs, who, "center_kwargs")
    members = _dataset(X, who, "X")
    n, d = len(members), members[0].shape[1]
    _check_type(labels, who, "labels")
    lab = labels.detach().cpu().numpy() if isinstance(labels, Tensor) else np.asarray(labels)
    if lab.ndim != 1 or len(lab) != n:
        raise ValueError(f"{who}: expected labels of shape ({n},), one per series of X, got shape {lab.shape}")
    feature_counts = [("X", d)]
    if centers is not None:
        center_list = _dataset(centers, who, "centers")
        K = len(center_list)
        if center_list[0].shape[1] != d:
            raise ValueError(f"{who}: X has {d} feature(s) and centers {center_list[0].shape[1]}")
        feature_counts.append(("centers", center_list[0].shape[1]))
        if lab.dtype.kind not in "iu":
            raise TypeError(f"{who}: with centers, expected labels to be integer cluster indices, got dtype "
                            f"{lab.dtype}")
        bad = (lab < 0) | (lab >= K)
        if bad.any():
            raise ValueError(f"{who}: labels must lie in [0, {K}) for {K} centers, got {lab[bad][0]} "
                             f"(series {int(np.flatnonzero(bad)[0])})")
        clusters: List[Any] = list(range(K))
    else:
        center_list = None
        if lab.dtype == object:
            raise TypeError(f"{who}: expected labels to be numbers or strings, got objects")
        clusters = np.unique(lab).tolist()
        K = len(clusters)
    c = _channel(channel, feature_counts, who)
    if colors is not None:
        if isinstance(colors, str) or not isinstance(colors, Sequence) and not isinstance(colors, np.ndarray):
            raise TypeError(f"{who}: expected colors to be a list of one colour per series, got "
                            f"{type(colors).__name__}; for one colour use member_kwargs={{'color': ...}}")
        if len(colors) != n:
            raise ValueError(f"{who}: expected one colour per series of X ({n}), got {len(colors)}")

    if axes is None:
        if ncols is None:
            ncols = min(K, 4)
        if isinstance(ncols, bool) or not isinstance(ncols, numbers.Integral):
            raise TypeError(f"{who}: expected ncols to be an int or None, got {type(ncols).__name__}")
        if ncols < 1:
            raise ValueError(f"{who}: ncols must be >= 1, got {ncols}")
        ncols = int(ncols)
        nrows = -(-K // ncols)
        fig, grid = _pyplot(who).subplots(nrows, ncols, figsize=(3.6 * ncols, 2.8 * nrows), squeeze=False,
                                          sharex=True, sharey=True, layout="constrained")
        flat = grid.ravel()
        for extra in flat[K:]:
            fig.delaxes(extra)
        for k in range(max(0, K - ncols), K):  # the lowest axes of each column keeps its time labels
            flat[k].tick_params(axis="x", labelbottom=True)
        flat = flat[:K]
    else:
        flat = np.empty(0, dtype=object)
        if isinstance(axes, matplotlib.axes.Axes):
            axes = [axes]
        try:
            flat = np.asarray(axes, dtype=object).ravel()
        except (TypeError, ValueError):
            raise TypeError(f"{who}: expected axes to be a sequence of matplotlib Axes or None, got "
                            f"{type(axes).__name__}") from None
        for a in flat:
            if not isinstance(a, matplotlib.axes.Axes):
                raise TypeError(f"{who}: expected axes to hold matplotlib Axes, got an item of type "
                                f"{type(a).__name__}")
        if len(flat) < K:
            raise ValueError(f"{who}: {K} clusters need {K} axes, got {len(flat)}")
        flat = flat[:K]

    for k, (cluster, ax) in enumerate(zip(clusters, flat)):
        index = np.flatnonzero(lab == cluster)
        _draw_members(ax, [members[i] for i in index], c, None if colors is None else [colors[i] for i in index],
                      member_kwargs)
        if center_list is not None:
            z = center_list[k]
            ax.plot(np.arange(len(z)), z[:, c], **{"color": "black", "lw": 2.2, "label": "center", "zorder": 3,
                                                   **center_kwargs})
        ax.set_title(f"cluster {cluster} ({len(index)} series)")
    result = np.empty(K, dtype=object)
    result[:] = list(flat)
    return result
