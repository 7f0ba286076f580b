"""Fake (meta) kernels of the ROCKET ops (``rocket_*``), for ``torch.compile`` and ``torch.library.opcheck``.

They repeat the shape-level checks of ``csrc/rocket/problem.cpp`` (and the argument checks of
``rocket_generate_kernels``) with the same messages; value checks (finite inputs, kernel field
ranges, lengths) need data and stay in the real kernels.
"""
from typing import Optional

import torch
from torch import Tensor

from ._checks import _check_3d_series, register_fake

_TRANSFORM_OP = "rocket_convolve"
_NORMALISE_OP = "rocket_normalise"
_GENERATE_OP = "rocket_generate_kernels"


def _check_series(op: str, x: Tensor) -> None:
    _check_3d_series(op, x)
    torch._check_type(
        x.dtype in (torch.float32, torch.float64), lambda: f"{op}: expected x to be float32 or float64, got {x.dtype}"
    )


def _n_kernels(lengths: Tensor) -> int:
    return lengths.shape[0]


@register_fake("softdtw_torch::rocket_normalise")
def _(x, x_lengths=None):
    _check_series(_NORMALISE_OP, x)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@register_fake("softdtw_torch::_rocket_convolve_forward")
def _(x, weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices, accumulate, x_lengths,
      ppv_temperature):
    _check_series(_TRANSFORM_OP, x)
    K = _n_kernels(lengths)
    return x.new_empty((x.shape[0], 2 * K), dtype=torch.float32), x.new_empty((x.shape[0], K), dtype=torch.int64)


@register_fake("softdtw_torch::_rocket_convolve_backward")
def _(grad, x, weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices, argmax, accumulate,
      x_lengths, ppv_temperature):
    return torch.empty_like(x), torch.empty_like(weights), torch.empty_like(biases)


@register_fake("softdtw_torch::rocket_convolve")
def _(x, weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices,
      accumulate="float32_fma", x_lengths: Optional[Tensor] = None, ppv_temperature: Optional[float] = None):
    _check_series(_TRANSFORM_OP, x)
    return x.new_empty((x.shape[0], 2 * _n_kernels(lengths)), dtype=torch.float32)


# rocket_generate_kernels: the sizes sum(m_i * L_i) and sum(m_i) of the ragged outputs come
# from the random stream, but only from the four ints, and those are always concrete here: the
# schema takes `int`, so the dispatcher specialises symbolic ints before calling this (under
# dynamic shapes each new value recompiles). So the fake runs the real generator, which is pure and
# takes a few milliseconds per 10,000 kernels, and returns exact static sizes.
@register_fake("softdtw_torch::" + _GENERATE_OP)
def _generate_kernels_fake(n_timepoints: int, n_channels: int, n_kernels: int, seed: int):
    torch._check_value(n_kernels >= 1, lambda: f"{_GENERATE_OP}: expected n_kernels >= 1, got {n_kernels}")
    torch._check_value(
        1 <= n_channels <= 2147483647,
        lambda: f"{_GENERATE_OP}: expected n_channels in [1, 2147483647], got {n_channels}",
    )
    torch._check_value(
        2 <= n_timepoints <= 2147483647,
        lambda: f"{_GENERATE_OP}: expected n_timepoints in [2, 2147483647], got {n_timepoints}",
    )
    torch._check_value(seed >= 0, lambda: f"{_GENERATE_OP}: expected seed >= 0, got {seed}")
    with torch._subclasses.fake_tensor.unset_fake_temporarily():
        real = torch.ops.softdtw_torch.rocket_generate_kernels(n_timepoints, n_channels, n_kernels, seed)
    return tuple(torch.empty(t.shape, dtype=t.dtype) for t in real)
