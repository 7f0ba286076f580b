"""CPU benchmark: 1-NN DTW classification, softdtw_torch's KNeighborsTimeSeriesClassifier (with and
without lower-bound pruning) against tslearn's, side by side in one process on the same threads.

What is timed, for every implementation: ``clf.fit(X_train, y_train); clf.predict(X_test)`` with
``n_neighbors=1, metric="dtw"`` (fit only stores the series: the time is the search), float64
series in tslearn's layout (n_cases, n_timepoints, 1). One warm-up call per implementation and
case (on the first 20 test series: numba's JIT, torch's allocator), then the median of ``--repeats``
timed calls (``time.perf_counter``).

Cases: each data set without a band (tslearn's default, ``metric_params=None``) and with a
Sakoe–Chiba band of radius round(0.1·length) (``metric_params={"sakoe_chiba_radius": r}``).

Data sets:

* ArrowHead, aeon's bundled copy (``aeon.datasets.load_arrow_head``): 36 train, 175 test series of
  length 251, 3 classes; every test series is a query.
* synthetic (``--synthetic N_TRAIN,N_TEST,LENGTH``, default 1000,1000,128: "a 1,000 x 1,000 set" read
  as 1,000 training and 1,000 test series, univariate, length 128): 4 classes, each a smooth random
  prototype (3 sinusoids of frequencies 1-4 with random amplitudes and phases); every series is its
  class's prototype, time-warped (t -> t + s·sin(πt), s uniform in [-0.15, 0.15], monotone),
  scaled by a uniform factor in [0.8, 1.2], plus Gaussian noise of standard deviation 0.3, then
  z-normalised; labels drawn uniformly; fixed seed 0.

tslearn: ``tslearn.neighbors.KNeighborsTimeSeriesClassifier(n_neighbors=1, metric="dtw")``, timed
with ``n_jobs=None`` (one thread, what users get by default) and ``n_jobs=threads`` (joblib threads
over the pairs, numba releases the GIL); the faster of the two is the reference of the speed-ups.
On the synthetic set it runs on the first ``--tslearn-queries`` test series only (default 100: the
whole set would take minutes per case); its time is multiplied by n_test / n_queries (every query
costs the same number of pairs of one length, so the time is linear in the queries) and marked
"extrapolated". Its predictions are compared with ours on the queries it ran.

Checks in the same run: pruned and unpruned predictions identical (they must be: the pruning is
exact), our predictions equal to tslearn's, accuracy on the test labels, and the pruning rate (the
fraction of (query, training series) DTW computations the pruned search skipped).

Threads: ``--threads`` (default: the available cores) for torch (``set_num_threads``), numba
(``NUMBA_NUM_THREADS``) and OpenMP, set before torch and numba are imported.

Run ``python benchmarks/bench_knn.py --help`` for the options; ``--quick`` runs small sizes.
"""
import argparse
import os
import sys

from _threads import available_cores, cpu_model, set_thread_env_from_argv  # noqa: E402
from _timing import timed_calls  # noqa: E402

if __name__ == "__main__":
    set_thread_env_from_argv()

import platform  # noqa: E402
import statistics  # noqa: E402
import warnings  # noqa: E402
from typing import Callable, List, Optional, Tuple  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _provenance import git_revision, module_version  # noqa: E402

from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier  # noqa: E402


def timed(fn: Callable[[], np.ndarray], repeats: int, warm_up: Callable[[], object]
          ) -> Tuple[float, List[float], np.ndarray]:
    """Median and all wall times of ``repeats`` calls after one warm-up call (``warm_up``: the same
    call on the first 20 queries: numba's JIT, torch's allocator), and the last result."""
    times, result = timed_calls(fn, repeats, warm_up=warm_up)
    return statistics.median(times), times, result


def synthetic(n_train: int, n_test: int, length: int, seed: int = 0, n_classes: int = 4
              ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The synthetic set of the module docstring: (X_train, y_train, X_test, y_test), X (n, length, 1)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, length)
    freqs = rng.integers(1, 5, size=(n_classes, 3))
    amps = rng.uniform(0.5, 1.5, size=(n_classes, 3))
    phases = rng.uniform(0, 2 * np.pi, size=(n_classes, 3))

    def make(n: int) -> Tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, n_classes, size=n)
        shift = rng.uniform(-0.15, 0.15, size=(n, 1))
        warped = t[None, :] + shift * np.sin(np.pi * t[None, :])      # monotone: |s|·π < 1
        X = np.zeros((n, length))
        for j in range(3):
            X += amps[y, j, None] * np.sin(2 * np.pi * freqs[y, j, None] * warped + phases[y, j, None])
        X *= rng.uniform(0.8, 1.2, size=(n, 1))
        X += rng.normal(0.0, 0.3, size=X.shape)
        X = (X - X.mean(axis=1, keepdims=True)) / X.std(axis=1, keepdims=True)
        return X[:, :, None], y.astype(str)

    X_train, y_train = make(n_train)
    X_test, y_test = make(n_test)
    return X_train, y_train, X_test, y_test


def arrowhead() -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from aeon.datasets import load_arrow_head

    X_train, y_train = load_arrow_head(split="train")
    X_test, y_test = load_arrow_head(split="test")
    # aeon's (n_cases, n_channels, n_timepoints) -> tslearn's (n_cases, n_timepoints, n_channels)
    return (np.ascontiguousarray(X_train.transpose(0, 2, 1)), y_train,
            np.ascontiguousarray(X_test.transpose(0, 2, 1)), y_test)


def run_case(name: str, data, radius: Optional[int], subset: bool, args) -> List[str]:
    X_train, y_train, X_test, y_test = data
    params = None if radius is None else {"sakoe_chiba_radius": radius}
    band = "none" if radius is None else f"r={radius}"
    n_test = len(X_test)
    rows: List[str] = []

    def ours(pruning: bool) -> Tuple[float, List[float], np.ndarray, float]:
        clf = KNeighborsTimeSeriesClassifier(n_neighbors=1, metric="dtw", metric_params=params, pruning=pruning)
        median, times, pred = timed(lambda: clf.fit(X_train, y_train).predict(X_test), args.repeats,
                                    lambda: clf.fit(X_train, y_train).predict(X_test[:20]))
        return median, times, pred, clf.pruning_rate_

    t_pruned, times_pruned, pred_pruned, rate = ours(True)
    t_full, times_full, pred_full, _ = ours(False)

    from tslearn.neighbors import KNeighborsTimeSeriesClassifier as TslearnKNN

    n_q = n_test if not subset or args.tslearn_queries <= 0 else min(n_test, args.tslearn_queries)
    scale = n_test / n_q
    ts_results = []
    for n_jobs in (None, args.threads):
        clf = TslearnKNN(n_neighbors=1, metric="dtw", metric_params=params, n_jobs=n_jobs)
        median, times, pred = timed(lambda: clf.fit(X_train, y_train).predict(X_test[:n_q]), args.tslearn_repeats,
                                    lambda: clf.fit(X_train, y_train).predict(X_test[:20]))
        ts_results.append((n_jobs, median * scale, pred, min(times) * scale))
    best_ts = min(r[1] for r in ts_results)  # medians
    ts_pred = ts_results[0][2]
    same_pruned = bool(np.array_equal(pred_pruned, pred_full))
    same_tslearn = bool(np.array_equal(pred_pruned[:n_q], ts_pred)) and all(
        np.array_equal(r[2], ts_pred) for r in ts_results)
    extrap = "" if n_q == n_test else f" (extrapolated from {n_q} queries x{scale:g})"
    acc = float(np.mean(pred_pruned == y_test))

    rows.append(f"| {name} | {band} | softdtw_torch, pruning | {t_pruned:.3f} ({min(times_pruned):.3f}) | "
                f"{best_ts / t_pruned:.1f}x | "
                f"{rate:.1%} | {acc:.4f} | " + ("same as unpruned" if same_pruned else "**DIFFERENT from unpruned**")
                + " |")
    same = "same as tslearn" if same_tslearn else "**DIFFERENT from tslearn**"
    rows.append(f"| {name} | {band} | softdtw_torch, no pruning | {t_full:.3f} ({min(times_full):.3f}) | "
                f"{best_ts / t_full:.1f}x | 0 | {float(np.mean(pred_full == y_test)):.4f} | {same} ({n_q} queries) |")
    for n_jobs, t, pred, t_min in ts_results:
        rows.append(f"| {name} | {band} | tslearn n_jobs={n_jobs} | {t:.3f} ({t_min:.3f}){extrap} | "
                    f"{best_ts / t:.2f}x | 0 | {float(np.mean(pred == y_test[:n_q])):.4f} ({n_q} queries) | |")
    detail = (f"{name}, band {band}: softdtw_torch pruned times {', '.join(f'{x:.3f}' for x in times_pruned)} s; "
              f"unpruned {', '.join(f'{x:.3f}' for x in times_full)} s; pruning/no pruning "
              f"{t_full / t_pruned:.2f}x")
    print(detail, file=sys.stderr)
    return rows


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=available_cores())
    p.add_argument("--numba-threading-layer", default=None)
    p.add_argument("--repeats", type=int, default=5, help="timed calls of softdtw_torch per case (median)")
    p.add_argument("--tslearn-repeats", type=int, default=3, help="timed calls of tslearn per case (median)")
    p.add_argument("--datasets", default="arrowhead,synthetic")
    p.add_argument("--synthetic", default="1000,1000,128", help="N_TRAIN,N_TEST,LENGTH of the synthetic set")
    p.add_argument("--tslearn-queries", type=int, default=100,
                   help="test series tslearn classifies on the synthetic set (0: all); ArrowHead: all")
    p.add_argument("--bands", default="none,0.1", help="'none' and/or fractions of the length (radius rounded)")
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")  # tslearn's h5py notice
    if args.quick:
        args.synthetic, args.tslearn_queries, args.repeats = "60,40,32", 0, 1
    n_train, n_test, length = (int(v) for v in args.synthetic.split(","))
    import numba

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print("# 1-NN DTW classification: softdtw_torch KNeighborsTimeSeriesClassifier vs tslearn's")
    print(f"- machine: {cpu_model()}, {os.cpu_count()} logical CPUs ({available_cores()} available), "
          f"{platform.system()} {platform.release()}; load average before the run {load:.2f}")
    print(f"- threads: {args.threads} for everyone (torch intra-op {torch.get_num_threads()}; numba "
          f"{numba.config.NUMBA_NUM_THREADS}; tslearn n_jobs=None and n_jobs={args.threads})")
    print(f"- versions: python {platform.python_version()}, torch {torch.__version__}, numpy {np.__version__}, "
          f"numba {numba.__version__}, tslearn {module_version('tslearn')}, aeon {module_version('aeon')}, "
          f"softdtw_torch {module_version('softdtw_torch')} (git {git_revision()})")
    print(f"- protocol: n_neighbors=1, metric='dtw', float64; fit + predict; median (and min) of {args.repeats} "
          f"timed calls (softdtw_torch) / {args.tslearn_repeats} (tslearn) after a warm-up on 20 queries; speed-up = "
          f"the faster tslearn median / this row's median (tslearn's times extrapolated where marked)")
    print("")
    print("| data set | band | implementation | median time (min) (s) | speed-up vs fastest tslearn | pruning rate "
          "| accuracy | same predictions |")
    print("|---|---|---|---:|---:|---:|---|---|")
    sets = []
    for key in args.datasets.split(","):
        if key == "arrowhead":
            sets.append(("ArrowHead (36 train x 175 test, length 251)", arrowhead(), False))
        elif key == "synthetic":
            sets.append((f"synthetic ({n_train} train x {n_test} test, length {length})",
                         synthetic(n_train, n_test, length), True))
        else:
            raise SystemExit(f"bench_knn: unknown data set {key!r}")
    for name, data, subset in sets:
        series_length = data[0].shape[1]
        for band in args.bands.split(","):
            radius = None if band == "none" else int(round(float(band) * series_length))
            for row in run_case(name, data, radius, subset, args):
                print(row, flush=True)


if __name__ == "__main__":
    main()
