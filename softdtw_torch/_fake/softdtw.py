"""Fake (meta) kernels of the SoftDTW ops (``soft_dtw*``, ``_soft_dtw_*``).

They repeat the shape-level checks of ``csrc/softdtw/problem.cpp`` with the same messages;
value-level checks (length ranges, NaN inputs) need data and stay in the real kernels.
"""
import inspect
import math
from typing import Callable, NamedTuple, Optional

import torch

from .._extension import _C
from ._checks import _check_float, _check_lengths, _is_integer, register_fake

_FROM_COST_OP = "soft_dtw_from_cost"
_FUSED_OP = "soft_dtw"


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float16/bfloat16 inputs accumulate (and keep their DP table) in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


_SCALAR_TYPE_NAMES = {torch.float64: "Double", torch.float32: "Float", torch.float16: "Half",
                      torch.bfloat16: "BFloat16"}


def _check_options(op: str, gamma: float, bandwidth: Optional[int], itakura_max_slope: Optional[float],
                   dtype: torch.dtype) -> None:
    torch._check_value(
        gamma >= 0 and gamma != float("inf"),
        lambda: f"{op}: gamma must be 0 (hard DTW) or a positive finite number, got {gamma}",
    )
    # As the C++ check_gamma: 0, or gamma and 1/gamma normal numbers of the compute dtype.
    smallest = torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).tiny
    torch._check_value(
        gamma == 0 or smallest <= gamma <= 1.0 / smallest,
        lambda: f"{op}: gamma must be in [{smallest:g}, {1.0 / smallest:g}] or 0 for "
        f"{_SCALAR_TYPE_NAMES.get(dtype, dtype)} input (gamma and 1/gamma normal "
        f"{'float64' if dtype == torch.float64 else 'float32'} numbers), got {gamma:g}",
    )
    torch._check_value(
        bandwidth is None or bandwidth >= 0, lambda: f"{op}: bandwidth must be >= 0 or None, got {bandwidth}"
    )
    _check_slope(op, itakura_max_slope)


def _check_slope(op: str, itakura_max_slope: Optional[float]) -> None:
    # As the C++ checked_window (its value printed as C++ streams print a double, hence :g).
    torch._check_value(
        itakura_max_slope is None or (math.isfinite(itakura_max_slope) and itakura_max_slope >= 1),
        lambda: f"{op}: itakura_max_slope must be a finite number >= 1 or None, got {itakura_max_slope:g}",
    )


class _ProblemArgs(NamedTuple):
    """The SoftDTW argument bundle (``csrc/softdtw/args.h``): what every SoftDTW op takes besides
    its tensors, passed to the fakes below as one value."""
    gamma: float
    bandwidth: Optional[int]
    itakura_max_slope: Optional[float]
    x_lengths: Optional[torch.Tensor]
    y_lengths: Optional[torch.Tensor]


def _register_bundled(name: str) -> Callable[[Callable], Callable]:
    """``register_fake`` of the private op ``name`` for a fake that takes the bundle as one argument,
    ``args``. Where the bundle sits in the op's flat argument list is read from its schema
    (``csrc/library.cpp``), not written again here; ``_dtw_path``'s has no gamma (0)."""
    names = [a.name for a in getattr(torch.ops.softdtw_torch, name).default._schema.arguments]
    with_gamma = "gamma" in names
    first = names.index("gamma" if with_gamma else "bandwidth")
    last = names.index("y_lengths") + 1
    signature = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])

    def register(kernel: Callable) -> Callable:
        def flat(*values, **named):
            values = tuple(signature.bind(*values, **named).arguments.values())
            bundle = values[first:last] if with_gamma else (0.0, *values[first:last])
            return kernel(*values[:first], _ProblemArgs(*bundle), *values[last:])

        flat.__signature__ = signature  # the names register_fake's meta check reports
        flat.__module__, flat.__qualname__ = kernel.__module__, kernel.__qualname__
        register_fake(f"softdtw_torch::{name}")(flat)
        return kernel

    return register


def _check_cost(D: torch.Tensor, args: _ProblemArgs) -> None:
    op = _FROM_COST_OP
    torch._check_value(D.dim() == 3, lambda: f"{op}: expected D to be a 3-D tensor (batch, n, m), got {D.dim()}-D")
    _check_float(op, "D", D)
    torch._check_value(
        D.shape[1] > 0 and D.shape[2] > 0, lambda: f"{op}: expected non-empty sequences, got D of shape {list(D.shape)}"
    )
    _check_options(op, args.gamma, args.bandwidth, args.itakura_max_slope, D.dtype)
    _check_lengths(op, "x_lengths", args.x_lengths, D.shape[0], "pair")
    _check_lengths(op, "y_lengths", args.y_lengths, D.shape[0], "pair")


def _check_pair(x: torch.Tensor, y: torch.Tensor, args: _ProblemArgs, op: str = _FUSED_OP) -> None:
    torch._check_value(x.dim() == 3, lambda: f"{op}: expected x to be a 3-D tensor (batch, n, features), got {x.dim()}-D")
    torch._check_value(y.dim() == 3, lambda: f"{op}: expected y to be a 3-D tensor (batch, m, features), got {y.dim()}-D")
    torch._check_value(
        x.device == y.device, lambda: f"{op}: expected x and y on the same device, got {x.device} and {y.device}"
    )
    _check_float(op, "x", x)
    _check_float(op, "y", y)
    torch._check_type(
        x.dtype == y.dtype, lambda: f"{op}: expected x and y to have the same dtype, got {x.dtype} and {y.dtype}"
    )
    torch._check_value(
        x.shape[0] == y.shape[0],
        lambda: f"{op}: expected x and y to have the same batch size, got {x.shape[0]} and {y.shape[0]}",
    )
    torch._check_value(
        x.shape[2] == y.shape[2],
        lambda: f"{op}: expected x and y to have the same number of features, got {x.shape[2]} and {y.shape[2]}",
    )
    torch._check_value(
        x.shape[1] > 0 and y.shape[1] > 0 and x.shape[2] > 0,
        lambda: f"{op}: expected non-empty sequences and features, got x of shape {list(x.shape)} "
        f"and y of shape {list(y.shape)}",
    )
    _check_options(op, args.gamma, args.bandwidth, args.itakura_max_slope, x.dtype)
    _check_lengths(op, "x_lengths", args.x_lengths, x.shape[0], "pair")
    _check_lengths(op, "y_lengths", args.y_lengths, x.shape[0], "pair")


def _table(like: torch.Tensor, batch, n, m, keep_table: bool) -> torch.Tensor:
    """The DP table: (B, N, M) in float64; in float32 (B, N, M, 2), each R as a pair hi + lo."""
    dtype = _compute_dtype(like.dtype)
    if not keep_table:
        return like.new_empty((0,), dtype=dtype)
    return like.new_empty((batch, n, m, 2) if dtype == torch.float32 else (batch, n, m), dtype=dtype)


@_register_bundled("_soft_dtw_from_cost_forward")
def _(D, args, keep_table):
    _check_cost(D, args)
    batch, n, m = D.shape
    return D.new_empty((batch,)), _table(D, batch, n, m, keep_table)


def _check_grad(op: str, name: str, grad: Optional[torch.Tensor], batch) -> None:
    if grad is not None:
        torch._check_value(grad.dim() == 1 and grad.shape[0] == batch,
                           lambda: f"{op}: expected {name} of shape ({batch},), got {list(grad.shape)}")


def _check_tangent(op: str, name: str, tangent: Optional[torch.Tensor], primal_name: str, primal) -> None:
    if tangent is not None:
        torch._check_value(tangent.shape == primal.shape,
                           lambda: f"{op}: expected {name} of the shape of {primal_name} "
                           f"{list(primal.shape)}, got {list(tangent.shape)}")


@_register_bundled("_soft_dtw_from_cost_backward")
def _(grad, D, R, args):
    _check_cost(D, args)
    _check_grad(_FROM_COST_OP, "grad", grad, D.shape[0])
    return D.new_empty(D.shape, dtype=_compute_dtype(D.dtype))


_FUSED_CACHES = ("nothing", "table", "borders", "gradients")
"""What the fused forward keeps for its backward (``csrc/softdtw/plan.h``)."""
_FUSED_CACHE_CHOICES = ", ".join(f'"{n}"' for n in _FUSED_CACHES[:-1]) + f' or "{_FUSED_CACHES[-1]}"'


def _check_cache(option: str, name: str, device: torch.device) -> None:
    torch._check_value(name in _FUSED_CACHES,
                       lambda: f'{_FUSED_OP}: expected {option} to be one of {_FUSED_CACHE_CHOICES}, got "{name}"')
    torch._check_not_implemented(
        name != "gradients" or device.type != "cuda",
        lambda: f'{_FUSED_OP}: the "gradients" cache (each pair\'s unit gradients) is kept on the CPU only, got '
        f"tensors on {device}")


@_register_bundled("_soft_dtw_fused_forward")
def _(x, y, args, keep):
    _check_cache("keep", keep, x.device)
    _check_pair(x, y, args)
    batch, n, m = x.shape[0], x.shape[1], y.shape[1]
    values = x.new_empty((batch,))
    if keep == "gradients":  # the unit gradients, in float64
        return values, torch.empty_like(x, dtype=torch.float64), torch.empty_like(y, dtype=torch.float64)
    dtype = _compute_dtype(x.dtype)
    if keep == "borders" and x.device.type == "cuda":  # R on the CUDA tiles' borders (csrc/softdtw/constants.h)
        tile_rows, tile_cols = _C.SOFTDTW_CUDA_TILE_ROWS, _C.SOFTDTW_CUDA_TILE_COLS
        pair = (2,) if dtype == torch.float32 else ()  # float32: each R as hi + lo
        rows = (batch, (n + tile_rows - 1) // tile_rows, m, *pair)
        cols = (batch, (m + tile_cols - 1) // tile_cols, n, *pair)
        return values, x.new_empty(rows, dtype=dtype), x.new_empty(cols, dtype=dtype)
    return values, _table(x, batch, n, m, keep == "table"), x.new_empty((0,), dtype=dtype)


@_register_bundled("_soft_dtw_fused_backward")
def _(grad, x, y, first, second, args, kept):
    _check_cache("kept", kept, x.device)
    _check_pair(x, y, args)
    _check_grad(_FUSED_OP, "grad", grad, x.shape[0])
    if kept == "gradients":
        for name, unit, like in (("first (the unit gradients of x)", first, x),
                                 ("second (the unit gradients of y)", second, y)):
            torch._check_value(unit.shape == like.shape,
                               lambda: f"{_FUSED_OP}: expected {name} of shape {list(like.shape)}, "
                               f"got {list(unit.shape)}")
            torch._check_type(unit.dtype == torch.float64,
                              lambda: f"{_FUSED_OP}: expected {name} of dtype float64, got {unit.dtype}")
    dtype = _compute_dtype(x.dtype)
    return torch.empty_like(x, dtype=dtype), torch.empty_like(y, dtype=dtype)


@_register_bundled("_soft_dtw_fused_value_and_grad")
def _(x, y, weights, args):
    _check_pair(x, y, args)
    torch._check_value(weights.dim() == 1 and weights.shape[0] == x.shape[0],
                       lambda: f"{_FUSED_OP}: expected weights of shape ({x.shape[0]},), got {list(weights.shape)}")
    return x.new_empty((x.shape[0],)), torch.empty_like(x)


@_register_bundled("_dtw_path")
def _(x, y, args):
    _check_pair(x, y, args, op="dtw_path")
    batch, n, m = x.shape[0], x.shape[1], y.shape[1]
    return (x.new_empty((batch,)), x.new_empty((batch, n + m - 1, 2), dtype=torch.int64),
            x.new_empty((batch,), dtype=torch.int64))


@_register_bundled("_soft_dtw_from_cost_jvp")
def _(D, D_tangent, args):
    _check_cost(D, args)
    _check_tangent(_FROM_COST_OP, "D_tangent", D_tangent, "D", D)
    return D.new_empty((D.shape[0],)), D.new_empty((D.shape[0],))


@_register_bundled("_soft_dtw_fused_jvp")
def _(x, y, x_tangent, y_tangent, args):
    _check_pair(x, y, args)
    _check_tangent(_FUSED_OP, "x_tangent", x_tangent, "x", x)
    _check_tangent(_FUSED_OP, "y_tangent", y_tangent, "y", y)
    return x.new_empty((x.shape[0],)), x.new_empty((x.shape[0],))


@_register_bundled("_soft_dtw_from_cost_hvp")
def _(grad, grad_tangent, D, D_tangent, args, with_grad):
    _check_cost(D, args)
    _check_grad(_FROM_COST_OP, "grad", grad, D.shape[0])
    _check_grad(_FROM_COST_OP, "grad_tangent", grad_tangent, D.shape[0])
    _check_tangent(_FROM_COST_OP, "D_tangent", D_tangent, "D", D)
    dtype = _compute_dtype(D.dtype)
    grad_D = D.new_empty(D.shape if with_grad else (0,), dtype=dtype)
    return D.new_empty((D.shape[0],), dtype=dtype), grad_D, D.new_empty(D.shape, dtype=dtype)


@_register_bundled("_soft_dtw_fused_hvp")
def _(grad, grad_tangent, x, y, x_tangent, y_tangent, args, with_grad):
    _check_pair(x, y, args)
    _check_grad(_FUSED_OP, "grad", grad, x.shape[0])
    _check_grad(_FUSED_OP, "grad_tangent", grad_tangent, x.shape[0])
    _check_tangent(_FUSED_OP, "x_tangent", x_tangent, "x", x)
    _check_tangent(_FUSED_OP, "y_tangent", y_tangent, "y", y)
    dtype = _compute_dtype(x.dtype)
    grad_x = x.new_empty(x.shape if with_grad else (0,), dtype=dtype)
    grad_y = y.new_empty(y.shape if with_grad else (0,), dtype=dtype)
    return (x.new_empty((x.shape[0],), dtype=dtype), grad_x, grad_y, x.new_empty(x.shape, dtype=dtype),
            y.new_empty(y.shape, dtype=dtype))


@register_fake("softdtw_torch::_itakura_rows")
def _(n, m, columns, max_slope):
    op = "itakura_mask"  # as checked_itakura_lengths
    _check_slope(op, max_slope)
    torch._check_value(columns >= 0, lambda: f"{op}: expected columns >= 0, got {columns}")
    for t in (n, m):
        torch._check_type(_is_integer(t.dtype), lambda: f"{op}: expected integer lengths, got {t.dtype}")
    torch._check_value(
        n.dim() == 1 and m.shape == n.shape and n.device == m.device,
        lambda: f"{op}: expected lengths n and m of one shape (B,) on one device, got {list(n.shape)} on {n.device} "
        f"and {list(m.shape)} on {m.device}",
    )
    return n.new_empty((n.shape[0], columns, 2), dtype=torch.int64)

