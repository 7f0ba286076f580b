"""gamma as a tensor that requires grad: ∂sdtw/∂γ = (sdtw − ⟨E, D⟩)/γ through every public function."""
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import _reference as ref
from conftest import DEVICES


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("normalize", [False, True])
def test_tensor_gamma_values_match_float_gamma(device, fused, normalize):
    x, y = ref.random_pairs(3, 9, 7, 2, seed=1)
    x, y = x.to(device), y.to(device)
    expected = st.soft_dtw(x, y, gamma=0.3, fused=fused, normalize=normalize, bandwidth=3)
    got = st.soft_dtw(x, y, gamma=torch.tensor(0.3, dtype=torch.float64, device=device), fused=fused,
                      normalize=normalize, bandwidth=3)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cost", ["sqeuclidean", "l1", "cosine"])
def test_gamma_gradient_formula(cost):
    # ∂ sdtw/∂γ = (sdtw − ⟨E, D⟩)/γ with E the expected alignment.
    x, y = ref.random_pairs(2, 8, 6, 3, seed=2)
    gamma = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    values = st.soft_dtw(x, y, gamma=gamma, cost=cost)
    (grad,) = torch.autograd.grad(values.sum(), gamma)
    D = st.pairwise_cost(x, y, cost)
    E, _ = st.soft_dtw_alignment_from_cost(D, gamma=0.4)
    expected = ((values.detach() - (E * D).sum((1, 2))) / 0.4).sum()
    assert grad.item() == pytest.approx(expected.item(), rel=1e-9)
    assert grad.item() <= 0  # minus the entropy of the Gibbs distribution over alignments


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_gamma_everywhere(device):
    x, y = ref.random_pairs(2, 5, 6, 2, seed=3)
    x, y = x.to(device).requires_grad_(True), y.to(device).requires_grad_(True)
    gamma = torch.tensor(0.5, dtype=torch.float64, device=device, requires_grad=True)
    per_pair = torch.tensor([0.3, 2.0], dtype=torch.float64, device=device, requires_grad=True)
    D = ref.sqeuclidean(x.detach(), y.detach()).requires_grad_(True)
    lengths = torch.tensor([5, 3])
    checks = [
        (lambda a, b, g: st.soft_dtw(a, b, gamma=g, bandwidth=2, x_lengths=lengths), (x, y, gamma)),
        (lambda a, b, g: st.soft_dtw(a, b, gamma=g, normalize=True, fused=False), (x, y, gamma)),
        (lambda a, b, g: st.soft_dtw(a, b, gamma=g, cost="l1"), (x, y, per_pair)),
        (lambda d, g: st.soft_dtw_from_cost(d, gamma=g), (D, per_pair)),
        (lambda a, g: st.cdist_soft_dtw(a, gamma=g, normalize=True), (x, gamma)),
        (lambda a, b, g: st.SoftDTW(gamma=g)(a, b), (x, y, gamma)),
    ]
    for f, inputs in checks:
        assert torch.autograd.gradcheck(f, inputs)


def test_per_pair_gamma_equals_separate_calls():
    x, y = ref.random_pairs(3, 7, 8, 2, seed=4)
    gammas = torch.tensor([0.01, 1.0, 50.0], dtype=torch.float64)
    got = st.soft_dtw(x, y, gamma=gammas)
    for b in range(3):
        assert got[b].item() == pytest.approx(st.soft_dtw(x[b], y[b], gamma=float(gammas[b])).item(), rel=1e-12)


def test_learnable_gamma_in_the_module():
    x, y = ref.random_pairs(4, 10, 10, 2, seed=5)
    loss = st.SoftDTW(gamma=torch.nn.Parameter(torch.tensor(1.0, dtype=torch.float64)))
    assert [name for name, _ in loss.named_parameters()] == ["gamma"]
    loss(x, y).backward()
    assert loss.gamma.grad is not None and loss.gamma.grad.item() < 0
    scripted = torch.jit.script(loss)
    torch.testing.assert_close(scripted(x, y), loss(x, y))


def test_alignment_with_tensor_gamma():
    x, y = ref.random_pairs(2, 6, 5, 2, seed=6)
    E1, v1 = st.soft_dtw_alignment(x, y, gamma=0.2)
    E2, v2 = st.soft_dtw_alignment(x, y, gamma=torch.tensor(0.2, dtype=torch.float64))
    torch.testing.assert_close(v2, v1, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(E2, E1, rtol=1e-10, atol=1e-12)


def test_bad_tensor_gamma():
    x, y = ref.random_pairs(2, 4, 4, 2)
    for bad in (torch.tensor(0.0), torch.tensor(-1.0), torch.tensor(float("nan")), torch.tensor([1.0, 0.0])):
        with pytest.raises(ValueError, match="soft_dtw: a tensor gamma must be positive and finite"):
            st.soft_dtw(x, y, gamma=bad)
    with pytest.raises(ValueError, match=r"soft_dtw_from_cost: expected gamma to be a float, a 0-dim tensor or a \(batch,\)"):
        st.soft_dtw_from_cost(torch.rand(2, 3, 3), gamma=torch.ones(3))
    with pytest.raises(ValueError, match="SoftDTW: a tensor gamma must be positive and finite"):
        st.SoftDTW(gamma=torch.tensor(-2.0))


def test_tensor_gamma_compiles():
    torch._dynamo.reset()
    x, y = ref.random_pairs(2, 8, 7, 2, dtype=torch.float32, seed=7)

    def f(a, b, g):
        return st.soft_dtw(a, b, gamma=g).sum()

    outs = []
    for fn in (f, torch.compile(f, fullgraph=True, backend="aot_eager")):
        g = torch.tensor(0.5, requires_grad=True)
        value = fn(x, y, g)
        value.backward()
        outs.append((value.detach(), g.grad))
    torch.testing.assert_close(outs[1], outs[0])
