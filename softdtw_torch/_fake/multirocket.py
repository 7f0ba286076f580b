"""Fake (meta) kernels of the MultiRocket ops (``multirocket_fit``, ``multirocket_transform``).

Shapes and dtypes without computing, with the shape-level checks of
``csrc/multirocket/problem.cpp`` (MiniRocket's, under MultiRocket's names) in the same words.
"""
import torch

from .._extension import _C
from ._checks import _check_lengths, _check_rocket_series, register_fake
from .minirocket import _PARAMETER_NAMES, _check_parameter, _fit_dilations

_FIT_OP = "multirocket_fit"
_TRANSFORM_OP = "multirocket_transform"
_KERNELS = _C.MINIROCKET_KERNELS
_MIN_LENGTH = _C.MULTIROCKET_MIN_LENGTH  # MiniRocket's 9 for the first difference
_POOLINGS = 4  # PPV, LSPV, MPV, MIPV


def _check_series(op: str, x: torch.Tensor) -> None:
    _check_rocket_series(op, x, _MIN_LENGTH)


def _fit_outputs(x: torch.Tensor, n_timepoints: int, n_kernels: int, max_dilations: int):
    """MiniRocket's five fitted arrays' shapes for series of n_timepoints."""
    dilations, per_dilation = _fit_dilations(n_timepoints, n_kernels, max_dilations)
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


@register_fake("softdtw_torch::multirocket_fit")
def _(x, n_kernels, max_dilations_per_kernel, seed):
    op = _FIT_OP
    _check_series(op, x)
    torch._check_value(x.shape[0] >= 1, lambda: f"{op}: expected at least one case, got x of shape {list(x.shape)}")
    torch._check_value(
        n_kernels >= _KERNELS, lambda: f"{op}: expected n_kernels >= 84 (MultiRocket's 84 kernels), got {n_kernels}"
    )
    torch._check_value(
        max_dilations_per_kernel >= 1,
        lambda: f"{op}: expected max_dilations_per_kernel >= 1, got {max_dilations_per_kernel}",
    )
    torch._check_value(
        0 <= seed <= 2**32 - 1, lambda: f"{op}: expected seed in [0, 2**32 - 1] (numpy's range), got {seed}"
    )
    T = int(x.shape[2])
    return _fit_outputs(x, T, n_kernels, max_dilations_per_kernel) + _fit_outputs(
        x, T - 1, n_kernels, max_dilations_per_kernel
    )


@register_fake("softdtw_torch::multirocket_transform")
def _(
    x,
    num_channels_per_combination,
    channel_indices,
    dilations,
    num_features_per_dilation,
    biases,
    diff_dilations,
    diff_num_features_per_dilation,
    diff_biases,
    x_lengths=None,
):
    op = _TRANSFORM_OP
    _check_series(op, x)
    series = (num_channels_per_combination, channel_indices, dilations, num_features_per_dilation, biases)
    for name, t in zip(_PARAMETER_NAMES, series):
        _check_parameter(op, name, t, x, integer=name != "biases")
    difference = (diff_dilations, diff_num_features_per_dilation, diff_biases)
    for name, t in zip(_PARAMETER_NAMES[2:], difference):
        _check_parameter(op, "diff_" + name, t, x, integer=name != "biases")
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
    torch._check_value(
        diff_dilations.shape[0] <= n_dilations,
        lambda: f"{op}: expected diff_dilations to have at most as many entries as dilations ({n_dilations}; the "
        f"first difference uses the series' channel combinations), got {diff_dilations.shape[0]}",
    )
    torch._check_value(
        diff_biases.shape[0] == biases.shape[0],
        lambda: f"{op}: expected as many features for the first difference as for the series (84 * "
        f"sum(num_features_per_dilation) = {biases.shape[0]}; aeon's layout), got 84 * "
        f"sum(diff_num_features_per_dilation) = {diff_biases.shape[0]}",
    )
    _check_lengths(op, "x_lengths", x_lengths, x.shape[0], "case")
    return x.new_empty((x.shape[0], 2 * _POOLINGS * biases.shape[0]), dtype=torch.float32)
