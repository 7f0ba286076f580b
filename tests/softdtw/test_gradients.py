"""Gradients: gradcheck in float64, the expected alignment against brute force and an independent
autograd reference, float32 accuracy for small gamma, finiteness over gamma in [1e-4, 1e4]."""

import pytest
import torch

import softdtw_torch as st
from softdtw_torch import _reference as ref
from conftest import DEVICES


def alignment(D, gamma, bandwidth=None, **kw):
    """E = ∂ sdtw / ∂D from the library (grad of the sum over the batch)."""
    D = D.detach().clone().requires_grad_(True)
    st.soft_dtw_from_cost(D, gamma=gamma, bandwidth=bandwidth, **kw).sum().backward()
    return D.grad


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n,m,radius", [(1, 1, None), (3, 4, None), (5, 5, None), (5, 5, 1), (5, 2, 0), (2, 5, 1)])
def test_alignment_matches_brute_force(device, n, m, radius):
    D = torch.rand(1, n, m, dtype=torch.float64, generator=torch.Generator().manual_seed(n + 3 * m))
    E = alignment(D.to(device), 0.4, radius).cpu()
    _, expected = ref.soft_dtw_brute_force(D[0].tolist(), 0.4, radius)
    torch.testing.assert_close(E[0], torch.tensor(expected, dtype=torch.float64), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("radius", [None, 2])
def test_gradcheck_from_cost(device, radius):
    D = torch.rand(2, 7, 5, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda d: st.soft_dtw_from_cost(d, gamma=0.3, bandwidth=radius), (D,))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("normalize", [False, True])
def test_gradcheck_x_y(device, fused, normalize):
    x, y = ref.random_pairs(2, 6, 8, 3)
    x = x.to(device).requires_grad_(True)
    y = y.to(device).requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda a, b: st.soft_dtw(a, b, gamma=0.5, bandwidth=3, normalize=normalize, fused=fused), (x, y)
    )


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_ragged(device):
    x, y = ref.random_pairs(3, 7, 6, 2)
    x = x.to(device).requires_grad_(True)
    y = y.to(device).requires_grad_(True)
    xl, yl = torch.tensor([7, 3, 1]), torch.tensor([2, 6, 4])
    assert torch.autograd.gradcheck(lambda a, b: st.soft_dtw(a, b, gamma=0.5, x_lengths=xl, y_lengths=yl), (x, y))
    # Padding gets exactly zero gradient.
    st.soft_dtw(x, y, x_lengths=xl, y_lengths=yl).sum().backward()
    for b in range(3):
        assert torch.count_nonzero(x.grad[b, xl[b]:]) == 0
        assert torch.count_nonzero(y.grad[b, yl[b]:]) == 0


@pytest.mark.parametrize("n,m,radius", [(70, 66, None), (66, 70, 4)])
def test_alignment_matches_autograd_reference(n, m, radius):
    D = torch.rand(1, n, m, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 2
    E = alignment(D, 0.2, radius)[0]
    leaf = D[0].clone().requires_grad_(True)
    ref.soft_dtw_autograd(leaf, 0.2, radius).backward()
    torch.testing.assert_close(E, leaf.grad, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("gamma", [1.0, 0.1, 0.01, 0.001])
def test_float32_alignment_accuracy(device, gamma):
    # float32 E vs a float64 reference on the same float32 inputs: max |ΔE| <= 1e-4 (N = M = 128, d = 3).
    x, y = ref.random_pairs(1, 128, 128, 3, dtype=torch.float32, seed=42)
    D32 = ref.sqeuclidean(x, y)
    E32 = alignment(D32.to(device), gamma).cpu()[0].double()
    leaf = D32[0].double().requires_grad_(True)
    ref.soft_dtw_autograd(leaf, gamma).backward()
    assert (E32 - leaf.grad).abs().max().item() <= 1e-4


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("gamma", [1e-4, 1e-3, 1e-2, 1.0, 1e2, 1e4])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_and_gradients_finite_for_all_gamma(device, gamma, dtype):
    # Includes band edges and padding: no NaN or inf anywhere.
    x, y = ref.random_pairs(3, 60, 45, 4, dtype=dtype, seed=3)
    x = (10 * x).to(device).requires_grad_(True)  # large costs stress cancellation at small gamma
    y = y.to(device).requires_grad_(True)
    xl, yl = torch.tensor([60, 31, 5]), torch.tensor([45, 45, 20])
    for fused in (True, False):
        value = st.soft_dtw(x, y, gamma=gamma, bandwidth=3, fused=fused, x_lengths=xl, y_lengths=yl)
        value.sum().backward()
        assert torch.isfinite(value).all()
        assert torch.isfinite(x.grad).all() and torch.isfinite(y.grad).all()
        x.grad = None
        y.grad = None


def test_alignment_rows_are_consistent():
    # E is an expectation over paths: every path starts at (0, 0), ends at (n−1, m−1) and visits
    # every row and every column at least once, so E(0,0) = E(n−1,m−1) = 1 and row/column sums >= 1.
    D = torch.rand(1, 20, 30, dtype=torch.float64)
    E = alignment(D, 0.5)[0]
    assert E[0, 0].item() == pytest.approx(1.0, abs=1e-12)
    assert E[-1, -1].item() == pytest.approx(1.0, abs=1e-12)
    assert (E.sum(1) >= 1 - 1e-10).all() and (E.sum(0) >= 1 - 1e-10).all()
    assert ((E >= 0) & (E <= 1 + 1e-12)).all()


def test_gradient_equals_alignment_formula_for_x():
    # ∂/∂x_i = 2 (x_i Σ_j E_ij − (E·Y)_i) with E from the cost path (docs/design/softdtw.md §3).
    x, y = ref.random_pairs(2, 9, 11, 3)
    x.requires_grad_(True)
    st.soft_dtw(x, y, gamma=0.5, fused=True).sum().backward()
    E = alignment(ref.sqeuclidean(x.detach(), y), 0.5)
    expected = 2 * (x.detach() * E.sum(2, keepdim=True) - E @ y)
    torch.testing.assert_close(x.grad, expected, rtol=1e-10, atol=1e-12)


def test_upstream_gradient_scales_each_pair():
    x, y = ref.random_pairs(3, 5, 6, 2)
    x.requires_grad_(True)
    weights = torch.tensor([0.5, -2.0, 0.0], dtype=torch.float64)
    (st.soft_dtw(x, y) * weights).sum().backward()
    g = x.grad.clone()
    x.grad = None
    st.soft_dtw(x, y).sum().backward()
    torch.testing.assert_close(g, x.grad * weights[:, None, None])


def test_no_grad_path_keeps_no_table():
    # Without autograd, what runs below autograd is the value-only op (which calls the forward
    # keeping nothing) or the forward keeping nothing (keep_table=False, keep="nothing"): extra
    # memory O(B·(N+M)).
    from torch.utils._python_dispatch import TorchDispatchMode

    calls = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if "softdtw_torch" in str(func):
                calls.append((str(func), args[-1] if isinstance(args[-1], (bool, str)) else None))
            return func(*args, **(kwargs or {}))

    x, y = ref.random_pairs(2, 30, 20, 2)
    for fused in (True, False):
        for make_input in (lambda t: t, lambda t: t.clone().requires_grad_(True)):
            calls.clear()
            with torch.no_grad(), Log():
                st.soft_dtw(make_input(x), y, fused=fused)
            assert calls, "no softdtw_torch op ran"
            for name, keep in calls:
                assert ("forward" in name and keep in (False, "nothing")) or name.split(".")[1] in ("soft_dtw_fused", "soft_dtw_from_cost"), calls
    calls.clear()
    xr = x.clone().requires_grad_(True)
    with Log():
        st.soft_dtw(xr, y, fused=True)
    # One forward keeping what its backward reads: the table, or on the CPU, where pairs run in
    # packs, each pair's gradient (tests/softdtw/test_forward_with_grad.py).
    forwards = [(name.split(".")[1], keep) for name, keep in calls if "forward" in name]
    assert forwards in ([("_soft_dtw_fused_forward", "table")], [("_soft_dtw_fused_forward", "gradients")]), calls
    # The value-only path's forward returns no table.
    _, table, second = torch.ops.softdtw_torch._soft_dtw_fused_forward(x, y, 1.0, None, None, None, None, "nothing")
    assert table.numel() == 0 and second.numel() == 0
