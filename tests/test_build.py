"""The build registered every op for every dispatch key it promises (CUDA kernels included when
the extension was built with FORCE_CUDA=1, as CI does, even on a machine without a GPU)."""
import os

import pytest
import torch

OPS = ["_soft_dtw_from_cost_forward", "_soft_dtw_from_cost_backward", "_soft_dtw_fused_forward", "_soft_dtw_fused_backward"]


def has_kernel(op, key):
    return torch._C._dispatch_has_kernel_for_dispatch_key(f"softdtw_torch::{op}", key)


@pytest.mark.parametrize("op", OPS)
def test_cpu_kernels_registered(op):
    assert has_kernel(op, "CPU")


def test_cuda_kernels_registered_for_every_op_or_none():
    registered = [has_kernel(op, "CUDA") for op in OPS]
    assert all(registered) or not any(registered)
    # CI builds with FORCE_CUDA=1 and runs the tests in the same environment: the CUDA kernels
    # must be there, compiled and registered, although the machine has no GPU.
    if os.environ.get("FORCE_CUDA") == "1" or torch.cuda.is_available():
        assert all(registered)


@pytest.mark.parametrize("op", ["soft_dtw_from_cost", "soft_dtw_fused", "_soft_dtw_from_cost_backward", "_soft_dtw_fused_backward"])
def test_autograd_kernels_registered(op):
    assert has_kernel(op, "Autograd")
