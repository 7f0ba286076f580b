"""The CPU's forward with gradients (docs/design/softdtw.md §3): where a differentiable fused call
runs its pairs in packs (at least as many pairs as threads, at most 512 steps, float32/float64),
the forward computes each pair's unit gradient ∂V_b/∂(x_b, y_b) in float64 and keeps it instead
of the (B, N, M) table (its packs keep each cell's weights for their own backward, which reads no
R); the backward scales it by the upstream gradient. Values, gradients and
second derivatives must be those of the table path, bit for bit, at every thread count."""
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import softdtw_torch as st
from conftest import run_at_threads
from softdtw_torch import _reference as ref

ops = torch.ops.softdtw_torch


class _ForwardLog(TorchDispatchMode):
    """The SoftDTW forward ops that run below autograd, with what each keeps (its last argument)."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        if "softdtw_torch" in name and "forward" in name:
            self.names.append((name.split(".")[1], args[-1]))
        return func(*args, **(kwargs or {}))


WITH_GRAD = [("_soft_dtw_fused_forward", "gradients")]
TABLE = [("_soft_dtw_fused_forward", "table")]


def _table_path(x, y, g, **options):
    """Values and gradients through the forward that keeps the table and the backward op."""
    args = (options.get("gamma", 0.1), options.get("bandwidth"), options.get("itakura_max_slope"),
            options.get("x_lengths"), options.get("y_lengths"))
    values, table, none = ops._soft_dtw_fused_forward(x, y, *args, "table")
    grad_x, grad_y = ops._soft_dtw_fused_backward(g, x, y, table, none, *args, "table")
    return values, grad_x, grad_y


def _autograd_path(x, y, g, **options):
    a, b = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    log = _ForwardLog()
    with log:
        v = st.soft_dtw(a, b, **{"gamma": 0.1, **options})
    v.backward(g)
    return log.names, (v.detach(), a.grad, b.grad)


def _bits(t):
    return t.view(torch.int64 if t.dtype == torch.float64 else torch.int32)


def _assert_same_bits(got, want):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert torch.equal(_bits(g), _bits(w))  # NaN and the sign of zero included


OPTIONS = [
    {},
    {"bandwidth": 5},
    {"itakura_max_slope": 2.0},
    {"x_lengths": torch.tensor([40, 17, 33, 1, 40]), "y_lengths": torch.tensor([29, 31, 2, 30, 12])},
    {"gamma": 0.0},  # hard DTW: one-hot weights
    # a parallelogram and lengths that leave pairs 2-4's ends unreachable (value +inf, zero gradient)
    {"itakura_max_slope": 2.0, "x_lengths": torch.tensor([40, 17, 33, 1, 40]),
     "y_lengths": torch.tensor([29, 31, 2, 30, 12])},
]


@pytest.mark.parametrize("options", OPTIONS, ids=["full", "band", "itakura", "ragged", "hard", "unreachable"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("threads", [1, 2])
def test_gradients_have_the_bits_of_the_table_path(threads, dtype, options):
    # Upstream gradients of both signs, zero and large; the ragged rows past a length stay +0
    # (g·(+0) would be −0 for g < 0).
    x, y = ref.random_pairs(5, 40, 31, 3, dtype=dtype, seed=3)
    g = torch.tensor([1.0, -2.5, 0.0, 3e5, -1e-3], dtype=dtype)
    names, got = run_at_threads(threads, lambda: _autograd_path(x, y, g, **options))
    assert names == WITH_GRAD
    want = run_at_threads(threads, lambda: _table_path(x, y, g, **options))
    _assert_same_bits(got, want)


def test_overflowing_costs_give_the_bits_of_the_table_path():
    # float32 steps of 3e19 make squared costs +inf: those cells are unreachable (R = +inf) while
    # paths around them are not (x_10 = y_8 costs 0), and their flow must be +0 as in the table path.
    x, y = ref.random_pairs(4, 30, 26, 2, dtype=torch.float32, seed=12)
    x[:, 10] = 3e19
    y[:, 8] = 3e19
    g = torch.tensor([1.0, -1.0, 0.5, 2.0])
    names, got = run_at_threads(2, lambda: _autograd_path(x, y, g, gamma=1.0))
    assert names == WITH_GRAD
    assert torch.isfinite(got[0]).all() and torch.isfinite(got[1]).all()
    _assert_same_bits(got, run_at_threads(2, lambda: _table_path(x, y, g, gamma=1.0)))


def test_subnormal_alignments_give_the_bits_of_the_table_path():
    # In float32 the expected alignment E decays through subnormal values away from the path; the
    # packs' gradient sums widen E to float64 without a floating-point operation on them (widen_run).
    x, y = ref.random_pairs(4, 64, 60, 3, dtype=torch.float32, seed=21)
    E, _ = st.soft_dtw_alignment(x, y, gamma=1.0)
    assert ((E > 0) & (E < torch.finfo(torch.float32).tiny)).any()  # the data reaches subnormal E
    g = torch.tensor([1.0, -0.5, 2.0, 3.0])
    names, got = run_at_threads(2, lambda: _autograd_path(x, y, g, gamma=1.0))
    assert names == WITH_GRAD
    _assert_same_bits(got, run_at_threads(2, lambda: _table_path(x, y, g, gamma=1.0)))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("options", [{}, {"bandwidth": 12},
                                     {"x_lengths": torch.tensor([90, 41, 90, 77, 60, 90, 12, 85]),
                                      "y_lengths": torch.tensor([80, 80, 33, 64, 80, 7, 80, 71])}],
                         ids=["full", "band", "ragged"])
def test_zero_flow_away_from_the_paths_gives_the_bits_of_the_table_path(dtype, options):
    # Away from the pairs' paths E is exactly 0 in most cells: the packs' backward computes E only
    # next to its successors' nonzero rows and leaves the zero rows out of the gradient sums.
    x, y = ref.random_pairs(8, 90, 80, 4, dtype=dtype, seed=31)
    E, _ = st.soft_dtw_alignment(x, y, gamma=0.05)
    assert (E == 0).double().mean() > 0.5  # the data has wide zero regions
    g = torch.tensor([1.0, -0.5, 2.0, 3.0, 0.25, -1.0, 1.5, 0.0], dtype=dtype)
    names, got = run_at_threads(2, lambda: _autograd_path(x, y, g, gamma=0.05, **options))
    assert names == WITH_GRAD
    _assert_same_bits(got, run_at_threads(2, lambda: _table_path(x, y, g, gamma=0.05, **options)))


def test_non_finite_upstream_gradients_give_the_bits_of_the_table_path():
    x, y = ref.random_pairs(4, 20, 23, 2, seed=4)
    lengths = {"x_lengths": torch.tensor([20, 9, 20, 14])}
    g = torch.tensor([float("inf"), float("nan"), -float("inf"), 1.0], dtype=torch.float64)
    names, got = run_at_threads(2, lambda: _autograd_path(x, y, g, **lengths))
    assert names == WITH_GRAD
    _assert_same_bits(got, run_at_threads(2, lambda: _table_path(x, y, g, **lengths)))


def test_the_table_path_runs_where_packs_do_not():
    # Fewer pairs than threads, pairs longer than 512 steps, float16 input: the table is kept.
    cases = [(ref.random_pairs(2, 30, 20, 2), 4, torch.float64),
             (ref.random_pairs(2, 513, 20, 1), 2, torch.float64),
             (ref.random_pairs(4, 30, 20, 2), 2, torch.float16)]
    for (x, y), threads, dtype in cases:
        g = torch.ones(x.shape[0], dtype=dtype)
        names, _ = run_at_threads(threads, lambda: _autograd_path(x.to(dtype), y.to(dtype), g))
        assert names == TABLE


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_op_outside_packs_gives_the_same_unit_gradients(dtype):
    # Called where packs do not run (one pair at 2 threads: tiles), the op's unit gradients scale
    # to the table path's bits all the same.
    x, y = ref.random_pairs(1, 70, 90, 4, dtype=dtype, seed=8)
    g = torch.tensor([-0.75], dtype=dtype)
    args = (0.3, None, None, None, None)

    def with_grad():
        values, unit_x, unit_y = ops._soft_dtw_fused_forward(x, y, *args, "gradients")
        return (values, *ops._soft_dtw_fused_backward(g, x, y, unit_x, unit_y, *args, "gradients"))

    got = run_at_threads(2, with_grad)
    _assert_same_bits(got, run_at_threads(2, lambda: _table_path(x, y, g, gamma=0.3)))
    # and the unit gradients are the gradients of the values (the float64 reference, from the math)
    x, y = x[:, :12].double(), y[:, :15].double()
    values, unit_x, unit_y = ops._soft_dtw_fused_forward(x, y, *args, "gradients")
    xr, yr = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    ref.soft_dtw_autograd(ref.sqeuclidean(xr, yr)[0], 0.3).backward()
    torch.testing.assert_close(unit_x, xr.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(unit_y, yr.grad, rtol=1e-10, atol=1e-12)


def test_second_derivatives_through_the_forward_with_grad():
    # Double backward, forward over reverse, and gradgradcheck, on a shape that runs packed.
    x, y = ref.random_pairs(3, 9, 7, 2, seed=6)
    names, _ = run_at_threads(2, lambda: _autograd_path(x, y, torch.ones(3, dtype=torch.float64)))
    assert names == WITH_GRAD
    f = lambda a, b: st.soft_dtw(a, b, gamma=0.5)  # noqa: E731
    run_at_threads(2, lambda: torch.autograd.gradgradcheck(f, (x.clone().requires_grad_(True),
                                                               y.clone().requires_grad_(True))))
    # the Hessian-vector product equals the table path's (at 4 threads, 3 pairs keep the table)
    u = torch.randn_like(x)

    def hvp():
        a = x.clone().requires_grad_(True)
        (gx,) = torch.autograd.grad(f(a, y).sum(), a, create_graph=True)
        (h,) = torch.autograd.grad((gx * u).sum(), a)
        jvp = torch.func.jvp(lambda t: torch.func.grad(lambda s: f(s, y).sum())(t), (x,), (u,))[1]
        return gx.detach(), h, jvp

    packed, tabled = run_at_threads(2, hvp), run_at_threads(4, hvp)
    for got, want in zip(packed, tabled):
        assert torch.equal(got, want)
    torch.testing.assert_close(packed[1], packed[2], rtol=1e-10, atol=1e-12)


def test_backward_from_unit_gradients_refuses_bad_ones():
    x, y = ref.random_pairs(2, 6, 5, 3)
    g = torch.ones(2, dtype=torch.float64)
    _, unit_x, unit_y = ops._soft_dtw_fused_forward(x, y, 0.5, None, None, None, None, "gradients")
    with pytest.raises(ValueError, match=r"soft_dtw: expected first \(the unit gradients of x\) of shape "
                       r"\[2, 6, 3\], got \[2, 5, 3\]"):
        ops._soft_dtw_fused_backward(g, x, y, unit_x[:, :5], unit_y, 0.5, None, None, None, None, "gradients")
    with pytest.raises(TypeError,
                       match=r"soft_dtw: expected second \(the unit gradients of y\) of dtype float64, got Float"):
        ops._soft_dtw_fused_backward(g, x, y, unit_x, unit_y.float(), 0.5, None, None, None, None, "gradients")
    with pytest.raises(ValueError, match=r"soft_dtw: expected grad of shape \(2,\)"):
        ops._soft_dtw_fused_backward(g[:1], x, y, unit_x, unit_y, 0.5, None, None, None, None, "gradients")
