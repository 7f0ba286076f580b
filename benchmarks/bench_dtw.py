"""Hard DTW (gamma = 0) on the CPU, side by side with tslearn in one run: values alone, and values with
the optimal paths.

What is timed (float64, squared Euclidean cost, no band, random normal series; the median of
``--repeats`` calls after one warm-up call each, numba's JIT included in the warm-up):

- values: ``softdtw_torch.dtw(x, y)`` on the (B, N, d) and (B, M, d) batch, against tslearn's
  ``dtw(x[b], y[b])`` in a loop over the B pairs (tslearn has no batched pairwise call);
- values and paths: ``softdtw_torch.dtw_path(x, y)`` (B paths as lists of (i, j) and the values),
  against tslearn's ``dtw_path`` in the same loop;
- both again under the Itakura parallelogram of slope ``--itakura`` (default 2; 0: not timed):
  ``itakura_max_slope=s`` here, ``global_constraint="itakura", itakura_max_slope=s`` there.

Correctness in the same run: every path must be tslearn's, every value equal within 1e-12
relative. Every implementation runs at ``--threads`` (torch intra-op threads; numba threads; tslearn's
DP itself is single-threaded numba).

    python benchmarks/bench_dtw.py [--threads 2] [--shapes 64x256x256x8] [--repeats 5] [--itakura 2]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _threads import available_cores, cpu_model, set_thread_env_from_argv  # noqa: E402

if __name__ == "__main__":
    set_thread_env_from_argv()

import platform  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _provenance import git_revision, module_version  # noqa: E402
from _timing import median_seconds  # noqa: E402


def run_shape(B, N, M, d, repeats, seed, slope=None):
    """Rows (what, ours, theirs, same paths, max relative value error), without a constraint or, with
    ``slope``, under the Itakura parallelogram (tslearn's global_constraint="itakura")."""
    import softdtw_torch as st
    import tslearn.metrics as tm

    rng = np.random.default_rng(seed)
    xn, yn = rng.standard_normal((B, N, d)), rng.standard_normal((B, M, d))
    x, y = torch.from_numpy(xn), torch.from_numpy(yn)
    ours_kw = {} if slope is None else {"itakura_max_slope": slope}
    theirs_kw = {} if slope is None else {"global_constraint": "itakura", "itakura_max_slope": slope}

    ours_paths, ours_values = st.dtw_path(x, y, **ours_kw)
    theirs = [tm.dtw_path(xn[b], yn[b], **theirs_kw) for b in range(B)]
    same_paths = all(ours_paths[b] == theirs[b][0] for b in range(B))
    want = np.array([t[1] for t in theirs])
    value_error = float(np.max(np.abs(ours_values.numpy() - want) / want))

    suffix = "" if slope is None else f", Itakura s = {slope:g}"
    rows = []
    t_ours = median_seconds(lambda: st.dtw(x, y, **ours_kw), repeats)
    t_theirs = median_seconds(lambda: [tm.dtw(xn[b], yn[b], **theirs_kw) for b in range(B)], repeats)
    rows.append(("values" + suffix, t_ours, t_theirs))
    t_ours = median_seconds(lambda: st.dtw_path(x, y, **ours_kw), repeats)
    t_theirs = median_seconds(lambda: [tm.dtw_path(xn[b], yn[b], **theirs_kw) for b in range(B)], repeats)
    rows.append(("values + paths" + suffix, t_ours, t_theirs))
    return rows, same_paths and value_error <= 1e-12, same_paths, value_error


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=available_cores())
    parser.add_argument("--shapes", default="64x256x256x8", help="comma-separated BxNxMxd")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--itakura", type=float, default=2.0,
                        help="also time under the Itakura parallelogram of this slope (0: not)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        import numba

        numba.set_num_threads(args.threads)
    except ImportError:
        pass
    print(f"# Hard DTW (gamma = 0), CPU, float64: softdtw_torch vs tslearn")
    print(f"- machine: {cpu_model()}, {available_cores()} cores; {platform.platform()}")
    print(f"- threads: {args.threads} for everyone; torch {torch.__version__}, tslearn "
          f"{module_version('tslearn')}, softdtw_torch {module_version('softdtw_torch')} at {git_revision()}")
    print()
    print("| B×N×M×d | what | softdtw_torch | tslearn (loop over pairs) | ratio | same paths, max value error |")
    print("|---|---|---|---|---|---|")
    failed = False
    for shape in args.shapes.split(","):
        B, N, M, d = (int(v) for v in shape.split("x"))
        for slope in [None] + ([args.itakura] if args.itakura else []):
            rows, ok, same_paths, value_error = run_shape(B, N, M, d, args.repeats, args.seed, slope)
            failed |= not ok
            check = f"{'yes' if same_paths else 'NO'}, {value_error:.1e}" + ("" if ok else " MISMATCH")
            for what, ours, theirs in rows:
                print(f"| {shape} | {what} | {ours * 1e3:.1f} ms | {theirs * 1e3:.1f} ms | {theirs / ours:.1f}× "
                      f"| {check} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
