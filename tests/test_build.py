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


# --- setup.py's build configuration (imported, not run: setuptools runs it as __main__) ---
import importlib.util  # noqa: E402
from pathlib import Path  # noqa: E402


@pytest.fixture
def setup_module():
    spec = importlib.util.spec_from_file_location("softdtw_setup", Path(__file__).resolve().parents[1] / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_force_cuda_with_cpu_only_torch_fails_early(setup_module, monkeypatch):
    monkeypatch.setenv("FORCE_CUDA", "1")
    monkeypatch.setattr(setup_module.torch.version, "cuda", None)
    with pytest.raises(SystemExit, match="FORCE_CUDA=1 but the installed torch .* is a CPU-only build"):
        setup_module.want_cuda()


def test_empty_arch_list_fails_early(setup_module, monkeypatch):
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", " ")
    with pytest.raises(SystemExit, match="TORCH_CUDA_ARCH_LIST is set but empty"):
        setup_module.check_arch_list()


def test_default_arch_list_without_gpu(setup_module, monkeypatch):
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "placeholder")  # so monkeypatch restores the variable afterwards
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST")
    monkeypatch.setattr(setup_module.torch.cuda, "is_available", lambda: False)
    setup_module.check_arch_list()
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == "9.0+PTX"


def test_cpu_only_build_by_default_without_gpu(setup_module, monkeypatch):
    monkeypatch.delenv("FORCE_CUDA", raising=False)
    monkeypatch.setattr(setup_module.torch.cuda, "is_available", lambda: False)
    assert setup_module.want_cuda() is False
