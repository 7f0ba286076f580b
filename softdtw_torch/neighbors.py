"""k-nearest-neighbour classification and regression of time series under DTW, soft-DTW or Euclidean
distances (:class:`KNeighborsTimeSeriesClassifier`, :class:`KNeighborsTimeSeriesRegressor`), with
exact lower-bound pruning of the DTW search.

tslearn's ``KNeighborsTimeSeriesClassifier`` / ``KNeighborsTimeSeriesRegressor`` (same parameters,
same neighbours, distances equal to rounding, same predictions: tests/estimators/test_neighbors.py),
on the batched SoftDTW operators: hard DTW is ``soft_dtw(..., gamma=0.0)``, whose value is the
squared DTW (tslearn's ``dtw`` is its square root).

Exact DTW search with pruning (``metric="dtw"``, ``pruning=True``, the default), the UCR suite's
scheme (Rakthanmanon et al. 2012) made batched:

1. For every (query, candidate) pair, a lower bound of the squared DTW
   (:mod:`softdtw_torch._lower_bounds`: LB_Kim's first and last points plus LB_Keogh's envelope
   terms in both directions, over the Sakoe–Chiba window; without a band the window is the whole
   series; under the Itakura parallelogram each row's window is the interval of columns the
   parallelogram of that pair's two lengths admits, intersected with the band's when both are
   given), computed for all pairs at once.
2. Each query's candidates in increasing order of their bound (ties by index).
3. Rounds: every query still searching takes its next candidates whose bound does not exceed its
   current k-th best squared distance (times 1 + a rounding margin, below); the exact DTW of all
   the pairs taken in the round, from every query, is one batched ``soft_dtw(gamma=0.0)`` call on
   the gathered pairs (fused, at most ``chunk_size`` pairs a call); the best k are updated. A query
   stops at its first candidate whose bound exceeds its threshold: all later ones are skipped.
   Each round takes twice as many candidates per query as the last, from k up to 256, and at least
   64 pairs in all while that many are left (a call of a few pairs leaves threads idle), so a
   query needs O(log n) rounds, and computes about the DTWs the one-candidate-at-a-time UCR-suite
   loop computes in the same order (benchmarks/README.md has the measured counts).

Queries are searched in blocks of at most 2^24 (query, training series) entries (the bounds and
their order, or the distance matrix without pruning, are (block, n_train) tensors).

Exactness. The bounds are exact lower bounds of the squared DTW; a candidate is skipped only when
its bound exceeds the current k-th best value by more than a relative margin covering the rounding
of the bound and of the DTW (``4·((N + M)·(d + 1) + 16)·eps`` of the compute dtype: 4.9e-4 in
float32 at N = M = 251, d = 1; 9e-13 in float64). The margin is needed: where the bound equals the
DTW mathematically (a constant candidate), the float32 bound exceeds the float32 DTW by an ulp or
two on many pairs, and without the margin the pruned neighbours differ from the unpruned ones
(tests/estimators/test_neighbors.py::test_rounding_margin_keeps_pruning_exact_where_bound_equals_distance).
With it, a skipped candidate's computed DTW is strictly larger than every kept distance, so the
pruned search returns exactly the neighbours, the distances (bit for bit: the same fused kernel on
the same pairs, each pair's bits independent of its batch) and the predictions of the search
without pruning, ties included (tested).

Ties. Neighbours are ordered by distance, then by index in the training set (a stable sort): the
k nearest are deterministic, with and without pruning. tslearn and scikit-learn order ties as
``numpy.argpartition`` / ``argsort`` leave them (not by index), so where several training series lie
at exactly the same distance, the neighbours kept (and a vote depending on them) may differ from
tslearn's; nowhere else.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Callable, Dict, Optional, Tuple, Union

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array
from torch import Tensor

from ._base import Estimator, check_device, read_series, series_tags
from ._input import _check_int, _check_itakura_slope, _tslearn_constraint
from ._lower_bounds import lower_bound_matrix, rounding_slack
from ._progress import Progress
from .functional import _cdist_pair_count, _cdist_soft_dtw, soft_dtw

__all__ = ["KNeighborsTimeSeriesClassifier", "KNeighborsTimeSeriesRegressor", "SearchStats"]

ArrayLike = Union[Tensor, np.ndarray, Any]

_METRICS = ("dtw", "softdtw", "euclidean", "sqeuclidean", "cityblock")
_SERIES_METRICS = ("dtw", "softdtw")  # compare series of any lengths
# metric_params keys, per metric (tslearn's names). "n_jobs" and "verbose" are dropped, as tslearn does.
_BAND_KEYS = ("global_constraint", "sakoe_chiba_radius", "itakura_max_slope")
_DROPPED_KEYS = ("n_jobs", "verbose")
# The pruned search keeps the batched DTW calls at least this many pairs wide, when that many
# candidates are left: a call of a handful of pairs would leave threads idle.
_MIN_PAIRS_PER_ROUND = 64
# The most candidates a query takes in one round (the doubling stops there).
_MAX_ROUND_WIDTH = 256
# Queries are searched in blocks of at most this many (query, training series) entries.
_MAX_BLOCK_ENTRIES = 1 << 24


class SearchStats:
    """What the last neighbour search of an estimator did.

    Updated by ``kneighbors``, ``predict``, ``predict_proba`` and ``score``; read it as the
    estimator's ``last_search_``. Before any search: zeros and ``pruning_rate`` None.

    Attributes
    ----------
    n_pairs : int
        (query, candidate) pairs to rank (a query and itself excluded when ``kneighbors(X=None)``).
    n_computed : int
        Those of them whose distance was computed.
    pruning_rate : float or None
        The fraction skipped (``1 − n_computed / n_pairs``; 0.0 when nothing was pruned).
    n_rounds : int
        Batched DTW rounds of the pruned search (0 without pruning).

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier, SearchStats
    >>> SearchStats()
    SearchStats(n_pairs=0, n_computed=0, n_rounds=0, pruning_rate=None)
    >>> X = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0], [5.0, 4.0, 3.0, 2.0], [6.0, 4.0, 3.0, 1.0]])
    >>> knn = KNeighborsTimeSeriesClassifier(n_neighbors=1).fit(X, [0, 0, 1, 1])
    >>> _ = knn.predict(X)
    >>> stats = knn.last_search_
    >>> stats.n_pairs, 0.0 <= stats.pruning_rate <= 1.0
    (16, True)
    """

    def __init__(self) -> None:
        self.n_pairs = 0
        self.n_computed = 0
        self.n_rounds = 0
        self.pruning_rate: Optional[float] = None

    def record(self, n_pairs: int, n_computed: int, n_rounds: int) -> None:
        self.n_pairs, self.n_computed, self.n_rounds = int(n_pairs), int(n_computed), int(n_rounds)
        self.pruning_rate = 1.0 - n_computed / n_pairs if n_pairs else 0.0

    def __repr__(self) -> str:
        return (f"SearchStats(n_pairs={self.n_pairs}, n_computed={self.n_computed}, n_rounds={self.n_rounds}, "
                f"pruning_rate={self.pruning_rate})")


class _Metric:
    """A metric resolved from ``metric`` and ``metric_params``."""

    def __init__(self, kind: str, radius: Optional[int], gamma: float, slope: Optional[float] = None):
        self.kind = kind      # "dtw", "softdtw", "euclidean", "sqeuclidean", "cityblock"
        self.radius = radius  # Sakoe–Chiba radius (series metrics), None: no band
        self.gamma = gamma    # softdtw only
        self.slope = slope    # Itakura max slope (series metrics), None: no parallelogram


def _global_constraint(params: Dict[str, Any], who: str) -> Tuple[Optional[int], Optional[float]]:
    """(Sakoe–Chiba radius, Itakura slope) from ``metric_params`` by tslearn's rules
    (:func:`softdtw_torch._input._tslearn_constraint`); both given without a name is an error here."""
    return _tslearn_constraint(who, params.get("global_constraint"), params.get("sakoe_chiba_radius"),
                               params.get("itakura_max_slope"), prefix="metric_params", both_unnamed="raise")


def _resolve_metric(metric: Any, metric_params: Any, who: str) -> _Metric:
    """tslearn's reading of ``metric`` and ``metric_params``.

    dtw / softdtw: a Sakoe–Chiba band (``sakoe_chiba_radius``, int >= 0) or an Itakura
    parallelogram (``itakura_max_slope``, float >= 1), chosen by ``global_constraint`` as tslearn's
    ``compute_mask`` does (:func:`_global_constraint`). softdtw: ``gamma`` (tslearn's default 1.0;
    ``gamma_sdtw`` is read as ``gamma``, as tslearn does), >= 0; gamma = 0 is DTW (tslearn: hard DTW,
    the square root). ``n_jobs`` and ``verbose`` keys are dropped (tslearn overrides them). The
    Euclidean metrics take no parameters. Unknown keys: ValueError.
    """
    if not isinstance(metric, str):
        raise TypeError(f"{who}: expected metric to be a string, one of {_METRICS}, got {type(metric).__name__}")
    if metric not in _METRICS:
        raise ValueError(f"{who}: expected metric to be one of {_METRICS}, got {metric!r}")
    if metric_params is None:
        params: Dict[str, Any] = {}
    elif isinstance(metric_params, dict):
        params = dict(metric_params)
    else:
        raise TypeError(f"{who}: expected metric_params to be a dict or None, got {type(metric_params).__name__}")
    for key in _DROPPED_KEYS:
        params.pop(key, None)
    if "gamma_sdtw" in params:
        params["gamma"] = params.pop("gamma_sdtw")
    allowed = {"dtw": _BAND_KEYS, "softdtw": _BAND_KEYS + ("gamma",)}.get(metric, ())
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"{who}: unknown metric_params key(s) {unknown} for metric={metric!r}; expected "
                         f"{list(allowed) or 'none'}")
    if metric not in _SERIES_METRICS:
        return _Metric(metric, None, 0.0)
    radius, slope = _global_constraint(params, who)
    gamma = 0.0
    if metric == "softdtw":
        gamma = params.get("gamma", 1.0)
        if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
            raise TypeError(f"{who}: expected metric_params['gamma'] to be a float, got {type(gamma).__name__}")
        gamma = float(gamma)
        if not math.isfinite(gamma) or gamma < 0:
            raise ValueError(f"{who}: expected metric_params['gamma'] >= 0 and finite, got {gamma!r}")
        if gamma == 0.0:  # tslearn: soft-DTW at gamma 0 is DTW (its square root)
            return _Metric("dtw", radius, 0.0, slope)
    return _Metric(metric, radius, gamma, slope)


def _kth_smallest(values: Tensor, index: Tensor, k: int) -> Tuple[Tensor, Tensor]:
    """The k smallest of each row of ``values`` ordered by (value, index): two stable sorts."""
    order = torch.sort(index, dim=1, stable=True).indices
    values, index = values.gather(1, order), index.gather(1, order)
    order = torch.sort(values, dim=1, stable=True).indices[:, :k]
    return values.gather(1, order), index.gather(1, order)


class _KNeighborsTimeSeries(Estimator):
    """The neighbour search both estimators share (see the module docstring and the subclasses)."""

    _fitted_attribute = "_fit_x"

    def __init__(self, n_neighbors: int = 5, weights: Union[str, Callable[[np.ndarray], np.ndarray]] = "uniform",
                 metric: str = "dtw", metric_params: Optional[Dict[str, Any]] = None, n_jobs: Optional[int] = None,
                 verbose: int = 0, pruning: bool = True, chunk_size: int = 1024,
                 device: Optional[Union[str, torch.device]] = None):
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.metric = metric
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.pruning = pruning
        self.chunk_size = chunk_size
        self.device = device

    def __sklearn_tags__(self):
        return series_tags(super().__sklearn_tags__(), allow_nan=True)  # NaN-padded series (tslearn's format)

    # -- parameters and input ------------------------------------------------------------------
    def _check_params(self) -> _Metric:
        who = type(self).__name__
        _check_int(self.n_neighbors, who, "n_neighbors", 1)
        if isinstance(self.weights, str):
            if self.weights not in ("uniform", "distance"):
                raise ValueError(f"{who}: expected weights to be 'uniform', 'distance' or a callable, got "
                                 f"{self.weights!r}")
        elif not callable(self.weights):
            raise TypeError(f"{who}: expected weights to be 'uniform', 'distance' or a callable, got "
                            f"{type(self.weights).__name__}")
        if not isinstance(self.pruning, (bool, np.bool_)):
            raise TypeError(f"{who}: expected pruning to be a bool, got {type(self.pruning).__name__}")
        _check_int(self.chunk_size, who, "chunk_size", 1)
        if self.n_jobs is not None and (isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, numbers.Integral)):
            raise TypeError(f"{who}: expected n_jobs to be an int or None, got {type(self.n_jobs).__name__}")
        return _resolve_metric(self.metric, self.metric_params, who)

    def _compute_device(self) -> Optional[torch.device]:
        return check_device(self.device, type(self).__name__)

    def _fit_series(self, X: Any, x_lengths: Any) -> int:
        """Reads and stores the training series; returns their number."""
        who = f"{type(self).__name__}.fit"
        metric = self._check_params()
        device = self._compute_device()
        data = read_series(X, x_lengths, f"{type(self).__name__}.fit")
        x, lengths = data.x[0], data.lengths[0]
        if metric.kind not in _SERIES_METRICS and bool((lengths != x.shape[1]).any()):
            raise ValueError(f"{who}: metric={self.metric!r} compares series of one length; got series of different "
                             f"lengths (NaN-padded or a list): use metric='dtw' or 'softdtw'")
        self._fit_x = x.to(device if device is not None else x.device)
        self._fit_lengths = lengths.to(self._fit_x.device)
        self._fit_kind = data.kind
        self._fit_device = x.device
        self.n_features_in_ = int(x.shape[2])
        self.n_samples_fit_ = int(x.shape[0])
        self._search = SearchStats()
        return int(x.shape[0])

    @property
    def pruning_rate_(self) -> Optional[float]:
        """The fraction of (query, candidate) distance computations the last search skipped
        (``last_search_.pruning_rate``): 0.0 without pruning, None before any search."""
        self._check_is_fitted("pruning_rate_")
        return self._search.pruning_rate

    @property
    def last_search_(self) -> SearchStats:
        """:class:`SearchStats` of the last ``kneighbors`` / ``predict`` / ``predict_proba`` / ``score``.

        The one attribute a search updates (in place: the estimator's parameters and fitted state
        stay as fit left them). Concurrent searches on one estimator share it."""
        self._check_is_fitted("last_search_")
        return self._search

    # -- the search ----------------------------------------------------------------------------
    def _neighbors(self, X: Any, x_lengths: Any, n_neighbors: Any, method: str
                   ) -> Tuple[Tensor, Tensor, Optional[torch.device]]:
        """(distances (Q, k), indices (Q, k)) on the compute device, and the device the caller's
        tensor X was on (None for non-tensor input, the fit input's device for X=None with
        tensor training data)."""
        self._check_is_fitted(method)
        who = f"{type(self).__name__}.{method}"
        metric = self._check_params()
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        k = _check_int(k, who, "n_neighbors", 1)
        xc, lc = self._fit_x, self._fit_lengths
        n_fit = xc.shape[0]
        if X is None:
            xq, lq, self_query = xc, lc, True
            out_device = self._fit_device if self._fit_kind == "torch" else None
            if k > n_fit - 1:
                raise ValueError(f"{who}: expected n_neighbors <= n_samples_fit - 1 = {n_fit - 1} with X=None (a "
                                 f"series is not its own neighbour), got n_neighbors = {k}")
        else:
            data = read_series(X, x_lengths, who)
            xq, lq, self_query = data.x[0].to(xc.device), data.lengths[0].to(xc.device), False
            out_device = X.device if isinstance(X, Tensor) else (
                data.x.device if data.kind == "torch" else None)
            if xq.shape[2] != xc.shape[2]:
                raise ValueError(f"{who}: expected series with {xc.shape[2]} features (as in fit), got "
                                 f"{xq.shape[2]}")
            if k > n_fit:
                raise ValueError(f"{who}: expected n_neighbors <= n_samples_fit = {n_fit}, got n_neighbors = {k}")
        dtype = torch.promote_types(xq.dtype, xc.dtype)
        xq, xc = xq.to(dtype), xc.to(dtype)
        Q = xq.shape[0]
        # Queries in blocks of at most 2^24 (query, candidate) entries: the bounds, their order and
        # the distance matrix are (block, n_fit) tensors.
        block = max(1, _MAX_BLOCK_ENTRIES // n_fit)
        whole = block >= Q
        pruned = metric.kind == "dtw" and self.pruning
        # Progress (``verbose``): the pruned search counts the queries it has settled, the other
        # series metrics the (soft-)DTW pairs computed, the Euclidean ones the queries of each block.
        if metric.kind in _SERIES_METRICS and not pruned:
            total, unit = _cdist_pair_count(Q, None if self_query and whole else n_fit, False), "pairs"
        else:
            total, unit = Q, "queries"
        dists, inds = [], []
        n_computed = n_rounds = 0
        with torch.no_grad(), Progress(self.verbose, who, total, unit) as progress:
            for q0 in range(0, Q, block):
                xb, lb = xq[q0: q0 + block], lq[q0: q0 + block]
                offset = q0 if self_query else None
                if pruned:
                    dist, ind, computed, rounds = self._pruned_dtw(xb, lb, xc, lc, k, metric, offset, progress)
                else:
                    values = self._all_distances(xb, lb, xc, lc, metric, self_query and whole, who, progress)
                    if unit == "queries":  # the Euclidean metrics: one torch.cdist call per block
                        progress.update(xb.shape[0])
                    if self_query:
                        rows = torch.arange(xb.shape[0], device=values.device)
                        values[rows, rows + q0] = math.inf
                    computed, rounds = values.shape[0] * (n_fit - int(self_query)), 0
                    index = torch.arange(n_fit, device=values.device).expand_as(values)
                    dist, ind = _kth_smallest(values, index, k)
                dists.append(dist)
                inds.append(ind)
                n_computed += computed
                n_rounds += rounds
        self._search.record(Q * (n_fit - int(self_query)), n_computed, n_rounds)
        return torch.cat(dists), torch.cat(inds), out_device

    def _ragged(self, lq: Tensor, tq: int, lc: Tensor, tc: int) -> bool:
        return bool((lq != tq).any()) or bool((lc != tc).any())

    def _dtw_pairs(self, xq: Tensor, lq: Tensor, xc: Tensor, lc: Tensor, qi: Tensor, ci: Tensor,
                   metric: _Metric, ragged: bool) -> Tensor:
        """Squared DTW of the pairs (xq[qi], xc[ci]): batched soft_dtw(gamma=0) calls of at most
        ``chunk_size`` pairs, fused (the kernel computes each pair's bits as if alone)."""
        parts = [xq.new_empty((0,))]
        step = int(self.chunk_size)
        for s in range(0, qi.numel(), step):
            a, b = qi[s: s + step], ci[s: s + step]
            parts.append(soft_dtw(xq[a], xc[b], gamma=0.0, bandwidth=metric.radius, fused=True,
                                  x_lengths=lq[a] if ragged else None, y_lengths=lc[b] if ragged else None,
                                  itakura_max_slope=metric.slope))
        return torch.cat(parts)

    def _all_distances(self, xq: Tensor, lq: Tensor, xc: Tensor, lc: Tensor, metric: _Metric, symmetric: bool,
                       who: str, progress: Progress) -> Tensor:
        """(Q, C) distances as tslearn's kneighbors computes them: sqrt of the squared DTW, raw
        soft-DTW values, or scipy's cdist of the flattened series. ``symmetric``: xq is xc (all of
        it), and each unordered pair is computed once (DTW and soft-DTW are symmetric, bit for bit:
        tests/estimators/test_neighbors.py compares the two ways). ``progress`` counts the (soft-)DTW
        pairs."""
        if metric.kind in _SERIES_METRICS:
            ragged = self._ragged(lq, xq.shape[1], lc, xc.shape[1])
            # cdist_soft_dtw's work (its checks are _check_params'), counted on this search's progress.
            values = _cdist_soft_dtw(xq, None if symmetric else xc, metric.gamma, False, metric.radius, "sqeuclidean",
                                     True, lq if ragged else None, None if symmetric or not ragged else lc,
                                     int(self.chunk_size), metric.slope, progress)
            return values.sqrt() if metric.kind == "dtw" else values
        if self._ragged(lq, xq.shape[1], lc, xc.shape[1]) or xq.shape[1] != xc.shape[1]:
            raise ValueError(f"{who}: metric={metric.kind!r} compares series of one length, {xc.shape[1]} (as in fit); "
                             f"got series of length {xq.shape[1]} or of different lengths")
        a, b = xq.reshape(xq.shape[0], -1), xc.reshape(xc.shape[0], -1)
        if metric.kind == "cityblock":
            return torch.cdist(a, b, p=1.0)
        values = torch.cdist(a, b, p=2.0, compute_mode="donot_use_mm_for_euclid_dist")  # no cancellation
        return values.square() if metric.kind == "sqeuclidean" else values

    def _pruned_dtw(self, xq: Tensor, lq: Tensor, xc: Tensor, lc: Tensor, k: int, metric: _Metric,
                    offset: Optional[int], progress: Progress) -> Tuple[Tensor, Tensor, int, int]:
        """The exact k nearest under DTW with lower-bound pruning (module docstring): the distances
        (square roots, as tslearn) and indices, ordered by (distance, index), the number of DTWs
        computed and of rounds. ``offset``: the queries are the training series offset, offset + 1,
        ... (kneighbors(X=None)), each excluded from its own candidates. ``progress`` counts the
        queries as they stop searching."""
        Q, C = xq.shape[0], xc.shape[0]
        dev = xq.device
        ragged = self._ragged(lq, xq.shape[1], lc, xc.shape[1])
        bounds = lower_bound_matrix(xq, lq, xc, lc, metric.radius, metric.slope)
        bounds, order = torch.sort(bounds, dim=1, stable=True)
        n_eligible = C
        if offset is not None:  # a series is not its own candidate: drop it from its row
            others = order != (offset + torch.arange(Q, device=dev)).unsqueeze(1)
            order, bounds = order[others].view(Q, C - 1), bounds[others].view(Q, C - 1)
            n_eligible = C - 1
        slack = 1.0 + rounding_slack(int(lq.max()), int(lc.max()), xq.shape[2], xq.dtype)
        # best_sq: squared DTW of the kept neighbours, best_d their square roots (the ranking key,
        # as the unpruned search ranks), best_i their indices; C marks "none yet".
        best_sq = xq.new_full((Q, k), math.inf)
        best_d = xq.new_full((Q, k), math.inf)
        best_i = torch.full((Q, k), C, dtype=torch.int64, device=dev)
        pos = torch.zeros(Q, dtype=torch.int64, device=dev)
        active = torch.arange(Q, device=dev)
        width, computed, rounds = k, 0, 0
        while active.numel():
            n_active = active.numel()
            w = min(n_eligible, max(width, -(-_MIN_PAIRS_PER_ROUND // n_active)))
            threshold = best_sq[active].amax(dim=1) * slack  # inf until k are kept
            cols = pos[active].unsqueeze(1) + torch.arange(w, device=dev)
            in_range = cols < n_eligible
            cols = cols.clamp(max=n_eligible - 1)
            rows = active.unsqueeze(1).expand(n_active, w)
            take = in_range & (bounds[rows, cols] <= threshold.unsqueeze(1))  # a prefix of each row
            qi, ci = rows[take], order[rows, cols][take]
            values = self._dtw_pairs(xq, lq, xc, lc, qi, ci, metric, ragged)
            computed += int(values.numel())
            rounds += 1
            cand_sq = xq.new_full((n_active, w), math.inf)
            cand_sq[take] = values
            cand_i = torch.full((n_active, w), C, dtype=torch.int64, device=dev)
            cand_i[take] = ci
            merged_sq = torch.cat([best_sq[active], cand_sq], 1)
            merged_i = torch.cat([best_i[active], cand_i], 1)
            merged_d = merged_sq.sqrt()
            # Rank by (distance, index); carry the squared values along through the same order.
            by_index = torch.sort(merged_i, dim=1, stable=True).indices
            merged_d, merged_i, merged_sq = merged_d.gather(1, by_index), merged_i.gather(1, by_index), \
                merged_sq.gather(1, by_index)
            by_dist = torch.sort(merged_d, dim=1, stable=True).indices[:, :k]
            best_d[active] = merged_d.gather(1, by_dist)
            best_i[active] = merged_i.gather(1, by_dist)
            best_sq[active] = merged_sq.gather(1, by_dist)
            pos[active] += w
            # Still searching: took its whole window (the next bounds may pass the new threshold) and
            # has candidates left.
            keep = take.all(dim=1) & (pos[active] < n_eligible)
            active = active[keep]
            progress.update(n_active - active.numel())
            width = min(2 * width, _MAX_ROUND_WIDTH)
        return best_d, best_i, computed, rounds

    # -- kneighbors ----------------------------------------------------------------------------
    def kneighbors(self, X: Optional[ArrayLike] = None, n_neighbors: Optional[int] = None,
                   return_distance: bool = True, x_lengths: Optional[ArrayLike] = None) -> Any:
        """The k nearest training series of each series of X.

        Distances are tslearn's: the DTW distance (square root of the squared-cost DTW), the raw
        soft-DTW value (may be negative) or the Euclidean / squared Euclidean / cityblock distance of
        the flattened series. Sets ``last_search_``.

        Parameters
        ----------
        X : numpy.ndarray, torch.Tensor, list or None, default None
            The queries, as ``fit``'s X. ``None``: the neighbours of each training series among the
            others (a series is never its own neighbour, scikit-learn's rule; tslearn 0.10's own
            ``kneighbors()`` under a DTW metric ranks its all-zero placeholder matrix: every distance
            0, neighbours 0, 1, ...).
        n_neighbors : int or None, default None
            k; defaults to the estimator's. More than the training series (minus one for X=None) is a
            ValueError (scikit-learn's rule; tslearn silently returns fewer).
        return_distance : bool, default ``True``
            Return the distances as well as the indices.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n_queries,) lengths of the queries.

        Returns
        -------
        distances : numpy.ndarray or torch.Tensor
            (n_queries, k), nearest first, ties by index; only with ``return_distance=True``. numpy of
            the compute dtype for numpy input; a tensor X gives tensors on its device.
        indices : numpy.ndarray or torch.Tensor
            (n_queries, k) int64 indices into the training set.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            More neighbours than training series, bad queries.

        Examples
        --------
        >>> import numpy as np
        >>> from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier
        >>> X = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0], [5.0, 4.0, 3.0, 2.0], [6.0, 4.0, 3.0, 1.0]])
        >>> knn = KNeighborsTimeSeriesClassifier(n_neighbors=1).fit(X, ["up", "up", "down", "down"])
        >>> distances, indices = knn.kneighbors(np.array([[1.0, 2.0, 3.0, 3.0]]), n_neighbors=2)
        >>> distances.tolist(), indices.tolist()
        ([[1.0, 2.0]], [[0, 1]])
        >>> knn.kneighbors(return_distance=False).ravel().tolist()  # each training series among the others
        [1, 0, 3, 2]
        """
        dist, ind, out_device = self._neighbors(X, x_lengths, n_neighbors, "kneighbors")
        if out_device is None:
            dist, ind = dist.cpu().numpy(), ind.cpu().numpy()
        else:
            dist, ind = dist.to(out_device), ind.to(out_device)
        return (dist, ind) if return_distance else ind

    def _weights(self, dist: np.ndarray, who: str) -> Optional[np.ndarray]:
        """scikit-learn's ``_get_weights``: None for uniform; 1/d for "distance", where a query with
        a neighbour at distance 0 weighs its neighbours at distance 0 by 1 and the others by 0; a
        callable's weights, none of whose rows may be all zero."""
        if self.weights == "uniform":
            return None
        if self.weights == "distance":
            with np.errstate(divide="ignore"):
                w = 1.0 / dist
            inf_mask = np.isinf(w)
            inf_row = np.any(inf_mask, axis=1)
            w[inf_row] = inf_mask[inf_row]
            return w
        w = np.asarray(self.weights(dist), dtype=np.float64)
        if w.shape != dist.shape:
            raise ValueError(f"{who}: expected the weights callable to return an array of shape {dist.shape}, got "
                             f"{w.shape}")
        if np.any(np.all(w == 0, axis=1)):
            raise ValueError(f"{who}: all the neighbours of a query got zero weight from the weights callable")
        return w

    def _neighbors_and_weights(self, X: Any, x_lengths: Any, method: str
                               ) -> Tuple[np.ndarray, np.ndarray, Optional[torch.device]]:
        dist, ind, out_device = self._neighbors(X, x_lengths, None, method)
        dist_np = dist.double().cpu().numpy()
        w = self._weights(dist_np, f"{type(self).__name__}.{method}")
        if w is None:
            w = np.ones_like(dist_np)
        return w, ind.cpu().numpy(), out_device


def _check_y_common(y: Any, n: int, who: str) -> np.ndarray:
    if y is None:  # scikit-learn's wording (its checks look for it)
        raise ValueError(f"{who} requires y to be passed, but the target y is None")
    if isinstance(y, Tensor):
        y = y.detach().cpu().numpy()
    y = check_array(y, ensure_2d=False, dtype=None, input_name="y", estimator=who)
    if y.shape[0] != n:
        raise ValueError(f"{who}: expected y to have {n} entries (one per series of X), got {y.shape[0]}")
    return y


class KNeighborsTimeSeriesClassifier(ClassifierMixin, _KNeighborsTimeSeries):
    """k-nearest-neighbour classifier of time series, tslearn's ``KNeighborsTimeSeriesClassifier``.

    On the batched (soft-)DTW operators, with exact lower-bound pruning for DTW.

    Input X: (n_cases, n_timepoints, n_features) (tslearn's layout), (n_cases, n_timepoints)
    univariate series, a list of series of different lengths, or NaN-padded (trailing all-NaN time
    steps, tslearn's format); numpy, lists or tensors; optional ``x_lengths`` (n_cases,) to ``fit``,
    ``predict``, ``predict_proba``, ``kneighbors``. The search runs on ``device``, by default the
    device of fit's X (a CUDA tensor given to fit: on that GPU). The series metrics compare series
    of any lengths; the Euclidean ones need one length. y: one label per series, any type numpy can
    sort (a column vector is raveled with scikit-learn's DataConversionWarning; several outputs are
    not supported).

    Outputs: ``predict`` returns numpy labels (``classes_``'s dtype); ``predict_proba`` float64
    (n_queries, n_classes), a tensor on X's device for tensor input; ``score`` is the accuracy
    (``ClassifierMixin``). The prediction is the class of largest (weighted) vote, the first in
    ``classes_`` on equal votes (scikit-learn's mode); ``predict_proba`` is the normalised vote.
    Neighbours are ordered by distance, ties by training index (module docstring).

    Differences from tslearn 0.10: ties by index (tslearn: as argpartition leaves them);
    ``kneighbors(X=None)`` ranks each training series among the others (tslearn's ranks a
    placeholder matrix); asking for more neighbours than training series is a ValueError (tslearn
    returns fewer); a pair the Itakura parallelogram leaves without a path is at distance +inf
    (tslearn raises); the ctw / sax / gak / frechet metrics are not provided; predict works with
    ``metric="cityblock"`` and uniform weights (tslearn's raises scikit-learn's feature-count error
    there).

    Parameters
    ----------
    n_neighbors : int, default 5
        k (int >= 1).
    weights : {'uniform', 'distance'} or Callable, default 'uniform'
        ``"uniform"`` (each neighbour one vote), ``"distance"`` (1/distance; neighbours at distance
        0 take all the weight) or a callable mapping the (n_queries, k) distances to weights
        (scikit-learn's rules).
    metric : {'dtw', 'softdtw', 'euclidean', 'sqeuclidean', 'cityblock'}, default 'dtw'
        tslearn's metrics; "ctw", "sax", "gak" and "frechet" are not provided.
    metric_params : dict or None, default None
        tslearn's dict: for dtw and softdtw ``sakoe_chiba_radius`` (with optional
        ``global_constraint="sakoe_chiba"``, radius 1 when only the constraint is given) or
        ``itakura_max_slope`` (with optional ``global_constraint="itakura"``, slope 2.0 when only
        the constraint is given; both without a constraint is a ValueError), for softdtw ``gamma``
        (default 1.0; 0 gives DTW). Band for series of lengths N != M: widened by ``|N − M|``
        (tslearn's ``sakoe_chiba_mask``); parallelogram: tslearn's ``itakura_mask`` of each pair's
        lengths, a pair without an admissible path at distance +inf (tslearn raises). See
        ``_resolve_metric``.
    n_jobs : int or None, default None
        Accepted for tslearn compatibility, unused: the operators run on torch's intra-op threads
        (``torch.set_num_threads``), or on the GPU.
    verbose : int, default 0
        tslearn's parameter, here the package's progress convention (CONTRIBUTING.md "Progress"):
        when true, ``kneighbors``, ``predict``, ``predict_proba`` and ``score`` report their search,
        a tqdm bar when tqdm is installed, else a few lines on stderr, named by the method
        (``KNeighborsTimeSeriesClassifier.predict``). The pruned DTW search counts the queries as
        they are settled, the unpruned (soft-)DTW search the pairs computed (per ``chunk_size``
        pairs), the Euclidean metrics the queries. The results are the same, bit for bit.
    pruning : bool, default ``True``
        For metric="dtw", skip the candidates whose DTW lower bound exceeds the current k-th best
        (exact: the same neighbours, distances and predictions as without; module docstring). No
        effect for the other metrics, which compute every pair.
    chunk_size : int, default 1024
        The most (query, candidate) pairs per batched DTW call (bounds memory).
    device : None, str or torch.device, default None
        Where the search runs (and the training series are kept); None: the device of fit's X (CPU
        for numpy). Queries are moved there.

    Attributes
    ----------
    classes_ : numpy.ndarray
        The sorted class labels.
    n_features_in_ : int
        The number of features d (tslearn's convention: 1 for 2-D X).
    n_samples_fit_ : int
        The number of training series.
    last_search_ : softdtw_torch.neighbors.SearchStats
        What the last search did.
    pruning_rate_ : float or None
        The last search's pruning rate (``last_search_.pruning_rate``).

    See Also
    --------
    softdtw_torch.aeon.KNeighborsTimeSeriesClassifier : the same under aeon's parameters.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier
    >>> X = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0], [5.0, 4.0, 3.0, 2.0], [6.0, 4.0, 3.0, 1.0]])
    >>> y = np.array(["up", "up", "down", "down"])
    >>> knn = KNeighborsTimeSeriesClassifier(n_neighbors=1, metric="dtw").fit(X, y)
    >>> knn.predict(np.array([[1.0, 2.0, 3.0, 3.0], [6.0, 5.0, 3.0, 2.0]])).tolist()
    ['up', 'down']
    >>> knn.classes_.tolist(), knn.predict_proba(np.array([[1.0, 2.0, 3.0, 3.0]])).tolist()
    (['down', 'up'], [[0.0, 1.0]])
    >>> knn.score(X, y)
    1.0
    """

    def __init__(self, n_neighbors: int = 5, weights: Union[str, Callable[[np.ndarray], np.ndarray]] = "uniform",
                 metric: str = "dtw", metric_params: Optional[Dict[str, Any]] = None, n_jobs: Optional[int] = None,
                 verbose: int = 0, pruning: bool = True, chunk_size: int = 1024,
                 device: Optional[Union[str, torch.device]] = None):
        # Its own constructor, so that an unknown argument's TypeError names this class (aeon's
        # distance= and distance_params: softdtw_torch.aeon).
        super().__init__(n_neighbors, weights, metric, metric_params, n_jobs, verbose, pruning, chunk_size, device)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = False
        return tags

    def fit(self, X: ArrayLike, y: Any, x_lengths: Optional[ArrayLike] = None) -> "KNeighborsTimeSeriesClassifier":
        """Store the training series and their labels.

        Parameters
        ----------
        X : numpy.ndarray, torch.Tensor or list
            The training series (see the class docstring).
        y : numpy.ndarray, torch.Tensor or list
            (n_cases,) labels.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n_cases,) lengths of the series.

        Returns
        -------
        self : KNeighborsTimeSeriesClassifier
            The fitted estimator.

        Raises
        ------
        ValueError
            Bad parameters or input, y None, of another length or with several outputs, series of
            different lengths with a Euclidean metric.
        TypeError
            Parameters of the wrong types.
        """
        who = "KNeighborsTimeSeriesClassifier.fit"
        n = self._fit_series(X, x_lengths)
        y = _check_y_common(y, n, who)
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn(f"A column-vector y was passed when a 1d array was expected ({who}: y of shape {y.shape} "
                          f"is read as y.ravel())", DataConversionWarning, stacklevel=2)
            y = y.ravel()
        if y.ndim != 1:
            raise ValueError(f"{who}: expected y to be 1-D (n_cases,), got shape {y.shape} (several outputs are not "
                             f"supported)")
        check_classification_targets(y)
        self.classes_, self._y = np.unique(y, return_inverse=True)
        return self

    def _votes(self, X: Any, x_lengths: Any, method: str) -> Tuple[np.ndarray, Optional[torch.device]]:
        w, ind, out_device = self._neighbors_and_weights(X, x_lengths, method)
        labels = self._y[ind]                                   # (n_queries, k) class indices
        votes = np.zeros((ind.shape[0], len(self.classes_)))
        rows = np.arange(ind.shape[0])
        for j in range(ind.shape[1]):                           # scikit-learn's accumulation order
            votes[rows, labels[:, j]] += w[:, j]
        return votes, out_device

    def predict(self, X: ArrayLike, x_lengths: Optional[ArrayLike] = None) -> np.ndarray:
        """The class of largest vote of each series.

        Parameters
        ----------
        X : numpy.ndarray, torch.Tensor or list
            The queries.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n_queries,) lengths of the queries.

        Returns
        -------
        numpy.ndarray
            (n_queries,) labels, of ``classes_``'s dtype.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        """
        votes, _ = self._votes(X, x_lengths, "predict")
        return self.classes_[np.argmax(votes, axis=1)]

    def predict_proba(self, X: ArrayLike, x_lengths: Optional[ArrayLike] = None) -> Union[Tensor, np.ndarray]:
        """The normalised votes, columns in ``classes_`` order.

        Parameters
        ----------
        X : numpy.ndarray, torch.Tensor or list
            The queries.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n_queries,) lengths of the queries.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            float64 (n_queries, n_classes); a tensor on X's device for tensor input.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        """
        votes, out_device = self._votes(X, x_lengths, "predict_proba")
        proba = votes / votes.sum(axis=1, keepdims=True)
        return proba if out_device is None else torch.from_numpy(proba).to(out_device)


class KNeighborsTimeSeriesRegressor(RegressorMixin, _KNeighborsTimeSeries):
    """k-nearest-neighbour regressor of time series, tslearn's ``KNeighborsTimeSeriesRegressor``.

    On the batched (soft-)DTW operators, with exact lower-bound pruning for DTW. Parameters, input
    X, pruning and ties: as :class:`KNeighborsTimeSeriesClassifier`. y: one target per series
    (n_cases,) or several (n_cases, n_targets), numeric and finite.

    The prediction is the mean of the neighbours' targets (``weights="uniform"``) or their
    weighted mean (scikit-learn's ``KNeighborsRegressor``), float64, (n_queries,) or (n_queries,
    n_targets) as y; a tensor on X's device for tensor input. ``score`` is R² (``RegressorMixin``).

    Parameters
    ----------
    n_neighbors : int, default 5
        k (int >= 1).
    weights : {'uniform', 'distance'} or Callable, default 'uniform'
        As for :class:`KNeighborsTimeSeriesClassifier`.
    metric : {'dtw', 'softdtw', 'euclidean', 'sqeuclidean', 'cityblock'}, default 'dtw'
        As for :class:`KNeighborsTimeSeriesClassifier`.
    metric_params : dict or None, default None
        As for :class:`KNeighborsTimeSeriesClassifier`.
    n_jobs : int or None, default None
        Accepted for tslearn compatibility, unused.
    verbose : int, default 0
        Report the searches, as for :class:`KNeighborsTimeSeriesClassifier`.
    pruning : bool, default ``True``
        As for :class:`KNeighborsTimeSeriesClassifier`.
    chunk_size : int, default 1024
        The most (query, candidate) pairs per batched DTW call.
    device : None, str or torch.device, default None
        Where the search runs; None: the device of fit's X (CPU for numpy).

    Attributes
    ----------
    n_features_in_ : int
        The number of features d (1 for 2-D X).
    n_samples_fit_ : int
        The number of training series.
    last_search_ : softdtw_torch.neighbors.SearchStats
        What the last search did.
    pruning_rate_ : float or None
        The last search's pruning rate.

    See Also
    --------
    softdtw_torch.aeon.KNeighborsTimeSeriesRegressor : the same under aeon's parameters.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.neighbors import KNeighborsTimeSeriesRegressor
    >>> X = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0], [5.0, 4.0, 3.0, 2.0], [6.0, 4.0, 3.0, 1.0]])
    >>> knn = KNeighborsTimeSeriesRegressor(n_neighbors=2).fit(X, np.array([1.0, 2.0, 3.0, 4.0]))
    >>> knn.predict(np.array([[1.0, 2.0, 3.0, 3.0]])).tolist()  # the mean of the two nearest targets
    [1.5]
    """

    def __init__(self, n_neighbors: int = 5, weights: Union[str, Callable[[np.ndarray], np.ndarray]] = "uniform",
                 metric: str = "dtw", metric_params: Optional[Dict[str, Any]] = None, n_jobs: Optional[int] = None,
                 verbose: int = 0, pruning: bool = True, chunk_size: int = 1024,
                 device: Optional[Union[str, torch.device]] = None):
        # Its own constructor, so that an unknown argument's TypeError names this class (aeon's
        # distance= and distance_params: softdtw_torch.aeon).
        super().__init__(n_neighbors, weights, metric, metric_params, n_jobs, verbose, pruning, chunk_size, device)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        # scikit-learn's regression check fits make_regression's 10 tabular features (one
        # informative), which the series metrics read as a series of 10 points and warp: training
        # R² 0.37 with DTW and k=5, below the check's 0.5 (Euclidean: 0.66).
        tags.regressor_tags.poor_score = self.metric in _SERIES_METRICS
        return tags

    def fit(self, X: ArrayLike, y: Any, x_lengths: Optional[ArrayLike] = None) -> "KNeighborsTimeSeriesRegressor":
        """Store the training series and their targets.

        Parameters
        ----------
        X : numpy.ndarray, torch.Tensor or list
            The training series (see :class:`KNeighborsTimeSeriesClassifier`).
        y : numpy.ndarray, torch.Tensor or list
            (n_cases,) or (n_cases, n_targets) numeric targets.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n_cases,) lengths of the series.

        Returns
        -------
        self : KNeighborsTimeSeriesRegressor
            The fitted estimator.

        Raises
        ------
        ValueError
            Bad parameters or input, y None, of another length, of another rank or not numeric.
        TypeError
            Parameters of the wrong types.
        """
        who = "KNeighborsTimeSeriesRegressor.fit"
        n = self._fit_series(X, x_lengths)
        y = _check_y_common(y, n, who)
        if y.ndim not in (1, 2):
            raise ValueError(f"{who}: expected y of shape (n_cases,) or (n_cases, n_targets), got {y.shape}")
        try:
            self._y = y.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{who}: expected numeric targets y, got dtype {y.dtype}") from None
        return self

    def predict(self, X: ArrayLike, x_lengths: Optional[ArrayLike] = None) -> Union[Tensor, np.ndarray]:
        """The (weighted) mean target of each series' neighbours.

        Parameters
        ----------
        X : numpy.ndarray, torch.Tensor or list
            The queries.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n_queries,) lengths of the queries.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            float64, (n_queries,) or (n_queries, n_targets) as y; a tensor on X's device for tensor
            input.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        """
        w, ind, out_device = self._neighbors_and_weights(X, x_lengths, "predict")
        y = self._y.reshape(self._y.shape[0], -1)
        if self.weights == "uniform":
            pred = np.mean(y[ind], axis=1)                       # scikit-learn's arithmetic
        else:
            pred = np.empty((ind.shape[0], y.shape[1]))
            denom = np.sum(w, axis=1)
            for j in range(y.shape[1]):
                pred[:, j] = np.sum(y[ind, j] * w, axis=1) / denom
        if self._y.ndim == 1:
            pred = pred.ravel()
        return pred if out_device is None else torch.from_numpy(pred).to(out_device)

