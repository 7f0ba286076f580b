"""MiniRocket (Dempster et al. 2021) on the ``minirocket_fit`` / ``minirocket_transform`` operators.

:class:`MiniRocket` reproduces aeon's ``MiniRocket`` (aeon 1.6, ``random_state`` set): the same
``parameters`` tuple from ``fit`` and bit-identical float32 features from ``transform`` (see
``docs/design/rocket.md`` §7 and ``csrc/minirocket/math.h`` for the rounding order).
The operators can also be called directly::

    params = torch.ops.softdtw_torch.minirocket_fit(x, 10_000, 32, seed)       # CPU (or CUDA) tensors
    features = torch.ops.softdtw_torch.minirocket_transform(x, *params)        # (n_cases, n_features)

Documented behaviours
---------------------
* Features are float32 PPV values and are not differentiable (piecewise constant): the operators
  return tensors that do not require grad, whatever ``x.requires_grad`` is.
* ``x_lengths`` (one length per case, each in ``[9, n_timepoints]``): case ``i`` is transformed as
  if it were alone with its first ``x_lengths[i]`` time points (what follows is never read, so it
  may hold padding of any value). A kernel whose unpadded output is empty (a length ``<= 8 * d``
  for its dilation ``d``) gives feature 0, where aeon's arithmetic would give NaN; lengths below 9
  are an error, as in aeon's ``fit``.
* Dilations use the C library's ``pow``, like numpy's scalar loop. numpy's AVX-512 loop (used by
  aeon's ``np.logspace`` on AVX-512 machines) is not correctly rounded, so there aeon's largest
  dilation is one smaller for the few lengths where ``(n_timepoints - 1) / 8`` is an integer that
  is not a power of two (25, 49, 97, ...). Everything else matches aeon on every machine tested.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from sklearn.base import TransformerMixin

from .. import _ops  # noqa: F401  (loads the operators)
from .._base import Estimator, check_device, draw_seed, series_tags
from .._errors import public_errors
from .._ops import _C
from .._progress import Progress
from ._input import as_series_tensor, check_like_fit, lengths_on

__all__ = ["MiniRocket"]

_PARAMETER_DTYPES = (np.int32, np.int32, np.int32, np.int32, np.float32)

ArrayLike = Union[np.ndarray, torch.Tensor]


class _KernelParametersTransformer(TransformerMixin, Estimator):
    """What MiniRocket and MultiRocket share: fitted parameter arrays kept as numpy (aeon's dtypes)
    with copies per device, and the checks of transform's input against fit's."""

    _fitted_attribute = "_parameters"
    _parameter_dtypes: Tuple[Any, ...] = _PARAMETER_DTYPES

    def __sklearn_tags__(self):
        tags = series_tags(super().__sklearn_tags__())
        tags.transformer_tags.preserves_dtype = ["float32"]  # features are float32 for any input
        return tags

    def _set_parameters(self, parameters: Sequence[Any], n_channels: Optional[int], n_timepoints: Optional[int]):
        self._parameters = tuple(
            np.ascontiguousarray(np.asarray(p.cpu() if isinstance(p, torch.Tensor) else p, dtype=dtype))
            for p, dtype in zip(parameters, self._parameter_dtypes)
        )
        self.n_channels_ = n_channels
        self.n_timepoints_ = n_timepoints
        if n_channels is not None:
            self.n_features_in_ = n_channels
        self._device_parameters: Dict[torch.device, Tuple[torch.Tensor, ...]] = {}

    def _parameters_on(self, device: torch.device) -> Tuple[torch.Tensor, ...]:
        if device not in self._device_parameters:
            self._device_parameters[device] = tuple(torch.from_numpy(p).to(device) for p in self._parameters)
        return self._device_parameters[device]

    def _transform_input(self, X: ArrayLike, x_lengths: Optional[ArrayLike], who: str):
        """X as a float tensor on the computing device, checked against fit's channels and length,
        and x_lengths as a tensor there (or None)."""
        self._check_is_fitted("transform")
        x = as_series_tensor(X, who, integer_dtype=torch.float32)
        check_like_fit(who, x, self.n_channels_, self.n_timepoints_, lengths_given=x_lengths is not None)
        device = check_device(self.device, who) or x.device
        x = x.to(device)
        lengths = lengths_on(x_lengths, device, who)
        return x, lengths


class MiniRocket(_KernelParametersTransformer):
    """MiniRocket transform: float32 features bit-identical to aeon's ``MiniRocket.transform``.

    Same ``parameters`` as aeon's for the same ``random_state``
    (tests/rocket/test_minirocket.py::test_fit_and_transform_match_aeon).

    ``transform`` returns float32 ``(n_cases, 84 * (n_kernels_ // 84))``: a numpy array for numpy
    input, a tensor (on the computing device) for tensor input. ``X`` is 3-D ``(n_cases,
    n_channels, n_timepoints)`` or 2-D ``(n_cases, n_timepoints)`` (one channel). See the module
    docstring for ``x_lengths`` and the documented behaviours. ``fit`` runs on the CPU. The
    operators refuse NaN and inf (ValueError) and series shorter than 9 time points, as aeon.
    The fitted ``parameters`` (a read-only property) are aeon's tuple of 5 numpy arrays
    ``(num_channels_per_combination int32, channel_indices int32, dilations int32,
    num_features_per_dilation int32, biases float32)``. A scikit-learn transformer
    (``TransformerMixin``).

    Parameters
    ----------
    n_kernels : int, default 10_000
        Number of features, rounded down to a multiple of 84 (84 when smaller), as in aeon.
    max_dilations_per_kernel : int, default 32
        aeon's bound on the number of dilations per kernel (>= 1).
    random_state : None, int or numpy.random.RandomState
        ``int``: the seed (aeon's numbers for the same seed). ``RandomState``: draws the seed
        (``randint(2**31 - 1)``) at each ``fit``. ``None``: a fresh seed from numpy's global RNG.
    device : None, str or torch.device
        Where ``transform`` computes. ``None``: on the input tensor's device (CPU for numpy input).
    verbose : bool, default ``False``
        Report the progress of ``fit`` and ``transform``: a tqdm bar when tqdm is installed, else a
        few lines on stderr (the package's convention, CONTRIBUTING.md "Progress"). Each is one
        operator call over all the cases, so the report says when it started and ended, not how
        far it is (splitting the cases into chunks is not proven to keep the features' bits). Not
        one of aeon's parameters; the results are the same, bit for bit.

    Attributes
    ----------
    n_kernels_ : int
        The number of features used.
    n_channels_ : int
        The channels fit saw.
    n_timepoints_ : int
        The length fit saw.
    seed_ : int
        The seed used (None after :meth:`from_parameters`).
    n_features_in_ : int
        The number of channels (as tslearn's ``n_features_in_``; 2-D input is one channel), as
        ``n_channels_``.

    See Also
    --------
    MiniRocketClassifier : the MiniRocket classification pipeline.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.rocket import MiniRocket
    >>> X = np.random.RandomState(0).randn(6, 2, 30).astype(np.float32)
    >>> minirocket = MiniRocket(n_kernels=84, random_state=0).fit(X)
    >>> features = minirocket.transform(X)
    >>> features.shape, features.dtype
    ((6, 84), dtype('float32'))
    >>> len(minirocket.parameters), minirocket.seed_
    (5, 0)
    >>> minirocket.transform(X[:, :, :20], x_lengths=[20] * 6).shape
    (6, 84)
    """

    def __init__(
        self,
        n_kernels: int = 10_000,
        max_dilations_per_kernel: int = 32,
        random_state: Any = None,
        device: Optional[Union[str, torch.device]] = None,
        verbose: bool = False,
    ) -> None:
        self.n_kernels = n_kernels
        self.max_dilations_per_kernel = max_dilations_per_kernel
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    @property
    def parameters(self) -> Tuple[np.ndarray, ...]:
        """aeon's parameters tuple; a property, so that ``fit`` only sets private and
        ``_``-suffixed attributes (scikit-learn's rule)."""
        self._check_is_fitted("parameters")  # a NotFittedError is an AttributeError: hasattr is False
        return self._parameters

    def fit(self, X: ArrayLike, y: Any = None) -> "MiniRocket":
        """Fit dilations and biases to X (n_cases, [n_channels,] n_timepoints); y is ignored.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints), at least 9 time points,
            finite.
        y : None
            Ignored.

        Returns
        -------
        self : MiniRocket
            The fitted transformer.

        Raises
        ------
        ValueError
            Series too short, NaN or inf, a bad ``max_dilations_per_kernel`` or ``device`` (the errors
            name ``MiniRocket.fit``).
        TypeError
            Parameters of the wrong types.
        """
        who = "MiniRocket.fit"
        check_device(self.device, who)  # where transform will compute: checked now, as every parameter
        x = as_series_tensor(X, who, integer_dtype=torch.float32)
        self.seed_ = draw_seed(self.random_state, "MiniRocket")
        self.n_kernels_ = max(int(self.n_kernels), _C.MINIROCKET_KERNELS)
        # The operator's errors (too short, NaN, max_dilations_per_kernel) name this method.
        with public_errors(who), Progress(self.verbose, who, x.shape[0], unit="cases") as progress:
            params = torch.ops.softdtw_torch.minirocket_fit(
                x.cpu(), self.n_kernels_, int(self.max_dilations_per_kernel), self.seed_
            )
            progress.update(x.shape[0])
        self._set_parameters(tuple(p.numpy() for p in params), int(x.shape[1]), int(x.shape[2]))
        return self

    @classmethod
    def from_parameters(
        cls,
        parameters: Sequence[ArrayLike],
        n_channels: Optional[int] = None,
        n_timepoints: Optional[int] = None,
        device: Optional[Union[str, torch.device]] = None,
    ) -> "MiniRocket":
        """A fitted MiniRocket from aeon's 5-tuple (e.g. ``aeon_minirocket.parameters``).

        Parameters
        ----------
        parameters : tuple or list
            aeon's 5 parameter arrays (numpy or tensors).
        n_channels : int or None, default None
            When given, checked by ``transform`` like after ``fit``; otherwise any channel count the
            parameters can index is accepted.
        n_timepoints : int or None, default None
            When given, checked by ``transform`` like after ``fit``; otherwise any length >= 9.
        device : None, str or torch.device, default None
            Where ``transform`` computes.

        Returns
        -------
        MiniRocket
            A fitted transformer with these parameters.

        Raises
        ------
        ValueError
            Not 5 arrays.

        Examples
        --------
        >>> import numpy as np
        >>> from softdtw_torch.rocket import MiniRocket
        >>> X = np.random.RandomState(0).randn(6, 2, 30).astype(np.float32)
        >>> fitted = MiniRocket(n_kernels=84, random_state=0).fit(X)
        >>> copy = MiniRocket.from_parameters(fitted.parameters)
        >>> bool(np.array_equal(copy.transform(X), fitted.transform(X)))
        True
        """
        if len(parameters) != 5:
            raise ValueError(f"MiniRocket.from_parameters: expected aeon's 5 parameter arrays, got {len(parameters)}")
        n_features = _C.MINIROCKET_KERNELS * int(np.sum(np.asarray(parameters[3])))
        rocket = cls(n_kernels=n_features, device=device)
        rocket.n_kernels_ = n_features
        rocket.seed_ = None
        rocket._set_parameters(parameters, n_channels, n_timepoints)
        return rocket

    def transform(self, X: ArrayLike, x_lengths: Optional[ArrayLike] = None) -> ArrayLike:
        """Features (n_cases, n_features) float32.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints), as in fit.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            Optional per-case lengths, each in ``[9, n_timepoints]`` (module docstring).

        Returns
        -------
        numpy.ndarray or torch.Tensor
            float32 ``(n_cases, 84 * (n_kernels_ // 84))``; a tensor on the computing device for
            tensor input.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another channel count or (without ``x_lengths``) length than in fit, NaN or inf, lengths
            out of range.
        """
        who = "MiniRocket.transform"
        x, lengths = self._transform_input(X, x_lengths, who)
        with public_errors(who), Progress(self.verbose, who, x.shape[0], unit="cases") as progress:
            features = torch.ops.softdtw_torch.minirocket_transform(x, *self._parameters_on(x.device), lengths)
            progress.update(x.shape[0])
        return features if isinstance(X, torch.Tensor) else features.cpu().numpy()
