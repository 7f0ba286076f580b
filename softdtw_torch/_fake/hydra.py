"""Fake (meta) kernels of the Hydra ops (``hydra_fit``, ``hydra_transform``,
``_hydra_transform_backward``).

Shapes and dtypes without computing, with the shape-level checks of ``csrc/hydra/problem.cpp`` in
the same words.
"""
import math

import torch

from .._extension import _C
from ._checks import _check_lengths, _check_rocket_series, _is_integer, register_fake

_FIT_OP = "hydra_fit"
_TRANSFORM_OP = "hydra_transform"
_BACKWARD_OP = "_hydra_transform_backward"
_MIN_LENGTH = _C.HYDRA_MIN_LENGTH
_MAX_DILATIONS = _C.HYDRA_MAX_DILATIONS
_TAPS = 9


def _check_series(op: str, x: torch.Tensor) -> None:
    _check_rocket_series(op, x, _MIN_LENGTH, "aeon's Hydra has no dilation below 6")


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _check_transform(op: str, x, weights, channels, x_lengths):
    """The checks of prepare_transform; returns (D, R, G, K)."""
    _check_series(op, x)
    torch._check_value(
        weights.dim() == 5 and weights.shape[4] == _TAPS,
        lambda: f"{op}: expected weights of shape (n_dilations, n_representations, n_groups, n_kernels, 9), "
        f"got shape {list(weights.shape)}",
    )
    torch._check_type(
        weights.dtype.is_floating_point,
        lambda: f"{op}: expected weights to be a floating-point tensor, got {weights.dtype}",
    )
    D, R, G, K = (weights.shape[i] for i in range(4))
    torch._check_value(
        1 <= D <= _MAX_DILATIONS,
        lambda: f"{op}: expected 1 to {_MAX_DILATIONS} dilations (weights.shape[0]), got {D}",
    )
    torch._check_value(
        R == 1 or R == 2,
        lambda: f"{op}: expected 1 or 2 representations (weights.shape[1]: the series, then its first difference), "
        f"got {R}",
    )
    torch._check_value(
        G >= 1 and K >= 1,
        lambda: f"{op}: expected at least one group and one kernel, got weights of shape {list(weights.shape)}",
    )
    torch._check_value(
        channels.dim() == 4
        and channels.shape[0] == D
        and channels.shape[1] == R
        and channels.shape[2] == G
        and channels.shape[3] >= 1,
        lambda: f"{op}: expected channels of shape ({D}, {R}, {G}, channels_per_group >= 1) (one row of channels "
        f"per group of weights), got shape {list(channels.shape)}",
    )
    torch._check_type(
        _is_integer(channels.dtype), lambda: f"{op}: expected channels to be an integer tensor, got {channels.dtype}"
    )
    _check_lengths(op, "x_lengths", x_lengths, x.shape[0], "case")
    return D, R, G, K


@register_fake("softdtw_torch::hydra_fit")
def _(x, n_kernels, n_groups, max_num_channels, seed):
    op = _FIT_OP
    _check_series(op, x)
    torch._check_value(n_kernels >= 1, lambda: f"{op}: expected n_kernels >= 1 (kernels per group), got {n_kernels}")
    torch._check_value(n_groups >= 1, lambda: f"{op}: expected n_groups >= 1, got {n_groups}")
    torch._check_value(
        max_num_channels >= 1, lambda: f"{op}: expected max_num_channels >= 1, got {max_num_channels}"
    )
    torch._check_value(
        0 <= seed <= 2**32 - 1, lambda: f"{op}: expected seed in [0, 2**32 - 1] (numpy's range), got {seed}"
    )
    n_channels, n_timepoints = int(x.shape[1]), int(x.shape[2])
    n_dilations = int(math.log2((n_timepoints - 1) / 8)) + 1
    divisor = min(2, n_groups)
    h = n_groups // divisor
    per_group = min(max(n_channels // 2, 2), max_num_channels)
    return (
        x.new_empty((n_dilations, divisor, h, n_kernels, _TAPS), dtype=torch.float32),
        x.new_empty((n_dilations, divisor, h, per_group), dtype=torch.int64),
    )


@register_fake("softdtw_torch::hydra_transform")
def _(x, weights, channels, x_lengths=None):
    D, R, G, K = _check_transform(_TRANSFORM_OP, x, weights, channels, x_lengths)
    return x.new_empty((x.shape[0], D * R * 2 * G * K), dtype=_compute_dtype(x))


@register_fake("softdtw_torch::_hydra_transform_backward")
def _(grad, x, weights, channels, x_lengths):
    op = _BACKWARD_OP
    D, R, G, K = _check_transform(op, x, weights, channels, x_lengths)
    n, F = x.shape[0], D * R * 2 * G * K
    torch._check_value(
        grad.dim() == 2 and grad.shape[0] == n and grad.shape[1] == F,
        lambda: f"{op}: expected grad of shape ({n}, {F}), got shape {list(grad.shape)}",
    )
    dtype = _compute_dtype(x)
    return (
        x.new_empty((n, D, R, G, x.shape[2]), dtype=dtype),
        x.new_empty((n, D, R, G, K, _TAPS), dtype=dtype),
    )
