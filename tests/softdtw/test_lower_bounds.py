"""DTW lower bounds (softdtw_torch._lower_bounds): ``lb_envelope`` and ``lb_keogh`` against tslearn's,
and every bound of the neighbour search below the exact DTW, on random and real (UCR) data.

References: tslearn's ``lb_envelope``, ``lb_keogh``, ``dtw`` and ``sakoe_chiba_mask``, and a float64
numpy brute force written from the definitions (windows read off tslearn's band mask, a DTW
dynamic programme).
"""
import numpy as np
import pytest
import torch

import softdtw_torch as st
from conftest import DEVICES
from softdtw_torch._lower_bounds import lb_envelope, lb_keogh, lower_bound_matrix

tslearn_metrics = pytest.importorskip("tslearn.metrics", reason="tslearn is a test dependency (pip install tslearn)")


def _mask(n, m, radius):
    """tslearn's admissible cells (n, m): its Sakoe–Chiba mask, or everything without a band."""
    if radius is None:
        return np.ones((n, m), dtype=bool)
    return np.asarray(tslearn_metrics.sakoe_chiba_mask(n, m, radius=radius)).astype(bool)


def _dtw_sq(x, y, radius):
    """Squared DTW in float64 from the recursion: R[i, j] = ||x_i − y_j||² + min(R[i−1, j−1],
    R[i−1, j], R[i, j−1]), inadmissible cells excluded."""
    n, m = len(x), len(y)
    mask = _mask(n, m, radius)
    cost = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if mask[i - 1, j - 1]:
                R[i, j] = cost[i - 1, j - 1] + min(R[i - 1, j - 1], R[i - 1, j], R[i, j - 1])
    return R[n, m]


def _bound_reference(x, y, radius):
    """The search's bound for one pair from its definition, with the windows read off tslearn's mask:
    the two corner cells, plus, for the rows 1 .. n−2 of x, the squared distance to the box of y over
    the row's admissible columns, or the same with x and y swapped, whichever is larger."""
    n, m = len(x), len(y)
    mask = _mask(n, m, radius)
    corners = ((x[0] - y[0]) ** 2).sum() + (0.0 if n == m == 1 else ((x[-1] - y[-1]) ** 2).sum())

    def middle(a, b, admissible):  # rows of a against the envelope of b over each row's admissible cells
        total = 0.0
        for i in range(1, len(a) - 1):
            window = b[admissible[i]]
            lo, hi = window.min(0), window.max(0)
            total += ((a[i] - np.clip(a[i], lo, hi)) ** 2).sum()
        return total

    return corners + max(middle(x, y, mask), middle(y, x, mask.T))


def _ucr(name, n_train, n_test):
    datasets = pytest.importorskip("aeon.datasets")
    loader = {"ArrowHead": datasets.load_arrow_head, "ItalyPowerDemand": datasets.load_italy_power_demand,
              "GunPoint": datasets.load_gunpoint}[name]
    X_train, _ = loader(split="train")
    X_test, _ = loader(split="test")
    # aeon's (n_cases, n_channels, n_timepoints) -> tslearn's (n_cases, n_timepoints, n_channels)
    return X_train[:n_train].transpose(0, 2, 1).copy(), X_test[:n_test].transpose(0, 2, 1).copy()


# ----------------------------------------------------------------------------------------------
# lb_envelope / lb_keogh: tslearn's values
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sz", [1, 2, 7, 30])
@pytest.mark.parametrize("radius", [0, 1, 4, 50])
@pytest.mark.parametrize("d", [1, 3])
def test_lb_envelope_is_tslearns(sz, radius, d):
    ts = np.random.default_rng(sz * 100 + radius * 10 + d).normal(size=(sz, d))
    lo, hi = lb_envelope(ts, radius=radius)
    ref_lo, ref_hi = tslearn_metrics.lb_envelope(ts, radius=radius)
    assert lo.dtype == hi.dtype == np.float64 and lo.shape == ref_lo.shape == (sz, d)
    np.testing.assert_array_equal(lo, ref_lo)  # min and max round nothing: the same bits
    np.testing.assert_array_equal(hi, ref_hi)


def test_lb_envelope_forms():
    rng = np.random.default_rng(0)
    ts = rng.normal(size=(5, 20, 2))
    lo, hi = lb_envelope(ts, radius=3)  # a batch: each series' own envelope
    for b in range(5):
        ref_lo, ref_hi = tslearn_metrics.lb_envelope(ts[b], radius=3)
        np.testing.assert_array_equal(lo[b], ref_lo)
        np.testing.assert_array_equal(hi[b], ref_hi)
    # a list and a (sz,) series, as tslearn's docstring example
    lo, hi = lb_envelope([1, 2, 3, 2, 1], radius=1)
    np.testing.assert_array_equal(lo[:, 0], [1, 1, 2, 1, 1])
    np.testing.assert_array_equal(hi[:, 0], [2, 3, 3, 3, 2])
    # a tensor keeps its dtype
    t_lo, t_hi = lb_envelope(torch.from_numpy(ts[0]).float(), radius=3)
    assert isinstance(t_lo, torch.Tensor) and t_lo.dtype == torch.float32
    np.testing.assert_array_equal(t_hi.numpy(), tslearn_metrics.lb_envelope(ts[0].astype(np.float32), radius=3)[1])


@pytest.mark.parametrize("sz,radius", [(1, 0), (5, 1), (40, 0), (40, 3), (40, 100)])
def test_lb_keogh_is_tslearns(sz, radius):
    rng = np.random.default_rng(sz + radius)
    for _ in range(5):
        q, c = rng.normal(size=sz), rng.normal(size=sz)
        ours = lb_keogh(q, c, radius=radius)
        theirs = tslearn_metrics.lb_keogh(q, c, radius=radius)
        assert isinstance(ours, np.floating)
        assert ours == pytest.approx(theirs, rel=1e-13, abs=1e-15)
        envelope = tslearn_metrics.lb_envelope(c, radius=radius)
        assert lb_keogh(q, envelope_candidate=envelope) == pytest.approx(theirs, rel=1e-13, abs=1e-15)
    assert float(lb_keogh([0, 0, 0, 0, 0], [1, 2, 3, 2, 1], radius=1)) == pytest.approx(8 ** 0.5)  # tslearn's example


def test_lb_keogh_multivariate_is_the_sum_over_features():
    """Several features (tslearn: univariate only): the square root of the sum of the squared
    per-feature LB_Keogh values, tslearn's per feature."""
    rng = np.random.default_rng(1)
    q, c = rng.normal(size=(30, 3)), rng.normal(size=(30, 3))
    per_feature = [tslearn_metrics.lb_keogh(q[:, f], c[:, f], radius=2) ** 2 for f in range(3)]
    assert lb_keogh(q, c, radius=2) == pytest.approx(np.sqrt(sum(per_feature)), rel=1e-13)
    batch = lb_keogh(np.stack([q, c]), np.stack([c, q]), radius=2)
    assert batch.shape == (2,) and batch[0] == pytest.approx(lb_keogh(q, c, radius=2), rel=1e-15)


@pytest.mark.parametrize("device", DEVICES)
def test_lb_keogh_of_tensors_is_a_tensor_on_their_device(device):
    rng = np.random.default_rng(2)
    q, c = rng.normal(size=(25, 1)), rng.normal(size=(25, 1))
    value = lb_keogh(torch.tensor(q, device=device), torch.tensor(c, device=device), radius=2)
    assert isinstance(value, torch.Tensor) and value.dim() == 0 and value.device.type == device
    assert value.item() == pytest.approx(tslearn_metrics.lb_keogh(q, c, radius=2), rel=1e-13)


@pytest.mark.parametrize("call,error,match", [
    (lambda: lb_envelope(np.zeros(5), radius=-1), ValueError, r"lb_envelope: expected radius >= 0"),
    (lambda: lb_envelope(np.zeros(5), radius=1.0), TypeError, r"lb_envelope: expected radius to be an int"),
    (lambda: lb_envelope(np.zeros((2, 3, 4, 1))), ValueError, r"lb_envelope: expected ts of shape"),
    (lambda: lb_envelope([1.0, np.nan]), ValueError, r"lb_envelope: ts holds NaN"),
    (lambda: lb_keogh(np.zeros(5), np.zeros(6)), ValueError, r"lb_keogh: expected ts_query and ts_candidate of one "
                                                             r"shape"),
    (lambda: lb_keogh(np.zeros(5)), ValueError, r"lb_keogh: expected ts_candidate or envelope_candidate"),
    (lambda: lb_keogh(np.zeros(5), envelope_candidate=np.zeros(5)), TypeError, r"lb_keogh: expected "
                                                                              r"envelope_candidate to be a pair"),
    (lambda: lb_keogh(np.zeros(5), envelope_candidate=(np.zeros(4), np.zeros(4))), ValueError,
     r"lb_keogh: expected the envelope of the query's shape"),
    (lambda: lb_keogh(np.zeros(5), np.zeros(5), radius=-2), ValueError, r"lb_keogh: expected radius >= 0"),
    (lambda: lb_keogh(np.array(["a", "b"]), np.zeros(2)), TypeError, r"lb_keogh: expected ts_query to be numeric"),
])
def test_errors_name_the_function(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ----------------------------------------------------------------------------------------------
# The bounds are below the DTW
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("radius", [None, 0, 1, 3, 8])
def test_lb_keogh_is_below_tslearns_dtw(radius):
    """LB_Keogh(radius r) <= DTW with the band of radius r (no band: a radius >= the length), on
    random and real series of one length (ArrowHead)."""
    rng = np.random.default_rng(3)
    X_train, X_test = _ucr("ArrowHead", 8, 8)
    pairs = [(rng.normal(size=30), rng.normal(size=30)) for _ in range(10)]
    pairs += [(X_test[i, :, 0], X_train[j, :, 0]) for i in range(8) for j in range(8)]
    worst = 0.0
    for q, c in pairs:
        r = len(q) if radius is None else radius
        kwargs = {} if radius is None else {"global_constraint": "sakoe_chiba", "sakoe_chiba_radius": radius}
        bound, dist = lb_keogh(q, c, radius=r), tslearn_metrics.dtw(q, c, **kwargs)
        assert bound <= dist * (1 + 1e-12)
        worst = max(worst, bound / dist)
    assert worst > 0.3  # not vacuous


@pytest.mark.parametrize("radius", [None, 0, 1, 3, 50])
def test_search_bounds_are_below_the_dtw_on_ragged_random_series(radius):
    """The search's (Q, C) bounds for series of many lengths, multivariate: below the squared DTW
    (ours and the float64 brute force), never below LB_Kim, and equal to the pair-by-pair reference
    where all queries share one length and all candidates another (the windows are then the band's
    exactly); with several candidate lengths they are wider (looser), never above the reference."""
    rng = np.random.default_rng(4 if radius is None else 5 + radius)
    Q, C, d = 6, 7, 3
    xq, xc = rng.normal(size=(Q, 14, d)), rng.normal(size=(C, 17, d))
    lq, lc = rng.integers(1, 15, size=Q), rng.integers(1, 18, size=C)
    lq[:2], lc[:2] = [1, 2], [1, 2]  # the smallest lengths: no row between the corners
    bounds = lower_bound_matrix(torch.from_numpy(xq), torch.from_numpy(lq), torch.from_numpy(xc),
                                torch.from_numpy(lc), radius).numpy()
    dtw = st.soft_dtw(torch.from_numpy(xq).repeat_interleave(C, 0), torch.from_numpy(xc).repeat(Q, 1, 1),
                      gamma=0.0, bandwidth=radius, x_lengths=torch.from_numpy(lq).repeat_interleave(C),
                      y_lengths=torch.from_numpy(lc).repeat(Q)).view(Q, C).numpy()
    for i in range(Q):
        for j in range(C):
            x, y = xq[i, :lq[i]], xc[j, :lc[j]]
            exact = _dtw_sq(x, y, radius)
            assert dtw[i, j] == pytest.approx(exact, rel=1e-12)
            kim = ((x[0] - y[0]) ** 2).sum() + (0.0 if len(x) == len(y) == 1 else ((x[-1] - y[-1]) ** 2).sum())
            assert kim * (1 - 1e-12) <= bounds[i, j] <= exact * (1 + 1e-12)
            assert bounds[i, j] <= _bound_reference(x, y, radius) * (1 + 1e-12)
    # one length per side (N != M): the windows are the band's, the bound the reference's
    uniform = lower_bound_matrix(torch.from_numpy(xq[:, :11]), torch.full((Q,), 11), torch.from_numpy(xc[:, :16]),
                                 torch.full((C,), 16), radius).numpy()
    reference = np.array([[_bound_reference(xq[i, :11], xc[j, :16], radius) for j in range(C)] for i in range(Q)])
    np.testing.assert_allclose(uniform, reference, rtol=1e-12)
    assert (uniform <= np.array([[_dtw_sq(xq[i, :11], xc[j, :16], radius) for j in range(C)]
                                 for i in range(Q)]) * (1 + 1e-12)).all()


@pytest.mark.parametrize("name,n_train,n_test,radius", [
    ("ArrowHead", 36, 30, None), ("ArrowHead", 36, 30, 5), ("ArrowHead", 36, 30, 25),
    ("ItalyPowerDemand", 67, 100, None), ("ItalyPowerDemand", 67, 100, 2), ("GunPoint", 50, 30, 15),
])
def test_search_bounds_are_below_the_dtw_on_ucr_data(name, n_train, n_test, radius):
    """On real series, float64 and float32: every bound <= the squared DTW (float64 exactly; float32
    within the search's rounding margin), at least tslearn's LB_Keogh² in both directions and LB_Kim
    (the bound dominates them), and tight enough to matter (a mean ratio bound / DTW reported)."""
    X_train, X_test = _ucr(name, n_train, n_test)
    xq, xc = torch.from_numpy(X_test), torch.from_numpy(X_train)
    lq, lc = torch.full((len(xq),), xq.shape[1]), torch.full((len(xc),), xc.shape[1])
    bounds = lower_bound_matrix(xq, lq, xc, lc, radius).numpy()
    dtw = st.cdist_soft_dtw(xq, xc, gamma=0.0, bandwidth=radius).numpy()
    assert (bounds <= dtw * (1 + 1e-12)).all()
    r = xq.shape[1] if radius is None else radius
    for i in range(0, len(X_test), 7):
        for j in range(0, len(X_train), 5):
            q, c = X_test[i, :, 0], X_train[j, :, 0]
            keogh = max(tslearn_metrics.lb_keogh(q, c, radius=r), tslearn_metrics.lb_keogh(c, q, radius=r)) ** 2
            kim = (q[0] - c[0]) ** 2 + (q[-1] - c[-1]) ** 2
            assert bounds[i, j] >= max(keogh, kim) * (1 - 1e-12)
    assert (bounds / dtw).mean() > (0.1 if radius is None else 0.3)
    bounds32 = lower_bound_matrix(xq.float(), lq, xc.float(), lc, radius).numpy()
    dtw32 = st.cdist_soft_dtw(xq.float(), xc.float(), gamma=0.0, bandwidth=radius).numpy()
    assert (bounds32 <= dtw32 * (1 + 1e-4)).all()
