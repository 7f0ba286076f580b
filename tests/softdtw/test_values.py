"""Forward values against independent references: brute force over all alignment paths, the
float64 loop reference, the DTW bounds, band and ragged semantics, divergence properties."""
import math

import pytest
import torch

import softdtw_torch as st
from softdtw_torch import _reference as ref
from conftest import DEVICES


def pair_cost(x, y):
    return ref.sqeuclidean(x, y)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n,m", [(1, 1), (1, 4), (4, 1), (2, 3), (3, 3), (5, 4), (4, 5), (5, 5)])
@pytest.mark.parametrize("gamma", [1e-2, 0.5, 10.0])
def test_matches_brute_force_over_all_paths(device, n, m, gamma):
    D = torch.rand(2, n, m, dtype=torch.float64, generator=torch.Generator().manual_seed(n * 10 + m)) * 3
    values = st.soft_dtw_from_cost(D.to(device), gamma=gamma).cpu()
    for b in range(2):
        expected, _ = ref.soft_dtw_brute_force(D[b].tolist(), gamma)
        assert values[b].item() == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n,m,radius", [(5, 5, 0), (5, 5, 1), (5, 3, 0), (3, 5, 1), (5, 2, 0)])
def test_band_matches_brute_force_restricted_to_band(device, n, m, radius):
    D = torch.rand(1, n, m, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    value = st.soft_dtw_from_cost(D.to(device), gamma=0.3, bandwidth=radius).item()
    expected, _ = ref.soft_dtw_brute_force(D[0].tolist(), 0.3, radius)
    assert value == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("n,m,d", [(6, 6, 1), (6, 4, 3), (150, 97, 2)])
@pytest.mark.parametrize("gamma", [1e-3, 0.1, 1.0])
def test_dtw_bounds(n, m, d, gamma):
    # DTW − γ·log Delannoy(n−1, m−1) <= sdtw_γ <= DTW on the same squared costs.
    x, y = ref.random_pairs(1, n, m, d, seed=n + m)
    value = st.soft_dtw(x, y, gamma=gamma).item()
    D = pair_cost(x[0], y[0]).tolist()
    hard = ref.dtw(D)
    assert value <= hard + 1e-9 * abs(hard)
    assert value >= hard - gamma * math.log(ref.delannoy(n - 1, m - 1)) - 1e-9 * abs(hard)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 2e-5)])
@pytest.mark.parametrize("n,m,radius", [(70, 70, None), (130, 67, None), (67, 130, 5), (129, 129, 10), (100, 40, 3)])
def test_fused_and_unfused_match_loop_reference(device, dtype, tol, n, m, radius):
    # Sizes cross the CPU kernel's 64-cell tiles, N != M both ways, bands narrower than |N − M|.
    x, y = ref.random_pairs(3, n, m, 2, seed=n * m)
    expected = [ref.soft_dtw(pair_cost(x[b], y[b]).tolist(), 0.7, radius) for b in range(3)]
    for fused in (True, False):
        got = st.soft_dtw(x.to(device, dtype), y.to(device, dtype), gamma=0.7, bandwidth=radius, fused=fused)
        assert got.dtype == dtype
        torch.testing.assert_close(got.cpu().double(), torch.tensor(expected, dtype=torch.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_ragged_pairs_computed_as_if_alone(device):
    x, y = ref.random_pairs(4, 90, 70, 3, seed=3)
    x_lengths = torch.tensor([90, 1, 65, 33])
    y_lengths = torch.tensor([12, 70, 1, 70])
    for radius in (None, 4):
        got = st.soft_dtw(x.to(device), y.to(device), gamma=0.5, bandwidth=radius,
                          x_lengths=x_lengths, y_lengths=y_lengths).cpu()
        for b in range(4):
            alone = st.soft_dtw(x[b:b + 1, : x_lengths[b]], y[b:b + 1, : y_lengths[b]], gamma=0.5, bandwidth=radius)
            assert got[b].item() == alone.item()  # same bits: each pair is computed exactly as if alone
            expected = ref.soft_dtw(pair_cost(x[b, : x_lengths[b]], y[b, : y_lengths[b]]).tolist(), 0.5, radius)
            assert got[b].item() == pytest.approx(expected, rel=1e-12)


def test_band_zero_on_equal_lengths_is_the_diagonal_sum():
    D = torch.rand(2, 9, 9, dtype=torch.float64)
    got = st.soft_dtw_from_cost(D, gamma=0.01, bandwidth=0)
    torch.testing.assert_close(got, D.diagonal(dim1=1, dim2=2).sum(-1))


def test_band_widened_for_unequal_lengths_keeps_the_end_reachable():
    # |N − M| = 40 > radius: Maghoumi/BGU return +inf here; tslearn's rule (ours) stays finite.
    x, y = ref.random_pairs(1, 50, 10, 1, seed=5)
    assert math.isfinite(st.soft_dtw(x, y, bandwidth=2).item())
    assert math.isfinite(st.soft_dtw(y, x, bandwidth=0).item())


@pytest.mark.parametrize("n,m", [(20, 20), (30, 11), (11, 30)])
def test_divergence_properties(n, m):
    x, y = ref.random_pairs(3, n, m, 2, seed=11)
    div = st.soft_dtw(x, y, gamma=0.5, normalize=True)
    assert (div >= -1e-10).all()
    self_div = st.soft_dtw(x, x, gamma=0.5, normalize=True)
    torch.testing.assert_close(self_div, torch.zeros(3, dtype=torch.float64), atol=1e-10, rtol=0)
    # Definition, with three separate DPs of sizes N×M, N×N and M×M.
    for b in range(3):
        xy = ref.soft_dtw(pair_cost(x[b], y[b]).tolist(), 0.5)
        xx = ref.soft_dtw(pair_cost(x[b], x[b]).tolist(), 0.5)
        yy = ref.soft_dtw(pair_cost(y[b], y[b]).tolist(), 0.5)
        assert div[b].item() == pytest.approx(xy - 0.5 * xx - 0.5 * yy, rel=1e-10)


def test_divergence_with_lengths_uses_each_sequence_length():
    x, y = ref.random_pairs(2, 12, 9, 2, seed=2)
    xl, yl = torch.tensor([12, 7]), torch.tensor([5, 9])
    div = st.soft_dtw(x, y, gamma=0.5, normalize=True, x_lengths=xl, y_lengths=yl)
    for b in range(2):
        alone = st.soft_dtw(x[b, : xl[b]], y[b, : yl[b]], gamma=0.5, normalize=True)
        assert div[b].item() == pytest.approx(alone.item(), rel=1e-12)


def test_unbatched_inputs_give_a_scalar():
    x, y = ref.random_pairs(1, 8, 6, 2)
    value = st.soft_dtw(x[0], y[0])
    assert value.shape == ()
    assert value.item() == st.soft_dtw(x, y)[0].item()
    D = pair_cost(x[0], y[0])
    assert st.soft_dtw_from_cost(D).shape == ()


def test_values_can_be_negative_and_self_value_nonzero():
    # The documented, expected behaviour of SoftDTW itself (not the divergence).
    x = torch.zeros(1, 10, 1, dtype=torch.float64)
    value = st.soft_dtw(x, x, gamma=1.0).item()
    assert value < 0
    assert value == pytest.approx(ref.soft_dtw([[0.0] * 10] * 10, 1.0), rel=1e-12)


def test_empty_batch_gives_empty_result():
    x, y = torch.zeros(0, 5, 2), torch.zeros(0, 4, 2)
    assert st.soft_dtw(x, y).shape == (0,)
    D = torch.zeros(0, 5, 4, requires_grad=True)
    out = st.soft_dtw_from_cost(D)
    out.sum().backward()
    assert out.shape == (0,) and D.grad.shape == (0, 5, 4)


def test_positive_infinite_cost_is_a_forbidden_cell():
    D = torch.rand(1, 4, 4, dtype=torch.float64)
    blocked = D.clone()
    blocked[0, 1, 1] = math.inf
    expected, _ = ref.soft_dtw_brute_force(blocked[0].tolist(), 0.5)
    assert st.soft_dtw_from_cost(blocked, gamma=0.5).item() == pytest.approx(expected, rel=1e-12)
    # Every path blocked: +inf value, zero gradient, no NaN.
    wall = D.clone()
    wall[0, 2, :] = math.inf
    wall.requires_grad_(True)
    value = st.soft_dtw_from_cost(wall, gamma=0.5)
    value.backward()
    assert value.item() == math.inf
    assert torch.equal(wall.grad, torch.zeros_like(wall))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_inputs_accumulate_in_float32(dtype):
    x, y = ref.random_pairs(2, 40, 30, 3, dtype=torch.float32)
    x, y = x.to(dtype), y.to(dtype)
    got = st.soft_dtw(x, y, gamma=0.5)
    assert got.dtype == dtype
    expected = st.soft_dtw(x.float(), y.float(), gamma=0.5)
    torch.testing.assert_close(got.float(), expected.to(dtype).float())
    xr = x.clone().requires_grad_(True)
    st.soft_dtw(xr, y, gamma=0.5).sum().backward()
    assert xr.grad.dtype == dtype and torch.isfinite(xr.grad.float()).all()


def test_module_reductions():
    x, y = ref.random_pairs(4, 10, 12, 2)
    values = st.soft_dtw(x, y, gamma=0.3)
    assert st.SoftDTW(gamma=0.3)(x, y).item() == pytest.approx(values.mean().item())  # default: 'mean'
    assert st.SoftDTW(gamma=0.3, reduction="sum")(x, y).item() == pytest.approx(values.sum().item())
    assert torch.equal(st.SoftDTW(gamma=0.3, reduction="none")(x, y), values)
    assert "gamma=0.3" in repr(st.SoftDTW(gamma=0.3))


def test_fused_default_rule_picks_by_feature_count():
    # fused=None: fused for d <= 128, unfused beyond; both give the same values.
    for d in (3, 129):
        x, y = ref.random_pairs(2, 7, 9, d)
        default = st.soft_dtw(x, y)
        torch.testing.assert_close(default, st.soft_dtw(x, y, fused=True), rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(default, st.soft_dtw(x, y, fused=False), rtol=1e-10, atol=1e-10)
