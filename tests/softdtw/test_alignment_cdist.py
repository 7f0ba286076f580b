"""Alignment matrices, named costs and all-pairs matrices, against finite differences and the
float64 references (tslearn's cdist_soft_dtw comparisons are in test_tslearn.py)."""
import math

import pytest
import torch

import softdtw_torch as st
from softdtw_torch import _reference as ref
from conftest import DEVICES


# --- alignment -------------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_alignment_matches_finite_differences(device):
    D = torch.rand(2, 6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).to(device)
    E, values = st.soft_dtw_alignment_from_cost(D, gamma=0.3, bandwidth=2)
    h = 1e-6
    for b in range(2):
        for i in range(6):
            for j in range(5):
                up, down = D.clone(), D.clone()
                up[b, i, j] += h
                down[b, i, j] -= h
                fd = (st.soft_dtw_from_cost(up, gamma=0.3, bandwidth=2)[b] - st.soft_dtw_from_cost(down, gamma=0.3, bandwidth=2)[b]) / (2 * h)
                assert E[b, i, j].item() == pytest.approx(fd.item(), abs=1e-7)
    torch.testing.assert_close(values, st.soft_dtw_from_cost(D, gamma=0.3, bandwidth=2))


def hard_dtw_path(D):
    """Cells of the optimal DTW path, by backtracking the hard DP (reference)."""
    n, m = len(D), len(D[0])
    INF = math.inf
    R = [[INF] * (m + 1) for _ in range(n + 1)]
    R[0][0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            R[i][j] = D[i - 1][j - 1] + min(R[i - 1][j - 1], R[i - 1][j], R[i][j - 1])
    path, i, j = [], n, m
    while (i, j) != (0, 0):
        path.append((i - 1, j - 1))
        steps = [(R[i - 1][j - 1], i - 1, j - 1), (R[i - 1][j], i - 1, j), (R[i][j - 1], i, j - 1)]
        _, i, j = min(steps)
    return path


def test_alignment_tends_to_the_hard_dtw_path():
    x, y = ref.random_pairs(1, 12, 9, 2, seed=4)
    D = ref.sqeuclidean(x, y)
    path = torch.zeros(12, 9, dtype=torch.float64)
    for i, j in hard_dtw_path(D[0].tolist()):
        path[i, j] = 1
    E, _ = st.soft_dtw_alignment(x[0], y[0], gamma=1e-3)
    assert E.shape == (12, 9)
    assert (E - path).abs().max().item() < 1e-3
    E_smooth, _ = st.soft_dtw_alignment(x[0], y[0], gamma=10.0)
    assert (E_smooth - path).abs().max().item() > 0.1  # large gamma spreads the mass


def test_alignment_is_differentiable_and_zero_outside_band_and_lengths():
    # E carries a gradient (its derivatives: tests/softdtw/test_second_order.py); zero outside each pair.
    x, y = ref.random_pairs(2, 8, 7, 2, seed=1)
    x.requires_grad_(True)
    xl, yl = torch.tensor([8, 5]), torch.tensor([7, 3])
    E, values = st.soft_dtw_alignment(x, y, gamma=0.5, bandwidth=1, x_lengths=xl, y_lengths=yl)
    assert E.requires_grad and values.requires_grad
    (grad,) = torch.autograd.grad(E.sum(), x)
    assert torch.count_nonzero(grad[1, 5:]) == 0
    assert torch.count_nonzero(E[1, 5:]) == 0 and torch.count_nonzero(E[1, :, 3:]) == 0
    mask = torch.tensor(ref.band_mask(8, 7, 1))
    assert torch.count_nonzero(E[0][~mask]) == 0
    torch.testing.assert_close(values, st.soft_dtw(x, y, gamma=0.5, bandwidth=1, x_lengths=xl, y_lengths=yl).detach(),
                               rtol=1e-12, atol=1e-12)


# --- named costs -----------------------------------------------------------------------------

def l1_cost(x, y):
    return (x.unsqueeze(-2) - y.unsqueeze(-3)).abs().sum(-1)


def cosine_cost(x, y):
    xn = x / x.norm(dim=-1, keepdim=True)
    yn = y / y.norm(dim=-1, keepdim=True)
    return 1 - xn @ yn.transpose(-1, -2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cost,reference_cost", [("l1", l1_cost), ("cosine", cosine_cost), ("sqeuclidean", ref.sqeuclidean)])
def test_named_costs_match_reference(device, cost, reference_cost):
    x, y = ref.random_pairs(2, 9, 7, 3, seed=2)
    got = st.soft_dtw(x.to(device), y.to(device), gamma=0.4, cost=cost).cpu()
    for b in range(2):
        expected = ref.soft_dtw(reference_cost(x[b], y[b]).tolist(), 0.4)
        assert got[b].item() == pytest.approx(expected, rel=1e-10)
    torch.testing.assert_close(st.pairwise_cost(x, y, cost), reference_cost(x, y), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cost", ["l1", "cosine"])
def test_named_cost_gradients(cost):
    x, y = ref.random_pairs(2, 5, 6, 3, seed=3)
    x.requires_grad_(True)
    y.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: st.soft_dtw(a, b, gamma=0.5, cost=cost, normalize=True), (x, y))


def test_cosine_zero_vector_is_finite_and_divergence_zero_at_equality():
    x, y = ref.random_pairs(1, 6, 6, 2)
    x[0, 2] = 0
    assert torch.isfinite(st.soft_dtw(x, y, cost="cosine")).all()
    assert st.soft_dtw(x, x, cost="cosine", normalize=True).abs().item() < 1e-12


def test_cost_errors():
    x, y = ref.random_pairs(1, 4, 4, 2)
    with pytest.raises(ValueError, match='soft_dtw: the fused mode computes the squared Euclidean cost only, got fused=True with cost="l1"'):
        st.soft_dtw(x, y, cost="l1", fused=True)
    with pytest.raises(ValueError, match='^soft_dtw: cost must be one of "sqeuclidean", "l1", "cosine", got "l2"'):
        st.soft_dtw(x, y, cost="l2")
    with pytest.raises(ValueError, match="^SoftDTW: cost must be one of"):
        st.SoftDTW(cost="dtw")(x, y)
    with pytest.raises(ValueError, match='^pairwise_cost: cost must be one of "sqeuclidean", "l1", "cosine", got "l2"'):
        st.pairwise_cost(x, y, "l2")


# --- all-pairs matrices ----------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("normalize", [False, True])
def test_cdist_symmetric_chunking_and_ragged(device, normalize):
    X, _ = ref.random_pairs(6, 10, 10, 2, seed=7)
    X = X.to(device)
    lengths = torch.tensor([10, 4, 7, 10, 1, 9])
    full = st.cdist_soft_dtw(X, X, gamma=0.5, normalize=normalize, x_lengths=lengths, y_lengths=lengths)
    sym = st.cdist_soft_dtw(X, gamma=0.5, normalize=normalize, x_lengths=lengths)
    torch.testing.assert_close(sym, full, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(sym, sym.T, rtol=0, atol=0)
    for chunk in (1, 5):
        assert torch.equal(st.cdist_soft_dtw(X, gamma=0.5, normalize=normalize, x_lengths=lengths, chunk_size=chunk), sym)
    for i in (1, 4):
        for j in (0, 2):
            alone = st.soft_dtw(X[i, : lengths[i]], X[j, : lengths[j]], gamma=0.5, normalize=normalize)
            assert sym[i, j].item() == pytest.approx(alone.item(), rel=1e-12, abs=1e-12)
    if normalize:
        assert torch.count_nonzero(sym.diagonal()) == 0


def test_cdist_gradients():
    X, _ = ref.random_pairs(3, 5, 5, 2, seed=8)
    Y, _ = ref.random_pairs(2, 4, 4, 2, seed=9)
    X.requires_grad_(True)
    Y.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: st.cdist_soft_dtw(a, b, gamma=0.5, normalize=True, chunk_size=2), (X, Y))
    assert torch.autograd.gradcheck(lambda a: st.cdist_soft_dtw(a, gamma=0.5), (X,))


def test_cdist_scripts_and_checks_input():
    scripted = torch.jit.script(st.cdist_soft_dtw)
    X, _ = ref.random_pairs(3, 5, 5, 2)
    torch.testing.assert_close(scripted(X), st.cdist_soft_dtw(X))
    with pytest.raises(ValueError, match="cdist_soft_dtw: expected X"):
        st.cdist_soft_dtw(X[0])
