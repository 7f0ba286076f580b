"""ROCKET classification: softdtw_torch's RocketClassifier next to aeon's, on UCR/UEA data sets.

Both classifiers are the same pipeline (Dempster et al., "ROCKET: exceptionally fast and accurate
time series classification using random convolutional kernels", 2020): ``n_kernels`` random
convolution kernels -> PPV and max features -> StandardScaler(with_mean=False) ->
RidgeClassifierCV(alphas=logspace(-3, 3, 10)). With the same ``random_state`` they draw the same
kernels, so their accuracies should agree; what differs is where and how fast it runs (aeon:
numba on the CPU; here: C++/CUDA operators and torch linear algebra, on ``--device``).

For each data set (train on TRAIN, score on TEST) the script prints train/test accuracy and the
wall time of fit + predict(TEST) of both, and writes a PNG with accuracy and time bars. Both are
warmed up first on a few cases (numba compiles aeon's kernels on first use), so the times are of
the work, not of the compilation.

Data: the .ts files of the UCR/UEA data sets that aeon bundles inside its package,
``<data>/<Name>/<Name>_{TRAIN,TEST}.ts``: by default aeon's own folder (``aeon/datasets/data``),
or ``--data`` / ``$SOFTDTW_AEON_DATASETS``. Without aeon, GunPoint comes from softdtw_torch's
packaged copy (byte-identical to aeon's).

Run:  python examples/rocket_classify.py [--device cpu|cuda] [--out DIR] [--n-kernels N]
                                         [--datasets GunPoint ...] [--threads N]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional


def _available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out"), help="output folder for the PNG")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where softdtw_torch computes (default cpu; cuda if available)")
    parser.add_argument("--data", type=Path, default=os.environ.get("SOFTDTW_AEON_DATASETS"),
                        help="folder of <Name>/<Name>_{TRAIN,TEST}.ts files (default: $SOFTDTW_AEON_DATASETS, "
                             "else aeon's bundled datasets)")
    parser.add_argument("--datasets", nargs="+",
                        default=["GunPoint", "ItalyPowerDemand", "BasicMotions", "ArrowHead"])
    parser.add_argument("--n-kernels", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0, help="random_state of both classifiers")
    parser.add_argument("--threads", type=int, default=_available_cores(),
                        help="CPU threads for torch and for aeon (n_jobs, numba)")
    args = parser.parse_args()
    if args.n_kernels < 1 or args.threads < 1:
        parser.error("--n-kernels and --threads must be >= 1")
    return args


ARGS = parse_args()
# numba and OpenMP size their thread pools once, at import: set the environment first.
for _var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(ARGS.threads)

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # headless: only write the PNG
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from softdtw_torch.datasets import aeon_datasets_dir, load_gunpoint, load_ts  # noqa: E402
from softdtw_torch.rocket import RocketClassifier  # noqa: E402

if ARGS.data is None and aeon_datasets_dir() is not None:  # after the imports: they start torch's threads
    ARGS.data = Path(aeon_datasets_dir())

try:
    from aeon.classification.convolution_based import RocketClassifier as AeonRocketClassifier
except ImportError:  # the comparison is optional; ours still runs
    AeonRocketClassifier = None


@dataclass
class Run:
    """One classifier on one data set."""

    train_acc: float
    test_acc: float
    seconds: float          # fit(TRAIN) + predict(TEST), wall clock
    predicted: np.ndarray   # TEST predictions


@dataclass
class Row:
    name: str
    shape: str
    ours: Run
    aeon: Optional[Run]


def load(data: Optional[Path], name: str):
    if data is None and name == "GunPoint":  # no aeon: the package's copy of aeon's GunPoint files
        (X_train, y_train), (X_test, y_test) = load_gunpoint("train"), load_gunpoint("test")
    elif data is None:
        raise SystemExit(f"rocket_classify: {name} is read from the datasets aeon bundles: pip install aeon, "
                         "or pass --data (or set SOFTDTW_AEON_DATASETS), or use --datasets GunPoint")
    else:
        X_train, y_train = load_ts(data / name / f"{name}_TRAIN.ts")
        X_test, y_test = load_ts(data / name / f"{name}_TEST.ts")
    if not isinstance(X_train, np.ndarray) or not isinstance(X_test, np.ndarray):
        raise SystemExit(f"rocket_classify: {name} has unequal-length series; not supported here")
    return X_train, y_train, X_test, y_test


def run(make, X_train, y_train, X_test, y_test, device: str) -> Run:
    clf = make()
    start = time.perf_counter()
    clf.fit(X_train, y_train)
    predicted = np.asarray(clf.predict(X_test))  # labels come back on the host: work is done
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    train_acc = float(np.mean(np.asarray(clf.predict(X_train)) == y_train))
    return Run(train_acc, float(np.mean(predicted == y_test)), seconds, predicted)


def warm_up(X: np.ndarray, y: np.ndarray, device: str) -> None:
    """One tiny fit/predict of each: numba's JIT compilation and CUDA's context start are paid
    here, not in the timed runs."""
    idx = np.concatenate([np.flatnonzero(y == c)[:2] for c in np.unique(y)[:2]])
    RocketClassifier(n_kernels=50, random_state=0, device=device).fit(X[idx], y[idx]).predict(X[idx])
    if AeonRocketClassifier is not None:
        AeonRocketClassifier(n_kernels=50, random_state=0).fit(X[idx], y[idx]).predict(X[idx])


def print_table(rows: List[Row], args: argparse.Namespace) -> None:
    head = (f"{'data set':<17}{'train x test, C x T':<22}{'ours train':>11}{'ours test':>10}"
            f"{'aeon train':>11}{'aeon test':>10}{'ours s':>9}{'aeon s':>9}{'speed-up':>9}{'agree':>7}")
    print(head)
    print("-" * len(head))
    for r in rows:
        a = r.aeon
        aeon_cols = (f"{a.train_acc:>11.4f}{a.test_acc:>10.4f}" if a else f"{'-':>11}{'-':>10}")
        times = f"{r.ours.seconds:>9.2f}" + (f"{a.seconds:>9.2f}{a.seconds / r.ours.seconds:>8.1f}x"
                                              if a else f"{'-':>9}{'-':>9}")
        agree = f"{np.mean(r.ours.predicted == a.predicted):>7.3f}" if a else f"{'-':>7}"
        print(f"{r.name:<17}{r.shape:<22}{r.ours.train_acc:>11.4f}{r.ours.test_acc:>10.4f}"
              f"{aeon_cols}{times}{agree}")
    print(f"\ntimes: fit(TRAIN) + predict(TEST), wall clock, after a warm-up; n_kernels="
          f"{args.n_kernels}, random_state={args.seed}; ours on {args.device} with "
          f"{torch.get_num_threads()} torch threads; aeon on the CPU with n_jobs={args.threads} "
          f"(numba threads {os.environ['NUMBA_NUM_THREADS']}); 'agree' = fraction of identical "
          f"TEST predictions.")


def plot(rows: List[Row], args: argparse.Namespace, path: Path) -> None:
    names = [r.name for r in rows]
    x = np.arange(len(rows))
    has_aeon = any(r.aeon for r in rows)
    width = 0.38 if has_aeon else 0.6
    fig, (ax_acc, ax_time) = plt.subplots(1, 2, figsize=(12, 4.5))
    ours_label = f"softdtw_torch ({args.device})"
    for ax, value, title, ylabel in (
        (ax_acc, lambda run: run.test_acc, "test accuracy", "accuracy"),
        (ax_time, lambda run: run.seconds, "fit + predict time", "seconds (log scale)"),
    ):
        ours_vals = [value(r.ours) for r in rows]
        bars = ax.bar(x - (width / 2 if has_aeon else 0), ours_vals, width, label=ours_label,
                      color="tab:orange")
        ax.bar_label(bars, fmt="%.3f" if ax is ax_acc else "%.2f", fontsize=8)
        if has_aeon:
            aeon_vals = [value(r.aeon) if r.aeon else np.nan for r in rows]
            bars = ax.bar(x + width / 2, aeon_vals, width, label="aeon (CPU, numba)",
                          color="tab:blue")
            ax.bar_label(bars, fmt="%.3f" if ax is ax_acc else "%.2f", fontsize=8)
        ax.set_xticks(x, names)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
    ax_acc.set_ylim(0, 1.08)
    ax_time.set_yscale("log")  # CPU and GPU times can be orders of magnitude apart
    plain = matplotlib.ticker.FormatStrFormatter("%g")
    ax_time.yaxis.set_major_formatter(plain)
    ax_time.yaxis.set_minor_formatter(plain)
    ax_time.tick_params(axis="y", which="minor", labelsize=7)
    handles, labels = ax_acc.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    fig.suptitle(f"ROCKET classifier, n_kernels={args.n_kernels}, random_state={args.seed}; "
                 f"{args.threads} CPU threads")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> int:
    args = ARGS
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("rocket_classify: --device cuda requested but CUDA is not available")
    if args.data is not None and not args.data.is_dir():
        raise SystemExit(f"rocket_classify: data folder {args.data} not found (use --data or "
                         f"SOFTDTW_AEON_DATASETS)")
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    if AeonRocketClassifier is None:
        print("NOTE: aeon is not installed; only softdtw_torch is run", file=sys.stderr)

    start = time.perf_counter()
    data = [(name, load(args.data, name)) for name in args.datasets]
    warm_up(data[0][1][0], data[0][1][1], args.device)

    rows: List[Row] = []
    for name, (X_train, y_train, X_test, y_test) in data:
        shape = f"{len(X_train)} x {len(X_test)}, {X_train.shape[1]} x {X_train.shape[2]}"
        ours = run(lambda: RocketClassifier(n_kernels=args.n_kernels, random_state=args.seed,
                                            device=args.device),
                   X_train, y_train, X_test, y_test, args.device)
        aeon = None
        if AeonRocketClassifier is not None:
            aeon = run(lambda: AeonRocketClassifier(n_kernels=args.n_kernels,
                                                    random_state=args.seed, n_jobs=args.threads),
                       X_train, y_train, X_test, y_test, "cpu")
        rows.append(Row(name, shape, ours, aeon))
        print(f"  {name}: done ({time.perf_counter() - start:.0f}s so far)", file=sys.stderr)

    print()
    print_table(rows, args)
    png = args.out / "rocket_classify.png"
    plot(rows, args, png)
    print(f"\nwrote {png}; total wall time {time.perf_counter() - start:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
