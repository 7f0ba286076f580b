"""Batching rules (``torch.vmap``) of the SoftDTW operators.

Every SoftDTW op computes each pair on its own: all its tensor arguments are per pair along dim 0
(x, y, D, tables, upstream gradients, tangents, lengths). So a vmapped call is one call on the
batch flattened with the vmapped dimension, (V, B, ...) → (V·B, ...), and its outputs are split
back: the same kernels over the same pairs, hence the same bits as a Python loop over the V
samples (tests/softdtw/test_second_order.py::test_vmap_equals_a_loop_bit_for_bit), in one call instead of V. An argument that is not vmapped
is broadcast to the V samples. Empty tensors (a forward's table or checkpoints when none was
kept) are caches of no pair and stay as they are.

One refinement: when only the upstream gradient of ``_soft_dtw_from_cost_backward`` is vmapped
(``torch.func.jacrev`` and ``vjp`` over several cotangents), E is computed once and scaled per
sample, which is the kernel's own ``grad·E`` product, so the bits are the same.

Registered once by ``softdtw_torch._ops`` after the fake kernels; ``torch.library.register_vmap``
where torch has it (2.5+), an equivalent FuncTorchBatched kernel on torch 2.4.
"""
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

_NAMESPACE = "softdtw_torch"
_lib = torch.library.Library(_NAMESPACE, "IMPL")


def _is_empty_cache(t: Tensor, in_dim: Optional[int]) -> bool:
    """A 1-D empty tensor (per sample): a table or checkpoint the forward did not keep."""
    shape = list(t.shape)
    if in_dim is not None:
        del shape[in_dim]
    return len(shape) == 1 and shape[0] == 0


def _flatten(t: Tensor, in_dim: Optional[int], size: int) -> Tensor:
    """(V, B, ...) with the vmapped dimension first (broadcast when not vmapped), as (V·B, ...)."""
    t = t.movedim(in_dim, 0) if in_dim is not None else t.expand(size, *t.shape)
    return t.reshape(size * t.shape[1], *t.shape[2:])


def _flattened_call(op: Callable, size: int, in_dims: Sequence[Optional[int]], args: Sequence[Any]) -> Tuple[Any, Any]:
    new_args: List[Any] = []
    for arg, in_dim in zip(args, in_dims):
        if not isinstance(arg, Tensor):
            new_args.append(arg)
        elif _is_empty_cache(arg, in_dim):
            new_args.append(arg.new_empty((0,)))
        else:
            new_args.append(_flatten(arg, in_dim, size))
    result = op(*new_args)
    outputs = result if isinstance(result, tuple) else (result,)

    def split(out: Tensor) -> Tuple[Tensor, Optional[int]]:
        if out.dim() == 1 and out.shape[0] == 0 and size > 0:  # an empty cache: of no sample
            return out, None
        return out.reshape(size, out.shape[0] // size, *out.shape[1:]), 0

    pairs = [split(out) for out in outputs]
    if isinstance(result, tuple):
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    return pairs[0]


def _flatten_rule(op: Callable) -> Callable:
    def rule(info, in_dims, *args):
        return _flattened_call(op, info.batch_size, in_dims, args)

    return rule


def _from_cost_backward_rule(info, in_dims, grad, D, R, *bundle):
    """bundle: the SoftDTW argument bundle (csrc/softdtw/args.h), passed on as it came."""
    op = torch.ops.softdtw_torch._soft_dtw_from_cost_backward
    only_grad = in_dims[0] is not None and all(d is None for d in in_dims[1:])
    if not only_grad:
        return _flattened_call(op, info.batch_size, in_dims, (grad, D, R, *bundle))
    # E once; the kernel's per-pair product grad·E, per sample.
    E = op(torch.ones_like(grad.select(in_dims[0], 0)), D, R, *bundle)
    g = grad.movedim(in_dims[0], 0).to(E.dtype)
    return g.reshape(*g.shape, 1, 1) * E, 0


def _dilate_rule(info, in_dims, prediction, target, alpha, gamma, bandwidth, penalty, prediction_lengths,
                 target_lengths, itakura_max_slope):
    args = [prediction, target, alpha, gamma, bandwidth, penalty, prediction_lengths, target_lengths, itakura_max_slope]
    dims = list(in_dims)
    if penalty is not None and penalty.dim() - (dims[5] is not None) == 2:
        # An (N, M) penalty is shared by a sample's pairs: made (B, N, M) like the other arguments.
        batch = prediction.shape[0] if dims[0] is None else prediction.movedim(dims[0], 0).shape[1]
        p = penalty if dims[5] is None else penalty.movedim(dims[5], 0)
        args[5] = p.unsqueeze(-3).expand(*p.shape[:-2], batch, *p.shape[-2:])
        dims[5] = None if dims[5] is None else 0
    return _flattened_call(torch.ops.softdtw_torch.dilate, info.batch_size, dims, args)


_RULES = {
    "soft_dtw_from_cost": None,
    "soft_dtw_fused": None,
    "soft_dtw": None,
    "pairwise_cost": None,
    "soft_dtw_alignment": None,
    "soft_dtw_alignment_from_cost": None,
    "soft_dtw_sharp": None,
    "soft_dtw_sharp_from_cost": None,
    "dilate": _dilate_rule,
    "_soft_dtw_from_cost_forward": None,
    "_soft_dtw_from_cost_backward": _from_cost_backward_rule,
    "_soft_dtw_from_cost_jvp": None,
    "_soft_dtw_from_cost_hvp": None,
    "_soft_dtw_fused_forward": None,
    "_soft_dtw_fused_backward": None,
    "_soft_dtw_fused_jvp": None,
    "_soft_dtw_fused_hvp": None,
    "_soft_dtw_fused_value_and_grad": None,
    "_dtw_path": None,
    "_itakura_rows": None,
}
"""Every SoftDTW op and its batching rule (None: the flattening rule)."""


def _register_torch_2_4(name: str, rule: Callable) -> None:
    """What ``torch.library.register_vmap`` does on later versions, for torch 2.4."""
    from torch._functorch.autograd_function import VmapInfo
    from torch._functorch.pyfunctorch import retrieve_current_functorch_interpreter
    from torch._functorch.vmap import _add_batch_dim, unwrap_batched

    op = getattr(torch.ops.softdtw_torch, name).default

    def kernel(*args):
        interpreter = retrieve_current_functorch_interpreter()
        level = interpreter.level()
        unwrapped, in_dims = unwrap_batched(args, level)
        excluded = torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.FuncTorchBatched))
        with excluded:
            if all(d is None for d in in_dims):
                return op(*unwrapped)
            info = VmapInfo(batch_size=interpreter.batch_size(), randomness=interpreter.randomness())
            outputs, out_dims = rule(info, in_dims, *unwrapped)
        if isinstance(outputs, tuple):
            return tuple(o if d is None else _add_batch_dim(o, d, level) for o, d in zip(outputs, out_dims))
        return outputs if out_dims is None else _add_batch_dim(outputs, out_dims, level)

    _lib.impl(name, kernel, "FuncTorchBatched")


def _register_all() -> None:
    for name, rule in _RULES.items():
        op = getattr(torch.ops.softdtw_torch, name).default
        rule = rule if rule is not None else _flatten_rule(op)
        if hasattr(torch.library, "register_vmap"):
            torch.library.register_vmap(f"{_NAMESPACE}::{name}", rule, lib=_lib)
        else:
            _register_torch_2_4(name, rule)


_register_all()
