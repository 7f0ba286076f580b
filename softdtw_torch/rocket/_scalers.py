"""The ROCKET pipelines' scalers in torch, scikit-learn's bits on every device: ``StandardScaler``,
``SparseScaler`` (aeon's, for Hydra's features) and the block scaler of MultiRocket-Hydra (one
scaler per block of columns)."""
from __future__ import annotations

from typing import Any, Union

import numpy as np
import torch
from sklearn.base import TransformerMixin
from torch import Tensor

from .._base import Estimator
from ._input import ArrayLike, _check_2d, _check_n_features, _out_like

__all__ = ["SparseScaler", "StandardScaler"]


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
