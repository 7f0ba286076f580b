"""CPU benchmark: soft-DTW barycenters, softdtw_torch against tslearn's ``softdtw_barycenter``.

What is timed: one barycenter per GunPoint class (train split, float64, 24 and 26 series of length
150), for each gamma, from the same initialisation (the class's Euclidean mean, tslearn's default),
with the same ``max_iter`` and ``tol`` (tslearn's defaults 50 and 1e-3 unless given), squared
Euclidean cost, no band. Both run L-BFGS-B (ours is a port of scipy's algorithm: same first step,
line search and stopping tests), so for the same settings they take the same iterations; the table
checks it (iterations, evaluations, final objectives). One warm-up call per implementation (numba
JIT, allocator), then the median of ``--repeats`` timed calls (``time.perf_counter``).

Threads: ``--threads`` (default: the available cores) is applied to torch (``set_num_threads``),
numba (``NUMBA_NUM_THREADS``) and OpenMP/MKL, set before torch and numba are imported. tslearn's
barycenter computes one series' soft-DTW and gradient after the other; only its Jacobian product
runs in parallel (numba ``prange``) unless ``n_jobs`` is given, so it is timed with the default
``n_jobs=None`` (what users get) and with ``n_jobs=threads`` (joblib threads over series).

Rows:
  * per class: tslearn (n_jobs=None, n_jobs=threads) and softdtw_torch, with the speed-up of ours
    over tslearn's default and over its best;
  * "both (K=2)": softdtw_torch solving both classes in ONE call, every evaluation being one
    batched soft_dtw call over the 50 (class, series) pairs, against the sum of tslearn's times.

Run ``python benchmarks/bench_barycenter.py --help`` for the options.
"""
import argparse
import os
import sys


from _threads import available_cores, set_thread_env_from_argv  # noqa: E402
from _timing import timed_calls  # noqa: E402

if __name__ == "__main__":
    set_thread_env_from_argv()

import platform  # noqa: E402
import statistics  # noqa: E402
import warnings  # noqa: E402
from typing import Callable, List, Tuple  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import softdtw_torch as st  # noqa: E402
import softdtw_torch.barycenter as bary  # noqa: E402
from softdtw_torch.datasets import load_gunpoint  # noqa: E402


def timed(fn: Callable[[], object], repeats: int) -> Tuple[float, object]:
    """Median wall time of ``repeats`` calls after one warm-up call, and the last result."""
    times, result = timed_calls(fn, repeats)
    return statistics.median(times), result


def objective(z: np.ndarray, X: np.ndarray, gamma: float) -> float:
    """Σ_i sdtw_γ(z, x_i) (tslearn's objective, unit weights) in float64."""
    zt = torch.from_numpy(np.ascontiguousarray(z)).unsqueeze(0).expand(len(X), -1, -1)
    return float(st.soft_dtw(zt, torch.from_numpy(X), gamma=gamma).sum())


class CountingMinimize:
    """Wraps scipy.optimize.minimize inside tslearn to read the iterations and evaluations it made."""

    def __init__(self, module) -> None:
        self.module = module
        self.original = module.minimize
        self.last = None

    def __enter__(self) -> "CountingMinimize":
        def wrapped(*a, **k):
            self.last = self.original(*a, **k)
            return self.last
        self.module.minimize = wrapped
        return self

    def __exit__(self, *exc) -> None:
        self.module.minimize = self.original


class CountingObjective:
    """Counts our batched objective evaluations (each one soft_dtw call over all running pairs)."""

    def __enter__(self) -> "CountingObjective":
        self.calls = 0
        self.original = bary._Objective.__call__
        counter = self

        def wrapped(obj, *a, **k):
            counter.calls += 1
            return counter.original(obj, *a, **k)
        bary._Objective.__call__ = wrapped
        return self

    def __exit__(self, *exc) -> None:
        bary._Objective.__call__ = self.original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=available_cores())
    parser.add_argument("--gammas", type=float, nargs="+", default=[1.0, 0.1])
    parser.add_argument("--max-iter", type=int, default=50)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-tslearn-jobs", action="store_true", help="do not time tslearn with n_jobs=threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    import tslearn
    import tslearn.barycenters.softdtw as ts_softdtw
    import numba

    X, y = load_gunpoint("train")
    X = np.ascontiguousarray(X.transpose(0, 2, 1))  # (50, 150, 1) float64
    classes = sorted(set(y.tolist()))
    groups = {c: np.ascontiguousarray(X[y == c]) for c in classes}

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# soft-DTW barycenter, GunPoint train per class, float64, max_iter={args.max_iter}, tol={args.tol}")
    print(f"# {platform.processor() or platform.machine()}, {args.threads} threads (torch {torch.get_num_threads()}, "
          f"numba {numba.config.NUMBA_NUM_THREADS}); torch {torch.__version__}, tslearn {tslearn.__version__}, "
          f"numba {numba.__version__}; load average before the run {load:.2f}")
    print("")
    print("| class | γ | implementation | time (s) | iterations | evaluations | ms / evaluation | final objective "
          "| speed-up |")
    print("|---|---|---|---|---|---|---|---|---|")
    warnings.filterwarnings("ignore")
    for gamma in args.gammas:
        ts_totals = 0.0
        for c in classes:
            Xc = groups[c]
            init = Xc.mean(axis=0)
            rows: List[Tuple[str, float, int, int, float]] = []
            jobs = [None] if args.skip_tslearn_jobs else [None, args.threads]
            for n_jobs in jobs:
                with CountingMinimize(ts_softdtw) as counter:
                    t, z = timed(lambda: ts_softdtw.softdtw_barycenter(
                        Xc, gamma=gamma, init=init, max_iter=args.max_iter, tol=args.tol, n_jobs=n_jobs),
                        args.repeats)
                    res = counter.last
                rows.append((f"tslearn (n_jobs={n_jobs})", t, res.nit, res.nfev, objective(z, Xc, gamma)))
            ts_totals += rows[0][1]
            with CountingObjective() as count:
                t, (z, hist) = timed(lambda: bary.softdtw_barycenter(
                    Xc, gamma=gamma, init=init, max_iter=args.max_iter, tol=args.tol, return_history=True), args.repeats)
                evals = count.calls // (args.repeats + 1)
            rows.append(("softdtw_torch", t, len(hist) - 1, evals, objective(z, Xc, gamma)))
            base, best = rows[0][1], min(r[1] for r in rows[:-1])
            for name, t, nit, nfev, obj in rows:
                speed = ""
                if name == "softdtw_torch":
                    speed = f"**{base / t:.1f}x**" + (f" ({best / t:.1f}x vs best tslearn)" if best != base else "")
                print(f"| {c} | {gamma} | {name} | {t:.3f} | {nit} | {nfev} | {1e3 * t / max(nfev, 1):.1f} | "
                      f"{obj:.6f} | {speed} |")
        # both classes in one batched call: pad the groups, padding members get weight 0
        n_max = max(len(g) for g in groups.values())
        Xk = np.zeros((len(classes), n_max) + X.shape[1:])
        wk = np.zeros((len(classes), n_max))
        for k, c in enumerate(classes):
            Xk[k, : len(groups[c])] = groups[c]
            wk[k, : len(groups[c])] = 1.0
        init_k = np.stack([groups[c].mean(axis=0) for c in classes])
        t, (zk, hk) = timed(lambda: bary.softdtw_barycenter(
            Xk, gamma=gamma, weights=wk, init=init_k, max_iter=args.max_iter, tol=args.tol, return_history=True), args.repeats)
        objs = ", ".join(f"{objective(zk[k], groups[c], gamma):.6f}" for k, c in enumerate(classes))
        print(f"| both (K=2) | {gamma} | softdtw_torch, one batched call | {t:.3f} | "
              f"{', '.join(str(len(h) - 1) for h in hk)} | | | {objs} | **{ts_totals / t:.1f}x** vs tslearn's sum |")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print("")
    print(f"# load average after the run {load:.2f}")


if __name__ == "__main__":
    sys.exit(main())
