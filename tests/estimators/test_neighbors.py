"""k-NN time-series classification and regression (softdtw_torch.neighbors) against tslearn's
``KNeighborsTimeSeriesClassifier`` / ``KNeighborsTimeSeriesRegressor`` and a float64 numpy brute
force; the exactness of the lower-bound pruning (the same neighbours, distances and predictions as
without it, ties included); input forms, devices and errors.

The estimators' scikit-learn contract (check_estimator, clone, tags) is in test_sklearn_contract.py.
"""
import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone

from conftest import DEVICES
from softdtw_torch import NotFittedError
from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier, KNeighborsTimeSeriesRegressor

tslearn_neighbors = pytest.importorskip("tslearn.neighbors", reason="tslearn is a test dependency")
pytestmark = pytest.mark.filterwarnings("ignore:h5py not installed")


def _ucr(name, n_train=None, n_test=None):
    datasets = pytest.importorskip("aeon.datasets")
    loader = {"ArrowHead": datasets.load_arrow_head, "ItalyPowerDemand": datasets.load_italy_power_demand,
              "GunPoint": datasets.load_gunpoint}[name]
    X_train, y_train = loader(split="train")
    X_test, y_test = loader(split="test")
    # aeon's (n_cases, n_channels, n_timepoints) -> tslearn's (n_cases, n_timepoints, n_channels)
    return (X_train[:n_train].transpose(0, 2, 1).copy(), y_train[:n_train],
            X_test[:n_test].transpose(0, 2, 1).copy(), y_test[:n_test])


def _random(n_train=30, n_test=12, n=20, m=24, d=2, seed=0, n_classes=3):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n_train, n, d)), rng.integers(0, n_classes, n_train), rng.normal(size=(n_test, m, d)))


def _band(radius):
    return None if radius is None else {"sakoe_chiba_radius": radius}


def _dtw(x, y, radius):
    """DTW distance (square root of the squared-cost DTW) in float64 from the recursion, with
    tslearn's band: row i may meet columns [i − r − max(0, n − m), i + r + max(0, m − n)]."""
    n, m = len(x), len(y)
    cost = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if radius is None or -(radius + max(0, n - m)) <= (j - i) <= radius + max(0, m - n):
                R[i, j] = cost[i - 1, j - 1] + min(R[i - 1, j - 1], R[i - 1, j], R[i, j - 1])
    return np.sqrt(R[n, m])


def _brute_force_kneighbors(X_train, X_test, k, radius, exclude_self=False):
    """The k nearest by (distance, index), from the float64 DTW above (np.lexsort: ties by index)."""
    D = np.array([[_dtw(q, c, radius) for c in X_train] for q in X_test])
    if exclude_self:
        np.fill_diagonal(D, np.inf)
    order = np.array([np.lexsort((np.arange(D.shape[1]), row))[:k] for row in D])
    return np.take_along_axis(D, order, 1), order


# ----------------------------------------------------------------------------------------------
# tslearn's neighbours and predictions
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("metric,params", [
    ("dtw", None), ("dtw", {"sakoe_chiba_radius": 2}), ("dtw", {"global_constraint": "sakoe_chiba"}),
    ("softdtw", {"gamma": 0.5}), ("softdtw", {"gamma_sdtw": 2.0, "sakoe_chiba_radius": 3}), ("softdtw", {"gamma": 0.0}),
    ("euclidean", None), ("sqeuclidean", None), ("cityblock", None),
])
@pytest.mark.parametrize("weights", ["uniform", "distance"])
def test_classifier_and_regressor_are_tslearns_on_random_series(metric, params, weights):
    """Same neighbours (indices), distances to rounding, predictions and probabilities as tslearn,
    for each metric; queries of another length than the training series for the series metrics.

    For the Euclidean family the reference of the predictions is scikit-learn's KNeighborsClassifier /
    Regressor on the flattened series, which tslearn's call: tslearn 0.10's own predict with
    metric="cityblock" and uniform weights fails (its n_features_in_ is the number of features d,
    which scikit-learn's predict checks against the flattened series)."""
    from sklearn import neighbors as sk_neighbors

    series_metric = metric in ("dtw", "softdtw")
    X, y, X_test = _random(m=24 if series_metric else 20)
    targets = np.random.default_rng(1).normal(size=len(X))
    for k in (1, 4):
        ours = KNeighborsTimeSeriesClassifier(n_neighbors=k, weights=weights, metric=metric, metric_params=params)
        theirs = tslearn_neighbors.KNeighborsTimeSeriesClassifier(n_neighbors=k, weights=weights, metric=metric,
                                                                  metric_params=params)
        ours.fit(X, y)
        theirs.fit(X, y)
        dist, ind = ours.kneighbors(X_test)
        ref_dist, ref_ind = theirs.kneighbors(X_test)
        np.testing.assert_array_equal(ind, ref_ind)
        np.testing.assert_allclose(dist, ref_dist, rtol=1e-12, atol=1e-12)
        reg = KNeighborsTimeSeriesRegressor(n_neighbors=k, weights=weights, metric=metric, metric_params=params)
        if series_metric:
            ref_clf, ref_reg, Xf, Qf = theirs, tslearn_neighbors.KNeighborsTimeSeriesRegressor(
                n_neighbors=k, weights=weights, metric=metric, metric_params=params), X, X_test
        else:
            options = dict(n_neighbors=k, weights=weights, metric=metric, algorithm="brute")
            ref_clf = sk_neighbors.KNeighborsClassifier(**options)
            ref_reg = sk_neighbors.KNeighborsRegressor(**options)
            Xf, Qf = X.reshape(len(X), -1), X_test.reshape(len(X_test), -1)
            ref_clf.fit(Xf, y)
        np.testing.assert_array_equal(ours.predict(X_test), ref_clf.predict(Qf))
        np.testing.assert_allclose(ours.predict_proba(X_test), ref_clf.predict_proba(Qf), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(reg.fit(X, targets).predict(X_test), ref_reg.fit(Xf, targets).predict(Qf),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,n_train,n_test,radius", [
    ("ArrowHead", None, 30, None), ("ArrowHead", None, 30, 5), ("ItalyPowerDemand", None, 150, None),
    ("ItalyPowerDemand", None, 150, 3), ("GunPoint", None, 30, 15),
])
def test_classifier_is_tslearns_on_ucr_data(name, n_train, n_test, radius):
    """1-NN and 3-NN DTW on real data: tslearn's neighbours, distances, predictions and accuracy."""
    X, y, X_test, y_test = _ucr(name, n_train, n_test)
    for k in (1, 3):
        ours = KNeighborsTimeSeriesClassifier(n_neighbors=k, metric_params=_band(radius)).fit(X, y)
        theirs = tslearn_neighbors.KNeighborsTimeSeriesClassifier(n_neighbors=k, metric_params=_band(radius)).fit(X, y)
        dist, ind = ours.kneighbors(X_test)
        ref_dist, ref_ind = theirs.kneighbors(X_test)
        np.testing.assert_array_equal(ind, ref_ind)
        np.testing.assert_allclose(dist, ref_dist, rtol=1e-12)
        predicted = ours.predict(X_test)
        np.testing.assert_array_equal(predicted, theirs.predict(X_test))
        assert ours.score(X_test, y_test) == np.mean(predicted == y_test)
        assert ours.pruning_rate_ > 0.2  # the bounds prune on real data (rates: benchmarks/README.md)


def test_regressor_multioutput_is_tslearns():
    X, _, X_test = _random(seed=3)
    Y = np.random.default_rng(4).normal(size=(len(X), 3))
    for weights in ("uniform", "distance"):
        ours = KNeighborsTimeSeriesRegressor(n_neighbors=3, weights=weights, metric_params={"sakoe_chiba_radius": 3})
        theirs = tslearn_neighbors.KNeighborsTimeSeriesRegressor(n_neighbors=3, weights=weights,
                                                                 metric_params={"sakoe_chiba_radius": 3})
        predicted = ours.fit(X, Y).predict(X_test)
        assert predicted.shape == (len(X_test), 3) and predicted.dtype == np.float64
        np.testing.assert_allclose(predicted, theirs.fit(X, Y).predict(X_test), rtol=1e-12)


def test_nan_padded_series_of_different_lengths_are_tslearns():
    """tslearn's variable-length format (trailing NaN), in fit and in the queries; the same as a list
    of series and as x_lengths."""
    rng = np.random.default_rng(5)
    X, y, X_test = _random(n=18, m=22, d=1, seed=5)
    train_len, test_len = rng.integers(6, 19, len(X)), rng.integers(4, 23, len(X_test))
    for series, lengths in ((X, train_len), (X_test, test_len)):
        for i, n in enumerate(lengths):
            series[i, n:] = np.nan
    for radius in (None, 2):
        ours = KNeighborsTimeSeriesClassifier(n_neighbors=3, weights="distance", metric_params=_band(radius))
        theirs = tslearn_neighbors.KNeighborsTimeSeriesClassifier(n_neighbors=3, weights="distance",
                                                                  metric_params=_band(radius))
        ours.fit(X, y)
        dist, ind = ours.kneighbors(X_test)
        ref_dist, ref_ind = theirs.fit(X, y).kneighbors(X_test)
        np.testing.assert_array_equal(ind, ref_ind)
        np.testing.assert_allclose(dist, ref_dist, rtol=1e-12)
        np.testing.assert_array_equal(ours.predict(X_test), theirs.predict(X_test))
        # the same series as a list, and as zero-padded arrays with x_lengths
        as_list = KNeighborsTimeSeriesClassifier(n_neighbors=3, metric_params=_band(radius)).fit(
            [s[:n] for s, n in zip(X, train_len)], y)
        list_dist, list_ind = as_list.kneighbors([s[:n] for s, n in zip(X_test, test_len)])
        np.testing.assert_array_equal(list_ind, ind)
        np.testing.assert_array_equal(list_dist, dist)
        zeros = KNeighborsTimeSeriesClassifier(n_neighbors=3, metric_params=_band(radius)).fit(
            np.nan_to_num(X), y, x_lengths=train_len)
        np.testing.assert_array_equal(zeros.kneighbors(np.nan_to_num(X_test), x_lengths=test_len)[1], ind)


# ----------------------------------------------------------------------------------------------
# Brute force, kneighbors(X=None), ties
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("radius", [None, 0, 2])
def test_kneighbors_is_the_brute_force(radius):
    """Against the float64 recursion written from the definition: distances, and indices ordered by
    (distance, index); X=None ranks each training series among the others."""
    X, y, X_test = _random(n_train=12, n_test=5, n=9, m=11, seed=6)
    est = KNeighborsTimeSeriesClassifier(n_neighbors=4, metric_params=_band(radius)).fit(X, y)
    for pruning in (True, False):
        est.set_params(pruning=pruning)
        dist, ind = est.kneighbors(X_test)
        ref_dist, ref_ind = _brute_force_kneighbors(X, X_test, 4, radius)
        np.testing.assert_array_equal(ind, ref_ind)
        np.testing.assert_allclose(dist, ref_dist, rtol=1e-12)
        dist, ind = est.kneighbors()
        ref_dist, ref_ind = _brute_force_kneighbors(X, X, 4, radius, exclude_self=True)
        np.testing.assert_array_equal(ind, ref_ind)
        np.testing.assert_allclose(dist, ref_dist, rtol=1e-12)
        assert est.last_search_.n_pairs == len(X) * (len(X) - 1)


def test_ties_are_ranked_by_index_with_and_without_pruning():
    """Exact duplicates in the training set lie at exactly the same distance from every query: the
    neighbours are ordered by index among them, with and without pruning, and a vote between tied
    classes goes to the first class (scikit-learn's mode)."""
    rng = np.random.default_rng(7)
    base = rng.normal(size=(6, 15, 1))
    # training series 1, 3, 6 and 8 are base[1]; 0 and 5 are base[3]
    X = np.concatenate([base[[3, 1, 4, 1, 5]], base[[3, 1, 4, 1, 5]], base[[0, 2]]])
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 0])
    X_test = np.concatenate([base[[1, 3]], base[[1, 3]] + 0.01 * rng.normal(size=(2, 15, 1))])
    results = []
    for pruning in (True, False):
        est = KNeighborsTimeSeriesClassifier(n_neighbors=3, metric_params={"sakoe_chiba_radius": 2},
                                             pruning=pruning).fit(X, y)
        results.append(est.kneighbors(X_test) + (est.predict(X_test), est.predict_proba(X_test)))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    dist, ind = results[0][:2]
    # query 0 is base[1], which is training series 1, 3, 6 and 8 (all at distance 0): the first three
    np.testing.assert_array_equal(ind[0], [1, 3, 6])
    np.testing.assert_array_equal(dist[0], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ind[1], [0, 5, _brute_force_kneighbors(X, X_test[1:2], 3, 2)[1][0, 2]])
    ref_dist, ref_ind = _brute_force_kneighbors(X, X_test, 3, 2)
    np.testing.assert_array_equal(ind, ref_ind)
    # a 2-NN vote with one neighbour of each class: a tie, won by the first class
    est = KNeighborsTimeSeriesClassifier(n_neighbors=2).fit(base[[0, 1]], ["b", "a"])
    assert est.predict(base[[0]])[0] == "a" and est.predict_proba(base[[0]]).tolist() == [[0.5, 0.5]]


# ----------------------------------------------------------------------------------------------
# Pruning is exact
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,radius,k", [("ArrowHead", None, 1), ("ArrowHead", 5, 3), ("ItalyPowerDemand", 2, 5),
                                           ("GunPoint", 10, 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pruned_and_unpruned_search_are_identical_on_ucr_data(name, radius, k, dtype):
    """Bit-identical distances, the same indices and predictions (both weightings), for queries and
    for X=None; the pruned search skipped work, the unpruned none."""
    X, y, X_test, _ = _ucr(name, None, 60)
    X, X_test = X.astype(dtype), X_test.astype(dtype)
    outputs = []
    for pruning in (True, False):
        est = KNeighborsTimeSeriesClassifier(n_neighbors=k, weights="distance", metric_params=_band(radius),
                                             pruning=pruning).fit(X, y)
        dist, ind = est.kneighbors(X_test)
        assert dist.dtype == dtype
        rate = est.pruning_rate_
        self_dist, self_ind = est.kneighbors()
        outputs.append((dist, ind, self_dist, self_ind, est.predict(X_test), est.predict_proba(X_test),
                        est.set_params(weights="uniform").predict(X_test)))
        assert (rate > 0.2) if pruning else (rate == 0.0)
    for a, b in zip(*outputs):
        np.testing.assert_array_equal(a, b)


def test_rounding_margin_keeps_pruning_exact_where_bound_equals_distance(monkeypatch):
    """Against constant training series the bound equals the DTW mathematically (every row's
    envelope is the constant), and in float32 the computed bound exceeds the computed DTW by an ulp
    or two on many pairs; candidates ±δ around zero-mean queries tie mathematically. The search's
    rounding margin keeps the pruned neighbours those of the unpruned search; without it (patched
    to 0) they differ for many queries, so the margin is what makes this case exact."""
    from softdtw_torch import neighbors

    rng = np.random.default_rng(15)
    queries = rng.normal(size=(300, 60, 1)).astype(np.float32)
    queries -= queries.mean(axis=1, keepdims=True)
    constants = rng.permutation(np.array([0.1, 0.3, 0.5, 0.7, -0.1, -0.3, -0.5, -0.7], dtype=np.float32))
    X = np.repeat(constants[:, None, None], 60, axis=1)
    y = np.arange(8) % 2

    def differing():
        count = 0
        for k in (1, 2, 3):
            for radius in (None, 2):
                pruned, full = (KNeighborsTimeSeriesClassifier(n_neighbors=k, metric_params=_band(radius),
                                                               pruning=p).fit(X, y).kneighbors(queries)
                                for p in (True, False))
                count += int((pruned[1] != full[1]).any(axis=1).sum())
                if count == 0:
                    np.testing.assert_array_equal(pruned[0], full[0])
        return count

    assert differing() == 0
    monkeypatch.setattr(neighbors, "rounding_slack", lambda *args: 0.0)
    assert differing() > 20


def test_pruned_search_is_exact_on_ragged_multivariate_series():
    rng = np.random.default_rng(8)
    X = [rng.normal(size=(n, 3)).cumsum(0) for n in rng.integers(5, 30, 40)]
    X_test = [rng.normal(size=(n, 3)).cumsum(0) for n in rng.integers(3, 35, 15)]
    y = rng.normal(size=40)
    for radius in (None, 1, 4):
        outputs = []
        for pruning in (True, False):
            est = KNeighborsTimeSeriesRegressor(n_neighbors=4, metric_params=_band(radius), pruning=pruning).fit(X, y)
            outputs.append(est.kneighbors(X_test) + est.kneighbors() + (est.predict(X_test),))
        for a, b in zip(*outputs):
            np.testing.assert_array_equal(a, b)
        theirs = tslearn_neighbors.KNeighborsTimeSeriesRegressor(n_neighbors=4, metric_params=_band(radius))
        from tslearn.utils import to_time_series_dataset
        np.testing.assert_allclose(outputs[0][4], theirs.fit(to_time_series_dataset(X), y).predict(
            to_time_series_dataset(X_test)), rtol=1e-12)


def test_search_statistics():
    X, y, X_test, _ = _ucr("ItalyPowerDemand", None, 200)
    est = KNeighborsTimeSeriesClassifier(n_neighbors=1, metric_params={"sakoe_chiba_radius": 2})
    with pytest.raises(NotFittedError):
        est.pruning_rate_
    est.fit(X, y)
    assert est.pruning_rate_ is None and est.last_search_.n_pairs == 0  # no search yet
    est.predict(X_test)
    stats = est.last_search_
    assert stats.n_pairs == 200 * len(X) and 0 < stats.n_computed < stats.n_pairs and stats.n_rounds >= 1
    assert est.pruning_rate_ == 1 - stats.n_computed / stats.n_pairs > 0.5
    before = dict(vars(est))
    est.set_params(metric="softdtw").predict(X_test)  # the other metrics compute every pair
    assert est.pruning_rate_ == 0.0 and est.last_search_.n_computed == 200 * len(X)
    assert vars(est).keys() == before.keys()  # a search changes no attribute but the statistics' contents


# ----------------------------------------------------------------------------------------------
# Input forms, devices, outputs
# ----------------------------------------------------------------------------------------------
def test_two_dimensional_input_is_univariate_series():
    X, y, X_test = _random(d=1, seed=9)
    three_d = KNeighborsTimeSeriesClassifier(n_neighbors=3).fit(X, y)
    two_d = KNeighborsTimeSeriesClassifier(n_neighbors=3).fit(X[:, :, 0], y)
    assert two_d.n_features_in_ == three_d.n_features_in_ == 1
    for a, b in zip(two_d.kneighbors(X_test[:, :, 0]), three_d.kneighbors(X_test)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("device", DEVICES)
def test_tensor_input_gives_tensors_on_its_device(device):
    X, y, X_test = _random(seed=10)
    Xt, Xq = torch.tensor(X, device=device), torch.tensor(X_test, device=device)
    ours = KNeighborsTimeSeriesClassifier(n_neighbors=3, metric_params={"sakoe_chiba_radius": 2}).fit(Xt, y)
    reference = KNeighborsTimeSeriesClassifier(n_neighbors=3, metric_params={"sakoe_chiba_radius": 2}).fit(X, y)
    dist, ind = ours.kneighbors(Xq)
    assert isinstance(dist, torch.Tensor) and dist.device.type == device and ind.dtype == torch.int64
    ref_dist, ref_ind = reference.kneighbors(X_test)
    np.testing.assert_array_equal(ind.cpu().numpy(), ref_ind)
    np.testing.assert_allclose(dist.cpu().numpy(), ref_dist, rtol=1e-12)
    proba = ours.predict_proba(Xq)
    assert isinstance(proba, torch.Tensor) and proba.device.type == device and proba.dtype == torch.float64
    np.testing.assert_array_equal(proba.cpu().numpy(), reference.predict_proba(X_test))
    np.testing.assert_array_equal(ours.predict(Xq), reference.predict(X_test))  # labels: numpy
    reg = KNeighborsTimeSeriesRegressor(n_neighbors=2).fit(Xt, torch.tensor(y, dtype=torch.float64, device=device))
    predicted = reg.predict(Xq)
    assert isinstance(predicted, torch.Tensor) and predicted.device.type == device
    np.testing.assert_allclose(predicted.cpu().numpy(),
                               KNeighborsTimeSeriesRegressor(n_neighbors=2).fit(X, y.astype(float)).predict(X_test))


def test_float32_queries_against_float64_training_series_compute_in_float64():
    X, y, X_test = _random(seed=11)
    est = KNeighborsTimeSeriesClassifier(n_neighbors=2).fit(X, y)
    dist, ind = est.kneighbors(X_test.astype(np.float32))
    assert dist.dtype == np.float64
    ref_dist, ref_ind = est.kneighbors(X_test.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(ind, ref_ind)
    np.testing.assert_array_equal(dist, ref_dist)


def test_string_labels_clone_and_pickle():
    X, y, X_test, _ = _ucr("ItalyPowerDemand", 30, 40)
    est = KNeighborsTimeSeriesClassifier(n_neighbors=3, weights="distance", metric_params={"sakoe_chiba_radius": 1})
    est.fit(X, y)
    assert est.classes_.tolist() == ["1", "2"] and est.predict(X_test).dtype == y.dtype
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.predict_proba(X_test), est.predict_proba(X_test))
    copy = clone(est)
    assert copy.get_params() == est.get_params() and not hasattr(copy, "classes_")


def test_callable_weights_are_scikit_learns():
    X, y, X_test = _random(seed=12)

    def weights(dist):
        return np.exp(-dist)

    ours = KNeighborsTimeSeriesClassifier(n_neighbors=4, weights=weights).fit(X, y)
    theirs = tslearn_neighbors.KNeighborsTimeSeriesClassifier(n_neighbors=4, weights=weights).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X_test), theirs.predict_proba(X_test), rtol=1e-12)
    with pytest.raises(ValueError, match=r"KNeighborsTimeSeriesClassifier.predict: all the neighbours of a query got "
                                         r"zero weight"):
        ours.set_params(weights=lambda d: np.zeros_like(d)).predict(X_test)


# ----------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------
X_ERR, Y_ERR, Q_ERR = _random(n_train=6, n_test=2, seed=13)


@pytest.mark.parametrize("params,error,match", [
    ({"n_neighbors": 0}, ValueError, r"KNeighborsTimeSeriesClassifier: expected n_neighbors >= 1, got 0"),
    ({"n_neighbors": 2.0}, TypeError, r"KNeighborsTimeSeriesClassifier: expected n_neighbors to be an int"),
    ({"metric": "ctw"}, ValueError, r"KNeighborsTimeSeriesClassifier: expected metric to be one of"),
    ({"metric": len}, TypeError, r"KNeighborsTimeSeriesClassifier: expected metric to be a string"),
    ({"weights": "inverse"}, ValueError, r"expected weights to be 'uniform', 'distance' or a callable, got 'inverse'"),
    ({"weights": 3}, TypeError, r"expected weights to be 'uniform', 'distance' or a callable, got int"),
    ({"metric_params": [("gamma", 1.0)]}, TypeError, r"expected metric_params to be a dict or None"),
    ({"metric_params": {"itakura_max_slope": 2.0, "sakoe_chiba_radius": 1}}, ValueError,
     r"both sakoe_chiba_radius and itakura_max_slope without a global_constraint"),
    ({"metric_params": {"global_constraint": "itakura", "itakura_max_slope": 0.5}}, ValueError,
     r"metric_params\['itakura_max_slope'\] must be a finite number >= 1 or None, got 0.5"),
    ({"metric_params": {"itakura_max_slope": "2"}}, TypeError,
     r"expected metric_params\['itakura_max_slope'\] to be a float or None, got str"),
    ({"metric_params": {"global_constraint": "band"}}, ValueError,
     r"expected metric_params\['global_constraint'\] to be None, 'sakoe_chiba' or 'itakura'"),
    ({"metric_params": {"sakoe_chiba_radius": -1}}, ValueError, r"expected metric_params\['sakoe_chiba_radius'\] >= 0"),
    ({"metric_params": {"sakoe_chiba_radius": 1.5}}, TypeError, r"expected metric_params\['sakoe_chiba_radius'\] to "
                                                                r"be an int"),
    ({"metric_params": {"gamma": 1.0}}, ValueError, r"unknown metric_params key\(s\) \['gamma'\] for metric='dtw'"),
    ({"metric": "softdtw", "metric_params": {"gamma": -1.0}}, ValueError, r"expected metric_params\['gamma'\] >= 0"),
    ({"metric": "euclidean", "metric_params": {"sakoe_chiba_radius": 1}}, ValueError, r"unknown metric_params key"),
    ({"chunk_size": 0}, ValueError, r"expected chunk_size >= 1"),
    ({"pruning": "yes"}, TypeError, r"expected pruning to be a bool"),
    ({"device": "gpu0"}, ValueError, r"KNeighborsTimeSeriesClassifier: device='gpu0' is not a torch device"),
    ({"device": 0}, TypeError, r"expected device to be None, a string or a torch.device, got int"),
])
def test_bad_parameters_are_reported_at_fit(params, error, match):
    with pytest.raises(error, match=match):
        KNeighborsTimeSeriesClassifier(**params).fit(X_ERR, Y_ERR)


def test_bad_input_is_reported_naming_the_method():
    est = KNeighborsTimeSeriesClassifier(n_neighbors=3)
    with pytest.raises(NotFittedError, match=r"^KNeighborsTimeSeriesClassifier.predict: this instance is not fitted"):
        est.predict(Q_ERR)
    with pytest.raises(NotFittedError, match=r"^KNeighborsTimeSeriesRegressor.kneighbors: this instance is not"):
        KNeighborsTimeSeriesRegressor().kneighbors(Q_ERR)
    est.fit(X_ERR, Y_ERR)
    with pytest.raises(ValueError, match=r"KNeighborsTimeSeriesClassifier.kneighbors: expected n_neighbors <= "
                                         r"n_samples_fit = 6, got n_neighbors = 7"):
        est.kneighbors(Q_ERR, n_neighbors=7)
    with pytest.raises(ValueError, match=r"n_samples_fit - 1 = 5 with X=None"):
        est.kneighbors(n_neighbors=6)
    with pytest.raises(ValueError, match=r"KNeighborsTimeSeriesClassifier.predict: expected series with 2 features"):
        est.predict(Q_ERR[:, :, :1])
    with pytest.raises(ValueError, match=r"KNeighborsTimeSeriesClassifier.predict: expected X of shape"):
        est.predict(Q_ERR[0, :, 0])
    with pytest.raises(ValueError, match=r"KNeighborsTimeSeriesClassifier.fit: expected y to have 6 entries"):
        KNeighborsTimeSeriesClassifier().fit(X_ERR, Y_ERR[:5])
    with pytest.raises(ValueError, match=r"Unknown label type"):
        KNeighborsTimeSeriesClassifier().fit(X_ERR, np.linspace(0, 1, 6))
    with pytest.raises(ValueError, match=r"KNeighborsTimeSeriesRegressor.fit: expected numeric targets"):
        KNeighborsTimeSeriesRegressor().fit(X_ERR, np.array(list("abcdef")))
    euclidean = KNeighborsTimeSeriesClassifier(n_neighbors=2, metric="euclidean").fit(X_ERR, Y_ERR)
    with pytest.raises(ValueError, match=r"KNeighborsTimeSeriesClassifier.predict: metric='euclidean' compares series "
                                         r"of one length, 20"):
        euclidean.predict(Q_ERR)  # length 24
    padded = X_ERR.copy()
    padded[0, 15:] = np.nan
    with pytest.raises(ValueError, match=r"KNeighborsTimeSeriesClassifier.fit: metric='euclidean' compares series of "
                                         r"one length"):
        KNeighborsTimeSeriesClassifier(metric="euclidean").fit(padded, Y_ERR)
    inside = X_ERR.copy()
    inside[0, 3] = np.nan
    with pytest.raises(ValueError, match=r"KNeighborsTimeSeriesClassifier.fit: X holds NaN inside a series"):
        KNeighborsTimeSeriesClassifier().fit(inside, Y_ERR)


def test_queries_in_blocks_give_the_same_neighbours(monkeypatch):
    """Large query sets are searched in blocks of queries (bounded memory): the same bits as in one
    block, with and without pruning, for queries and for X=None (where the unblocked unpruned
    search computes each unordered pair once)."""
    from softdtw_torch import neighbors

    X, y, X_test = _random(n_train=25, n_test=9, seed=14)
    results = []
    for limit in (neighbors._MAX_BLOCK_ENTRIES, 60):  # 60 entries: blocks of 2 queries
        monkeypatch.setattr(neighbors, "_MAX_BLOCK_ENTRIES", limit)
        for pruning in (True, False):
            est = KNeighborsTimeSeriesClassifier(n_neighbors=3, metric_params={"sakoe_chiba_radius": 3},
                                                 pruning=pruning).fit(X, y)
            results.append(est.kneighbors(X_test) + est.kneighbors())
            assert est.last_search_.n_pairs == len(X) * (len(X) - 1)
    for outputs in results[1:]:
        for a, b in zip(outputs, results[0]):
            np.testing.assert_array_equal(a, b)
