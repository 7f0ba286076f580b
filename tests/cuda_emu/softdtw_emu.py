"""Builds and loads the CUDA SoftDTW kernels compiled for the CPU under the CUDA emulator
(softdtw_emu_ext.cpp with cuda_emu.h), once per checkout, into build/cuda-emu (about a minute);
and measures their float32 accuracy next to the CPU's float32 kernels."""
import os
from typing import NamedTuple

import torch
from torch.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load():
    # An emulation error (divergent shuffle, deadlock) raises in the caller instead of aborting it.
    os.environ.setdefault("CUDA_EMU_ON_ERROR", "throw")
    build_dir = os.path.join(ROOT, "build", "cuda-emu")
    os.makedirs(build_dir, exist_ok=True)
    return cpp_extension.load(
        name="softdtw_cuda_emu",
        sources=[os.path.join(HERE, "softdtw_emu_ext.cpp"), os.path.join(ROOT, "csrc", "softdtw", "problem.cpp")],
        extra_include_paths=[os.path.join(ROOT, "csrc", "softdtw"), HERE],
        extra_cflags=["-O2", "-std=c++20", "-pthread"],
        extra_ldflags=["-pthread"],
        build_directory=build_dir,
        verbose=False,
    )


class Float32Errors(NamedTuple):
    value: float  # max relative error of the pairs' values
    alignment: float  # max |ΔE|
    table: float  # max |ΔR| / (|R| + γ): R crosses 0 inside the table


def float32_errors(emu, D, gamma):
    """Errors of the CPU's float32 kernels and of the emulated CUDA float32 kernels against float64
    on the same float32 costs D (B, N, M): (cpu, emulated), each a Float32Errors."""
    ops = torch.ops.softdtw_torch
    ones = torch.ones(D.shape[0], dtype=torch.float64)
    want_values, want_R = ops._soft_dtw_from_cost_forward(D.double(), gamma, None, None, None, True)
    want_E = ops._soft_dtw_from_cost_backward(ones, D.double(), want_R, gamma, None, None, None)

    def errors(forward, backward):
        values, R = forward(D, gamma, None, None, None, True)
        E = backward(ones.to(D.dtype), D, R, gamma, None, None, None)
        return Float32Errors(((values.double() - want_values) / want_values).abs().max().item(),
                             (E.double() - want_E).abs().max().item(),
                             ((R.double() - want_R).abs() / (want_R.abs() + gamma)).max().item())

    return (errors(ops._soft_dtw_from_cost_forward, ops._soft_dtw_from_cost_backward),
            errors(emu.from_cost_forward, emu.from_cost_backward))
