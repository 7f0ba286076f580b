"""Soft-DTW barycenters and k-means: objective and gradient, the L-BFGS against scipy's L-BFGS-B
(tslearn's solver), batched = alone, variable lengths, GunPoint against tslearn, k-means on synthetic
and real data, input conventions and errors."""
import math
import os
import warnings

import numpy as np
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import barycenter as bc
from softdtw_torch.barycenter import SoftDTWKMeans, softdtw_barycenter
from softdtw_torch.datasets import load_gunpoint, load_ts
from conftest import AEON_DATASETS, DEVICES, needs_aeon_data


def random_walks(n, T, d, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, T, d, generator=g, dtype=dtype).cumsum(1) / math.sqrt(T)


def objective_by_loop(z, X, gamma, weights=None, lengths=None, normalize=False, bandwidth=None):
    """Σ_i w_i sdtw(z, x_i[:l_i]), one soft_dtw call per series (the definition, no batching)."""
    total = 0.0
    for i in range(X.shape[0]):
        l = X.shape[1] if lengths is None else int(lengths[i])
        w = 1.0 if weights is None else float(weights[i])
        total += w * st.soft_dtw(z, X[i, :l], gamma=gamma, normalize=normalize, bandwidth=bandwidth).item()
    return total


def gunpoint_classes():
    X, y = load_gunpoint("train")
    X = X.transpose(0, 2, 1).copy()  # (n, 150, 1)
    return {c: X[y == c] for c in ("1", "2")}


# ------------------------------------------------------------------------------------------------
# Objective and gradient
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("bandwidth", [None, 3])
def test_objective_value_and_gradient(normalize, bandwidth):
    X = random_walks(4, 12, 2, seed=1)
    lengths = torch.tensor([12, 9, 7, 12])
    w = torch.tensor([0.5, 1.0, 2.0, 0.25], dtype=torch.float64)
    obj = bc._Objective(X, lengths, torch.zeros(4, dtype=torch.int64), torch.arange(4), w, 1, 0.7, bandwidth, normalize)
    z = random_walks(1, 10, 2, seed=2)
    f, g = obj(z, torch.tensor([0]))
    expected = objective_by_loop(z[0], X, 0.7, w, lengths, normalize, bandwidth)
    assert f.item() == pytest.approx(expected, rel=1e-12, abs=1e-12)
    # central finite differences in float64
    eps = 1e-6
    fd = torch.zeros_like(z)
    for idx in np.ndindex(*z.shape):
        zp, zm = z.clone(), z.clone()
        zp[idx] += eps
        zm[idx] -= eps
        value = lambda point: obj(point, torch.tensor([0]), need_grad=False)[0]  # noqa: E731
        fd[idx] = (value(zp) - value(zm)) / (2 * eps)
    torch.testing.assert_close(g, fd, rtol=1e-6, atol=1e-7)


def test_objective_decreases_monotonically_lbfgs_and_adam():
    X = gunpoint_classes()["1"]
    _, hist = softdtw_barycenter(X, gamma=0.1, tol=1e-6, max_iter=30, return_history=True)
    assert len(hist) > 5
    assert all(b <= a for a, b in zip(hist, hist[1:])), "L-BFGS must never increase the objective"
    assert hist[-1] < hist[0] - 30
    _, hist_adam = softdtw_barycenter(X, gamma=0.1, method="adam", max_iter=60, return_history=True)
    assert min(hist_adam) < hist_adam[0] - 30


# ------------------------------------------------------------------------------------------------
# The L-BFGS is scipy's L-BFGS-B (what tslearn runs)
# ------------------------------------------------------------------------------------------------
def test_lbfgs_takes_scipy_lbfgsb_iterates():
    scipy_optimize = pytest.importorskip("scipy.optimize")
    X = random_walks(6, 25, 2, seed=3)
    obj = bc._Objective(X, torch.full((6,), 25), torch.zeros(6, dtype=torch.int64), torch.arange(6),
                        torch.ones(6, dtype=torch.float64), 1, 0.3, None, False)
    z0 = X.mean(0)

    def fun(flat):
        f, g = obj(torch.from_numpy(flat).view(1, 25, 2), torch.tensor([0]))
        return f.item(), g.numpy().ravel()

    res = scipy_optimize.minimize(fun, z0.numpy().ravel(), jac=True, method="L-BFGS-B", tol=1e-7,
                                  options={"maxiter": 25})
    z, hist = softdtw_barycenter(X, gamma=0.3, tol=1e-7, max_iter=25, return_history=True)
    assert len(hist) - 1 == res.nit
    assert hist[-1] == pytest.approx(res.fun, rel=1e-10)
    np.testing.assert_allclose(z.numpy().ravel(), res.x, rtol=1e-7, atol=1e-8)


# ------------------------------------------------------------------------------------------------
# Batched K problems = each problem alone; variable lengths = each series at its own length
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["lbfgs", "adam"])
def test_batched_groups_equal_each_group_alone(method):
    K, n, T, d = 3, 5, 20, 2
    X = torch.stack([random_walks(n, T, d, seed=10 + k) for k in range(K)])
    X[1] *= 3.0                                             # very different problems in one batch
    w = torch.rand(K, n, generator=torch.Generator().manual_seed(0), dtype=torch.float64) + 0.1
    w[2, 1] = 0.0                                           # a member with weight 0 is ignored
    lengths = torch.tensor([[20, 15, 12, 20, 18], [20] * 5, [9, 20, 20, 11, 20]])
    kw = dict(gamma=0.5, method=method, tol=1e-6, max_iter=40)
    zb, hb = softdtw_barycenter(X, weights=w, x_lengths=lengths, **kw, return_history=True)
    assert zb.shape == (K, T, d) and isinstance(hb, list) and len(hb) == K
    for k in range(K):
        zk, hk = softdtw_barycenter(X[k], weights=w[k], x_lengths=lengths[k], **kw, return_history=True)
        torch.testing.assert_close(zb[k], zk, rtol=1e-12, atol=1e-12)
        assert hb[k] == pytest.approx(hk, rel=1e-12)
    assert len({len(h) for h in hb}) > 1 or method == "adam"  # problems stop at their own iteration


def test_variable_lengths_equal_each_series_at_its_own_length():
    series = [random_walks(1, T, 2, seed=T)[0] for T in (30, 22, 17, 26)]
    lengths = torch.tensor([s.shape[0] for s in series])
    padded = torch.full((4, 30, 2), 1e6, dtype=torch.float64)  # garbage in the padding: never read
    for i, s in enumerate(series):
        padded[i, : s.shape[0]] = s
    init = random_walks(1, 24, 2, seed=99)[0]
    z_pad, h_pad = softdtw_barycenter(padded, gamma=0.4, x_lengths=lengths, init=init, max_iter=20, tol=1e-8, return_history=True)
    z_list, h_list = softdtw_barycenter(series, gamma=0.4, init=init, max_iter=20, tol=1e-8, return_history=True)
    torch.testing.assert_close(z_pad, z_list)
    assert z_pad.shape == (24, 2)
    # the objective is the sum over each series alone at its own length
    assert h_pad[0] == pytest.approx(objective_by_loop(init, padded, 0.4, lengths=lengths), rel=1e-12)
    assert h_pad[-1] == pytest.approx(objective_by_loop(z_pad, padded, 0.4, lengths=lengths), rel=1e-12)
    # tslearn's NaN-padded format gives the same problem
    nan_padded = padded.clone()
    for i, s in enumerate(series):
        nan_padded[i, s.shape[0]:] = float("nan")
    z_nan, _ = softdtw_barycenter(nan_padded.numpy(), gamma=0.4, init=init.numpy(), max_iter=20, tol=1e-8, return_history=True)
    np.testing.assert_allclose(z_nan, z_pad.numpy(), rtol=1e-12, atol=1e-12)


def test_default_init_is_tslearns_resampled_euclidean_mean():
    barycenters = pytest.importorskip("tslearn.barycenters")
    series = [np.sin(np.linspace(0, 3, T))[:, None] + 0.1 * T for T in (20, 13, 31)]
    ours, hist = softdtw_barycenter(series, max_iter=0, return_history=True)
    theirs = barycenters.softdtw_barycenter(series, max_iter=0)
    assert len(hist) == 1 and ours.shape == (31, 1)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    weighted, _ = softdtw_barycenter(series, max_iter=0, weights=[1.0, 0.0, 3.0], length=8, return_history=True)
    assert weighted.shape == (8, 1)


# ------------------------------------------------------------------------------------------------
# GunPoint against tslearn
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow  # tslearn's barycenter on GunPoint: about 10 s
@pytest.mark.parametrize("gamma", [1.0, 0.1])
def test_gunpoint_objective_not_above_tslearn(gamma):
    barycenters = pytest.importorskip("tslearn.barycenters")
    metrics = pytest.importorskip("tslearn.metrics")
    for c, X in gunpoint_classes().items():
        init = X.mean(axis=0)                                   # same init on both sides
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z_ts = barycenters.softdtw_barycenter(X, gamma=gamma, init=init)   # tol 1e-3, max_iter 50
        z, hist = softdtw_barycenter(X, gamma=gamma, init=init, return_history=True)                # same defaults
        ts_objective = objective_by_loop(torch.from_numpy(z_ts), torch.from_numpy(X), gamma)
        ts_own = sum(metrics.soft_dtw(z_ts, x, gamma=gamma) for x in X)         # tslearn's own formula
        assert ts_own == pytest.approx(ts_objective, rel=1e-10)
        ours = objective_by_loop(torch.from_numpy(z), torch.from_numpy(X), gamma)
        assert ours == pytest.approx(hist[-1], rel=1e-12)
        # Same algorithm (L-BFGS-B), same stopping rule: the same end point up to rounding.
        assert ours <= ts_objective + 1e-9 * abs(ts_objective), (c, ours, ts_objective)
        np.testing.assert_allclose(z, z_ts, rtol=1e-6, atol=1e-6)
        # And a tighter tol goes strictly lower.
        _, hist_tight = softdtw_barycenter(X, gamma=gamma, init=init, tol=1e-7, max_iter=100, return_history=True)
        assert hist_tight[-1] < ts_objective - 1e-5 * abs(ts_objective)


# ------------------------------------------------------------------------------------------------
# k-means
# ------------------------------------------------------------------------------------------------
def two_shapes(n_per_class, T=60, seed=0):
    """Class 0: a positive bump, class 1: a square block, each at a random position, plus noise."""
    rng = np.random.RandomState(seed)
    t = np.arange(T)
    X, y = [], []
    for label in (0, 1):
        for _ in range(n_per_class):
            c = rng.uniform(15, 45)
            if label == 0:
                s = 2.0 * np.exp(-0.5 * ((t - c) / 4.0) ** 2)
            else:
                s = np.where(np.abs(t - c) < 8, -1.5, 0.0)
            X.append(s + 0.1 * rng.randn(T))
            y.append(label)
    return np.asarray(X)[:, :, None], np.asarray(y)


def ari(a, b):
    from sklearn.metrics import adjusted_rand_score
    return adjusted_rand_score(a, b)


@pytest.mark.parametrize("metric_normalize", [False, True])
def test_kmeans_recovers_two_separated_clusters(metric_normalize):
    pytest.importorskip("sklearn")
    X, y = two_shapes(12)
    km = SoftDTWKMeans(2, gamma=0.5, random_state=0, metric_normalize=metric_normalize).fit(X)
    assert ari(y, km.labels_) == 1.0
    assert km.cluster_centers_.shape == (2, 60, 1) and isinstance(km.cluster_centers_, np.ndarray)
    assert km.labels_.shape == (24,) and km.n_iter_ >= 1
    values = km.transform(X)
    assert values.shape == (24, 2)
    assert km.inertia_ == pytest.approx(values[np.arange(24), km.labels_].sum(), rel=1e-9)
    X_new, y_new = two_shapes(5, seed=1)
    assert ari(y_new, km.predict(X_new)) == 1.0
    assert np.array_equal(SoftDTWKMeans(2, gamma=0.5, random_state=0, metric_normalize=metric_normalize).fit_predict(X),
                          km.labels_)


@needs_aeon_data
def test_kmeans_on_basicmotions_beats_euclidean():
    pytest.importorskip("sklearn")
    from sklearn.cluster import KMeans
    X, y = load_ts(os.path.join(AEON_DATASETS, "BasicMotions", "BasicMotions_TRAIN.ts"))  # aeon's bundled copy
    X = X.transpose(0, 2, 1)                                    # (40, 100, 6)
    km = SoftDTWKMeans(4, gamma=1.0, random_state=0, n_init=2).fit(X)
    euclid = KMeans(4, random_state=0, n_init=10).fit(X.reshape(len(X), -1))
    score, score_euclid = ari(y, km.labels_), ari(y, euclid.labels_)
    assert score >= 0.6, score                                  # measured 0.666 (Euclidean k-means 0.067)
    assert score > score_euclid + 0.3


def test_kmeans_reseeds_empty_cluster_from_farthest_point():
    X, _ = two_shapes(6)
    far = np.full((1, 60, 1), 50.0)
    init = np.concatenate([X[:1], X[6:7], far])                 # the third center attracts nobody
    km = SoftDTWKMeans(3, gamma=0.5, init=init, max_iter=1).fit(X)
    assert sorted(np.unique(km.labels_)) == [0, 1, 2]
    assert (km.cluster_centers_[2] < 10).all()                  # replaced by a series of the data


def test_kmeans_variable_lengths_and_torch_io():
    X, y = two_shapes(6)
    series = [torch.from_numpy(x[: 60 - 3 * i]) for i, x in enumerate(X)]
    km = SoftDTWKMeans(2, gamma=0.5, random_state=0).fit(series)
    assert isinstance(km.labels_, torch.Tensor) and km.cluster_centers_.shape == (2, 60, 1)
    assert torch.equal(km.predict(series), km.labels_)
    assert len(set(km.labels_[:6].tolist())) == 1 and len(set(km.labels_[6:].tolist())) == 1


# ------------------------------------------------------------------------------------------------
# Conventions: numpy in/numpy out, dtypes, 2-D input, callback, progress, devices
# ------------------------------------------------------------------------------------------------
def test_numpy_in_numpy_out_and_tslearn_2d_convention():
    X = np.array([[1, 2, 3, 4], [1, 2, 4, 5]])                  # tslearn's docstring example
    z, hist = softdtw_barycenter(X, max_iter=5, return_history=True)
    assert isinstance(z, np.ndarray) and z.shape == (4, 1) and z.dtype == np.float64
    assert isinstance(hist, list) and isinstance(hist[0], float)
    barycenters = pytest.importorskip("tslearn.barycenters")
    np.testing.assert_allclose(z, barycenters.softdtw_barycenter(X, max_iter=5), rtol=1e-8)


def test_float32_torch_in_torch_out():
    X = random_walks(5, 30, 3, seed=4, dtype=torch.float32)
    z, hist = softdtw_barycenter(X, gamma=0.5, return_history=True)
    assert isinstance(z, torch.Tensor) and z.dtype == torch.float32 and z.shape == (30, 3)
    assert not z.requires_grad and hist[-1] < hist[0]


def test_callback_progress_and_early_stop(capsys):
    X = gunpoint_classes()["2"]
    seen = []

    def callback(iteration, objective):
        seen.append((iteration, objective))
        return iteration == 3                                  # ask to stop after 3 iterations

    _, hist = softdtw_barycenter(X, gamma=0.1, tol=0, callback=callback, progress=True, return_history=True)
    assert [i for i, _ in seen] == [1, 2, 3] and len(hist) == 4
    assert seen[-1][1] == hist[-1]
    err = capsys.readouterr().err
    try:
        import tqdm  # noqa: F401
    except ImportError:  # plain lines (tests/infra/test_progress.py): the last says where it stopped
        assert err.splitlines()[-1].startswith("softdtw_barycenter: 3/50 iterations (6%), objective ")
    Xk = np.stack([X[:10], X[10:20]])
    seen.clear()
    softdtw_barycenter(Xk, gamma=0.1, max_iter=2, callback=lambda i, f: seen.append(f))
    assert all(isinstance(f, list) and len(f) == 2 for f in seen)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", ["lbfgs", "adam"])
def test_devices(device, method):
    X = random_walks(2 * 6, 25, 2, seed=5).view(2, 6, 25, 2)
    z_cpu, h_cpu = softdtw_barycenter(X, gamma=0.5, method=method, max_iter=10, return_history=True)
    z_dev, h_dev = softdtw_barycenter(X.to(device), gamma=0.5, method=method, max_iter=10, return_history=True)
    assert z_dev.device.type == device
    torch.testing.assert_close(z_dev.cpu(), z_cpu, rtol=1e-6, atol=1e-6)
    km = SoftDTWKMeans(2, gamma=0.5, random_state=0, max_iter=3).fit(X.reshape(12, 25, 2).to(device))
    assert km.labels_.device.type == device


# ------------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------------
X3 = np.zeros((4, 10, 2))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(X=np.zeros(5)), "softdtw_barycenter: expected X of shape (n, length, features), (n, length) or K groups"),
        (dict(X=np.zeros((1, 2, 3, 4, 5))), "got a 5-D input"),
        (dict(X=np.zeros((0, 10, 2))), "softdtw_barycenter: expected non-empty X"),
        (dict(X=np.zeros((4, 0, 2))), "softdtw_barycenter: expected non-empty X"),
        (dict(X=[]), "softdtw_barycenter: expected non-empty X"),
        (dict(X=X3, gamma=0.0), "softdtw_barycenter: expected gamma > 0"),
        (dict(X=X3, gamma=-1.0), "softdtw_barycenter: expected gamma > 0"),
        (dict(X=X3, method="sgd"), "softdtw_barycenter: expected method to be one of ('lbfgs', 'adam'), got 'sgd'"),
        (dict(X=X3, weights=np.ones(3)), "softdtw_barycenter: expected weights of shape (4,)"),
        (dict(X=X3, weights=-np.ones(4)), "softdtw_barycenter: expected finite, non-negative weights"),
        (dict(X=X3, weights=np.zeros(4)), "softdtw_barycenter: expected weights with a positive sum"),
        (dict(X=np.zeros((2, 4, 10, 2)), weights=np.ones((3, 4))), "expected weights of shape (2, 4) or (4,)"),
        (dict(X=X3, x_lengths=[10, 10, 11, 3]), "softdtw_barycenter: expected x_lengths in [1, 10]"),
        (dict(X=X3, x_lengths=[0, 10, 10, 3]), "softdtw_barycenter: expected x_lengths in [1, 10]"),
        (dict(X=X3, x_lengths=[10, 10]), "softdtw_barycenter: expected x_lengths of shape (4,)"),
        (dict(X=X3, init=np.zeros((10, 3))), "softdtw_barycenter: expected init with 2 features"),
        (dict(X=X3, init=np.zeros((10, 2)), length=7), "length=7 contradicts init of length 10"),
        (dict(X=X3, max_iter=-1), "softdtw_barycenter: expected max_iter >= 0"),
        (dict(X=X3, tol=-1.0), "softdtw_barycenter: expected tol >= 0"),
        (dict(X=np.full((4, 10, 2), np.nan)), "softdtw_barycenter: X holds a series made only of NaN"),
        (dict(X=np.where(np.arange(10)[None, :, None] == 3, np.nan, X3)), "X holds NaN inside a series"),
        (dict(X=torch.zeros(4, 10, 2, dtype=torch.float16)), "expected X to be float32 or float64"),
    ],
)
def test_barycenter_errors(kwargs, message):
    X = kwargs.pop("X")
    error = TypeError if "float32 or float64" in message else ValueError  # a wrong dtype is a TypeError
    with pytest.raises(error) as info:
        softdtw_barycenter(X, **kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "params,X,message",
    [
        (dict(n_clusters=0), X3, "SoftDTWKMeans: expected n_clusters >= 1"),
        (dict(n_clusters=5), X3, "SoftDTWKMeans.fit: expected at least n_clusters=5 series, got 4"),
        (dict(n_clusters=2, gamma=0), X3, "SoftDTWKMeans: expected gamma > 0"),
        (dict(n_clusters=2, init="kmeans"), X3, "SoftDTWKMeans: expected init to be 'k-means++', 'random'"),
        (dict(n_clusters=2, init=np.zeros((3, 10, 2))), X3,
         "SoftDTWKMeans.fit: expected init centers of shape (2, 10, 2)"),
        (dict(n_clusters=2), np.zeros((2, 4, 10, 2)), "SoftDTWKMeans.fit: expected X of shape (n, length, features)"),
    ],
)
def test_kmeans_errors(params, X, message):
    with pytest.raises(ValueError) as info:
        SoftDTWKMeans(**params).fit(X)
    assert message in str(info.value)
    with pytest.raises(ValueError, match="SoftDTWKMeans.predict: this instance is not fitted yet"):
        SoftDTWKMeans(2).predict(X3)
