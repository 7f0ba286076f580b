"""ROCKET-family classification: softdtw_torch's RocketClassifier, MiniRocketClassifier,
MultiRocketClassifier, HydraClassifier and MultiRocketHydraClassifier, each next to aeon's
classifier of the same name, on UCR/UEA data sets.

Each pair is the same pipeline: a random-kernel transform -> StandardScaler(with_mean=False) ->
RidgeClassifierCV(alphas=logspace(-3, 3, 10)), the transform being
ROCKET (Dempster et al., "ROCKET: exceptionally fast and accurate time series classification using
random convolutional kernels", 2020: PPV and max of ``n_kernels`` random kernels),
MiniRocket (Dempster et al., "MINIROCKET: a very fast (almost) deterministic transform for time
series classification", 2021: PPV of ``n_kernels`` features of fixed kernels) or
MultiRocket (Tan et al., "MultiRocket: multiple pooling operators and transformations for fast and
effective time series classification", 2022: four pooling features of MiniRocket's kernels, on the
series and on its first differences), Hydra (Dempster et al., "Hydra: competing convolutional
kernels for fast and accurate time series classification", 2023: groups of 8 kernels competing at
each position, counts of each group's maxima and minima, scaled by aeon's SparseScaler) or both
MultiRocket and Hydra side by side (MultiRocketHydraClassifier). With the same ``random_state``
ours and aeon's draw the same kernels, so their accuracies should agree; what differs is where and
how fast they run (aeon: numba, or torch for Hydra, on the CPU; here: C++/CUDA operators and torch
linear algebra, on ``--device``). ``--n-kernels`` sets the Rocket, MiniRocket and MultiRocket
classifiers' kernels (default aeon's 10,000); the Hydra classifiers keep aeon's 8 kernels per group
in 64 groups.

For each data set and classifier (train on TRAIN, score on TEST) the script prints train/test
accuracy and the wall time of fit + predict(TEST) of ours and aeon's, and the fraction of TEST
predictions on which they agree; it writes one PNG with grouped bars: test accuracy per data set
and classifier, ours next to aeon's, and the times (log scale). Before each data set's timed runs
every classifier is warmed up on a few of its cases (numba compiles aeon's kernels on first use,
separately for univariate and multivariate data), so the times are of the work, not of the
compilation.

Data: the .ts files of the UCR/UEA data sets that aeon bundles inside its package,
``<data>/<Name>/<Name>_{TRAIN,TEST}.ts``: by default aeon's own folder (``aeon/datasets/data``),
or ``--data`` / ``$SOFTDTW_AEON_DATASETS``. Without aeon, only ours run, and GunPoint comes from
softdtw_torch's packaged copy (byte-identical to aeon's).

Run:  python examples/rocket_classify.py [--device cpu|cuda] [--out DIR] [--n-kernels N]
                                         [--classifiers rocket minirocket multirocket hydra multirocket-hydra]
                                         [--datasets GunPoint ...] [--threads N]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional

#: The classifiers: name -> (class in softdtw_torch.rocket, class in
#: aeon.classification.convolution_based, aeon's default n_kernels for that classifier, the
#: n_kernels of the warm-up runs). Class names, not classes: the arguments are parsed before torch
#: and aeon are imported. The Hydra classifiers' n_kernels is per group.
CLASSIFIERS = {
    "rocket": ("RocketClassifier", "RocketClassifier", 10_000, 100),
    "minirocket": ("MiniRocketClassifier", "MiniRocketClassifier", 10_000, 100),  # at least 84
    "multirocket": ("MultiRocketClassifier", "MultiRocketClassifier", 10_000, 100),
    "hydra": ("HydraClassifier", "HydraClassifier", 8, 8),
    "multirocket-hydra": ("MultiRocketHydraClassifier", "MultiRocketHydraClassifier", 8, 8),
}
HYDRA = ("hydra", "multirocket-hydra")


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
                        default=["GunPoint", "ArrowHead", "BasicMotions", "ItalyPowerDemand"])
    parser.add_argument("--classifiers", nargs="+", choices=list(CLASSIFIERS), default=list(CLASSIFIERS))
    parser.add_argument("--n-kernels", type=int, default=None,
                        help="n_kernels of every classifier (default: aeon's default of each)")
    parser.add_argument("--seed", type=int, default=0, help="random_state of all classifiers")
    parser.add_argument("--threads", type=int, default=_available_cores(),
                        help="CPU threads for torch and for aeon (n_jobs, numba)")
    args = parser.parse_args()
    if (args.n_kernels is not None and args.n_kernels < 1) or args.threads < 1:
        parser.error("--n-kernels and --threads must be >= 1")
    args.classifiers = list(dict.fromkeys(args.classifiers))  # each once, in the order given
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

import softdtw_torch.rocket  # noqa: E402
from softdtw_torch.datasets import aeon_datasets_dir, load_gunpoint, load_ts  # noqa: E402

if ARGS.data is None and aeon_datasets_dir() is not None:  # after the imports: they start torch's threads
    ARGS.data = Path(aeon_datasets_dir())

try:
    import aeon.classification.convolution_based as aeon_classifiers
except ImportError:  # the comparison is optional; ours still run
    aeon_classifiers = None


def n_kernels_of(classifier: str, args: argparse.Namespace) -> int:
    if args.n_kernels is not None and classifier not in HYDRA:
        return args.n_kernels
    return CLASSIFIERS[classifier][2]


def make_ours(classifier: str, n_kernels: int, args: argparse.Namespace) -> Any:
    cls = getattr(softdtw_torch.rocket, CLASSIFIERS[classifier][0])
    return cls(n_kernels=n_kernels, random_state=args.seed, device=args.device)


def make_aeon(classifier: str, n_kernels: int, args: argparse.Namespace) -> Any:
    cls = getattr(aeon_classifiers, CLASSIFIERS[classifier][1])
    return cls(n_kernels=n_kernels, random_state=args.seed, n_jobs=args.threads)


def warm_up_kernels(classifier: str) -> int:
    return CLASSIFIERS[classifier][3]


@dataclass
class Run:
    """One classifier on one data set."""

    train_acc: float
    test_acc: float
    seconds: float          # fit(TRAIN) + predict(TEST), wall clock
    predicted: np.ndarray   # TEST predictions


@dataclass
class Row:
    name: str               # the data set
    classifier: str         # a key of CLASSIFIERS
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


def run(clf, X_train, y_train, X_test, y_test, device: str) -> Run:
    start = time.perf_counter()
    clf.fit(X_train, y_train)
    predicted = np.asarray(clf.predict(X_test))  # labels come back on the host: work is done
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    train_acc = float(np.mean(np.asarray(clf.predict(X_train)) == y_train))
    return Run(train_acc, float(np.mean(predicted == y_test)), seconds, predicted)


def warm_up(X: np.ndarray, y: np.ndarray, args: argparse.Namespace) -> None:
    """One tiny fit/predict of each classifier on a few cases of X: numba's JIT compilation (per
    kind of input: aeon's MiniRocket and MultiRocket have univariate and multivariate kernels) and
    CUDA's context start are paid here, not in the timed runs."""
    idx = np.concatenate([np.flatnonzero(y == c)[:2] for c in np.unique(y)[:2]])
    for classifier in args.classifiers:
        makers = [make_ours] + ([make_aeon] if aeon_classifiers is not None else [])
        for make in makers:
            make(classifier, warm_up_kernels(classifier), args).fit(X[idx], y[idx]).predict(X[idx])


def print_table(rows: List[Row], args: argparse.Namespace) -> None:
    head = (f"{'data set':<17}{'classifier':<19}{'train x test, C x T':<21}{'ours train':>11}{'ours test':>10}"
            f"{'aeon train':>11}{'aeon test':>10}{'ours s':>9}{'aeon s':>9}{'speed-up':>9}{'agree':>7}")
    print(head)
    print("-" * len(head))
    for r in rows:
        a = r.aeon
        aeon_cols = (f"{a.train_acc:>11.4f}{a.test_acc:>10.4f}" if a else f"{'-':>11}{'-':>10}")
        times = f"{r.ours.seconds:>9.2f}" + (f"{a.seconds:>9.2f}{a.seconds / r.ours.seconds:>8.1f}x"
                                              if a else f"{'-':>9}{'-':>9}")
        agree = f"{np.mean(r.ours.predicted == a.predicted):>7.3f}" if a else f"{'-':>7}"
        print(f"{r.name:<17}{r.classifier:<19}{r.shape:<21}{r.ours.train_acc:>11.4f}{r.ours.test_acc:>10.4f}"
              f"{aeon_cols}{times}{agree}")
    compared = [r for r in rows if r.aeon]
    if compared:
        differ = [f"{r.name}/{r.classifier} (ours {r.ours.test_acc:.4f}, aeon {r.aeon.test_acc:.4f})"
                  for r in compared if r.ours.test_acc != r.aeon.test_acc]
        print(f"\ntest accuracy equal to aeon's in {len(compared) - len(differ)} of {len(compared)} runs"
              + (f"; differs in: {', '.join(differ)}" if differ else ""))
    kernels = ", ".join(f"{c} {n_kernels_of(c, args)}" for c in args.classifiers)
    print(f"\ntimes: fit(TRAIN) + predict(TEST), wall clock, after a warm-up; n_kernels: {kernels}; "
          f"random_state={args.seed}; ours on {args.device} with {torch.get_num_threads()} torch "
          f"threads; aeon on the CPU with n_jobs={args.threads} (numba threads "
          f"{os.environ['NUMBA_NUM_THREADS']}); 'agree' = fraction of identical TEST predictions.")


def plot(rows: List[Row], args: argparse.Namespace, path: Path) -> None:
    """Two panels (test accuracy; time, log scale), each with one group of bars per (data set,
    classifier): ours next to aeon's; data sets separated by a gap and named under their groups."""
    datasets = list(dict.fromkeys(r.name for r in rows))
    per_dataset = len(args.classifiers) + 1  # one slot of gap between data sets
    x = np.array([datasets.index(r.name) * per_dataset + args.classifiers.index(r.classifier)
                  for r in rows], dtype=float)
    has_aeon = any(r.aeon for r in rows)
    width = 0.4 if has_aeon else 0.6
    fig, (ax_acc, ax_time) = plt.subplots(2, 1, figsize=(max(8.0, 0.9 * len(rows) + 2), 8.5))
    ours_label = f"softdtw_torch ({args.device})"
    for ax, value, title, ylabel, fmt in (
        (ax_acc, lambda run: run.test_acc, "test accuracy", "accuracy", "%.3f"),
        (ax_time, lambda run: run.seconds, "fit + predict time", "seconds (log scale)", "%.3g"),
    ):
        ours_vals = [value(r.ours) for r in rows]
        bars = ax.bar(x - (width / 2 if has_aeon else 0), ours_vals, width, label=ours_label,
                      color="tab:orange")
        ax.bar_label(bars, fmt=fmt, fontsize=7, rotation=90, padding=2)
        if has_aeon:
            aeon_vals = [value(r.aeon) if r.aeon else np.nan for r in rows]
            bars = ax.bar(x + width / 2, aeon_vals, width, label="aeon (CPU: numba; Hydra: torch)",
                          color="tab:blue")
            ax.bar_label(bars, fmt=fmt, fontsize=7, rotation=90, padding=2)
        ax.set_xticks(x, [r.classifier for r in rows], fontsize=8)
        names = ax.secondary_xaxis("bottom")  # the data set under its group of classifiers
        names.set_xticks([i * per_dataset + (len(args.classifiers) - 1) / 2 for i in range(len(datasets))],
                         ["\n" + name for name in datasets], fontweight="bold")
        names.tick_params(axis="x", length=0)
        names.spines["bottom"].set_visible(False)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
    ax_acc.set_ylim(0, 1.2)
    ax_acc.set_yticks(np.linspace(0, 1, 6))
    ax_time.set_yscale("log")  # CPU and GPU times can be orders of magnitude apart
    ax_time.set_ylim(top=ax_time.get_ylim()[1] * 4)  # room for the labels above the bars
    plain = matplotlib.ticker.FormatStrFormatter("%g")
    ax_time.yaxis.set_major_formatter(plain)
    ax_time.yaxis.set_minor_locator(matplotlib.ticker.LogLocator(subs=(2.0, 5.0)))  # 1, 2, 5, 10, ...
    ax_time.yaxis.set_minor_formatter(plain)
    ax_time.tick_params(axis="y", which="minor", labelsize=7)
    handles, labels = ax_acc.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    kernels = ", ".join(f"{c} {n_kernels_of(c, args)}" for c in args.classifiers)
    fig.suptitle(f"ROCKET-family classifiers, n_kernels: {kernels}; random_state={args.seed}; "
                 f"{args.threads} CPU threads")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
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
    if aeon_classifiers is None:
        print("NOTE: aeon is not installed; only softdtw_torch is run", file=sys.stderr)

    start = time.perf_counter()
    data = [(name, load(args.data, name)) for name in args.datasets]

    rows: List[Row] = []
    for name, (X_train, y_train, X_test, y_test) in data:
        shape = f"{len(X_train)} x {len(X_test)}, {X_train.shape[1]} x {X_train.shape[2]}"
        warm_up(X_train, y_train, args)
        for classifier in args.classifiers:
            n_kernels = n_kernels_of(classifier, args)
            ours = run(make_ours(classifier, n_kernels, args), X_train, y_train, X_test, y_test,
                       args.device)
            aeon = None
            if aeon_classifiers is not None:
                aeon = run(make_aeon(classifier, n_kernels, args), X_train, y_train, X_test, y_test,
                           "cpu")
            rows.append(Row(name, classifier, shape, ours, aeon))
            print(f"  {name} {classifier}: done ({time.perf_counter() - start:.0f}s so far)",
                  file=sys.stderr)

    print()
    print_table(rows, args)
    png = args.out / "rocket_classify.png"
    plot(rows, args, png)
    print(f"\nwrote {png}; total wall time {time.perf_counter() - start:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
