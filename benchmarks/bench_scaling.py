"""Scale-out overhead: the all-pairs soft-DTW matrix and MiniRocket features on 1 and 2 torch.distributed
ranks (gloo, loopback) and on Dask (1 and 2 worker processes of a LocalCluster), next to the
single-process call with the same total number of threads, each result checked bit for bit against
it. On a machine of T cores, T ranks of 1 thread each against one process of T threads measure the
overhead of the split (process start excluded: the group and the cluster are up before timing),
not a speed-up.

    python benchmarks/bench_scaling.py [--threads 2] [--series 400] [--length 128] [--repeats 3]

Prints a markdown table: median wall seconds, and each engine's time over the single process's.
The communication each operation needs per unit of work is written out in docs/user_guide/scaling.md
("What it costs to scale").
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _threads import available_cores, set_thread_env_from_argv  # noqa: E402

set_thread_env_from_argv()  # before torch is imported: OpenMP reads it once


def _median(call, repeats):
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _rank_main(rank, world, store, args, out):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(max(1, args.threads // world))
    from softdtw_torch import distributed
    from softdtw_torch.rocket import MiniRocket

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    X, series = _data(args)
    rocket = MiniRocket(random_state=0).fit(series[:20])
    with torch.no_grad():
        cdist = _median(lambda: distributed.cdist_soft_dtw(X, gamma=0.1, chunk_size=args.chunk_size), args.repeats)
        features = _median(lambda: distributed.transform(rocket, series), args.repeats)
        matrix = distributed.cdist_soft_dtw(X, gamma=0.1, chunk_size=args.chunk_size)
        feats = distributed.transform(rocket, series)
    if rank == 0:
        torch.save({"cdist": cdist, "transform": features, "matrix": matrix, "features": torch.as_tensor(feats)}, out)
    dist.destroy_process_group()


def _data(args):
    import torch

    rng = np.random.default_rng(0)
    X = torch.tensor(rng.normal(size=(args.series, args.length, 3)), dtype=torch.float32)
    series = rng.normal(size=(args.cases, 1, args.length * 4)).astype(np.float32)
    return X, series


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=available_cores())
    parser.add_argument("--series", type=int, default=400, help="series of the all-pairs matrix")
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--cases", type=int, default=2000, help="cases of the MiniRocket transform")
    parser.add_argument("--chunk-size", type=int, default=1024)
    parser.add_argument("--block-size", type=int, default=100, help="Dask block size of the all-pairs matrix")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import torch
    import torch.multiprocessing as mp

    torch.set_num_threads(args.threads)

    import softdtw_torch as st
    from softdtw_torch import dask as sdask
    from softdtw_torch.rocket import MiniRocket

    X, series = _data(args)
    rocket = MiniRocket(random_state=0).fit(series[:20])
    rows = []
    with torch.no_grad():
        single_cdist = _median(lambda: st.cdist_soft_dtw(X, gamma=0.1, chunk_size=args.chunk_size), args.repeats)
        single_transform = _median(lambda: rocket.transform(series), args.repeats)
        matrix = st.cdist_soft_dtw(X, gamma=0.1, chunk_size=args.chunk_size)
        features = torch.as_tensor(rocket.transform(series))
    rows.append(("one process", args.threads, single_cdist, single_transform, True))

    for world in (1, 2):
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "result.pt")
            mp.spawn(_rank_main, args=(world, os.path.join(folder, "store"), args, out), nprocs=world, join=True)
            got = torch.load(out, weights_only=False)
        same = torch.equal(got["matrix"], matrix) and torch.equal(got["features"], features)
        rows.append((f"torch.distributed, {world} rank(s) of {max(1, args.threads // world)} thread(s)", world,
                     got["cdist"], got["transform"], same))

    from dask.distributed import Client, LocalCluster

    for workers in (1, 2):
        threads = max(1, args.threads // workers)
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=40, env={"OMP_NUM_THREADS": str(threads)}) as cluster, Client(cluster) as client:
            client.run(lambda: __import__("torch").set_num_threads(threads))
            lazy_matrix = sdask.cdist_soft_dtw(X.numpy(), gamma=0.1, block_size=args.block_size)
            lazy_features = sdask.transform(rocket, series, chunk_size=max(1, args.cases // (4 * workers)))
            cdist = _median(lambda: lazy_matrix.compute(), args.repeats)
            transform = _median(lambda: lazy_features.compute(), args.repeats)
            same = (np.array_equal(lazy_matrix.compute(), matrix.numpy())
                    and np.array_equal(lazy_features.compute(), features.numpy()))
        rows.append((f"Dask LocalCluster, {workers} worker process(es) of {threads} thread(s)", workers, cdist,
                     transform, same))

    print(f"all-pairs soft-DTW: {args.series} series x {args.length} steps x 3 features (float32, gamma=0.1, "
          f"{args.series * (args.series + 1) // 2} pairs); MiniRocket transform: {args.cases} cases x "
          f"{args.length * 4} steps; {args.threads} threads in all; median of {args.repeats}")
    print()
    print("| engine | cdist_soft_dtw (s) | vs one process | MiniRocket transform (s) | vs one process | same bits |")
    print("|---|---:|---:|---:|---:|---|")
    for name, _, cdist, transform, same in rows:
        print(f"| {name} | {cdist:.3f} | {cdist / single_cdist:.2f}x | {transform:.3f} | "
              f"{transform / single_transform:.2f}x | {'yes' if same else 'NO'} |")
    return 0 if all(row[4] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
