"""Second derivatives and forward mode (docs/design/softdtw.md §3): Hessian-vector products by
double backward, by forward-over-reverse and by the HVP op, against the exact Hessian from a brute
force over all paths (tiny sizes), an independent float64 DP differentiated twice by autograd
(``_reference.soft_dtw_autograd``) and float64 finite differences of the gradient; JVPs against
finite differences of the value; gradgradcheck; the differentiable alignment; every mode (from a
cost, fused, unfused, bands, ragged lengths, tensor γ); third derivatives refused."""
import itertools

import pytest
import torch
from torch.autograd.forward_ad import dual_level, make_dual, unpack_dual

import softdtw_torch as st
from softdtw_torch import _reference as ref
from conftest import DEVICES

ops = torch.ops.softdtw_torch
F64 = torch.float64


def rand(*shape, seed=0, scale=1.0):
    return torch.randn(*shape, dtype=F64, generator=torch.Generator().manual_seed(seed)) * scale


def hvp_double_backward(f, inputs, directions):
    """∇²f·v by reverse over reverse: grad of ⟨∇f, v⟩."""
    inputs = [t.detach().clone().requires_grad_(True) for t in inputs]
    grads = torch.autograd.grad(f(*inputs), inputs, create_graph=True)
    inner = sum((g * v).sum() for g, v in zip(grads, directions))
    if not inner.requires_grad:  # a gradient constant in the inputs (a 1 × 1 DP): zero Hessian
        return [torch.zeros_like(t) for t in inputs]
    second = torch.autograd.grad(inner, inputs, allow_unused=True)
    return [torch.zeros_like(t) if h is None else h for t, h in zip(inputs, second)]


def gradient_finite_difference(f, inputs, directions, eps=1e-6):
    """(∇f(x + εv) − ∇f(x − εv)) / 2ε in float64."""
    def grad_at(sign):
        shifted = [(t + sign * eps * v).detach().requires_grad_(True) for t, v in zip(inputs, directions)]
        return torch.autograd.grad(f(*shifted), shifted)
    plus, minus = grad_at(1.0), grad_at(-1.0)
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


# ---- the exact Hessian on tiny sizes -----------------------------------------------------------

@pytest.mark.parametrize("n,m,radius", [(1, 1, None), (1, 4, None), (4, 1, None), (3, 4, None), (4, 4, 1), (5, 3, 0)])
@pytest.mark.parametrize("gamma", [0.05, 1.0])
def test_hessian_equals_brute_force_over_all_paths(n, m, radius, gamma):
    D = torch.rand(1, n, m, dtype=F64, generator=torch.Generator().manual_seed(n * 10 + m)) * 3
    H = torch.func.hessian(lambda d: st.soft_dtw_from_cost(d, gamma, radius).sum())(D)[0, :, :, 0]
    expected = torch.tensor(ref.soft_dtw_hessian_brute_force(D[0].tolist(), gamma, radius), dtype=F64)
    torch.testing.assert_close(H, expected, rtol=1e-9, atol=1e-11)


# ---- Hessian-vector products on a grid ---------------------------------------------------------

GRID = list(itertools.product([(1, 1), (1, 6), (6, 1), (7, 5), (5, 9)], [None, 1], [1e-3, 0.1, 1.0, 10.0]))


@pytest.mark.parametrize("shape,radius,gamma", GRID, ids=lambda v: str(v))
def test_from_cost_hvp_matches_independent_reference(shape, radius, gamma):
    n, m = shape
    D = rand(2, n, m, seed=n + 7 * m).abs() * 2
    V = rand(2, n, m, seed=99)
    (got,) = hvp_double_backward(lambda d: (st.soft_dtw_from_cost(d, gamma, radius) * torch.tensor([1.0, -0.5], dtype=F64)).sum(), [D], [V])
    expected = []
    for b, weight in enumerate((1.0, -0.5)):
        (h,) = hvp_double_backward(lambda d: weight * ref.soft_dtw_autograd(d, gamma, radius), [D[b]], [V[b]])
        expected.append(h)
    # At γ = 1e-3 the Hessian entries scale with 1/γ; the tolerance is relative to them.
    scale = max(1.0, torch.stack(expected).abs().max().item())
    torch.testing.assert_close(got / scale, torch.stack(expected) / scale, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("normalize", [False, True], ids=["value", "divergence"])
@pytest.mark.parametrize("radius", [None, 2])
def test_sequence_hvp_matches_finite_differences(fused, normalize, radius):
    x, y = rand(2, 7, 3, seed=1), rand(2, 5, 3, seed=2)
    u, v = rand(2, 7, 3, seed=3), rand(2, 5, 3, seed=4)

    def f(a, b):
        return st.soft_dtw(a, b, gamma=0.3, bandwidth=radius, normalize=normalize, fused=fused).sum()

    got = hvp_double_backward(f, [x, y], [u, v])
    expected = gradient_finite_difference(f, [x, y], [u, v])
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_sequence_hvp_matches_independent_reference_with_lengths(fused):
    x, y = rand(3, 8, 2, seed=5), rand(3, 6, 2, seed=6)
    u, v = rand(3, 8, 2, seed=7), rand(3, 6, 2, seed=8)
    xl, yl = torch.tensor([8, 3, 1]), torch.tensor([2, 6, 5])
    got = hvp_double_backward(lambda a, b: st.soft_dtw(a, b, 0.5, x_lengths=xl, y_lengths=yl, fused=fused).sum(),
                              [x, y], [u, v])
    for b in range(3):
        n, m = xl[b].item(), yl[b].item()
        want = hvp_double_backward(lambda a, c: ref.soft_dtw_autograd(ref.sqeuclidean(a, c), 0.5),
                                   [x[b, :n], y[b, :m]], [u[b, :n], v[b, :m]])
        torch.testing.assert_close(got[0][b, :n], want[0], rtol=1e-9, atol=1e-10)
        torch.testing.assert_close(got[1][b, :m], want[1], rtol=1e-9, atol=1e-10)
        # padding gets exactly zero second derivative
        assert not got[0][b, n:].any() and not got[1][b, m:].any()


def test_checkpointed_mode_has_the_same_second_derivatives():
    x, y = rand(2, 70, 2, seed=9), rand(2, 66, 2, seed=10)
    u, v = rand(2, 70, 2, seed=11), rand(2, 66, 2, seed=12)
    kept = hvp_double_backward(lambda a, b: st.soft_dtw(a, b, 0.5).sum(), [x, y], [u, v])
    checkpointed = hvp_double_backward(lambda a, b: st.soft_dtw(a, b, 0.5, checkpoint=True).sum(), [x, y], [u, v])
    for a, b in zip(kept, checkpointed):
        assert torch.equal(a, b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_gradgradcheck(device, fused):
    x = rand(2, 5, 2, seed=13).to(device).requires_grad_(True)
    y = rand(2, 4, 2, seed=14).to(device).requires_grad_(True)
    xl = torch.tensor([5, 2])
    assert torch.autograd.gradgradcheck(
        lambda a, b: st.soft_dtw(a, b, gamma=0.4, bandwidth=1, fused=fused, x_lengths=xl), (x, y))
    assert torch.autograd.gradgradcheck(lambda a, b: st.soft_dtw(a, b, gamma=0.4, normalize=True, fused=fused), (x, y))


@pytest.mark.parametrize("device", DEVICES)
def test_gradgradcheck_from_cost_and_tensor_gamma(device):
    D = (rand(2, 5, 4, seed=15).abs() + 0.1).to(device).requires_grad_(True)
    gamma = torch.tensor([0.3, 2.0], dtype=F64, device=device, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda d, g: st.soft_dtw_from_cost(d, g, bandwidth=2), (D, gamma))
    x = rand(2, 4, 3, seed=16).to(device).requires_grad_(True)
    y = rand(2, 5, 3, seed=17).to(device)
    assert torch.autograd.gradgradcheck(lambda a, g: st.soft_dtw(a, y, g[:1], normalize=True), (x, gamma))


# ---- forward mode ------------------------------------------------------------------------------

@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("gamma", [1e-3, 1.0, 10.0])
def test_forward_mode_tangent_is_the_directional_derivative(fused, gamma):
    x, y = rand(2, 6, 3, seed=18), rand(2, 9, 3, seed=19)
    u, v = rand(2, 6, 3, seed=20), rand(2, 9, 3, seed=21)
    with dual_level():
        values = st.soft_dtw(make_dual(x, u), make_dual(y, v), gamma, bandwidth=3, fused=fused)
        primal, tangent = unpack_dual(values)
    assert tangent is not None
    eps = 1e-6
    fd = (st.soft_dtw(x + eps * u, y + eps * v, gamma, bandwidth=3, fused=fused)
          - st.soft_dtw(x - eps * u, y - eps * v, gamma, bandwidth=3, fused=fused)) / (2 * eps)
    torch.testing.assert_close(tangent, fd, rtol=1e-6, atol=1e-6)
    assert torch.equal(primal, st.soft_dtw(x, y, gamma, bandwidth=3, fused=fused))


def test_forward_mode_from_cost_is_inner_product_with_the_alignment():
    D = rand(3, 7, 5, seed=22).abs()
    T = rand(3, 7, 5, seed=23)
    xl = torch.tensor([7, 4, 1])
    _, tangent = torch.func.jvp(lambda d: st.soft_dtw_from_cost(d, 0.2, x_lengths=xl), (D,), (T,))
    E, _ = st.soft_dtw_alignment_from_cost(D, 0.2, x_lengths=xl)
    torch.testing.assert_close(tangent, (E * T).sum((1, 2)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_jvp_equals_vjp_transposed(fused):
    x, y = rand(2, 6, 2, seed=24), rand(2, 5, 2, seed=25)
    u = rand(2, 6, 2, seed=26)
    w = rand(2, seed=27)
    f = lambda a: st.soft_dtw(a, y, 0.7, fused=fused)  # noqa: E731
    _, jv = torch.func.jvp(f, (x,), (u,))
    _, vjp = torch.func.vjp(f, x)
    (jtw,) = vjp(w)
    torch.testing.assert_close((jv * w).sum(), (jtw * u).sum(), rtol=1e-12, atol=1e-12)


# ---- torch.func --------------------------------------------------------------------------------

def _value(d):
    return st.soft_dtw_from_cost(d, 0.5, bandwidth=2).sum()


def test_func_grad_vjp_and_hessian_agree():
    D = rand(2, 5, 4, seed=28).abs()
    grad = torch.func.grad(_value)(D)
    E, _ = st.soft_dtw_alignment_from_cost(D, 0.5, bandwidth=2)
    assert torch.equal(grad, E)
    _, vjp = torch.func.vjp(_value, D)
    assert torch.equal(vjp(torch.tensor(1.0, dtype=F64))[0], grad)
    hessian = torch.func.hessian(_value)(D)  # jacfwd(jacrev)
    rev_rev = torch.func.jacrev(torch.func.jacrev(_value))(D)
    fwd_fwd = torch.func.jacfwd(torch.func.jacfwd(_value))(D)
    rev_fwd = torch.func.jacrev(torch.func.jacfwd(_value))(D)
    for other in (rev_rev, fwd_fwd, rev_fwd):
        torch.testing.assert_close(hessian, other, rtol=1e-10, atol=1e-12)
    # the Hessian is symmetric
    flat = hessian.reshape(D.numel(), D.numel())
    torch.testing.assert_close(flat, flat.T, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_vmap_equals_a_loop_bit_for_bit(fused):
    x, y = rand(4, 3, 6, 2, seed=29), rand(4, 3, 5, 2, seed=30)
    xl = torch.tensor([6, 2, 4])

    def per_sample(a, b):
        values = st.soft_dtw(a, b, 0.5, fused=fused, x_lengths=xl)
        grad = torch.func.grad(lambda p: st.soft_dtw(p, b, 0.5, fused=fused, x_lengths=xl).sum())(a)
        return values, grad

    batched = torch.func.vmap(per_sample)(x, y)
    looped = [torch.stack(t) for t in zip(*(per_sample(x[i], y[i]) for i in range(4)))]
    for got, want in zip(batched, looped):
        assert torch.equal(got, want)


def test_vmap_has_a_batching_rule_no_fallback():
    import warnings

    x, y = rand(3, 2, 5, 2, seed=31), rand(3, 2, 4, 2, seed=32)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*batching rule.*")
        torch.func.vmap(lambda a, b: st.soft_dtw(a, b, normalize=True))(x, y)
        torch.func.vmap(lambda d: st.soft_dtw_alignment_from_cost(d)[0])(st.pairwise_cost(x[0], y[0]).expand(3, -1, -1, -1))
        torch.func.vmap(torch.func.grad(lambda a: st.soft_dtw(a, y[0]).sum()))(x)


def test_functional_call_with_a_learnable_gamma():
    module = st.SoftDTW(gamma=torch.nn.Parameter(torch.tensor(0.5, dtype=F64)), reduction="sum")
    x, y = rand(2, 5, 2, seed=33), rand(2, 4, 2, seed=34)
    params = {"gamma": torch.tensor(0.25, dtype=F64)}
    value = torch.func.functional_call(module, params, (x, y))
    assert torch.equal(value, st.soft_dtw(x, y, 0.25).sum())
    # d²/dγ² through torch.func, against finite differences of dγ
    dgamma = torch.func.grad(lambda p: torch.func.functional_call(module, p, (x, y)))
    second = torch.func.jacfwd(lambda g: dgamma({"gamma": g})["gamma"])(params["gamma"])
    eps = 1e-6
    fd = (dgamma({"gamma": params["gamma"] + eps})["gamma"] - dgamma({"gamma": params["gamma"] - eps})["gamma"]) / (2 * eps)
    torch.testing.assert_close(second, fd, rtol=1e-6, atol=1e-7)


# ---- the differentiable alignment --------------------------------------------------------------

@pytest.mark.parametrize("radius", [None, 1])
def test_alignment_is_differentiable(radius):
    D = (rand(2, 6, 5, seed=35).abs() + 0.1).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda d: st.soft_dtw_alignment_from_cost(d, 0.3, radius)[0], (D,))
    x = rand(1, 6, 2, seed=36).requires_grad_(True)
    y = rand(1, 5, 2, seed=37)
    assert torch.autograd.gradcheck(lambda a: st.soft_dtw_alignment(a, y, 0.3, radius), (x,))


def test_alignment_gradient_is_the_hessian_applied_to_the_cotangent():
    D = rand(1, 4, 4, seed=38).abs()
    W = rand(1, 4, 4, seed=39)
    leaf = D.clone().requires_grad_(True)
    E, _ = st.soft_dtw_alignment_from_cost(leaf, 0.5)
    (got,) = torch.autograd.grad((E * W).sum(), leaf)
    H = torch.tensor(ref.soft_dtw_hessian_brute_force(D[0].tolist(), 0.5), dtype=F64)
    torch.testing.assert_close(got[0], torch.einsum("ijkl,ij->kl", H, W[0]), rtol=1e-10, atol=1e-12)


# ---- third derivatives refused -----------------------------------------------------------------

@pytest.mark.parametrize("mode", ["from_cost", "fused", "unfused", "alignment"])
def test_third_derivative_raises_clearly(mode):
    x = rand(1, 5, 2, seed=40).requires_grad_(True)
    y = rand(1, 4, 2, seed=41)
    if mode == "alignment":  # E is a first derivative: its second derivative is a third one
        (h,) = torch.autograd.grad(st.soft_dtw_alignment(x, y, 0.5)[0].pow(2).sum(), x, create_graph=True)
    else:
        if mode == "from_cost":
            value = st.soft_dtw_from_cost(st.pairwise_cost(x, y), 0.5).sum()
        else:
            value = st.soft_dtw(x, y, 0.5, fused=mode == "fused").sum()
        (g,) = torch.autograd.grad(value, x, create_graph=True)
        (h,) = torch.autograd.grad(g.pow(2).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="a third derivative .* is not supported"):
        torch.autograd.grad(h.sum(), x)
    # forward mode on a second derivative: refused at once
    with pytest.raises(RuntimeError, match="a third derivative .* is not supported"):
        torch.func.jvp(lambda a: torch.func.jacrev(torch.func.jacrev(
            lambda b: st.soft_dtw(b, y, 0.5).sum()))(a), (x.detach(),), (torch.ones_like(x),))


# ---- float32 -----------------------------------------------------------------------------------

@pytest.mark.parametrize("gamma", [1.0, 0.1, 0.01])
def test_float32_hessian_vector_product_accuracy(gamma):
    # float32 HVP against float64 on the same float32 inputs, unit-scale data (N = M = 64, d = 3):
    # within 1e-5 of the largest entry (measured <= 2.6e-6; design doc §3, "Numerics").
    x, y = ref.random_pairs(2, 64, 64, 3, dtype=torch.float32, seed=3)
    u, v = ref.random_pairs(2, 64, 64, 3, dtype=torch.float32, seed=4)
    f = lambda a, b: st.soft_dtw(a, b, gamma).sum()  # noqa: E731
    got = hvp_double_backward(f, [x, y], [u, v])
    want = hvp_double_backward(f, [x.double(), y.double()], [u.double(), v.double()])
    for g, w in zip(got, want):
        assert ((g.double() - w).abs().max() / w.abs().max()).item() < 1e-5


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_second_order_ops_compute_each_pair_as_if_alone(dtype):
    # A batch of short pairs runs in packs (lane = pair), a pair alone in tiles: the same operations
    # per cell and per sum, so the same bits; ragged lengths included.
    g = torch.Generator().manual_seed(42)
    x, y = torch.randn(6, 37, 3, generator=g, dtype=dtype), torch.randn(6, 29, 3, generator=g, dtype=dtype)
    u, v = torch.randn(6, 37, 3, generator=g, dtype=dtype), torch.randn(6, 29, 3, generator=g, dtype=dtype)
    grad, grad_tangent = torch.randn(6, generator=g, dtype=dtype), torch.randn(6, generator=g, dtype=dtype)
    xl, yl = torch.tensor([37, 37, 20, 20, 5, 37]), torch.tensor([29, 29, 29, 10, 10, 1])
    for lengths in ((None, None), (xl, yl)):
        batch_hvp = ops._soft_dtw_fused_hvp(grad, grad_tangent, x, y, u, None, 0.7, None, None, *lengths, True)
        batch_jvp = ops._soft_dtw_fused_jvp(x, y, u, v, 0.7, None, None, *lengths)
        for b in range(6):
            n = x.shape[1] if lengths[0] is None else xl[b].item()
            m = y.shape[1] if lengths[1] is None else yl[b].item()
            one = slice(b, b + 1)
            alone = ops._soft_dtw_fused_hvp(grad[one], grad_tangent[one], x[one, :n], y[one, :m], u[one, :n], None,
                                            0.7, None, None, None, None, True)
            assert torch.equal(batch_hvp[0][b], alone[0][0])
            for i, length in ((1, n), (2, m), (3, n), (4, m)):
                assert torch.equal(batch_hvp[i][b, :length], alone[i][0])
            jvp = ops._soft_dtw_fused_jvp(x[one, :n], y[one, :m], u[one, :n], v[one, :m], 0.7, None, None, None, None)
            assert torch.equal(batch_jvp[0][b], jvp[0][0]) and torch.equal(batch_jvp[1][b], jvp[1][0])
