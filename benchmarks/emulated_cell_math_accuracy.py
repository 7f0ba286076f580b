"""float32 accuracy of the CUDA kernels' base-2 cell math, on the CPU: the kernels run under the
CUDA emulator with exp2f and __log2f at CUDA's documented worst-case errors
(tests/cuda_emu), next to the CPU's float32 kernels, both against float64 on the same float32
costs. Prints values' relative error, max |ΔE|, and R's error on the |R| + γ scale
(docs/design/cuda_kernels.md, "Cell math"). No GPU needed; timings mean nothing here.

    python benchmarks/emulated_cell_math_accuracy.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "cuda_emu"))
import emulated_ops  # noqa: E402
import softdtw_torch  # noqa: E402,F401  (registers the CPU ops)

OPS = torch.ops.softdtw_torch
SHAPES = [(2, 150, 140, 3), (2, 90, 80, 36), (2, 300, 290, 3)]
GAMMAS = [1e-4, 1e-2, 1.0, 1e2, 1e3]


def main():
    emu = emulated_ops.load()
    print("| B×N×M×d | γ | values, rel. (CPU f32 / emulated CUDA f32) | max abs ΔE | max ΔR/(abs R + γ) |")
    print("|---|---|---|---|---|")
    for batch, n, m, d in SHAPES:
        g = torch.Generator().manual_seed(1)
        x = torch.randn(batch, n, d, generator=g, dtype=torch.float64).float()
        y = torch.randn(batch, m, d, generator=g, dtype=torch.float64).float()
        D = OPS.pairwise_cost(x, y, "sqeuclidean")
        for gamma in GAMMAS:
            cpu, cuda = emulated_ops.float32_errors(emu, D, gamma)
            cells = " | ".join(f"{a:.1e} / {b:.1e}" for a, b in zip(cpu, cuda))
            print(f"| {batch}×{n}×{m}×{d} | {gamma:g} | {cells} |")


if __name__ == "__main__":
    main()
