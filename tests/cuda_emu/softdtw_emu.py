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
        sources=[os.path.join(HERE, "softdtw_emu_ext.cpp")]
        + [os.path.join(ROOT, "csrc", "softdtw", name) for name in ("problem.cpp", "table_memory.cpp")],
        extra_include_paths=[os.path.join(ROOT, "csrc", "softdtw"), HERE],
        extra_cflags=["-O2", "-std=c++20", "-pthread"],
        extra_ldflags=["-pthread"],
        build_directory=build_dir,
        verbose=False,
    )


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
    want_values, want_table = ops._soft_dtw_from_cost_forward(D.double(), gamma, None, None, None, True)
    want_E = ops._soft_dtw_from_cost_backward(ones, D.double(), want_table, gamma, None, None, None)
    want_R = cpu_table_by_rows(want_table)

    def errors(forward, backward, by_rows):
        values, table = forward(D, gamma, None, None, None, True)
        E = backward(ones.to(D.dtype), D, table, gamma, None, None, None)
        R = by_rows(table)
        return Float32Errors(((values.double() - want_values) / want_values).abs().max().item(),
                             (E.double() - want_E).abs().max().item(),
                             ((R - want_R).abs() / (want_R.abs() + gamma)).max().item())

    return (errors(ops._soft_dtw_from_cost_forward, ops._soft_dtw_from_cost_backward, cpu_table_by_rows),
            errors(emu.from_cost_forward, emu.from_cost_backward, table_values))
