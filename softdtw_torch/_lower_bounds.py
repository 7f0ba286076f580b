"""Lower bounds of DTW: LB_Kim, LB_Keogh and the envelopes they use, for exact nearest-neighbour search.

DTW here is what ``soft_dtw(x, y, gamma=0.0, bandwidth=r)`` computes: the minimum over warping paths
of the sum of squared Euclidean costs ``||x_i − y_j||²`` (tslearn's ``dtw`` is its square root), with
tslearn's Sakoe–Chiba band: radius r, widened by ``|N − M|`` for series of lengths N != M
(``sakoe_chiba_mask``), so that row i of x may meet columns j in ``[i − before, i + after]`` with
``before = r + max(0, N − M)`` and ``after = r + max(0, M − N)``; no band: every column. With
``itakura_max_slope=s`` (tslearn's Itakura parallelogram, :func:`itakura_column_bounds`), column j
admits the rows ``[lb_j, ub_j)``, both nondecreasing in j, so row i too admits an interval of
columns (those j with ``ub_j > i`` and ``lb_j <= i``); with a band as well, the intersection of the
two intervals. The parallelogram depends on both lengths, so its windows are computed per pair.

Why the bounds hold. A warping path visits every row i of x at least once, always in the band, and
always passes through the two corners (0, 0) and (N − 1, M − 1); the costs are >= 0. So the cost of
any set of distinct cells that the path must contain is a lower bound of DTW:

* LB_Kim (first and last points): ``||x_0 − y_0||² + ||x_{N−1} − y_{M−1}||²`` (one term when
  N = M = 1, the two corners then being one cell).
* LB_Keogh (Keogh 2002): row i meets some y_j with j in its window, so its cell costs at least the
  squared distance from x_i to the box [min, max] of y over the window, feature by feature (for
  several features, the sum over features of the per-feature distances to the interval is <= the
  squared Euclidean distance to any point of the box). Summing one cell per row is summing over
  distinct cells. Without a band the window is the whole of y (still exact, only looser).
* The search uses both together: the two corner cells exactly, plus LB_Keogh's terms for the rows
  1 .. N − 2 (distinct cells from the corners), and the same with the roles of x and y swapped
  (the envelope of x over the columns of y); the larger of the two. It is never below LB_Kim nor
  below LB_Keogh of either direction.
* A pair the parallelogram (with the band) leaves with no path has DTW = +inf: a row of x, or a
  column of y, whose window is empty shows it (every path visits every row and column), and its
  bound is then +inf, so the search never computes that pair unless it must (fewer than k pairs
  with a path). (The rows are examined for series longer than 2; shorter ones keep a finite bound.)

Public functions follow tslearn's ``lb_envelope`` and ``lb_keogh`` (``tslearn.metrics``), same
signatures and values; see their docstrings for what differs.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Optional, Tuple, Union

import numpy as np
import torch
from torch import Tensor

from ._input import _to_tensor

__all__ = ["lb_envelope", "lb_keogh"]

ArrayLike = Union[Tensor, np.ndarray, Any]

# Elements of one broadcast block (queries x candidates x rows x features) in the lower-bound matrix:
# 2^18, 2 MiB in float64: blocks that stay in cache (on the 2-core development machine, blocks of
# 2^22 elements made the whole matrix 3-5x slower: fresh 32 MiB temporaries and memory traffic).
_BLOCK_ELEMENTS = 1 << 18


# ----------------------------------------------------------------------------------------------
# Envelopes: running min / max over windows
# ----------------------------------------------------------------------------------------------
def _running_max(x: Tensor, width: int) -> Tensor:
    """out[:, s] = max(x[:, s : s + width]) for s in [0, L − width], x (B, L, d).

    van Herk / Gil-Werman: blocks of ``width`` rows, a prefix and a suffix running maximum inside
    each block (torch.cummax), and every window is one suffix and one prefix: O(L) whatever the
    width, exact (a maximum rounds nothing)."""
    B, L, d = x.shape
    if width == 1:
        return x
    n_blocks = -(-L // width)
    pad = n_blocks * width - L
    if pad:
        x = torch.cat([x, x.new_full((B, pad, d), -math.inf)], dim=1)
    blocks = x.view(B, n_blocks, width, d)
    prefix = blocks.cummax(dim=2).values.view(B, n_blocks * width, d)
    suffix = blocks.flip(2).cummax(dim=2).values.flip(2).view(B, n_blocks * width, d)
    n_out = L - width + 1
    return torch.maximum(suffix[:, :n_out], prefix[:, width - 1: width - 1 + n_out])


def _envelope(x: Tensor, lengths: Tensor, rows: int, before: int, after: int) -> Tuple[Tensor, Tensor]:
    """Lower and upper envelopes (B, rows, d) of the series x (B, T, d) of ``lengths`` (B,):
    row s is the min / max of x[b, max(0, s − before) : min(lengths[b] − 1, s + after) + 1].

    Every window must hold at least one point of its series (s − before <= lengths[b] − 1), which
    the callers' windows do. Padding (rows >= lengths[b]) is never read."""
    B, T, d = x.shape
    # Windows are clipped at both ends: wider offsets than this change nothing.
    before = max(0, min(before, rows - 1))
    after = max(0, min(after, T - 1))
    valid = (torch.arange(T, device=x.device).view(1, T, 1) < lengths.view(B, 1, 1))
    width = before + after + 1
    # Row s of the output reads padded rows [s, s + width), i.e. x rows [s − before, s + after].
    right = max(0, rows + after - T)
    hi_src = torch.where(valid, x, x.new_tensor(-math.inf))
    lo_src = torch.where(valid, -x, x.new_tensor(-math.inf))
    hi_src = torch.cat([x.new_full((B, before, d), -math.inf), hi_src, x.new_full((B, right, d), -math.inf)], 1)
    lo_src = torch.cat([x.new_full((B, before, d), -math.inf), lo_src, x.new_full((B, right, d), -math.inf)], 1)
    hi = _running_max(hi_src, width)[:, :rows]
    lo = -_running_max(lo_src, width)[:, :rows]
    return lo, hi


def _window_envelope(x: Tensor, start: Tensor, stop: Tensor) -> Tuple[Tensor, Tensor]:
    """Lower and upper envelopes (B, R, d) of x (B, T, d) over the windows x[b, start[b, s] :
    stop[b, s] + 1] of (B, R) index tensors, windows of any widths inside [0, T); an empty window
    (start > stop) gives (−inf, +inf), an interval no point is away from.

    A sparse table, one level at a time: level k holds the max over 2^k rows, and a window of width
    w with 2^k <= w < 2^(k+1) is the max of two (overlapping) level-k entries. O(T·log T) per
    series, one level of max(x) and one of max(−x) alive at once, (B, T, d) each; exact (a maximum
    rounds nothing). (The band's windows, all of one width, take ``_envelope``'s O(T) route.)"""
    B, T, d = x.shape
    width = stop - start + 1
    empty = width < 1
    width = width.clamp(min=1)
    hi_level, lo_level = x, -x                        # level 0; levels shrink by 2^k rows each
    hi = x.new_full((B, start.shape[1], d), -math.inf)
    lo = x.new_full((B, start.shape[1], d), -math.inf)
    size, widest = 1, int(width.max()) if width.numel() else 1
    while True:
        take = (width >= size) & (width < 2 * size)   # the windows read at this level
        if bool(take.any()):
            a = start.clamp(0, T - size)
            b = (stop - size + 1).clamp(0, T - size)
            for level, out in ((hi_level, hi), (lo_level, lo)):
                first = level.gather(1, a.unsqueeze(-1).expand(-1, -1, d))
                second = level.gather(1, b.unsqueeze(-1).expand(-1, -1, d))
                out.copy_(torch.where(take.unsqueeze(-1), torch.maximum(first, second), out))
        if 2 * size > widest:
            break
        hi_level = torch.maximum(hi_level[:, :-size], hi_level[:, size:])
        lo_level = torch.maximum(lo_level[:, :-size], lo_level[:, size:])
        size *= 2
    lo = -lo
    hi = torch.where(empty.unsqueeze(-1), x.new_tensor(math.inf), hi)
    lo = torch.where(empty.unsqueeze(-1), x.new_tensor(-math.inf), lo)
    return lo, hi


def itakura_column_bounds(n: Tensor, m: Tensor, m_max: int, slope: float) -> Tuple[Tensor, Tensor]:
    """tslearn's Itakura parallelogram (``tslearn.metrics.itakura_mask``) column by column: column j
    of a pair of lengths (n, m) admits the rows ``[lo[..., j], hi[..., j])``. ``n`` and ``m``: int64
    tensors, broadcast together to a shape S, m <= m_max; returns two int64 tensors (*S, m_max),
    each nondecreasing along j, with the columns j >= m empty (lo = hi = n). The kernels' own table
    (the op ``_itakura_rows``, on the lengths' device), so the bounds and the masks admit exactly
    the cells the DTW computes (docs/design/softdtw.md §11)."""
    n, m = torch.broadcast_tensors(n, m)
    rows = torch.ops.softdtw_torch._itakura_rows(n.reshape(-1), m.reshape(-1), m_max, slope)
    rows = rows.reshape(*n.shape, m_max, 2)
    return rows[..., 0], rows[..., 1]


def _itakura_windows(rows: int, lengths: Tensor, radius: Optional[int], slope: float, transposed: bool
                     ) -> Tuple[Tensor, Tensor]:
    """The windows ``[start, stop]`` (C, rows) of the rows 0 .. rows − 1 of a series of length
    ``rows`` over C series of ``lengths``, under the parallelogram of slope ``slope`` (and the band
    of ``radius``), per pair. ``transposed=False``: the rows are the pair's x (the mask's rows,
    (rows, lengths[c])), a row's window the columns its interval admits; ``transposed=True``: they
    are its y (the mask's columns, (lengths[c], rows)), a window the rows of that column."""
    C = lengths.shape[0]
    steps = torch.arange(rows, device=lengths.device)
    if transposed:
        lo, hi = itakura_column_bounds(lengths, torch.full_like(lengths, rows), rows, slope)      # (C, rows)
        start, stop = lo, hi - 1
    else:
        lo, hi = itakura_column_bounds(torch.full_like(lengths, rows), lengths, int(lengths.max()), slope)
        i = steps.unsqueeze(0).expand(C, rows).contiguous()
        start = torch.searchsorted(hi, i, right=True)       # the first column with ub_j > i
        stop = torch.searchsorted(lo, i, right=True) - 1    # the last column with lb_j <= i
    if radius is not None:  # the band's window of the same row; symmetric in the roles of x and y
        before = radius + (rows - lengths).clamp(min=0)
        after = radius + (lengths - rows).clamp(min=0)
        start = torch.maximum(start, steps - before.unsqueeze(1))
        stop = torch.minimum(stop, steps + after.unsqueeze(1))
    return start.clamp(min=0), torch.minimum(stop, (lengths - 1).unsqueeze(1))


def _interval_sq_dist(points: Tensor, lo: Tensor, hi: Tensor) -> Tensor:
    """Σ over rows and features of the squared distance of ``points`` to the intervals [lo, hi];
    the three broadcast to (..., rows, d); returns (...)."""
    gap = torch.clamp(points, lo, hi)  # one temporary, updated in place
    gap.sub_(points)
    gap.square_()
    return gap.sum(dim=(-2, -1))


# ----------------------------------------------------------------------------------------------
# The lower-bound matrix of the search
# ----------------------------------------------------------------------------------------------
def _corner_matrix(xq: Tensor, lq: Tensor, xc: Tensor, lc: Tensor) -> Tensor:
    """LB_Kim (first and last points), (Q, C): the costs of the cells (0, 0) and (N − 1, M − 1)."""
    Q, C = xq.shape[0], xc.shape[0]
    q_first, c_first = xq[:, 0], xc[:, 0]
    q_last = xq[torch.arange(Q, device=xq.device), lq - 1]
    c_last = xc[torch.arange(C, device=xc.device), lc - 1]
    first = (q_first.unsqueeze(1) - c_first.unsqueeze(0)).square().sum(-1)
    last = (q_last.unsqueeze(1) - c_last.unsqueeze(0)).square().sum(-1)
    one_cell = (lq.view(Q, 1) == 1) & (lc.view(1, C) == 1)  # N = M = 1: the corners are one cell
    return first + torch.where(one_cell, torch.zeros_like(last), last)


def _keogh_rows(xq: Tensor, lq: Tensor, xc: Tensor, lc: Tensor, radius: Optional[int],
                slope: Optional[float] = None, transposed: bool = False) -> Tensor:
    """(Q, C): Σ over the rows 1 .. N − 2 of each query of the squared distance to the candidate's
    envelope over the row's window (LB_Keogh without its two corner rows).

    Queries are taken a length at a time. For the queries of length N, every candidate's window
    is the union over the candidates' lengths of tslearn's window (before = r + max(0, N − M_min),
    after = r + max(0, M_max − N)), each clipped to the candidate's own length: exactly the band's
    window when all candidates have one length, a wider one (a valid, looser bound) for candidates
    of several lengths. With an Itakura ``slope``, each (query length, candidate) pair's own
    windows (:func:`_itakura_windows`; ``transposed``: the queries are the pairs' y)."""
    Q, C = xq.shape[0], xc.shape[0]
    d = xq.shape[2]
    out = xq.new_zeros((Q, C))
    m_min, m_max = int(lc.min()), int(lc.max())
    for n in torch.unique(lq).tolist():
        if n <= 2:
            continue  # no row between the corners
        no_path = None
        if slope is not None:
            start, stop = _itakura_windows(n, lc, radius, slope, transposed)
            lo, hi = _window_envelope(xc, start, stop)                  # (C, n, d)
            no_path = (start > stop).any(dim=1)                         # a row no path can visit
        else:
            if radius is None:
                before = after = max(n, m_max)
            else:
                before = radius + max(0, n - m_min)
                after = radius + max(0, m_max - n)
            lo, hi = _envelope(xc, lc, n, before, after)                # (C, n, d)
        lo, hi = lo[:, 1: n - 1], hi[:, 1: n - 1]
        rows_q = (lq == n).nonzero().squeeze(1)
        q = xq.index_select(0, rows_q)[:, 1: n - 1]                     # (Qn, n − 2, d)
        per_pair = (n - 2) * d
        c_step = max(1, min(C, _BLOCK_ELEMENTS // per_pair))
        q_step = max(1, _BLOCK_ELEMENTS // (per_pair * c_step))
        for c0 in range(0, C, c_step):
            lo_b, hi_b = lo[c0: c0 + c_step].unsqueeze(0), hi[c0: c0 + c_step].unsqueeze(0)
            for q0 in range(0, q.shape[0], q_step):
                block = _interval_sq_dist(q[q0: q0 + q_step].unsqueeze(1), lo_b, hi_b)
                out[rows_q[q0: q0 + q_step], c0: c0 + c_step] = block
        if no_path is not None and bool(no_path.any()):
            out[rows_q.unsqueeze(1), no_path.nonzero().squeeze(1).unsqueeze(0)] = math.inf
    return out


def lower_bound_matrix(xq: Tensor, lq: Tensor, xc: Tensor, lc: Tensor, radius: Optional[int],
                       slope: Optional[float] = None) -> Tensor:
    """(Q, C) lower bounds of the squared DTW between every query xq[i, :lq[i]] and candidate
    xc[j, :lc[j]] under the Sakoe–Chiba radius ``radius`` (None: no band) and the Itakura
    parallelogram of ``slope`` (None: none), the query being the pair's x.

    LB_Kim's two corner cells plus the larger of LB_Keogh's middle rows in the two directions
    (envelope of the candidate along the query's rows, envelope of the query along the candidate's
    columns); see the module docstring. Computed in the inputs' dtype, in blocks of at most 2^18
    broadcast elements."""
    corners = _corner_matrix(xq, lq, xc, lc)
    rows = _keogh_rows(xq, lq, xc, lc, radius, slope)
    cols = _keogh_rows(xc, lc, xq, lq, radius, slope, transposed=True).T
    return corners + torch.maximum(rows, cols)


def rounding_slack(n_max: int, m_max: int, d: int, dtype: torch.dtype) -> float:
    """A relative margin covering the rounding of a lower bound (sums of (n + m)·d squared
    differences) and of the DTW it is compared with: 4·((n + m)·(d + 1) + 16)·eps of the dtype."""
    return 4.0 * ((n_max + m_max) * (d + 1) + 16) * torch.finfo(dtype).eps


# ----------------------------------------------------------------------------------------------
# Public functions: tslearn's lb_envelope and lb_keogh
# ----------------------------------------------------------------------------------------------
def _check_radius(radius: Any, who: str) -> int:
    if isinstance(radius, bool) or not isinstance(radius, numbers.Integral):
        raise TypeError(f"{who}: expected radius to be an int, got {type(radius).__name__} {radius!r}")
    if int(radius) < 0:
        raise ValueError(f"{who}: expected radius >= 0, got {int(radius)}")
    return int(radius)


def _as_series(value: Any, who: str, what: str) -> Tuple[Tensor, bool, bool]:
    """One series (T,) / (T, d) or a batch (B, T, d), as a (B, T, d) tensor; whether it was a tensor
    and whether it was one series. Finite values only."""
    t, kind = _to_tensor(value, who, what)
    if t.dim() == 1:
        t = t.unsqueeze(1)
    single = t.dim() == 2
    if single:
        t = t.unsqueeze(0)
    if t.dim() != 3:
        raise ValueError(f"{who}: expected {what} of shape (length,), (length, features) or a batch (batch, "
                         f"length, features), got {t.dim()}-D of shape {tuple(t.shape)}")
    if t.shape[1] == 0 or t.shape[2] == 0 or t.shape[0] == 0:
        raise ValueError(f"{who}: expected a non-empty {what}, got shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{who}: {what} holds NaN or inf (series of different lengths: pass them one at a time)")
    return t, kind == "torch", single


def _out(t: Tensor, tensor_in: bool, single: bool) -> Any:
    """Tensor in, tensor out (its dtype and device); otherwise float64 numpy, as tslearn returns."""
    if single:
        t = t[0]
    if tensor_in:
        return t
    return t.detach().cpu().numpy().astype(np.float64)


def lb_envelope(ts: ArrayLike, radius: int = 1) -> Tuple[Any, Any]:
    """The envelope of a series for LB_Keogh: tslearn's ``lb_envelope(ts, radius=1)``.

    ``envelope_down[i]`` / ``envelope_up[i]`` are the min / max of ``ts[max(0, i − radius) :
    i + radius + 1]`` (per feature), the values tslearn gives (tested against it).

    Parameters
    ----------
    ts : numpy.ndarray, list or torch.Tensor
        One series, (sz,) or (sz, d), or (our extension) a batch (n, sz, d) whose envelopes are
        computed together. numpy arrays, lists or tensors; values must be finite.
    radius : int, default 1
        int >= 0 (TypeError for other types, ValueError below 0); any radius >= sz gives the whole
        series' min and max on every row.

    Returns
    -------
    envelope_down, envelope_up : numpy.ndarray or torch.Tensor
        Each (sz, d) (or (n, sz, d)): float64 numpy arrays for non-tensor input (as tslearn),
        tensors of the input's dtype and device for a tensor.

    Raises
    ------
    ValueError
        A negative radius, a series of the wrong rank or with non-finite values.
    TypeError
        A radius that is not an int, input of the wrong type.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.metrics import lb_envelope
    >>> down, up = lb_envelope(np.array([1.0, 3.0, 2.0, 5.0, 4.0]), radius=1)
    >>> down.shape
    (5, 1)
    >>> down.ravel().tolist(), up.ravel().tolist()
    ([1.0, 1.0, 2.0, 2.0, 4.0], [3.0, 3.0, 5.0, 5.0, 5.0])
    """
    who = "lb_envelope"
    r = _check_radius(radius, who)
    x, tensor_in, single = _as_series(ts, who, "ts")
    with torch.no_grad():
        lengths = torch.full((x.shape[0],), x.shape[1], dtype=torch.int64, device=x.device)
        lo, hi = _envelope(x, lengths, x.shape[1], r, r)
    return _out(lo, tensor_in, single), _out(hi, tensor_in, single)


def lb_keogh(ts_query: ArrayLike, ts_candidate: Optional[ArrayLike] = None, radius: int = 1,
             envelope_candidate: Optional[Tuple[ArrayLike, ArrayLike]] = None) -> Any:
    """LB_Keogh (Keogh 2002): tslearn's ``lb_keogh(ts_query, ts_candidate=None, radius=1, envelope_candidate=None)``.

    Same value as tslearn's: the square-root form

        sqrt( Σ_i Σ_f dist(ts_query[i, f], [envelope_down[i, f], envelope_up[i, f]])² ),

    the Euclidean distance from the query to the candidate's envelope. For two series of one
    length sz it is <= tslearn's ``dtw(ts_query, ts_candidate, sakoe_chiba_radius=radius)`` (=
    ``sqrt(soft_dtw(x, y, gamma=0.0, bandwidth=radius))``) and, radius >= sz, <= the DTW without a
    band; squared, it is a lower bound of the squared DTW that ``soft_dtw(..., gamma=0.0)`` returns.

    Differences from tslearn: several features are allowed (the sum over features, still a lower
    bound of the squared-Euclidean DTW; tslearn asserts a univariate series); batches (n, sz, d) of
    queries and candidates (or envelopes) give n values; wrong input raises ValueError / TypeError
    (tslearn: AssertionError or numpy's IndexError).

    Parameters
    ----------
    ts_query : numpy.ndarray, list or torch.Tensor
        (sz,) or (sz, d), or a batch (n, sz, d).
    ts_candidate : numpy.ndarray, list, torch.Tensor or None, default None
        The candidate, same shape as the query; or None when ``envelope_candidate`` is given.
    radius : int, default 1
        The envelope's radius (int >= 0), used only with ``ts_candidate``.
    envelope_candidate : tuple or None, default None
        ``(envelope_down, envelope_up)`` as :func:`lb_envelope` returns them; used only when
        ``ts_candidate`` is None.

    Returns
    -------
    float or numpy.ndarray or torch.Tensor
        A float64 numpy scalar (an (n,) array for a batch) for non-tensor input; for a tensor query,
        a 0-dim (or (n,)) tensor of its dtype on its device.

    Raises
    ------
    ValueError
        Neither ``ts_candidate`` nor ``envelope_candidate``, shapes that differ from the query's, a
        negative radius.
    TypeError
        An ``envelope_candidate`` that is not a pair, a radius that is not an int.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.metrics import dtw, lb_envelope, lb_keogh
    >>> query = np.array([0.0, 0.0, 0.0, 0.0, 0.0])
    >>> candidate = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    >>> bound = lb_keogh(query, candidate, radius=1)
    >>> round(float(bound), 4)
    5.099
    >>> bool(bound <= dtw(query, candidate, bandwidth=1))
    True
    >>> float(lb_keogh(query, envelope_candidate=lb_envelope(candidate, radius=1))) == float(bound)
    True
    """
    who = "lb_keogh"
    q, tensor_in, single = _as_series(ts_query, who, "ts_query")
    with torch.no_grad():
        if ts_candidate is not None:
            r = _check_radius(radius, who)
            c, _, c_single = _as_series(ts_candidate, who, "ts_candidate")
            c = c.to(device=q.device, dtype=q.dtype)
            if c.shape != q.shape:
                raise ValueError(f"{who}: expected ts_query and ts_candidate of one shape (LB_Keogh compares "
                                 f"series of one length), got {_shape(q, single)} and {_shape(c, c_single)}")
            lengths = torch.full((c.shape[0],), c.shape[1], dtype=torch.int64, device=c.device)
            lo, hi = _envelope(c, lengths, c.shape[1], r, r)
        elif envelope_candidate is not None:
            if not isinstance(envelope_candidate, (tuple, list)) or len(envelope_candidate) != 2:
                raise TypeError(f"{who}: expected envelope_candidate to be a pair (envelope_down, envelope_up), "
                                f"got {type(envelope_candidate).__name__}")
            lo, _, lo_single = _as_series(envelope_candidate[0], who, "envelope_down")
            hi, _, _ = _as_series(envelope_candidate[1], who, "envelope_up")
            lo, hi = lo.to(device=q.device, dtype=q.dtype), hi.to(device=q.device, dtype=q.dtype)
            if lo.shape != q.shape or hi.shape != q.shape:
                raise ValueError(f"{who}: expected the envelope of the query's shape {_shape(q, single)}, got "
                                 f"{_shape(lo, lo_single)} and {_shape(hi, lo_single)}")
        else:
            raise ValueError(f"{who}: expected ts_candidate or envelope_candidate, got neither")
        value = _interval_sq_dist(q, lo, hi).sqrt()
    if single:
        value = value[0]
    if tensor_in:
        return value
    out = value.detach().cpu().numpy().astype(np.float64)
    return out[()] if out.ndim == 0 else out


def _shape(t: Tensor, single: bool) -> Tuple[int, ...]:
    return tuple(t.shape[1:]) if single else tuple(t.shape)
