"""CPU benchmark: the all-pairs soft-DTW matrix, softdtw_torch's ``cdist_soft_dtw`` against tslearn's,
side by side in one process on the same threads (issue 20's target: >= 20x tslearn on ArrowHead
train x test).

What is timed: the (A, B) matrix of soft-DTW values between the train and test series of ArrowHead
(aeon's bundled copy, ``aeon.datasets.load_arrow_head``: 36 train and 175 test series of length
251, univariate, float64): 6,300 pairs of 251 x 251 cells. Both sides are called on numpy arrays
in tslearn's layout (n_cases, n_timepoints, 1), as a tslearn user would; the answer is numpy.
- tslearn: ``tslearn.metrics.cdist_soft_dtw(train, test, gamma)``, with ``n_jobs=None`` (one thread,
  its default) and ``n_jobs=threads`` (joblib threads over the pairs); the faster of the two is the
  reference of the speed-up.
- ours: ``softdtw_torch.cdist_soft_dtw(train, test, gamma)``, forward only (numpy input runs under
  no_grad).

One warm-up call each (numba's JIT, torch's allocator), then the median of ``--repeats`` timed calls
(``time.perf_counter``). The check in the same run: the largest difference between the two
matrices, relative to the largest value.

Threads: ``--threads`` (default: the available cores) for torch (``set_num_threads``), numba
(``NUMBA_NUM_THREADS``) and OpenMP, set before torch and numba are imported.
"""
import argparse
import sys

from _threads import available_cores, cpu_model, set_thread_env_from_argv  # noqa: E402

if __name__ == "__main__":
    set_thread_env_from_argv()

import os  # noqa: E402
import platform  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _provenance import git_revision, module_version  # noqa: E402
from _timing import median_seconds  # noqa: E402

import softdtw_torch  # noqa: E402


def arrowhead():
    from aeon.datasets import load_arrow_head

    train, _ = load_arrow_head(split="train")
    test, _ = load_arrow_head(split="test")
    # aeon's (n_cases, n_channels, n_timepoints) -> tslearn's (n_cases, n_timepoints, n_channels)
    return np.ascontiguousarray(train.transpose(0, 2, 1), dtype=np.float64), \
        np.ascontiguousarray(test.transpose(0, 2, 1), dtype=np.float64)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=available_cores())
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--gammas", default="1.0,0.1", help="comma-separated (default 1.0,0.1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from tslearn.metrics import cdist_soft_dtw as tslearn_cdist

    train, test = arrowhead()
    load = os.getloadavg()[0]
    print(f"# cdist_soft_dtw, ArrowHead train x test ({train.shape[0]} x {test.shape[0]} pairs, length "
          f"{train.shape[1]}), float64; {platform.machine()} {cpu_model()}, {args.threads} threads; torch "
          f"{torch.__version__}, tslearn {module_version('tslearn')}, numba {module_version('numba')}, "
          f"softdtw_torch {git_revision()}; load average before the run {load:.2f}")
    print()
    print("| gamma | tslearn n_jobs=None (s) | tslearn n_jobs=threads (s) | ours (s) | speed-up vs faster tslearn "
          "| max abs diff / max abs value |")
    print("|---|---|---|---|---|---|")
    for gamma in (float(g) for g in args.gammas.split(",")):
        ours = softdtw_torch.cdist_soft_dtw(train, test, gamma=gamma)
        theirs = tslearn_cdist(train, test, gamma=gamma)
        error = float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))
        t_default = median_seconds(lambda: tslearn_cdist(train, test, gamma=gamma), args.repeats)
        t_jobs = median_seconds(lambda: tslearn_cdist(train, test, gamma=gamma, n_jobs=args.threads), args.repeats)
        t_ours = median_seconds(lambda: softdtw_torch.cdist_soft_dtw(train, test, gamma=gamma), args.repeats)
        print(f"| {gamma:g} | {t_default:.3f} | {t_jobs:.3f} | {t_ours:.4f} | "
              f"**{min(t_default, t_jobs) / t_ours:.1f}x** | {error:.1e} |")
    print()
    print(f"# load average after the run {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
