"""ROCKET-family classification in torch: a standard scaler, ridge regression with leave-one-out
cross-validated alpha (shared with the regressors of ``_regressor``), a ridge classifier, and the
pipelines ``RocketClassifier``, ``MiniRocketClassifier``, ``MultiRocketClassifier``, ``HydraClassifier`` and
``MultiRocketHydraClassifier``.

The pipelines are aeon's classifiers of the same names (aeon/classification/convolution_based):

    transform  ->  StandardScaler(with_mean=False)  ->  RidgeClassifierCV(alphas=logspace(-3, 3, 10),
                                                                          class_weight=...)

with every stage in torch, so the whole pipeline runs on the device of the data (CPU or CUDA).
The Hydra pipelines scale as aeon's do: ``SparseScaler`` on Hydra's features (and
``StandardScaler()`` on MultiRocket's, side by side, for MultiRocket-Hydra).
They share one base, :class:`_RocketPipeline` (fit, the feature path, the errors), and differ only
in the transformer they build (``Rocket``, ``MiniRocket``, ``MultiRocket``, Hydra's), the scaler
(Hydra's own) and their ``__init__`` parameters; the regressors in ``_regressor`` are the same
pipelines ending in ``RidgeCV``.

Ridge with efficient leave-one-out CV (``_fit_ridge_loo``) computes what scikit-learn's
``_RidgeGCV`` computes for ``RidgeCV`` / ``RidgeClassifierCV(alphas=...)`` with ``cv=None``,
``scoring=None`` (sklearn/linear_model/_ridge.py):

* intercept by centering: X and the targets are centred on their (sample-weighted) column means;
  the intercept is ``mean(Y) - mean(X) @ coef``;
* sample weights ``s`` (``class_weight``'s): after centering, rows of X and Y are multiplied by
  ``sqrt(s)``;
* ONE eigendecomposition for all alphas: of the Gram matrix ``Xc Xcᵀ`` when
  n_samples <= n_features ("gram" mode), of the covariance ``Xcᵀ Xc`` otherwise ("cov" mode);
* the exact leave-one-out residual of every sample and target for every alpha (the usual
  ``c / diag(G⁻¹)`` identity, with the intercept's correction term
  ``(G⁻¹ sqrt(s))_i sqrt(s_i) / Σs``), and the alpha with the largest ``-mean(looe²)`` over all
  samples and targets (residuals in the ``sqrt(s)``-scaled space, as sklearn); ties keep the
  first alpha in ``alphas``.

Everything is float64 (sklearn also casts to float64 for this estimator). In "cov" mode the
per-alpha work uses ``XV = Xc V`` once instead of forming ``V diag(D) Vᵀ`` per alpha as sklearn
does: the same quantities, fewer flops (n·p² once instead of p³ per alpha), so values agree with
sklearn to rounding, not bit for bit (neither do two BLAS libraries). The fit and the scores have
the same bits at any thread count on the CPU: their products, whole-tensor sums and the
eigendecomposition go through ``_linalg.FixedOrderOps`` (torch's BLAS alone does not give that).
"""
from __future__ import annotations

import numbers
import warnings
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from sklearn.base import ClassifierMixin, TransformerMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets
from torch import Tensor

from .._base import Estimator, NotFittedError, _int_seed, as_numeric_array, check_device, series_tags
from .._errors import public_errors
from .._input import _check_int
from .._progress import Progress
from ._input import as_series_tensor, check_finite, check_like_fit
from ._linalg import FixedOrderOps, fixed_order_ops

__all__ = ["HydraClassifier", "MiniRocketClassifier", "MultiRocketClassifier", "MultiRocketHydraClassifier",
           "RidgeClassifierCV", "RocketClassifier", "SparseScaler", "StandardScaler", "NotFittedError"]

ArrayLike = Union[Tensor, np.ndarray, Sequence[Any]]
Device = Optional[Union[str, torch.device]]

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

    Parameters
    ----------
    with_mean : bool, default ``True``
        Subtract the mean (ROCKET uses False: features stay non-negative PPVs and maxima).
    with_std : bool, default ``True``
        Divide by the standard deviation.

    Attributes
    ----------
    mean_ : torch.Tensor
        float64 (n_features,) on X's device.
    var_ : torch.Tensor
        float64 (n_features,), the population variance.
    scale_ : torch.Tensor or None
        float64 (n_features,), ``sqrt(var_)`` (1 for constant features); None with
        ``with_std=False``.
    n_samples_seen_ : int
        The number of samples fit saw.
    n_features_in_ : int
        The number of features.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.rocket import StandardScaler
    >>> X = np.array([[1.0, 10.0], [3.0, 10.0], [5.0, 10.0]])
    >>> scaler = StandardScaler().fit(X)
    >>> scaler.mean_.tolist(), scaler.scale_.tolist()  # the constant feature keeps a scale of 1
    ([3.0, 10.0], [1.632993161855452, 1.0])
    >>> scaler.transform(X)[:, 1].tolist()
    [0.0, 0.0, 0.0]
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
        """Learn ``mean_``, ``var_`` and ``scale_`` (float64 tensors on X's device) from X (n, p).

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_samples, n_features), finite.
        y : None
            Ignored.

        Returns
        -------
        self : StandardScaler
            The fitted scaler.

        Raises
        ------
        ValueError
            X not 2-D, empty, or with NaN or inf.
        """
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
        """Scale X (n, p) with the fitted statistics; returns X's dtype, on X's device.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_samples, n_features), with the fitted number of features.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            The scaled X: a tensor for tensor input, numpy otherwise.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another number of features, NaN or inf.
        """
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


class SparseScaler(TransformerMixin, Estimator):
    """aeon's ``_SparseScaler`` for Hydra's features, in torch with aeon's own operations.

    Used by HydraClassifier, MultiRocketHydraClassifier and their regressors; float32 features give
    aeon's bits. ``fit``: ``s = sqrt(clamp(X, 0))``; ``mu_ = s.mean(0)``;
    ``sigma_ = s.std(0) + epsilon_`` (the unbiased std, torch's), with
    ``epsilon_ = mean(s == 0, 0) ** exponent + 1e-8`` in float32. ``transform``:
    ``(s - mu_) * (s != 0) / sigma_`` with ``mask`` (the zeros stay zeros), ``(s - mu_) / sigma_``
    without. Tensor in, tensor out (on X's device); numpy in, numpy out. A feature constant over a
    single case is NaN in aeon's std as in ours: fit refuses fewer than 2 cases (ValueError).

    Parameters
    ----------
    mask : bool, default ``True``
        Keep zero features at zero (aeon's default).
    exponent : float, default 4
        The power of the zeros' fraction in ``epsilon_`` (aeon's 4).

    Attributes
    ----------
    epsilon_ : torch.Tensor
        float32 (n_features,).
    mu_ : torch.Tensor
        (n_features,), of X's dtype.
    sigma_ : torch.Tensor
        (n_features,).
    n_features_in_ : int
        The number of features.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.rocket import SparseScaler
    >>> X = np.array([[0.0, 4.0], [1.0, 9.0], [4.0, 16.0]], dtype=np.float32)
    >>> scaled = SparseScaler().fit(X).transform(X)
    >>> scaled.shape, scaled.dtype
    ((3, 2), dtype('float32'))
    >>> float(scaled[0, 0]) == 0.0  # a zero stays zero
    True
    """

    _fitted_attribute = "mu_"

    def __init__(self, mask: bool = True, exponent: float = 4):
        self.mask = mask
        self.exponent = exponent

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def fit(self, X: ArrayLike, y: Any = None) -> "SparseScaler":
        """Learn ``epsilon_``, ``mu_`` and ``sigma_`` (tensors of X's dtype, on X's device).

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_samples, n_features), finite, at least 2 cases.
        y : None
            Ignored.

        Returns
        -------
        self : SparseScaler
            The fitted scaler.

        Raises
        ------
        ValueError
            X not 2-D, empty, with NaN or inf, or with fewer than 2 cases.
        """
        x = _check_2d(X, "SparseScaler")
        if x.shape[0] < 2:
            raise ValueError(f"SparseScaler: expected at least 2 cases (an unbiased std), got n_samples={x.shape[0]}")
        s = x.clamp(0).sqrt()
        self.epsilon_ = (s == 0).float().mean(0) ** self.exponent + 1e-8  # float32, as aeon's
        self.mu_ = s.mean(0)
        self.sigma_ = s.std(0) + self.epsilon_
        self.n_features_in_ = x.shape[1]
        return self

    def transform(self, X: ArrayLike) -> Union[Tensor, np.ndarray]:
        """Scale X (n, p) with the fitted statistics, on the fit device; returns X's kind.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_samples, n_features), with the fitted number of features.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            The scaled X: a tensor for tensor input, numpy otherwise.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another number of features, NaN or inf.
        """
        self._check_is_fitted("transform")
        x = _check_2d(X, "SparseScaler")
        _check_n_features(x, self.n_features_in_, "SparseScaler")
        s = x.to(self.mu_.device).clamp(0).sqrt()
        out = ((s - self.mu_) * (s != 0)) / self.sigma_ if self.mask else (s - self.mu_) / self.sigma_
        return _out_like(out, X)


class _BlockScaler(TransformerMixin, Estimator):
    """Scales the columns [0, split) with one scaler and [split, p) with another, then puts them
    side by side (MultiRocket-Hydra: SparseScaler on Hydra's features, StandardScaler on
    MultiRocket's)."""

    _fitted_attribute = "n_features_in_"

    def __init__(self, split: int, first: Any, second: Any):
        self.split = split
        self.first = first
        self.second = second

    def fit(self, X: Tensor, y: Any = None) -> "_BlockScaler":
        self.first.fit(X[:, :self.split])
        self.second.fit(X[:, self.split:])
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: Tensor) -> Tensor:
        self._check_is_fitted("transform")
        return torch.cat([self.first.transform(X[:, :self.split]), self.second.transform(X[:, self.split:])], 1)


# ----------------------------------------------------------------------------------------------
# Ridge regression with leave-one-out cross-validated alpha (RidgeClassifierCV and RidgeCV)
# ----------------------------------------------------------------------------------------------
def _check_alphas(alphas: Any, name: str) -> Tuple[float, ...]:
    values = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name}: expected alphas to be a non-empty 1-D sequence, got {alphas!r}")
    if not np.all(np.isfinite(values)) or not np.all(values > 0):
        raise ValueError(f"{name}: expected every alpha to be finite and > 0, got {values.tolist()}")
    return tuple(float(a) for a in values)


def _select(alphas: Tuple[float, ...], looe_of: Callable[[float], Tensor], ops: FixedOrderOps) -> Tuple[int, float]:
    """Index and score of the alpha with the largest -mean(looe²); ties keep the first.

    Scores are compared as Python floats with sklearn's ``>`` (a NaN first score is kept)."""
    best_i, best = 0, None
    for i, alpha in enumerate(alphas):
        looe = looe_of(alpha)
        score = float(-ops.serial(torch.mean, looe * looe))
        if best is None or score > best:
            best_i, best = i, score
    assert best is not None
    return best_i, best


def _loo_gram(x: Tensor, Y: Tensor, alphas: Tuple[float, ...], w: Optional[Tensor],
              ops: FixedOrderOps) -> Tuple[float, float, Tensor]:
    """n <= p: eigendecomposition of K = Xc Xcᵀ (n×n); G = K + αI, dual coefficients c = G⁻¹Y.

    LOO residual of sample i: c_i / (G⁻¹)_ii. With an intercept (``w``: the square roots of the
    sample weights, ones without weights), the unpenalised constant direction is projected out:
    (G⁻¹)_ii - (G⁻¹ w)_i · w_i / Σw² (sklearn's ``d -= Ginv_sqrt_sw * sqrt_sw / sw_sum``)."""
    eigvals, Q = ops.serial(torch.linalg.eigh, ops.matmul(x, x.T))
    QT_y = ops.matmul(Q.T, Y)
    Q2 = Q * Q
    if w is not None:
        QT_w = ops.matmul(Q.T, w)
        w_sum = ops.serial(torch.dot, w, w)

    def dual(alpha: float) -> Tuple[Tensor, Tensor]:
        D = 1.0 / (eigvals + alpha)
        c = ops.matmul(Q, D[:, None] * QT_y)
        d = ops.matmul(Q2, D)  # diag(Q diag(D) Qᵀ)
        if w is not None:
            d = d - ops.matmul(Q, D * QT_w) * w / w_sum
        return c, d

    def looe(alpha: float) -> Tensor:
        c, d = dual(alpha)
        return c / d[:, None]

    i, score = _select(alphas, looe, ops)
    c, _ = dual(alphas[i])
    return alphas[i], score, ops.matmul(x.T, c)  # primal coefficients Xcᵀ c, (p, n_targets)


def _loo_cov(x: Tensor, Y: Tensor, alphas: Tuple[float, ...], w: Optional[Tensor],
             ops: FixedOrderOps) -> Tuple[float, float, Tensor]:
    """n > p: eigendecomposition C = Xcᵀ Xc = V diag(λ) Vᵀ (p×p); H = C + αI.

    Hat matrix X H⁻¹ Xᵀ = XV diag(1/(λ+α)) (XV)ᵀ; LOO residual (y - ŷ)_i / (1 - hat_ii), with an
    intercept the term (w - hat·w)_i · w_i / Σw² subtracted from the denominator, as in sklearn
    (``w`` as in :func:`_loo_gram`)."""
    eigvals, V = ops.serial(torch.linalg.eigh, ops.matmul(x.T, x))
    XV = ops.matmul(x, V)
    XV2 = XV * XV
    VT_XT_y = ops.matmul(XV.T, Y)
    if w is not None:
        VT_XT_w = ops.matmul(XV.T, w)
        w_sum = ops.serial(torch.dot, w, w)

    def looe(alpha: float) -> Tensor:
        D = 1.0 / (eigvals + alpha)
        resid = Y - ops.matmul(XV, D[:, None] * VT_XT_y)
        denom = 1.0 - ops.matmul(XV2, D)
        if w is not None:
            denom = denom - (w - ops.matmul(XV, D * VT_XT_w)) * w / w_sum
        return resid / denom[:, None]

    i, score = _select(alphas, looe, ops)
    D = 1.0 / (eigvals + alphas[i])
    return alphas[i], score, ops.matmul(V, D[:, None] * VT_XT_y)


def _fit_ridge_loo(x: Tensor, Y: Tensor, alphas: Tuple[float, ...], fit_intercept: bool,
                   sample_weight: Optional[Tensor] = None) -> Tuple[float, float, Tensor, Tensor]:
    """Ridge with the alpha of smallest leave-one-out error (see the module docstring), with the
    same bits at any thread count (``_linalg``).

    x: float64 (n_samples, n_features); Y: float64 (n_samples, n_targets) on x's device;
    sample_weight: None or float64 (n_samples,), >= 0 with a positive sum. Returns
    ``(alpha, score, coef (n_targets, n_features), intercept (n_targets,))``."""
    with fixed_order_ops(x.device) as ops:
        return _ridge_loo(x, Y, alphas, fit_intercept, sample_weight, ops)


def _linear(x: Tensor, coef: Tensor, intercept: Tensor) -> Tensor:
    """``x @ coef.T + intercept`` (one value per row for a 1-D coef), with the same bits at any
    thread count (``_linalg``)."""
    with fixed_order_ops(x.device) as ops:
        return ops.matmul(x, coef if coef.dim() == 1 else coef.T) + intercept


def _ridge_loo(x: Tensor, Y: Tensor, alphas: Tuple[float, ...], fit_intercept: bool, sample_weight: Optional[Tensor],
               ops: FixedOrderOps) -> Tuple[float, float, Tensor, Tensor]:
    """_fit_ridge_loo's work: its products, whole-tensor reductions and eigendecomposition by ``ops``."""
    n, p = x.shape
    if sample_weight is None:
        w = torch.ones(n, dtype=x.dtype, device=x.device)
        if fit_intercept:
            x_offset, y_offset = x.mean(0), Y.mean(0)
    else:
        w = sample_weight.sqrt()
        if fit_intercept:  # np.average's weighted means, as sklearn's _preprocess_data
            total = ops.serial(torch.sum, sample_weight)
            x_offset = (sample_weight[:, None] * x).sum(0) / total
            y_offset = (sample_weight[:, None] * Y).sum(0) / total
    if fit_intercept:
        x = x - x_offset
        Y = Y - y_offset
    else:
        x_offset = torch.zeros(p, dtype=x.dtype, device=x.device)
        y_offset = torch.zeros(Y.shape[1], dtype=x.dtype, device=x.device)
    if sample_weight is not None:  # rows scaled by sqrt(s) after centering (sklearn's _rescale_data)
        x = x * w[:, None]
        Y = Y * w[:, None]

    solve = _loo_gram if n <= p else _loo_cov
    alpha, score, coef = solve(x, Y, alphas, w if fit_intercept else None, ops)
    coef = coef.T.contiguous()  # (n_targets, n_features)
    return alpha, score, coef, y_offset - ops.matmul(coef, x_offset)


# ----------------------------------------------------------------------------------------------
# RidgeClassifierCV
# ----------------------------------------------------------------------------------------------
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


def _sklearn_key(label: Any) -> Any:
    """The dict key scikit-learn's ``compute_class_weight`` looks a class up by: ``int(label)``
    when int() reads the label (so ``1`` for the labels ``1``, ``1.0`` and ``"1"``), else
    ``str(label)``."""
    try:
        return int(label)
    except (TypeError, ValueError):
        return str(label)


def _class_sample_weights(class_weight: Any, y: np.ndarray, name: str) -> Optional[np.ndarray]:
    """The float64 sample weights (n_samples,) of ``class_weight`` for labels y (checked by
    :func:`_labels`), or None for no weighting (None or an empty dict, as sklearn's
    ``if self.class_weight``).

    scikit-learn's ``compute_sample_weight(class_weight, y)``: ``"balanced"`` gives class c the
    weight ``n_samples / (n_classes * count(c))``; a dict ``{label: weight}`` gives its classes
    their weight and the others 1. A class's key is sklearn's (:func:`_sklearn_key`: ``1`` for
    the label ``"1"``, as UCR datasets' labels are) or the label itself (``"1"``, which sklearn
    would refuse). Refused, naming ``name``: another string or type (TypeError; lists of dicts are
    for multi-output, which a classifier of one label per case has not), a key that names no
    class of y (ValueError; sklearn ignores it when every class has a weight), two keys for one
    class (ValueError), a weight that is not a finite number >= 0 (TypeError / ValueError; sklearn
    would take the square root of a negative weight), and weights all 0 (ValueError)."""
    if class_weight is None:
        return None
    classes, index = np.unique(y, return_inverse=True)
    expected = "None, 'balanced' or a dict {label: weight}"
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"{name}: expected class_weight to be {expected}, got {class_weight!r}")
        counts = np.bincount(index, minlength=classes.size).astype(np.float64)
        weights = counts.sum() / (classes.size * counts)
    elif isinstance(class_weight, dict):
        if not class_weight:
            return None
        labels = classes.tolist()
        weights = np.ones(classes.size)
        used = []
        for i, label in enumerate(labels):
            keys = [key for key in class_weight if key == _sklearn_key(label) or key == label]
            if len(keys) > 1:
                raise ValueError(f"{name}: class_weight has {len(keys)} keys for the class {label!r}: "
                                 f"{keys!r}; expected one")
            if not keys:
                continue
            key = keys[0]
            value = class_weight[key]
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{name}: expected the class_weight of {key!r} to be a number, got "
                                f"{type(value).__name__} {value!r}")
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: expected the class_weight of {key!r} to be finite and >= 0, "
                                 f"got {value!r}")
            weights[i] = float(value)
            used.append(key)
        unknown = [key for key in class_weight if not any(key is u or key == u for u in used)]
        if unknown:
            raise ValueError(f"{name}: class_weight has labels that are not classes of y: {unknown!r} "
                             f"(the classes are {labels!r})")
    else:
        raise TypeError(f"{name}: expected class_weight to be {expected}, got {type(class_weight).__name__}")
    sample_weight = weights[index]
    if not sample_weight.sum() > 0:
        raise ValueError(f"{name}: class_weight gives every sample the weight 0; expected at least one "
                         f"class of y with a positive weight")
    return sample_weight


class RidgeClassifierCV(ClassifierMixin, Estimator):
    """Ridge classifier with alpha chosen by efficient leave-one-out CV, in torch (float64).

    Same estimator as scikit-learn's ``RidgeClassifierCV(alphas=..., fit_intercept=...,
    class_weight=...)`` with ``cv=None`` (see the module docstring for what is computed); same
    ``alpha_``, coefficients to float64 rounding, same predictions.

    Targets: ``LabelBinarizer(pos_label=1, neg_label=-1)``'s, one ±1 column for two classes (+1
    for ``classes_[1]``), one column per class otherwise; the ridge regresses them.

    Input: X (n_samples, n_features), numpy or tensor of any floating (or integer) dtype; the fit
    runs in float64 on X's device (a CUDA tensor fits on the GPU). y: n_samples labels of any type
    numpy can sort (ints, strings, ...), numpy/list/tensor.

    Memory: "gram" mode (n_samples <= n_features) holds X and an n×n matrix; "cov" mode holds a
    p×p matrix (p = n_features), like sklearn: with tens of thousands of ROCKET features that is
    gigabytes, so more cases than features is costly (as in sklearn and aeon).

    Deterministic: same inputs, device and library versions give the same bits, for any
    number of CPU threads (see ``softdtw_torch.rocket._linalg.FixedOrderOps``).

    A scikit-learn classifier (``ClassifierMixin``: ``score`` is the accuracy, with optional
    ``sample_weight``); like sklearn's, it has no ``predict_proba``, and its ``fit`` takes no
    ``sample_weight`` (``class_weight`` is the way to weight).

    Parameters
    ----------
    alphas : tuple of float, optional
        The candidate regularisations, each finite and > 0; default aeon's ``logspace(-3, 3, 10)``.
    fit_intercept : bool, default ``True``
        Fit an intercept (by centering).
    class_weight : None, 'balanced' or dict, default None
        None, ``"balanced"`` or a dict ``{label: weight}``: sklearn's, turned into sample weights
        as ``compute_sample_weight`` does (see ``_class_sample_weights`` for the rules and the
        refused values); the weighted fit is sklearn's ``_RidgeGCV`` with sample weights (weighted
        centering, rows scaled by their square roots).

    Attributes
    ----------
    classes_ : numpy.ndarray
        The sorted class labels.
    alpha_ : float
        The chosen alpha.
    best_score_ : float
        Its ``-mean(looe²)``.
    coef_ : torch.Tensor
        float64 on the fit device, (n_features,) for two classes (sign gives ``classes_[1]``),
        (n_classes, n_features) otherwise (sklearn's shapes).
    intercept_ : torch.Tensor or float
        float64 tensor, (1,) for two classes, (n_classes,) otherwise; the float ``0.0`` with
        ``fit_intercept=False`` (sklearn's conventions).
    n_features_in_ : int
        The number of features.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.rocket import RidgeClassifierCV
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(20, 5)
    >>> y = np.where(X[:, 0] > 0, "pos", "neg")
    >>> ridge = RidgeClassifierCV().fit(X, y)
    >>> ridge.classes_.tolist(), tuple(ridge.coef_.shape)
    (['neg', 'pos'], (5,))
    >>> ridge.alpha_ in ridge.alphas
    True
    >>> ridge.decision_function(X[:3]).shape
    (3,)
    >>> ridge.score(X, y) >= 0.9
    True
    """

    _fitted_attribute = "coef_"

    def __init__(self, alphas: Sequence[float] = DEFAULT_ALPHAS, fit_intercept: bool = True,
                 class_weight: Any = None):
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight

    def fit(self, X: ArrayLike, y: Any) -> "RidgeClassifierCV":
        """Fit on X (n_samples, n_features) and labels y (n_samples,).

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_samples, n_features), finite.
        y : numpy.ndarray, torch.Tensor or list
            (n_samples,) labels, two classes or more (a column vector is raveled with scikit-learn's
            DataConversionWarning).

        Returns
        -------
        self : RidgeClassifierCV
            The fitted classifier.

        Raises
        ------
        ValueError
            Bad alphas, X not 2-D, empty or not finite, y None, of another length, continuous or of one
            class, a bad ``class_weight``.
        TypeError
            A ``class_weight`` of the wrong type.
        """
        name = "RidgeClassifierCV"
        alphas = _check_alphas(self.alphas, name)
        x = _check_2d(X, name).to(torch.float64)
        labels = _labels(y, x.shape[0], name)
        weights = _class_sample_weights(self.class_weight, labels, name)
        classes, Y = _binarize(labels)
        alpha, score, coef, intercept = _fit_ridge_loo(
            x, torch.as_tensor(Y, dtype=torch.float64, device=x.device), alphas, self.fit_intercept,
            None if weights is None else torch.as_tensor(weights, dtype=torch.float64, device=x.device))
        self.classes_ = classes
        self.alpha_ = alpha
        self.best_score_ = score
        self.coef_ = coef[0] if coef.shape[0] == 1 else coef  # binary: sklearn's (n_features,)
        self.intercept_ = intercept if self.fit_intercept else 0.0  # sklearn's float without an intercept
        self.n_features_in_ = x.shape[1]
        return self

    def _scores(self, X: ArrayLike) -> Tensor:
        x = _check_2d(X, "RidgeClassifierCV")
        _check_n_features(x, self.n_features_in_, "RidgeClassifierCV")
        return _linear(x.to(device=self.coef_.device, dtype=torch.float64), self.coef_, self.intercept_)

    def decision_function(self, X: ArrayLike) -> Union[Tensor, np.ndarray]:
        """Confidence scores, float64.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_samples, n_features).

        Returns
        -------
        numpy.ndarray or torch.Tensor
            (n,) for two classes (> 0 means ``classes_[1]``), else (n, n_classes). Tensor in (on its
            device), tensor out; numpy otherwise.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another number of features, NaN or inf.
        """
        self._check_is_fitted("decision_function")
        return _out_like(self._scores(X), X)

    @staticmethod
    def _class_index(scores: Tensor) -> np.ndarray:
        """Index into ``classes_`` of the predicted class: sign for two classes, argmax (first on
        ties) otherwise, as sklearn."""
        index = (scores > 0).long() if scores.dim() == 1 else scores.argmax(1)
        return index.cpu().numpy()

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted labels.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_samples, n_features).

        Returns
        -------
        numpy.ndarray
            (n_samples,) labels, of ``classes_``'s dtype.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        """
        self._check_is_fitted("predict")
        return self.classes_[self._class_index(self._scores(X))]


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
