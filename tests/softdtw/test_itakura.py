"""The Itakura parallelogram (``itakura_max_slope``, tslearn's semantics) for soft and hard DTW, against
independent references: tslearn itself (``itakura_mask``, ``dtw``, ``dtw_path``, ``cdist_dtw``, its k-NN
classifier), the mask written from tslearn's construction (``_reference.itakura_mask``, itself checked
against tslearn) applied to the cost as +inf cells, a brute force over the paths inside the mask, and
finite differences; plus the option's errors, TorchScript, vmap and the fake kernels' check of the
slope (tests/infra/test_opcheck.py runs torch.library.opcheck of every op with and without a slope)."""
import functools
import itertools
import math
import re

import numpy as np
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import _reference as ref
from softdtw_torch import metrics
from softdtw_torch._lower_bounds import lower_bound_matrix
from softdtw_torch.datasets import load_gunpoint
from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier, KNeighborsTimeSeriesRegressor

tslearn_metrics = pytest.importorskip("tslearn.metrics", reason="tslearn is a test dependency")
pytestmark = pytest.mark.filterwarnings("ignore:h5py not installed")

F64 = torch.float64
INF = math.inf
SLOPES = [1.0, 1.5, 2.0, 3.0, 5.5]
SIZES = [1, 2, 3, 5, 17, 63, 64, 65, 130]
ops = torch.ops.softdtw_torch


@functools.lru_cache(maxsize=None)
def _mask(n, m, slope, radius=None):
    """The cells a pair of lengths (n, m) may use: the parallelogram of the reference, and the band's
    cells too when a radius is given. (Cached: do not modify.)"""
    allowed = torch.tensor(ref.itakura_mask(n, m, slope))
    if radius is not None:
        allowed &= torch.tensor(ref.band_mask(n, m, radius))
    return allowed


def _feasible(mask):
    """Whether a path exists: every row and every column has a cell (enough, the bounds of both
    constraints being monotone; tslearn checks the same)."""
    return bool(mask.any(0).all() and mask.any(1).all())


def _masked(D, mask):
    return torch.where(mask, D, torch.full_like(D, INF))


# ---- the mask --------------------------------------------------------------------------------------
@pytest.mark.parametrize("slope", SLOPES)
def test_masks_are_tslearns(slope):
    """The reference mask and metrics.itakura_mask are tslearn's itakura_mask on a grid of sizes;
    where tslearn refuses the parallelogram (no path), they have an empty row or column."""
    feasible = 0
    for n, m in itertools.product(SIZES, SIZES):
        ours = metrics.itakura_mask(n, m, slope)
        assert ours.dtype == bool and ours.shape == (n, m)
        np.testing.assert_array_equal(ours, _mask(n, m, slope).numpy())
        try:
            theirs = tslearn_metrics.itakura_mask(n, m, max_slope=slope)
        except RuntimeWarning:
            assert not _feasible(_mask(n, m, slope))
            continue
        feasible += 1
        np.testing.assert_array_equal(ours, theirs)
    assert feasible >= 9  # the n = m cases at least


def test_sakoe_chiba_mask_is_tslearns_and_mask_arguments_are_checked():
    for n, m, r in [(10, 10, 2), (12, 5, 1), (5, 12, 0), (7, 9, 3), (1, 4, 1), (6, 6, 9)]:
        np.testing.assert_array_equal(metrics.sakoe_chiba_mask(n, m, radius=r),
                                      tslearn_metrics.sakoe_chiba_mask(n, m, radius=r))
    np.testing.assert_array_equal(metrics.sakoe_chiba_mask(6, 4, 2), np.array(ref.band_mask(6, 4, 2)))
    with pytest.raises(ValueError, match=r"itakura_mask: max_slope must be a finite number >= 1, got 0.5"):
        metrics.itakura_mask(4, 4, 0.5)
    with pytest.raises(TypeError, match=r"itakura_mask: expected max_slope to be a float, got None"):
        metrics.itakura_mask(4, 4, None)
    with pytest.raises(TypeError, match=r"itakura_mask: expected sz1 to be an int"):
        metrics.itakura_mask(4.0, 4)
    with pytest.raises(ValueError, match=r"sakoe_chiba_mask: expected radius >= 0, got -1"):
        metrics.sakoe_chiba_mask(4, 4, -1)


# ---- the engine's region is the mask -----------------------------------------------------------------
@pytest.mark.parametrize("gamma", [0.0, 0.5])
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_region_of_the_cost_ops_is_the_mask(gamma, dtype):
    """On a grid of sizes and slopes: the values of a constrained cost are those of the cost with +inf
    outside the mask (+inf where no path is left), and the alignment is 0 outside the mask (all 0 with
    no path), the masked cost's alignment inside."""
    g = torch.Generator().manual_seed(0)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == F64 else dict(rtol=1e-5, atol=1e-5)
    infeasible = 0
    for (n, m), slope in itertools.product(itertools.product(SIZES, SIZES), SLOPES):
        if dtype == torch.float32 and slope not in (1.5, 3.0):
            continue  # float32: two slopes suffice
        D = (torch.rand(2, n, m, generator=g, dtype=F64) + 0.1).to(dtype)
        mask = _mask(n, m, slope)
        want = st.soft_dtw_from_cost(_masked(D, mask), gamma)
        torch.testing.assert_close(st.soft_dtw_from_cost(D, gamma, itakura_max_slope=slope), want, **tol)
        E, values = st.soft_dtw_alignment_from_cost(D, gamma, itakura_max_slope=slope)
        torch.testing.assert_close(values, want, **tol)
        assert not E[:, ~mask].any()
        torch.testing.assert_close(E, st.soft_dtw_alignment_from_cost(_masked(D, mask), gamma)[0], **tol)
        if not _feasible(mask):
            infeasible += 1
            assert torch.isinf(values).all() and values.min() > 0 and not E.any()
    assert infeasible > 0


@pytest.mark.parametrize("n,m,slope", [(4, 4, 1.5), (5, 4, 2.0), (4, 6, 2.0), (6, 6, 2.0), (6, 6, 1.0), (5, 6, 3.0)])
def test_values_and_alignment_are_the_brute_force_over_the_parallelogram(n, m, slope):
    """sdtw = −γ log Σ exp(−cost/γ) over the paths inside tslearn's parallelogram, E their expected
    alignment, by enumerating every path (the reference's brute force on the cost with +inf outside)."""
    mask = _mask(n, m, slope)
    assert _feasible(mask) and not mask.all()
    D = torch.rand(n, m, generator=torch.Generator().manual_seed(n * m), dtype=F64)
    value, E = ref.soft_dtw_brute_force(_masked(D, mask).tolist(), 0.4)
    got_E, got = st.soft_dtw_alignment_from_cost(D, 0.4, itakura_max_slope=slope)
    assert got.item() == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(got_E.numpy(), np.array(E), atol=1e-12)
    x, y = ref.random_pairs(1, n, m, 2, seed=n + m)
    brute = ref.soft_dtw_brute_force(_masked(ref.sqeuclidean(x, y)[0], mask).tolist(), 0.4)[0]
    for fused in (True, False):
        assert st.soft_dtw(x, y, 0.4, fused=fused, itakura_max_slope=slope).item() == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("radius", [None, 3])
def test_ragged_pairs_use_their_own_parallelogram(dtype, fused, radius):
    """Values and gradients of a ragged batch: pair b is the pair alone, its cost +inf outside the mask
    of its own lengths (and outside the band: the intersection); +inf and a zero gradient where no
    path is left; padding gets a zero gradient."""
    g = torch.Generator().manual_seed(1)
    B, N, M, d = 6, 40, 33, 3
    x, y = torch.randn(B, N, d, generator=g, dtype=F64), torch.randn(B, M, d, generator=g, dtype=F64)
    xl, yl = torch.tensor([40, 40, 25, 17, 31, 5]), torch.tensor([33, 20, 28, 17, 33, 9])
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == F64 else dict(rtol=2e-4, atol=2e-4)
    seen = set()
    for slope, gamma in itertools.product((1.5, 2.0, 5.5), (0.0, 0.3)):
        a, b = x.to(dtype).requires_grad_(True), y.to(dtype).requires_grad_(True)
        values = st.soft_dtw(a, b, gamma, bandwidth=radius, fused=fused, x_lengths=xl, y_lengths=yl,
                             itakura_max_slope=slope)
        ga, gb = torch.autograd.grad(values.sum(), (a, b))
        for k in range(B):
            n, m = int(xl[k]), int(yl[k])
            mask = _mask(n, m, slope, radius)
            seen.add(_feasible(mask))
            xa, ya = x[k, :n].to(dtype).requires_grad_(True), y[k, :m].to(dtype).requires_grad_(True)
            want = st.soft_dtw_from_cost(_masked(ref.sqeuclidean(xa, ya), mask), gamma)
            want_ga, want_gb = torch.autograd.grad(want, (xa, ya))
            torch.testing.assert_close(values[k], want, **tol)
            if not _feasible(mask):
                assert values[k].item() == INF and not ga[k].any() and not gb[k].any()
                continue
            torch.testing.assert_close(ga[k, :n], want_ga, **tol)
            torch.testing.assert_close(gb[k, :m], want_gb, **tol)
            assert not ga[k, n:].any() and not gb[k, m:].any()
    assert seen == {True, False}


@pytest.mark.parametrize("cost,gamma", [("sqeuclidean", 0.5), ("l1", 0.5), ("sqeuclidean", "tensor"), ("l1", "tensor")])
def test_divergence_self_terms_use_their_own_parallelograms(cost, gamma):
    """normalize=True: sdtw(x, y) − ½ sdtw(x, x) − ½ sdtw(y, y), the self terms on their (n, n) and (m, m)
    parallelograms (fused, unfused, another cost and a tensor gamma, which run other code paths);
    cdist_soft_dtw's divergence likewise."""
    x, y = ref.random_pairs(3, 12, 10, 2, seed=7)
    xl, yl = torch.tensor([12, 9, 11]), torch.tensor([10, 10, 7])
    g = torch.tensor(0.5, dtype=F64) if gamma == "tensor" else gamma
    got = st.soft_dtw(x, y, g, normalize=True, x_lengths=xl, y_lengths=yl, cost=cost, itakura_max_slope=2.0)

    def alone(a, b):
        return st.soft_dtw_from_cost(_masked(st.pairwise_cost(a[None], b[None], cost)[0], _mask(len(a), len(b), 2.0)),
                                     0.5)

    for k in range(3):
        a, b = x[k, :xl[k]], y[k, :yl[k]]
        want = alone(a, b) - 0.5 * alone(a, a) - 0.5 * alone(b, b)
        assert got[k].item() == pytest.approx(want.item(), rel=1e-10, abs=1e-10)
    if cost == "sqeuclidean" and gamma != "tensor":
        table = st.cdist_soft_dtw(x, y, 0.5, normalize=True, x_lengths=xl, y_lengths=yl, itakura_max_slope=2.0)
        for i, j in itertools.product(range(3), range(3)):
            a, b = x[i, :xl[i]], y[j, :yl[j]]
            want = alone(a, b) - 0.5 * alone(a, a) - 0.5 * alone(b, b)
            assert table[i, j].item() == pytest.approx(want.item(), rel=1e-10, abs=1e-10)


def test_both_constraints_are_the_intersection_in_every_function():
    """soft_dtw_sharp, dilate and the alignment under a band and a parallelogram: the same as on the cost
    with +inf outside both masks (the penalty term of DILATE from the alignment of that cost)."""
    x, y = ref.random_pairs(2, 14, 11, 2, seed=5)
    mask = _mask(14, 11, 3.0, 2)
    D = ref.sqeuclidean(x, y)
    masked = _masked(D, mask)
    band = torch.tensor(ref.band_mask(14, 11, 2))
    assert _feasible(mask) and (mask != _mask(14, 11, 3.0)).any() and (mask != band).any()  # both constraints cut
    tol = dict(rtol=1e-10, atol=1e-10)
    E, values = st.soft_dtw_alignment(x, y, 0.3, bandwidth=2, itakura_max_slope=3.0)
    want_E, want_values = st.soft_dtw_alignment_from_cost(masked, 0.3)
    torch.testing.assert_close(values, want_values, **tol)
    torch.testing.assert_close(E, want_E, **tol)
    sharp = (want_E * D).sum((1, 2))
    torch.testing.assert_close(st.soft_dtw_sharp(x, y, 0.3, bandwidth=2, itakura_max_slope=3.0), sharp, **tol)
    torch.testing.assert_close(st.soft_dtw_sharp_from_cost(D, 0.3, 2, itakura_max_slope=3.0), sharp, **tol)
    rows = torch.arange(1, 15, dtype=F64).view(14, 1) / 14
    cols = torch.arange(1, 12, dtype=F64).view(1, 11) / 11
    temporal = (want_E * (rows - cols) ** 2).sum((1, 2))
    loss, shape, temp = st.dilate(x, y, 0.4, 0.3, bandwidth=2, itakura_max_slope=3.0)
    torch.testing.assert_close(shape, want_values, **tol)
    torch.testing.assert_close(temp, temporal, **tol)
    torch.testing.assert_close(loss, 0.4 * want_values + 0.6 * temporal, **tol)


# ---- tslearn ---------------------------------------------------------------------------------------
def _tslearn_kwargs(slope):
    return dict(global_constraint="itakura", itakura_max_slope=slope)


def test_dtw_and_dtw_path_are_tslearns_on_random_series():
    """Same path and value (1e-12) as tslearn's dtw_path / dtw, N = M and N != M, every slope; where
    tslearn refuses the parallelogram, an empty path and an infinite distance."""
    rng = np.random.default_rng(3)
    refused = 0
    for (n, m), slope in itertools.product([(20, 20), (30, 24), (24, 30), (41, 17), (7, 9), (1, 1)], SLOPES):
        a, b = rng.normal(size=(n, 2)), rng.normal(size=(m, 2))
        path, got = metrics.dtw_path(a, b, itakura_max_slope=slope)
        try:
            want_path, want = tslearn_metrics.dtw_path(a, b, **_tslearn_kwargs(slope))
        except RuntimeWarning:
            refused += 1
            assert path == [] and got == INF and metrics.dtw(a, b, itakura_max_slope=slope) == INF
            continue
        assert path == want_path
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
        assert metrics.dtw(a, b, itakura_max_slope=slope) == pytest.approx(
            tslearn_metrics.dtw(a, b, **_tslearn_kwargs(slope)), rel=1e-12, abs=1e-12)
    assert refused > 0


def test_dtw_path_batch_and_gradient_under_itakura():
    """A batch of paths (a pair with no path: an empty list), and the differentiable distance: the
    gradient of the path's cost, zero for the pair with no path."""
    x, y = ref.random_pairs(2, 12, 9, 2, seed=2)
    paths, dist = metrics.dtw_path(x, y, itakura_max_slope=2.0, x_lengths=[12, 12], y_lengths=[9, 3])
    assert paths[1] == [] and dist[1].item() == INF and not _feasible(_mask(12, 3, 2.0))
    want_path, want = tslearn_metrics.dtw_path(x[0].numpy(), y[0].numpy(), **_tslearn_kwargs(2.0))
    assert paths[0] == want_path and dist[0].item() == pytest.approx(want, rel=1e-12)
    a = x.clone().requires_grad_(True)
    _, d = metrics.dtw_path(a, y, itakura_max_slope=2.0, x_lengths=[12, 12], y_lengths=[9, 3])
    (grad,) = torch.autograd.grad(d.sum(), a)
    A = torch.zeros(12, 9, dtype=F64)
    for i, j in want_path:
        A[i, j] = 1.0
    want_grad = 2 * (A.sum(1, keepdim=True) * x[0] - A @ y[0]) / (2 * want)  # d sqrt(s) = ds / (2 sqrt(s))
    torch.testing.assert_close(grad[0], want_grad, rtol=1e-10, atol=1e-12)
    assert not grad[1].any()


def test_gunpoint_and_cdist_are_tslearns():
    X, _ = load_gunpoint(split="train")
    X = np.asarray(X, dtype=np.float64).transpose(0, 2, 1)  # aeon's (50, 1, 150) as tslearn's (50, 150, 1)
    for (i, j), slope in itertools.product([(0, 1), (2, 30), (10, 44)], SLOPES):
        want_path, want = tslearn_metrics.dtw_path(X[i], X[j], **_tslearn_kwargs(slope))
        path, got = metrics.dtw_path(X[i], X[j], itakura_max_slope=slope)
        assert path == want_path and got == pytest.approx(want, rel=1e-12)
    for slope in (1.5, 2.0, 5.5):
        np.testing.assert_allclose(metrics.cdist_dtw(X[:8], X[8:14], itakura_max_slope=slope),
                                   tslearn_metrics.cdist_dtw(X[:8], X[8:14], **_tslearn_kwargs(slope)), rtol=1e-12)
        np.testing.assert_allclose(metrics.cdist_dtw(X[:8], itakura_max_slope=slope),
                                   tslearn_metrics.cdist_dtw(X[:8], **_tslearn_kwargs(slope)), rtol=1e-12, atol=1e-12)
    # Datasets of series of different lengths: each pair its own parallelogram, as tslearn's per-pair masks.
    rng = np.random.default_rng(5)
    series = [rng.normal(size=(length, 2)) for length in (20, 24, 18, 22)]
    others = [rng.normal(size=(length, 2)) for length in (19, 23, 21)]
    assert all(_feasible(_mask(len(a), len(b), 3.0)) for a in series for b in others)
    np.testing.assert_allclose(metrics.cdist_dtw(series, others, itakura_max_slope=3.0),
                               tslearn_metrics.cdist_dtw(series, others, **_tslearn_kwargs(3.0)), rtol=1e-12)


# ---- derivatives -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fused", [True, False])
def test_gradients_forward_mode_and_double_backward_by_finite_differences(fused):
    x, y = ref.random_pairs(2, 8, 7, 2, seed=3)
    a, b = x.requires_grad_(True), y.requires_grad_(True)
    lengths = dict(x_lengths=torch.tensor([8, 7]), y_lengths=torch.tensor([7, 6]))
    assert all(_feasible(m) and not m.all() for m in (_mask(8, 7, 2.0), _mask(7, 6, 2.0)))

    def f(p, q):
        return st.soft_dtw(p, q, 0.7, fused=fused, itakura_max_slope=2.0, **lengths)

    assert torch.autograd.gradcheck(f, (a, b), check_forward_ad=True)
    assert torch.autograd.gradgradcheck(f, (a, b))
    D = torch.rand(2, 7, 6, generator=torch.Generator().manual_seed(4), dtype=F64).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda d: st.soft_dtw_from_cost(d, 0.7, itakura_max_slope=1.5), (D,),
                                    check_forward_ad=True)
    assert torch.autograd.gradgradcheck(lambda d: st.soft_dtw_from_cost(d, 0.7, 1, itakura_max_slope=1.5), (D,))
    # torch.func.jvp: the directional derivative is ⟨gradient, tangent⟩.
    u, v = torch.randn_like(x), torch.randn_like(y)
    _, tangent = torch.func.jvp(f, (x.detach(), y.detach()), (u, v))
    gx, gy = torch.autograd.grad(f(a, b).sum(), (a, b))
    torch.testing.assert_close(tangent, (gx * u).sum((1, 2)) + (gy * v).sum((1, 2)), rtol=1e-10, atol=1e-12)


# ---- errors ----------------------------------------------------------------------------------------
def _calls():
    x, y = ref.random_pairs(2, 5, 4, 2)
    D = ref.sqeuclidean(x, y)
    return {
        "soft_dtw": lambda s: st.soft_dtw(x, y, itakura_max_slope=s),
        "soft_dtw_from_cost": lambda s: st.soft_dtw_from_cost(D, itakura_max_slope=s),
        "soft_dtw_alignment": lambda s: st.soft_dtw_alignment(x, y, itakura_max_slope=s),
        "soft_dtw_alignment_from_cost": lambda s: st.soft_dtw_alignment_from_cost(D, itakura_max_slope=s),
        "soft_dtw_sharp": lambda s: st.soft_dtw_sharp(x, y, itakura_max_slope=s),
        "soft_dtw_sharp_from_cost": lambda s: st.soft_dtw_sharp_from_cost(D, itakura_max_slope=s),
        "dilate": lambda s: st.dilate(x, y, itakura_max_slope=s),
        "cdist_soft_dtw": lambda s: st.cdist_soft_dtw(x, y, itakura_max_slope=s),
        "dtw": lambda s: st.dtw(x, y, itakura_max_slope=s),
        "dtw_path": lambda s: st.dtw_path(x, y, itakura_max_slope=s),
        "cdist_dtw": lambda s: st.cdist_dtw(x, y, itakura_max_slope=s),
        "SoftDTW": lambda s: st.SoftDTW(itakura_max_slope=s),
        "SharpSoftDTW": lambda s: st.SharpSoftDTW(itakura_max_slope=s),
        "DILATELoss": lambda s: st.DILATELoss(itakura_max_slope=s),
    }


CALLS = _calls()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_bad_slopes_raise(name):
    call = CALLS[name]
    for value, text in [(0.5, "0.5"), (0.0, "0"), (-1, "-1"), (math.inf, "inf"), (math.nan, "nan")]:
        with pytest.raises(ValueError, match=rf"\w+: itakura_max_slope must be a finite number >= 1 or None, got "
                                             rf"{re.escape(text)}(\n|$)"):
            call(value)
    for value, kind in [("2", "str"), (True, "bool"), (torch.tensor(2.0), "Tensor")]:
        with pytest.raises(TypeError, match=rf"{name}: expected itakura_max_slope to be a float or None, got {kind}"):
            call(value)
    call(np.float32(2.0))  # numpy and integer numbers are read as floats
    call(3)


# ---- the k-NN search -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gunpoint():
    X, y = load_gunpoint(split="train")
    X_test, _ = load_gunpoint(split="test")
    return X[:24].transpose(0, 2, 1).copy(), y[:24], X_test[:20].transpose(0, 2, 1).copy()


@pytest.mark.parametrize("params", [
    {"global_constraint": "itakura", "itakura_max_slope": 2.0}, {"itakura_max_slope": 1.5},
    {"global_constraint": "itakura", "sakoe_chiba_radius": 3},  # tslearn: the slope 2.0, the radius ignored
    {"global_constraint": "sakoe_chiba", "itakura_max_slope": 2.0},  # tslearn: the radius 1, the slope ignored
])
def test_knn_is_tslearns_with_and_without_pruning(gunpoint, params):
    tslearn_neighbors = pytest.importorskip("tslearn.neighbors")
    X, y, X_test = gunpoint
    theirs = tslearn_neighbors.KNeighborsTimeSeriesClassifier(n_neighbors=3, metric="dtw", metric_params=params)
    theirs.fit(X, y)
    want_dist, want_ind = theirs.kneighbors(X_test)
    want_pred = theirs.set_params(n_neighbors=1).predict(X_test)
    for pruning in (True, False):
        ours = KNeighborsTimeSeriesClassifier(n_neighbors=3, metric="dtw", metric_params=params, pruning=pruning)
        dist, ind = ours.fit(X, y).kneighbors(X_test)
        np.testing.assert_array_equal(ind, want_ind)
        np.testing.assert_allclose(dist, want_dist, rtol=1e-12)
        rate = ours.pruning_rate_
        assert (rate > 0.1) if pruning else (rate == 0.0)
        np.testing.assert_array_equal(ours.set_params(n_neighbors=1).predict(X_test), want_pred)


def test_pruned_search_is_exact_on_ragged_series_with_pairs_without_a_path():
    """Pruned and unpruned searches agree bit for bit (distances, indices, predictions, X=None), under the
    parallelogram alone and with a band, with lengths that leave some pairs without a path (+inf)."""
    rng = np.random.default_rng(8)
    X = [rng.normal(size=(n, 2)).cumsum(0) for n in rng.integers(8, 30, 40)]
    X_test = [rng.normal(size=(n, 2)).cumsum(0) for n in rng.integers(6, 35, 15)] + [rng.normal(size=(3, 2))]
    y = rng.normal(size=40)
    for params in ({"itakura_max_slope": 2.0}, {"global_constraint": "itakura", "itakura_max_slope": 1.5}):
        outputs = []
        for pruning in (True, False):
            est = KNeighborsTimeSeriesRegressor(n_neighbors=4, metric_params=params, pruning=pruning).fit(X, y)
            outputs.append(est.kneighbors(X_test) + est.kneighbors() + (est.predict(X_test),))
        assert np.isinf(outputs[1][0][-1]).all()  # the last query (3 steps) has a path to no candidate
        for a, b in zip(*outputs):
            np.testing.assert_array_equal(a, b)


def _bound_reference(x, y, mask):
    """The search's bound from its definition, pair by pair: the two corner cells plus the larger of
    LB_Keogh's middle rows in the two directions, each row's envelope over the cells the mask admits;
    +inf for a pair with no path, seen as an empty row of x (x longer than 2) or column of y (y longer
    than 2)."""
    if (len(x) > 2 and not mask.any(1).all()) or (len(y) > 2 and not mask.any(0).all()):
        return INF

    def keogh(a, b, allowed):
        total = 0.0
        for i in range(1, len(a) - 1):
            cols = np.flatnonzero(allowed[i])
            if cols.size:
                total += ((np.clip(a[i], b[cols].min(0), b[cols].max(0)) - a[i]) ** 2).sum()
        return total

    corners = ((x[0] - y[0]) ** 2).sum() + (0.0 if len(x) == len(y) == 1 else ((x[-1] - y[-1]) ** 2).sum())
    return corners + max(keogh(x, y, mask), keogh(y, x, mask.T))


@pytest.mark.parametrize("radius", [None, 2])
@pytest.mark.parametrize("slope", [1.5, 2.0, 3.0])
def test_search_bounds_are_exact_for_the_parallelogram(radius, slope):
    """Ragged multivariate series: each bound is the pair-by-pair bound over the cells the parallelogram
    (and band) of its own lengths admits (+inf for pairs with no path), below the squared DTW, and at
    least the band-only bound."""
    rng = np.random.default_rng(int(slope * 10) + (radius or 0))
    Q, C, d = 6, 7, 2
    xq, xc = rng.normal(size=(Q, 16, d)), rng.normal(size=(C, 18, d))
    lq, lc = rng.integers(1, 17, size=Q), rng.integers(1, 19, size=C)
    lq[:2], lc[:2] = [1, 16], [1, 18]
    tq, tc = torch.from_numpy(xq), torch.from_numpy(xc)
    bounds = lower_bound_matrix(tq, torch.from_numpy(lq), tc, torch.from_numpy(lc), radius, slope).numpy()
    loose = lower_bound_matrix(tq, torch.from_numpy(lq), tc, torch.from_numpy(lc), radius).numpy()
    dtw = st.soft_dtw(tq.repeat_interleave(C, 0), tc.repeat(Q, 1, 1), 0.0, bandwidth=radius,
                      x_lengths=torch.from_numpy(lq).repeat_interleave(C), y_lengths=torch.from_numpy(lc).repeat(Q),
                      itakura_max_slope=slope).view(Q, C).numpy()
    for i, j in itertools.product(range(Q), range(C)):
        x, y = xq[i, :lq[i]], xc[j, :lc[j]]
        mask = _mask(int(lq[i]), int(lc[j]), slope, radius).numpy()
        assert bounds[i, j] == pytest.approx(_bound_reference(x, y, mask), rel=1e-12, abs=1e-12)  # inf == inf
        assert bounds[i, j] <= dtw[i, j] * (1 + 1e-12)
        assert bounds[i, j] >= loose[i, j] * (1 - 1e-12)
    assert np.isinf(dtw).any() and (bounds > loose * (1 + 1e-9)).any()


def test_the_kernels_table_is_tslearns_mask_and_batches():
    # _itakura_rows, the table the CUDA kernels read (and the bounds and masks here): per pair its
    # columns' rows, tslearn's itakura_mask on the pair's own lengths, the columns past m empty;
    # under vmap the same as per sample; wrong lengths refused in itakura_mask's name.
    g = torch.Generator().manual_seed(4)
    n, m = torch.randint(1, 70, (60,), generator=g), torch.randint(1, 70, (60,), generator=g)
    for slope in SLOPES:
        table = ops._itakura_rows(n, m, 70, slope)
        for b in range(0, 60, 7):
            rows = torch.arange(int(n[b])).view(-1, 1)
            mask = (rows >= table[b, :, 0]) & (rows < table[b, :, 1])
            assert torch.equal(mask[:, :int(m[b])], torch.tensor(ref.itakura_mask(int(n[b]), int(m[b]), slope)))
            assert not mask[:, int(m[b]):].any()
    batched = torch.vmap(lambda a, b: ops._itakura_rows(a, b, 70, 2.0))(n.view(6, 10), m.view(6, 10))
    assert torch.equal(batched, ops._itakura_rows(n, m, 70, 2.0).view(6, 10, 70, 2))
    with pytest.raises(ValueError, match=r"itakura_mask: expected lengths n >= 1 and 1 <= m <= 10"):
        ops._itakura_rows(n, m, 10, 2.0)
    with pytest.raises(TypeError, match="itakura_mask: expected integer lengths, got Float"):
        ops._itakura_rows(n.float(), m, 70, 2.0)


@pytest.mark.parametrize("n,m,slope", [(103, 100, 1.5), (149, 100, 1.5), (85, 100, 1.3),
                                         (141, 100, 2.0), (161, 100, 2.0)])
def test_sizes_where_a_fused_multiply_add_would_move_a_bound(n, m, slope):
    # Found by search in exact arithmetic: here rounding n − 1 − a·(m − 1) + a·j once (an FMA)
    # instead of twice moves a bound by a cell. tslearn rounds twice; so do the kernels.
    want = tslearn_metrics.itakura_mask(n, m, slope)
    assert np.array_equal(metrics.itakura_mask(n, m, slope), want)
    D = torch.rand(1, n, m, dtype=F64, generator=torch.Generator().manual_seed(n)) + 0.5
    assert torch.equal(ops.soft_dtw_from_cost(D, 0.0, itakura_max_slope=slope),
                       ops.soft_dtw_from_cost(_masked(D, torch.from_numpy(want)), 0.0))


# ---- TorchScript, vmap, fake kernels ---------------------------------------------------------------
def test_torchscript_and_vmap():
    x, y = ref.random_pairs(3, 9, 8, 2, seed=6)
    want = st.soft_dtw(x, y, 0.5, bandwidth=3, itakura_max_slope=2.0)
    assert torch.equal(torch.jit.script(st.soft_dtw)(x, y, 0.5, 3, itakura_max_slope=2.0), want)
    module = st.SoftDTW(gamma=0.5, bandwidth=3, reduction="none", itakura_max_slope=2.0)
    assert torch.equal(module(x, y), want) and torch.equal(torch.jit.script(module)(x, y), want)
    assert "itakura_max_slope=2.0" in repr(module)
    assert torch.equal(torch.jit.script(st.DILATELoss(reduction="none", itakura_max_slope=2.0))(x, y),
                       st.dilate(x, y, itakura_max_slope=2.0)[0])
    X, Y = x.view(3, 1, 9, 2).expand(3, 2, 9, 2), y.view(3, 1, 8, 2).expand(3, 2, 8, 2)
    batched = torch.vmap(lambda a, b: st.soft_dtw(a, b, 0.5, bandwidth=3, itakura_max_slope=2.0))(X, Y)
    assert torch.equal(batched, want.view(3, 1).expand(3, 2))
    D = ref.sqeuclidean(x, y)
    grads = torch.func.jacrev(lambda d: st.soft_dtw_from_cost(d, 0.5, itakura_max_slope=2.0))(D)
    E = st.soft_dtw_alignment_from_cost(D, 0.5, itakura_max_slope=2.0)[0]
    for k in range(3):
        torch.testing.assert_close(grads[k, k], E[k], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op,args", [
    ("_soft_dtw_fused_forward", lambda x, y, D, s: (x, y, 0.5, None, s, None, None, "table")),
    ("_soft_dtw_from_cost_forward", lambda x, y, D, s: (D, 0.5, None, s, None, None, True)),
    ("_dtw_path", lambda x, y, D, s: (x, y, None, s, None, None)),
])
def test_fake_kernels_check_the_slope_as_the_real_ones(op, args):
    from torch._subclasses.fake_tensor import FakeTensorMode

    x, y = ref.random_pairs(2, 6, 5, 3)
    D = ref.sqeuclidean(x, y)
    mode = FakeTensorMode()
    fx, fy, fD = mode.from_tensor(x), mode.from_tensor(y), mode.from_tensor(D)
    for value in (0.5, 0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError) as real:
            getattr(ops, op)(*args(x, y, D, value))
        with mode, pytest.raises(ValueError) as fake:
            getattr(ops, op)(*args(fx, fy, fD, value))
        assert str(fake.value).splitlines()[0] == str(real.value).splitlines()[0]
        assert "itakura_max_slope must be a finite number >= 1 or None" in str(real.value)
