"""ROCKET-family regression in torch: ``RidgeCV`` (ridge regression with leave-one-out
cross-validated alpha) and the pipelines ``RocketRegressor``, ``MiniRocketRegressor``,
``MultiRocketRegressor``, ``HydraRegressor`` and ``MultiRocketHydraRegressor``.

The pipelines are aeon's regressors of the same names (aeon/regression/convolution_based):

    transform  ->  StandardScaler(with_mean=False)  ->  RidgeCV(alphas=logspace(-3, 3, 10))

with every stage in torch, on the device of the data. They are the classifiers' pipelines
(``_pipeline._RocketPipeline`` and the same ``_*Transform`` mixins) ending in ``RidgeCV``
instead of ``RidgeClassifierCV`` (the Hydra ones with aeon's ``SparseScaler``, as the
classifiers); ``RidgeCV`` fits with the classifier's leave-one-out code
(``_ridge._fit_ridge_loo``, described in that module's docstring).
"""
from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np
import torch
from sklearn.base import RegressorMixin
from torch import Tensor

from .._base import Estimator
from ._input import ArrayLike, Device, _check_2d, _check_n_features, _out_like, check_finite
from ._pipeline import (_HydraTransform, _MiniRocketTransform, _MultiRocketHydraTransform, _MultiRocketTransform,
                        _RocketPipeline, _RocketTransform)
from ._ridge import DEFAULT_ALPHAS, _check_alphas, _fit_ridge_loo, _linear

__all__ = ["HydraRegressor", "MiniRocketRegressor", "MultiRocketHydraRegressor", "MultiRocketRegressor", "RidgeCV",
           "RocketRegressor"]


def _targets(y: Any, n_expected: int, name: str) -> Tensor:
    """y as a float64 tensor of shape (n_expected,) or (n_expected, n_targets), n_targets >= 1,
    checked numeric and finite (a tensor stays on its device; anything else goes through numpy)."""
    if y is None:  # scikit-learn's wording
        raise ValueError(f"{name}: requires y to be passed, but the target y is None")
    if isinstance(y, Tensor):
        t = y.detach()
        if t.is_complex():
            raise ValueError(f"{name}: expected real numeric targets y, got {t.dtype}")
    else:
        a = np.asarray(y)
        if a.dtype.kind not in "biuf":
            try:
                a = a.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"{name}: expected numeric targets y, got dtype {a.dtype}") from None
        t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))
    t = t.to(torch.float64)
    if t.dim() not in (1, 2):
        raise ValueError(f"{name}: expected y to be 1-D (n_samples,) or 2-D (n_samples, n_targets), got "
                         f"{t.dim()}-D")
    if t.shape[0] != n_expected:
        raise ValueError(f"{name}: expected y to have {n_expected} rows (one per case of X), got {t.shape[0]}")
    if t.dim() == 2 and t.shape[1] == 0:
        raise ValueError(f"{name}: expected y with at least 1 target, got shape {tuple(t.shape)}")
    check_finite(t, name, "y")
    return t


class RidgeCV(RegressorMixin, Estimator):
    """Ridge regression with alpha chosen by efficient leave-one-out CV, in torch (float64).

    Same estimator as scikit-learn's ``RidgeCV(alphas=..., fit_intercept=...)`` with ``cv=None``,
    ``scoring=None``, ``alpha_per_target=False`` (see ``_ridge``'s module docstring for what
    is computed; the code is ``RidgeClassifierCV``'s): same ``alpha_`` (one for all targets),
    coefficients to float64 rounding, predictions to ~1e-10 relative.

    Input: X (n_samples, n_features), numpy or tensor of any floating (or integer) dtype; the fit
    runs in float64 on X's device (a CUDA tensor fits on the GPU). y: numeric, (n_samples,) or
    (n_samples, n_targets) (multi-output, one ridge per column, as sklearn), numpy/list/tensor;
    NaN/inf in X or y are refused.

    ``predict`` returns float64 (n,) for 1-D y or a single column, (n, n_targets) otherwise: a
    tensor (on X's device) for tensor input, numpy otherwise. Deterministic for any number of CPU
    threads, as ``RidgeClassifierCV``. A scikit-learn regressor (``RegressorMixin``: ``score`` is
    R²). Not supported: ``sample_weight``, ``cv``, ``scoring``, ``gcv_mode``, ``alpha_per_target``
    and ``store_cv_results``.

    Parameters
    ----------
    alphas : tuple of float, optional
        The candidate regularisations, each finite and > 0; default aeon's ``logspace(-3, 3, 10)``,
        not sklearn's ``(0.1, 1.0, 10.0)``.
    fit_intercept : bool, default ``True``
        Fit an intercept (by centering).

    Attributes
    ----------
    alpha_ : float
        The chosen alpha.
    best_score_ : float
        Its ``-mean(looe²)`` over all samples and targets.
    coef_ : torch.Tensor
        float64 on the fit device: (n_features,) for 1-D y or a single column, (n_targets,
        n_features) otherwise (sklearn's shapes).
    intercept_ : torch.Tensor or float
        float64 tensor: 0-d for 1-D y, (n_targets,) otherwise; the float ``0.0`` with
        ``fit_intercept=False``.
    n_features_in_ : int
        The number of features.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.rocket import RidgeCV
    >>> X = np.random.RandomState(0).randn(20, 5)
    >>> y = 2.0 * X[:, 0] + 1.0
    >>> ridge = RidgeCV().fit(X, y)
    >>> ridge.alpha_, tuple(ridge.coef_.shape)
    (0.001, (5,))
    >>> bool(np.allclose(ridge.predict(X), y, atol=1e-3))
    True
    """

    _fitted_attribute = "coef_"

    def __init__(self, alphas: Sequence[float] = DEFAULT_ALPHAS, fit_intercept: bool = True):
        self.alphas = alphas
        self.fit_intercept = fit_intercept

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def fit(self, X: ArrayLike, y: Any) -> "RidgeCV":
        """Fit on X (n_samples, n_features) and targets y (n_samples,) or (n_samples, n_targets).

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_samples, n_features), finite.
        y : numpy.ndarray, torch.Tensor or list
            (n_samples,) or (n_samples, n_targets), numeric and finite.

        Returns
        -------
        self : RidgeCV
            The fitted regressor.

        Raises
        ------
        ValueError
            Bad alphas, X not 2-D, empty or not finite, y None, of another length or rank, not numeric
            or not finite.
        """
        name = "RidgeCV"
        alphas = _check_alphas(self.alphas, name)
        x = _check_2d(X, name).to(torch.float64)
        target = _targets(y, x.shape[0], name).to(x.device)
        Y = target[:, None] if target.dim() == 1 else target
        alpha, score, coef, intercept = _fit_ridge_loo(x, Y, alphas, self.fit_intercept)
        self.alpha_ = alpha
        self.best_score_ = score
        self.coef_ = coef[0] if coef.shape[0] == 1 else coef  # sklearn ravels a single target
        if not self.fit_intercept:
            self.intercept_ = 0.0  # sklearn's float without an intercept
        else:
            self.intercept_ = intercept[0] if target.dim() == 1 else intercept
        self.n_features_in_ = x.shape[1]
        return self

    def _predict(self, X: ArrayLike) -> Tensor:
        x = _check_2d(X, "RidgeCV")
        _check_n_features(x, self.n_features_in_, "RidgeCV")
        # (n,) for one target
        return _linear(x.to(device=self.coef_.device, dtype=torch.float64), self.coef_, self.intercept_)

    def predict(self, X: ArrayLike) -> Union[Tensor, np.ndarray]:
        """Predictions for X (n, n_features), float64.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_samples, n_features).

        Returns
        -------
        numpy.ndarray or torch.Tensor
            (n,) for 1-D y or a single column, (n, n_targets) otherwise: a tensor (on X's device) for
            tensor input, numpy otherwise.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another number of features, NaN or inf.
        """
        self._check_is_fitted("predict")
        return _out_like(self._predict(X), X)


class _PipelineRegressor(RegressorMixin, _RocketPipeline):
    """A ROCKET-family regressor: the pipeline ending in ``RidgeCV(alphas)``; ``predict``."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # As the classifiers': scikit-learn's score check fits series of a few time points.
        tags.regressor_tags.poor_score = True
        tags.target_tags.multi_output = True
        return tags

    def _read_target(self, y: Any, n_cases: int) -> Tensor:
        return _targets(y, n_cases, type(self).__name__)

    def _make_ridge(self) -> RidgeCV:
        return RidgeCV(alphas=self.alphas)

    def fit(self, X: ArrayLike, y: Any) -> "_PipelineRegressor":
        """Fit the transformer on X, then the scaler and the ridge on its features.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, [n_channels,] n_timepoints), finite, non-empty.
        y : numpy.ndarray, torch.Tensor or list
            (n_cases,) or (n_cases, n_targets) numeric targets.

        Returns
        -------
        self : object
            The fitted regressor.

        Raises
        ------
        ValueError
            Bad input, targets or parameters (the transformer's errors included, named after the
            regressor).
        TypeError
            Parameters of the wrong types.
        """
        return super().fit(X, y)

    def predict(self, X: ArrayLike) -> Union[Tensor, np.ndarray]:
        """Predicted values, float64.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, [n_channels,] n_timepoints), of the fitted channels and length.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            (n_cases,) (or (n_cases, n_targets) for 2-D y in fit): numpy for numpy input, a tensor on
            X's device for tensor input.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another channel count or length than in fit, NaN or inf.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.RandomState(0)
        >>> wave = np.sin(np.linspace(0, 6, 30))
        >>> X = np.concatenate([rng.randn(6, 1, 30) + wave, rng.randn(6, 1, 30) - wave]).astype(np.float32)
        >>> y = X[:, 0, :].mean(axis=1)  # a target per case
        >>> from softdtw_torch.rocket import MiniRocketRegressor
        >>> reg = MiniRocketRegressor(n_kernels=84, random_state=0).fit(X, np.stack([y, -y], axis=1))
        >>> reg.predict(X).shape  # one column per target
        (12, 2)
        """
        features = self._features(X, "predict")  # checks fitted first
        return _out_like(self.ridge_._predict(features), X)



class RocketRegressor(_RocketTransform, _PipelineRegressor):
    """aeon's ``RocketRegressor`` (Dempster et al. 2020), with every stage in torch.

    ``Rocket(n_kernels)`` features (2·n_kernels per case; the same kernels as aeon for the same
    ``random_state``, features as ``RocketClassifier``'s: within float32 rounding of aeon 1.6's
    transform, see ``Rocket``) -> ``StandardScaler(with_mean=False)`` -> ``RidgeCV(alphas)``.

    Input X: (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints) (one channel), numpy or
    tensor, equal-length series (lists of series of different lengths are not supported); NaN and
    inf are refused (ValueError). y: numeric, (n_cases,) as aeon's, or (n_cases, n_targets)
    (multi-output, as ``RidgeCV``). Errors name the regressor, those of the transformer included.

    ``predict`` returns float64 values (numpy for numpy input, a tensor for tensor input), from the
    float64 ridge: aeon's regressors return float32 (sklearn's ``RidgeCV`` casts its coefficients
    to the float32 features' dtype), so ours agree with theirs to float32 rounding, with the same
    ``alpha_``. ``predict`` takes series of the fitted length only, as the transformers. A
    scikit-learn regressor (``RegressorMixin``: ``score`` is R²).

    aeon's ``estimator`` (another final regressor) and ``n_jobs`` are not supported: the ridge is
    always ``RidgeCV``, in float64 on the working device, and the CPU work uses torch's threads.

    Parameters
    ----------
    n_kernels : int, default 10_000
        Number of random convolution kernels (int >= 1).
    normalise : bool, default ``True``
        z-normalise each case and channel before the convolutions (aeon's default).
    random_state : None, int or numpy.random.RandomState, default None
        int seed (or None: a fresh random seed per fit).
    device : None, str or torch.device, default None
        Where features and the ridge are computed; None = X's device (CPU for numpy).
    accumulate : {'float32_fma', 'float32', 'float64'}, default 'float32_fma'
        Rocket's accumulation mode (``"float32_fma"``: aeon's bits).
    alphas : tuple of float, optional
        The ridge's candidate regularisations; default aeon's ``logspace(-3, 3, 10)``.
    verbose : bool, default ``False``
        Not one of aeon's parameters: report the stages of ``fit`` (transformer fitted, features
        computed, scaled, ridge fitted) and of ``predict`` (features computed, scaled): a tqdm bar
        when tqdm is installed, else a few lines on stderr (the package's convention,
        CONTRIBUTING.md "Progress"). The results are the same, bit for bit.

    Attributes
    ----------
    rocket_ : Rocket
        The fitted transformer.
    scaler_ : StandardScaler
        The fitted scaler.
    ridge_ : RidgeCV
        The fitted ridge.
    n_channels_ : int
        The number of channels.
    n_features_in_ : int
        The number of channels too, as tslearn's ``n_features_in_`` (2-D input is one channel).
    n_timepoints_ : int
        The fitted length: ``predict`` takes series of that length only, as the transformers.
    device_ : torch.device
        Where it computes; ``predict`` moves X there.

    See Also
    --------
    RocketClassifier : the same pipeline for classification.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> wave = np.sin(np.linspace(0, 6, 30))
    >>> X = np.concatenate([rng.randn(6, 1, 30) + wave, rng.randn(6, 1, 30) - wave]).astype(np.float32)
    >>> y = X[:, 0, :].mean(axis=1)  # a target per case
    >>> from softdtw_torch.rocket import RocketRegressor
    >>> reg = RocketRegressor(n_kernels=100, random_state=0).fit(X, y)
    >>> prediction = reg.predict(X)
    >>> prediction.shape, prediction.dtype
    ((12,), dtype('float64'))
    """

    def __init__(self, n_kernels: int = 10_000, normalise: bool = True, random_state: Any = None,
                 device: Device = None, accumulate: str = "float32_fma",
                 alphas: Sequence[float] = DEFAULT_ALPHAS, verbose: bool = False):
        self.n_kernels = n_kernels
        self.normalise = normalise
        self.random_state = random_state
        self.device = device
        self.accumulate = accumulate
        self.alphas = alphas
        self.verbose = verbose


class MiniRocketRegressor(_MiniRocketTransform, _PipelineRegressor):
    """aeon's ``MiniRocketRegressor`` (Dempster et al. 2021), with every stage in torch.

    ``MiniRocket(n_kernels, max_dilations_per_kernel)`` features (float32, bit-identical to aeon's
    for the same ``random_state``) -> ``StandardScaler(with_mean=False)`` (sklearn's bits) ->
    ``RidgeCV(alphas)`` (sklearn's ``alpha_``). Series need 9 or more time points (as aeon's).

    Input X: (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints) (one channel), numpy or
    tensor, equal-length series (lists of series of different lengths are not supported); NaN and
    inf are refused (ValueError). y: numeric, (n_cases,) as aeon's, or (n_cases, n_targets)
    (multi-output, as ``RidgeCV``). Errors name the regressor, those of the transformer included.

    ``predict`` returns float64 values (numpy for numpy input, a tensor for tensor input), from the
    float64 ridge: aeon's regressors return float32 (sklearn's ``RidgeCV`` casts its coefficients
    to the float32 features' dtype), so ours agree with theirs to float32 rounding, with the same
    ``alpha_``. ``predict`` takes series of the fitted length only, as the transformers. A
    scikit-learn regressor (``RegressorMixin``: ``score`` is R²).

    aeon's ``estimator`` (another final regressor) and ``n_jobs`` are not supported: the ridge is
    always ``RidgeCV``, in float64 on the working device, and the CPU work uses torch's threads.

    Parameters
    ----------
    n_kernels : int, default 10_000
        Number of features, rounded down to a multiple of 84 (84 when smaller), as aeon.
    max_dilations_per_kernel : int, default 32
        int >= 1 (aeon's 32).
    random_state : None, int or numpy.random.RandomState, default None
        MiniRocket's (aeon's rule).
    device : None, str or torch.device, default None
        Where features and the ridge are computed; None = X's device (CPU for numpy).
        MiniRocket's ``fit`` (dilations and biases) runs on the CPU.
    alphas : tuple of float, optional
        The ridge's candidate regularisations; default aeon's ``logspace(-3, 3, 10)``.
    verbose : bool, default ``False``
        Not one of aeon's parameters: report the stages of ``fit`` (transformer fitted, features
        computed, scaled, ridge fitted) and of ``predict`` (features computed, scaled): a tqdm bar
        when tqdm is installed, else a few lines on stderr (the package's convention,
        CONTRIBUTING.md "Progress"). The results are the same, bit for bit.

    Attributes
    ----------
    minirocket_ : MiniRocket
        The fitted transformer.
    scaler_ : StandardScaler
        The fitted scaler.
    ridge_ : RidgeCV
        The fitted ridge.
    n_channels_ : int
        The number of channels.
    n_features_in_ : int
        The number of channels too, as tslearn's ``n_features_in_`` (2-D input is one channel).
    n_timepoints_ : int
        The fitted length: ``predict`` takes series of that length only, as the transformers.
    device_ : torch.device
        Where it computes; ``predict`` moves X there.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> wave = np.sin(np.linspace(0, 6, 30))
    >>> X = np.concatenate([rng.randn(6, 1, 30) + wave, rng.randn(6, 1, 30) - wave]).astype(np.float32)
    >>> y = X[:, 0, :].mean(axis=1)  # a target per case
    >>> from softdtw_torch.rocket import MiniRocketRegressor
    >>> reg = MiniRocketRegressor(n_kernels=84, random_state=0).fit(X, y)
    >>> prediction = reg.predict(X)
    >>> prediction.shape, prediction.dtype
    ((12,), dtype('float64'))
    """

    def __init__(self, n_kernels: int = 10_000, max_dilations_per_kernel: int = 32, random_state: Any = None,
                 device: Device = None, alphas: Sequence[float] = DEFAULT_ALPHAS, verbose: bool = False):
        self.n_kernels = n_kernels
        self.max_dilations_per_kernel = max_dilations_per_kernel
        self.random_state = random_state
        self.device = device
        self.alphas = alphas
        self.verbose = verbose


class MultiRocketRegressor(_MultiRocketTransform, _PipelineRegressor):
    """aeon's ``MultiRocketRegressor`` (Tan et al. 2022), with every stage in torch.

    ``MultiRocket(n_kernels, max_dilations_per_kernel, n_features_per_kernel)`` features (float32,
    bit-identical to aeon's for the same ``random_state``; no normalisation, as aeon's pipeline)
    -> ``StandardScaler(with_mean=False)`` (sklearn's bits) -> ``RidgeCV(alphas)`` (sklearn's
    ``alpha_``). aeon's ``rocket_transform`` parameter is not supported either (aeon 1.6 stores it
    and never reads it).

    Input X: (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints) (one channel), numpy or
    tensor, equal-length series (lists of series of different lengths are not supported); NaN and
    inf are refused (ValueError). y: numeric, (n_cases,) as aeon's, or (n_cases, n_targets)
    (multi-output, as ``RidgeCV``). Errors name the regressor, those of the transformer included.

    ``predict`` returns float64 values (numpy for numpy input, a tensor for tensor input), from the
    float64 ridge: aeon's regressors return float32 (sklearn's ``RidgeCV`` casts its coefficients
    to the float32 features' dtype), so ours agree with theirs to float32 rounding, with the same
    ``alpha_``. ``predict`` takes series of the fitted length only, as the transformers. A
    scikit-learn regressor (``RegressorMixin``: ``score`` is R²).

    aeon's ``estimator`` (another final regressor) and ``n_jobs`` are not supported: the ridge is
    always ``RidgeCV``, in float64 on the working device, and the CPU work uses torch's threads.

    Parameters
    ----------
    n_kernels : int, default 10_000
        Number of kernels (aeon's regressor's 10,000).
    max_dilations_per_kernel : int, default 32
        int >= 1 (aeon's 32).
    n_features_per_kernel : int, default 4
        Pooling features per kernel and representation: 4 (aeon's default, and the only value
        MultiRocket takes: aeon's transform always writes its four pooling operators, and corrupts
        memory for other values).
    random_state : None, int or numpy.random.RandomState, default None
        MultiRocket's (aeon's rule).
    device : None, str or torch.device, default None
        Where features and the ridge are computed; None = X's device (CPU for numpy).
    alphas : tuple of float, optional
        The ridge's candidate regularisations; default aeon's ``logspace(-3, 3, 10)``.
    verbose : bool, default ``False``
        Not one of aeon's parameters: report the stages of ``fit`` (transformer fitted, features
        computed, scaled, ridge fitted) and of ``predict`` (features computed, scaled): a tqdm bar
        when tqdm is installed, else a few lines on stderr (the package's convention,
        CONTRIBUTING.md "Progress"). The results are the same, bit for bit.

    Attributes
    ----------
    multirocket_ : MultiRocket
        The fitted transformer.
    scaler_ : StandardScaler
        The fitted scaler.
    ridge_ : RidgeCV
        The fitted ridge.
    n_channels_ : int
        The number of channels.
    n_features_in_ : int
        The number of channels too, as tslearn's ``n_features_in_`` (2-D input is one channel).
    n_timepoints_ : int
        The fitted length: ``predict`` takes series of that length only, as the transformers.
    device_ : torch.device
        Where it computes; ``predict`` moves X there.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> wave = np.sin(np.linspace(0, 6, 30))
    >>> X = np.concatenate([rng.randn(6, 1, 30) + wave, rng.randn(6, 1, 30) - wave]).astype(np.float32)
    >>> y = X[:, 0, :].mean(axis=1)  # a target per case
    >>> from softdtw_torch.rocket import MultiRocketRegressor
    >>> reg = MultiRocketRegressor(n_kernels=84, random_state=0).fit(X, y)
    >>> prediction = reg.predict(X)
    >>> prediction.shape, prediction.dtype
    ((12,), dtype('float64'))
    """

    def __init__(self, n_kernels: int = 10_000, max_dilations_per_kernel: int = 32, n_features_per_kernel: int = 4,
                 random_state: Any = None, device: Device = None, alphas: Sequence[float] = DEFAULT_ALPHAS,
                 verbose: bool = False):
        self.n_kernels = n_kernels
        self.max_dilations_per_kernel = max_dilations_per_kernel
        self.n_features_per_kernel = n_features_per_kernel
        self.random_state = random_state
        self.device = device
        self.alphas = alphas
        self.verbose = verbose


class HydraRegressor(_HydraTransform, _PipelineRegressor):
    """aeon's ``HydraRegressor`` (Dempster et al. 2023), with every stage in torch.

    ``HydraTransformer(n_kernels, n_groups)`` features (aeon's kernels for the same
    ``random_state``, aeon's features within the tolerance of docs/user_guide/rocket.md) -> ``SparseScaler`` (aeon's
    bits) -> ``RidgeCV(alphas)``. Series need 6 or more time points (as aeon's).

    Input X: (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints) (one channel), numpy or
    tensor, equal-length series (lists of series of different lengths are not supported); NaN and
    inf are refused (ValueError). y: numeric, (n_cases,) as aeon's, or (n_cases, n_targets)
    (multi-output, as ``RidgeCV``). Errors name the regressor, those of the transformer included.

    ``predict`` returns float64 values (numpy for numpy input, a tensor for tensor input), from the
    float64 ridge: aeon's regressors return float32 (sklearn's ``RidgeCV`` casts its coefficients
    to the float32 features' dtype), so ours agree with theirs to float32 rounding, with the same
    ``alpha_``. ``predict`` takes series of the fitted length only, as the transformers. A
    scikit-learn regressor (``RegressorMixin``: ``score`` is R²).

    aeon's ``estimator`` (another final regressor) and ``n_jobs`` are not supported: the ridge is
    always ``RidgeCV``, in float64 on the working device, and the CPU work uses torch's threads.

    Parameters
    ----------
    n_kernels : int, default 8
        Kernels per group (aeon's 8).
    n_groups : int, default 64
        Groups per dilation (aeon's 64).
    random_state : None, int or numpy.random.RandomState, default None
        aeon's rule.
    device : None, str or torch.device, default None
        Where features and the ridge are computed; None = X's device (CPU for numpy).
    alphas : tuple of float, optional
        The ridge's candidate regularisations; default aeon's ``logspace(-3, 3, 10)``.
    verbose : bool, default ``False``
        Not one of aeon's parameters: report the stages of ``fit`` (transformer fitted, features
        computed, scaled, ridge fitted) and of ``predict`` (features computed, scaled): a tqdm bar
        when tqdm is installed, else a few lines on stderr (the package's convention,
        CONTRIBUTING.md "Progress"). The results are the same, bit for bit.

    Attributes
    ----------
    hydra_ : HydraTransformer
        The fitted transformer.
    scaler_ : SparseScaler
        The fitted scaler.
    ridge_ : RidgeCV
        The fitted ridge.
    n_channels_ : int
        The number of channels.
    n_features_in_ : int
        The number of channels too, as tslearn's ``n_features_in_`` (2-D input is one channel).
    n_timepoints_ : int
        The fitted length: ``predict`` takes series of that length only, as the transformers.
    device_ : torch.device
        Where it computes; ``predict`` moves X there.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> wave = np.sin(np.linspace(0, 6, 30))
    >>> X = np.concatenate([rng.randn(6, 1, 30) + wave, rng.randn(6, 1, 30) - wave]).astype(np.float32)
    >>> y = X[:, 0, :].mean(axis=1)  # a target per case
    >>> from softdtw_torch.rocket import HydraRegressor
    >>> reg = HydraRegressor(n_kernels=4, n_groups=8, random_state=0).fit(X, y)
    >>> prediction = reg.predict(X)
    >>> prediction.shape, prediction.dtype
    ((12,), dtype('float64'))
    """

    def __init__(self, n_kernels: int = 8, n_groups: int = 64, random_state: Any = None, device: Device = None,
                 alphas: Sequence[float] = DEFAULT_ALPHAS, verbose: bool = False):
        self.n_kernels = n_kernels
        self.n_groups = n_groups
        self.random_state = random_state
        self.device = device
        self.alphas = alphas
        self.verbose = verbose


class MultiRocketHydraRegressor(_MultiRocketHydraTransform, _PipelineRegressor):
    """aeon's ``MultiRocketHydraRegressor`` (Dempster et al. 2023), with every stage in torch.

    ``HydraTransformer(n_kernels, n_groups)`` features scaled by ``SparseScaler``, next to
    ``MultiRocket()`` features (aeon's default transform, bit-identical to aeon's) scaled by
    ``StandardScaler()`` -> ``RidgeCV(alphas)``. Series need 10 or more time points (MultiRocket's,
    as aeon's).

    Input X: (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints) (one channel), numpy or
    tensor, equal-length series (lists of series of different lengths are not supported); NaN and
    inf are refused (ValueError). y: numeric, (n_cases,) as aeon's, or (n_cases, n_targets)
    (multi-output, as ``RidgeCV``). Errors name the regressor, those of the transformer included.

    ``predict`` returns float64 values (numpy for numpy input, a tensor for tensor input), from the
    float64 ridge: aeon's regressors return float32 (sklearn's ``RidgeCV`` casts its coefficients
    to the float32 features' dtype), so ours agree with theirs to float32 rounding, with the same
    ``alpha_``. ``predict`` takes series of the fitted length only, as the transformers. A
    scikit-learn regressor (``RegressorMixin``: ``score`` is R²).

    aeon's ``estimator`` (another final regressor) and ``n_jobs`` are not supported: the ridge is
    always ``RidgeCV``, in float64 on the working device, and the CPU work uses torch's threads.

    Parameters
    ----------
    n_kernels : int, default 8
        Hydra's kernels per group (aeon's 8).
    n_groups : int, default 64
        Hydra's groups per dilation (aeon's 64).
    random_state : None, int or numpy.random.RandomState, default None
        Given to both transforms (aeon's rule; a RandomState draws Hydra's seed first).
    device : None, str or torch.device, default None
        Where features and the ridge are computed; None = X's device (CPU for numpy).
    alphas : tuple of float, optional
        The ridge's candidate regularisations; default aeon's ``logspace(-3, 3, 10)``.
    verbose : bool, default ``False``
        Not one of aeon's parameters: report the stages of ``fit`` (transformer fitted, features
        computed, scaled, ridge fitted) and of ``predict`` (features computed, scaled): a tqdm bar
        when tqdm is installed, else a few lines on stderr (the package's convention,
        CONTRIBUTING.md "Progress"). The results are the same, bit for bit.

    Attributes
    ----------
    features_ : object
        The fitted transformers, ``features_.hydra_`` and ``features_.multirocket_``.
    scaler_ : object
        The fitted scalers, ``SparseScaler`` on Hydra's features and ``StandardScaler`` on
        MultiRocket's, side by side.
    ridge_ : RidgeCV
        The fitted ridge.
    n_channels_ : int
        The number of channels.
    n_features_in_ : int
        The number of channels too, as tslearn's ``n_features_in_`` (2-D input is one channel).
    n_timepoints_ : int
        The fitted length: ``predict`` takes series of that length only, as the transformers.
    device_ : torch.device
        Where it computes; ``predict`` moves X there.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> wave = np.sin(np.linspace(0, 6, 30))
    >>> X = np.concatenate([rng.randn(6, 1, 30) + wave, rng.randn(6, 1, 30) - wave]).astype(np.float32)
    >>> y = X[:, 0, :].mean(axis=1)  # a target per case
    >>> from softdtw_torch.rocket import MultiRocketHydraRegressor
    >>> reg = MultiRocketHydraRegressor(n_kernels=4, n_groups=8, random_state=0).fit(X, y)
    >>> prediction = reg.predict(X)
    >>> prediction.shape, prediction.dtype
    ((12,), dtype('float64'))
    """

    def __init__(self, n_kernels: int = 8, n_groups: int = 64, random_state: Any = None, device: Device = None,
                 alphas: Sequence[float] = DEFAULT_ALPHAS, verbose: bool = False):
        self.n_kernels = n_kernels
        self.n_groups = n_groups
        self.random_state = random_state
        self.device = device
        self.alphas = alphas
        self.verbose = verbose
