"""Scaling out on GunPoint: the all-pairs soft-DTW matrix, 1-NN DTW prediction, MiniRocket
features, a class barycenter and soft-DTW k-means, on Dask or on torch.distributed ranks, each
result compared bit for bit with the single-process call.

- ``--engine dask`` (the default) starts a ``LocalCluster`` of ``--workers`` worker processes on
  this machine, or connects to a running cluster with ``--scheduler tcp://host:8786`` (its workers
  need softdtw_torch installed, the same version: the calls refuse a cluster where they differ).
- ``--engine torch`` spawns ``--workers`` gloo ranks on loopback; under ``torchrun`` (the
  ``RANK``/``WORLD_SIZE`` variables set) each process is one rank of the launcher's group instead.

Run:  python examples/scale_out.py [--engine dask|torch] [--workers 2] [--scheduler ADDRESS]
      torchrun --nproc-per-node 4 examples/scale_out.py --engine torch
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import softdtw_torch as st
from softdtw_torch.barycenter import softdtw_barycenter
from softdtw_torch.clustering import SoftDTWKMeans
from softdtw_torch.datasets import load_gunpoint
from softdtw_torch.rocket import MiniRocket


def gunpoint():
    """GunPoint's train and test splits, tslearn's layout (n, 150, 1), float64."""
    train, train_labels = load_gunpoint("train")
    test, _ = load_gunpoint("test")
    return train.transpose(0, 2, 1), train_labels, test.transpose(0, 2, 1)


def single_process(train, labels, test):
    """Each operation in one process: the results every engine must reproduce."""
    knn = st.KNeighborsTimeSeriesClassifier(n_neighbors=1).fit(train, labels)
    rocket = MiniRocket(random_state=0).fit(train.transpose(0, 2, 1))
    return {
        "all-pairs soft-DTW": st.cdist_soft_dtw(train, gamma=0.1),
        "1-NN DTW prediction": knn.predict(test),
        "MiniRocket features": rocket.transform(test.transpose(0, 2, 1)),
        "barycenter of class 1": softdtw_barycenter(train[labels == labels[0]], gamma=1.0, max_iter=20),
        "k-means centers": SoftDTWKMeans(n_clusters=2, max_iter=5, random_state=0).fit(train).cluster_centers_,
    }, knn, rocket


def on_dask(args, train, labels, test, knn, rocket):
    import dask.array
    from dask.distributed import Client, LocalCluster

    from softdtw_torch import dask as sdask

    if args.scheduler:
        client, cluster = Client(args.scheduler), None
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None, silence_logs=40)
        client = Client(cluster)
    try:
        print(f"Dask: {len(client.scheduler_info()['workers'])} workers ({args.scheduler or 'a LocalCluster here'})")
        members = client.persist(dask.array.from_array(train[labels == labels[0]], chunks=(8, -1, -1)))
        series = client.persist(dask.array.from_array(train, chunks=(10, -1, -1)))
        return {
            "all-pairs soft-DTW": sdask.cdist_soft_dtw(train, gamma=0.1, block_size=16).compute(),
            "1-NN DTW prediction": sdask.kneighbors_predict(knn, test, chunk_size=40).compute(),
            "MiniRocket features": sdask.transform(rocket, test.transpose(0, 2, 1), chunk_size=40).compute(),
            "barycenter of class 1": sdask.softdtw_barycenter(members, gamma=1.0, max_iter=20),
            "k-means centers": sdask.fit(SoftDTWKMeans(n_clusters=2, max_iter=5, random_state=0),
                                         series).cluster_centers_,
        }
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def torch_rank(rank, world, init_method, out):
    """One rank: every rank calls the same functions on the same data; rank 0 saves the results."""
    import torch.distributed as dist

    from softdtw_torch import distributed

    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    try:
        train, labels, test = gunpoint()
        knn = st.KNeighborsTimeSeriesClassifier(n_neighbors=1).fit(train, labels)
        rocket = MiniRocket(random_state=0).fit(train.transpose(0, 2, 1))
        results = {
            "all-pairs soft-DTW": distributed.cdist_soft_dtw(train, gamma=0.1),
            "1-NN DTW prediction": distributed.kneighbors_predict(knn, test),
            "MiniRocket features": distributed.transform(rocket, test.transpose(0, 2, 1)),
            "barycenter of class 1": distributed.softdtw_barycenter(train[labels == labels[0]], gamma=1.0,
                                                                    max_iter=20),
            "k-means centers": distributed.fit(SoftDTWKMeans(n_clusters=2, max_iter=5, random_state=0),
                                               train).cluster_centers_,
        }
        if rank == 0 and out:
            np.savez(out, **results)
        return results
    finally:
        dist.destroy_process_group()


def on_torch(args):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # under torchrun: this process is one rank
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        print(f"torch.distributed: rank {rank} of {world} (torchrun)")
        return torch_rank(rank, world, "env://", None)
    import torch.multiprocessing as mp

    print(f"torch.distributed: {args.workers} gloo ranks spawned on loopback")
    folder = tempfile.mkdtemp()
    out = os.path.join(folder, "results.npz")
    mp.spawn(torch_rank, args=(args.workers, f"file://{os.path.join(folder, 'store')}", out), nprocs=args.workers,
             join=True)
    with np.load(out, allow_pickle=False) as saved:
        return {name: saved[name] for name in saved.files}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", choices=["dask", "torch"], default="dask")
    parser.add_argument("--workers", type=int, default=2, help="Dask workers or torch.distributed ranks to start")
    parser.add_argument("--scheduler", default=None, help="a running Dask scheduler's address (default: a local one)")
    args = parser.parse_args(argv)

    train, labels, test = gunpoint()
    want, knn, rocket = single_process(train, labels, test)
    start = time.perf_counter()
    got = on_dask(args, train, labels, test, knn, rocket) if args.engine == "dask" else on_torch(args)
    print(f"{len(want)} operations in {time.perf_counter() - start:.1f} s")
    same = True
    for name, expected in want.items():
        equal = bool(np.array_equal(np.asarray(got[name]), np.asarray(expected)))
        same &= equal
        print(f"  {name}: shape {np.asarray(got[name]).shape}, same bits as one process: {equal}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
