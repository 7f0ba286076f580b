"""Hydra (Dempster, Schmidt & Webb 2023) on the ``hydra_fit`` / ``hydra_transform`` operators.

:class:`HydraTransformer` reproduces aeon's ``HydraTransformer`` (aeon 1.6, ``random_state`` set):
the same kernels and channels from ``fit`` (aeon's ``_hydra.W`` and ``_hydra.idx``, drawn from
torch's CPU generator seeded as ``torch.manual_seed`` seeds it) and its features from
``transform``, within the tolerance docs/user_guide/rocket.md states (see ``docs/design/rocket.md`` §9 and
``csrc/hydra/math.h``). :class:`HydraLayer` is the same transform as a differentiable
``nn.Module``. The operators can also be called directly::

    weights, channels = torch.ops.softdtw_torch.hydra_fit(x, 8, 64, 8, seed)
    features = torch.ops.softdtw_torch.hydra_transform(x, weights, channels)  # (n_cases, n_features)

Documented behaviours
---------------------
* Features: per dilation (1, 2, 4, ... up to ``(n_timepoints - 1) / 8``) and representation (the
  series, then its first difference), ``n_groups / 2`` groups of ``n_kernels`` competing kernels:
  the block of ``count_max`` (the sum of each kernel's responses where it is the first maximum of
  its group), then the block of ``count_min`` (how often it is the first minimum); aeon's order.
  ``n_groups = 1`` uses the series only.
* Each response is float32 fused multiply-adds in tap order (float64 for float64 input to the
  operator; the transformer computes in float32, as aeon does). aeon's float32 convolution
  (oneDNN) rounds the same way except at the last ``n_timepoints mod 8`` positions of a row, so the
  features equal aeon's where no maximum or minimum changes there: see docs/user_guide/rocket.md for the measured
  agreement.
* At least 6 time points (aeon's fit has no dilation below that). ``x_lengths`` (one length per
  case, each in ``[6, n_timepoints]``): case ``i`` is transformed as if alone with its first
  ``x_lengths[i]`` time points, with the fitted dilations.
* A feature beyond the compute precision's range (only for ``|x|`` or weights near 1e38 in
  float32) is refused (ValueError), as are NaN and inf in x or the weights.
* Gradients (:class:`HydraLayer`, ``hydra_transform``): ``count_max`` is differentiable w.r.t. x
  and the weights (through each position's first maximum, an exact subgradient); ``count_min`` is
  piecewise constant (zero gradient). Double backward is refused.
* ``random_state``: an int is aeon's seed; a RandomState draws the seed (``randint(2**31 - 1)``)
  at each ``fit``, as aeon does; ``None`` draws a fresh seed from numpy's global RNG (aeon would
  use torch's global generator unseeded).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from sklearn.base import TransformerMixin
from torch import Tensor, nn

from .. import _ops  # noqa: F401  (loads the operators)
from .._base import Estimator, check_device, draw_seed, series_tags
from .._errors import public_errors
from .._input import _check_int
from .._progress import Progress
from ._input import as_series_tensor, check_finite, check_like_fit, lengths_on

__all__ = ["HydraTransformer", "HydraLayer", "hydra_parameters_from_aeon"]

ArrayLike = Union[np.ndarray, Tensor]


def hydra_parameters_from_aeon(W: ArrayLike, idx: Sequence[ArrayLike], n_kernels: int) -> Tuple[Tensor, Tensor]:
    """aeon's Hydra kernels and channels as the operators' ``(weights, channels)``.

    Parameters
    ----------
    W : numpy.ndarray or torch.Tensor
        aeon's ``_HydraInternal.W``, (n_dilations, n_representations, n_kernels * n_groups, 1, 9).
    idx : list
        aeon's ``idx``: a list of (n_representations, n_groups, channels_per_group) per dilation.
    n_kernels : int
        aeon's ``k`` (kernels per group).

    Returns
    -------
    weights : torch.Tensor
        float32 (n_dilations, n_representations, n_groups, n_kernels, 9).
    channels : torch.Tensor
        int64 (n_dilations, n_representations, n_groups, channels_per_group).

    Raises
    ------
    ValueError
        ``W`` not of that shape for ``n_kernels``.

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from softdtw_torch.rocket import HydraTransformer, hydra_parameters_from_aeon
    >>> X = np.random.RandomState(0).randn(6, 2, 30).astype(np.float32)
    >>> hydra = HydraTransformer(n_kernels=4, n_groups=8, random_state=0).fit(X)
    >>> D, R = hydra.weights_.shape[:2]
    >>> W = hydra.weights_.reshape(D, R, -1, 1, 9)  # aeon's layout
    >>> weights, channels = hydra_parameters_from_aeon(W, list(hydra.channels_), n_kernels=4)
    >>> bool(torch.equal(weights, hydra.weights_)), bool(torch.equal(channels, hydra.channels_))
    (True, True)
    """
    who = "hydra_parameters_from_aeon"
    w = torch.as_tensor(np.asarray(W.detach().cpu() if isinstance(W, Tensor) else W), dtype=torch.float32)
    if w.dim() != 5 or w.shape[3] != 1 or w.shape[4] != 9 or w.shape[2] % n_kernels:
        raise ValueError(f"{who}: expected W of shape (n_dilations, n_representations, n_kernels * n_groups, 1, 9) "
                         f"with n_kernels={n_kernels}, got shape {list(w.shape)}")
    D, R, KG = w.shape[:3]
    channels = torch.stack([torch.as_tensor(np.asarray(i.cpu() if isinstance(i, Tensor) else i)) for i in idx])
    return w.reshape(D, R, KG // n_kernels, n_kernels, 9).contiguous(), channels.to(torch.int64)


class HydraTransformer(TransformerMixin, Estimator):
    """Hydra transform: aeon's ``HydraTransformer`` kernels and features.

    The same kernels and channels as aeon's for the same ``random_state``
    (tests/rocket/test_hydra.py::test_fit_matches_aeon and
    tests/rocket/test_hydra.py::test_transform_matches_aeon_within_the_stated_tolerance).

    ``transform`` returns float32 ``(n_cases, n_dilations * 2 * n_groups * n_kernels)``: numpy for
    numpy input, a tensor (on the computing device) for tensor input. X is converted to float32
    first, as aeon does. NaN and inf are refused (ValueError). aeon's ``n_jobs`` and
    ``output_type`` are not parameters: the CPU kernel uses torch's threads.

    Parameters
    ----------
    n_kernels : int, default 8
        Kernels per group (aeon's ``n_kernels``, its ``k``).
    n_groups : int, default 64
        Groups per dilation, half on the series and half on its first difference.
    max_num_channels : int, default 8
        At most this many channels summed per group (multivariate input).
    random_state : None, int or numpy.random.RandomState
        An int is aeon's seed; a RandomState draws the seed at each ``fit``; ``None`` draws a fresh
        seed from numpy's global RNG (module docstring).
    device : None, str or torch.device
        Where ``transform`` computes. ``None``: on the input tensor's device (CPU for numpy input).
    verbose : bool, default ``False``
        Report the progress of ``fit`` and ``transform``, one operator call each over all the
        cases, as :class:`~softdtw_torch.rocket.MiniRocket` does. Not one of aeon's parameters;
        the results are the same, bit for bit.

    Attributes
    ----------
    weights_ : torch.Tensor
        (n_dilations, n_representations, n_groups / 2, n_kernels, 9) float32 (aeon's ``W``).
    channels_ : torch.Tensor
        (n_dilations, n_representations, n_groups / 2, channels_per_group) int64 (aeon's ``idx``).
    n_channels_ : int
        The channels fit saw.
    n_timepoints_ : int
        The length fit saw.
    seed_ : int
        The seed used (None after :meth:`from_aeon`).
    n_features_in_ : int
        The number of channels.

    See Also
    --------
    HydraLayer : the same transform as a differentiable ``nn.Module``.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.rocket import HydraTransformer
    >>> X = np.random.RandomState(0).randn(6, 2, 30).astype(np.float32)
    >>> hydra = HydraTransformer(n_kernels=4, n_groups=8, random_state=0).fit(X)
    >>> features = hydra.transform(X)
    >>> features.shape, features.dtype  # 2 dilations x 2 x 8 groups x 4 kernels
    ((6, 128), dtype('float32'))
    >>> tuple(hydra.weights_.shape)
    (2, 2, 4, 4, 9)
    """

    _fitted_attribute = "weights_"

    def __init__(self, n_kernels: int = 8, n_groups: int = 64, max_num_channels: int = 8, random_state: Any = None,
                 device: Optional[Union[str, torch.device]] = None, verbose: bool = False) -> None:
        self.n_kernels = n_kernels
        self.n_groups = n_groups
        self.max_num_channels = max_num_channels
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = series_tags(super().__sklearn_tags__())
        tags.transformer_tags.preserves_dtype = ["float32"]  # features are float32 for any input
        return tags

    def fit(self, X: ArrayLike, y: Any = None) -> "HydraTransformer":
        """Draw the kernels and channels for series shaped like X (n_cases, [n_channels,] n_timepoints).

        Only X's shape is read (NaN and inf are refused all the same, as in transform), and y is
        ignored.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints), at least 6 time points.
        y : None
            Ignored.

        Returns
        -------
        self : HydraTransformer
            The fitted transformer.

        Raises
        ------
        ValueError
            Series too short, NaN or inf, parameters < 1 (the errors name ``HydraTransformer.fit``).
        TypeError
            Parameters of the wrong types.
        """
        who = "HydraTransformer.fit"
        n_kernels = _check_int(self.n_kernels, who, "n_kernels", 1)
        n_groups = _check_int(self.n_groups, who, "n_groups", 1)
        max_num_channels = _check_int(self.max_num_channels, who, "max_num_channels", 1)
        check_device(self.device, who)  # where transform will compute: checked now, as every parameter
        x = as_series_tensor(X, who, integer_dtype=torch.float32, finite=True)  # only its shape is read
        self.seed_ = draw_seed(self.random_state, "HydraTransformer")
        # The operator's errors (series too short) name this method.
        with public_errors(who), Progress(self.verbose, who, x.shape[0], unit="cases") as progress:
            weights, channels = torch.ops.softdtw_torch.hydra_fit(x.cpu(), n_kernels, n_groups, max_num_channels,
                                                                  self.seed_)
            progress.update(x.shape[0])
        self._set_parameters(weights, channels, int(x.shape[1]), int(x.shape[2]))
        return self

    def _set_parameters(self, weights: Tensor, channels: Tensor, n_channels: Optional[int],
                        n_timepoints: Optional[int]) -> None:
        self.weights_ = weights
        self.channels_ = channels
        self.n_channels_ = n_channels
        self.n_timepoints_ = n_timepoints
        if n_channels is not None:
            self.n_features_in_ = n_channels
        self._device_parameters: Dict[torch.device, Tuple[Tensor, Tensor]] = {}

    @classmethod
    def from_aeon(cls, aeon_transformer: Any, device: Optional[Union[str, torch.device]] = None) -> "HydraTransformer":
        """A fitted HydraTransformer with the kernels and channels of a fitted aeon ``HydraTransformer``.

        Its ``_hydra.W`` and ``_hydra.idx``. ``transform`` then checks the channel count aeon saw in
        fit, and takes series of any length (as aeon's convolutions do).

        Parameters
        ----------
        aeon_transformer : Any
            A fitted ``aeon.transformations.collection.convolution_based.HydraTransformer``.
        device : None, str or torch.device, default None
            Where ``transform`` computes.

        Returns
        -------
        HydraTransformer
            A fitted transformer with aeon's kernels.

        Examples
        --------
        >>> import numpy as np
        >>> import torch
        >>> from aeon.transformations.collection.convolution_based import HydraTransformer as AeonHydra
        >>> from softdtw_torch.rocket import HydraTransformer
        >>> X = np.random.RandomState(0).randn(6, 2, 30).astype(np.float32)
        >>> theirs = AeonHydra(n_kernels=4, n_groups=8, random_state=0).fit(X)
        >>> ours = HydraTransformer.from_aeon(theirs)
        >>> ours.transform(X).shape
        (6, 128)
        >>> drawn = HydraTransformer(n_kernels=4, n_groups=8, random_state=0).fit(X)  # the same seed
        >>> bool(torch.equal(ours.weights_, drawn.weights_))
        True
        """
        hydra = aeon_transformer._hydra
        weights, channels = hydra_parameters_from_aeon(hydra.W, hydra.idx, int(hydra.k))
        rocket = cls(n_kernels=int(hydra.k), n_groups=int(hydra.g), device=device)
        rocket.seed_ = None
        n_channels = int(aeon_transformer.metadata_["n_channels"]) if hasattr(aeon_transformer, "metadata_") else None
        rocket._set_parameters(weights, channels, n_channels, None)
        return rocket

    def _parameters_on(self, device: torch.device) -> Tuple[Tensor, Tensor]:
        if device not in self._device_parameters:
            self._device_parameters[device] = (self.weights_.to(device), self.channels_.to(device))
        return self._device_parameters[device]

    def transform(self, X: ArrayLike, x_lengths: Optional[ArrayLike] = None) -> ArrayLike:
        """Features (n_cases, n_features) float32.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints), as in fit.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            Optional per-case lengths, each in ``[6, n_timepoints]`` (module docstring).

        Returns
        -------
        numpy.ndarray or torch.Tensor
            float32 (n_cases, n_dilations * 2 * n_groups * n_kernels); a tensor for tensor input.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another channel count or (without ``x_lengths``) length than in fit, NaN or inf.
        """
        who = "HydraTransformer.transform"
        self._check_is_fitted("transform")
        tensor_in = isinstance(X, Tensor)
        x = as_series_tensor(X, who, integer_dtype=torch.float32).to(torch.float32)  # aeon: torch.tensor(X).float()
        check_like_fit(who, x, self.n_channels_, self.n_timepoints_, lengths_given=x_lengths is not None)
        device = check_device(self.device, who) or x.device
        x = x.to(device)
        lengths = lengths_on(x_lengths, device, who)
        if lengths is None:
            check_finite(x, who)
        weights, channels = self._parameters_on(device)
        with torch.no_grad(), public_errors(who), Progress(self.verbose, who, x.shape[0], unit="cases") as progress:
            features = torch.ops.softdtw_torch.hydra_transform(x, weights, channels, lengths)
            progress.update(x.shape[0])
        return features if tensor_in else features.cpu().numpy()


class HydraLayer(nn.Module):
    """Hydra as a differentiable layer: (batch, c_in, seq_len) -> (batch, n_features).

    In x's precision (float32, or float64 for float64 x). Kernels and channels are drawn like
    aeon's ``HydraTransformer(random_state=seed)`` for series of ``seq_len`` points and ``c_in``
    channels. With ``learnable=True`` the weights are an ``nn.Parameter`` trained through the
    ``count_max`` features; otherwise a buffer. Scriptable with ``torch.jit.script``.
    ``forward(x, x_lengths=None)`` returns the features of ``x``.

    Parameters
    ----------
    c_in : int
        The number of channels (>= 1).
    seq_len : int
        The series length the kernels are drawn for (>= 1; it sets the dilations).
    n_kernels : int, default 8
        Kernels per group.
    n_groups : int, default 64
        Groups per dilation.
    max_num_channels : int, default 8
        At most this many channels summed per group.
    learnable : bool, default ``False``
        Make the weights a parameter (else a buffer).
    seed : int or None, default None
        aeon's ``random_state``; None draws one from numpy's global RNG.

    Attributes
    ----------
    n_features : int
        The number of features per case.

    Raises
    ------
    ValueError
        Bad sizes (named ``HydraLayer``), a series length Hydra cannot take.
    TypeError
        Sizes that are not ints.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.rocket import HydraLayer
    >>> layer = HydraLayer(c_in=2, seq_len=30, n_kernels=4, n_groups=8, seed=0, learnable=True)
    >>> x = torch.randn(6, 2, 30, generator=torch.Generator().manual_seed(0))
    >>> features = layer(x)
    >>> features.shape, layer.n_features
    (torch.Size([6, 128]), 128)
    >>> features.sum().backward()  # through the count_max features
    >>> layer.weights.grad.shape == layer.weights.shape
    True
    """

    def __init__(self, c_in: int, seq_len: int, n_kernels: int = 8, n_groups: int = 64, max_num_channels: int = 8,
                 learnable: bool = False, seed: Optional[int] = None) -> None:
        super().__init__()
        who = "HydraLayer"
        c_in = _check_int(c_in, who, "c_in", 1)
        seq_len = _check_int(seq_len, who, "seq_len", 1)
        shape_only = torch.empty(0, c_in, seq_len)
        with public_errors(who):
            weights, channels = torch.ops.softdtw_torch.hydra_fit(shape_only, n_kernels, n_groups, max_num_channels,
                                                                  draw_seed(seed, who))
        if learnable:
            self.weights = nn.Parameter(weights)
        else:
            self.register_buffer("weights", weights)
        self.register_buffer("channels", channels)
        self.n_features = int(weights.shape[0] * weights.shape[1] * 2 * weights.shape[2] * weights.shape[3])

    def forward(self, x: Tensor, x_lengths: Optional[Tensor] = None) -> Tensor:
        """The Hydra features of ``x``.

        Parameters
        ----------
        x : torch.Tensor
            (batch, c_in, n_timepoints), finite, float32 or float64.
        x_lengths : torch.Tensor or None, default None
            (batch,) lengths, each in ``[6, n_timepoints]``.

        Returns
        -------
        torch.Tensor
            (batch, n_features), in x's precision.
        """
        if not torch.jit.is_scripting():
            with public_errors("HydraLayer"):  # the operator's errors name the layer (eager only)
                return torch.ops.softdtw_torch.hydra_transform(x, self.weights, self.channels, x_lengths)
        return torch.ops.softdtw_torch.hydra_transform(x, self.weights, self.channels, x_lengths)

    def extra_repr(self) -> str:
        return f"n_features={self.n_features}, learnable={isinstance(self.weights, nn.Parameter)}"
