"""Hard DTW (gamma = 0) through the SoftDTW operators, and softdtw_torch.metrics (dtw, dtw_path,
cdist_dtw, gamma_soft_dtw), against independent references: a float64 numpy DP written from the
definition with tslearn's backtracking, a brute force over every warping path, finite differences,
and tslearn itself on random and real (GunPoint) data."""
import itertools

import numpy as np
import pytest
import torch

import softdtw_torch as st
from softdtw_torch.datasets import load_gunpoint

tslearn_metrics = pytest.importorskip("tslearn.metrics")


def reference_dtw(D, radius=None):
    """Squared DTW of a cost matrix D (n, m) and its path: the DP R = D + min(predecessors) in float64,
    then tslearn's backtracking from (n−1, m−1), ties to the diagonal, then up, then left."""
    n, m = D.shape
    allowed = np.ones((n, m), dtype=bool)
    if radius is not None:  # tslearn's sakoe_chiba_mask
        for i in range(n):
            for j in range(m):
                if n <= m:
                    allowed[i, j] = i - radius <= j <= i + (m - n) + radius
                else:
                    allowed[i, j] = j - radius <= i <= j + (n - m) + radius
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(n):
        for j in range(m):
            if allowed[i, j]:
                R[i + 1, j + 1] = D[i, j] + min(R[i, j], R[i, j + 1], R[i + 1, j])
    path = [(n - 1, m - 1)]
    while path[-1] != (0, 0):
        i, j = path[-1]
        if i == 0:
            path.append((0, j - 1))
        elif j == 0:
            path.append((i - 1, 0))
        else:
            step = int(np.argmin([R[i, j], R[i, j + 1], R[i + 1, j]]))  # diagonal, up, left
            path.append([(i - 1, j - 1), (i - 1, j), (i, j - 1)][step])
    return R[n, m], path[::-1]


def all_paths(n, m):
    """Every warping path from (0, 0) to (n − 1, m − 1)."""
    def extend(path):
        i, j = path[-1]
        if (i, j) == (n - 1, m - 1):
            yield path
            return
        for di, dj in ((1, 1), (1, 0), (0, 1)):
            if i + di < n and j + dj < m:
                yield from extend(path + [(i + di, j + dj)])
    return list(extend([(0, 0)]))


def path_matrix(path, n, m):
    A = np.zeros((n, m))
    for i, j in path:
        A[i, j] = 1.0
    return A


@pytest.mark.parametrize("n,m", [(1, 1), (1, 4), (4, 1), (3, 3), (4, 5), (5, 3)])
@pytest.mark.parametrize("integer_costs", [False, True], ids=["random", "ties"])
def test_brute_force_value_and_tie_rule(n, m, integer_costs):
    # Integer costs in {0, 1, 2} make ties everywhere: the path must be the one of tslearn's rule.
    rng = np.random.default_rng(n * 10 + m + integer_costs)
    D = rng.integers(0, 3, size=(n, m)).astype(np.float64) if integer_costs else rng.random((n, m))
    best = min(sum(D[i, j] for i, j in p) for p in all_paths(n, m))
    want_value, want_path = reference_dtw(D)
    assert want_value == pytest.approx(best, abs=1e-12)
    for dtype in (torch.float64, torch.float32):
        Dt = torch.tensor(D, dtype=dtype)
        A, values = st.soft_dtw_alignment_from_cost(Dt, gamma=0.0)
        assert values.item() == pytest.approx(best, rel=1e-6)
        assert torch.equal(A, torch.tensor(path_matrix(want_path, n, m), dtype=dtype))
        (grad,) = torch.autograd.grad(st.soft_dtw_from_cost(Dt.requires_grad_(), gamma=0.0), Dt)
        assert torch.equal(grad, A)  # ∂DTW/∂D is the path


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("bandwidth", [None, 0, 5])
def test_values_paths_and_gradients_match_references(dtype, fused, bandwidth):
    # Several 64 × 64 tiles, N != M both ways, d > 1.
    rng = np.random.default_rng(3)
    for n, m, d in [(150, 130, 3), (70, 200, 2), (1, 9, 1)]:
        a, b = rng.normal(size=(n, d)), rng.normal(size=(m, d))
        D = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
        want_value, want_path = reference_dtw(D, bandwidth)
        x = torch.tensor(a, dtype=dtype, requires_grad=True)
        y = torch.tensor(b, dtype=dtype, requires_grad=True)
        value = st.soft_dtw(x, y, gamma=0.0, bandwidth=bandwidth, fused=fused)
        rel = 1e-12 if dtype == torch.float64 else 1e-6
        assert value.item() == pytest.approx(want_value, rel=rel)
        gx, gy = torch.autograd.grad(value, (x, y))
        A = path_matrix(want_path, n, m)
        # The gradient of Σ_path ||x_i − y_j||² with the path held fixed.
        want_gx = 2 * (A.sum(1)[:, None] * a - A @ b)
        want_gy = 2 * (A.sum(0)[:, None] * b - A.T @ a)
        atol = 1e-10 if dtype == torch.float64 else 1e-4
        np.testing.assert_allclose(gx.double().numpy(), want_gx, atol=atol)
        np.testing.assert_allclose(gy.double().numpy(), want_gy, atol=atol)
        E, _ = st.soft_dtw_alignment(x.detach(), y.detach(), gamma=0.0, bandwidth=bandwidth)
        assert torch.equal(E, torch.tensor(A, dtype=dtype))


@pytest.mark.slow  # tslearn compiles its DTW functions with numba on their first call: ~20 s of its time
def test_matches_tslearn_on_gunpoint():
    X, _ = load_gunpoint(split="train")
    X = np.asarray(X, dtype=np.float64).transpose(0, 2, 1)  # aeon's (50, 1, 150) as tslearn's (50, 150, 1)
    for i, j in [(0, 1), (2, 30), (10, 44)]:
        for radius in (None, 3):
            kwargs = {} if radius is None else {"sakoe_chiba_radius": radius}
            want_path, want = tslearn_metrics.dtw_path(X[i], X[j], **kwargs)
            path, got = st.dtw_path(X[i], X[j], bandwidth=radius)
            assert path == want_path
            assert got == pytest.approx(want, rel=1e-12)
            assert st.dtw(X[i], X[j], bandwidth=radius) == pytest.approx(tslearn_metrics.dtw(X[i], X[j], **kwargs),
                                                                         rel=1e-12)
    got = st.cdist_dtw(X[:12], X[12:20])
    np.testing.assert_allclose(got, tslearn_metrics.cdist_dtw(X[:12], X[12:20]), rtol=1e-12)
    got = st.cdist_dtw(X[:10], bandwidth=4)
    np.testing.assert_allclose(got, tslearn_metrics.cdist_dtw(X[:10], sakoe_chiba_radius=4), rtol=1e-12, atol=1e-12)


def test_ragged_batches_and_numpy_datasets_match_tslearn():
    rng = np.random.default_rng(5)
    series = [rng.normal(size=(length, 2)) for length in (12, 30, 7, 21)]
    others = [rng.normal(size=(length, 2)) for length in (18, 5, 25)]
    np.testing.assert_allclose(st.cdist_dtw(series, others), tslearn_metrics.cdist_dtw(series, others), rtol=1e-12)
    # A ragged tensor batch: each pair as if alone.
    x = torch.zeros(4, 30, 2, dtype=torch.float64)
    lengths = torch.tensor([12, 30, 7, 21])
    for k, s in enumerate(series):
        x[k, : len(s)] = torch.from_numpy(s)
    y = x.flip(0)
    paths, values = st.dtw_path(x, y, x_lengths=lengths, y_lengths=lengths.flip(0))
    for k in range(4):
        want_path, want = tslearn_metrics.dtw_path(series[k], series[3 - k])
        assert paths[k] == want_path and values[k].item() == pytest.approx(want, rel=1e-12)


def test_finite_differences_and_subgradient_at_zero():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 9, 2, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.randn(2, 7, 2, generator=g, dtype=torch.float64, requires_grad=True)
    # Random data: the optimal path is unique, so DTW is differentiable there.
    assert torch.autograd.gradcheck(lambda a, b: st.dtw(a, b), (x, y))
    assert torch.autograd.gradcheck(lambda a, b: st.soft_dtw(a, b, gamma=0.0, fused=False), (x, y))
    # dtw(x, x) = 0: the square root's gradient there is 0, never NaN.
    value = st.dtw(x, x.detach())
    (grad,) = torch.autograd.grad(value.sum(), x)
    assert torch.equal(value, torch.zeros(2, dtype=torch.float64)) and torch.equal(grad, torch.zeros_like(x))


def test_forward_mode_and_second_order_follow_the_path():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(10, 3, generator=g, dtype=torch.float64)
    y = torch.randn(8, 3, generator=g, dtype=torch.float64)
    u = torch.randn(10, 3, generator=g, dtype=torch.float64)
    f = lambda a: st.soft_dtw(a, y, gamma=0.0)  # noqa: E731
    A, _ = st.soft_dtw_alignment(x, y, gamma=0.0)
    value, tangent = torch.func.jvp(f, (x,), (u,))
    grad = torch.func.grad(f)(x)
    assert tangent.item() == pytest.approx((grad * u).sum().item(), rel=1e-12)
    # With the path fixed, the Hessian of Σ A_ij ||x_i − y_j||² in x is 2·diag(Σ_j A_ij) per feature.
    x_req = x.clone().requires_grad_()
    (g,) = torch.autograd.grad(f(x_req), x_req, create_graph=True)
    (hvp,) = torch.autograd.grad((g * u).sum(), x_req)
    torch.testing.assert_close(hvp, 2 * A.sum(1, keepdim=True) * u, rtol=1e-12, atol=1e-12)
    # The alignment's own derivative is 0 (the path is piecewise constant).
    x_req = x.clone().requires_grad_()
    E, _ = st.soft_dtw_alignment(x_req, y, gamma=0.0)
    (dE,) = torch.autograd.grad((E * torch.rand(E.shape, dtype=E.dtype)).sum(), x_req)
    assert torch.equal(dE, torch.zeros_like(x))


def test_float32_keeps_the_float64_path_and_value():
    # R is carried as hi + lo in float32 (docs/design/softdtw.md §9): on the same float32 costs the
    # value is float64's to float32 rounding and the path is float64's. (The unfused mode's costs,
    # ||x||² + ||y||² − 2⟨x, y⟩ in float32, differ from (x − y)² by up to 1e-6 absolutely: an input
    # question, not the DP's; the fused mode computes (x − y)² itself.)
    X, _ = load_gunpoint(split="test")
    X = torch.from_numpy(np.asarray(X, dtype=np.float64)).transpose(1, 2).float()
    a, b = X[:8], X[8:16]
    D = st.pairwise_cost(a, b)
    A64, v64 = st.soft_dtw_alignment_from_cost(D.double(), gamma=0.0)
    A32, v32 = st.soft_dtw_alignment_from_cost(D, gamma=0.0)
    torch.testing.assert_close(v32.double(), v64, rtol=2 ** -24, atol=0)
    assert torch.equal(A32.double(), A64)
    fused64 = st.soft_dtw(a.double(), b.double(), gamma=0.0, fused=True)
    torch.testing.assert_close(st.soft_dtw(a, b, gamma=0.0, fused=True).double(), fused64, rtol=1e-6, atol=0)


def test_divergence_sharp_and_limit_of_small_gamma():
    g = torch.Generator().manual_seed(6)
    x = torch.randn(3, 20, 2, generator=g, dtype=torch.float64)
    y = torch.randn(3, 25, 2, generator=g, dtype=torch.float64)
    hard = st.soft_dtw(x, y, gamma=0.0)
    # DTW(x, x) = 0, so the divergence is DTW itself; ⟨E, D⟩ along the path is the value.
    assert torch.equal(st.soft_dtw(x, y, gamma=0.0, normalize=True), hard)
    torch.testing.assert_close(st.soft_dtw_sharp(x, y, gamma=0.0), hard, rtol=1e-12, atol=0)
    # softmin_γ >= min − γ·log 3 per cell: soft-DTW tends to DTW from below as γ → 0.
    for gamma in (1e-2, 1e-4):
        soft = st.soft_dtw(x, y, gamma=gamma)
        assert bool((soft <= hard).all()) and bool((hard - soft <= (20 + 25) * gamma * np.log(3)).all())


def test_loss_module_and_deterministic_threads():
    g = torch.Generator().manual_seed(8)
    x = torch.randn(6, 140, 2, generator=g)
    y = torch.randn(6, 120, 2, generator=g)
    loss = st.SoftDTW(gamma=0.0)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = loss(x, y), torch.func.grad(lambda a: loss(a, y))(x)
        torch.set_num_threads(2)
        two = loss(x, y), torch.func.grad(lambda a: loss(a, y))(x)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one[0], two[0]) and torch.equal(one[1], two[1])


def test_errors():
    x = torch.randn(2, 5, 1)
    with pytest.raises(ValueError, match=r"soft_dtw: a tensor gamma must be positive and finite \(hard DTW: the float 0.0\)"):
        st.soft_dtw(x, x, gamma=torch.tensor(0.0))
    with pytest.raises(ValueError, match="SoftDTW: a tensor gamma must be positive"):
        st.SoftDTW(gamma=torch.tensor(0.0))
    with pytest.raises(ValueError, match="dtw_path: lengths apply to batches of series"):
        st.dtw_path(x[0], x[1], x_lengths=torch.tensor([3]))
    with pytest.raises(TypeError, match="dtw: expected bandwidth to be an int or None, got float"):
        st.dtw(x, x, bandwidth=2.0)
    with pytest.raises(ValueError, match="cdist_dtw: expected X"):
        st.cdist_dtw(x[0])
    with pytest.raises(ValueError, match="gamma_soft_dtw: n_samples must be >= 2"):
        st.gamma_soft_dtw(np.zeros((3, 4)), n_samples=1)
    # Barycenters and k-means keep gamma > 0.
    with pytest.raises(ValueError, match="gamma"):
        st.softdtw_barycenter(x, gamma=0.0)


@pytest.mark.parametrize("n_samples,seed", [(100, 0), (7, 3), (1000, 11)])
def test_gamma_soft_dtw_matches_tslearn(n_samples, seed):
    X, _ = load_gunpoint(split="train")
    X = np.asarray(X, dtype=np.float64).transpose(0, 2, 1)[:20]
    want = tslearn_metrics.gamma_soft_dtw(X, n_samples=n_samples, random_state=seed)
    assert st.gamma_soft_dtw(X, n_samples=n_samples, random_state=seed) == pytest.approx(want, rel=1e-12)
    ragged = [X[0, :100], X[1], X[2, :120]]
    want = tslearn_metrics.gamma_soft_dtw(tslearn_utils().to_time_series_dataset(ragged), n_samples=50, random_state=1)
    assert st.gamma_soft_dtw(ragged, n_samples=50, random_state=1) == pytest.approx(want, rel=1e-12)


def tslearn_utils():
    import tslearn.utils

    return tslearn.utils


def test_scripted_dtw_matches_eager():
    scripted = torch.jit.script(st.dtw)
    x = torch.randn(2, 11, 2, dtype=torch.float64)
    y = torch.randn(2, 13, 2, dtype=torch.float64)
    assert torch.equal(scripted(x, y, 2), st.dtw(x, y, 2))
    assert torch.equal(torch.jit.script(st.cdist_dtw)(x, y), st.cdist_dtw(x, y))


def test_brute_force_agrees_on_every_path_count():
    # The enumeration itself: the number of warping paths of an n × m grid is the Delannoy number.
    delannoy = {(3, 3): 13, (4, 5): 129, (1, 4): 1}
    for (n, m), count in delannoy.items():
        assert len(all_paths(n, m)) == count
    assert list(itertools.islice(all_paths(2, 2), 3)) == [[(0, 0), (1, 1)], [(0, 0), (1, 0), (1, 1)],
                                                          [(0, 0), (0, 1), (1, 1)]]


def test_path_op_under_vmap_and_fake_tensors():
    # The path op batches by flattening (softdtw_torch/_vmap.py): the same bits as a loop; its fake
    # kernel gives the shapes and dtypes of the real one.
    g = torch.Generator().manual_seed(9)
    x = torch.randn(3, 2, 12, 2, generator=g, dtype=torch.float64)
    y = torch.randn(3, 2, 9, 2, generator=g, dtype=torch.float64)
    op = torch.ops.softdtw_torch._dtw_path
    batched = torch.vmap(lambda a, b: op(a, b, None, None, None, None))(x, y)
    for v in range(3):
        for got, want in zip(batched, op(x[v], y[v], None, None, None, None)):
            assert torch.equal(got[v], want)
    from torch._subclasses.fake_tensor import FakeTensorMode

    a, b = x[0].clone(), y[0].clone()
    mode = FakeTensorMode()
    fake_a, fake_b = mode.from_tensor(a), mode.from_tensor(b)
    with mode:
        fake = op(fake_a, fake_b, 2, None, None, None)
    real = op(a, b, 2, None, None, None)
    assert [(f.shape, f.dtype) for f in fake] == [(r.shape, r.dtype) for r in real]
    with pytest.raises(RuntimeError, match="dtw_path: _dtw_path is not differentiable"):
        op(x[0].requires_grad_(), y[0], None, None, None, None)[0].sum().backward()
