"""ROCKET classification in torch: a standard scaler, a ridge classifier with leave-one-out
cross-validated alpha, and the ``RocketClassifier`` pipeline that chains them after ``Rocket``.

``RocketClassifier`` is aeon's ``RocketClassifier``:

    Rocket  ->  StandardScaler(with_mean=False)  ->  RidgeClassifierCV(alphas=logspace(-3, 3, 10))

with every stage in torch, so the whole pipeline runs on the device of the data (CPU or CUDA).

``RidgeClassifierCV`` computes what scikit-learn's ``RidgeClassifierCV(alphas=...)`` (``cv=None``,
``scoring=None``, no sample weights) computes (sklearn/linear_model/_ridge.py, ``_RidgeGCV``):

* targets: ``LabelBinarizer(pos_label=1, neg_label=-1)``: one ±1 column for two classes (+1 for
  ``classes_[1]``), one column per class otherwise;
* intercept by centering: X and the targets are centred on their column means; the intercept is
  ``mean(Y) - mean(X) @ coef``;
* ONE eigendecomposition for all alphas: of the Gram matrix ``Xc Xcᵀ`` when
  n_samples <= n_features ("gram" mode), of the covariance ``Xcᵀ Xc`` otherwise ("cov" mode);
* the exact leave-one-out residual of every sample and target for every alpha (the usual
  ``c / diag(G⁻¹)`` identity, with the intercept's correction term), and the alpha with the
  largest ``-mean(looe²)`` over all samples and targets; ties keep the first alpha in ``alphas``.

Everything is float64 (sklearn also casts to float64 for this estimator). In "cov" mode the
per-alpha work uses ``XV = Xc V`` once instead of forming ``V diag(D) Vᵀ`` per alpha as sklearn
does: the same quantities, fewer flops (n·p² once instead of p³ per alpha), so values agree with
sklearn to rounding, not bit for bit (neither do two BLAS libraries).
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from sklearn.base import ClassifierMixin, TransformerMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets
from torch import Tensor

from .._base import Estimator, NotFittedError, as_numeric_array, series_tags
from ._input import as_series_tensor, check_finite

__all__ = ["RidgeClassifierCV", "RocketClassifier", "StandardScaler", "NotFittedError"]

ArrayLike = Union[Tensor, np.ndarray, Sequence[Any]]

#: aeon's alphas, ``np.logspace(-3, 3, 10)``, as a tuple of floats (an immutable default).
DEFAULT_ALPHAS: Tuple[float, ...] = tuple(float(a) for a in np.logspace(-3, 3, 10))


# ----------------------------------------------------------------------------------------------
# Input helpers
# ----------------------------------------------------------------------------------------------
def _as_tensor(X: ArrayLike, name: str) -> Tensor:
    """A tensor view/copy of X (numpy, tensor, nested sequences, DataFrame...); integers/bools
    become float64."""
    t = X.detach() if isinstance(X, Tensor) else torch.as_tensor(as_numeric_array(X, name))
    if not t.is_floating_point():
        t = t.to(torch.float64)
    return t


def _check_2d(X: ArrayLike, name: str) -> Tensor:
    """X as a floating tensor of shape (n_samples, n_features), checked non-empty and finite."""
    t = _as_tensor(X, name)
    if t.dim() != 2:
        hint = (". Reshape your data: X.reshape(-1, 1) for a single feature, X.reshape(1, -1) for a "
                "single sample") if t.dim() == 1 else ""
        raise ValueError(f"{name}: expected X to be 2-D (n_samples, n_features), got {t.dim()}-D{hint}")
    if t.shape[0] < 1 or t.shape[1] < 1:
        raise ValueError(
            f"{name}: expected X with at least 1 sample and 1 feature, got shape {tuple(t.shape)}"
        )
    check_finite(t, name)
    return t


def _check_n_features(t: Tensor, n_features_in: int, name: str) -> None:
    # scikit-learn's wording (its checks and tools look for it).
    if t.shape[1] != n_features_in:
        raise ValueError(f"{name}: X has {t.shape[1]} features, but {name} is expecting "
                         f"{n_features_in} features as input (as in fit)")


def _labels(y: Any, n_expected: int, name: str) -> np.ndarray:
    """y as a 1-D numpy array of n_expected class labels (any type numpy can sort), checked to be
    classes (scikit-learn's ``check_classification_targets``: continuous values are refused), two
    or more."""
    if y is None:  # scikit-learn's wording
        raise ValueError(f"{name}: requires y to be passed, but the target y is None")
    if isinstance(y, Tensor):
        y = y.detach().cpu().numpy()
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:  # a column vector: accepted with sklearn's warning
        # The message starts with scikit-learn's words (its checks look for them).
        warnings.warn(f"A column-vector y was passed when a 1d array was expected ({name}: y of "
                      f"shape {y.shape} is read as y.ravel())", DataConversionWarning, stacklevel=3)
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{name}: expected y to be 1-D (n_samples,), got {y.ndim}-D")
    if y.shape[0] != n_expected:
        raise ValueError(
            f"{name}: expected y to have {n_expected} labels (one per case of X), got {y.shape[0]}"
        )
    check_classification_targets(y)
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError(f"{name}: expected at least 2 classes in y, got 1 class ({classes[0]!r}); a "
                         f"classifier needs two or more")
    return y


def _out_like(values: Tensor, like: Any) -> Union[Tensor, np.ndarray]:
    """Tensor in -> tensor out (on the input's device); anything else -> numpy."""
    if isinstance(like, Tensor):
        return values.to(like.device)
    return values.cpu().numpy()


# ----------------------------------------------------------------------------------------------
# StandardScaler
# ----------------------------------------------------------------------------------------------
class StandardScaler(TransformerMixin, Estimator):
    """scikit-learn's ``StandardScaler`` in torch (dense input, no sample weights).

    ``fit`` computes per feature the mean and the population variance (ddof 0) in float64 with
    sklearn's corrected two-pass formula, ``var = (Σ(x-m)² - (Σ(x-m))²/n) / n``; ``scale_`` is
    ``sqrt(var)``, set to 1 for features sklearn calls constant
    (``var <= n·eps·var + (n·mean·eps)²``, eps of float64), so a zero-variance feature is left
    unscaled instead of divided by zero. ``transform`` computes ``(x - mean_) / scale_`` in
    X's dtype with the statistics cast to it (float32 stays float32: sklearn's bits), on the fit
    device; tensor in, tensor out (on X's device); numpy in, numpy out. Unlike sklearn, NaN is
    rejected (sklearn ignores it in fit). A scikit-learn transformer (``TransformerMixin``: its
    ``fit_transform``; ``n_features_in_``; float32 and float64 are preserved).

    Args:
        with_mean: subtract the mean (ROCKET uses False: features stay non-negative PPVs and maxima).
        with_std: divide by the standard deviation.
    """

    _fitted_attribute = "mean_"

    def __init__(self, with_mean: bool = True, with_std: bool = True):
        self.with_mean = with_mean
        self.with_std = with_std

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def fit(self, X: ArrayLike, y: Any = None) -> "StandardScaler":
        """Learn ``mean_``, ``var_`` and ``scale_`` (float64 tensors on X's device) from X (n, p)."""
        x = _check_2d(X, "StandardScaler").to(torch.float64)
        n = x.shape[0]
        mean = x.sum(0) / n
        centred = x - mean
        correction = centred.sum(0)
        var = ((centred * centred).sum(0) - correction * correction / n) / n
        self.mean_ = mean
        self.var_ = var
        self.n_samples_seen_ = n
        self.n_features_in_ = x.shape[1]
        if self.with_std:
            eps = torch.finfo(torch.float64).eps
            constant = var <= n * eps * var + (n * mean * eps) ** 2
            self.scale_ = torch.where(constant, torch.ones_like(var), var.sqrt())
        else:
            self.scale_ = None
        return self

    def transform(self, X: ArrayLike) -> Union[Tensor, np.ndarray]:
        """Scale X (n, p) with the fitted statistics; returns X's dtype, on X's device."""
        self._check_is_fitted("transform")
        x = _check_2d(X, "StandardScaler")
        _check_n_features(x, self.n_features_in_, "StandardScaler")
        # As sklearn: the float64 statistics are cast to X's dtype and the arithmetic is done in
        # X's dtype, so float32 features give sklearn's float32 bits.
        out = x.to(self.mean_.device)
        if self.with_mean:
            out = out - self.mean_.to(out.dtype)
        if self.with_std:
            out = out / self.scale_.to(out.dtype)
        return _out_like(out, X)


# ----------------------------------------------------------------------------------------------
# RidgeClassifierCV
# ----------------------------------------------------------------------------------------------
def _check_alphas(alphas: Any, name: str) -> Tuple[float, ...]:
    values = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name}: expected alphas to be a non-empty 1-D sequence, got {alphas!r}")
    if not np.all(np.isfinite(values)) or not np.all(values > 0):
        raise ValueError(f"{name}: expected every alpha to be finite and > 0, got {values.tolist()}")
    return tuple(float(a) for a in values)


def _binarize(y: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """classes (sorted) and the ±1 target matrix of ``LabelBinarizer(pos_label=1, neg_label=-1)``."""
    classes, index = np.unique(y, return_inverse=True)
    if classes.size == 2:
        # One column: +1 for classes_[1], -1 for classes_[0] (sklearn's binary convention).
        Y = np.where(index == 1, 1.0, -1.0)[:, None]
    else:
        Y = -np.ones((y.shape[0], classes.size))
        Y[np.arange(y.shape[0]), index] = 1.0
    return classes, Y


def _eigh(a: Tensor) -> Tuple[Tensor, Tensor]:
    """``torch.linalg.eigh``, with bits independent of the thread count on the CPU.

    MKL's threaded symmetric eigensolver returns eigenvectors whose last bits depend on the number
    of threads (measured: ~1e-13 between 1 and 2 threads), while the matrix products used here do
    not; so on the CPU the decomposition alone runs on one thread (it is O(m³) with m =
    min(n_samples, n_features): 0.5 s for m = 1000). ``torch.set_num_threads`` is process-wide:
    torch work running concurrently in another Python thread sees one thread meanwhile."""
    if a.device.type != "cpu":
        return torch.linalg.eigh(a)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return torch.linalg.eigh(a)
    finally:
        torch.set_num_threads(threads)


class RidgeClassifierCV(ClassifierMixin, Estimator):
    """Ridge classifier with alpha chosen by efficient leave-one-out CV, in torch (float64).

    Same estimator as scikit-learn's ``RidgeClassifierCV(alphas=..., fit_intercept=...)`` with
    ``cv=None`` (see the module docstring for what is computed); same ``alpha_``, coefficients to
    float64 rounding, same predictions.

    Input: X (n_samples, n_features), numpy or tensor of any floating (or integer) dtype; the fit
    runs in float64 on X's device (a CUDA tensor fits on the GPU). y: n_samples labels of any type
    numpy can sort (ints, strings, ...), numpy/list/tensor.

    Attributes after fit:

    - ``classes_``: numpy array of the sorted class labels.
    - ``alpha_``: the chosen alpha (float).
    - ``best_score_``: its ``-mean(looe²)`` (float).
    - ``coef_``: float64 tensor on the fit device, (n_features,) for two classes (sign gives
      ``classes_[1]``), (n_classes, n_features) otherwise (sklearn's shapes).
    - ``intercept_``: float64 tensor, (1,) for two classes, (n_classes,) otherwise.
    - ``n_features_in_``: int.

    Memory: "gram" mode (n_samples <= n_features) holds X and an n×n matrix; "cov" mode holds a
    p×p matrix (p = n_features), like sklearn: with 20,000 ROCKET features that is 3.2 GB, so
    more cases than features is costly (as in sklearn and aeon).

    Deterministic: same inputs, device and library versions give the same bits, for any
    number of CPU threads (see ``_eigh``).

    A scikit-learn classifier (``ClassifierMixin``: ``score`` is the accuracy, with optional
    ``sample_weight``); like sklearn's, it has no ``predict_proba``.
    """

    _fitted_attribute = "coef_"

    def __init__(self, alphas: Sequence[float] = DEFAULT_ALPHAS, fit_intercept: bool = True):
        self.alphas = alphas
        self.fit_intercept = fit_intercept

    # -- fit -------------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: Any) -> "RidgeClassifierCV":
        """Fit on X (n_samples, n_features) and labels y (n_samples,); returns self."""
        name = "RidgeClassifierCV"
        alphas = _check_alphas(self.alphas, name)
        x = _check_2d(X, name).to(torch.float64)
        labels = _labels(y, x.shape[0], name)
        classes, Y_np = _binarize(labels)
        Y = torch.as_tensor(Y_np, dtype=torch.float64, device=x.device)
        n, p = x.shape

        if self.fit_intercept:
            x_offset = x.mean(0)
            y_offset = Y.mean(0)
            x = x - x_offset
            Y = Y - y_offset
        else:
            x_offset = torch.zeros(p, dtype=torch.float64, device=x.device)
            y_offset = torch.zeros(Y.shape[1], dtype=torch.float64, device=x.device)

        solve = self._gram if n <= p else self._cov
        alpha, score, coef = solve(x, Y, alphas)

        coef = coef.T.contiguous()  # (n_targets, n_features)
        intercept = y_offset - coef @ x_offset
        if coef.shape[0] == 1:  # binary: sklearn ravels coef_ to (n_features,)
            coef = coef[0]
        self.classes_ = classes
        self.alpha_ = alpha
        self.best_score_ = score
        self.coef_ = coef
        self.intercept_ = intercept
        self.n_features_in_ = p
        return self

    def _select(self, alphas: Tuple[float, ...], looe_of) -> Tuple[int, float]:
        """Index and score of the alpha with the largest -mean(looe²); ties keep the first.

        Scores are compared as Python floats with sklearn's ``>`` (a NaN first score is kept)."""
        best_i, best = 0, None
        for i, alpha in enumerate(alphas):
            looe = looe_of(alpha)
            score = float(-(looe * looe).mean())
            if best is None or score > best:
                best_i, best = i, score
        assert best is not None
        return best_i, best

    def _gram(self, x: Tensor, Y: Tensor, alphas: Tuple[float, ...]) -> Tuple[float, float, Tensor]:
        """n <= p: eigendecomposition of K = Xc Xcᵀ (n×n); G = K + αI, dual coefficients c = G⁻¹Y.

        LOO residual of sample i: c_i / (G⁻¹)_ii. With an intercept, the constant direction
        (unpenalised) is projected out: (G⁻¹)_ii - (G⁻¹ 1)_i · 1_i / n (sklearn's ``d -= ...``)."""
        n = x.shape[0]
        eigvals, Q = _eigh(x @ x.T)
        QT_y = Q.T @ Y
        Q2 = Q * Q
        QT_ones = Q.T @ torch.ones(n, dtype=x.dtype, device=x.device)

        def dual(alpha: float) -> Tuple[Tensor, Tensor]:
            D = 1.0 / (eigvals + alpha)
            c = Q @ (D[:, None] * QT_y)
            d = Q2 @ D  # diag(Q diag(D) Qᵀ)
            if self.fit_intercept:
                d = d - (Q @ (D * QT_ones)) / n  # (G⁻¹ 1)_i · 1 / Σ1
            return c, d

        def looe(alpha: float) -> Tensor:
            c, d = dual(alpha)
            return c / d[:, None]

        i, score = self._select(alphas, looe)
        c, _ = dual(alphas[i])
        return alphas[i], score, x.T @ c  # primal coefficients Xcᵀ c, (p, n_targets)

    def _cov(self, x: Tensor, Y: Tensor, alphas: Tuple[float, ...]) -> Tuple[float, float, Tensor]:
        """n > p: eigendecomposition C = Xcᵀ Xc = V diag(λ) Vᵀ (p×p); H = C + αI.

        Hat matrix X H⁻¹ Xᵀ = XV diag(1/(λ+α)) (XV)ᵀ; LOO residual (y - ŷ)_i / (1 - hat_ii), with
        the intercept's term (1 - hat·1)_i / n subtracted from the denominator, as in sklearn."""
        n = x.shape[0]
        eigvals, V = _eigh(x.T @ x)
        XV = x @ V
        XV2 = XV * XV
        VT_XT_y = XV.T @ Y
        VT_XT_ones = XV.T @ torch.ones(n, dtype=x.dtype, device=x.device)

        def looe(alpha: float) -> Tensor:
            D = 1.0 / (eigvals + alpha)
            resid = Y - XV @ (D[:, None] * VT_XT_y)
            denom = 1.0 - XV2 @ D
            if self.fit_intercept:
                denom = denom - (1.0 - XV @ (D * VT_XT_ones)) / n
            return resid / denom[:, None]

        i, score = self._select(alphas, looe)
        D = 1.0 / (eigvals + alphas[i])
        return alphas[i], score, V @ (D[:, None] * VT_XT_y)

    # -- predict ---------------------------------------------------------------------------
    def _scores(self, X: ArrayLike) -> Tensor:
        x = _check_2d(X, "RidgeClassifierCV")
        _check_n_features(x, self.n_features_in_, "RidgeClassifierCV")
        x = x.to(device=self.coef_.device, dtype=torch.float64)
        if self.coef_.dim() == 1:  # binary: one score per case, (n,)
            return x @ self.coef_ + self.intercept_
        return x @ self.coef_.T + self.intercept_

    def decision_function(self, X: ArrayLike) -> Union[Tensor, np.ndarray]:
        """Confidence scores, float64: (n,) for two classes (> 0 means ``classes_[1]``), else
        (n, n_classes). Tensor in (on its device), tensor out; numpy otherwise."""
        self._check_is_fitted("decision_function")
        return _out_like(self._scores(X), X)

    @staticmethod
    def _class_index(scores: Tensor) -> np.ndarray:
        """Index into ``classes_`` of the predicted class: sign for two classes, argmax (first on
        ties) otherwise, as sklearn."""
        index = (scores > 0).long() if scores.dim() == 1 else scores.argmax(1)
        return index.cpu().numpy()

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted labels (numpy, ``classes_``'s dtype)."""
        self._check_is_fitted("predict")
        return self.classes_[self._class_index(self._scores(X))]


# ----------------------------------------------------------------------------------------------
# RocketClassifier
# ----------------------------------------------------------------------------------------------
class RocketClassifier(ClassifierMixin, Estimator):
    """ROCKET classifier (Dempster et al. 2020) as aeon builds it, with every stage in torch.

    ``Rocket(n_kernels)`` features (2·n_kernels per case) -> ``StandardScaler(with_mean=False)``
    -> ``RidgeClassifierCV(alphas)``. Same kernels as aeon for the same ``random_state``; the
    features are ``Rocket``'s (default ``accumulate="float32_fma"``: bit-identical to aeon's
    convolution source compiled with one FMA per term, within float32 rounding of aeon 1.6's own
    transform, not bit-identical to it; see ``Rocket``); the scaler's output is sklearn's bit for
    bit, and the ridge gives sklearn's ``alpha_`` and predictions
    (tests/estimators/test_rocket_classifier.py::test_pipeline_on_aeon_rocket_features). Predictions
    agree with aeon's ``RocketClassifier`` on >= 99% of test cases
    (tests/estimators/test_rocket_classifier.py::test_rocket_classifier_accuracy).

    Args:
        n_kernels: number of random convolution kernels.
        normalise: z-normalise each case and channel before the convolutions (aeon's default).
        random_state: int seed (or None: a fresh random seed per fit).
        device: where features and the ridge are computed; None = X's device (CPU for numpy).
        accumulate: Rocket's accumulation mode, ``"float32_fma"`` (aeon's bits), ``"float32"`` or
            ``"float64"``.
        alphas: the ridge's candidate regularisations (aeon's ``logspace(-3, 3, 10)``).

    Input X: (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints) (one channel), numpy or
    tensor; y: n_cases labels of any sortable type. ``predict`` returns numpy labels.

    Attributes after fit: ``rocket_``, ``scaler_``, ``ridge_`` (the fitted stages), ``classes_``,
    ``n_channels_`` and ``n_features_in_`` (both the number of channels, as tslearn's
    ``n_features_in_``: 2-D input is one channel), ``device_`` (where it computes; ``predict``
    moves X there).

    A scikit-learn classifier (``ClassifierMixin``: ``score`` is the accuracy). ``predict_proba``
    is aeon's for this pipeline: the ridge gives no probabilities, so it is the one-hot encoding
    of ``predict`` (1 for the predicted class).

    Not supported: unequal-length collections (lists of series); NaN/inf in X are rejected.
    """

    _fitted_attribute = "ridge_"

    def __init__(self, n_kernels: int = 10_000, normalise: bool = True, random_state: Any = None,
                 device: Optional[Union[str, torch.device]] = None, accumulate: str = "float32_fma",
                 alphas: Sequence[float] = DEFAULT_ALPHAS):
        self.n_kernels = n_kernels
        self.normalise = normalise
        self.random_state = random_state
        self.device = device
        self.accumulate = accumulate
        self.alphas = alphas

    def __sklearn_tags__(self):
        tags = series_tags(super().__sklearn_tags__())
        # scikit-learn's score check fits make_blobs' 2 features, i.e. series of 2 time points,
        # which the per-series normalisation reduces to ±1: its accuracy bar is out of reach.
        tags.classifier_tags.poor_score = True
        return tags

    def _series(self, X: ArrayLike, device: Union[str, torch.device, None]) -> Tensor:
        """X as a (n, C, T) floating tensor on ``device``, checked finite.

        Rocket gets a tensor, so its features come back as a tensor on that same device and the
        scaler and ridge run there too (no host round trip on CUDA)."""
        name = "RocketClassifier"
        x = as_series_tensor(X, name, device, finite=True)
        if x.numel() == 0:
            raise ValueError(f"{name}: expected a non-empty X, got shape {tuple(x.shape)}")
        return x

    def fit(self, X: ArrayLike, y: Any) -> "RocketClassifier":
        """Generate the kernels, transform X, fit the scaler and the ridge; returns self."""
        name = "RocketClassifier"
        # The working device: the ``device`` parameter, else X's (CPU for numpy). predict uses
        # the same one, wherever its X lives.
        device = self.device if self.device is not None else (
            X.device if isinstance(X, Tensor) else "cpu")
        x = self._series(X, device)
        labels = _labels(y, x.shape[0], name)
        _check_alphas(self.alphas, name)
        # Imported here, not at module level: keeps ``import softdtw_torch.rocket`` free of an
        # import-order dependency between the two modules of the package.
        from ._rocket import Rocket

        rocket = Rocket(n_kernels=self.n_kernels, normalise=self.normalise,
                        random_state=self.random_state, device=str(x.device),
                        accumulate=self.accumulate)
        rocket.fit(x)
        features = rocket.transform(x)
        scaler = StandardScaler(with_mean=False)
        scaled = scaler.fit_transform(features)
        ridge = RidgeClassifierCV(alphas=self.alphas).fit(scaled, labels)
        self.rocket_, self.scaler_, self.ridge_ = rocket, scaler, ridge
        self.classes_ = ridge.classes_
        self.n_channels_ = self.n_features_in_ = x.shape[1]
        self.device_ = x.device
        return self

    def _features(self, X: ArrayLike, method: str) -> Tensor:
        self._check_is_fitted(method)
        x = self._series(X, self.device_)
        if x.shape[1] != self.n_channels_:
            raise ValueError(
                f"RocketClassifier: expected X with {self.n_channels_} channels (as in fit), "
                f"got {x.shape[1]}"
            )
        return self.scaler_.transform(self.rocket_.transform(x))

    def decision_function(self, X: ArrayLike) -> Union[Tensor, np.ndarray]:
        """The ridge's scores (see ``RidgeClassifierCV.decision_function``)."""
        features = self._features(X, "decision_function")  # checks fitted first
        return _out_like(self.ridge_._scores(features), X)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted labels (numpy array of ``classes_``'s dtype)."""
        features = self._features(X, "predict")  # checks fitted first
        return self.ridge_.predict(features)

    def predict_proba(self, X: ArrayLike) -> Union[Tensor, np.ndarray]:
        """aeon's ``RocketClassifier.predict_proba``: float64 (n_cases, n_classes), 1 in the
        column (in ``classes_`` order) of ``predict``'s class, 0 elsewhere. Tensor in (on its
        device), tensor out; numpy otherwise."""
        features = self._features(X, "predict_proba")  # checks fitted first
        index = self.ridge_._class_index(self.ridge_._scores(features))
        proba = np.zeros((index.shape[0], len(self.classes_)))
        proba[np.arange(index.shape[0]), index] = 1.0
        return _out_like(torch.from_numpy(proba), X)
