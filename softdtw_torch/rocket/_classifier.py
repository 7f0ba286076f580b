"""The ROCKET-family classifiers, ``RocketClassifier``, ``MiniRocketClassifier``,
``MultiRocketClassifier``, ``HydraClassifier`` and ``MultiRocketHydraClassifier``: aeon's classifiers of
the same names (aeon/classification/convolution_based),

    transform  ->  StandardScaler(with_mean=False)  ->  RidgeClassifierCV(alphas=logspace(-3, 3, 10),
                                                                          class_weight=...)

with every stage in torch, so the whole pipeline runs on the device of the data (CPU or CUDA).
The Hydra pipelines scale as aeon's do: ``SparseScaler`` on Hydra's features (and
``StandardScaler()`` on MultiRocket's, side by side, for MultiRocket-Hydra). Each is the common
pipeline (``_pipeline``) with a transformer mixin, ending in ``RidgeClassifierCV`` (``_ridge``); the
regressors in ``_regressor`` are the same pipelines ending in ``RidgeCV``.
"""
from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from torch import Tensor

from .._base import NotFittedError
from ._input import ArrayLike, Device, _out_like
from ._pipeline import (_HydraTransform, _MiniRocketTransform, _MultiRocketHydraTransform, _MultiRocketTransform,
                        _RocketPipeline, _RocketTransform)
from ._ridge import DEFAULT_ALPHAS, RidgeClassifierCV, _class_sample_weights, _labels
from ._scalers import SparseScaler, StandardScaler

__all__ = ["HydraClassifier", "MiniRocketClassifier", "MultiRocketClassifier", "MultiRocketHydraClassifier",
           "RidgeClassifierCV", "RocketClassifier", "SparseScaler", "StandardScaler", "NotFittedError"]


class _PipelineClassifier(ClassifierMixin, _RocketPipeline):
    """A ROCKET-family classifier: the pipeline ending in ``RidgeClassifierCV(alphas,
    class_weight)``; ``predict``, ``decision_function``, aeon's ``predict_proba``, ``classes_``."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scikit-learn's score check fits make_blobs' 2 features, i.e. series of 2 time points,
        # which no ROCKET transform learns from (Rocket's normalisation reduces them to ±1;
        # MiniRocket and MultiRocket refuse series that short): its accuracy bar is out of reach.
        tags.classifier_tags.poor_score = True
        return tags

    def _read_target(self, y: Any, n_cases: int) -> np.ndarray:
        name = type(self).__name__
        labels = _labels(y, n_cases, name)
        _class_sample_weights(self.class_weight, labels, name)  # its errors, before the transform
        return labels

    def _make_ridge(self) -> RidgeClassifierCV:
        return RidgeClassifierCV(alphas=self.alphas, class_weight=self.class_weight)

    def fit(self, X: ArrayLike, y: Any) -> "_PipelineClassifier":
        """Fit the transformer on X, then the scaler and the ridge classifier on its features.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, [n_channels,] n_timepoints), finite, non-empty.
        y : numpy.ndarray, torch.Tensor or list
            (n_cases,) labels, two classes or more.

        Returns
        -------
        self : object
            The fitted classifier.

        Raises
        ------
        ValueError
            Bad input, labels, ``class_weight`` or parameters (the transformer's errors included, named
            after the classifier).
        TypeError
            Parameters of the wrong types.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.RandomState(0)
        >>> wave = np.sin(np.linspace(0, 6, 30))
        >>> X = np.concatenate([rng.randn(6, 1, 30) + wave, rng.randn(6, 1, 30) - wave]).astype(np.float32)
        >>> y = np.array(["a"] * 6 + ["b"] * 6)
        >>> from softdtw_torch.rocket import MiniRocketClassifier
        >>> clf = MiniRocketClassifier(n_kernels=84, random_state=0).fit(X, y)
        >>> clf.n_channels_, clf.n_timepoints_, clf.device_
        (1, 30, device(type='cpu'))
        """
        super().fit(X, y)
        self.classes_ = self.ridge_.classes_
        return self

    def decision_function(self, X: ArrayLike) -> Union[Tensor, np.ndarray]:
        """The ridge's scores, float64 (see ``RidgeClassifierCV.decision_function``).

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, [n_channels,] n_timepoints), of the fitted channels and length.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            (n,) for two classes, else (n, n_classes). Tensor in (on its device), tensor out; numpy
            otherwise.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another channel count or length than in fit, NaN or inf.
        """
        features = self._features(X, "decision_function")  # checks fitted first
        return _out_like(self.ridge_._scores(features), X)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted labels.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, [n_channels,] n_timepoints), of the fitted channels and length.

        Returns
        -------
        numpy.ndarray
            (n_cases,) labels, of ``classes_``'s dtype.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another channel count or length than in fit, NaN or inf.
        """
        features = self._features(X, "predict")  # checks fitted first
        return self.ridge_.predict(features)

    def predict_proba(self, X: ArrayLike) -> Union[Tensor, np.ndarray]:
        """aeon's ``predict_proba`` for a ridge (which gives no probabilities).

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, [n_channels,] n_timepoints), of the fitted channels and length.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            float64 (n_cases, n_classes), 1 in the column (in ``classes_`` order) of ``predict``'s
            class, 0 elsewhere. Tensor in (on its device), tensor out; numpy otherwise.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another channel count or length than in fit, NaN or inf.
        """
        features = self._features(X, "predict_proba")  # checks fitted first
        index = self.ridge_._class_index(self.ridge_._scores(features))
        proba = np.zeros((index.shape[0], len(self.classes_)))
        proba[np.arange(index.shape[0]), index] = 1.0
        return _out_like(torch.from_numpy(proba), X)


# ----------------------------------------------------------------------------------------------
# The classifiers
# ----------------------------------------------------------------------------------------------

class RocketClassifier(_RocketTransform, _PipelineClassifier):
    """ROCKET classifier (Dempster et al. 2020) as aeon builds it, with every stage in torch.

    ``Rocket(n_kernels)`` features (2·n_kernels per case) -> ``StandardScaler(with_mean=False)``
    -> ``RidgeClassifierCV(alphas, class_weight)``. Same kernels as aeon for the same
    ``random_state``; the features are ``Rocket``'s (default ``accumulate="float32_fma"``:
    bit-identical to aeon's convolution source compiled with one FMA per term, within float32
    rounding of aeon 1.6's own transform, not bit-identical to it; see ``Rocket``); the scaler's
    output is sklearn's bit for bit, and the ridge gives sklearn's ``alpha_`` and predictions
    (tests/estimators/test_rocket_classifier.py::test_pipeline_on_aeon_rocket_features). Predictions
    agree with aeon's ``RocketClassifier`` on >= 99% of test cases
    (tests/estimators/test_rocket_classifier.py::test_rocket_classifier_accuracy).

    aeon's ``estimator`` (another final classifier) and ``n_jobs`` are not supported: the ridge is
    always ``RidgeClassifierCV``, in float64 on the working device, and the CPU work uses torch's
    threads.

    Input X: (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints) (one channel), numpy or
    tensor, equal-length series (lists of series of different lengths are not supported); NaN and
    inf are refused (ValueError). y: n_cases labels of any sortable type. Errors name the
    classifier, those of the transformer included.

    ``predict`` returns numpy labels; ``decision_function`` the ridge's float64 scores;
    ``predict_proba`` is aeon's for a ridge (which gives no probabilities): the one-hot encoding of
    ``predict``, float64 (n_cases, n_classes) in ``classes_`` order. Those two return a tensor for
    tensor input. ``predict`` takes series of the fitted length only, as the transformers. A
    scikit-learn classifier (``ClassifierMixin``: ``score`` is the accuracy).

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
    class_weight : None, 'balanced' or dict, default None
        The ridge's ``class_weight`` (see ``RidgeClassifierCV``), as aeon's.
    verbose : bool, default ``False``
        Not one of aeon's parameters: report the stages of ``fit`` (transformer fitted, features
        computed, scaled, ridge fitted) and of ``predict``, ``decision_function`` and
        ``predict_proba`` (features computed, scaled): a tqdm bar when tqdm is installed, else a
        few lines on stderr (the package's convention, CONTRIBUTING.md "Progress"). The results are
        the same, bit for bit.

    Attributes
    ----------
    rocket_ : Rocket
        The fitted transformer.
    scaler_ : StandardScaler
        The fitted scaler.
    ridge_ : RidgeClassifierCV
        The fitted ridge classifier.
    classes_ : numpy.ndarray
        The sorted class labels.
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
    Rocket : the transformer.
    RocketRegressor : the same pipeline for regression.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> wave = np.sin(np.linspace(0, 6, 30))
    >>> X = np.concatenate([rng.randn(6, 1, 30) + wave, rng.randn(6, 1, 30) - wave]).astype(np.float32)
    >>> y = np.array(["a"] * 6 + ["b"] * 6)
    >>> from softdtw_torch.rocket import RocketClassifier
    >>> clf = RocketClassifier(n_kernels=100, random_state=0).fit(X, y)
    >>> clf.classes_.tolist()
    ['a', 'b']
    >>> bool((clf.predict(X) == y).all())
    True
    >>> clf.predict_proba(X).shape, clf.decision_function(X).shape
    ((12, 2), (12,))
    """

    def __init__(self, n_kernels: int = 10_000, normalise: bool = True, random_state: Any = None,
                 device: Device = None, accumulate: str = "float32_fma",
                 alphas: Sequence[float] = DEFAULT_ALPHAS, class_weight: Any = None, verbose: bool = False):
        self.n_kernels = n_kernels
        self.normalise = normalise
        self.random_state = random_state
        self.device = device
        self.accumulate = accumulate
        self.alphas = alphas
        self.class_weight = class_weight
        self.verbose = verbose


class MiniRocketClassifier(_MiniRocketTransform, _PipelineClassifier):
    """aeon's ``MiniRocketClassifier`` (Dempster et al. 2021), with every stage in torch.

    ``MiniRocket(n_kernels, max_dilations_per_kernel)`` features (float32, bit-identical to
    aeon's ``MiniRocket.transform`` for the same ``random_state``) ->
    ``StandardScaler(with_mean=False)`` (sklearn's bits) -> ``RidgeClassifierCV(alphas,
    class_weight)`` (sklearn's ``alpha_`` and predictions): the same predictions as aeon's
    classifier (tests/estimators/test_rocket_family.py).

    aeon's ``estimator`` (another final classifier) and ``n_jobs`` are not supported: the ridge is
    always ``RidgeClassifierCV``, in float64 on the working device, and the CPU work uses torch's
    threads. Series need 9 or more time points (as aeon's).

    Input X: (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints) (one channel), numpy or
    tensor, equal-length series (lists of series of different lengths are not supported); NaN and
    inf are refused (ValueError). y: n_cases labels of any sortable type. Errors name the
    classifier, those of the transformer included.

    ``predict`` returns numpy labels; ``decision_function`` the ridge's float64 scores;
    ``predict_proba`` is aeon's for a ridge (which gives no probabilities): the one-hot encoding of
    ``predict``, float64 (n_cases, n_classes) in ``classes_`` order. Those two return a tensor for
    tensor input. ``predict`` takes series of the fitted length only, as the transformers. A
    scikit-learn classifier (``ClassifierMixin``: ``score`` is the accuracy).

    Parameters
    ----------
    n_kernels : int, default 10_000
        Number of features, rounded down to a multiple of 84 (84 when smaller), as aeon.
    max_dilations_per_kernel : int, default 32
        int >= 1 (aeon's 32).
    class_weight : None, 'balanced' or dict, default None
        The ridge's ``class_weight`` (see ``RidgeClassifierCV``).
    random_state : None, int or numpy.random.RandomState, default None
        MiniRocket's (aeon's rule).
    device : None, str or torch.device, default None
        Where features and the ridge are computed; None = X's device (CPU for numpy).
        MiniRocket's ``fit`` (dilations and biases) runs on the CPU.
    alphas : tuple of float, optional
        The ridge's candidate regularisations; default aeon's ``logspace(-3, 3, 10)``.
    verbose : bool, default ``False``
        Not one of aeon's parameters: report the stages of ``fit`` (transformer fitted, features
        computed, scaled, ridge fitted) and of ``predict``, ``decision_function`` and
        ``predict_proba`` (features computed, scaled): a tqdm bar when tqdm is installed, else a
        few lines on stderr (the package's convention, CONTRIBUTING.md "Progress"). The results are
        the same, bit for bit.

    Attributes
    ----------
    minirocket_ : MiniRocket
        The fitted transformer.
    scaler_ : StandardScaler
        The fitted scaler.
    ridge_ : RidgeClassifierCV
        The fitted ridge classifier.
    classes_ : numpy.ndarray
        The sorted class labels.
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
    >>> y = np.array(["a"] * 6 + ["b"] * 6)
    >>> from softdtw_torch.rocket import MiniRocketClassifier
    >>> clf = MiniRocketClassifier(n_kernels=84, random_state=0).fit(X, y)
    >>> clf.classes_.tolist()
    ['a', 'b']
    >>> bool((clf.predict(X) == y).all())
    True
    >>> clf.predict_proba(X).shape, clf.decision_function(X).shape
    ((12, 2), (12,))
    """

    def __init__(self, n_kernels: int = 10_000, max_dilations_per_kernel: int = 32, class_weight: Any = None,
                 random_state: Any = None, device: Device = None, alphas: Sequence[float] = DEFAULT_ALPHAS,
                 verbose: bool = False):
        self.n_kernels = n_kernels
        self.max_dilations_per_kernel = max_dilations_per_kernel
        self.class_weight = class_weight
        self.random_state = random_state
        self.device = device
        self.alphas = alphas
        self.verbose = verbose


class MultiRocketClassifier(_MultiRocketTransform, _PipelineClassifier):
    """aeon's ``MultiRocketClassifier`` (Tan et al. 2022), with every stage in torch.

    ``MultiRocket(n_kernels, max_dilations_per_kernel, n_features_per_kernel)`` features (float32,
    bit-identical to aeon's ``MultiRocket.transform`` for the same ``random_state``; no
    normalisation, as aeon's pipeline) -> ``StandardScaler(with_mean=False)`` (sklearn's bits) ->
    ``RidgeClassifierCV(alphas, class_weight)`` (sklearn's ``alpha_`` and predictions): the same
    predictions as aeon's classifier (tests/estimators/test_rocket_family.py).

    aeon's ``estimator`` (another final classifier) and ``n_jobs`` are not supported: the ridge is
    always ``RidgeClassifierCV``, in float64 on the working device, and the CPU work uses torch's
    threads.

    Input X: (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints) (one channel), numpy or
    tensor, equal-length series (lists of series of different lengths are not supported); NaN and
    inf are refused (ValueError). y: n_cases labels of any sortable type. Errors name the
    classifier, those of the transformer included.

    ``predict`` returns numpy labels; ``decision_function`` the ridge's float64 scores;
    ``predict_proba`` is aeon's for a ridge (which gives no probabilities): the one-hot encoding of
    ``predict``, float64 (n_cases, n_classes) in ``classes_`` order. Those two return a tensor for
    tensor input. ``predict`` takes series of the fitted length only, as the transformers. A
    scikit-learn classifier (``ClassifierMixin``: ``score`` is the accuracy).

    Parameters
    ----------
    n_kernels : int, default 10_000
        Number of kernels (aeon's classifier's 10,000; its transform's default is 6,250).
    max_dilations_per_kernel : int, default 32
        int >= 1 (aeon's 32).
    n_features_per_kernel : int, default 4
        Pooling features per kernel and representation: 4 (aeon's default, and the only value
        MultiRocket takes: aeon's transform always writes its four pooling operators, and corrupts
        memory for other values).
    class_weight : None, 'balanced' or dict, default None
        The ridge's ``class_weight`` (see ``RidgeClassifierCV``).
    random_state : None, int or numpy.random.RandomState, default None
        MultiRocket's (aeon's rule).
    device : None, str or torch.device, default None
        Where features and the ridge are computed; None = X's device (CPU for numpy).
    alphas : tuple of float, optional
        The ridge's candidate regularisations; default aeon's ``logspace(-3, 3, 10)``.
    verbose : bool, default ``False``
        Not one of aeon's parameters: report the stages of ``fit`` (transformer fitted, features
        computed, scaled, ridge fitted) and of ``predict``, ``decision_function`` and
        ``predict_proba`` (features computed, scaled): a tqdm bar when tqdm is installed, else a
        few lines on stderr (the package's convention, CONTRIBUTING.md "Progress"). The results are
        the same, bit for bit.

    Attributes
    ----------
    multirocket_ : MultiRocket
        The fitted transformer.
    scaler_ : StandardScaler
        The fitted scaler.
    ridge_ : RidgeClassifierCV
        The fitted ridge classifier.
    classes_ : numpy.ndarray
        The sorted class labels.
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
    >>> y = np.array(["a"] * 6 + ["b"] * 6)
    >>> from softdtw_torch.rocket import MultiRocketClassifier
    >>> clf = MultiRocketClassifier(n_kernels=84, random_state=0).fit(X, y)
    >>> clf.classes_.tolist()
    ['a', 'b']
    >>> bool((clf.predict(X) == y).all())
    True
    >>> clf.predict_proba(X).shape, clf.decision_function(X).shape
    ((12, 2), (12,))
    """

    def __init__(self, n_kernels: int = 10_000, max_dilations_per_kernel: int = 32, n_features_per_kernel: int = 4,
                 class_weight: Any = None, random_state: Any = None, device: Device = None,
                 alphas: Sequence[float] = DEFAULT_ALPHAS, verbose: bool = False):
        self.n_kernels = n_kernels
        self.max_dilations_per_kernel = max_dilations_per_kernel
        self.n_features_per_kernel = n_features_per_kernel
        self.class_weight = class_weight
        self.random_state = random_state
        self.device = device
        self.alphas = alphas
        self.verbose = verbose



class HydraClassifier(_HydraTransform, _PipelineClassifier):
    """aeon's ``HydraClassifier`` (Dempster et al. 2023), with every stage in torch.

    ``HydraTransformer(n_kernels, n_groups)`` features -> ``SparseScaler`` (aeon's ``_SparseScaler``,
    its bits) -> ``RidgeClassifierCV(alphas, class_weight)``: the same predictions as aeon's
    classifier on the bundled data sets (tests/estimators/test_rocket_family.py).

    Hydra's features are ``HydraTransformer``'s: aeon's kernels for the same ``random_state`` and
    aeon's features within the tolerance docs/user_guide/rocket.md states (tests/rocket/test_hydra.py). Series
    need 6 or more time points (10 with MultiRocket), as aeon's.

    aeon's ``n_jobs`` is not supported: the CPU work uses torch's threads; the ridge is always
    ``RidgeClassifierCV``, in float64 on the working device.

    Input X: (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints) (one channel), numpy or
    tensor, equal-length series (lists of series of different lengths are not supported); NaN and
    inf are refused (ValueError). y: n_cases labels of any sortable type. Errors name the
    classifier, those of the transformer included.

    ``predict`` returns numpy labels; ``decision_function`` the ridge's float64 scores;
    ``predict_proba`` is aeon's for a ridge (which gives no probabilities): the one-hot encoding of
    ``predict``, float64 (n_cases, n_classes) in ``classes_`` order. Those two return a tensor for
    tensor input. ``predict`` takes series of the fitted length only, as the transformers. A
    scikit-learn classifier (``ClassifierMixin``: ``score`` is the accuracy).

    Parameters
    ----------
    n_kernels : int, default 8
        Kernels per group (aeon's 8).
    n_groups : int, default 64
        Groups per dilation (aeon's 64).
    class_weight : None, 'balanced' or dict, default None
        The ridge's ``class_weight``.
    random_state : None, int or numpy.random.RandomState, default None
        aeon's rule.
    device : None, str or torch.device, default None
        Where features and the ridge are computed; None = X's device (CPU for numpy).
    alphas : tuple of float, optional
        The ridge's candidate regularisations; default aeon's ``logspace(-3, 3, 10)``.
    verbose : bool, default ``False``
        Not one of aeon's parameters: report the stages of ``fit`` (transformer fitted, features
        computed, scaled, ridge fitted) and of ``predict``, ``decision_function`` and
        ``predict_proba`` (features computed, scaled): a tqdm bar when tqdm is installed, else a
        few lines on stderr (the package's convention, CONTRIBUTING.md "Progress"). The results are
        the same, bit for bit.

    Attributes
    ----------
    hydra_ : HydraTransformer
        The fitted transformer.
    scaler_ : SparseScaler
        The fitted scaler.
    ridge_ : RidgeClassifierCV
        The fitted ridge classifier.
    classes_ : numpy.ndarray
        The sorted class labels.
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
    >>> y = np.array(["a"] * 6 + ["b"] * 6)
    >>> from softdtw_torch.rocket import HydraClassifier
    >>> clf = HydraClassifier(n_kernels=4, n_groups=8, random_state=0).fit(X, y)
    >>> clf.classes_.tolist()
    ['a', 'b']
    >>> bool((clf.predict(X) == y).all())
    True
    >>> clf.predict_proba(X).shape, clf.decision_function(X).shape
    ((12, 2), (12,))
    """

    def __init__(self, n_kernels: int = 8, n_groups: int = 64, class_weight: Any = None, random_state: Any = None,
                 device: Device = None, alphas: Sequence[float] = DEFAULT_ALPHAS, verbose: bool = False):
        self.n_kernels = n_kernels
        self.n_groups = n_groups
        self.class_weight = class_weight
        self.random_state = random_state
        self.device = device
        self.alphas = alphas
        self.verbose = verbose


class MultiRocketHydraClassifier(_MultiRocketHydraTransform, _PipelineClassifier):
    """aeon's ``MultiRocketHydraClassifier`` (Dempster et al. 2023), with every stage in torch.

    ``HydraTransformer(n_kernels, n_groups)`` features scaled by ``SparseScaler``, next to
    ``MultiRocket()`` features (aeon's default transform: 6,250 kernels, bit-identical to aeon's)
    scaled by ``StandardScaler()`` -> ``RidgeClassifierCV(alphas, class_weight)``: the same
    predictions as aeon's classifier on the bundled data sets (tests/estimators/test_rocket_family.py).

    Hydra's features are ``HydraTransformer``'s: aeon's kernels for the same ``random_state`` and
    aeon's features within the tolerance docs/user_guide/rocket.md states (tests/rocket/test_hydra.py). Series
    need 6 or more time points (10 with MultiRocket), as aeon's.

    aeon's ``n_jobs`` is not supported: the CPU work uses torch's threads; the ridge is always
    ``RidgeClassifierCV``, in float64 on the working device.

    Input X: (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints) (one channel), numpy or
    tensor, equal-length series (lists of series of different lengths are not supported); NaN and
    inf are refused (ValueError). y: n_cases labels of any sortable type. Errors name the
    classifier, those of the transformer included.

    ``predict`` returns numpy labels; ``decision_function`` the ridge's float64 scores;
    ``predict_proba`` is aeon's for a ridge (which gives no probabilities): the one-hot encoding of
    ``predict``, float64 (n_cases, n_classes) in ``classes_`` order. Those two return a tensor for
    tensor input. ``predict`` takes series of the fitted length only, as the transformers. A
    scikit-learn classifier (``ClassifierMixin``: ``score`` is the accuracy).

    Parameters
    ----------
    n_kernels : int, default 8
        Hydra's kernels per group (aeon's 8).
    n_groups : int, default 64
        Hydra's groups per dilation (aeon's 64).
    class_weight : None, 'balanced' or dict, default None
        The ridge's ``class_weight``.
    random_state : None, int or numpy.random.RandomState, default None
        Given to both transforms (aeon's rule; a RandomState draws Hydra's seed first).
    device : None, str or torch.device, default None
        Where features and the ridge are computed; None = X's device (CPU for numpy).
    alphas : tuple of float, optional
        The ridge's candidate regularisations; default aeon's ``logspace(-3, 3, 10)``.
    verbose : bool, default ``False``
        Not one of aeon's parameters: report the stages of ``fit`` (transformer fitted, features
        computed, scaled, ridge fitted) and of ``predict``, ``decision_function`` and
        ``predict_proba`` (features computed, scaled): a tqdm bar when tqdm is installed, else a
        few lines on stderr (the package's convention, CONTRIBUTING.md "Progress"). The results are
        the same, bit for bit.

    Attributes
    ----------
    features_ : object
        The fitted transformers, ``features_.hydra_`` and ``features_.multirocket_``.
    scaler_ : object
        The fitted scalers, ``SparseScaler`` on Hydra's features and ``StandardScaler`` on
        MultiRocket's, side by side.
    ridge_ : RidgeClassifierCV
        The fitted ridge classifier.
    classes_ : numpy.ndarray
        The sorted class labels.
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
    >>> y = np.array(["a"] * 6 + ["b"] * 6)
    >>> from softdtw_torch.rocket import MultiRocketHydraClassifier
    >>> clf = MultiRocketHydraClassifier(n_kernels=4, n_groups=8, random_state=0).fit(X, y)
    >>> clf.classes_.tolist()
    ['a', 'b']
    >>> bool((clf.predict(X) == y).all())
    True
    >>> clf.predict_proba(X).shape, clf.decision_function(X).shape
    ((12, 2), (12,))
    """

    def __init__(self, n_kernels: int = 8, n_groups: int = 64, class_weight: Any = None, random_state: Any = None,
                 device: Device = None, alphas: Sequence[float] = DEFAULT_ALPHAS, verbose: bool = False):
        self.n_kernels = n_kernels
        self.n_groups = n_groups
        self.class_weight = class_weight
        self.random_state = random_state
        self.device = device
        self.alphas = alphas
        self.verbose = verbose
