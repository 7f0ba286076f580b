"""The common base of the ROCKET-family classifiers and regressors (aeon's pipelines,
aeon/classification/convolution_based and aeon/regression/convolution_based)::

    transform  ->  StandardScaler(with_mean=False)  ->  ridge

with every stage in torch, on the device of the data, and the mixins that give a pipeline its
transformer (``Rocket``, ``MiniRocket``, ``MultiRocket``, Hydra's, Hydra and MultiRocket side by
side) and, for Hydra, its scaler. The classifiers are in ``_classifier``, the regressors in
``_regressor``.
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np
import torch
from sklearn.base import TransformerMixin
from torch import Tensor

from .._base import Estimator, _int_seed, check_device, series_tags
from .._errors import public_errors
from .._input import _check_int
from .._progress import Progress
from ._input import ArrayLike, Device, as_series_tensor, check_like_fit
from ._ridge import _check_alphas
from ._scalers import SparseScaler, StandardScaler, _BlockScaler


# ----------------------------------------------------------------------------------------------
# The pipelines: transform -> StandardScaler(with_mean=False) -> ridge
# ----------------------------------------------------------------------------------------------
class _RocketPipeline(Estimator):
    """The common base of the ROCKET-family classifiers and regressors (aeon's pipelines)::

        transformer  ->  StandardScaler(with_mean=False)  ->  ridge

    ``fit`` reads X as (n_cases, n_channels, n_timepoints) (2-D: one channel) on the working
    device (the ``device`` parameter, else X's, the CPU for numpy), checks y and the parameters
    before the transform, fits the transformer on X and transforms it (float32 features), fits the
    scaler (sklearn's bits) and the float64 ridge on the scaled features, all on that device.

    A subclass gives the transformer (a ``_*Transform`` mixin, first among its bases:
    ``_make_transformer``, the attribute it is stored under, its integer parameters) and the task
    (``_PipelineClassifier`` here, ``_PipelineRegressor`` in ``_regressor``: ``_read_target``,
    ``_make_ridge``); its ``__init__`` stores ``alphas``, ``device``, ``random_state``, ``verbose``
    and the transformer's parameters.
    """

    _fitted_attribute = "ridge_"
    _transformer_attribute = ""
    _int_parameters: Tuple[str, ...] = ("n_kernels",)

    def __sklearn_tags__(self):
        return series_tags(super().__sklearn_tags__())

    def _make_transformer(self, device: str) -> Any:
        raise NotImplementedError

    def _make_ridge(self) -> Estimator:
        raise NotImplementedError

    def _make_scaler(self, transformer: Any) -> Any:
        """The scaler between the fitted transformer and the ridge (aeon's Rocket pipelines'
        ``StandardScaler(with_mean=False)``; the Hydra pipelines' own)."""
        return StandardScaler(with_mean=False)

    def _read_target(self, y: Any, n_cases: int) -> Any:
        """y checked (naming the estimator) in the form the ridge's ``fit`` takes."""
        raise NotImplementedError

    def _series(self, X: ArrayLike, device: Device) -> Tensor:
        """X as a (n, C, T) floating tensor on ``device``, checked finite and non-empty.

        The transformer gets a tensor, so its features come back as a tensor on that same device
        and the scaler and ridge run there too (no host round trip on CUDA)."""
        name = type(self).__name__
        x = as_series_tensor(X, name, device, finite=True)
        if x.numel() == 0:
            raise ValueError(f"{name}: expected a non-empty X, got shape {tuple(x.shape)}")
        return x

    def fit(self, X: ArrayLike, y: Any) -> "_RocketPipeline":
        """Fit the transformer on X, then the scaler and the ridge on its features.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints), finite, non-empty.
        y : numpy.ndarray, torch.Tensor or list
            The targets (labels for a classifier, numbers for a regressor).

        Returns
        -------
        self : object
            The fitted pipeline.

        Raises
        ------
        ValueError
            Bad input, targets or parameters (the transformer's errors included, named after the
            pipeline).
        TypeError
            Parameters of the wrong types.
        """
        name = type(self).__name__
        # The working device: the ``device`` parameter, else X's (CPU for numpy). predict uses
        # the same one, wherever its X lives.
        device = check_device(self.device, name) or (X.device if isinstance(X, Tensor) else "cpu")
        x = self._series(X, device)
        target = self._read_target(y, x.shape[0])
        _check_alphas(self.alphas, name)
        for parameter in self._int_parameters:
            _check_int(getattr(self, parameter), name, parameter, 1)
        if not (self.random_state is None or isinstance(self.random_state, np.random.RandomState)):
            # The type only (no seed is drawn here: the transformer draws it, by aeon's rule).
            _int_seed(self.random_state, name, check_range=False)
        transformer = self._make_transformer(str(x.device))
        # Progress by stage: the transformer reports nothing of its own (one bar per call).
        with Progress(self.verbose, f"{name}.fit", 4, unit="stages") as progress:
            with public_errors(name):  # the transformer's errors name the pipeline
                transformer.fit(x)
                progress.update(1, "transformer fitted")
                features = transformer.transform(x)
                progress.update(1, "features computed")
            scaler = self._make_scaler(transformer)
            scaled = scaler.fit_transform(features)
            progress.update(1, "features scaled")
            ridge = self._make_ridge().fit(scaled, target)
            progress.update(1, "ridge fitted")
        setattr(self, self._transformer_attribute, transformer)
        self.scaler_, self.ridge_ = scaler, ridge
        self.n_channels_ = self.n_features_in_ = x.shape[1]
        self.n_timepoints_ = x.shape[2]
        self.device_ = x.device
        return self

    def _features(self, X: ArrayLike, method: str) -> Tensor:
        """The scaled features of X (a float32 tensor on ``device_``), after the fitted check."""
        self._check_is_fitted(method)
        name = type(self).__name__
        x = self._series(X, self.device_)
        # x_lengths is not passed on: the pipelines transform series of fit's length only
        check_like_fit(name, x, self.n_channels_, self.n_timepoints_, lengths_accepted=False)
        with Progress(self.verbose, f"{name}.{method}", 2, unit="stages") as progress:
            with public_errors(name):
                features = getattr(self, self._transformer_attribute).transform(x)
            progress.update(1, "features computed")
            scaled = self.scaler_.transform(features)
            progress.update(1, "features scaled")
        return scaled


# The transformers. Each is imported where it is built, not at module level: that keeps
# ``import softdtw_torch.rocket`` free of import-order dependencies between its modules.
class _RocketTransform:
    """Builds ``Rocket(n_kernels, normalise, random_state, device, accumulate)``; stored as ``rocket_``."""

    _transformer_attribute = "rocket_"
    _int_parameters = ("n_kernels",)

    def _make_transformer(self, device: str) -> Any:
        from ._rocket import Rocket

        return Rocket(n_kernels=int(self.n_kernels), normalise=self.normalise, random_state=self.random_state,
                      device=device, accumulate=self.accumulate)


class _MiniRocketTransform:
    """Builds ``MiniRocket(n_kernels, max_dilations_per_kernel, random_state, device)``; stored as
    ``minirocket_``."""

    _transformer_attribute = "minirocket_"
    _int_parameters = ("n_kernels", "max_dilations_per_kernel")

    def _make_transformer(self, device: str) -> Any:
        from ._minirocket import MiniRocket

        return MiniRocket(n_kernels=int(self.n_kernels), max_dilations_per_kernel=int(self.max_dilations_per_kernel),
                          random_state=self.random_state, device=device)


class _MultiRocketTransform:
    """Builds ``MultiRocket(n_kernels, max_dilations_per_kernel, n_features_per_kernel,
    random_state, device)`` (``normalise=False``, aeon's pipelines' transform); stored as
    ``multirocket_``."""

    _transformer_attribute = "multirocket_"
    _int_parameters = ("n_kernels", "max_dilations_per_kernel", "n_features_per_kernel")

    def _make_transformer(self, device: str) -> Any:
        from ._multirocket import MultiRocket

        return MultiRocket(n_kernels=int(self.n_kernels), max_dilations_per_kernel=int(self.max_dilations_per_kernel),
                           n_features_per_kernel=int(self.n_features_per_kernel), normalise=False,
                           random_state=self.random_state, device=device)


class _HydraTransform:
    """Builds ``HydraTransformer(n_kernels, n_groups, random_state, device)``, scaled by
    ``SparseScaler`` (aeon's HydraClassifier and HydraRegressor); stored as ``hydra_``."""

    _transformer_attribute = "hydra_"
    _int_parameters = ("n_kernels", "n_groups")

    def _make_transformer(self, device: str) -> Any:
        from ._hydra import HydraTransformer

        return HydraTransformer(n_kernels=int(self.n_kernels), n_groups=int(self.n_groups),
                                random_state=self.random_state, device=device)

    def _make_scaler(self, transformer: Any) -> Any:
        return SparseScaler()


class _HydraMultiRocketFeatures(TransformerMixin, Estimator):
    """Hydra's features then MultiRocket's (aeon's default MultiRocket: 6,250 kernels), fitted in
    that order with the same ``random_state`` (a RandomState gives Hydra its seed first, as in
    aeon's MultiRocketHydraClassifier)."""

    _fitted_attribute = "multirocket_"

    def __init__(self, n_kernels: int, n_groups: int, random_state: Any, device: str):
        self.n_kernels = n_kernels
        self.n_groups = n_groups
        self.random_state = random_state
        self.device = device

    def fit(self, X: Tensor, y: Any = None) -> "_HydraMultiRocketFeatures":
        from ._hydra import HydraTransformer
        from ._multirocket import MultiRocket

        self.hydra_ = HydraTransformer(n_kernels=self.n_kernels, n_groups=self.n_groups,
                                       random_state=self.random_state, device=self.device).fit(X)
        self.multirocket_ = MultiRocket(random_state=self.random_state, device=self.device).fit(X)
        return self

    def transform(self, X: Tensor) -> Tensor:
        self._check_is_fitted("transform")
        return torch.cat([self.hydra_.transform(X), self.multirocket_.transform(X)], 1)


class _MultiRocketHydraTransform:
    """Builds Hydra and MultiRocket side by side, Hydra's features scaled by ``SparseScaler`` and
    MultiRocket's by ``StandardScaler()`` (aeon's MultiRocketHydraClassifier and
    MultiRocketHydraRegressor); stored as ``features_`` (``features_.hydra_``,
    ``features_.multirocket_``)."""

    _transformer_attribute = "features_"
    _int_parameters = ("n_kernels", "n_groups")

    def _make_transformer(self, device: str) -> Any:
        return _HydraMultiRocketFeatures(int(self.n_kernels), int(self.n_groups), self.random_state, device)

    def _make_scaler(self, transformer: Any) -> Any:
        hydra = transformer.hydra_
        split = int(hydra.weights_.shape[0] * hydra.weights_.shape[1] * 2 * hydra.weights_.shape[2]
                    * hydra.weights_.shape[3])
        return _BlockScaler(split, SparseScaler(), StandardScaler())
