"""Fake (meta) kernels of the ROCKET ops, for ``torch.compile`` and ``torch.library.opcheck``.

They repeat the shape-level checks of ``csrc/ops/rocket_common.cpp`` with the same messages;
value checks (finite inputs, kernel field ranges, lengths) need data and stay in the real kernels.
"""
from typing import Optional

import torch
from torch import Tensor

_TRANSFORM_OP = "rocket_convolve"
_NORMALISE_OP = "rocket_normalise"


def _check_series(op: str, x: Tensor) -> None:
    torch._check(
        x.dim() == 3,
        lambda: f"{op}: expected x to be a 3-D tensor (n_cases, n_channels, n_timepoints), got {x.dim()}-D",
    )
    torch._check(
        x.dtype in (torch.float32, torch.float64), lambda: f"{op}: expected x to be float32 or float64, got {x.dtype}"
    )


def _n_kernels(lengths: Tensor) -> int:
    return lengths.shape[0]


@torch.library.register_fake("softdtw_torch::rocket_normalise")
def _(x, x_lengths=None):
    _check_series(_NORMALISE_OP, x)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.register_fake("softdtw_torch::_rocket_convolve_forward")
def _(x, weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices, accumulate, x_lengths,
      ppv_temperature):
    _check_series(_TRANSFORM_OP, x)
    K = _n_kernels(lengths)
    return x.new_empty((x.shape[0], 2 * K), dtype=torch.float32), x.new_empty((x.shape[0], K), dtype=torch.int64)


@torch.library.register_fake("softdtw_torch::_rocket_convolve_backward")
def _(grad, x, weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices, argmax, accumulate,
      x_lengths, ppv_temperature):
    return torch.empty_like(x), torch.empty_like(weights), torch.empty_like(biases)


@torch.library.register_fake("softdtw_torch::rocket_convolve")
def _(x, weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices,
      accumulate="float32_fma", x_lengths: Optional[Tensor] = None, ppv_temperature: Optional[float] = None):
    _check_series(_TRANSFORM_OP, x)
    return x.new_empty((x.shape[0], 2 * _n_kernels(lengths)), dtype=torch.float32)
