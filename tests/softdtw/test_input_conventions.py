"""The functional API's inputs besides tensors, and the guards against misread shapes:
numpy / lists / unequal lengths / NaN padding read as tslearn reads them (checked against tslearn
itself and against the tensor API), argument types (TypeError), the loss modules' 2-D input, aeon's
layout given to tslearn-layout functions, and gamma against the compute dtype's range."""
import itertools
import math
import warnings

import numpy as np
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import _reference as ref

tslearn_metrics = pytest.importorskip("tslearn.metrics", reason="tslearn is a test dependency (pip install tslearn)")


def random_series(rng, length, d=None):
    return rng.standard_normal(length) if d is None else rng.standard_normal((length, d))


# --- numpy and lists, against tslearn ------------------------------------------------------------
@pytest.mark.parametrize("d", [None, 1, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numpy_pair_matches_tslearn(d, dtype):
    rng = np.random.default_rng(0)
    a, b = random_series(rng, 17, d).astype(dtype), random_series(rng, 12, d).astype(dtype)
    ours = st.soft_dtw(a, b, gamma=0.3)
    assert isinstance(ours, np.generic) and ours.dtype == dtype  # numpy in, numpy out, the input's precision
    theirs = tslearn_metrics.soft_dtw(a.astype(np.float64), b.astype(np.float64), gamma=0.3)
    assert float(ours) == pytest.approx(theirs, rel=1e-10 if dtype == np.float64 else 1e-5)
    assert float(st.soft_dtw(a.tolist(), b.tolist(), gamma=0.3)) == pytest.approx(theirs, rel=1e-10)


def test_numpy_alignment_matches_tslearn():
    rng = np.random.default_rng(1)
    a, b = random_series(rng, 9, 2), random_series(rng, 11, 2)
    E, value = st.soft_dtw_alignment(a, b, gamma=0.5)
    E_theirs, value_theirs = tslearn_metrics.soft_dtw_alignment(a, b, gamma=0.5)
    assert isinstance(E, np.ndarray) and E.shape == (9, 11)
    np.testing.assert_allclose(E, E_theirs, rtol=1e-9, atol=1e-12)
    assert float(value) == pytest.approx(value_theirs, rel=1e-10)


def test_trailing_nan_is_padding_as_in_tslearn():
    rng = np.random.default_rng(2)
    a, b = random_series(rng, 10, 2), random_series(rng, 8, 2)
    padded = np.vstack([a, np.full((5, 2), np.nan)])
    theirs = tslearn_metrics.soft_dtw(padded, b, gamma=1.0)  # tslearn drops the trailing NaN
    assert float(st.soft_dtw(padded, b)) == pytest.approx(theirs, rel=1e-12)
    assert float(st.soft_dtw(padded, b)) == float(st.soft_dtw(a, b))
    inside = padded.copy()
    inside[3, 0] = np.nan
    with pytest.raises(ValueError, match="soft_dtw: x holds NaN inside the series"):
        st.soft_dtw(inside, b)


def test_batches_of_unequal_lengths_equal_each_pair_alone():
    rng = np.random.default_rng(3)
    xs = [random_series(rng, n, 2) for n in (5, 9, 7)]
    ys = [random_series(rng, m, 2) for m in (8, 4, 6)]
    ours = st.soft_dtw(xs, ys, gamma=0.7)
    assert isinstance(ours, np.ndarray) and ours.shape == (3,)
    for i in range(3):
        assert ours[i] == float(st.soft_dtw(torch.from_numpy(xs[i]), torch.from_numpy(ys[i]), gamma=0.7))
        assert ours[i] == pytest.approx(tslearn_metrics.soft_dtw(xs[i], ys[i], gamma=0.7), rel=1e-10)
    # The same batch NaN-padded, tslearn's dataset format.
    X = np.full((3, 9, 2), np.nan)
    Y = np.full((3, 8, 2), np.nan)
    for i in range(3):
        X[i, : len(xs[i])] = xs[i]
        Y[i, : len(ys[i])] = ys[i]
    np.testing.assert_array_equal(st.soft_dtw(X, Y, gamma=0.7), ours)


def test_cdist_on_lists_matches_tslearn():
    rng = np.random.default_rng(4)
    A = [random_series(rng, n, 1) for n in (6, 10, 8, 12)]
    B = [random_series(rng, m, 1) for m in (7, 9)]
    ours = st.cdist_soft_dtw(A, B, gamma=0.4)
    theirs = tslearn_metrics.cdist_soft_dtw(tslearn_dataset(A), tslearn_dataset(B), gamma=0.4)
    assert isinstance(ours, np.ndarray) and ours.shape == (4, 2)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)
    # (n, T) numpy arrays are n univariate series, as in tslearn.
    U = rng.standard_normal((5, 20))
    np.testing.assert_allclose(st.cdist_soft_dtw(U, gamma=0.4), tslearn_metrics.cdist_soft_dtw(U, gamma=0.4),
                               rtol=1e-10)
    normalized = st.cdist_soft_dtw(U, gamma=0.4, normalize=True)
    np.testing.assert_allclose(normalized, tslearn_metrics.cdist_soft_dtw_normalized(U, gamma=0.4), rtol=1e-9,
                               atol=1e-10)


def tslearn_dataset(series):
    from tslearn.utils import to_time_series_dataset
    return to_time_series_dataset(series)


def test_cost_functions_take_numpy():
    rng = np.random.default_rng(5)
    D = rng.random((2, 6, 5))
    np.testing.assert_array_equal(st.soft_dtw_from_cost(D, gamma=0.2), st.soft_dtw_from_cost(torch.from_numpy(D),
                                                                                              gamma=0.2).numpy())
    E, values = st.soft_dtw_alignment_from_cost(D[0])
    assert isinstance(E, np.ndarray) and E.shape == (6, 5) and E[0, 0] == pytest.approx(1.0)
    x, y = rng.random((2, 6, 3)), rng.random((2, 5, 3))
    np.testing.assert_allclose(st.pairwise_cost(x, y), ((x[:, :, None] - y[:, None]) ** 2).sum(-1), rtol=1e-12)
    loss, shape, temporal = st.dilate(x, y, gamma=0.1)
    assert all(isinstance(t, np.ndarray) and t.shape == (2,) for t in (loss, shape, temporal))
    assert np.array_equal(st.soft_dtw_sharp(x, y), st.soft_dtw_sharp(torch.from_numpy(x), torch.from_numpy(y)).numpy())


def test_single_series_and_batch_do_not_mix():
    with pytest.raises(ValueError, match="soft_dtw: expected x and y both single series .* or both batches"):
        st.soft_dtw(np.zeros((5, 2)), np.zeros((3, 5, 2)))


# --- argument types --------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [st.soft_dtw, st.soft_dtw_sharp, st.soft_dtw_alignment])
def test_argument_types(fn):
    name = fn.__name__
    x, y = torch.randn(2, 6, 2, dtype=torch.float64), torch.randn(2, 5, 2, dtype=torch.float64)
    with pytest.raises(TypeError, match=f"{name}: expected bandwidth to be an int or None, got float 2.0"):
        fn(x, y, bandwidth=2.0)
    with pytest.raises(TypeError, match=f"{name}: expected gamma to be a float or a tensor, got str"):
        fn(x, y, gamma="1")
    with pytest.raises(TypeError, match=f"{name}: expected x_lengths to be an integer tensor, a list of ints"):
        fn(x, y, x_lengths=[6.0, 3.0])
    # Lists of lengths and numpy integers are read as what they say.
    as_list = fn(x, y, x_lengths=[6, 3], bandwidth=np.int64(2))
    as_tensor = fn(x, y, x_lengths=torch.tensor([6, 3]), bandwidth=2)
    for a, b in zip(as_list if isinstance(as_list, tuple) else (as_list,),
                    as_tensor if isinstance(as_tensor, tuple) else (as_tensor,)):
        assert torch.equal(a, b)


def test_wrong_element_types_are_type_errors():
    with pytest.raises(TypeError, match="soft_dtw: expected x to be numeric"):
        st.soft_dtw(np.array(["a", "b"]), np.array(["c"]))
    with pytest.raises(TypeError, match="soft_dtw: expected x and y to have the same dtype"):
        st.soft_dtw(torch.randn(1, 3, 1), torch.randn(1, 3, 1, dtype=torch.float64))


# --- the loss modules' 2-D input ---------------------------------------------------------------------
@pytest.mark.parametrize("module", [st.SoftDTW, st.SharpSoftDTW, st.DILATELoss])
def test_loss_modules_refuse_ambiguous_2d_input(module):
    pred, target = torch.randn(8, 30, dtype=torch.float64), torch.randn(8, 30, dtype=torch.float64)
    with pytest.raises(ValueError) as info:
        module()(pred, target)
    message = str(info.value)
    assert message.startswith(module.__name__ + ": got 2-D input")
    assert "a batch of univariate series (batch, length)" in message and "one unbatched pair" in message
    # Each explicit reading equals its 3-D (or unbatched functional) form.
    univariate = module(input_2d="univariate", reduction="none")(pred, target)
    assert torch.equal(univariate, module(reduction="none")(pred.unsqueeze(-1), target.unsqueeze(-1)))
    assert univariate.shape == (8,)
    pair = module(input_2d="pair", reduction="none")(pred, target)
    assert torch.equal(pair, module(reduction="none")(pred.unsqueeze(0), target.unsqueeze(0)).squeeze(0))
    with pytest.raises(ValueError, match=module.__name__ + r": input_2d must be one of \(None, 'univariate', 'pair'\)"):
        module(input_2d="batch")


def test_input_2d_in_torchscript():
    pred, target = torch.randn(4, 12), torch.randn(4, 12)
    module = st.SoftDTW(input_2d="univariate")
    scripted = torch.jit.script(module)
    assert torch.equal(scripted(pred, target), module(pred, target))
    with pytest.raises(Exception, match="SoftDTW: got 2-D input"):
        torch.jit.script(st.SoftDTW())(pred, target)


# --- aeon's layout where tslearn's is read -------------------------------------------------------------
def test_aeon_layout_is_caught():
    X = np.random.default_rng(6).standard_normal((10, 1, 40))  # aeon: 10 univariate cases of length 40
    for call in (lambda: st.softdtw_barycenter(X, max_iter=2), lambda: st.SoftDTWKMeans(2, max_iter=1).fit(X),
                 lambda: st.cdist_soft_dtw(X)):
        with pytest.raises(ValueError, match="reads as series of length 1 with 40 features; that looks like aeon's "
                                             r"layout \(n_cases, n_channels, n_timepoints\)"):
            call()
    multivariate = np.random.default_rng(7).standard_normal((6, 3, 40))  # aeon: 3 channels of length 40
    with pytest.warns(UserWarning, match="reads as series of length 3 with 40 features; if it is in aeon's layout"):
        st.softdtw_barycenter(multivariate, max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st.softdtw_barycenter(multivariate.transpose(0, 2, 1), max_iter=1)  # the right layout: no warning


# --- gamma against the compute dtype's range -----------------------------------------------------------
def brute_force_dtw(D):
    """min over every monotone path of the summed cost (hard DTW), in float64."""
    n, m = D.shape
    best = math.inf
    for moves in itertools.product(range(3), repeat=n + m):
        i = j = 0
        total = float(D[0, 0])
        for move in moves:
            if i == n - 1 and j == m - 1:
                break
            di, dj = ((1, 0), (0, 1), (1, 1))[move]
            i, j = i + di, j + dj
            if i >= n or j >= m:
                total = math.inf
                break
            total += float(D[i, j])
        if i == n - 1 and j == m - 1:
            best = min(best, total)
    return best


@pytest.mark.parametrize("fused", [True, False])
def test_gamma_outside_float32_range_is_refused(fused):
    x, y = torch.randn(2, 5, 2), torch.randn(2, 4, 2)
    for gamma in (1e-39, 1e39, 1e-300):
        with pytest.raises(ValueError, match=r"soft_dtw: gamma must be in \[1.17549e-38, 8.50706e\+37\] or 0 "
                                             r"for Float input"):
            st.soft_dtw(x, y, gamma=gamma, fused=fused)
        with pytest.raises(ValueError, match=r"soft_dtw: gamma must be in \[1.1754943508222875e-38"):
            st.soft_dtw(x, y, gamma=torch.tensor(gamma, dtype=torch.float64), fused=fused)
    # float64 has the wider range: 1e-39 is a normal float64.
    assert torch.isfinite(st.soft_dtw(x.double(), y.double(), gamma=1e-39, fused=fused)).all()
    with pytest.raises(ValueError, match=r"soft_dtw: gamma must be in \[2.22507e-308, 4.49423e\+307\] or 0 for Double"):
        st.soft_dtw(x.double(), y.double(), gamma=1e-310, fused=fused)


def test_gamma_at_the_edges_of_the_float32_range():
    """Inside the range float32 is right at both edges: hard DTW (brute force) at the smallest gamma,
    the float64 computation at the largest."""
    x, y = ref.random_pairs(1, 4, 3, 1, seed=8)
    D = ((x[0, :, None] - y[0, None]) ** 2).sum(-1).double()
    tiny = st.soft_dtw(x.float(), y.float(), gamma=2e-38)
    assert tiny.item() == pytest.approx(brute_force_dtw(D), rel=1e-6)
    huge = st.soft_dtw(x.float(), y.float(), gamma=8e37)
    reference = st.soft_dtw(x.double(), y.double(), gamma=8e37)
    assert math.isfinite(huge.item()) and huge.item() == pytest.approx(reference.item(), rel=1e-6)


# --- tslearn's layout where aeon's is read (the ROCKET estimators) ---------------------------------------
def test_tslearn_layout_is_caught_by_the_rocket_estimators():
    from softdtw_torch.rocket import MiniRocket, Rocket, RocketClassifier

    X = np.random.default_rng(9).standard_normal((10, 40, 1))  # tslearn: 10 univariate series of length 40
    y = np.arange(10) % 2
    for call in (lambda: Rocket(n_kernels=10, random_state=0).fit(X), lambda: MiniRocket(random_state=0).fit(X),
                 lambda: RocketClassifier(n_kernels=10, random_state=0).fit(X, y)):
        with pytest.raises(ValueError, match=r"reads as 40 channels of 1 time point; that looks like tslearn's layout"):
            call()
    with pytest.warns(UserWarning, match="reads as 40 channels of 3 time points; if it is in tslearn's layout"):
        Rocket(n_kernels=10, random_state=0).fit(np.random.default_rng(10).standard_normal((6, 40, 3)))
