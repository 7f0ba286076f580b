"""softdtw_torch.dask on a real dask.distributed LocalCluster (2 and 4 worker processes on
loopback, nothing mocked): the all-pairs matrices, k-NN prediction, the ROCKET family's transforms,
barycenters and k-means fits give the single-process call's bits; scikit-learn's
cross-validation and grid search run our estimators on the cluster through joblib's Dask backend;
a worker killed in the middle of a computation changes nothing in the result (Dask reruns its
tasks); bad arguments are refused by name before any task runs."""
import os
import signal
import threading
import time

import numpy as np
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import metrics
from softdtw_torch.barycenter import softdtw_barycenter

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (requirements-dev.txt)")
import dask.array as dask_array  # noqa: E402

from softdtw_torch import dask as sdask  # noqa: E402

pytestmark = pytest.mark.slow  # clusters of worker processes that import torch: 20-40 s each


WORKERS = [2, 4]


@pytest.fixture(scope="module", params=WORKERS, ids=[f"{n}-workers" for n in WORKERS])
def client(request):
    cluster = distributed.LocalCluster(n_workers=request.param, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    with cluster, distributed.Client(cluster) as client:
        yield client


RNG = np.random.default_rng(0)
X = RNG.normal(size=(10, 24, 2)).astype(np.float32)
Y = RNG.normal(size=(6, 20, 2)).astype(np.float32)
LENGTHS = np.array([24, 20, 17, 24, 9, 13, 24, 22, 5, 11])
SERIES = RNG.normal(size=(11, 2, 40)).astype(np.float32)
WEIGHTS = np.array([1.0, 0.0, 2.0, 0.5, 1.0, 1.0, 0.0, 3.0, 1.0, 0.25, 1.0])  # zero weights drop members


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    assert np.array_equal(got, want), np.abs(got.astype(float) - want.astype(float)).max()


CDIST_CASES = {
    "symmetric": (lambda: sdask.cdist_soft_dtw(X, gamma=0.1, block_size=3), lambda: st.cdist_soft_dtw(X, gamma=0.1)),
    "xy_normalized_ragged": (
        lambda: sdask.cdist_soft_dtw(X, Y, gamma=0.5, normalize=True, x_lengths=LENGTHS, block_size=4),
        lambda: st.cdist_soft_dtw(X, Y, gamma=0.5, normalize=True, x_lengths=LENGTHS)),
    "symmetric_normalized_banded": (
        lambda: sdask.cdist_soft_dtw(X, gamma=1.0, normalize=True, bandwidth=3, block_size=4),
        lambda: st.cdist_soft_dtw(X, gamma=1.0, normalize=True, bandwidth=3)),
    "dtw_float64_itakura": (
        lambda: sdask.cdist_dtw(X.astype(np.float64), itakura_max_slope=2.0, block_size=3),
        lambda: metrics.cdist_dtw(X.astype(np.float64), itakura_max_slope=2.0)),
    "tensor_input": (lambda: sdask.cdist_soft_dtw(torch.from_numpy(X), gamma=0.1, block_size=4),
                     lambda: st.cdist_soft_dtw(X, gamma=0.1)),
}


@pytest.mark.parametrize("name", list(CDIST_CASES))
def test_all_pairs_matrices_are_the_single_process_bits(client, name):
    lazy, single = CDIST_CASES[name]
    matrix = lazy()
    assert matrix.numblocks[0] > 1  # several tasks, not one
    _same(client.compute(matrix).result(timeout=120), single())


@pytest.mark.parametrize("name", ["Rocket", "MiniRocket", "MultiRocket", "Hydra"])
def test_transforms_are_the_single_process_bits(client, name):
    from softdtw_torch.rocket import HydraTransformer, MiniRocket, MultiRocket, Rocket

    make = {"Rocket": lambda: Rocket(n_kernels=200, random_state=0), "MiniRocket": lambda: MiniRocket(random_state=0),
            "MultiRocket": lambda: MultiRocket(n_kernels=84, random_state=0),
            "Hydra": lambda: HydraTransformer(n_kernels=4, n_groups=8, random_state=0)}[name]
    estimator = make().fit(SERIES)
    features = sdask.transform(estimator, SERIES, chunk_size=4)
    assert features.numblocks[0] == 3
    _same(client.compute(features).result(timeout=120), estimator.transform(SERIES))


def test_kneighbors_prediction_is_the_single_process_one(client):
    train, labels = RNG.normal(size=(12, 30, 1)), np.array(list("abc") * 4)
    test = RNG.normal(size=(9, 30, 1))
    knn = st.KNeighborsTimeSeriesClassifier(n_neighbors=3).fit(train, labels)
    _same(client.compute(sdask.kneighbors_predict(knn, test, chunk_size=2)).result(timeout=120), knn.predict(test))


MEMBERS = RNG.normal(size=(11, 18, 2))
BARYCENTER_CASES = {
    "numpy_default_init": (lambda: sdask.softdtw_barycenter(MEMBERS, gamma=0.5, max_iter=12, chunk_size=4),
                           lambda: softdtw_barycenter(MEMBERS, gamma=0.5, max_iter=12)),
    "dask_float32_weights_divergence_adam": (
        lambda: sdask.softdtw_barycenter(dask_array.from_array(MEMBERS.astype(np.float32), chunks=(3, 18, 2)),
                                         weights=WEIGHTS, normalize=True, method="adam", max_iter=15),
        lambda: softdtw_barycenter(torch.from_numpy(MEMBERS.astype(np.float32)), weights=WEIGHTS, normalize=True,
                                   method="adam", max_iter=15).numpy()),
    "univariate_given_init_other_length_band": (
        lambda: sdask.softdtw_barycenter(MEMBERS[..., 0], init=MEMBERS[0, :12, :1], bandwidth=4, max_iter=10,
                                         chunk_size=5),
        lambda: softdtw_barycenter(MEMBERS[..., 0], init=MEMBERS[0, :12, :1], bandwidth=4, max_iter=10)),
}


@pytest.mark.parametrize("name", list(BARYCENTER_CASES))
def test_barycenters_are_the_single_process_bits(client, name):
    lazy, single = BARYCENTER_CASES[name]
    _same(lazy(), single())


CLUSTERED = np.concatenate([RNG.normal(loc=c, size=(7, 16, 2)) for c in (-2.0, 0.0, 2.0)])


def _kmeans_cases():
    from softdtw_torch.clustering import SoftDTWKMeans
    from softdtw_torch.tslearn import TimeSeriesKMeans

    return {
        "kmeans_pp": (lambda: SoftDTWKMeans(n_clusters=3, gamma=0.5, max_iter=4, barycenter_max_iter=8,
                                            random_state=0), CLUSTERED),
        "divergence_random_float32": (lambda: SoftDTWKMeans(n_clusters=2, metric_normalize=True, init="random",
                                                            max_iter=3, barycenter_max_iter=5, random_state=1),
                                      CLUSTERED.astype(np.float32)),
        "tslearn_univariate": (lambda: TimeSeriesKMeans(n_clusters=3, metric="softdtw", max_iter=3,
                                                        max_iter_barycenter=5, random_state=2), CLUSTERED[..., 0]),
    }


@pytest.mark.parametrize("name", ["kmeans_pp", "divergence_random_float32", "tslearn_univariate"])
def test_kmeans_fits_are_the_single_process_bits(client, name):
    make, series = _kmeans_cases()[name]
    on_cluster = sdask.fit(make(), dask_array.from_array(series, chunks=(5,) + series.shape[1:]))
    alone = make().fit(series)
    _same(on_cluster.cluster_centers_, alone.cluster_centers_)
    _same(on_cluster.labels_, alone.labels_)
    assert (on_cluster.inertia_, on_cluster.n_iter_) == (alone.inertia_, alone.n_iter_)
    _same(on_cluster.predict(series), alone.predict(series))


def test_a_worker_with_another_softdtw_torch_is_refused_by_name(client):
    """One worker of the real cluster made to report another version (its module's attribute, set
    on that worker), then to fail importing softdtw_torch: every function refuses before building
    any task, naming the worker."""
    address = sorted(client.scheduler_info()["workers"])[0]

    def set_version(version):
        import softdtw_torch

        previous, softdtw_torch.__version__ = softdtw_torch.__version__, version
        return previous

    def hide_package(hidden):  # `import softdtw_torch` fails on that worker while hidden
        import sys

        if hidden:
            sys.modules["_softdtw_torch_hidden"] = sys.modules["softdtw_torch"]
            sys.modules["softdtw_torch"] = None
        else:
            sys.modules["softdtw_torch"] = sys.modules.pop("_softdtw_torch_hidden")

    real = client.run(set_version, "0.0.0-another", workers=[address])[address]
    try:
        for call in (lambda: sdask.cdist_soft_dtw(X, block_size=4), lambda: sdask.softdtw_barycenter(MEMBERS),
                     lambda: sdask.transform(None, SERIES), lambda: sdask.fit(st.SoftDTWKMeans(), MEMBERS)):
            with pytest.raises(ValueError, match=f"every Dask worker must run softdtw_torch {st.__version__}.*"
                                                 f"worker {address} has 0.0.0-another"):
                call()
    finally:
        client.run(set_version, real, workers=[address])
    client.run(hide_package, True, workers=[address])
    try:
        with pytest.raises(ValueError, match=f"worker {address} has no importable softdtw_torch"):
            sdask.kneighbors_predict(None, X)
    finally:
        client.run(hide_package, False, workers=[address])
    _same(client.compute(sdask.cdist_soft_dtw(X, gamma=0.1, block_size=4)).result(timeout=120),
          st.cdist_soft_dtw(X, gamma=0.1))


def test_fit_refuses_other_estimators():
    with pytest.raises(TypeError, match="softdtw_torch.dask.fit: expected a SoftDTWKMeans"):
        sdask.fit(st.KNeighborsTimeSeriesClassifier(), X)


def test_arrays_persisted_on_the_workers_are_read_where_they_are(client):
    """A dask array whose chunks live on the cluster (``client.persist``): its first case is read
    through the cluster, not by a local scheduler that cannot see the chunks."""
    from softdtw_torch.rocket import MiniRocket

    members = client.persist(dask_array.from_array(MEMBERS, chunks=(4, 18, 2)))
    _same(sdask.softdtw_barycenter(members, max_iter=5), softdtw_barycenter(MEMBERS, max_iter=5))
    rocket = MiniRocket(random_state=0).fit(SERIES)
    series = client.persist(dask_array.from_array(SERIES, chunks=(5, 2, 40)))
    features = sdask.transform(rocket, series)
    assert features.numblocks[0] == 3  # the array's chunks of cases, kept: a task each
    _same(client.compute(features).result(timeout=120), rocket.transform(SERIES))


def test_barycenter_members_with_nan_are_refused_by_name(client):
    bad = MEMBERS.copy()
    bad[7, 3, 1] = np.nan
    with pytest.raises(ValueError, match="softdtw_torch.dask.softdtw_barycenter: X holds NaN or inf"):
        sdask.softdtw_barycenter(bad, max_iter=3, chunk_size=4)


def test_scikit_learn_meta_estimators_run_our_estimators_on_the_cluster(client):
    """joblib's dask backend, as scikit-learn users select it: the folds of cross_val_score and the
    candidates of GridSearchCV run on the cluster's workers (each unpickles the estimator and imports
    softdtw_torch there), with the scores of a single process."""
    import joblib
    from sklearn.model_selection import GridSearchCV, cross_val_score

    series = RNG.normal(size=(24, 1, 60)).astype(np.float32)
    labels = np.repeat([0, 1], 12)
    series[labels == 1, 0, 20:40] += 2.0
    rocket = st.MiniRocketClassifier(random_state=0)
    alone = cross_val_score(rocket, series, labels, cv=3)
    before = sum(client.run(lambda dask_worker: len(dask_worker.data) + dask_worker.state.executed_count).values())
    with joblib.parallel_config(backend="dask"):
        on_cluster = cross_val_score(rocket, series, labels, cv=3, n_jobs=2)
        search = GridSearchCV(st.KNeighborsTimeSeriesClassifier(), {"n_neighbors": [1, 3]}, cv=3, n_jobs=2)
        search.fit(series.transpose(0, 2, 1), labels)
    after = sum(client.run(lambda dask_worker: len(dask_worker.data) + dask_worker.state.executed_count).values())
    assert after > before, "no task ran on the cluster's workers"
    np.testing.assert_array_equal(on_cluster, alone)
    serial = GridSearchCV(st.KNeighborsTimeSeriesClassifier(), {"n_neighbors": [1, 3]}, cv=3)
    serial.fit(series.transpose(0, 2, 1), labels)
    np.testing.assert_array_equal(search.cv_results_["mean_test_score"], serial.cv_results_["mean_test_score"])


def test_a_worker_killed_mid_computation_changes_nothing(client):
    data = np.random.default_rng(1).normal(size=(36, 64, 2))
    matrix = sdask.cdist_soft_dtw(data, gamma=0.1, block_size=3)  # 78 tasks of 9 pairs
    want = st.cdist_soft_dtw(data, gamma=0.1)
    pids = client.run(os.getpid)  # worker address -> its process id
    future = client.compute(matrix)
    killed = []

    def kill_one_worker_once_work_is_under_way():
        deadline = time.time() + 60
        while time.time() < deadline and not future.done():
            processing = client.processing()
            busy = [address for address, tasks in processing.items() if tasks]
            if busy:
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed.append(busy[0])
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_worker_once_work_is_under_way)
    killer.start()
    got = future.result(timeout=180)
    killer.join()
    assert killed, "no worker was busy to kill: the test did not test a failure"
    _same(got, want)


def test_bad_arguments_are_refused_before_any_task():
    with pytest.raises(ValueError, match="softdtw_torch.dask.cdist_soft_dtw: a Dask graph is not differentiable"):
        sdask.cdist_soft_dtw(torch.randn(4, 5, 1, requires_grad=True))
    with pytest.raises(TypeError, match="softdtw_torch.dask.cdist_soft_dtw: expected block_size to be an int"):
        sdask.cdist_soft_dtw(X, block_size=2.5)
    with pytest.raises(ValueError, match="softdtw_torch.dask.cdist_dtw: expected block_size >= 1"):
        sdask.cdist_dtw(X, block_size=0)
    with pytest.raises(TypeError, match="expected X to be a real numeric array"):
        sdask.cdist_soft_dtw(X.astype(complex))
    with pytest.raises(TypeError, match="expected gamma to be a float"):
        sdask.cdist_soft_dtw(X, gamma=torch.tensor(0.5))
