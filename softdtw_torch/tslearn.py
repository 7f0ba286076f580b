"""tslearn's soft-DTW API on softdtw-torch's kernels: change ``from tslearn.metrics import ...``
(``tslearn.barycenters``, ``tslearn.clustering``) to ``from softdtw_torch.tslearn import ...`` and
tslearn's documented usage runs unchanged, with tslearn's arguments, return order and types
(tests/compat/test_tslearn_dropin.py runs tslearn's own examples against both).

- ``soft_dtw(s1, s2, gamma, global_constraint, sakoe_chiba_radius, itakura_max_slope, be)``: a float
  for arrays; for tensors a 0-dim float64 tensor, differentiable, as tslearn's PyTorch backend
  (which computes in float64 whatever the input's dtype).
- ``soft_dtw_alignment(...)``: ``(A, sim)``, the expected alignment matrix then the value.
- ``cdist_soft_dtw`` / ``cdist_soft_dtw_normalized(dataset1, dataset2=None, gamma, ...)``: the
  (n1, n2) matrix (the second: the divergence, tslearn's normalisation).
- ``softdtw_barycenter(X, gamma, weights, tol, max_iter, init, n_jobs, **metric_params)``: the
  barycenter array (sz, d).
- ``TimeSeriesKMeans(..., metric="softdtw", metric_params={"gamma": ...})``: soft-DTW k-means.
- ``SoftDTWLossPyTorch(gamma, normalize, dist_func, global_constraint, sakoe_chiba_radius,
  itakura_max_slope)``: the (B,) losses of ``forward(x, y)``.

Global constraints are read as tslearn reads them (the named one, or the one whose parameter is
given; radius 1, slope 2 by default). ``be`` (tslearn's backend) and ``n_jobs`` are accepted and
not needed: arrays give numpy, tensors give tensors, and the kernels use every core. What differs,
and why, is listed in the documentation's "Coming from tslearn" table and on each name below.
"""
from typing import Any, Callable, Optional

import numpy as np
import torch
from torch import Tensor

from . import functional as F
from ._input import _tslearn_constraint as tslearn_constraint
from .clustering import SoftDTWKMeans

__all__ = ["soft_dtw", "soft_dtw_alignment", "cdist_soft_dtw", "cdist_soft_dtw_normalized", "softdtw_barycenter",
           "TimeSeriesKMeans", "SoftDTWLossPyTorch"]


def _series(s: Any) -> Any:
    """A tensor series as tslearn's PyTorch backend reads it: float64 (differentiably cast, as
    tslearn computes), (sz,) univariate as (sz, 1); arrays go as they are."""
    if not isinstance(s, Tensor):
        return s
    return (s.unsqueeze(-1) if s.dim() == 1 else s).double()


def _dataset(X: Any) -> Any:
    """A tensor dataset as tslearn's PyTorch backend reads it: float64, (n, sz) univariate as
    (n, sz, 1)."""
    if not isinstance(X, Tensor):
        return X
    return (X.unsqueeze(-1) if X.dim() == 2 else X).double()


def soft_dtw(s1: Any, s2: Any, gamma: float = 1.0, global_constraint: Optional[str] = None,
             sakoe_chiba_radius: Optional[int] = None, itakura_max_slope: Optional[float] = None, be: Any = None):
    """tslearn's ``soft_dtw``: the soft-DTW value of two series (sz1, d) and (sz2, d) (or (sz,)).

    Parameters
    ----------
    s1, s2 : numpy.ndarray, list or torch.Tensor
        The two series, (sz1, d) and (sz2, d), or (sz,) univariate.
    gamma : float, default 1.0
        The smoothing, >= 0.
    global_constraint : {'sakoe_chiba', 'itakura'} or None, default None
        tslearn's: the named constraint, or, when None, the one whose parameter is given (module
        docstring).
    sakoe_chiba_radius : int or None, default None
        The Sakoe–Chiba radius (1 when only ``global_constraint="sakoe_chiba"`` is given).
    itakura_max_slope : float or None, default None
        The Itakura parallelogram's slope (2.0 when only ``global_constraint="itakura"`` is given).
    be : Any, default None
        tslearn's backend: accepted and not needed (arrays give numpy, tensors give tensors).

    Returns
    -------
    float or torch.Tensor
        A float for arrays; for tensors a 0-dim float64 tensor, differentiable, as tslearn's
        PyTorch backend (which computes in float64 whatever the input's dtype).

    Raises
    ------
    ValueError
        Bad series or constraints (errors name ``soft_dtw``).

    Examples
    --------
    >>> from softdtw_torch.tslearn import soft_dtw
    >>> round(soft_dtw([1, 2, 2, 3], [1.0, 2.0, 3.0, 4.0], gamma=1.0), 4)
    -0.8954
    >>> round(soft_dtw([1, 2, 3], [1.0, 2.0, 2.1, 3.2], gamma=0.01), 4)
    0.05
    """
    bandwidth, slope = tslearn_constraint("soft_dtw", global_constraint, sakoe_chiba_radius, itakura_max_slope)
    value = F.soft_dtw(_series(s1), _series(s2), gamma, bandwidth, itakura_max_slope=slope)
    return value if isinstance(value, Tensor) else float(value)


def soft_dtw_alignment(s1: Any, s2: Any, gamma: float = 1.0, global_constraint: Optional[str] = None,
                       sakoe_chiba_radius: Optional[int] = None, itakura_max_slope: Optional[float] = None,
                       be: Any = None):
    """tslearn's ``soft_dtw_alignment``: ``(A, sim)``, the expected alignment matrix then the value.

    Parameters
    ----------
    s1, s2 : numpy.ndarray, list or torch.Tensor
        The two series, (sz1, d) and (sz2, d), or (sz,) univariate.
    gamma : float, default 1.0
        The smoothing, >= 0.
    global_constraint : {'sakoe_chiba', 'itakura'} or None, default None
        tslearn's: the named constraint, or, when None, the one whose parameter is given (module
        docstring).
    sakoe_chiba_radius : int or None, default None
        The Sakoe–Chiba radius (1 when only ``global_constraint="sakoe_chiba"`` is given).
    itakura_max_slope : float or None, default None
        The Itakura parallelogram's slope (2.0 when only ``global_constraint="itakura"`` is given).
    be : Any, default None
        tslearn's backend: accepted and not needed.

    Returns
    -------
    A : numpy.ndarray or torch.Tensor
        The expected alignment matrix (sz1, sz2).
    sim : float or torch.Tensor
        The soft-DTW value (a float for arrays, a 0-dim tensor for tensors).

    Raises
    ------
    ValueError
        Bad series or constraints.

    Examples
    --------
    >>> from softdtw_torch.tslearn import soft_dtw_alignment
    >>> A, sim = soft_dtw_alignment([1, 2, 2, 3], [1.0, 2.0, 3.0, 4.0], gamma=1.0)
    >>> A.shape, round(sim, 4)
    ((4, 4), -0.8954)
    """
    bandwidth, slope = tslearn_constraint("soft_dtw_alignment", global_constraint, sakoe_chiba_radius,
                                          itakura_max_slope)
    A, value = F.soft_dtw_alignment(_series(s1), _series(s2), gamma, bandwidth, itakura_max_slope=slope)
    return A, (value if isinstance(value, Tensor) else float(value))


def _cdist(op: str, normalize: bool, dataset1: Any, dataset2: Any, gamma: float, global_constraint: Optional[str],
           sakoe_chiba_radius: Optional[int], itakura_max_slope: Optional[float], verbose: int) -> Any:
    bandwidth, slope = tslearn_constraint(op, global_constraint, sakoe_chiba_radius, itakura_max_slope)
    return F.cdist_soft_dtw(_dataset(dataset1), _dataset(dataset2), gamma, normalize, bandwidth,
                            itakura_max_slope=slope, verbose=bool(verbose))


def cdist_soft_dtw(dataset1: Any, dataset2: Any = None, gamma: float = 1.0, global_constraint: Optional[str] = None,
                   sakoe_chiba_radius: Optional[int] = None, itakura_max_slope: Optional[float] = None,
                   n_jobs: Optional[int] = None, verbose: int = 0, be: Any = None):
    """tslearn's ``cdist_soft_dtw``: the (n1, n2) soft-DTW matrix of two datasets (or of one with itself).

    Parameters
    ----------
    dataset1 : numpy.ndarray, list or torch.Tensor
        (n1, sz1, d), (n1, sz1), a list of series of any lengths, or NaN-padded.
    dataset2 : numpy.ndarray, list, torch.Tensor or None, default None
        (n2, sz2, d) ...; None: ``dataset1`` with itself.
    gamma : float, default 1.0
        The smoothing, >= 0.
    global_constraint : {'sakoe_chiba', 'itakura'} or None, default None
        tslearn's: the named constraint, or, when None, the one whose parameter is given (module
        docstring).
    sakoe_chiba_radius : int or None, default None
        The Sakoe–Chiba radius (1 when only ``global_constraint="sakoe_chiba"`` is given).
    itakura_max_slope : float or None, default None
        The Itakura parallelogram's slope (2.0 when only ``global_constraint="itakura"`` is given).
    n_jobs : int or None, default None
        Accepted and not needed (the kernels use every core).
    verbose : int, default 0
        Report progress (the package's convention, CONTRIBUTING.md "Progress").
    be : Any, default None
        tslearn's backend: accepted and not needed.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        The (n1, n2) matrix; tensors for tensor input (float64, as tslearn's PyTorch backend).

    Raises
    ------
    ValueError
        Bad datasets or constraints.

    Examples
    --------
    >>> from softdtw_torch.tslearn import cdist_soft_dtw
    >>> cdist_soft_dtw([[1, 2, 2, 3], [1.0, 2.0, 3.0, 4.0]], gamma=0.01).round(4).tolist()
    [[-0.011, 1.0], [1.0, -0.0]]
    """
    return _cdist("cdist_soft_dtw", False, dataset1, dataset2, gamma, global_constraint, sakoe_chiba_radius,
                  itakura_max_slope, verbose)


def cdist_soft_dtw_normalized(dataset1: Any, dataset2: Any = None, gamma: float = 1.0,
                              global_constraint: Optional[str] = None, sakoe_chiba_radius: Optional[int] = None,
                              itakura_max_slope: Optional[float] = None, n_jobs: Optional[int] = None,
                              verbose: int = 0, be: Any = None):
    """tslearn's ``cdist_soft_dtw_normalized``: the soft-DTW divergence matrix.

    sdtw(x_i, y_j) − ½ sdtw(x_i, x_i) − ½ sdtw(y_j, y_j) (≥ 0, and exactly 0 on the diagonal of
    one dataset).

    Parameters
    ----------
    dataset1 : numpy.ndarray, list or torch.Tensor
        (n1, sz1, d), (n1, sz1), a list of series of any lengths, or NaN-padded.
    dataset2 : numpy.ndarray, list, torch.Tensor or None, default None
        (n2, sz2, d) ...; None: ``dataset1`` with itself.
    gamma : float, default 1.0
        The smoothing, >= 0.
    global_constraint : {'sakoe_chiba', 'itakura'} or None, default None
        tslearn's: the named constraint, or, when None, the one whose parameter is given (module
        docstring).
    sakoe_chiba_radius : int or None, default None
        The Sakoe–Chiba radius (1 when only ``global_constraint="sakoe_chiba"`` is given).
    itakura_max_slope : float or None, default None
        The Itakura parallelogram's slope (2.0 when only ``global_constraint="itakura"`` is given).
    n_jobs : int or None, default None
        Accepted and not needed.
    verbose : int, default 0
        Report progress (the package's convention).
    be : Any, default None
        tslearn's backend: accepted and not needed.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        The (n1, n2) divergences.

    Raises
    ------
    ValueError
        Bad datasets or constraints.

    Examples
    --------
    >>> from softdtw_torch.tslearn import cdist_soft_dtw_normalized
    >>> cdist_soft_dtw_normalized([[1, 2, 2, 3], [1.0, 2.0, 3.0, 4.0]], gamma=0.01).round(4).tolist()
    [[0.0, 1.0055], [1.0055, 0.0]]
    """
    return _cdist("cdist_soft_dtw_normalized", True, dataset1, dataset2, gamma, global_constraint,
                  sakoe_chiba_radius, itakura_max_slope, verbose)


def softdtw_barycenter(X: Any, gamma: float = 1.0, weights: Any = None, tol: float = 1e-3, max_iter: int = 50,
                       init: Any = None, n_jobs: Optional[int] = None, **metric_params: Any):
    """tslearn's ``softdtw_barycenter``: the barycenter (sz, d) of the series of ``X``.

    L-BFGS, tslearn's defaults; see :func:`softdtw_torch.barycenter.softdtw_barycenter`.

    Parameters
    ----------
    X : numpy.ndarray, list or torch.Tensor
        (n, sz, d), (n, sz), a list of series of any lengths, or NaN-padded.
    gamma : float, default 1.0
        The smoothing, > 0.
    weights : numpy.ndarray, list or None, default None
        (n,) non-negative weights; None: ones.
    tol : float, default 1e-3
        L-BFGS-B's tolerance, as tslearn's.
    max_iter : int, default 50
        L-BFGS iterations.
    init : numpy.ndarray, torch.Tensor or None, default None
        The starting barycenter; None: the Euclidean mean (tslearn's).
    n_jobs : int or None, default None
        Accepted and not needed.
    **metric_params : Any
        May name a Sakoe–Chiba band (``global_constraint="sakoe_chiba"``,
        ``sakoe_chiba_radius``); the Itakura parallelogram raises, the barycenter solver having no
        Itakura mode.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        The barycenter (sz, d): an array for array input and a tensor for tensors.

    Raises
    ------
    ValueError
        The Itakura parallelogram, and the errors of
        :func:`softdtw_torch.barycenter.softdtw_barycenter`.
    TypeError
        Unknown ``metric_params``.

    Examples
    --------
    >>> from softdtw_torch.tslearn import softdtw_barycenter
    >>> z = softdtw_barycenter([[1, 2, 3, 4], [1, 2, 3, 5]], gamma=1.0, max_iter=5)
    >>> z.shape
    (4, 1)
    """
    from .barycenter import softdtw_barycenter as barycenter

    unknown = set(metric_params) - {"global_constraint", "sakoe_chiba_radius", "itakura_max_slope"}
    if unknown:
        raise TypeError(f"softdtw_barycenter: unexpected metric_params {sorted(unknown)}")
    bandwidth, slope = tslearn_constraint("softdtw_barycenter", metric_params.get("global_constraint"),
                                          metric_params.get("sakoe_chiba_radius"),
                                          metric_params.get("itakura_max_slope"))
    if slope is not None:
        raise ValueError("softdtw_barycenter: the Itakura parallelogram is not supported for barycenters; "
                         "use a Sakoe-Chiba band (global_constraint=\"sakoe_chiba\") or none")
    return barycenter(_dataset(X), gamma=gamma, weights=weights, init=init, max_iter=max_iter, tol=tol,
                      bandwidth=bandwidth)


class SoftDTWLossPyTorch(torch.nn.Module):
    """tslearn's ``SoftDTWLossPyTorch``: the (B,) soft-DTW values of ``forward(x, y)``.

    ``forward(x, y)`` gives the (B,) soft-DTW values (the divergence with ``normalize=True``) of x
    (B, N, d) and y (B, M, d), differentiable w.r.t. both, float x with integer y promoted as
    tslearn's distance promotes them.

    Parameters
    ----------
    gamma : float, default 1.0
        The smoothing.
    normalize : bool, default ``False``
        Give the divergence.
    dist_func : Callable or None, default None
        ``dist_func(x, y) -> (B, N, M)``; None: squared Euclidean, fused into the kernel then.
    global_constraint : {'sakoe_chiba', 'itakura'} or None, default None
        tslearn's: the named constraint, or, when None, the one whose parameter is given (module
        docstring).
    sakoe_chiba_radius : int or None, default None
        The Sakoe–Chiba radius (1 when only ``global_constraint="sakoe_chiba"`` is given).
    itakura_max_slope : float or None, default None
        The Itakura parallelogram's slope (2.0 when only ``global_constraint="itakura"`` is given).

    Raises
    ------
    ValueError
        Bad constraints (at construction); inputs that are not 3-D tensors (at the call).

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.tslearn import SoftDTWLossPyTorch
    >>> loss = SoftDTWLossPyTorch(gamma=0.1)
    >>> x = torch.zeros(2, 5, 1, requires_grad=True)
    >>> values = loss(x, torch.ones(2, 6, 1))
    >>> values.shape
    torch.Size([2])
    >>> values.sum().backward()
    >>> x.grad.shape
    torch.Size([2, 5, 1])
    """

    def __init__(self, gamma: float = 1.0, normalize: bool = False, dist_func: Optional[Callable] = None,
                 global_constraint: Optional[str] = None, sakoe_chiba_radius: Optional[int] = None,
                 itakura_max_slope: Optional[float] = None) -> None:
        super().__init__()
        self.gamma = gamma
        self.normalize = normalize
        self.dist_func = dist_func
        self.global_constraint = global_constraint
        self.sakoe_chiba_radius = sakoe_chiba_radius
        self.itakura_max_slope = itakura_max_slope
        self._window = tslearn_constraint("SoftDTWLossPyTorch", global_constraint, sakoe_chiba_radius,
                                          itakura_max_slope)

    def _value(self, x: Tensor, y: Tensor) -> Tensor:
        bandwidth, slope = self._window
        if self.dist_func is None:
            return F.soft_dtw(x, y, self.gamma, bandwidth, itakura_max_slope=slope)
        return F.soft_dtw_from_cost(self.dist_func(x, y), self.gamma, bandwidth, itakura_max_slope=slope)

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        """The (B,) soft-DTW values (or divergences) of ``x`` and ``y``.

        Parameters
        ----------
        x : torch.Tensor
            (B, N, d).
        y : torch.Tensor
            (B, M, d); the two are converted to their promoted dtype (the default float dtype for two
            integer tensors).

        Returns
        -------
        torch.Tensor
            (B,) values, differentiable w.r.t. ``x`` and ``y``.

        Raises
        ------
        ValueError
            ``x`` or ``y`` not a 3-D tensor.
        """
        if not isinstance(x, Tensor) or not isinstance(y, Tensor) or x.dim() != 3 or y.dim() != 3:
            raise ValueError("SoftDTWLossPyTorch: expected x and y as 3-D tensors (batch_size, ts_length, dim)")
        # torch's type promotion, as tslearn's distance (x - y) applies it: float x with integer y is float.
        dtype = torch.promote_types(x.dtype, y.dtype)
        if not dtype.is_floating_point:
            dtype = torch.get_default_dtype()
        x, y = x.to(dtype), y.to(dtype)
        value = self._value(x, y)
        if self.normalize:
            value = value - 0.5 * (self._value(x, x) + self._value(y, y))
        return value


class TimeSeriesKMeans(SoftDTWKMeans):
    """tslearn's ``TimeSeriesKMeans`` for ``metric="softdtw"``: soft-DTW k-means.

    :class:`softdtw_torch.clustering.SoftDTWKMeans` under tslearn's parameter names,
    ``metric_params`` giving ``gamma`` (default 1.0) and a Sakoe–Chiba band. Attributes as
    tslearn's, with SoftDTWKMeans's definitions: ``inertia_`` is the sum of the soft-DTW values to
    the centers (what the iterations decrease; tslearn reports the mean of their squares) and
    ``tol`` is relative. ``metric="euclidean"`` (tslearn's default) and ``"dtw"`` raise: this
    library's k-means is the soft-DTW one.

    Parameters
    ----------
    n_clusters : int, default 3
        k.
    max_iter : int, default 50
        Maximum number of Lloyd iterations.
    tol : float, default 1e-6
        Relative inertia-change tolerance (SoftDTWKMeans's test).
    n_init : int, default 1
        Number of seedings; the run with the lowest inertia is kept.
    metric : str, default 'euclidean'
        Must be ``"softdtw"`` (tslearn's default ``"euclidean"`` raises, as ``"dtw"``).
    max_iter_barycenter : int, default 100
        Barycenter iterations per update.
    metric_params : dict or None, default None
        ``gamma`` (default 1.0), ``global_constraint``, ``sakoe_chiba_radius``; the Itakura
        parallelogram raises.
    n_jobs : int or None, default None
        Accepted and not needed.
    dtw_inertia : bool, default ``False``
        ``True`` raises (``inertia_`` is the soft-DTW one).
    verbose : int, default 0
        Print the inertia after each iteration (SoftDTWKMeans's ``verbose``).
    random_state : None, int or numpy.random.RandomState, default None
        The seeding's random numbers.
    init : {'k-means++', 'random'}, numpy.ndarray or torch.Tensor, default 'k-means++'
        As SoftDTWKMeans's ``init``.

    Attributes
    ----------
    cluster_centers_ : numpy.ndarray or torch.Tensor
        (k, sz, d).
    labels_ : numpy.ndarray or torch.Tensor
        (n,).
    inertia_ : float
        The sum of the soft-DTW values to the centers.
    n_iter_ : int
        The number of center updates performed.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.tslearn import TimeSeriesKMeans
    >>> X = np.array([[0.0, 0, 1, 2, 1, 0], [0, 0, 1, 2, 2, 0], [5, 5, 4, 3, 4, 5], [5, 5, 4, 3, 3, 5]])
    >>> km = TimeSeriesKMeans(n_clusters=2, metric="softdtw", max_iter=5, random_state=0).fit(X)
    >>> km.cluster_centers_.shape
    (2, 6, 1)
    >>> bool(km.labels_[0] == km.labels_[1] != km.labels_[2] == km.labels_[3])
    True
    """

    def __init__(self, n_clusters: int = 3, max_iter: int = 50, tol: float = 1e-6, n_init: int = 1,
                 metric: str = "euclidean", max_iter_barycenter: int = 100, metric_params: Optional[dict] = None,
                 n_jobs: Optional[int] = None, dtw_inertia: bool = False, verbose: int = 0,
                 random_state: Any = None, init: Any = "k-means++"):
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.metric = metric
        self.max_iter_barycenter = max_iter_barycenter
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.dtw_inertia = dtw_inertia
        self.verbose = verbose
        self.random_state = random_state
        self.init = init

    # SoftDTWKMeans's parameters, read from tslearn's.
    barycenter_tol = 1e-3
    barycenter_method = "lbfgs"
    metric_normalize = False

    @property
    def gamma(self) -> float:
        return (self.metric_params or {}).get("gamma", 1.0)

    @property
    def barycenter_max_iter(self) -> int:
        return self.max_iter_barycenter

    @property
    def bandwidth(self) -> Optional[int]:
        params = self.metric_params or {}
        return tslearn_constraint("TimeSeriesKMeans", params.get("global_constraint"),
                                  params.get("sakoe_chiba_radius"), params.get("itakura_max_slope"))[0]

    def _check_params(self) -> None:
        if self.metric != "softdtw":
            raise ValueError(f'TimeSeriesKMeans: softdtw_torch provides metric="softdtw" only, got '
                             f'metric={self.metric!r} (tslearn\'s default is "euclidean": pass '
                             f'metric="softdtw", or use tslearn for "euclidean" and "dtw")')
        if self.dtw_inertia:
            raise ValueError("TimeSeriesKMeans: dtw_inertia=True is not supported (inertia_ is the soft-DTW one)")
        params = self.metric_params or {}
        unknown = set(params) - {"gamma", "global_constraint", "sakoe_chiba_radius", "itakura_max_slope"}
        if unknown:
            raise ValueError(f"TimeSeriesKMeans: unexpected metric_params {sorted(unknown)}")
        if tslearn_constraint("TimeSeriesKMeans", params.get("global_constraint"), params.get("sakoe_chiba_radius"),
                              params.get("itakura_max_slope"))[1] is not None:
            raise ValueError("TimeSeriesKMeans: the Itakura parallelogram is not supported for soft-DTW k-means")
        super()._check_params()
