"""Soft-DTW k-means (:class:`SoftDTWKMeans`), batched on CPU and CUDA.

Each center update is one batched barycenter solve of all k clusters (the objective and solvers of
:mod:`softdtw_torch.barycenter`: every series is one pair of the problem of its cluster, so
clusters of different sizes need no padding), and each assignment one batched ``cdist_soft_dtw``.
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple, Union

import numpy as np
import torch
from sklearn.base import ClusterMixin, TransformerMixin
from torch import Tensor

from ._base import Estimator, check_random_state, read_series, series_tags
from ._input import _check_bandwidth, _check_int, _check_scalar, _resample, _to_tensor
from ._progress import log
from ._barycenter_solvers import _DEFAULTS, _METHODS, ArrayLike, _Objective, _solve
from ._sharing import active_share, rows_by_rank
from .functional import cdist_soft_dtw, soft_dtw

__all__ = ["SoftDTWKMeans"]

# Above this many pair elements (pairs · length · d) the k-means assignment is split into chunks.
_MAX_PAIR_ELEMENTS = 1 << 26


class _Members:
    """The series being clustered, held in this process, and the five things a fit asks of them:
    their self-terms, their values to the centers, the values from some of them to all, some of
    them as centers, and the barycenter objective of the clusters. :mod:`softdtw_torch.dask` answers
    the same questions from a dask array's chunks (``_ChunkedMembers``), with the same bits."""

    def __init__(self, km: "SoftDTWKMeans", x: Tensor, lengths: Tensor):
        self.km, self.x, self.lengths = km, x, lengths
        self.n, self.length, self.features = x.shape
        self.device, self.dtype = x.device, x.dtype
        self.ragged_lengths = None if bool((lengths == x.shape[1]).all()) else lengths

    def self_terms(self) -> Tensor:
        """(n,) sdtw_γ(x_i, x_i)."""
        return self.km._self_terms(self.x, self.ragged_lengths)

    def values_to(self, centers: Tensor) -> Tensor:
        """(n, k) raw soft-DTW values from every series to every center."""
        return self.km._cdist(self.x, self.ragged_lengths, centers, None)

    def values_from(self, ids: Tensor) -> Tensor:
        """(len(ids), n) raw soft-DTW values from the series ``ids`` to every series."""
        lengths = None if self.ragged_lengths is None else self.ragged_lengths.index_select(0, ids)
        return self.km._cdist(self.x.index_select(0, ids), lengths, self.x, self.ragged_lengths)

    def as_centers(self, ids: Tensor) -> Tensor:
        """The series ``ids`` as centers: resampled to the full length where shorter."""
        selected = self.x.index_select(0, ids)
        selected_lengths = self.lengths.index_select(0, ids)
        if bool((selected_lengths == self.length).all()):
            return selected.clone()
        return _resample(selected, selected_lengths, self.length)

    def objective(self, labels: Tensor, k: int) -> _Objective:
        """The k barycenter problems of the clusters: series i one pair of problem ``labels[i]``."""
        return _Objective(self.x, self.lengths, labels, torch.arange(self.n, device=self.device),
                          torch.ones(self.n, dtype=self.dtype, device=self.device), k, float(self.km.gamma),
                          self.km.bandwidth, bool(self.km.metric_normalize))


class SoftDTWKMeans(TransformerMixin, ClusterMixin, Estimator):
    """k-means under soft-DTW (or the soft-DTW divergence), with batched barycenter updates.

    Lloyd iterations: (1) assign each series to the center of lowest soft-DTW value (the n·k
    (series, center) pairs in one batched ``soft_dtw`` call, through ``cdist_soft_dtw``; split in
    chunks only beyond 2^26 gathered elements), (2) replace every center by the
    soft-DTW barycenter of its members, warm-started from the current center — all k barycenters
    in one batched solve (:func:`~softdtw_torch.barycenter.softdtw_barycenter`'s machinery: every
    sample is one pair of the problem of its cluster, so clusters of different sizes need no
    padding). Behaves like ``tslearn.clustering.TimeSeriesKMeans(metric="softdtw")`` with these
    differences:

    * ``inertia_`` is the objective both steps decrease: Σ_i value(x_i, center of x_i) (a sum, as
      scikit-learn's KMeans), where value is sdtw_γ or, with ``metric_normalize=True``, the
      divergence. tslearn reports the mean of the *squared* soft-DTW values, which is not what its
      iterations minimise (and squares negative values). Raw soft-DTW values can be negative.
    * Empty clusters are re-seeded, not restarted: the series with the largest value to its center
      (taken from a cluster that keeps at least one member) becomes the center of the empty cluster.
      tslearn raises EmptyClusterError and restarts from a new initialisation.
    * k-means++ seeding samples proportionally to the soft-DTW *divergence* to the nearest seed
      (non-negative and 0 at a chosen seed), with 2 + ⌊log k⌋ greedy local trials as scikit-learn
      and tslearn; raw soft-DTW values can be negative and cannot serve as sampling weights.
    * Convergence: stops when the assignment did not change AND the inertia changed by at most
      ``tol · max(|inertia|, 1)`` in the last iteration, or after ``max_iter`` iterations. The
      test is relative (the barycenter's floor of 1), default 1e-4; tslearn stops on an absolute
      change below 1e-6, which with inertias in the thousands and barycenters stopped at tol
      1e-3 almost never happens: it runs its 50 iterations. Requiring a stable assignment alone
      would stop while the centers are still moving (each update is warm-started and stops
      early). ``labels_`` and ``inertia_`` always belong to the returned ``cluster_centers_``.

    Input X: (n, T, d), (n, T) univariate, a list of series of different lengths, or NaN-padded
    (tslearn's format); ``x_lengths`` (n,) may be given to ``fit``/``predict``/``transform``/
    ``fit_predict``/``fit_transform``. numpy in, numpy out: with tensor input the fitted
    attributes are tensors on X's device (labels int64).

    A scikit-learn clusterer and transformer (``ClusterMixin``, ``TransformerMixin``), like
    tslearn's ``TimeSeriesKMeans``.

    Parameters
    ----------
    n_clusters : int, default 3
        k.
    gamma : float, default 1.0
        Soft-DTW smoothing (> 0).
    max_iter : int, default 50
        Maximum number of Lloyd iterations (tslearn default 50).
    tol : float, default 1e-4
        Relative inertia-change tolerance (see above).
    n_init : int, default 1
        Number of seedings; the run with the lowest inertia is kept.
    init : {'k-means++', 'random'}, numpy.ndarray or torch.Tensor, default 'k-means++'
        ``"k-means++"``, ``"random"`` (k distinct series), or an array/tensor of initial centers
        (k, T, d) (then n_init is 1).
    random_state : None, int or numpy.random.RandomState, default None
        The seeding's random numbers (scikit-learn's rule).
    barycenter_max_iter : int, default 100
        Passed to the barycenter solver (tslearn: max_iter_barycenter=100).
    barycenter_tol : float, default 1e-3
        Passed to the barycenter solver (tslearn: tol 1e-3).
    barycenter_method : {'lbfgs', 'adam'}, default 'lbfgs'
        Passed to the barycenter solver (tslearn: L-BFGS).
    metric_normalize : bool, default ``False``
        Use the soft-DTW divergence for assignment, inertia and barycenters.
    bandwidth : int or None, default None
        Sakoe–Chiba radius, ``None`` for no band.
    verbose : bool, default ``False``
        Print the inertia after each Lloyd iteration (``fit``), one line on stderr each
        (``SoftDTWKMeans.fit: iteration 3, inertia -1.2e+04``), whether tqdm is installed or not: as
        scikit-learn's ``KMeans``, since the number of iterations is not known beforehand (a bar
        could not show a total). The package's progress convention otherwise (CONTRIBUTING.md
        "Progress"); the results are the same.

    Attributes
    ----------
    cluster_centers_ : numpy.ndarray or torch.Tensor
        (k, T, d), T the longest training series.
    labels_ : numpy.ndarray or torch.Tensor
        (n,), each series' cluster.
    inertia_ : float
        Σ_i value(x_i, center of x_i) (see above).
    n_iter_ : int
        The number of center updates performed.
    n_features_in_ : int
        d, as tslearn's ``TimeSeriesKMeans`` (1 for (n, T) input).

    See Also
    --------
    softdtw_torch.barycenter.softdtw_barycenter : the barycenter solver.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.clustering import SoftDTWKMeans
    >>> rng = np.random.RandomState(0)
    >>> X = np.concatenate([rng.randn(5, 12, 1) + 3, rng.randn(5, 12, 1) - 3])  # two groups
    >>> km = SoftDTWKMeans(n_clusters=2, gamma=1.0, max_iter=10, random_state=0).fit(X)
    >>> km.cluster_centers_.shape
    (2, 12, 1)
    >>> labels = km.labels_
    >>> bool((labels[:5] == labels[0]).all() and (labels[5:] != labels[0]).all())
    True
    >>> bool((km.predict(X) == labels).all())
    True
    >>> km.transform(X[:3]).shape  # the soft-DTW values to each center
    (3, 2)
    """

    _fitted_attribute = "_centers"

    def __init__(self, n_clusters: int = 3, gamma: float = 1.0, max_iter: int = 50, tol: float = 1e-4,
                 n_init: int = 1, init: Union[str, ArrayLike] = "k-means++", random_state: Any = None,
                 barycenter_max_iter: int = 100, barycenter_tol: float = 1e-3, barycenter_method: str = "lbfgs",
                 metric_normalize: bool = False, bandwidth: Optional[int] = None, verbose: bool = False):
        self.n_clusters = n_clusters
        self.gamma = gamma
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.init = init
        self.random_state = random_state
        self.barycenter_max_iter = barycenter_max_iter
        self.barycenter_tol = barycenter_tol
        self.barycenter_method = barycenter_method
        self.metric_normalize = metric_normalize
        self.bandwidth = bandwidth
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = series_tags(super().__sklearn_tags__(), allow_nan=True)  # NaN-padded series
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # -- helpers ---------------------------------------------------------------------------
    def _check_params(self) -> None:
        name = "SoftDTWKMeans"
        _check_int(self.n_clusters, name, "n_clusters", 1)
        _check_scalar(self.gamma, name, "gamma", positive=True)
        _check_int(self.max_iter, name, "max_iter", 1)
        _check_scalar(self.tol, name, "tol", nonneg=True)
        _check_int(self.n_init, name, "n_init", 1)
        _check_int(self.barycenter_max_iter, name, "barycenter_max_iter", 0)
        _check_scalar(self.barycenter_tol, name, "barycenter_tol", nonneg=True)
        if self.barycenter_method not in _METHODS:
            raise ValueError(
                f"{name}: expected barycenter_method to be one of {_METHODS}, got {self.barycenter_method!r}")
        _check_bandwidth(self.bandwidth, name)
        if isinstance(self.init, str) and self.init not in ("k-means++", "random"):
            raise ValueError(
                f"{name}: expected init to be 'k-means++', 'random' or an array of centers, got {self.init!r}")

    def _self_terms(self, x: Tensor, lengths: Optional[Tensor]) -> Tensor:
        """sdtw_γ(x_i, x_i) for every series (shared out across ranks under softdtw_torch.distributed.fit)."""
        def block(lo: int, hi: int) -> List[Tensor]:
            lb = None if lengths is None else lengths[lo:hi]
            return [soft_dtw(x[lo:hi], x[lo:hi], float(self.gamma), self.bandwidth, False, None, lb, lb)]

        with torch.no_grad():
            return rows_by_rank(x.shape[0], [()], x, block)[0]

    def _cdist(self, a: Tensor, a_len: Optional[Tensor], b: Tensor, b_len: Optional[Tensor]) -> Tensor:
        """(A, B) raw soft-DTW values between the series of a and b: ``cdist_soft_dtw``, whose batched
        soft_dtw call covers all A·B pairs at once (split only beyond 2^26 gathered elements; under
        softdtw_torch.distributed.fit, into a chunk per rank at least, each pair computed alone)."""
        per_pair = (a.shape[1] + b.shape[1]) * a.shape[2]
        chunk = max(1, _MAX_PAIR_ELEMENTS // per_pair)
        share = active_share()
        if share is not None:
            chunk = min(chunk, -(-a.shape[0] * b.shape[0] // share.world))
        with torch.no_grad():
            return cdist_soft_dtw(a, b, float(self.gamma), False, self.bandwidth, x_lengths=a_len,
                                  y_lengths=b_len, chunk_size=chunk)

    def _values(self, centers: Tensor, members: _Members, x_self: Optional[Tensor]) -> Tensor:
        """(n, k) soft-DTW values (or divergences) between every series and every center.

        The divergence reuses the series' self-terms sdtw(x_i, x_i), computed once per fit, and
        computes the k centers' self-terms once per call: n·k + k DPs instead of 3·n·k.
        """
        vals = members.values_to(centers)
        if self.metric_normalize:
            assert x_self is not None
            c_self = self._self_terms(centers, None)
            vals = vals - 0.5 * x_self.view(-1, 1) - 0.5 * c_self.view(1, -1)
        return vals

    def _kmeans_pp(self, members: _Members, x_self: Tensor, rs: np.random.RandomState) -> Tensor:
        n = members.n
        k = int(self.n_clusters)
        dev = members.device
        n_local_trials = 2 + int(np.log(k))

        def divergences(ids: np.ndarray) -> Tensor:  # (len(ids), n)
            idt = torch.as_tensor(ids, device=dev)
            v = members.values_from(idt)
            v = v - 0.5 * x_self[idt].view(-1, 1) - 0.5 * x_self.view(1, n)
            return v.clamp_min(0).double()

        chosen = [int(rs.randint(n))]
        closest = divergences(np.array(chosen))[0].cpu().numpy()
        pot = closest.sum()
        for _ in range(1, k):
            if pot <= 0:  # every series coincides with a seed: pick uniformly among the others
                rest = np.setdiff1d(np.arange(n), chosen)
                chosen.append(int(rs.choice(rest)) if rest.size else int(rs.randint(n)))
                continue
            rand_vals = rs.random_sample(n_local_trials) * pot
            cand = np.searchsorted(np.cumsum(closest), rand_vals)
            cand = np.clip(cand, None, n - 1)
            dist = divergences(cand).cpu().numpy()
            np.minimum(closest, dist, out=dist)
            pots = dist.sum(axis=1)
            best = int(np.argmin(pots))
            pot, closest = pots[best], dist[best]
            chosen.append(int(cand[best]))
        return torch.as_tensor(chosen, device=dev)

    def _assign(self, centers: Tensor, members: _Members, x_self: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        vals = self._values(centers, members, x_self)
        best, labels = vals.min(dim=1)
        return labels, best

    def _reseed_empty(self, centers: Tensor, labels: Tensor, best: Tensor, members: _Members,
                      x_self_raw: Tensor) -> int:
        """Give every empty cluster the series farthest from its center (in place). Returns how many."""
        k = centers.shape[0]
        counts = torch.bincount(labels, minlength=k)
        empty = (counts == 0).nonzero().squeeze(1).tolist()
        taken = torch.zeros_like(labels, dtype=torch.bool)
        for j in empty:
            counts = torch.bincount(labels, minlength=k)
            movable = (counts[labels] > 1) & ~taken
            if not bool(movable.any()):
                break
            score = torch.where(movable, best, torch.full_like(best, -math.inf))
            i = int(score.argmax())
            centers[j] = members.as_centers(torch.tensor([i], device=members.device))[0]
            labels[i] = j
            taken[i] = True
            best[i] = 0.0 if self.metric_normalize else x_self_raw[i]  # value of a series to itself
        return len(empty)

    def _update(self, centers: Tensor, labels: Tensor, members: _Members) -> Tensor:
        objective = members.objective(labels, centers.shape[0])
        lr = _DEFAULTS[self.barycenter_method][2]
        z, _ = _solve(objective, centers, self.barycenter_method, int(self.barycenter_max_iter),
                      float(self.barycenter_tol), lr, None, False, False, "SoftDTWKMeans")
        return z

    def _fit_one(self, members: _Members, x_self: Tensor, rs: np.random.RandomState,
                 init_centers: Optional[Tensor]) -> Tuple[Tensor, Tensor, float, int]:
        n = members.n
        k = int(self.n_clusters)
        if init_centers is not None:
            centers = init_centers.clone()
        elif self.init == "random":
            centers = members.as_centers(torch.as_tensor(rs.choice(n, k, replace=False), device=members.device))
        else:
            centers = members.as_centers(self._kmeans_pp(members, x_self, rs))
        x_self_norm = x_self if self.metric_normalize else None
        prev_labels: Optional[Tensor] = None
        prev_inertia: Optional[float] = None
        n_iter = 0
        labels, best = self._assign(centers, members, x_self_norm)
        while True:
            self._reseed_empty(centers, labels, best, members, x_self)
            inertia = float(best.double().sum())
            if self.verbose:  # a line per iteration, as scikit-learn's KMeans: their number is not known ahead
                log("SoftDTWKMeans.fit", f"iteration {n_iter}, inertia {inertia:.6g}")
            same = prev_labels is not None and bool(torch.equal(labels, prev_labels))
            small = prev_inertia is not None and (
                abs(prev_inertia - inertia) <= self.tol * max(abs(prev_inertia), abs(inertia), 1.0))
            if same and small:
                break
            if n_iter == self.max_iter:
                break
            centers = self._update(centers, labels, members)
            n_iter += 1
            prev_labels, prev_inertia = labels, inertia
            labels, best = self._assign(centers, members, x_self_norm)
        return centers, labels, inertia, n_iter

    def _output(self, t: Tensor) -> Union[Tensor, np.ndarray]:
        return t if self._kind == "torch" else t.cpu().numpy()

    # -- public API ------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: Any = None, x_lengths: Optional[ArrayLike] = None) -> "SoftDTWKMeans":
        """Cluster X; sets ``cluster_centers_``, ``labels_``, ``inertia_``, ``n_iter_``.

        Parameters
        ----------
        X : numpy.ndarray, torch.Tensor or list
            (n, T, d), (n, T), a list of series of different lengths, or NaN-padded.
        y : None
            Ignored.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n,) lengths of the series.

        Returns
        -------
        self : SoftDTWKMeans
            The fitted estimator.

        Raises
        ------
        ValueError
            Bad parameters or input, fewer series than ``n_clusters``, ``init`` centers of the wrong
            shape.
        TypeError
            Parameters of the wrong types (a bool ``random_state``).
        """
        self._check_params()
        data = read_series(X, x_lengths, "SoftDTWKMeans.fit")
        return self._fit_members(_Members(self, data.x[0], data.lengths[0]), data.kind, data.squeeze_2d)

    def _fit_members(self, members: _Members, kind: str, squeeze_2d: bool) -> "SoftDTWKMeans":
        """``fit`` on series read (``members``: here, or a dask array's chunks); ``kind`` and
        ``squeeze_2d`` say how the input was given, for the outputs."""
        n, T, d = members.n, members.length, members.features
        k = int(self.n_clusters)
        if n < k:
            raise ValueError(f"SoftDTWKMeans.fit: expected at least n_clusters={k} series, got {n}")
        init_centers = None
        n_init = int(self.n_init)
        if not isinstance(self.init, str):
            init_centers, _ = _to_tensor(self.init, "SoftDTWKMeans.fit", "init")
            init_centers = init_centers.to(device=members.device, dtype=members.dtype)
            if squeeze_2d and init_centers.dim() == 2:
                init_centers = init_centers.unsqueeze(-1)
            if tuple(init_centers.shape) != (k, T, d):
                raise ValueError(f"SoftDTWKMeans.fit: expected init centers of shape {(k, T, d)}, got "
                                 f"{tuple(init_centers.shape)}")
            n_init = 1
        rs = check_random_state(self.random_state, "SoftDTWKMeans")
        x_self = members.self_terms()
        best_run = None
        for _ in range(n_init):
            run = self._fit_one(members, x_self, rs, init_centers)
            if best_run is None or run[2] < best_run[2]:
                best_run = run
        assert best_run is not None
        centers, labels, inertia, n_iter = best_run
        self._kind = kind
        self._squeeze_2d = squeeze_2d
        self._centers = centers
        self.n_features_in_ = d
        self.cluster_centers_ = self._output(centers)
        self.labels_ = self._output(labels)
        self.inertia_ = inertia
        self.n_iter_ = n_iter
        return self

    def transform(self, X: ArrayLike, x_lengths: Optional[ArrayLike] = None) -> Union[Tensor, np.ndarray]:
        """(n, k) soft-DTW values (or divergences) between each series and each center.

        Parameters
        ----------
        X : numpy.ndarray, torch.Tensor or list
            Series as for :meth:`fit`, with the fitted number of features.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n,) lengths of the series.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            (n, k); a tensor for tensor input.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Series with another number of features than in ``fit``.
        """
        self._check_is_fitted("transform")
        data = read_series(X, x_lengths, "SoftDTWKMeans.transform")
        x, lengths = data.x[0], data.lengths[0]
        centers = self._centers.to(device=x.device, dtype=x.dtype)
        if x.shape[2] != centers.shape[2]:
            raise ValueError(f"SoftDTWKMeans.transform: expected series with {centers.shape[2]} features "
                             f"(as in fit), got {x.shape[2]}")
        members = _Members(self, x, lengths)
        x_self = members.self_terms() if self.metric_normalize else None
        vals = self._values(centers, members, x_self)
        return vals if data.kind == "torch" else vals.cpu().numpy()

    def predict(self, X: ArrayLike, x_lengths: Optional[ArrayLike] = None) -> Union[Tensor, np.ndarray]:
        """Index of the closest center for each series (n,).

        Parameters
        ----------
        X : numpy.ndarray, torch.Tensor or list
            Series as for :meth:`fit`.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n,) lengths of the series.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            (n,) cluster indices; a tensor for tensor input.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        """
        self._check_is_fitted("predict")
        vals = self.transform(X, x_lengths)
        return vals.argmin(axis=1) if isinstance(vals, np.ndarray) else vals.argmin(dim=1)

    def fit_predict(self, X: ArrayLike, y: Any = None, x_lengths: Optional[ArrayLike] = None
                    ) -> Union[Tensor, np.ndarray]:
        """``fit(X)`` then return ``labels_``.

        Parameters
        ----------
        X : numpy.ndarray, torch.Tensor or list
            Series as for :meth:`fit`.
        y : None
            Ignored.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n,) lengths of the series.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            ``labels_``, (n,).
        """
        return self.fit(X, y, x_lengths).labels_

    def fit_transform(self, X: ArrayLike, y: Any = None, x_lengths: Optional[ArrayLike] = None
                      ) -> Union[Tensor, np.ndarray]:
        """``fit(X)`` then ``transform(X)``, both with ``x_lengths``.

        Parameters
        ----------
        X : numpy.ndarray, torch.Tensor or list
            Series as for :meth:`fit`.
        y : None
            Ignored.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n,) lengths of the series.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            (n, k) values to the centers.
        """
        return self.fit(X, y, x_lengths).transform(X, x_lengths)
