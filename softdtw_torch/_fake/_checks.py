"""Shape- and dtype-level checks that the fake kernels of several op families share, in the words
of the C++ ops."""
from typing import Optional

import torch

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _is_integer(dtype: torch.dtype) -> bool:
    return not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool


def _check_float(op: str, name: str, t: torch.Tensor) -> None:
    torch._check_type(
        t.dtype in _FLOAT_DTYPES,
        lambda: f"{op}: expected {name} to be a floating-point tensor (float16, bfloat16, float32 or float64), "
        f"got {t.dtype}",
    )


def _check_lengths(op: str, name: str, lengths: Optional[torch.Tensor], batch: int, per: str) -> None:
    """``lengths``, when given: an integer tensor of shape (batch,), one length per ``per`` ("pair", "case")."""
    if lengths is None:
        return
    torch._check_type(
        _is_integer(lengths.dtype), lambda: f"{op}: expected {name} to be an integer tensor, got {lengths.dtype}"
    )
    torch._check_value(
        lengths.dim() == 1 and lengths.shape[0] == batch,
        lambda: f"{op}: expected {name} of shape ({batch},) (one length per {per}), got shape {list(lengths.shape)}",
    )


def _check_3d_series(op: str, x: torch.Tensor) -> None:
    torch._check_value(
        x.dim() == 3,
        lambda: f"{op}: expected x to be a 3-D tensor (n_cases, n_channels, n_timepoints), got {x.dim()}-D",
    )


def _check_rocket_series(op: str, x: torch.Tensor, min_length: int, why: str = "") -> None:
    """x (n_cases, n_channels, n_timepoints) of a ROCKET-family op: floating, at least one channel
    and ``min_length`` time points (``why``: the reason for the minimum, said before the advice)."""
    _check_3d_series(op, x)
    _check_float(op, "x", x)
    torch._check_value(
        x.shape[1] >= 1, lambda: f"{op}: expected x to have at least one channel, got x of shape {list(x.shape)}"
    )
    torch._check_value(
        x.shape[2] >= min_length,
        lambda: f"{op}: expected at least {min_length} time points ({why + '; ' if why else ''}zero-pad shorter "
        f"series), got x of shape {list(x.shape)}",
    )
