"""Builds and loads the CUDA ops' bodies of every family (SoftDTW tiles, ROCKET, MiniRocket, MultiRocket, Hydra)
compiled for the CPU under the CUDA emulator (emulated_ops.cpp with cuda_emu.h), once per checkout,
into build/cuda-emu (about two minutes); and helpers to compare the emulated SoftDTW kernels with
the CPU kernels."""
import os
from typing import NamedTuple

import torch
from torch.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CSRC = os.path.join(ROOT, "csrc")


# Host code the op bodies call (validation, the table's memory), compiled as it is for the
# library: in translation units of their own, without the emulator.
HOST_SOURCES = [("softdtw", "problem.cpp"), ("softdtw", "plan.cpp"), ("common", "table_memory.cpp"),
                ("common", "memory.cpp"), ("rocket", "problem.cpp"),
                ("common/minirocket", "problem.cpp"), ("multirocket", "problem.cpp"), ("hydra", "problem.cpp")]


def load():
    # An emulation error (divergent shuffle, deadlock) raises in the caller instead of aborting it.
    os.environ.setdefault("CUDA_EMU_ON_ERROR", "throw")
    # The emulated device: sm_90, the architecture the kernels are tuned for (launch limits,
    # shared memory); tests that need sm_75's limits set CUDA_EMU_ARCH=75 themselves.
    os.environ.setdefault("CUDA_EMU_ARCH", "90")
    build_dir = os.path.join(ROOT, "build", "cuda-emu")
    os.makedirs(build_dir, exist_ok=True)
    # torch's loader names objects after the sources' file names, and several families have a
    # problem.cpp: each host source is compiled through a one-line file named after its folder.
    sources = [os.path.join(HERE, "emulated_ops.cpp")]
    for folder, name in HOST_SOURCES:
        wrapper = os.path.join(build_dir, f"{folder.replace('/', '_')}_{name}")
        text = f'#include "{folder}/{name}"\n'
        if not os.path.exists(wrapper) or open(wrapper).read() != text:
            with open(wrapper, "w") as f:
                f.write(text)
        sources.append(wrapper)
    return cpp_extension.load(
        name="cuda_emulated_ops",
        sources=sources,
        extra_include_paths=[CSRC, HERE],
        extra_cflags=["-O2", "-std=c++20", "-pthread"],
        extra_ldflags=["-pthread"],
        build_directory=build_dir,
        verbose=False,
    )


def same_bits(a, b):
    """Equal as bit patterns (so -0.0 != 0.0 and NaN == NaN), shapes and dtypes first: what the CUDA
    kernels promise where they promise bits (the CPU's, the harness's, one kernel's against another's)."""
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    if a.is_floating_point():
        a, b = a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)
    return torch.equal(a, b)


def table_values(R):
    """R's cells in float64: a float32 table holds each R as a pair (hi, lo) in its last dimension."""
    return R[..., 0].double() + R[..., 1].double() if R.dtype == torch.float32 else R


def cpu_table_by_rows(R, x_lengths=None, y_lengths=None):
    """A CPU DP table (B, N, M[, 2]) as float64 row by row, as the CUDA kernels keep theirs. The CPU
    keeps each pair's n·m cells anti-diagonal by anti-diagonal (k = i + j), each diagonal by row
    (csrc/softdtw/cpu/tiles.h, TableLayout); cells past a ragged pair's lengths read +inf."""
    values = table_values(R)
    batch, N, M = values.shape
    out = torch.full_like(values, float("inf"))
    for b in range(batch):
        n = N if x_lengths is None else int(x_lengths[b])
        m = M if y_lengths is None else int(y_lengths[b])
        i = torch.arange(n).view(n, 1).expand(n, m)
        j = torch.arange(m).view(1, m).expand(n, m)
        k = torch.arange(n + m - 1)
        length = torch.minimum(k, torch.tensor(n - 1)) - torch.clamp(k - (m - 1), min=0) + 1
        start = torch.cumsum(length, 0) - length  # cells before each diagonal
        index = start[i + j] + i - torch.clamp(i + j - (m - 1), min=0)
        out[b, :n, :m] = values[b].reshape(-1)[index]
    return out


class Float32Errors(NamedTuple):
    value: float  # max relative error of the pairs' values
    alignment: float  # max |ΔE|
    table: float  # max |ΔR| / (|R| + γ): R crosses 0 inside the table


def float32_errors(emu, D, gamma):
    """Errors of the CPU's float32 kernels and of the emulated CUDA float32 kernels against float64
    on the same float32 costs D (B, N, M): (cpu, emulated), each a Float32Errors."""
    ops = torch.ops.softdtw_torch
    ones = torch.ones(D.shape[0], dtype=torch.float64)
    want_values, want_table = ops._soft_dtw_from_cost_forward(D.double(), gamma, None, None, None, None, True)
    want_E = ops._soft_dtw_from_cost_backward(ones, D.double(), want_table, gamma, None, None, None, None)
    want_R = cpu_table_by_rows(want_table)

    def errors(forward, backward, by_rows):
        values, table = forward(D, gamma, None, None, None, None, True)
        E = backward(ones.to(D.dtype), D, table, gamma, None, None, None, None)
        R = by_rows(table)
        return Float32Errors(((values.double() - want_values) / want_values).abs().max().item(),
                             (E.double() - want_E).abs().max().item(),
                             ((R - want_R).abs() / (want_R.abs() + gamma)).max().item())

    return (errors(ops._soft_dtw_from_cost_forward, ops._soft_dtw_from_cost_backward, cpu_table_by_rows),
            errors(emu.from_cost_forward, emu.from_cost_backward, table_values))
