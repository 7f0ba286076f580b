"""Scale-out overhead and weak scaling: the all-pairs soft-DTW matrix, MiniRocket features, a soft-DTW
barycenter and a soft-DTW k-means fit on 1 and 2 torch.distributed ranks (gloo, loopback) and on
Dask (1 and 2 worker processes of a LocalCluster), next to the single-process call, each result
checked bit for bit against it.

- Strong scaling (the default): the same problem everywhere, T threads in all. On a machine of T
  cores, T ranks of 1 thread each against one process of T threads measure the overhead of the
  split (process start excluded: the group and the cluster are up before timing), not a speed-up.
- ``--weak``: W ranks or workers of T threads each on a problem W times as large (W times the pairs
  of the matrix, the cases, the members), against one process of T threads on the base problem;
  ideally the time stays the same. Needs W·T cores: ``--threads 1`` on 2 cores.

    python benchmarks/bench_scaling.py [--threads 2] [--series 300] [--length 128] [--repeats 3]
    python benchmarks/bench_scaling.py --weak --threads 1

Prints a markdown table: median wall seconds, and each engine's time over the reference's.
The communication each operation needs per unit of work is written out in docs/user_guide/scaling.md
("What it costs to scale").
"""
import argparse
import math
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _threads import available_cores, set_thread_env_from_argv  # noqa: E402

set_thread_env_from_argv()  # before torch is imported: OpenMP reads it once

OPERATIONS = ("cdist", "transform", "barycenter", "kmeans")


def _median(call, repeats):
    call()
    if not repeats:
        return float("nan")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _data(args, scale=1):
    """The problem, ``scale`` times as large: pairs of the matrix (series × √scale), cases, members."""
    import torch

    rng = np.random.default_rng(0)
    series = int(round(args.series * math.sqrt(scale)))
    return {
        "X": torch.tensor(rng.normal(size=(series, args.length, 3)), dtype=torch.float32),
        "cases": rng.normal(size=(args.cases * scale, 1, args.length * 4)).astype(np.float32),
        "members": rng.normal(size=(args.members * scale, args.length, 3)).astype(np.float32),
    }


def _settings(args, data):
    """The barycenter's and the k-means' settings, and the k-means' series: a fixed amount of work
    (tol=0: every iteration runs)."""
    barycenter = dict(gamma=1.0, max_iter=args.iterations, tol=0.0)
    kmeans = dict(n_clusters=3, max_iter=2, tol=0.0, barycenter_max_iter=args.iterations, barycenter_tol=0.0,
                  random_state=0)
    return barycenter, kmeans, data["members"][: args.kmeans_members * (len(data["members"]) // args.members)]


def _calls(module, args, data, rocket):
    """operation -> a call of ``module``'s function (softdtw_torch's single-process functions or
    softdtw_torch.distributed's)."""
    from softdtw_torch.clustering import SoftDTWKMeans

    barycenter, kmeans, members = _settings(args, data)
    if module is None:
        import softdtw_torch as st
        from softdtw_torch.barycenter import softdtw_barycenter

        return {"cdist": lambda: st.cdist_soft_dtw(data["X"], gamma=0.1, chunk_size=args.chunk_size),
                "transform": lambda: rocket.transform(data["cases"]),
                "barycenter": lambda: softdtw_barycenter(data["members"], **barycenter),
                "kmeans": lambda: SoftDTWKMeans(**kmeans).fit(members).cluster_centers_}
    return {"cdist": lambda: module.cdist_soft_dtw(data["X"], gamma=0.1, chunk_size=args.chunk_size),
            "transform": lambda: module.transform(rocket, data["cases"]),
            "barycenter": lambda: module.softdtw_barycenter(data["members"], **barycenter),
            "kmeans": lambda: module.fit(SoftDTWKMeans(**kmeans), members).cluster_centers_}


def _results(calls, repeats):
    import torch

    times, values = {}, {}
    with torch.no_grad():
        for name, call in calls.items():
            times[name] = _median(call, repeats)
            values[name] = torch.as_tensor(call())
    return times, values


def _rank_main(rank, world, store, args, threads, scale, out):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(threads)
    from softdtw_torch import distributed
    from softdtw_torch.rocket import MiniRocket

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    data = _data(args, scale)
    rocket = MiniRocket(random_state=0).fit(data["cases"][:20])
    times, values = _results(_calls(distributed, args, data, rocket), args.repeats)
    if rank == 0:
        torch.save({"times": times, "values": values}, out)
    dist.destroy_process_group()


def _dask_results(workers, threads, args, data, rocket):
    from dask.distributed import Client, LocalCluster

    from softdtw_torch import dask as sdask
    from softdtw_torch.clustering import SoftDTWKMeans

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40, env={"OMP_NUM_THREADS": str(threads)}) as cluster, Client(cluster) as client:
        client.run(lambda: __import__("torch").set_num_threads(threads))
        lazy_matrix = sdask.cdist_soft_dtw(data["X"].numpy(), gamma=0.1, block_size=args.block_size)
        lazy_features = sdask.transform(rocket, data["cases"], chunk_size=max(1, len(data["cases"]) // (4 * workers)))
        barycenter, kmeans, kmeans_series = _settings(args, data)

        def on_workers(series):  # two chunks per worker, persisted
            return client.persist(_dask_array().from_array(series, chunks=(-(-len(series) // (2 * workers)), -1, -1)))

        members, kmeans_members = on_workers(data["members"]), on_workers(kmeans_series)
        calls = {"cdist": lazy_matrix.compute, "transform": lazy_features.compute,
                 "barycenter": lambda: sdask.softdtw_barycenter(members, **barycenter),
                 "kmeans": lambda: sdask.fit(SoftDTWKMeans(**kmeans), kmeans_members).cluster_centers_}
        return _results(calls, args.repeats)


def _dask_array():
    import dask.array

    return dask.array


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=available_cores())
    parser.add_argument("--series", type=int, default=300, help="series of the all-pairs matrix")
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--cases", type=int, default=2000, help="cases of the MiniRocket transform")
    parser.add_argument("--members", type=int, default=400, help="members of the barycenter")
    parser.add_argument("--kmeans-members", type=int, default=150, help="series of the k-means fit")
    parser.add_argument("--iterations", type=int, default=10, help="L-BFGS iterations of each barycenter")
    parser.add_argument("--chunk-size", type=int, default=1024)
    parser.add_argument("--block-size", type=int, default=100, help="Dask block size of the all-pairs matrix")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per round (after one untimed)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over all the configurations, interleaved")
    parser.add_argument("--weak", action="store_true", help="weak scaling: --threads per rank, the problem x ranks")
    args = parser.parse_args()

    import torch
    import torch.multiprocessing as mp

    from softdtw_torch.rocket import MiniRocket

    def distributed_run(world, threads, scale):
        # The ranks' OpenMP pools sized as their threads from the start (a pool started larger and
        # shrunk with set_num_threads runs these kernels up to 25 % slower here), as the Dask workers'.
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "result.pt")
            mp.spawn(_rank_main, args=(world, os.path.join(folder, "store"), args, threads, scale, out), nprocs=world,
                     join=True)
            got = torch.load(out, weights_only=False)
        return got["times"], got["values"]

    # The configurations, in table order: (name, how to run it, the problem's scale). Every round
    # runs each once, in this order, so that the VM's drift (up to 30 % over minutes here) falls on
    # every row alike; each row's time is its median over the rounds.
    configurations = [(f"one process, {args.threads} thread(s)", "single", args.threads, 1)]
    for world in (1, 2):
        scale = world if args.weak else 1
        rank_threads = args.threads if args.weak else max(1, args.threads // world)
        suffix = f", problem x{scale}" if args.weak else ""
        if scale != 1:
            configurations.append((f"one process, {args.threads} thread(s){suffix}", "single", args.threads, scale))
        configurations.append((f"torch.distributed, {world} rank(s) of {rank_threads} thread(s){suffix}",
                               ("torch", world), rank_threads, scale))
        configurations.append((f"Dask, {world} worker process(es) of {rank_threads} thread(s){suffix}",
                               ("dask", world), rank_threads, scale))
    problems = {}
    for scale in sorted({c[3] for c in configurations}):  # the data, the fitted MiniRocket, the single-process values
        data = _data(args, scale)
        rocket = MiniRocket(random_state=0).fit(data["cases"][:20])
        torch.set_num_threads(args.threads)
        problems[scale] = (data, rocket, _results(_calls(None, args, data, rocket), 0)[1])
    times = {c[0]: {op: [] for op in OPERATIONS} for c in configurations}
    same = {c[0]: True for c in configurations}
    for _ in range(args.rounds):
        for name, how, threads, scale in configurations:
            data, rocket, single_values = problems[scale]
            if how == "single":
                torch.set_num_threads(threads)
                got, values = _results(_calls(None, args, data, rocket), args.repeats)
            elif how[0] == "torch":
                got, values = distributed_run(how[1], threads, scale)
            else:
                got, values = _dask_results(how[1], threads, args, data, rocket)
            for op, seconds in got.items():
                times[name][op].append(seconds)
            same[name] &= all(torch.equal(values[op], single_values[op]) for op in values)
    medians = {name: {op: statistics.median(t) for op, t in ops.items() if t} for name, ops in times.items()}
    reference = medians[configurations[0][0]]
    rows = [(name, medians[name], reference, same[name]) for name, *_ in configurations]

    mode = f"weak scaling ({args.threads} thread(s) per process, the problem x ranks)" if args.weak else \
        f"strong scaling ({args.threads} threads in all)"
    print(f"{mode}: all-pairs soft-DTW of {args.series} series x {args.length} steps x 3 features (float32, "
          f"gamma=0.1); "
          f"MiniRocket on {args.cases} cases x {args.length * 4} steps; barycenter of {args.members} members x "
          f"{args.length} steps x 3 features ({args.iterations} L-BFGS iterations); k-means (3 clusters, 2 "
          f"iterations) of {args.kmeans_members}; median over {args.rounds} interleaved rounds of the median of "
          f"{args.repeats}")
    print()
    header = " | ".join(f"{op} (s) | vs ref" for op in OPERATIONS)
    print(f"| engine | {header} | same bits |")
    print("|---|" + "---:|---:|" * len(OPERATIONS) + "---|")
    for name, times, reference, same in rows:
        cells = " | ".join(f"{times[op]:.3f} | {times[op] / reference[op]:.2f}x" if op in times else "— | —"
                           for op in OPERATIONS)
        print(f"| {name} | {cells} | {'yes' if same else 'NO'} |")
    return 0 if all(row[3] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
