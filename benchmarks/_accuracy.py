"""How the side-by-side benchmarks judge a row against softdtw_torch's float64 result on the same
inputs (bench_cpu.py, bench_gpu_peers.py): one error measure and one tolerance rule for all."""
from typing import Tuple

import torch

# Error = max|a - ref| / max|ref|. Values must agree to a fixed relative tolerance. Gradients get
# max(floor, 10 * eps * max|value| / gamma): the backward weights are
# exp((R[i',j'] - R[i,j] - D) / gamma) with R of the order of the value, so an implementation that
# stores R in float32 carries an absolute error ~ eps * |R| / gamma into every weight.
TOLERANCES = {  # precision: (values, gradient floor)
    "float32": (1e-4, 1e-3),
    "float64": (1e-9, 1e-7),
}


def tolerances(precision: str, ref_values: torch.Tensor, gamma: float) -> Tuple[float, float]:
    """(value tolerance, gradient tolerance) for a row computed in `precision`."""
    v_tol, g_floor = TOLERANCES[precision]
    eps = torch.finfo(getattr(torch, precision)).eps
    return v_tol, max(g_floor, 10 * eps * ref_values.abs().max().item() / gamma)


def rel_err(a: torch.Tensor, ref: torch.Tensor) -> float:
    """max|a - ref| / max|ref| (NaN in `a` gives NaN, which fails every tolerance)."""
    scale = ref.abs().max().item()
    return (a.double() - ref).abs().max().item() / (scale if scale > 0 else 1.0)
