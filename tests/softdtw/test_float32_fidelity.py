"""float32 as faithful as float64 on real data at small γ (docs/design/softdtw.md §9).

R sums costs along paths, so on unnormalised series R ≫ γ: raw BasicMotions reaches R ≈ 4e4,
where float32's spacing (0.004) is four times γ = 0.001, and the weights exp(−ΔR/γ) of a float32 R
would be rounding noise. The float32 kernels carry each R as a double-float hi + lo instead. The
reference is the float64 op on the same float32 costs as the float32 op computes them (the float64
DP itself is checked against brute force over all paths and an independent DP in test_values.py
and test_second_order.py). 16 pairs of train series per data set, raw (not normalised).

Bounds, and what was measured on this data with the CPU kernels (this machine, AVX2):
- alignments: max |ΔE| <= 1e-5, ten times below the 1e-4 the float32 path is promised (measured
  <= 2e-6 for every data set and γ; 0.42 on BasicMotions at γ = 0.001 before R was a double-float);
- values: |Δv| <= 1e-6 of the value's scale |⟨E, D⟩| + |v − ⟨E, D⟩|, the magnitudes of its two
  parts (the alignment's cost, and γ times its entropy): v itself can cancel to near 0 (0.008 on
  a GunPoint pair at γ = 0.001, where float32's rounding of γ alone moves it by 1e-6 of itself);
- gradients, fused and unfused: max |Δ∂/∂x| <= 1e-5 of max |∂/∂x|;
- forward mode and Hessian-vector products: <= 1e-5 of the output's largest entry.
"""
import os

import numpy as np
import pytest
import torch

import softdtw_torch as st
from softdtw_torch.datasets import load_gunpoint, load_ts

from conftest import AEON_DATASETS, needs_aeon_data

OPS = torch.ops.softdtw_torch
GAMMAS = [1.0, 0.1, 0.01, 0.001]
DATA = [pytest.param("random", id="random"), pytest.param("GunPoint", id="GunPoint"),
        pytest.param("ArrowHead", id="ArrowHead", marks=needs_aeon_data),
        pytest.param("BasicMotions", id="BasicMotions", marks=needs_aeon_data)]


def pairs(name):
    """16 pairs (x, y) of float32 series (16, T, d) of a data set's train split, as loaded."""
    if name == "random":  # unit scale, for comparison
        g = torch.Generator().manual_seed(0)
        X = torch.randn(32, 120, 3, generator=g, dtype=torch.float64)
    else:
        if name == "GunPoint":
            X, _ = load_gunpoint("train")
        else:
            X, _ = load_ts(os.path.join(AEON_DATASETS, name, f"{name}_TRAIN.ts"))
        X = torch.from_numpy(np.asarray(X, dtype=np.float64)).transpose(1, 2)  # (cases, T, channels)
    X = X.float()
    return X[:16], X[16:32]


def squared_euclidean_as_fused(x, y):
    """The fused kernels' float32 costs: Σ_k (x_ik − y_jk)², summed feature by feature in order."""
    D = torch.zeros(x.shape[0], x.shape[1], y.shape[1], dtype=x.dtype)
    for k in range(x.shape[2]):
        diff = x[:, :, None, k] - y[:, None, :, k]
        D = D + diff * diff
    return D


def alignment64(D32, gamma):
    return st.soft_dtw_alignment_from_cost(D32.double(), gamma)


def value_scale(v64, E64, D32):
    cost = (E64 * D32.double()).sum((1, 2))
    return cost.abs() + (v64 - cost).abs()


@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("name", DATA)
def test_alignment_and_value_match_float64_on_the_same_costs(name, gamma):
    x, y = pairs(name)
    D = st.pairwise_cost(x, y)
    E32, v32 = st.soft_dtw_alignment_from_cost(D, gamma)
    E64, v64 = alignment64(D, gamma)
    assert (E32.double() - E64).abs().max().item() <= 1e-5
    assert ((v32.double() - v64).abs() / value_scale(v64, E64, D)).max().item() <= 1e-6


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("name", DATA)
def test_gradients_match_float64_on_the_same_costs(name, gamma, fused):
    # ∂v/∂x_i = 2 Σ_j E_ij (x_i − y_j), with E of the costs the mode computes in float32: the fused
    # kernels' own (summed feature by feature), or pairwise_cost's expanded form (unfused).
    x, y = pairs(name)
    D32 = squared_euclidean_as_fused(x, y) if fused else st.pairwise_cost(x, y)
    if fused:  # the kernel's costs are exactly these: the same float32 value
        torch.testing.assert_close(st.soft_dtw(x, y, gamma=gamma, fused=True),
                                   st.soft_dtw_from_cost(D32, gamma), rtol=0, atol=0)
    E64, v64 = alignment64(D32, gamma)
    xd, yd = x.double(), y.double()
    want = 2 * (E64.sum(2, keepdim=True) * xd - E64 @ yd)
    leaf = x.clone().requires_grad_(True)
    st.soft_dtw(leaf, y, gamma=gamma, fused=fused).sum().backward()
    error = (leaf.grad.double() - want).abs().max() / want.abs().max()
    assert error.item() <= 1e-5


@pytest.mark.parametrize("gamma", [0.1, 0.001])
@pytest.mark.parametrize("name", DATA)
def test_forward_mode_and_hessian_vector_products_match_float64(name, gamma):
    x, y = pairs(name)
    D = st.pairwise_cost(x, y)
    g = torch.Generator().manual_seed(1)
    D_tangent = torch.randn(D.shape, generator=g)
    grad = torch.linspace(0.5, 1.5, D.shape[0])
    grad_tangent = torch.linspace(-1.0, 1.0, D.shape[0])

    def outputs(dtype):
        c = dict(dtype=dtype)
        jvp = OPS._soft_dtw_from_cost_jvp(D.to(**c), D_tangent.to(**c), gamma, None, None, None, None)
        hvp = OPS._soft_dtw_from_cost_hvp(grad.to(**c), grad_tangent.to(**c), D.to(**c), D_tangent.to(**c), gamma,
                                          None, None, None, None, True)
        return (*jvp, *hvp)

    for got, want in zip(outputs(torch.float32), outputs(torch.float64)):
        scale = want.abs().max().clamp_min(1e-30)
        assert ((got.double() - want).abs().max() / scale).item() <= 1e-5
