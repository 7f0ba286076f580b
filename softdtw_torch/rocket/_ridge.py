"""Ridge regression with leave-one-out cross-validated alpha, in torch, and ``RidgeClassifierCV``
(shared with ``RidgeCV`` and the regressors of ``_regressor``).

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
from sklearn.base import ClassifierMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets
from torch import Tensor

from .._base import Estimator
from ._input import ArrayLike, _check_2d, _check_n_features, _out_like
from ._linalg import FixedOrderOps, fixed_order_ops

__all__ = ["RidgeClassifierCV"]

#: aeon's alphas, ``np.logspace(-3, 3, 10)``, as a tuple of floats (an immutable default).
DEFAULT_ALPHAS: Tuple[float, ...] = tuple(float(a) for a in np.logspace(-3, 3, 10))


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
