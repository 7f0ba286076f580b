"""softdtw_torch.dask on a real dask.distributed LocalCluster (2 worker processes on loopback,
nothing mocked): the all-pairs matrices, k-NN prediction and the ROCKET family's transforms give
the single-process call's bits; a worker killed in the middle of a computation changes nothing in
the result (Dask reruns its tasks); bad arguments are refused by name before any task runs."""
import os
import signal
import threading
import time

import numpy as np
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import metrics

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (requirements-dev.txt)")
from softdtw_torch import dask as sdask  # noqa: E402

pytestmark = pytest.mark.slow  # a cluster of worker processes that import torch: 20-40 s


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        yield client


RNG = np.random.default_rng(0)
X = RNG.normal(size=(10, 24, 2)).astype(np.float32)
Y = RNG.normal(size=(6, 20, 2)).astype(np.float32)
LENGTHS = np.array([24, 20, 17, 24, 9, 13, 24, 22, 5, 11])
SERIES = RNG.normal(size=(11, 2, 40)).astype(np.float32)


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
