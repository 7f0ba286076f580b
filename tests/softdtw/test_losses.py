"""Losses built on the second-order engine: the sharp soft-DTW (divergence) of Blondel, Mensch &
Vert (2021) and DILATE (Le Guen & Thome 2019), against float64 references written from their
definitions (``_reference``: a brute force over all paths, an independent DP differentiated by
autograd), in Python, TorchScript and from the modules."""
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import _reference as ref
from conftest import DEVICES

F64 = torch.float64


def rand(*shape, seed=0):
    return torch.randn(*shape, dtype=F64, generator=torch.Generator().manual_seed(seed))


# ---- sharp soft-DTW ----------------------------------------------------------------------------

@pytest.mark.parametrize("n,m,radius", [(1, 1, None), (3, 5, None), (5, 5, 1), (6, 2, 0)])
@pytest.mark.parametrize("gamma", [0.05, 1.0])
def test_sharp_is_the_cost_of_the_expected_alignment(n, m, radius, gamma):
    D = torch.rand(2, n, m, dtype=F64, generator=torch.Generator().manual_seed(n + m)) * 2
    got = st.soft_dtw_sharp_from_cost(D, gamma, radius)
    for b in range(2):
        _, E = ref.soft_dtw_brute_force(D[b].tolist(), gamma, radius)
        assert got[b].item() == pytest.approx((torch.tensor(E, dtype=F64) * D[b]).sum().item(), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_sharp_lies_between_dtw_and_above(fused):
    # ⟨E, D⟩ >= DTW (E averages alignments) and it tends to DTW as γ → 0; soft-DTW tends to it from below.
    x, y = rand(1, 7, 2, seed=1), rand(1, 6, 2, seed=2)
    dtw = ref.dtw(ref.sqeuclidean(x[0], y[0]).tolist())
    previous = float("inf")
    for gamma in (1.0, 0.1, 0.01, 1e-3):
        sharp = st.soft_dtw_sharp(x, y, gamma, fused=fused).item()
        assert dtw - 1e-9 <= sharp <= previous + 1e-9
        assert st.soft_dtw(x, y, gamma, fused=fused).item() <= dtw + 1e-9
        previous = sharp
    assert previous == pytest.approx(dtw, rel=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("normalize", [False, True], ids=["value", "divergence"])
def test_sharp_gradients(device, fused, normalize):
    x = rand(2, 6, 2, seed=3).to(device).requires_grad_(True)
    y = rand(2, 5, 2, seed=4).to(device).requires_grad_(True)
    xl = torch.tensor([6, 3])
    assert torch.autograd.gradcheck(
        lambda a, b: st.soft_dtw_sharp(a, b, 0.4, bandwidth=2, normalize=normalize, fused=fused, x_lengths=xl), (x, y))


def test_sharp_gradient_matches_independent_reference():
    x, y = rand(5, 3, seed=5).requires_grad_(True), rand(7, 3, seed=6)
    (got,) = torch.autograd.grad(st.soft_dtw_sharp(x, y, 0.3), x)
    leaf = x.detach().clone().requires_grad_(True)
    D = ref.sqeuclidean(leaf, y)
    value = ref.soft_dtw_autograd(D, 0.3)
    (E,) = torch.autograd.grad(value, D, create_graph=True)
    (want,) = torch.autograd.grad((E * D).sum(), leaf)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_sharp_tensor_gamma_and_costs():
    x, y = rand(2, 6, 3, seed=7), rand(2, 5, 3, seed=8)
    gamma = torch.tensor([0.2, 0.7], dtype=F64, requires_grad=True)
    for cost in ("sqeuclidean", "cosine"):
        by_tensor = st.soft_dtw_sharp(x, y, gamma, cost=cost, normalize=True)
        by_float = torch.stack([st.soft_dtw_sharp(x[b:b + 1], y[b:b + 1], g, cost=cost, normalize=True)[0]
                                for b, g in enumerate((0.2, 0.7))])
        torch.testing.assert_close(by_tensor, by_float, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda g: st.soft_dtw_sharp(x, y, g), (gamma,))


def test_sharp_divergence_is_zero_on_equal_series():
    x = rand(3, 6, 2, seed=9)
    assert st.soft_dtw_sharp(x, x.clone(), 0.5, normalize=True).abs().max().item() < 1e-12


def test_sharp_refuses_its_second_derivative():
    x, y = rand(1, 5, 2, seed=10).requires_grad_(True), rand(1, 4, 2, seed=11)
    (g,) = torch.autograd.grad(st.soft_dtw_sharp(x, y, 0.5).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="a third derivative .* is not supported"):
        g.sum().backward()


# ---- DILATE ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n,m,d", [(20, 20, 1), (12, 9, 2), (1, 5, 1)])
@pytest.mark.parametrize("alpha,gamma", [(0.5, 0.01), (0.2, 1.0)])
def test_dilate_matches_its_definition(n, m, d, alpha, gamma):
    prediction, target = rand(3, n, d, seed=n), rand(3, m, d, seed=m + 1)
    prediction.requires_grad_(True)
    loss, shape, temporal = st.dilate(prediction, target, alpha, gamma)
    (grad,) = torch.autograd.grad(loss.sum(), prediction)
    for b in range(3):
        leaf = prediction[b].detach().clone().requires_grad_(True)
        want_loss, want_shape, want_temporal = ref.dilate(leaf, target[b], alpha, gamma)
        (want_grad,) = torch.autograd.grad(want_loss, leaf)
        assert shape[b].item() == pytest.approx(want_shape.item(), rel=1e-10, abs=1e-10)
        assert temporal[b].item() == pytest.approx(want_temporal.item(), rel=1e-10, abs=1e-12)
        assert loss[b].item() == pytest.approx(want_loss.item(), rel=1e-10, abs=1e-10)
        scale = max(1.0, want_grad.abs().max().item())
        torch.testing.assert_close(grad[b] / scale, want_grad / scale, rtol=1e-8, atol=1e-9)


def test_dilate_temporal_term_is_the_authors_for_equal_lengths():
    # For N = M the penalty is the authors' (i − j)²/N² (their pairwise_distances of range(1, N + 1)).
    n = 7
    prediction, target = rand(2, n, 1, seed=12), rand(2, n, 1, seed=21)
    _, _, temporal = st.dilate(prediction, target, 0.5, 0.1)
    E, _ = st.soft_dtw_alignment(prediction, target, 0.1)
    i = torch.arange(1, n + 1, dtype=F64)
    authors = (E * (i[:, None] - i[None, :]) ** 2).sum((1, 2)) / (n * n)
    torch.testing.assert_close(temporal, authors, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("device", DEVICES)
def test_dilate_gradcheck_with_lengths_band_and_penalty(device):
    prediction = rand(2, 6, 2, seed=13).to(device).requires_grad_(True)
    target = rand(2, 5, 2, seed=14).to(device).requires_grad_(True)
    penalty = torch.rand(6, 5, dtype=F64, device=device).requires_grad_(True)
    lengths = torch.tensor([6, 4])
    assert torch.autograd.gradcheck(
        lambda p, t, w: st.dilate(p, t, 0.4, 0.5, bandwidth=2, penalty=w, prediction_lengths=lengths), (prediction, target, penalty))


def test_dilate_lengths_use_each_pairs_own_penalty():
    prediction, target = rand(2, 9, 1, seed=15), rand(2, 7, 1, seed=16)
    pl, tl = torch.tensor([9, 5]), torch.tensor([4, 7])
    loss, shape, temporal = st.dilate(prediction, target, 0.5, 0.2, prediction_lengths=pl, target_lengths=tl)
    for b in range(2):
        alone = st.dilate(prediction[b:b + 1, :pl[b]], target[b:b + 1, :tl[b]], 0.5, 0.2)
        torch.testing.assert_close(torch.stack([loss[b], shape[b], temporal[b]]), torch.stack([t[0] for t in alone]),
                                   rtol=1e-12, atol=1e-12)


def test_dilate_module_reduction_torchscript_and_tensor_gamma():
    prediction, target = rand(3, 8, 1, seed=17), rand(3, 8, 1, seed=18)
    per_pair = st.dilate(prediction, target, 0.3, 0.05)[0]
    for reduction, want in (("mean", per_pair.mean()), ("sum", per_pair.sum()), ("none", per_pair)):
        module = st.DILATELoss(alpha=0.3, gamma=0.05, reduction=reduction)
        torch.testing.assert_close(module(prediction, target), want, rtol=0, atol=0)
        scripted = torch.jit.script(module)
        torch.testing.assert_close(scripted(prediction, target), want, rtol=0, atol=0)
    gamma = torch.tensor(0.05, dtype=F64, requires_grad=True)
    torch.testing.assert_close(st.dilate(prediction, target, 0.3, gamma)[0], per_pair, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda g: st.dilate(prediction, target, 0.3, g)[0], (gamma,))


def test_sharp_module_matches_functional_and_scripts():
    x, y = rand(2, 6, 2, seed=19), rand(2, 5, 2, seed=20)
    module = st.SharpSoftDTW(gamma=0.3, normalize=True, reduction="none")
    want = st.soft_dtw_sharp(x, y, 0.3, normalize=True)
    assert torch.equal(module(x, y), want)
    assert torch.equal(torch.jit.script(module)(x, y), want)


@pytest.mark.parametrize("call, message", [
    (lambda: st.dilate(rand(2, 5, 1), rand(2, 5, 1), alpha=1.5), r"dilate: alpha must be in \[0, 1\], got 1.5"),
    (lambda: st.dilate(rand(2, 5, 1), rand(2, 5, 1), gamma=-1.0), "dilate: gamma must be 0"),
    (lambda: st.dilate(rand(2, 5, 1), rand(2, 5, 1), penalty=torch.rand(4, 5)),
     r"dilate: expected penalty of shape \(5, 5\) or \(2, 5, 5\)"),
    (lambda: st.dilate(rand(2, 5, 1), rand(3, 5, 2)), "dilate: expected prediction and target to have the same batch"),
    (lambda: st.DILATELoss(alpha=-0.1), r"DILATELoss: alpha must be in \[0, 1\]"),
    (lambda: st.soft_dtw_sharp(rand(2, 5, 1), rand(2, 5, 1), bandwidth=-1), "soft_dtw_sharp: bandwidth must be >= 0"),
    (lambda: st.soft_dtw_sharp(rand(2, 5, 1), rand(2, 5, 1), fused=True, cost="l1"),
     "soft_dtw_sharp: the fused mode computes the squared Euclidean cost only"),
])
def test_errors_name_the_function(call, message):
    # Bad values and shapes raise ValueError, as every SoftDTW op does.
    with pytest.raises(ValueError, match=message):
        call()
