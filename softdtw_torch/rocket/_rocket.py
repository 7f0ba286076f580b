"""ROCKET (Dempster et al. 2020) as operators: aeon's ``Rocket`` with the same kernels and features.

``Rocket`` is the sklearn-style transformer, ``RocketLayer`` the ``nn.Module`` (frozen or learnable
kernels), ``rocket_transform`` the functional form. All of them call
``torch.ops.softdtw_torch.rocket_transform``, which works on CPU and CUDA, under autograd, in
TorchScript, with ``torch.compile`` and from C++.

Documented behaviours (tested in tests/rocket/test_rocket.py):

- Features: float32 ``(n_cases, 2 * n_kernels)``, interleaved ``[ppv_0, max_0, ppv_1, ...]`` as aeon.
- ``normalise=True``: aeon's per-(case, channel) z-normalisation (numpy's mean and population std
  in the input's precision, std == 0 -> 1, no epsilon), then conversion to the accumulation precision.
- ``accumulate``: ``"float64"`` accumulates in float64; ``"float32_fma"`` (default) in float32
  with one fused multiply-add per term in aeon's source order; ``"float32"`` without FMA.
- Exactness, given the same kernels (``Rocket.from_kernels(aeon_rocket.kernels)``):
  ``accumulate="float64"`` is bit-identical to aeon's convolution code run on float64 input
  (what aeon <= 1.5 returned); ``"float32_fma"`` (default) and ``"float32"`` are bit-identical to
  aeon's convolution source compiled with one FMA per term / without FMA (its source order).
  aeon >= 1.6's own ``Rocket.transform`` (float32, ``fastmath``: numba vectorises the tap loop for
  the host CPU) is bit-identical to none of them and depends on the CPU: some of the default
  mode's features differ from it in their last bits (MAX within float32 rounding, PPV by one
  count in rare features). (tests/rocket/test_rocket.py; docs/user_guide/rocket.md, "Accumulation modes", has the
  measured figures.)
- ``x_lengths``: case i is transformed as if it were alone with its first ``x_lengths[i]`` values
  (normalisation and output positions included). A kernel that does not fit a case even with its
  padding (no output position) gives PPV = 0 and MAX = 0 for that case (aeon would divide by zero).
- Gradients: MAX through the position of its first maximum (an exact subgradient) w.r.t. the series,
  weights and biases; the hard PPV has zero gradient; ``ppv_temperature=tau`` replaces the PPV by
  the soft ``mean(sigmoid(s / tau))`` and differentiates it.
"""
from typing import Any, Optional, Sequence, Union

import numpy as np
import torch
from sklearn.base import TransformerMixin
from torch import Tensor, nn

from .._base import Estimator, check_device, draw_seed, series_tags
from .._errors import public_errors
from .._progress import Progress
from ._input import as_series_tensor
from ._kernels import RocketKernels, _checked_kernels, generate_kernels, kernels_from_aeon, kernels_to_aeon

__all__ = ["rocket_transform", "Rocket", "RocketLayer"]

ArrayLike = Union[np.ndarray, Tensor]
_ACCUMULATE_MODES = ("float32_fma", "float64", "float32")


def rocket_transform(
    x: Tensor,
    kernels: Sequence[Tensor],
    normalise: bool = True,
    accumulate: str = "float32_fma",
    x_lengths: Optional[Tensor] = None,
    ppv_temperature: Optional[float] = None,
) -> Tensor:
    """ROCKET features of ``x`` (n_cases, n_channels, n_timepoints) with an aeon kernels tuple.

    Differentiable w.r.t. ``x`` and the kernels' weights and biases (see the module docstring).

    Parameters
    ----------
    x : torch.Tensor
        (n_cases, n_channels, n_timepoints), float32 or float64, finite.
    kernels : tuple or list
        The kernels tuple (7 tensors, see :mod:`softdtw_torch.rocket._kernels`), e.g.
        :func:`~softdtw_torch.rocket.generate_kernels`'s; moved to x's device.
    normalise : bool, default ``True``
        aeon's per-(case, channel) z-normalisation first (module docstring).
    accumulate : {'float32_fma', 'float64', 'float32'}, default 'float32_fma'
        The accumulation mode (module docstring, "Exactness").
    x_lengths : torch.Tensor or None, default None
        (n_cases,) lengths: case i is transformed as if alone with its first ``x_lengths[i]`` values.
    ppv_temperature : float or None, default None
        ``tau``: the soft PPV ``mean(sigmoid(s / tau))`` instead of the hard one, differentiable.

    Returns
    -------
    torch.Tensor
        float32 (n_cases, 2 * n_kernels) on x's device, interleaved ``[ppv_0, max_0, ppv_1, ...]``.

    Raises
    ------
    ValueError
        Bad shapes, NaN or inf in ``x``, kernels reading channels ``x`` does not have, an unknown
        accumulation mode, lengths out of range.
    torch.OutOfMemoryError
        Features beyond what the device can give (the memory preflight).

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.rocket import generate_kernels, rocket_transform
    >>> kernels = generate_kernels(n_timepoints=30, n_channels=2, n_kernels=100, seed=0)
    >>> x = torch.randn(6, 2, 30, generator=torch.Generator().manual_seed(0))
    >>> features = rocket_transform(x, kernels)
    >>> features.shape, features.dtype
    (torch.Size([6, 200]), torch.float32)
    """
    w, lengths, b, d, p, m, ch = [t.to(x.device) for t in kernels]
    return torch.ops.softdtw_torch.rocket_transform(x, w, lengths, b, d, p, m, ch, normalise, accumulate, x_lengths,
                                                    ppv_temperature)


class Rocket(TransformerMixin, Estimator):
    """aeon's ``Rocket`` transformer on softdtw-torch's operators (sklearn-style).

    ``fit`` draws the kernels from X's shape only, as aeon's. Their tuple is the ``kernels``
    property (aeon's tuple of 7 numpy arrays; read-only). ``transform`` returns a float32 numpy
    array for numpy input and a torch tensor (on the device) for tensor input. A series length other
    than the fitted one is an error unless ``x_lengths`` is given; another channel count is always
    an error. NaN and inf are refused (ValueError). A scikit-learn transformer
    (``TransformerMixin``).

    Parameters
    ----------
    n_kernels : int, default 10_000
        Number of random kernels (features = 2 * n_kernels).
    normalise : bool, default ``True``
        z-normalise each case and channel first (aeon's default).
    random_state : None, int or numpy.random.RandomState, default None
        As in aeon; the same int gives aeon's kernels (all fields identical; the weights
        bit-identical on CPUs where numba sums rows in aeon's order, see docs/user_guide/rocket.md, "Seeded
        kernels").
    device : None, str or torch.device, default None
        Where transform runs (None: the input tensor's device, the CPU for numpy input).
    accumulate : {'float32_fma', 'float64', 'float32'}, default 'float32_fma'
        What each is bit-identical to is in the module docstring ("Exactness").
    chunk_size : int or None, default None
        Cases per operator call, so very large collections stream through bounded memory (None:
        4096).
    verbose : bool, default ``False``
        Report the progress of ``fit`` and ``transform`` (``transform``: after each ``chunk_size``
        cases): a tqdm bar when tqdm is installed, else a few lines on stderr (the package's
        convention, CONTRIBUTING.md "Progress"). Not one of aeon's parameters; the features are the
        same, bit for bit.

    Attributes
    ----------
    n_channels_ : int
        The number of channels fit saw.
    n_features_in_ : int
        The number of channels too, as tslearn's ``n_features_in_`` (2-D input is one channel).
    n_timepoints_ : int
        The series length fit saw.

    See Also
    --------
    RocketLayer : the same transform as an ``nn.Module``.
    RocketClassifier : the ROCKET classification pipeline.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.rocket import Rocket
    >>> X = np.random.RandomState(0).randn(6, 2, 30).astype(np.float32)
    >>> rocket = Rocket(n_kernels=100, random_state=0).fit(X)
    >>> features = rocket.transform(X)
    >>> features.shape, features.dtype
    ((6, 200), dtype('float32'))
    >>> len(rocket.kernels), rocket.n_channels_, rocket.n_timepoints_
    (7, 2, 30)
    >>> rocket.transform(X[:, :, :20], x_lengths=[20] * 6).shape  # shorter series, with their lengths
    (6, 200)
    """

    _fitted_attribute = "_kernels"

    def __init__(self, n_kernels: int = 10_000, normalise: bool = True, random_state: Any = None,
                 device: Optional[Union[str, torch.device]] = None, accumulate: str = "float32_fma",
                 chunk_size: Optional[int] = None, verbose: bool = False) -> None:
        self.n_kernels = n_kernels
        self.normalise = normalise
        self.random_state = random_state
        self.device = device
        self.accumulate = accumulate
        self.chunk_size = chunk_size
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = series_tags(super().__sklearn_tags__())
        tags.transformer_tags.preserves_dtype = ["float32"]  # features are float32 for any input
        return tags

    @property
    def kernels(self) -> tuple:
        """aeon's kernels tuple (7 numpy arrays); a property, so that ``fit`` only sets private
        and ``_``-suffixed attributes (scikit-learn's rule)."""
        self._check_is_fitted("kernels")  # a NotFittedError is an AttributeError: hasattr is False
        return self._aeon_kernels

    # fit / transform ---------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: Any = None) -> "Rocket":
        """Draw the kernels from X's shape only (like aeon).

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints); only its shape is read,
            but NaN and inf are refused as by ``transform``.
        y : None
            Ignored.

        Returns
        -------
        self : Rocket
            The fitted transformer.

        Raises
        ------
        ValueError
            An unknown ``accumulate``, a bad ``device``, X of another rank or not finite, series too
            short, ``n_kernels`` < 1, a negative seed (the errors name ``Rocket``).
        TypeError
            Parameters of the wrong types.
        """
        if self.accumulate not in _ACCUMULATE_MODES:
            raise ValueError(f"Rocket: accumulate must be one of {_ACCUMULATE_MODES}, got {self.accumulate!r}")
        check_device(self.device, "Rocket")  # where transform will compute: checked now, as every parameter
        x = as_series_tensor(X, "Rocket", finite=True)  # only its shape is read; NaN refused as by transform
        _, self.n_channels_, self.n_timepoints_ = x.shape
        self.n_features_in_ = self.n_channels_
        # An int goes to the operator as it is (it checks seed >= 0 and keeps the low 32 bits, as aeon).
        self._seed = draw_seed(self.random_state, "Rocket", check_range=False)
        # The generator's errors (series too short, n_kernels, seed) name Rocket.
        with public_errors("Rocket"), Progress(self.verbose, "Rocket.fit", x.shape[0], unit="cases") as progress:
            self._set_kernels(generate_kernels(self.n_timepoints_, self.n_channels_, self.n_kernels, self._seed))
            progress.update(x.shape[0])
        return self

    def _set_kernels(self, kernels: RocketKernels) -> None:
        self._kernels = kernels
        self._aeon_kernels = kernels_to_aeon(kernels)

    @classmethod
    def from_kernels(cls, kernels: Sequence[ArrayLike], n_channels: Optional[int] = None,
                     n_timepoints: Optional[int] = None, **params: Any) -> "Rocket":
        """A fitted Rocket using an existing kernels tuple (e.g. aeon's ``Rocket().fit(X).kernels``).

        Parameters
        ----------
        kernels : tuple or list
            aeon's 7-array tuple (see :func:`~softdtw_torch.rocket.kernels_from_aeon`).
        n_channels : int or None, default None
            The channel count transform accepts; None: any that covers the kernels' channel indices.
        n_timepoints : int or None, default None
            The length transform accepts; None: any length.
        **params : Any
            The other constructor parameters (``normalise``, ``device``, ``accumulate``, ...).

        Returns
        -------
        Rocket
            A fitted transformer with these kernels.

        Raises
        ------
        ValueError
            A kernels tuple that is not aeon's (see :func:`~softdtw_torch.rocket.kernels_from_aeon`).
        TypeError
            A field of a non-numeric dtype.

        Examples
        --------
        >>> import numpy as np
        >>> from softdtw_torch.rocket import Rocket
        >>> X = np.random.RandomState(0).randn(6, 2, 30).astype(np.float32)
        >>> fitted = Rocket(n_kernels=100, random_state=0).fit(X)
        >>> copy = Rocket.from_kernels(fitted.kernels)
        >>> bool(np.array_equal(copy.transform(X), fitted.transform(X)))
        True
        """
        checked = _checked_kernels("Rocket.from_kernels", kernels)  # before its lengths are read
        rocket = cls(n_kernels=checked.lengths.numel(), **params)
        rocket._set_kernels(checked)
        rocket.n_channels_ = n_channels
        rocket.n_timepoints_ = n_timepoints
        if n_channels is not None:
            rocket.n_features_in_ = n_channels
        return rocket

    def transform(self, X: ArrayLike, x_lengths: Optional[ArrayLike] = None) -> ArrayLike:
        """The ROCKET features of X.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints), of the fitted channels and
            (without ``x_lengths``) the fitted length.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n_cases,) lengths: case i is transformed as if alone with its first ``x_lengths[i]``
            values; series of other lengths than the fitted one need them.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            float32 (n_cases, 2 * n_kernels): numpy for numpy input, a tensor on the device for tensor
            input.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another channel count or (without ``x_lengths``) length than in fit, NaN or inf.
        """
        self._check_is_fitted("transform")
        x = as_series_tensor(X, "Rocket", check_device(self.device, "Rocket"))
        if self.n_channels_ is not None and x.shape[1] != self.n_channels_:
            raise ValueError(f"Rocket: fitted on {self.n_channels_} channels, got X with {x.shape[1]}")
        lengths = None if x_lengths is None else torch.as_tensor(x_lengths, dtype=torch.int64, device=x.device)
        if lengths is None and self.n_timepoints_ is not None and x.shape[2] != self.n_timepoints_:
            raise ValueError(f"Rocket: fitted on series of length {self.n_timepoints_}, got length {x.shape[2]}; "
                             "pass x_lengths to transform series of other lengths")
        kernels = [t.to(x.device) for t in self._kernels]
        chunk = self.chunk_size or 4096
        parts = []
        with torch.no_grad(), public_errors("Rocket"), \
                Progress(self.verbose, "Rocket.transform", x.shape[0], unit="cases") as progress:
            for i in range(0, max(x.shape[0], 1), chunk):
                parts.append(rocket_transform(x[i:i + chunk], kernels, self.normalise, self.accumulate,
                                              None if lengths is None else lengths[i:i + chunk]))
                progress.update(parts[-1].shape[0])
        features = torch.cat(parts) if len(parts) > 1 else parts[0]
        return features if isinstance(X, Tensor) else features.cpu().numpy()

    def fit_transform(self, X: ArrayLike, y: Any = None, x_lengths: Optional[ArrayLike] = None) -> ArrayLike:
        """``fit(X)`` then ``transform(X, x_lengths)``.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints).
        y : None
            Ignored.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            (n_cases,) lengths, for ``transform``.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            float32 (n_cases, 2 * n_kernels).
        """
        return self.fit(X, y).transform(X, x_lengths)


class RocketLayer(nn.Module):
    """ROCKET as a differentiable layer: (batch, c_in, seq_len) -> (batch, 2 * n_kernels) float32.

    Kernels are drawn like aeon's ``Rocket(random_state=seed)`` for series of ``seq_len`` points and
    ``c_in`` channels (or taken from ``kernels``, aeon's tuple). With ``learnable=True`` the weights
    and biases are ``nn.Parameter`` s trained through the MAX features (and the soft PPV when
    ``ppv_temperature`` is set); otherwise they are buffers. Scriptable with ``torch.jit.script``.
    ``forward(x, x_lengths=None)`` returns the features of ``x``.

    Parameters
    ----------
    c_in : int
        The number of channels.
    seq_len : int
        The series length the kernels are drawn for (it sets the dilations).
    n_kernels : int, default 10_000
        The number of kernels.
    normalise : bool, default ``True``
        aeon's per-(case, channel) z-normalisation first.
    learnable : bool, default ``False``
        Make the weights and biases parameters (else buffers).
    seed : int or None, default None
        aeon's ``random_state``; None draws one from numpy's global RNG.
    accumulate : {'float32_fma', 'float64', 'float32'}, default 'float32_fma'
        The accumulation mode (module docstring).
    ppv_temperature : float or None, default None
        The soft PPV's temperature (differentiable); None: the hard PPV.
    kernels : Sequence or None, default None
        aeon's kernels tuple, used instead of drawing kernels.

    Raises
    ------
    ValueError
        Bad sizes or seed (from the kernel generator, named ``RocketLayer``), a kernels tuple that
        is not aeon's.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.rocket import RocketLayer
    >>> layer = RocketLayer(c_in=2, seq_len=30, n_kernels=100, seed=0, learnable=True)
    >>> x = torch.randn(6, 2, 30, generator=torch.Generator().manual_seed(0))
    >>> features = layer(x)
    >>> features.shape
    torch.Size([6, 200])
    >>> features[:, 1::2].sum().backward()  # through the MAX features
    >>> layer.weights.grad.shape == layer.weights.shape
    True
    """

    def __init__(self, c_in: int, seq_len: int, n_kernels: int = 10_000, normalise: bool = True,
                 learnable: bool = False, seed: Optional[int] = None, accumulate: str = "float32_fma",
                 ppv_temperature: Optional[float] = None, kernels: Optional[Sequence[ArrayLike]] = None) -> None:
        super().__init__()
        with public_errors("RocketLayer"):  # the generator's errors name the layer
            k = kernels_from_aeon(kernels) if kernels is not None else generate_kernels(
                seq_len, c_in, n_kernels, draw_seed(seed, "RocketLayer", check_range=False))
        if learnable:
            self.weights = nn.Parameter(k.weights.clone())
            self.biases = nn.Parameter(k.biases.clone())
        else:
            self.register_buffer("weights", k.weights.clone())
            self.register_buffer("biases", k.biases.clone())
        for name in ("lengths", "dilations", "paddings", "num_channel_indices", "channel_indices"):
            self.register_buffer(name, getattr(k, name).clone())
        self.normalise = normalise
        self.accumulate = accumulate
        self.ppv_temperature = ppv_temperature
        self.n_kernels = int(k.lengths.shape[0])

    def forward(self, x: Tensor, x_lengths: Optional[Tensor] = None) -> Tensor:
        """The ROCKET features of ``x``.

        Parameters
        ----------
        x : torch.Tensor
            (batch, c_in, n_timepoints), finite.
        x_lengths : torch.Tensor or None, default None
            (batch,) lengths: case i is transformed as if alone with its first ``x_lengths[i]`` values.

        Returns
        -------
        torch.Tensor
            float32 (batch, 2 * n_kernels).
        """
        if not torch.jit.is_scripting():
            with public_errors("RocketLayer"):  # the operator's errors name the layer (eager only)
                return self._features(x, x_lengths)
        return self._features(x, x_lengths)

    def _features(self, x: Tensor, x_lengths: Optional[Tensor]) -> Tensor:
        return torch.ops.softdtw_torch.rocket_transform(
            x, self.weights, self.lengths, self.biases, self.dilations, self.paddings, self.num_channel_indices,
            self.channel_indices, self.normalise, self.accumulate, x_lengths, self.ppv_temperature)

    def extra_repr(self) -> str:
        return (f"n_kernels={self.n_kernels}, normalise={self.normalise}, accumulate={self.accumulate!r}, "
                f"ppv_temperature={self.ppv_temperature}, learnable={isinstance(self.weights, nn.Parameter)}")
