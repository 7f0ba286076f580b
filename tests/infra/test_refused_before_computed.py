"""Exact or refused, at the edges: every case gives the exact result or an error naming the public
function called, before anything is computed.

Five classes of edges (issue "Refused before it is computed"):

1. **Devices, meta included.** A meta tensor holds no data. Mixed with tensors that do, it sends
   the call to the fake kernel, which returned uninitialised memory as the result. Now the
   optional tensors (lengths, gradients, weights, tangents) are refused by name, and so are meta
   inputs to the estimators. An all-meta call stays shape inference.
2. **Integer extremes.** ``bandwidth=2**63 - 1`` is the unbanded problem (the band's int64
   arithmetic overflowed to +inf).
3. **Float extremes.** The result is right where the true value is representable, and ±inf with
   the right sign only where it is not. References are float64 and written from the math, here:
   the soft-DTW recursion, the squared distance as a sum of squared differences, the cosine of the
   vectors divided by their largest entry.
4. **Types.** A TypeError names the function and the parameter: strings are not numbers, bool is
   not an int (seeds, chunk sizes), arrays are not tensors for a loss module.
5. **Sizes beyond memory.** torch.OutOfMemoryError names the function, the size asked, the size
   available and the options that fit, before any allocation. The real sizes of the issue
   (200,000 x 200,000 all-pairs matrices, 10**10 ROCKET kernels) are refused on this machine
   whatever its memory. ``set_memory_limit`` makes the same refusal testable at small sizes.
"""
import math
import re
import time

import numpy as np
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import rocket

OPS = torch.ops.softdtw_torch
X = torch.randn(2, 5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
Y = torch.randn(2, 6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
D = torch.rand(2, 5, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
SERIES = np.random.default_rng(0).normal(size=(6, 1, 20))


def _meta(*values):
    return torch.tensor(list(values), device="meta")


def _fitted(estimator):
    return estimator.fit(SERIES)


def _raises(who, error, pattern, call):
    with pytest.raises(error) as caught:
        call()
    assert type(caught.value) is error, f"{type(caught.value).__name__}: {caught.value}"
    message = str(caught.value)
    assert message.startswith(f"{who}: ") or message.startswith(f"{who}."), message
    assert re.search(pattern, message), message
    return message


# -- 1. devices: meta among data ----------------------------------------------------------------

META_CASES = [
    ("soft_dtw", lambda: st.soft_dtw(X, Y, x_lengths=_meta(3, 4)), "x_lengths"),
    ("soft_dtw", lambda: st.soft_dtw(X, Y, y_lengths=_meta(3, 4), normalize=True), "y_lengths"),
    ("soft_dtw", lambda: st.soft_dtw(X, Y, x_lengths=_meta(3, 4), cost="l1"), "x_lengths"),
    ("soft_dtw", lambda: st.soft_dtw(X, Y, x_lengths=_meta(3, 4), checkpoint=True), "x_lengths"),
    ("soft_dtw_from_cost", lambda: st.soft_dtw_from_cost(D, x_lengths=_meta(3, 4)), "x_lengths"),
    ("soft_dtw_alignment", lambda: st.soft_dtw_alignment(X, Y, x_lengths=_meta(3, 4)), "x_lengths"),
    ("soft_dtw_alignment_from_cost", lambda: st.soft_dtw_alignment_from_cost(D, y_lengths=_meta(3, 4)),
     "y_lengths"),
    ("soft_dtw_sharp", lambda: st.soft_dtw_sharp(X, Y, x_lengths=_meta(3, 4)), "x_lengths"),
    ("soft_dtw_sharp_from_cost", lambda: st.soft_dtw_sharp_from_cost(D, x_lengths=_meta(3, 4)), "x_lengths"),
    ("dilate", lambda: st.dilate(X, Y, prediction_lengths=_meta(3, 4)), "prediction_lengths"),
    ("SoftDTW", lambda: st.SoftDTW()(X, Y, x_lengths=_meta(3, 4)), "x_lengths"),
    ("MiniRocket.transform", lambda: _fitted(rocket.MiniRocket(n_kernels=84, random_state=0)).transform(
        torch.tensor(SERIES), x_lengths=_meta(*[20] * 6)), "x_lengths"),
    ("HydraTransformer.transform", lambda: _fitted(rocket.HydraTransformer(n_kernels=2, n_groups=2,
                                                                          random_state=0)).transform(
        torch.tensor(SERIES, dtype=torch.float32), x_lengths=_meta(*[20] * 6)), "x_lengths"),
    ("MiniRocket.transform", lambda: _fitted(rocket.MiniRocket(n_kernels=84, random_state=0)).transform(
        torch.empty(6, 1, 20, device="meta")), "X"),
    # The operators called directly, the internal ones included (their messages name the public op)
    ("soft_dtw_from_cost", lambda: OPS.soft_dtw_from_cost(D, 1.0, None, _meta(3, 4)), "x_lengths"),
    ("soft_dtw_from_cost", lambda: OPS._soft_dtw_from_cost_backward(
        torch.ones(2, device="meta"), D, torch.empty(0), 1.0, None, None, None, None), "grad"),
    ("soft_dtw", lambda: OPS._soft_dtw_fused_backward(
        torch.ones(2, device="meta"), X, Y, torch.empty(0), torch.empty(0), 1.0, None, None, None, None, "table"),
     "grad"),
    ("soft_dtw", lambda: OPS._soft_dtw_fused_value_and_grad(
        X, Y, torch.ones(2, device="meta"), 1.0, None, None, None, None), "weights"),
    ("soft_dtw_from_cost", lambda: OPS._soft_dtw_from_cost_jvp(
        D, torch.ones(2, 5, 6, device="meta"), 1.0, None, None, None, None), "D_tangent"),
    ("soft_dtw", lambda: OPS._soft_dtw_fused_jvp(
        X, Y, torch.ones(2, 5, 3, device="meta"), None, 1.0, None, None, None, None), "x_tangent"),
    ("soft_dtw", lambda: OPS._soft_dtw_fused_forward(X, Y, 1.0, None, None, _meta(3, 4), None, "nothing"), "x_lengths"),
    ("dtw_path", lambda: OPS._dtw_path(X, Y, None, None, None, _meta(3, 4)), "y_lengths"),
]


@pytest.mark.parametrize("who, call, argument", META_CASES,
                         ids=[f"{w}-{a}-{i}" for i, (w, _, a) in enumerate(META_CASES)])
def test_meta_tensors_among_data_are_refused_by_name(who, call, argument):
    _raises(who, ValueError, rf"expected {argument} on (cpu|a device that holds data).*got meta", call)


def test_an_all_meta_call_is_shape_inference():
    out = st.soft_dtw(X.to("meta"), Y.to("meta"), x_lengths=_meta(3, 4))
    assert out.device.type == "meta" and out.shape == (2,)
    grads = OPS._soft_dtw_fused_backward(torch.ones(2, device="meta"), X.to("meta"), Y.to("meta"),
                                         torch.empty(0, device="meta"), torch.empty(0, device="meta"), 1.0, None,
                                         None, None, None, "table")
    assert [g.shape for g in grads] == [X.shape, Y.shape]


# -- 2. integer extremes --------------------------------------------------------------------------

BANDED = [
    ("soft_dtw", lambda b: st.soft_dtw(X, Y, bandwidth=b)),
    ("soft_dtw normalize", lambda b: st.soft_dtw(X, Y, bandwidth=b, normalize=True)),
    ("soft_dtw unfused", lambda b: st.soft_dtw(X, Y, bandwidth=b, fused=False)),
    ("soft_dtw ragged", lambda b: st.soft_dtw(X, Y, bandwidth=b, x_lengths=torch.tensor([3, 5]))),
    ("soft_dtw_from_cost", lambda b: st.soft_dtw_from_cost(D, bandwidth=b)),
    ("soft_dtw_alignment", lambda b: st.soft_dtw_alignment(X, Y, bandwidth=b)),
    ("soft_dtw_sharp", lambda b: st.soft_dtw_sharp(X, Y, bandwidth=b, normalize=True)),
    ("dilate", lambda b: st.dilate(X, Y, bandwidth=b)),
    ("dtw", lambda b: st.dtw(X, Y, bandwidth=b)),
    ("dtw_path", lambda b: st.dtw_path(X[0], Y[0], bandwidth=b)),
    ("cdist_soft_dtw", lambda b: st.cdist_soft_dtw(X, Y, bandwidth=b)),
    ("cdist_dtw", lambda b: st.cdist_dtw(X, Y, bandwidth=b)),
    ("SoftDTW", lambda b: st.SoftDTW(bandwidth=b)(X, Y)),
    ("checkpointed gradient", lambda b: _checkpointed_gradient(X.clone().requires_grad_(), Y, b)),
    ("KNeighborsTimeSeriesClassifier", lambda b: st.KNeighborsTimeSeriesClassifier(
        n_neighbors=1, metric="dtw", metric_params={"sakoe_chiba_radius": b}).fit(X, [0, 1]).predict_proba(Y)),
]


def _checkpointed_gradient(x, y, bandwidth):
    return torch.autograd.grad(st.soft_dtw(x, y, bandwidth=bandwidth, checkpoint=True).sum(), x)[0]


def _same(a, b):
    if isinstance(a, (tuple, list)):
        return all(_same(u, v) for u, v in zip(a, b))
    a, b = torch.as_tensor(np.asarray(a) if not isinstance(a, torch.Tensor) else a), \
        torch.as_tensor(np.asarray(b) if not isinstance(b, torch.Tensor) else b)
    return torch.equal(a, b)


@pytest.mark.parametrize("name, call", BANDED, ids=[n for n, _ in BANDED])
@pytest.mark.parametrize("bandwidth", [6, 2**31, 2**62, 2**63 - 1])
def test_a_band_wider_than_the_series_is_no_band(name, call, bandwidth):
    assert _same(call(bandwidth), call(None)), name


# -- 3. float extremes ----------------------------------------------------------------------------

def _soft_dtw_reference(cost: np.ndarray, gamma: float) -> float:
    """The soft-DTW recursion in float64, from its definition (soft minimum by log-sum-exp)."""
    n, m = cost.shape
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            previous = np.array([R[i - 1, j - 1], R[i - 1, j], R[i, j - 1]])
            low = previous.min()
            if gamma == 0 or low == np.inf:  # hard minimum, or no admissible predecessor
                soft = low
            else:
                soft = low - gamma * np.log(np.exp(-(previous - low) / gamma).sum())
            R[i, j] = cost[i - 1, j - 1] + soft
    return R[n, m]


def _squared_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)


def test_the_divergence_at_a_huge_gamma_is_in_range_in_float32():
    # Its self terms are near -3.7e38 (beyond float32) while the divergence is near 3.8e36
    x = X.float()[:1]
    y = Y.float()[:1]
    gamma = 5e37
    xy, xx, yy = (_soft_dtw_reference(_squared_distances(a[0].double().numpy(), b[0].double().numpy()), gamma)
                  for a, b in ((x, y), (x, x), (y, y)))
    expected = xy - 0.5 * xx - 0.5 * yy
    assert abs(yy) > torch.finfo(torch.float32).max or abs(xx) > 1e38  # the terms are at the edge
    for fused in (None, False):
        got = st.soft_dtw(x, y, gamma=gamma, normalize=True, fused=fused)
        assert torch.isfinite(got).all()
        assert got.item() == pytest.approx(expected, rel=1e-4)
    sharp = st.soft_dtw_sharp(x, y, gamma=gamma, normalize=True)
    assert torch.isfinite(sharp).all()


def _log_warping_paths(n: int, m: int) -> float:
    """ln of the number of warping paths of an n x m table (the Delannoy number, exact integers)."""
    return math.log(sum(math.comb(n - 1, k) * math.comb(m - 1, k) * 2**k for k in range(min(n, m))))


FROM_COST_CALLS = [
    ("soft_dtw_from_cost", lambda D: st.soft_dtw_from_cost(D, gamma=1.0)),
    ("soft_dtw_alignment_from_cost", lambda D: st.soft_dtw_alignment_from_cost(D, gamma=1.0)),
    ("soft_dtw_sharp_from_cost", lambda D: st.soft_dtw_sharp_from_cost(D, gamma=1.0)),
]


@pytest.mark.parametrize("who, call", FROM_COST_CALLS, ids=[w for w, _ in FROM_COST_CALLS])
def test_costs_whose_path_sums_leave_float32_are_refused_not_signed_wrong(who, call):
    # The true value is about -1.5e39, below float32's range: it came out +inf, the "no admissible
    # path" marker. Every path sum of these costs lies beyond float32, so float32 refuses, by name.
    costs = np.full((3, 3), -3e38)
    expected = _soft_dtw_reference(costs, 1.0)
    assert expected < -1e39
    _raises(who, ValueError, r"D's finite costs reach 3e\+38 in magnitude.*float32's largest value.*"
            r"pass D as float64 \(D.double\(\)\)", lambda: call(torch.tensor(costs[None], dtype=torch.float32)))
    # float64 holds the value: exact there.
    assert st.soft_dtw_from_cost(torch.tensor(costs[None]), gamma=1.0).item() == pytest.approx(expected, rel=1e-12)


def test_costs_that_overflow_and_come_back_are_refused():
    # +3e38 then -3e38 along the diagonal: the true value (about 0) is representable, but partial
    # sums are not, and +inf there reads as a forbidden cell. Refused in float32, exact in float64.
    costs = np.array([[3e38, 0.0, 0.0], [0.0, -3e38, 0.0], [0.0, 0.0, 3e38]])
    costs[0, 1] = costs[1, 0] = costs[1, 2] = costs[2, 1] = 3e38
    expected = _soft_dtw_reference(costs, 1.0)
    assert abs(expected) < 1e39
    _raises("soft_dtw_from_cost", ValueError, r"could reach", lambda: st.soft_dtw_from_cost(
        torch.tensor(costs[None], dtype=torch.float32), gamma=1.0))
    assert st.soft_dtw_from_cost(torch.tensor(costs[None]), gamma=1.0).item() == pytest.approx(expected, rel=1e-12)


def test_costs_beyond_float64_paths_are_refused_and_the_internal_ops_refuse_them_too():
    costs = torch.full((1, 3, 3), -1e308, dtype=torch.float64)
    _raises("soft_dtw_from_cost", ValueError, r"reach 1e\+308 in magnitude.*float64's largest value.*scale D down$",
            lambda: st.soft_dtw_from_cost(costs, gamma=1.0))
    # The ops themselves (not only the Python functions) refuse: backward, jvp and hvp alike.
    grad = torch.ones(1, dtype=torch.float64)
    for call in (lambda: OPS._soft_dtw_from_cost_forward(costs, 1.0, None, None, None, None, True),
                 lambda: OPS._soft_dtw_from_cost_backward(grad, costs, torch.empty(0, dtype=torch.float64), 1.0,
                                                          None, None, None, None),
                 lambda: OPS._soft_dtw_from_cost_jvp(costs, costs, 1.0, None, None, None, None),
                 lambda: OPS._soft_dtw_from_cost_hvp(grad, None, costs, costs, 1.0, None, None, None, None, True)):
        with pytest.raises(ValueError, match=r"in magnitude.*float64's largest value"):
            call()


def test_forbidden_cells_are_not_counted_as_huge_costs():
    # +inf marks a forbidden cell: the range check looks at the finite costs only.
    costs = np.random.default_rng(3).uniform(-1.0, 1.0, size=(4, 5))
    costs[0, 3] = costs[2, 0] = np.inf
    got = st.soft_dtw_from_cost(torch.tensor(costs[None], dtype=torch.float32), gamma=0.5)
    assert got.item() == pytest.approx(_soft_dtw_reference(costs, 0.5), rel=1e-6)
    # Every cell forbidden: no admissible path, +inf (not a refusal).
    assert st.soft_dtw_from_cost(torch.full((1, 3, 4), math.inf), gamma=0.5).item() == math.inf


def test_a_gamma_whose_soft_minimum_leaves_float32_is_refused():
    # At gamma = 8e37 the soft minimum over the warping paths of two 100-point series falls
    # gamma * ln(paths) = 1.4e40 below the cheapest path: beyond float32, refused by name;
    # float64 holds it and gives -gamma * ln(paths) to its rounding (the costs are negligible).
    x, y = torch.randn(1, 100, 2), torch.randn(1, 100, 2)
    expected = -8e37 * _log_warping_paths(100, 100)
    for fused in (None, False):
        _raises("soft_dtw", ValueError, r"gamma = 8e\+37 is too large for sequences of lengths 100 and 100 in float32"
                r".*compute in float64", lambda: st.soft_dtw(x, y, gamma=8e37, fused=fused))
        assert st.soft_dtw(x.double(), y.double(), gamma=8e37, fused=fused).item() == pytest.approx(expected, rel=1e-9)
    # Short series at the same gamma stay in range (tests/softdtw/test_input_conventions.py checks
    # the value): the bound is the number of paths, not a step count.
    assert -8e37 * _log_warping_paths(4, 3) > -torch.finfo(torch.float32).max
    assert torch.isfinite(st.soft_dtw(x[:, :4].float(), y[:, :3].float(), gamma=8e37)).all()


def test_a_huge_gamma_scaling_changes_no_bit_of_the_everyday_divergence():
    # The scaled path (gamma > 2**32) against gamma below it, where nothing is scaled: the
    # divergence is homogeneous, so x and y doubled (D times 4) at 4 times gamma is 4 times it.
    x, y = X[:1], Y[:1]
    below = st.soft_dtw(x, y, gamma=2.0**31, normalize=True)
    above = st.soft_dtw(x * 2, y * 2, gamma=2.0**33, normalize=True)
    assert torch.equal(above, below * 4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_squared_distances_of_huge_values_are_exact_or_inf(dtype):
    big = 1e20 if dtype == torch.float32 else 200.0
    x = torch.tensor([[[big, big], [1.5 * big, 0.0]]], dtype=dtype)
    y = torch.tensor([[[big, big], [-big, big]]], dtype=dtype)
    got = st.pairwise_cost(x, y).double()
    expected = torch.from_numpy(_squared_distances(x[0].double().numpy(), y[0].double().numpy()))
    finite = expected <= torch.finfo(dtype).max
    assert not torch.isnan(got).any()
    torch.testing.assert_close(got[0][finite], expected[finite], rtol=2e-3 if dtype == torch.float16 else 1e-6,
                               atol=0)
    assert torch.isinf(got[0][~finite]).all() and (got[0][~finite] > 0).all()
    assert got[0, 0, 0] == 0  # x_0 = y_0: 0, not inf − inf


def test_squared_distances_beyond_float32_are_plus_inf():
    got = st.pairwise_cost(torch.full((1, 1, 1), 1e30), torch.full((1, 1, 1), -1e30))
    assert torch.equal(got, torch.full((1, 1, 1), math.inf))


def test_the_scaled_squared_distance_is_the_unscaled_one_bit_for_bit():
    # Power-of-two scaling commutes with rounding: everyday inputs give exactly what the
    # unscaled formula ||x||² + ||y||² − 2 x·y (clamped at 0) gives
    x = X.float() * 3.7
    y = Y.float() * 3.7
    unscaled = torch.baddbmm(x.pow(2).sum(-1).unsqueeze(2) + y.pow(2).sum(-1).unsqueeze(1), x, y.transpose(1, 2),
                             beta=1, alpha=-2).clamp_min(0)
    assert torch.equal(st.pairwise_cost(x, y), unscaled)


def test_the_cosine_cost_of_huge_vectors_is_their_cosine():
    x = X.float() * 1e20
    y = Y.float() * 1e20
    got = st.pairwise_cost(x, y, cost="cosine").double()
    a, b = X.numpy(), Y.numpy()
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    expected = torch.from_numpy(1 - np.einsum("bik,bjk->bij", a, b))
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
    zero = st.pairwise_cost(torch.zeros(1, 1, 2), torch.ones(1, 1, 2), cost="cosine")
    assert torch.equal(zero, torch.ones(1, 1, 1))  # a zero vector costs 1, as before


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_the_l1_cost_in_half_precision(dtype):
    x, y = X.to(dtype), Y.to(dtype)
    got = st.soft_dtw(x, y, cost="l1")
    expected = st.soft_dtw(x.float(), y.float(), cost="l1")
    assert got.dtype == dtype
    torch.testing.assert_close(got.float(), expected, rtol=1e-2, atol=0)


# -- 4. types -------------------------------------------------------------------------------------

TYPE_CASES = [
    ("soft_dtw", lambda: st.soft_dtw(X, Y, gamma="1.0"), "gamma"),
    ("soft_dtw", lambda: st.soft_dtw(X, Y, gamma=None), "gamma"),
    ("soft_dtw", lambda: st.soft_dtw(X, Y, bandwidth="2"), "bandwidth"),
    ("soft_dtw", lambda: st.soft_dtw(X, Y, bandwidth=True), "bandwidth"),
    ("soft_dtw", lambda: st.soft_dtw(X, Y, bandwidth=2.0), "bandwidth"),
    ("cdist_soft_dtw", lambda: st.cdist_soft_dtw(X, Y, chunk_size=2.5), "chunk_size"),
    ("cdist_soft_dtw", lambda: st.cdist_soft_dtw(X, Y, chunk_size=True), "chunk_size"),
    ("cdist_dtw", lambda: st.cdist_dtw(X, Y, chunk_size="8"), "chunk_size"),
    ("SoftDTW", lambda: st.SoftDTW()(X.numpy(), Y.numpy()), "x"),
    ("DILATELoss", lambda: st.DILATELoss()(X, Y.tolist()), "target"),
    ("soft_dtw", lambda: st.soft_dtw(X.to(torch.complex128), Y.to(torch.complex128)), "x"),
    ("MiniRocket", lambda: rocket.MiniRocket(random_state=True).fit(SERIES), "random_state"),
    ("MultiRocket", lambda: rocket.MultiRocket(random_state=np.bool_(False)).fit(SERIES), "random_state"),
    ("Rocket", lambda: rocket.Rocket(n_kernels=10, random_state=True).fit(SERIES), "random_state"),
    ("HydraTransformer", lambda: rocket.HydraTransformer(random_state=True).fit(SERIES), "random_state"),
    ("set_memory_limit", lambda: st.set_memory_limit(2.5e9), "nbytes"),
]


@pytest.mark.parametrize("who, call, parameter", TYPE_CASES,
                         ids=[f"{w}-{p}-{i}" for i, (w, _, p) in enumerate(TYPE_CASES)])
def test_types_are_refused_by_name(who, call, parameter):
    _raises(who, TypeError, rf"\b{parameter}\b", call)


VALUE_CASES = [
    # scikit-learn's words (its estimator checks match them), after the estimator's name
    ("Rocket", lambda: rocket.Rocket(n_kernels=10, random_state=0).fit(SERIES.astype(complex)),
     "Complex data not supported"),
    ("MiniRocket.fit", lambda: rocket.MiniRocket(random_state=0).fit(SERIES.astype(complex)),
     "Complex data not supported"),
    ("Rocket", lambda: rocket.Rocket(n_kernels=10, random_state=0).fit(SERIES.astype(str)),
     "not compatible with arrays of bytes/strings"),
    # an aeon kernels tuple of the wrong length is checked before any of its items is read
    ("Rocket.from_kernels", lambda: rocket.Rocket.from_kernels((np.zeros(3),)), "7-array kernels tuple"),
]


@pytest.mark.parametrize("who, call, pattern", VALUE_CASES, ids=[f"{w}-{p[:20]}" for w, _, p in VALUE_CASES])
def test_bad_values_are_refused_by_name(who, call, pattern):
    _raises(who, ValueError, pattern, call)


# -- 5. sizes beyond memory -----------------------------------------------------------------------

@pytest.fixture
def one_mebibyte():
    before = st.memory_limit()
    st.set_memory_limit(1 << 20)
    yield
    st.set_memory_limit(before)


def _refused(who, call, what):
    start = time.perf_counter()
    message = _raises(who, torch.OutOfMemoryError, rf"needs [0-9.]+ [KMGTPE]iB for {what}.*, but cpu has "
                      r"[0-9.]+ ([KMGTPE]iB|bytes) available", call)
    return message, time.perf_counter() - start


def test_a_table_beyond_the_limit_is_refused_with_its_remedies(one_mebibyte):
    # table 600 x 600 x 8 = 2.7 MiB (above 512 points the CPU keeps the table, not each pair's gradient)
    x = torch.randn(1, 600, 1, dtype=torch.float64, requires_grad=True)
    message, _ = _refused("soft_dtw", lambda: st.soft_dtw(x, x), "the DP table of 1 pairs of 600 x 600 cells")
    assert "torch.no_grad()" in message and "split the batch" in message and "set_memory_limit" in message
    assert "checkpoint=True" not in message  # on the CPU the checkpointed backward builds the table too
    with torch.no_grad():  # no table: computed
        assert torch.isfinite(st.soft_dtw(x, x)).all()
    value = st.soft_dtw(x, x, checkpoint=True)  # the CPU's checkpointed forward keeps nothing...
    _refused("soft_dtw", lambda: value.sum().backward(), "the DP table")  # ...its backward rebuilds the table
    assert st.soft_dtw(x[:, :300], x[:, :300], fused=True).requires_grad  # 0.7 MiB: fits


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request):
    # One thread packs a batch of one pair (the packed paths hold tables of their own); two do not
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


def test_dtw_path_names_the_remedy_that_fits_it(one_mebibyte, threads):
    x = torch.randn(600, 1, dtype=torch.float64)
    message, _ = _refused("dtw_path", lambda: st.dtw_path(x, x), "the DP table of 1 pairs of 600 x 600 cells")
    assert "fewer or shorter pairs" in message and "no_grad" not in message  # it always keeps its table
    assert st.dtw_path(x[:300], x[:300])[1] >= 0  # 0.7 MiB: fits


def test_second_order_tables_beyond_the_limit_are_refused(one_mebibyte, threads):
    x = torch.randn(1, 600, 1, dtype=torch.float64)
    ones = torch.ones(1, dtype=torch.float64)
    _refused("soft_dtw", lambda: OPS._soft_dtw_fused_hvp(ones, None, x, x, x, None, 1.0, None, None, None, None, True),
             r"the DP tables \(R and its tangent\) of 1 pairs of 600 x 600 cells")
    D = torch.rand(1, 600, 600, dtype=torch.float64)
    _refused("soft_dtw_from_cost", lambda: OPS._soft_dtw_from_cost_hvp(ones, None, D, D, 1.0, None, None, None, None,
                                                                       True), r"the DP tables")


def test_the_sizes_of_the_issue_are_refused_at_once():
    series = torch.zeros(200_000, 2, 1)
    cases = [
        ("cdist_soft_dtw", lambda: st.cdist_soft_dtw(series, series), "the 200000 x 200000 matrix"),
        ("cdist_dtw", lambda: st.cdist_dtw(series), "the 200000 x 200000 matrix"),
        ("soft_dtw", lambda: st.soft_dtw(torch.zeros(1, 200_000, 1, requires_grad=True), torch.zeros(1, 200_000, 1)),
         "the DP table"),
        ("dtw_path", lambda: st.dtw_path(torch.zeros(200_000, 1), torch.zeros(200_000, 1)), "the DP table"),
        ("Rocket", lambda: rocket.Rocket(n_kernels=10**10).fit(SERIES), "the fields of 10000000000 kernels"),
        ("HydraTransformer", lambda: rocket.HydraTransformer(n_kernels=10**7).fit(SERIES), "the weights"),
        ("MultiRocket", lambda: rocket.MultiRocket(n_kernels=10**12).fit(SERIES), "the quantiles and biases"),
        ("MiniRocket", lambda: rocket.MiniRocket(n_kernels=10**12).fit(SERIES), "the quantiles and biases"),
    ]
    for who, call, what in cases:
        _, seconds = _refused(who, call, what)
        assert seconds < 30, (who, seconds)  # a hang guard, not a timing: measured well under a second


def test_features_beyond_the_limit_are_refused(one_mebibyte):
    transformer = rocket.MiniRocket(n_kernels=840, random_state=0).fit(SERIES)
    many = np.zeros((400, 1, 20))  # 400 cases x 840 features x 4 bytes = 1.3 MiB
    _refused("MiniRocket.transform", lambda: transformer.transform(many), "the features of 400 cases")
    assert transformer.transform(many[:100]).shape == (100, 840)


def test_the_limit_is_read_back_and_reset():
    before = st.memory_limit()
    try:
        st.set_memory_limit(123456789)
        assert st.memory_limit() == 123456789
        st.set_memory_limit(None)
        assert st.memory_limit() is None
        with pytest.raises(ValueError, match=r"^set_memory_limit: expected nbytes >= 1 or None, got 0$"):
            st.set_memory_limit(0)
    finally:
        st.set_memory_limit(before)
