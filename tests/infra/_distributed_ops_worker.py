"""One rank of tests/infra/test_distributed_ops.py: runs every case under torch.distributed (gloo)
and saves each result, or the error it raised, for the test to compare with one process."""
import datetime
import traceback

import numpy as np
import torch
import torch.distributed as dist

from softdtw_torch import distributed
from softdtw_torch.clustering import SoftDTWKMeans
from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier
from softdtw_torch.rocket import HydraTransformer, MiniRocket, MultiRocket, Rocket
from softdtw_torch.tslearn import TimeSeriesKMeans


def inputs():
    """The collections every rank holds (the test recomputes them in one process)."""
    rng = np.random.default_rng(0)
    X = torch.tensor(rng.normal(size=(9, 24, 2)), dtype=torch.float32)
    Y = torch.tensor(rng.normal(size=(5, 20, 2)), dtype=torch.float32)
    lengths = torch.tensor([24, 20, 17, 24, 9, 13, 24, 22, 5])
    series = rng.normal(size=(11, 2, 40)).astype(np.float32)  # aeon's layout, for the ROCKET family
    train = rng.normal(size=(12, 30, 1))
    labels = np.arange(12) % 3
    test = rng.normal(size=(7, 30, 1))
    return X, Y, lengths, series, train, labels, test


def transformers(series):
    return {
        "Rocket": Rocket(n_kernels=200, random_state=0).fit(series),
        "MiniRocket": MiniRocket(random_state=0).fit(series),
        "MultiRocket": MultiRocket(n_kernels=84, random_state=0).fit(series),
        "Hydra": HydraTransformer(n_kernels=4, n_groups=8, random_state=0).fit(series),
    }


def clustering_inputs():
    """Members for the barycenters and k-means: three groups of ragged series, and wide series
    (more features than the fused kernels take, so the objective runs the unfused path)."""
    rng = np.random.default_rng(1)
    groups = rng.normal(size=(3, 7, 18, 2))
    group_lengths = rng.integers(9, 19, size=(3, 7))
    wide = rng.normal(size=(4, 132, 130))
    series = np.concatenate([rng.normal(loc=c, size=(6, 16, 1)) for c in (-2.0, 0.0, 2.0)])
    return groups, group_lengths, wide, series


def kmeans_fits():
    """name -> (estimator, fit keyword arguments)."""
    return {
        "kmeans_pp": (SoftDTWKMeans(n_clusters=3, gamma=0.5, max_iter=4, barycenter_max_iter=8, random_state=0), {}),
        "kmeans_divergence_random": (SoftDTWKMeans(n_clusters=2, metric_normalize=True, init="random", max_iter=3,
                                                   barycenter_max_iter=5, random_state=1), {}),
        "kmeans_tslearn": (TimeSeriesKMeans(n_clusters=3, metric="softdtw", max_iter=3, max_iter_barycenter=5,
                                            random_state=2), {}),
    }


def fitted_state(estimator):
    """A fitted k-means as one tensor: centers, labels, inertia and iteration count."""
    return torch.cat([torch.as_tensor(estimator.cluster_centers_).double().reshape(-1),
                      torch.as_tensor(estimator.labels_).double(),
                      torch.tensor([estimator.inertia_, estimator.n_iter_], dtype=torch.float64)])


def cases(rank):
    """name -> a call of the distributed function (the test knows each one's single-process twin)."""
    X, Y, lengths, series, train, labels, test = inputs()
    knn = KNeighborsTimeSeriesClassifier(n_neighbors=3).fit(train, labels)
    fitted = transformers(series)
    groups, group_lengths, wide, series_to_cluster = clustering_inputs()
    bad = X.clone()
    bad[4, 3, 0] = float("nan")  # only the chunks holding series 4 fail: on some ranks only
    return {
        "cdist_symmetric": lambda: distributed.cdist_soft_dtw(X, gamma=0.1, chunk_size=7),
        "cdist_xy_normalized_ragged": lambda: distributed.cdist_soft_dtw(
            X, Y, gamma=0.5, normalize=True, x_lengths=lengths, chunk_size=4),
        "cdist_unfused_banded": lambda: distributed.cdist_soft_dtw(X, gamma=1.0, fused=False, bandwidth=3,
                                                                    chunk_size=5),
        "cdist_dtw_numpy": lambda: distributed.cdist_dtw(X.double().numpy(), bandwidth=4, chunk_size=6),
        "kneighbors_predict": lambda: distributed.kneighbors_predict(knn, test),
        **{f"transform_{name}": (lambda est=est: distributed.transform(est, series)) for name, est in fitted.items()},
        "transform_tensor": lambda: distributed.transform(fitted["MiniRocket"], torch.from_numpy(series)),
        "transform_sharded": lambda: _sharded(distributed.transform(fitted["MiniRocket"], series, gather=False)),
        "barycenter": lambda: distributed.softdtw_barycenter(groups[0], gamma=0.5, max_iter=15),
        "barycenter_groups_ragged_divergence": lambda: distributed.softdtw_barycenter(
            torch.from_numpy(groups), gamma=1.0, max_iter=10, x_lengths=group_lengths, normalize=True),
        "barycenter_adam_float32": lambda: distributed.softdtw_barycenter(
            torch.from_numpy(groups[1]).float(), method="adam", max_iter=20),
        "barycenter_unfused": lambda: distributed.softdtw_barycenter(wide, gamma=1.0, max_iter=6),
        # Rank 1's callback asks to stop after the second iteration: every rank stops there.
        "barycenter_callback": lambda: distributed.softdtw_barycenter(
            groups[2], max_iter=15, callback=lambda it, z: rank == 1 and it >= 2),
        **{name: (lambda est=est, kw=kw: fitted_state(distributed.fit(est, series_to_cluster, **kw)))
           for name, (est, kw) in kmeans_fits().items()},
        "kmeans_unseeded": lambda: distributed.fit(SoftDTWKMeans(n_clusters=2), series_to_cluster),
        "kmeans_other_params": lambda: distributed.fit(SoftDTWKMeans(n_clusters=2 + rank, random_state=0),
                                                        series_to_cluster),
        "failing_part": lambda: distributed.cdist_soft_dtw(bad, gamma=0.1, chunk_size=3),
        "different_inputs": lambda: distributed.cdist_soft_dtw(X if rank == 0 else X[:8], gamma=0.1),
        "requires_grad": lambda: distributed.cdist_soft_dtw(X.clone().requires_grad_(), gamma=0.1),
    }


def _sharded(result):
    """A sharded result as one tensor: its case range, then its features."""
    features, (start, stop) = result
    return torch.cat([torch.tensor([start, stop], dtype=torch.float32), torch.as_tensor(features).reshape(-1)])


def run(rank, world, store, out):
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        results = {}
        for name, call in cases(rank).items():
            try:
                value = call()
                results[name] = ("ok", value if isinstance(value, torch.Tensor) else torch.as_tensor(value))
            except Exception as error:  # the test checks which cases raise, and what
                results[name] = ("error", f"{type(error).__name__}: {error}", traceback.format_exc()[-2000:])
            dist.barrier()
        torch.save(results, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def run_with_a_dying_rank(rank, world, store, out):
    """Rank 1 dies (os._exit) before the call; rank 0 must raise, not wait forever: the process
    group's timeout (10 s here) bounds it, and the peer's closed connection usually ends it sooner."""
    import os
    import time

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=10))
    X = inputs()[0]
    if rank == 1:
        os._exit(3)
    start = time.time()
    try:
        distributed.cdist_soft_dtw(X, gamma=0.1, chunk_size=7)
        outcome = "returned"
    except Exception as error:  # the test reads what rank 0 raised, and when
        outcome = f"{type(error).__name__}: {error}"
    torch.save({"outcome": outcome, "seconds": time.time() - start}, f"{out}/survivor.pt")
    os._exit(0)  # no destroy_process_group: its peer is gone


def run_nccl_on_one_gpu(rank, world, store, out):
    """One NCCL rank per GPU (a machine with one GPU runs world size 1): the exchanges on CUDA
    tensors, the success flag on the current device; the test compares with one process on CUDA."""
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{store}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    try:
        X = inputs()[0].cuda()
        groups = torch.from_numpy(clustering_inputs()[0]).cuda()
        results = {"cdist": distributed.cdist_soft_dtw(X, gamma=0.1, chunk_size=7),
                   "barycenter": distributed.softdtw_barycenter(groups, gamma=1.0, max_iter=10)}
        if rank == 0:
            torch.save({name: value.cpu() for name, value in results.items()}, f"{out}/nccl.pt")
    finally:
        dist.destroy_process_group()
