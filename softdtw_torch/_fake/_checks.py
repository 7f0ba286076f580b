"""Shape- and dtype-level checks that the fake kernels of several op families share, in the words
of the C++ ops."""
import functools
import inspect
from typing import Callable, Optional

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


def _public_name(op: str) -> str:
    """The public op a message names for op ``op`` (an internal op's name is never shown)."""
    for prefix, public in (("_soft_dtw_from_cost_", "soft_dtw_from_cost"), ("_soft_dtw_fused_", "soft_dtw"),
                           ("_dtw_path", "dtw_path"), ("_itakura_rows", "itakura_mask"),
                           ("_rocket_convolve_", "rocket_convolve"), ("_hydra_transform_", "hydra_transform")):
        if op.startswith(prefix):
            return public
    return op


def _check_no_meta_among_data(op: str, names, values) -> None:
    """A call whose tensors mix the ``meta`` device with a device that holds data reaches the fake
    kernel (the dispatcher runs the Meta kernel when any argument is on meta), which would return
    uninitialised memory on the data's device as if it were the result: refused, naming the
    argument. All-meta calls (shape inference) and fake tensors (torch.compile) pass."""
    tensors = [(n, v) for n, v in zip(names, values) if isinstance(v, torch.Tensor)]
    on_meta = [n for n, v in tensors if v.device.type == "meta"]
    with_data = [(n, v.device) for n, v in tensors if v.device.type != "meta"]
    if on_meta and with_data:
        name, device = with_data[0]
        raise ValueError(f"{_public_name(op)}: expected {on_meta[0]} on {device} (the device of {name}), got meta "
                         f"(a meta tensor holds no data; move every tensor argument to one device, or all to meta "
                         f"for shape inference)")


def register_fake(qualname: str) -> Callable[[Callable], Callable]:
    """``torch.library.register_fake(qualname)`` of a kernel that first refuses a mix of meta and
    data tensors (:func:`_check_no_meta_among_data`): every fake kernel is registered through it."""
    op = qualname.split("::")[1]

    def register(kernel: Callable) -> Callable:
        names = list(inspect.signature(kernel).parameters)

        @functools.wraps(kernel)
        def checked(*args, **kwargs):
            _check_no_meta_among_data(op, names[:len(args)] + list(kwargs), list(args) + list(kwargs.values()))
            return kernel(*args, **kwargs)

        # _stacklevel: the registration's recorded source is the kernel's module, not this one
        return torch.library.register_fake(qualname, checked, _stacklevel=2)

    return register
