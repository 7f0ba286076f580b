"""Fake (meta) kernels of the MiniRocket ops (``minirocket_fit``, ``minirocket_transform``).

Shapes and dtypes without computing, with the shape-level checks of
``csrc/minirocket/problem.cpp`` in the same words (value-level checks need data).
"""
import math
from typing import Tuple

import torch

from .._extension import _C
from ._checks import _check_lengths, _check_rocket_series, _is_integer, register_fake

_FIT_OP = "minirocket_fit"
_TRANSFORM_OP = "minirocket_transform"
_KERNELS = _C.MINIROCKET_KERNELS  # MiniRocket's fixed kernels: features come in multiples of 84
_MIN_LENGTH = _C.MINIROCKET_MIN_LENGTH  # one kernel span at dilation 1
_PARAMETER_NAMES = (
    "num_channels_per_combination",
    "channel_indices",
    "dilations",
    "num_features_per_dilation",
    "biases",
)


def _check_series(op: str, x: torch.Tensor) -> None:
    _check_rocket_series(op, x, _MIN_LENGTH)


def _fit_dilations(n_timepoints: int, n_features: int, max_dilations: int) -> Tuple[list, list]:
    """aeon's _fit_dilations with libm's pow (the operator's rule; see softdtw_torch.rocket._minirocket)."""
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


@register_fake("softdtw_torch::minirocket_fit")
def _(x, n_features, max_dilations_per_kernel, seed):
    op = _FIT_OP
    _check_series(op, x)
    torch._check_value(x.shape[0] >= 1, lambda: f"{op}: expected at least one case, got x of shape {list(x.shape)}")
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
    torch._check_value(t.dim() == 1, lambda: f"{op}: expected {name} to be a 1-D tensor, got {t.dim()}-D")
    if integer:
        torch._check_type(
            _is_integer(t.dtype), lambda: f"{op}: expected {name} to be an integer tensor (aeon: int32), got {t.dtype}"
        )
    else:
        torch._check_type(
            t.dtype.is_floating_point,
            lambda: f"{op}: expected {name} to be a floating-point tensor (aeon: float32), got {t.dtype}",
        )
    torch._check_value(
        t.device == x.device or t.device.type == "cpu",
        lambda: f"{op}: expected {name} on {x.device} or the CPU, got {t.device}",
    )


@register_fake("softdtw_torch::minirocket_transform")
def _(x, num_channels_per_combination, channel_indices, dilations, num_features_per_dilation, biases, x_lengths=None):
    op = _TRANSFORM_OP
    _check_series(op, x)
    parameters = (num_channels_per_combination, channel_indices, dilations, num_features_per_dilation, biases)
    for name, t in zip(_PARAMETER_NAMES, parameters):
        _check_parameter(op, name, t, x, integer=name != "biases")
    n_dilations = dilations.shape[0]
    torch._check_value(n_dilations >= 1, lambda: f"{op}: expected at least one dilation, got dilations of shape [0]")
    torch._check_value(
        num_features_per_dilation.shape[0] == n_dilations,
        lambda: f"{op}: expected num_features_per_dilation to have one entry per dilation ({n_dilations}), "
        f"got {num_features_per_dilation.shape[0]}",
    )
    torch._check_value(
        num_channels_per_combination.shape[0] == _KERNELS * n_dilations,
        lambda: f"{op}: expected num_channels_per_combination to have 84 entries per dilation "
        f"({_KERNELS * n_dilations}), got {num_channels_per_combination.shape[0]}",
    )
    _check_lengths(op, "x_lengths", x_lengths, x.shape[0], "case")
    return x.new_empty((x.shape[0], biases.shape[0]), dtype=torch.float32)
