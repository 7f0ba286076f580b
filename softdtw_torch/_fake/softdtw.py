"""Fake (meta) kernels of the SoftDTW ops (``soft_dtw*``, ``_soft_dtw_*``).

They repeat the shape-level checks of ``csrc/softdtw/problem.cpp`` with the same messages;
value-level checks (length ranges, NaN inputs) need data and stay in the real kernels.
"""
from typing import Optional

import torch

from .._ops import _C
from ._checks import _check_float, _check_lengths

_FROM_COST_OP = "soft_dtw_from_cost"
_FUSED_OP = "soft_dtw"


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float16/bfloat16 inputs accumulate (and keep their DP table) in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _check_options(op: str, gamma: float, bandwidth: Optional[int]) -> None:
    torch._check_value(
        gamma > 0 and gamma != float("inf"), lambda: f"{op}: gamma must be a positive finite number, got {gamma}"
    )
    torch._check_value(
        bandwidth is None or bandwidth >= 0, lambda: f"{op}: bandwidth must be >= 0 or None, got {bandwidth}"
    )


def _check_cost(D: torch.Tensor, gamma: float, bandwidth, x_lengths, y_lengths) -> None:
    op = _FROM_COST_OP
    torch._check(D.dim() == 3, lambda: f"{op}: expected D to be a 3-D tensor (batch, n, m), got {D.dim()}-D")
    _check_float(op, "D", D)
    torch._check(
        D.shape[1] > 0 and D.shape[2] > 0, lambda: f"{op}: expected non-empty sequences, got D of shape {list(D.shape)}"
    )
    _check_options(op, gamma, bandwidth)
    _check_lengths(op, "x_lengths", x_lengths, D.shape[0], "pair")
    _check_lengths(op, "y_lengths", y_lengths, D.shape[0], "pair")


def _check_pair(x: torch.Tensor, y: torch.Tensor, gamma: float, bandwidth, x_lengths, y_lengths) -> None:
    op = _FUSED_OP
    torch._check(x.dim() == 3, lambda: f"{op}: expected x to be a 3-D tensor (batch, n, features), got {x.dim()}-D")
    torch._check(y.dim() == 3, lambda: f"{op}: expected y to be a 3-D tensor (batch, m, features), got {y.dim()}-D")
    torch._check(
        x.device == y.device, lambda: f"{op}: expected x and y on the same device, got {x.device} and {y.device}"
    )
    _check_float(op, "x", x)
    _check_float(op, "y", y)
    torch._check(
        x.dtype == y.dtype, lambda: f"{op}: expected x and y to have the same dtype, got {x.dtype} and {y.dtype}"
    )
    torch._check(
        x.shape[0] == y.shape[0],
        lambda: f"{op}: expected x and y to have the same batch size, got {x.shape[0]} and {y.shape[0]}",
    )
    torch._check(
        x.shape[2] == y.shape[2],
        lambda: f"{op}: expected x and y to have the same number of features, got {x.shape[2]} and {y.shape[2]}",
    )
    torch._check(
        x.shape[1] > 0 and y.shape[1] > 0 and x.shape[2] > 0,
        lambda: f"{op}: expected non-empty sequences and features, got x of shape {list(x.shape)} "
        f"and y of shape {list(y.shape)}",
    )
    _check_options(op, gamma, bandwidth)
    _check_lengths(op, "x_lengths", x_lengths, x.shape[0], "pair")
    _check_lengths(op, "y_lengths", y_lengths, x.shape[0], "pair")


def _table(like: torch.Tensor, batch, n, m, keep_table: bool) -> torch.Tensor:
    dtype = _compute_dtype(like.dtype)
    if not keep_table:
        return like.new_empty((0,), dtype=dtype)
    return like.new_empty((batch, n, m), dtype=dtype)


@torch.library.register_fake("softdtw_torch::_soft_dtw_from_cost_forward")
def _(D, gamma, bandwidth, x_lengths, y_lengths, keep_table):
    _check_cost(D, gamma, bandwidth, x_lengths, y_lengths)
    batch, n, m = D.shape
    return D.new_empty((batch,)), _table(D, batch, n, m, keep_table)


@torch.library.register_fake("softdtw_torch::_soft_dtw_from_cost_backward")
def _(grad, R, gamma, bandwidth, x_lengths, y_lengths):
    torch._check(R.dim() == 3, lambda: f"{_FROM_COST_OP}: expected the forward's DP table R (batch, n, m)")
    torch._check(grad.dim() == 1 and grad.shape[0] == R.shape[0],
                 lambda: f"{_FROM_COST_OP}: expected grad of shape ({R.shape[0]},), got {list(grad.shape)}")
    return torch.empty_like(R)


@torch.library.register_fake("softdtw_torch::_soft_dtw_fused_forward")
def _(x, y, gamma, bandwidth, x_lengths, y_lengths, keep_table):
    _check_pair(x, y, gamma, bandwidth, x_lengths, y_lengths)
    return x.new_empty((x.shape[0],)), _table(x, x.shape[0], x.shape[1], y.shape[1], keep_table)


@torch.library.register_fake("softdtw_torch::_soft_dtw_fused_backward")
def _(grad, x, y, R, gamma, bandwidth, x_lengths, y_lengths):
    torch._check(R.dim() == 3, lambda: f"{_FUSED_OP}: expected the forward's DP table R (batch, n, m)")
    return torch.empty_like(x, dtype=R.dtype), torch.empty_like(y, dtype=R.dtype)


@torch.library.register_fake("softdtw_torch::_soft_dtw_fused_forward_checkpointed")
def _(x, y, gamma, bandwidth, x_lengths, y_lengths):
    _check_pair(x, y, gamma, bandwidth, x_lengths, y_lengths)
    batch, n, m = x.shape[0], x.shape[1], y.shape[1]
    dtype = _compute_dtype(x.dtype)
    if x.device.type == "cuda":  # R on the tile borders of the CUDA kernels (csrc/softdtw/constants.h)
        tile_rows, tile_cols = _C.SOFTDTW_CUDA_TILE_ROWS, _C.SOFTDTW_CUDA_TILE_COLS
        rows = (batch, (n + tile_rows - 1) // tile_rows, m)
        cols = (batch, (m + tile_cols - 1) // tile_cols, n)
    else:  # recomputed whole in the backward
        rows, cols = (0,), (0,)
    return x.new_empty((batch,)), x.new_empty(rows, dtype=dtype), x.new_empty(cols, dtype=dtype)


@torch.library.register_fake("softdtw_torch::_soft_dtw_fused_backward_checkpointed")
def _(grad, x, y, row_borders, column_borders, gamma, bandwidth, x_lengths, y_lengths):
    dtype = _compute_dtype(x.dtype)
    return torch.empty_like(x, dtype=dtype), torch.empty_like(y, dtype=dtype)


@torch.library.register_fake("softdtw_torch::_soft_dtw_fused_value_and_grad")
def _(x, y, weights, gamma, bandwidth, x_lengths, y_lengths):
    _check_pair(x, y, gamma, bandwidth, x_lengths, y_lengths)
    torch._check(weights.dim() == 1 and weights.shape[0] == x.shape[0],
                 lambda: f"{_FUSED_OP}: expected weights of shape ({x.shape[0]},), got {list(weights.shape)}")
    return x.new_empty((x.shape[0],)), torch.empty_like(x)


@torch.library.register_fake("softdtw_torch::soft_dtw_from_cost")
def _(D, gamma=1.0, bandwidth=None, x_lengths=None, y_lengths=None):
    _check_cost(D, gamma, bandwidth, x_lengths, y_lengths)
    return D.new_empty((D.shape[0],))


@torch.library.register_fake("softdtw_torch::soft_dtw_fused")
def _(x, y, gamma=1.0, bandwidth=None, x_lengths=None, y_lengths=None, checkpoint=False):
    _check_pair(x, y, gamma, bandwidth, x_lengths, y_lengths)
    return x.new_empty((x.shape[0],))
