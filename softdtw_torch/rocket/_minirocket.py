"""MiniRocket (Dempster et al. 2021) on the ``minirocket_fit`` / ``minirocket_transform`` operators.

:class:`MiniRocket` reproduces aeon's ``MiniRocket`` (aeon 1.6, ``random_state`` set): the same
``parameters`` tuple from ``fit`` and bit-identical float32 features from ``transform`` (see
``../shared/design/rocket.md`` §7 and ``csrc/ops/minirocket_common.h`` for the rounding order).
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

import math
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from .. import _ops  # noqa: F401  (loads the operators)
from ._input import as_series_tensor

__all__ = ["MiniRocket"]

_FIT_OP = "minirocket_fit"
_TRANSFORM_OP = "minirocket_transform"
_KERNELS = 84
_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_PARAMETER_NAMES = (
    "num_channels_per_combination",
    "channel_indices",
    "dilations",
    "num_features_per_dilation",
    "biases",
)
_PARAMETER_DTYPES = (np.int32, np.int32, np.int32, np.int32, np.float32)

ArrayLike = Union[np.ndarray, torch.Tensor]


# ---------------------------------------------------------------------------------------------
# Fake kernels: shapes and dtypes without computing, with the shape-level checks of
# csrc/ops/cpu/minirocket_kernel.cpp in the same words (value-level checks need data).


def _is_integer(dtype: torch.dtype) -> bool:
    return not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool


def _check_series(op: str, x: torch.Tensor) -> None:
    torch._check(
        x.dim() == 3,
        lambda: f"{op}: expected x to be a 3-D tensor (n_cases, n_channels, n_timepoints), got {x.dim()}-D",
    )
    torch._check(
        x.dtype in _FLOAT_DTYPES,
        lambda: f"{op}: expected x to be a floating-point tensor (float16, bfloat16, float32 or float64), "
        f"got {x.dtype}",
    )
    torch._check(
        x.shape[1] >= 1, lambda: f"{op}: expected x to have at least one channel, got x of shape {list(x.shape)}"
    )
    torch._check(
        x.shape[2] >= 9,
        lambda: f"{op}: expected at least 9 time points (zero-pad shorter series), got x of shape {list(x.shape)}",
    )


def _fit_dilations(n_timepoints: int, n_features: int, max_dilations: int) -> Tuple[list, list]:
    """aeon's _fit_dilations with libm's pow (the operator's rule; see the module docstring)."""
    per_kernel = n_features // _KERNELS
    count = min(per_kernel, max_dilations)
    max_exponent = math.log2((n_timepoints - 1) / 8)
    step = max_exponent / (count - 1) if count > 1 else 0.0
    raw = [int(math.pow(2.0, max_exponent if (count > 1 and i == count - 1) else i * step)) for i in range(count)]
    dilations = sorted(set(raw))
    per_dilation = [int(raw.count(d) * (per_kernel / count)) for d in dilations]
    remainder, i = per_kernel - sum(per_dilation), 0
    while remainder > 0:
        per_dilation[i] += 1
        remainder -= 1
        i = (i + 1) % len(per_dilation)
    return dilations, per_dilation


@torch.library.register_fake("softdtw_torch::minirocket_fit")
def _(x, n_features, max_dilations_per_kernel, seed):
    op = _FIT_OP
    _check_series(op, x)
    torch._check(x.shape[0] >= 1, lambda: f"{op}: expected at least one case, got x of shape {list(x.shape)}")
    torch._check_value(
        max_dilations_per_kernel >= 1,
        lambda: f"{op}: expected max_dilations_per_kernel >= 1, got {max_dilations_per_kernel}",
    )
    torch._check_value(
        0 <= seed <= 2**32 - 1, lambda: f"{op}: expected seed in [0, 2**32 - 1] (numpy's range), got {seed}"
    )
    n_features = max(n_features, _KERNELS)
    dilations, per_dilation = _fit_dilations(int(x.shape[2]), n_features, max_dilations_per_kernel)
    n_combinations = _KERNELS * len(dilations)
    if int(x.shape[1]) == 1:
        n_channel_indices = n_combinations
    else:  # 1 to min(n_channels, 9) channels per combination, drawn at random
        n_channel_indices = torch.library.get_ctx().new_dynamic_size(
            min=n_combinations, max=n_combinations * min(int(x.shape[1]), 9)
        )
    new = lambda n, dtype: x.new_empty((n,), dtype=dtype)  # noqa: E731
    return (
        new(n_combinations, torch.int32),
        new(n_channel_indices, torch.int32),
        new(len(dilations), torch.int32),
        new(len(dilations), torch.int32),
        new(_KERNELS * sum(per_dilation), torch.float32),
    )


def _check_parameter(op: str, name: str, t: torch.Tensor, x: torch.Tensor, integer: bool) -> None:
    torch._check(t.dim() == 1, lambda: f"{op}: expected {name} to be a 1-D tensor, got {t.dim()}-D")
    if integer:
        torch._check(
            _is_integer(t.dtype), lambda: f"{op}: expected {name} to be an integer tensor (aeon: int32), got {t.dtype}"
        )
    else:
        torch._check(
            t.dtype.is_floating_point,
            lambda: f"{op}: expected {name} to be a floating-point tensor (aeon: float32), got {t.dtype}",
        )
    torch._check(
        t.device == x.device or t.device.type == "cpu",
        lambda: f"{op}: expected {name} on {x.device} or the CPU, got {t.device}",
    )


@torch.library.register_fake("softdtw_torch::minirocket_transform")
def _(x, num_channels_per_combination, channel_indices, dilations, num_features_per_dilation, biases, x_lengths=None):
    op = _TRANSFORM_OP
    _check_series(op, x)
    parameters = (num_channels_per_combination, channel_indices, dilations, num_features_per_dilation, biases)
    for name, t in zip(_PARAMETER_NAMES, parameters):
        _check_parameter(op, name, t, x, integer=name != "biases")
    n_dilations = dilations.shape[0]
    torch._check(n_dilations >= 1, lambda: f"{op}: expected at least one dilation, got dilations of shape [0]")
    torch._check(
        num_features_per_dilation.shape[0] == n_dilations,
        lambda: f"{op}: expected num_features_per_dilation to have one entry per dilation ({n_dilations}), "
        f"got {num_features_per_dilation.shape[0]}",
    )
    torch._check(
        num_channels_per_combination.shape[0] == _KERNELS * n_dilations,
        lambda: f"{op}: expected num_channels_per_combination to have 84 entries per dilation "
        f"({_KERNELS * n_dilations}), got {num_channels_per_combination.shape[0]}",
    )
    if x_lengths is not None:
        torch._check(
            _is_integer(x_lengths.dtype), lambda: f"{op}: expected x_lengths to be an integer tensor, got {x_lengths.dtype}"
        )
        torch._check(
            x_lengths.dim() == 1 and x_lengths.shape[0] == x.shape[0],
            lambda: f"{op}: expected x_lengths of shape ({x.shape[0]},) (one length per case), "
            f"got shape {list(x_lengths.shape)}",
        )
    return x.new_empty((x.shape[0], biases.shape[0]), dtype=torch.float32)


# ---------------------------------------------------------------------------------------------
# The estimator.


def _seed_from(random_state: Any) -> int:
    """aeon's rule: an int is the seed; a RandomState draws one; None draws a fresh one (the
    global numpy RNG, so np.random.seed makes it reproducible) in [0, 2**31 - 1)."""
    if random_state is None:
        return int(np.random.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        seed = int(random_state)
        if not 0 <= seed <= 2**32 - 1:
            raise ValueError(f"MiniRocket: expected random_state in [0, 2**32 - 1] (numpy's range), got {seed}")
        return seed
    raise TypeError(
        "MiniRocket: expected random_state to be None, an int or a numpy.random.RandomState, "
        f"got {type(random_state).__name__}"
    )


class MiniRocket:
    """MiniRocket transform, bit-exact with aeon's ``MiniRocket`` (float32 features).

    Parameters
    ----------
    n_kernels : int, default 10_000
        Number of features, rounded down to a multiple of 84 (84 when smaller), as in aeon.
    max_dilations_per_kernel : int, default 32
    random_state : None, int or numpy.random.RandomState
        ``int``: the seed (aeon's numbers for the same seed). ``RandomState``: draws the seed
        (``randint(2**31 - 1)``) at each ``fit``. ``None``: a fresh seed from numpy's global RNG.
    device : None, str or torch.device
        Where ``transform`` computes. ``None``: on the input tensor's device (CPU for numpy input).

    Attributes (after ``fit``)
    --------------------------
    parameters : tuple of 5 numpy arrays, aeon's ``(num_channels_per_combination int32,
        channel_indices int32, dilations int32, num_features_per_dilation int32, biases float32)``.
    n_kernels_, n_channels_, n_timepoints_, seed_ : the values used.

    ``transform`` returns float32 ``(n_cases, 84 * (n_kernels_ // 84))``: a numpy array for numpy
    input, a tensor (on the computing device) for tensor input. ``X`` is 3-D ``(n_cases,
    n_channels, n_timepoints)`` or 2-D ``(n_cases, n_timepoints)`` (one channel). See the module
    docstring for ``x_lengths`` and the documented behaviours. ``fit`` runs on the CPU.
    """

    def __init__(
        self,
        n_kernels: int = 10_000,
        max_dilations_per_kernel: int = 32,
        random_state: Any = None,
        device: Optional[Union[str, torch.device]] = None,
    ) -> None:
        self.n_kernels = n_kernels
        self.max_dilations_per_kernel = max_dilations_per_kernel
        self.random_state = random_state
        self.device = device

    # sklearn-style parameters (no sklearn dependency).
    def get_params(self, deep: bool = True) -> Dict[str, Any]:
        return {
            "n_kernels": self.n_kernels,
            "max_dilations_per_kernel": self.max_dilations_per_kernel,
            "random_state": self.random_state,
            "device": self.device,
        }

    def set_params(self, **params: Any) -> "MiniRocket":
        valid = self.get_params()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"MiniRocket.set_params: unknown parameter {key!r}; valid ones are {sorted(valid)}")
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"MiniRocket({args})"

    def fit(self, X: ArrayLike, y: Any = None) -> "MiniRocket":
        """Fits dilations and biases to X (n_cases, [n_channels,] n_timepoints); y is ignored."""
        x = as_series_tensor(X, "MiniRocket.fit", integer_dtype=torch.float32)
        self.seed_ = _seed_from(self.random_state)
        self.n_kernels_ = max(int(self.n_kernels), _KERNELS)
        params = torch.ops.softdtw_torch.minirocket_fit(
            x.cpu(), self.n_kernels_, int(self.max_dilations_per_kernel), self.seed_
        )
        self._set_parameters(tuple(p.numpy() for p in params), int(x.shape[1]), int(x.shape[2]))
        return self

    def _set_parameters(self, parameters: Sequence[Any], n_channels: Optional[int], n_timepoints: Optional[int]):
        self.parameters = tuple(
            np.ascontiguousarray(np.asarray(p.cpu() if isinstance(p, torch.Tensor) else p, dtype=dtype))
            for p, dtype in zip(parameters, _PARAMETER_DTYPES)
        )
        self.n_channels_ = n_channels
        self.n_timepoints_ = n_timepoints
        self._device_parameters: Dict[torch.device, Tuple[torch.Tensor, ...]] = {}

    @classmethod
    def from_parameters(
        cls,
        parameters: Sequence[ArrayLike],
        n_channels: Optional[int] = None,
        n_timepoints: Optional[int] = None,
        device: Optional[Union[str, torch.device]] = None,
    ) -> "MiniRocket":
        """A fitted MiniRocket from aeon's 5-tuple (e.g. ``aeon_minirocket.parameters``).

        ``n_channels`` / ``n_timepoints``, when given, are checked by ``transform`` like after ``fit``;
        otherwise any channel count the parameters can index and any length >= 9 are accepted.
        """
        if len(parameters) != 5:
            raise ValueError(f"MiniRocket.from_parameters: expected aeon's 5 parameter arrays, got {len(parameters)}")
        n_features = _KERNELS * int(np.sum(np.asarray(parameters[3])))
        rocket = cls(n_kernels=n_features, device=device)
        rocket.n_kernels_ = n_features
        rocket.seed_ = None
        rocket._set_parameters(parameters, n_channels, n_timepoints)
        return rocket

    def _parameters_on(self, device: torch.device) -> Tuple[torch.Tensor, ...]:
        if device not in self._device_parameters:
            self._device_parameters[device] = tuple(torch.from_numpy(p).to(device) for p in self.parameters)
        return self._device_parameters[device]

    def transform(self, X: ArrayLike, x_lengths: Optional[ArrayLike] = None) -> ArrayLike:
        """Features (n_cases, n_features) float32; x_lengths: optional per-case lengths."""
        if not hasattr(self, "parameters"):
            raise RuntimeError("MiniRocket.transform: this MiniRocket is not fitted; call fit first")
        x = as_series_tensor(X, "MiniRocket.transform", integer_dtype=torch.float32)
        if self.n_channels_ is not None and x.shape[1] != self.n_channels_:
            raise ValueError(
                f"MiniRocket.transform: expected X with {self.n_channels_} channels (as in fit), got {x.shape[1]}"
            )
        if x_lengths is None and self.n_timepoints_ is not None and x.shape[2] != self.n_timepoints_:
            raise ValueError(
                f"MiniRocket.transform: expected X with {self.n_timepoints_} time points (as in fit), got "
                f"{x.shape[2]}; pass x_lengths to transform series of other lengths"
            )
        device = torch.device(self.device) if self.device is not None else x.device
        x = x.to(device)
        lengths = None
        if x_lengths is not None:
            lengths = x_lengths if isinstance(x_lengths, torch.Tensor) else torch.as_tensor(np.asarray(x_lengths))
            lengths = lengths.to(device)
        features = torch.ops.softdtw_torch.minirocket_transform(x, *self._parameters_on(device), lengths)
        return features if isinstance(X, torch.Tensor) else features.cpu().numpy()

    def fit_transform(self, X: ArrayLike, y: Any = None) -> ArrayLike:
        return self.fit(X, y).transform(X)
