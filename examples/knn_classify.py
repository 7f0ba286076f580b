"""1-NN DTW classification of UCR data sets, next to tslearn's.

For each data set (the train/test splits aeon bundles in its package), fits
``softdtw_torch.neighbors.KNeighborsTimeSeriesClassifier(n_neighbors=1, metric="dtw")`` (exact DTW
search with lower-bound pruning) and tslearn's classifier of the same name and parameters, and
prints the test accuracy of both, whether their predictions agree, the wall time of each and the
fraction of DTW computations the pruning skipped (tslearn's numba compilation is done before its
timing; neither side is a benchmark here: see benchmarks/bench_knn.py). ``--bandwidth r`` adds a Sakoe–Chiba radius
(tslearn's ``metric_params={"sakoe_chiba_radius": r}``).

Run:  python examples/knn_classify.py [--datasets ArrowHead GunPoint ItalyPowerDemand] [--bandwidth R]
      [--no-tslearn]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from softdtw_torch.datasets import aeon_datasets_dir, load_ts
from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier


def load_split(name: str, split: str):
    """(X, y) in tslearn's layout (n_cases, n_timepoints, n_channels): aeon's is (n, channels, T)."""
    X, y = load_ts(os.path.join(aeon_datasets_dir(), name, f"{name}_{split.upper()}.ts"))
    return np.asarray(X, dtype=np.float64).transpose(0, 2, 1), np.asarray(y)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["ArrowHead", "GunPoint", "ItalyPowerDemand"])
    parser.add_argument("--bandwidth", type=int, default=None)
    parser.add_argument("--no-tslearn", action="store_true", help="skip tslearn (slow on long series)")
    args = parser.parse_args(argv)
    metric_params = None if args.bandwidth is None else {"sakoe_chiba_radius": args.bandwidth}

    print("| data set | train × test × length | ours: accuracy, time, DTWs pruned | tslearn: accuracy, time | "
          "same predictions |")
    print("|---|---|---|---|---|")
    for name in args.datasets:
        X_train, y_train = load_split(name, "train")
        X_test, y_test = load_split(name, "test")
        ours = KNeighborsTimeSeriesClassifier(n_neighbors=1, metric="dtw", metric_params=metric_params)
        start = time.perf_counter()
        predicted = ours.fit(X_train, y_train).predict(X_test)
        ours_time = time.perf_counter() - start
        ours_accuracy = float(np.mean(predicted == y_test))
        theirs = "skipped"
        same = "n/a"
        if not args.no_tslearn:
            from tslearn.neighbors import KNeighborsTimeSeriesClassifier as TslearnKNN

            peer = TslearnKNN(n_neighbors=1, metric="dtw", metric_params=metric_params)
            peer.fit(X_train[:2], y_train[:2]).predict(X_test[:1])  # numba compiles on first use: not timed
            start = time.perf_counter()
            their_predicted = peer.fit(X_train, y_train).predict(X_test)
            their_time = time.perf_counter() - start
            theirs = f"{np.mean(their_predicted == y_test):.4f}, {their_time:.2f} s"
            same = "yes" if np.array_equal(predicted, their_predicted) else \
                f"NO ({int(np.sum(predicted != their_predicted))} differ)"
        shape = f"{len(X_train)} × {len(X_test)} × {X_train.shape[1]}"
        print(f"| {name} | {shape} | {ours_accuracy:.4f}, {ours_time:.2f} s, {ours.pruning_rate_:.1%} | "
              f"{theirs} | {same} |")


if __name__ == "__main__":
    main()
