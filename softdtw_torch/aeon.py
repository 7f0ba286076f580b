"""aeon's names and parameters for the estimators aeon users know: change ``from
aeon.classification.distance_based import KNeighborsTimeSeriesClassifier`` (or
``aeon.regression.distance_based``, ``aeon.transformations.collection.convolution_based``,
``aeon.classification.convolution_based``) to ``from softdtw_torch.aeon import ...``.

- ``KNeighborsTimeSeriesClassifier`` / ``KNeighborsTimeSeriesRegressor(distance="dtw",
  distance_params=None, n_neighbors=1, weights="uniform", n_jobs=1)``: aeon's parameters and input
  layout, (n_cases, n_channels, n_timepoints) or a list of (n_channels, n_timepoints_i) arrays,
  on the library's k-NN search (exact, with lower-bound pruning for DTW). Distances are aeon's:
  ``"dtw"`` the squared-cost DTW (aeon's ``dtw_distance``, no square root), ``"euclidean"`` and
  ``"squared"``; ``distance_params={"window": w}`` is aeon's Sakoe–Chiba window, a fraction of the
  length (radius ``int(w·n_timepoints)``, series of one length). ``weights="distance"`` weighs by
  ``1 / (d + eps)`` on aeon's distance, as aeon does. Other aeon distances (msm, erp, ...),
  ``itakura_max_slope`` and a window over series of different lengths raise a ValueError
  naming what is supported.
- The ROCKET family (``Rocket``, ``MiniRocket``, ``MultiRocket``, ``HydraTransformer``, the
  classifiers and regressors): already aeon's names, parameters and layout
  (:mod:`softdtw_torch.rocket`), re-exported here.
"""
from typing import Any, Optional

import numpy as np
from torch import Tensor

from .neighbors import KNeighborsTimeSeriesClassifier as _Classifier
from .neighbors import KNeighborsTimeSeriesRegressor as _Regressor
from .rocket import (HydraClassifier, HydraRegressor, HydraTransformer, MiniRocket, MiniRocketClassifier,
                     MiniRocketRegressor, MultiRocket, MultiRocketClassifier, MultiRocketHydraClassifier,
                     MultiRocketHydraRegressor, MultiRocketRegressor, Rocket, RocketClassifier, RocketRegressor)

__all__ = ["KNeighborsTimeSeriesClassifier", "KNeighborsTimeSeriesRegressor", "Rocket", "MiniRocket", "MultiRocket",
           "HydraTransformer", "RocketClassifier", "MiniRocketClassifier", "MultiRocketClassifier", "HydraClassifier",
           "MultiRocketHydraClassifier", "RocketRegressor", "MiniRocketRegressor", "MultiRocketRegressor",
           "HydraRegressor", "MultiRocketHydraRegressor"]

# aeon's distance names -> the k-NN search's metrics (tslearn's names).
_DISTANCES = {"dtw": "dtw", "euclidean": "euclidean", "squared": "sqeuclidean"}


def _to_tslearn_layout(X: Any) -> Any:
    """aeon's (n_cases, n_channels, n_timepoints) as the search's (n_cases, n_timepoints, n_channels);
    a list of (n_channels, n_timepoints_i) arrays as a list of their transposes; (n, T) univariate
    series are the same in both layouts."""
    if isinstance(X, Tensor):
        return X.transpose(1, 2) if X.dim() == 3 else X
    if isinstance(X, (list, tuple)):
        return [_to_tslearn_layout_one(s) for s in X]
    X = np.asarray(X)
    return X.transpose(0, 2, 1) if X.ndim == 3 else X


def _to_tslearn_layout_one(s: Any) -> Any:
    if isinstance(s, Tensor):
        return s.transpose(0, 1) if s.dim() == 2 else s
    s = np.asarray(s)
    return s.T if s.ndim == 2 else s


def _lengths(X: Any) -> set:
    if isinstance(X, (list, tuple)):
        return {int(np.shape(s)[-1]) for s in X}
    return {int(np.shape(X)[-1])}


class _AeonNeighbors:
    """aeon's parameters read as the k-NN search's (``metric``, ``metric_params`` and the fixed
    ``pruning``, ``chunk_size``, ``device``, ``verbose``), aeon's layout, distances and weights."""

    pruning = True
    chunk_size = 1024
    device = None
    verbose = 0
    _window_radius: Optional[int] = None

    def __init__(self, distance: str = "dtw", distance_params: Optional[dict] = None, n_neighbors: int = 1,
                 weights: Any = "uniform", n_jobs: int = 1) -> None:
        self.distance = distance
        self.distance_params = distance_params
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.n_jobs = n_jobs

    @property
    def metric(self) -> str:
        who = type(self).__name__
        if not isinstance(self.distance, str) or self.distance not in _DISTANCES:
            raise ValueError(f"{who}: softdtw_torch provides distance in {sorted(_DISTANCES)}, got "
                             f"{self.distance!r} (aeon's other distances: use aeon)")
        return _DISTANCES[self.distance]

    @property
    def metric_params(self) -> Optional[dict]:
        return None if self._window_radius is None else {"sakoe_chiba_radius": self._window_radius}

    def _read_window(self, X: Any) -> None:
        """aeon's window (a fraction of the length) as a Sakoe–Chiba radius for the training length."""
        who = f"{type(self).__name__}.fit"
        params = dict(self.distance_params or {})
        unknown = set(params) - ({"window"} if self.distance == "dtw" else set())
        if unknown:
            raise ValueError(f"{who}: distance_params {sorted(unknown)} are not supported for distance="
                             f"{self.distance!r} (dtw takes 'window')")
        window = params.get("window")
        self._window_radius = None
        if window is None:
            return
        if isinstance(window, bool) or not isinstance(window, (int, float)) or not 0 <= window <= 1:
            raise ValueError(f"{who}: expected distance_params['window'] in [0, 1], got {window!r}")
        lengths = _lengths(X)
        if len(lengths) != 1:
            raise ValueError(f"{who}: distance_params['window'] needs series of one length (aeon's window over "
                             f"different lengths is a slanted band), got lengths {sorted(lengths)}")
        self._window_radius = int(window * lengths.pop())

    def fit(self, X: Any, y: Any) -> Any:
        self._read_window(X)
        return super().fit(_to_tslearn_layout(X), y)

    def kneighbors(self, X: Any = None, n_neighbors: Optional[int] = None, return_distance: bool = True) -> Any:
        out = super().kneighbors(None if X is None else _to_tslearn_layout(X), n_neighbors, return_distance)
        if not return_distance:
            return out
        dist, ind = out
        return (dist ** 2 if self.distance == "dtw" else dist), ind

    def _weights(self, dist: np.ndarray, who: str) -> Optional[np.ndarray]:
        """aeon's: 1 / (d + eps) on aeon's distance (the squared DTW for "dtw")."""
        if self.weights == "uniform":
            return None
        d = dist ** 2 if self.distance == "dtw" else dist
        if self.weights == "distance":
            return 1.0 / (d + np.finfo(float).eps)
        return super()._weights(d, who)

    def predict(self, X: Any) -> Any:
        return super().predict(_to_tslearn_layout(X))


class KNeighborsTimeSeriesClassifier(_AeonNeighbors, _Classifier):
    """aeon's ``KNeighborsTimeSeriesClassifier`` (see the module docstring).

    aeon's parameters and input layout, (n_cases, n_channels, n_timepoints) or a list of
    (n_channels, n_timepoints_i) arrays, on the library's k-NN search
    (:class:`softdtw_torch.neighbors.KNeighborsTimeSeriesClassifier`: exact, with lower-bound
    pruning for DTW); ``kneighbors`` returns aeon's distances.

    Parameters
    ----------
    distance : {'dtw', 'euclidean', 'squared'}, default 'dtw'
        aeon's distance: ``"dtw"`` the squared-cost DTW (aeon's ``dtw_distance``, no square root),
        ``"euclidean"`` or ``"squared"``; aeon's other distances raise a ValueError naming what is
        supported.
    distance_params : dict or None, default None
        ``{"window": w}``: aeon's Sakoe–Chiba window, a fraction in [0, 1] of the length (radius
        ``int(w·n_timepoints)``, series of one length); other keys raise.
    n_neighbors : int, default 1
        k.
    weights : {'uniform', 'distance'} or Callable, default 'uniform'
        ``"distance"`` weighs by ``1 / (d + eps)`` on aeon's distance, as aeon does.
    n_jobs : int, default 1
        Accepted and not needed.

    Raises
    ------
    ValueError
        At ``fit``: an unsupported distance or ``distance_params``, a window over series of
        different lengths.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.aeon import KNeighborsTimeSeriesClassifier
    >>> X = np.array([[[1.0, 2, 3, 4]], [[1, 2, 3, 5]], [[5, 4, 3, 2]], [[6, 4, 3, 1]]])  # aeon's layout
    >>> knn = KNeighborsTimeSeriesClassifier(n_neighbors=1).fit(X, np.array(["up", "up", "down", "down"]))
    >>> knn.predict(np.array([[[1.0, 2, 3, 3]]])).tolist()
    ['up']
    >>> distances, indices = knn.kneighbors(np.array([[[1.0, 2, 3, 3]]]), n_neighbors=2)
    >>> distances.tolist(), indices.tolist()  # aeon's DTW: the squared cost
    ([[1.0, 4.0]], [[0, 1]])
    """

    def predict_proba(self, X: Any) -> Any:
        return super().predict_proba(_to_tslearn_layout(X))


class KNeighborsTimeSeriesRegressor(_AeonNeighbors, _Regressor):
    """aeon's ``KNeighborsTimeSeriesRegressor`` (see the module docstring).

    aeon's parameters and input layout on the library's k-NN search
    (:class:`softdtw_torch.neighbors.KNeighborsTimeSeriesRegressor`).

    Parameters
    ----------
    distance : {'dtw', 'euclidean', 'squared'}, default 'dtw'
        aeon's distance: ``"dtw"`` the squared-cost DTW (aeon's ``dtw_distance``, no square root),
        ``"euclidean"`` or ``"squared"``; aeon's other distances raise a ValueError naming what is
        supported.
    distance_params : dict or None, default None
        ``{"window": w}``: aeon's Sakoe–Chiba window, a fraction in [0, 1] of the length (radius
        ``int(w·n_timepoints)``, series of one length); other keys raise.
    n_neighbors : int, default 1
        k.
    weights : {'uniform', 'distance'} or Callable, default 'uniform'
        ``"distance"`` weighs by ``1 / (d + eps)`` on aeon's distance, as aeon does.
    n_jobs : int, default 1
        Accepted and not needed.

    Raises
    ------
    ValueError
        At ``fit``: an unsupported distance or ``distance_params``, a window over series of
        different lengths.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.aeon import KNeighborsTimeSeriesRegressor
    >>> X = np.array([[[1.0, 2, 3, 4]], [[1, 2, 3, 5]], [[5, 4, 3, 2]], [[6, 4, 3, 1]]])
    >>> knn = KNeighborsTimeSeriesRegressor(n_neighbors=2).fit(X, np.array([1.0, 2.0, 3.0, 4.0]))
    >>> knn.predict(np.array([[[1.0, 2, 3, 3]]])).tolist()
    [1.5]
    """
