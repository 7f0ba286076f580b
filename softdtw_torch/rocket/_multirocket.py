"""MultiRocket (Tan et al. 2022) on the ``multirocket_fit`` / ``multirocket_transform`` operators.

:class:`MultiRocket` reproduces aeon's ``MultiRocket`` (aeon 1.6, ``random_state`` set): the same
``parameter`` and ``parameter1`` from ``fit`` and bit-identical float32 features from ``transform``
(see ``docs/design/rocket.md`` §8 and ``csrc/multirocket/math.h`` for aeon's rounding order and
its reading of the first difference). The operators can also be called directly::

    p = torch.ops.softdtw_torch.multirocket_fit(x, 6_250, 32, seed)            # 10 tensors
    features = torch.ops.softdtw_torch.multirocket_transform(x, *p[:5], *p[7:])  # (n_cases, 8 * n)

(the transform reads the first difference with the series' channel combinations, as aeon's does,
so ``p[5]`` and ``p[6]`` are not arguments).

Documented behaviours
---------------------
* Features: for the series then its first difference, four blocks of ``84 * (n_kernels // 84)``
  float32 features each, aeon's order: PPV, LSPV (longest stretch of positive values, aeon's
  definition), MPV (mean of positive values) and MIPV (mean of their indices). Not differentiable:
  the operators return tensors that do not require grad.
* At least 10 time points (9 for the first difference); aeon accepts 9, where its first
  difference gets a dilation of 0. ``n_kernels`` below 84 is refused (aeon divides by zero).
* ``n_features_per_kernel`` must be 4: aeon's transform always writes the four pooling operators,
  and other values give it a wrongly sized output.
* ``x_lengths`` (one length per case, each in ``[10, n_timepoints]``): case ``i`` is transformed
  as if it were alone with its first ``x_lengths[i]`` time points. A kernel whose unpadded output
  is empty (a length ``<= 8 * d``) gives PPV 0, LSPV 0, MPV 0 and MIPV -1 (aeon divides by zero).
* ``normalise``: each case and channel as aeon normalises it, in numpy on the host (fit: float32
  ``(X - mean) / (std + 1e-8)``; transform: the same in float64 before the float32 conversion).
* A mean of positive values beyond float32's range (only for ``|x|`` near 1e37) is refused
  (ValueError); aeon would replace it with the largest float32 (``np.nan_to_num``).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from .. import _ops  # noqa: F401  (loads the operators)
from .._base import check_device, draw_seed
from .._errors import public_errors
from .._input import _check_int
from .._ops import _C
from .._progress import Progress
from ._input import as_series_tensor
from ._minirocket import _PARAMETER_DTYPES, _KernelParametersTransformer

__all__ = ["MultiRocket"]

ArrayLike = Union[np.ndarray, torch.Tensor]


def _normalised(X: ArrayLike, who: str, dtype: Any) -> np.ndarray:
    """aeon's per-case, per-channel normalisation, in numpy, after converting X to dtype (None:
    X's own floating dtype; integers become float64)."""
    x = as_series_tensor(X, who).cpu().numpy()
    x = x.astype(dtype) if dtype is not None else x
    return (x - x.mean(axis=-1, keepdims=True)) / (x.std(axis=-1, keepdims=True) + 1e-8)


class MultiRocket(_KernelParametersTransformer):
    """MultiRocket transform: float32 features bit-identical to aeon's ``MultiRocket.transform``.

    Same parameters as aeon's for the same ``random_state``
    (tests/rocket/test_multirocket.py::test_fit_and_transform_match_aeon).

    ``transform`` returns float32 ``(n_cases, 8 * 84 * (n_kernels // 84))``: numpy for numpy
    input, a tensor (on the computing device) for tensor input. ``fit`` runs on the CPU. NaN and
    inf are refused (ValueError). aeon's ``n_jobs`` is not a parameter: the CPU kernel uses
    torch's threads (``torch.set_num_threads``). The fitted ``parameter`` and ``parameter1``
    (read-only properties) are aeon's: for one channel the 3-tuple ``(dilations,
    num_features_per_dilation, biases)``, otherwise the 5-tuple with
    ``num_channels_per_combination`` and ``channel_indices`` first. A scikit-learn transformer.

    Parameters
    ----------
    n_kernels : int, default 6_250
        aeon's ``n_kernels``: ``84 * (n_kernels // 84)`` features per pooling operator and
        representation, ``8 * 84 * (n_kernels // 84)`` in all (49,728 by default); >= 84.
    max_dilations_per_kernel : int, default 32
        aeon's bound on the number of dilations per kernel (>= 1).
    n_features_per_kernel : int, default 4
        Must be 4 (see the module docstring).
    normalise : bool, default ``False``
        Normalise each case and channel as aeon does (module docstring).
    random_state : None, int or numpy.random.RandomState
        ``int``: the seed (aeon's numbers for the same seed). ``RandomState``: draws the seed
        (``randint(2**31 - 1)``) at each ``fit``. ``None``: a fresh seed from numpy's global RNG.
    device : None, str or torch.device
        Where ``transform`` computes. ``None``: on the input tensor's device (CPU for numpy input).
    verbose : bool, default ``False``
        Report the progress of ``fit`` and ``transform``, one operator call each over all the
        cases, as :class:`MiniRocket` does. Not one of aeon's parameters; the results are the
        same, bit for bit.

    Attributes
    ----------
    n_kernels_ : int
        The ``n_kernels`` used.
    n_channels_ : int
        The channels fit saw.
    n_timepoints_ : int
        The length fit saw.
    seed_ : int
        The seed used (None after :meth:`from_parameters`).
    n_features_in_ : int
        The number of channels.

    Examples
    --------
    >>> import numpy as np
    >>> from softdtw_torch.rocket import MultiRocket
    >>> X = np.random.RandomState(0).randn(6, 2, 30).astype(np.float32)
    >>> multirocket = MultiRocket(n_kernels=84, random_state=0).fit(X)
    >>> features = multirocket.transform(X)
    >>> features.shape, features.dtype  # 8 blocks of 84
    ((6, 672), dtype('float32'))
    >>> len(multirocket.parameter), len(multirocket.parameter1)
    (5, 5)
    """

    _parameter_dtypes = _PARAMETER_DTYPES * 2

    def __init__(
        self,
        n_kernels: int = 6_250,
        max_dilations_per_kernel: int = 32,
        n_features_per_kernel: int = 4,
        normalise: bool = False,
        random_state: Any = None,
        device: Optional[Union[str, torch.device]] = None,
        verbose: bool = False,
    ) -> None:
        self.n_kernels = n_kernels
        self.max_dilations_per_kernel = max_dilations_per_kernel
        self.n_features_per_kernel = n_features_per_kernel
        self.normalise = normalise
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def _aeon_form(self, parameters: Tuple[np.ndarray, ...]) -> Tuple[np.ndarray, ...]:
        return parameters[2:] if self.n_channels_ == 1 else parameters

    @property
    def parameter(self) -> Tuple[np.ndarray, ...]:
        """aeon's ``parameter`` (the series'); a property, so that ``fit`` only sets private and
        ``_``-suffixed attributes (scikit-learn's rule)."""
        self._check_is_fitted("parameter")
        return self._aeon_form(self._parameters[:5])

    @property
    def parameter1(self) -> Tuple[np.ndarray, ...]:
        """aeon's ``parameter1`` (the first difference's)."""
        self._check_is_fitted("parameter1")
        return self._aeon_form(self._parameters[5:])

    def _check_n_features_per_kernel(self, who: str) -> None:
        if self.n_features_per_kernel != 4:
            raise ValueError(
                f"{who}: expected n_features_per_kernel=4 (aeon's transform always writes its four pooling "
                f"operators), got {self.n_features_per_kernel!r}"
            )

    def fit(self, X: ArrayLike, y: Any = None) -> "MultiRocket":
        """Fit dilations and biases to X (n_cases, [n_channels,] n_timepoints) and to its first difference.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints), at least 10 time points,
            finite.
        y : None
            Ignored.

        Returns
        -------
        self : MultiRocket
            The fitted transformer.

        Raises
        ------
        ValueError
            ``n_features_per_kernel`` other than 4, ``n_kernels`` < 84, series too short, NaN or inf
            (the errors name ``MultiRocket.fit``).
        TypeError
            Parameters of the wrong types.
        """
        who = "MultiRocket.fit"
        self._check_n_features_per_kernel(who)
        n_kernels = _check_int(self.n_kernels, who, "n_kernels", _C.MINIROCKET_KERNELS)
        max_dilations = _check_int(self.max_dilations_per_kernel, who, "max_dilations_per_kernel", 1)
        check_device(self.device, who)  # where transform will compute: checked now, as every parameter
        x = as_series_tensor(X, who, integer_dtype=torch.float32)
        if self.normalise:  # aeon: float32 first, then normalised in float32
            x = torch.from_numpy(_normalised(x, who, np.float32))
        self.seed_ = draw_seed(self.random_state, "MultiRocket")
        self.n_kernels_ = n_kernels
        # The operator's errors (too short, NaN) name this method.
        with public_errors(who), Progress(self.verbose, who, x.shape[0], unit="cases") as progress:
            params = torch.ops.softdtw_torch.multirocket_fit(x.cpu(), n_kernels, max_dilations, self.seed_)
            progress.update(x.shape[0])
        self._set_parameters(tuple(p.numpy() for p in params), int(x.shape[1]), int(x.shape[2]))
        return self

    @classmethod
    def from_parameters(
        cls,
        parameter: Sequence[ArrayLike],
        parameter1: Sequence[ArrayLike],
        n_channels: Optional[int] = None,
        n_timepoints: Optional[int] = None,
        device: Optional[Union[str, torch.device]] = None,
    ) -> "MultiRocket":
        """A fitted MultiRocket from aeon's ``parameter`` and ``parameter1``.

        ``normalise`` is False: normalise X beforehand.

        Parameters
        ----------
        parameter, parameter1 : tuple or list
            aeon's arrays for the series and its first difference: 3-tuples for one channel, 5-tuples
            otherwise (both of one kind).
        n_channels : int or None, default None
            When given, checked by ``transform`` like after ``fit`` (1 for 3-tuples).
        n_timepoints : int or None, default None
            When given, checked by ``transform`` like after ``fit``.
        device : None, str or torch.device, default None
            Where ``transform`` computes.

        Returns
        -------
        MultiRocket
            A fitted transformer with these parameters.

        Raises
        ------
        ValueError
            Tuples of different or wrong lengths.

        Examples
        --------
        >>> import numpy as np
        >>> from softdtw_torch.rocket import MultiRocket
        >>> X = np.random.RandomState(0).randn(6, 2, 30).astype(np.float32)
        >>> fitted = MultiRocket(n_kernels=84, random_state=0).fit(X)
        >>> copy = MultiRocket.from_parameters(fitted.parameter, fitted.parameter1)
        >>> bool(np.array_equal(copy.transform(X), fitted.transform(X)))
        True
        """
        who = "MultiRocket.from_parameters"
        if len(parameter) != len(parameter1) or len(parameter) not in (3, 5):
            raise ValueError(
                f"{who}: expected aeon's parameter and parameter1, both 3-tuples (one channel) or both "
                f"5-tuples, got {len(parameter)} and {len(parameter1)} arrays"
            )
        full = []
        for p in (parameter, parameter1):
            p = tuple(p)
            if len(p) == 3:  # one channel: every combination reads channel 0
                n_combinations = _C.MINIROCKET_KERNELS * len(np.asarray(p[0]))
                p = (np.ones(n_combinations, np.int32), np.zeros(n_combinations, np.int32)) + p
            full.extend(p)
        n_features = _C.MINIROCKET_KERNELS * int(np.sum(np.asarray(full[3])))
        rocket = cls(n_kernels=n_features, device=device)
        rocket.n_kernels_ = n_features
        rocket.seed_ = None
        rocket._set_parameters(full, 1 if len(parameter) == 3 else n_channels, n_timepoints)
        return rocket

    def transform(self, X: ArrayLike, x_lengths: Optional[ArrayLike] = None) -> ArrayLike:
        """Features (n_cases, 8 * n_features) float32.

        Parameters
        ----------
        X : numpy.ndarray or torch.Tensor
            (n_cases, n_channels, n_timepoints) or (n_cases, n_timepoints), as in fit.
        x_lengths : numpy.ndarray, torch.Tensor, list or None, default None
            Optional per-case lengths, each in ``[10, n_timepoints]`` (not with ``normalise=True``,
            which normalises whole series).

        Returns
        -------
        numpy.ndarray or torch.Tensor
            float32 ``(n_cases, 8 * 84 * (n_kernels_ // 84))``; a tensor for tensor input.

        Raises
        ------
        softdtw_torch.NotFittedError
            Before ``fit``.
        ValueError
            Another channel count or (without ``x_lengths``) length than in fit, NaN or inf,
            ``x_lengths`` with ``normalise=True``.
        """
        who = "MultiRocket.transform"
        tensor_in = isinstance(X, torch.Tensor)
        if self.normalise:
            self._check_is_fitted("transform")
            if x_lengths is not None:
                raise ValueError(f"{who}: normalise=True normalises whole series; normalise X per case and "
                                 f"pass normalise=False to transform with x_lengths")
            normalised = torch.from_numpy(_normalised(X, who, None))
            X = normalised.to(X.device) if tensor_in else normalised
        x, lengths = self._transform_input(X, x_lengths, who)
        p = self._parameters_on(x.device)
        with public_errors(who), Progress(self.verbose, who, x.shape[0], unit="cases") as progress:
            features = torch.ops.softdtw_torch.multirocket_transform(x, *p[:5], *p[7:], lengths)
            progress.update(x.shape[0])
        return features if tensor_in else features.cpu().numpy()
