"""Roofline of the CPU kernels: each kernel's throughput as a fraction of this machine's ceiling for
its inner work, both measured in the same run on the same threads.

Ceilings (benchmarks/roofline/ceilings.cpp, compiled on first use into build/roofline):
- SoftDTW: cells per second through the kernels' own anti-diagonal loops (float32, the same exp
  and log1p per cell), on independent diagonals held in L1: no wavefront dependency, no tile
  borders, no costs, no table traffic. Per workload, the loops of the path it takes: the table's
  forward and backward, or the packs' forward with weights and flow (the forward with gradients);
- SoftDTW in float64 (part softdtw64): the same for the all-pairs matrix's forward and the
  barycenters' forward with weights and flow, next to a bound: the same forward loops with their
  divisions replaced by multiplications (not the kernels' values: what no exact division, however
  cheap, could beat; measured where the interleaved AVX-512 loops run);
- Rocket: float32 vector multiply-adds per second (the widest vectors the machine has);
- MiniRocket: `count += (value > bias)` per second, vectorized, values in L1.
Kernels: SoftDTW fwd+bwd (fused, float32, gamma = 1) on bench_cpu.py's workloads A, B, C (cells:
the sum over pairs of N x M); Rocket and MiniRocket transforms (10,000 kernels, seed 0) on GunPoint,
BasicMotions, ACSF1 (test splits) and a synthetic collection (multiply-adds: the sum over kernels
of length x channels x output positions; compares: features x counted positions); float64:
cdist_soft_dtw on ArrowHead train x test, and the barycenters' objective (one evaluation) and whole
call on GunPoint's class 2 (cells: the pairs' N x M, times the evaluations for the whole call).

    python benchmarks/bench_roofline.py [--threads N] [--repeats 5] [--synthetic-cases 1000]
        [--synthetic-length 1000]
        [--parts softdtw,softdtw64,rocket,minirocket] [--markdown out.md]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _threads import cpu_model, set_thread_env_from_argv  # noqa: E402
from _timing import best_seconds  # noqa: E402

if __name__ == "__main__":
    set_thread_env_from_argv()

import argparse  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import bench_rocket  # noqa: E402  (its collections: the same sets and synthetic data)
import softdtw_torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def load_ceilings():
    """The ceilings' module, built with the extension's own C++ flags (no FMA contraction)."""
    from torch.utils.cpp_extension import load

    build = os.path.join(ROOT, "build", "roofline")
    os.makedirs(build, exist_ok=True)
    # csrc/common/cpu.cpp: the path choice of the SoftDTW loops ceilings.cpp runs (cpu/interleaved_vectors.h).
    sources = [os.path.join(HERE, "roofline", "ceilings.cpp"), os.path.join(ROOT, "csrc", "common", "cpu.cpp")]
    return load(name="softdtw_torch_ceilings", sources=sources,
                extra_include_paths=[ROOT], extra_cflags=["-O3", "-ffp-contract=off", "-fno-trapping-math"],
                build_directory=build, verbose=False)


# ----------------------------------------------------------------------------------------------
# SoftDTW


class _FusedCaches(TorchDispatchMode):
    """What the SoftDTW fused forwards a call runs below autograd keep (their `keep` option)."""

    def __init__(self):
        super().__init__()
        self.kept = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if str(func).startswith("softdtw_torch._soft_dtw_fused_forward"):
            self.kept.add(args[-1])
        return func(*args, **(kwargs or {}))


def softdtw_rows(args, ceilings, threads):
    """A workload's ceiling is that of the path it takes: the packs' forward with gradients (cells
    with weights, then their flow) where the call's forward keeps the unit gradients, else
    the table's forward and backward."""
    from bench_cpu import WORKLOADS, make_data
    forward, backward, with_weights, flow = ceilings.softdtw_cells_peak(threads)
    per_cell = {"table": 1 / forward + 1 / backward, "packs": 1 / with_weights + 1 / flow}  # seconds per cell
    rows = [f"| ceiling: SoftDTW cell arithmetic, table (fwd+bwd) | {1 / per_cell['table'] / 1e6:.0f} M cells/s "
            f"(fwd {forward / 1e6:.0f}, bwd {backward / 1e6:.0f}) | | |",
            f"| ceiling: SoftDTW cell arithmetic, packs (fwd with weights + flow) | "
            f"{1 / per_cell['packs'] / 1e6:.0f} M cells/s (fwd {with_weights / 1e6:.0f}, flow {flow / 1e6:.0f}) | | |"]
    for key, w in WORKLOADS.items():
        x, y, x_len, y_len = make_data(w, seed=0)

        def step():
            xs, ys = x.clone().requires_grad_(), y.clone().requires_grad_()
            values = softdtw_torch.soft_dtw(xs, ys, gamma=1.0, fused=True, x_lengths=x_len, y_lengths=y_len)
            values.sum().backward()

        seen = _FusedCaches()
        with seen:
            step()
        path = "packs" if "gradients" in seen.kept else "table"
        seconds = best_seconds(step, args.repeats)
        cells = float((x_len * y_len).sum()) if w.ragged else float(w.B * w.N * w.M)
        rate = cells / seconds
        rows.append(f"| SoftDTW fwd+bwd {key}: {w.describe()} | {seconds * 1e3:.1f} ms, {rate / 1e6:.0f} M cells/s | "
                    f"{100 * rate * per_cell[path]:.0f}% | cell arithmetic, {path} |")
    return rows


def softdtw64_rows(args, ceilings, threads):
    """float64, what issue 20's last SoftDTW targets time: the all-pairs matrix (cdist_soft_dtw on
    ArrowHead train x test, bench_cdist.py's call: packs' forward, no gradients) and the barycenters'
    objective (one evaluation, GunPoint's class 2 at its mean: packs' forward with weights and flow)
    and whole call (bench_barycenter.py's, class 2). Each against its loops' float64 ceiling and
    against the bound of the same loops without the divider (their divisions replaced by
    multiplications: what no exact division could beat; 0 = not measured, no AVX-512)."""
    from bench_barycenter import CountingObjective
    from bench_cdist import arrowhead
    from softdtw_torch.barycenter import softdtw_barycenter
    from softdtw_torch.datasets import load_gunpoint

    forward, forward_free, weights, weights_free, flow = ceilings.softdtw_float64_cells_peak(threads)
    per_cell = {"forward": 1 / forward, "packs": 1 / weights + 1 / flow}
    bound = {"forward": 1 / forward_free if forward_free else None,
             "packs": 1 / weights_free + 1 / flow if weights_free else None}

    def mcells(rate):
        return f"{rate / 1e6:.0f}" if rate else "n/a"

    rows = [f"| ceiling: SoftDTW float64, forward (the all-pairs matrix) | {1 / per_cell['forward'] / 1e6:.0f} M cells/s; "
            f"without the divider {mcells(forward_free)} | | |",
            f"| ceiling: SoftDTW float64, packs (fwd with weights + flow: the barycenters) | "
            f"{1 / per_cell['packs'] / 1e6:.0f} M cells/s (fwd {weights / 1e6:.0f}, flow {flow / 1e6:.0f}); "
            f"without the divider {mcells(1 / bound['packs'] if bound['packs'] else 0)} (fwd {mcells(weights_free)}) "
            f"| | |"]

    def row(name, seconds, cells, path):
        rate = cells / seconds
        free = f"{100 * rate * bound[path]:.0f}% of the bound without the divider" if bound[path] else "no bound"
        return (f"| {name} | {seconds * 1e3:.1f} ms, {rate / 1e6:.0f} M cells/s | {100 * rate * per_cell[path]:.0f}% "
                f"({free}) | float64 cell arithmetic, {path} |")

    train, test = arrowhead()
    seconds = best_seconds(lambda: softdtw_torch.cdist_soft_dtw(train, test, gamma=1.0), args.repeats)
    rows.append(row(f"cdist_soft_dtw ArrowHead train x test {train.shape[0]} x {test.shape[0]}, gamma = 1", seconds,
                    float(train.shape[0] * test.shape[0] * train.shape[1] * test.shape[1]), "forward"))

    X, y = load_gunpoint("train")
    members = torch.from_numpy(np.ascontiguousarray(X[y == "2"].transpose(0, 2, 1)))  # (26, 150, 1)
    mean = members.mean(0, keepdim=True).expand_as(members).contiguous()
    weights_one = torch.ones(members.shape[0], dtype=torch.float64)
    objective = torch.ops.softdtw_torch._soft_dtw_fused_value_and_grad
    cells = float(members.shape[0] * members.shape[1] ** 2)
    for gamma in (1.0, 0.1):
        seconds = best_seconds(lambda: objective(mean, members, weights_one, gamma, None, None, None, None),
                               args.repeats)
        rows.append(row(f"barycenter objective, GunPoint class 2 ({members.shape[0]} pairs 150 x 150), "
                        f"gamma = {gamma}, one evaluation", seconds, cells, "packs"))
    init = members.mean(0).numpy()
    whole = lambda: softdtw_barycenter(members.numpy(), gamma=0.1, init=init, max_iter=50, tol=1e-3)  # noqa: E731
    with CountingObjective() as count:
        whole()
    seconds = best_seconds(whole, args.repeats)
    rows.append(row(f"barycenter whole call, GunPoint class 2, gamma = 0.1 ({count.calls} evaluations)", seconds,
                    cells * count.calls, "packs"))
    return rows


# ----------------------------------------------------------------------------------------------
# Rocket and MiniRocket


def rocket_multiply_adds(kernels, n_timepoints):
    """Multiply-adds of one case: per kernel, length x channels x output positions (aeon's kernels:
    weights, lengths, biases, dilations, paddings, numbers of channels, channel indices)."""
    _, lengths, _, dilations, paddings, n_channels, _ = kernels
    outputs = n_timepoints + 2 * paddings - (lengths - 1) * dilations
    return float(np.sum(lengths * n_channels * np.maximum(outputs, 0)))


def minirocket_compares(parameters, n_timepoints):
    """Compares of one case: per dilation and kernel (84), its biases (aeon's features per kernel at
    that dilation) x the positions its PPV counts: the whole output for (dilation index + kernel)
    even, else the output without 4 dilations each side."""
    _, _, dilations, features_per_kernel, _ = parameters
    total = 0.0
    for index, (dilation, n_features) in enumerate(zip(dilations, features_per_kernel)):
        padding = (8 * int(dilation)) // 2
        for kernel in range(84):
            counted = n_timepoints if (index + kernel) % 2 == 0 else n_timepoints - 2 * padding
            total += int(n_features) * counted
    return total


def transform_rows(args, method, estimator, work_per_case, peak, isa, ceiling, unit, resource):
    """The ceiling's row, then one row per collection (bench_rocket.py's, same seeds): the
    transform's best time and its work per second (`work_per_case(fitted, n_timepoints)`) as a
    fraction of `peak`, the ceiling of `resource`."""
    rows = [f"| ceiling: {ceiling} ({isa}) | {peak / 1e9:.1f} G/s | | |"]
    for name, X in bench_rocket.collections(args):
        fitted = estimator(n_kernels=10_000, random_state=0).fit(X)
        seconds = best_seconds(lambda: fitted.transform(X), args.repeats)
        rate = work_per_case(fitted, X.shape[2]) * X.shape[0] / seconds
        rows.append(f"| {method} {name} {X.shape} | {seconds * 1e3:.1f} ms, {rate / 1e9:.2f} G {unit}/s | "
                    f"{100 * rate / peak:.0f}% | {resource} |")
    return rows


def rocket_rows(args, ceilings, threads):
    from softdtw_torch.rocket import Rocket

    return transform_rows(args, "Rocket", Rocket, lambda r, T: rocket_multiply_adds(r.kernels, T),
                          *ceilings.fma_peak(threads), "float32 multiply-adds", "multiply-adds",
                          "FMA units")


def minirocket_rows(args, ceilings, threads):
    """Against the ceiling of the instruction set MiniRocket's counting runs (softdtw_torch.info()'s
    path: its avx512 path on AVX-512; its avx2 path, and the portable path's loop compiled for
    AVX2 by GCC, on AVX2)."""
    from softdtw_torch._info import cpu_paths
    from softdtw_torch.rocket import MiniRocket

    isa = "avx512" if cpu_paths()["minirocket"].startswith("avx512") else "avx2"
    return transform_rows(args, "MiniRocket", MiniRocket, lambda m, T: minirocket_compares(m.parameters, T),
                          *ceilings.compare_count_peak(threads, isa=isa), "compare and count", "compares",
                          "compare and count")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--synthetic-cases", type=int, default=1000)
    parser.add_argument("--synthetic-length", type=int, default=1000)
    parser.add_argument("--parts", default="softdtw,softdtw64,rocket,minirocket")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    threads = int(os.environ["OMP_NUM_THREADS"])
    torch.set_num_threads(threads)
    parts = args.parts.split(",")
    unknown = set(parts) - {"softdtw", "softdtw64", "rocket", "minirocket"}
    if unknown:
        parser.error(f"--parts: unknown {sorted(unknown)}; expected a subset of softdtw,softdtw64,rocket,minirocket")

    ceilings = load_ceilings()
    lines = [f"CPU: {cpu_model()}; threads: {threads}; torch {torch.__version__}; "
             f"load average before: {os.getloadavg()[0]:.2f}",
             "",
             "| kernel | time, throughput | fraction of its ceiling | ceiling |",
             "|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for part, rows_of in (("softdtw", softdtw_rows), ("softdtw64", softdtw64_rows), ("rocket", rocket_rows),
                          ("minirocket", minirocket_rows)):
        if part in parts:
            for row in rows_of(args, ceilings, threads):
                lines.append(row)
                print(row, flush=True)
    lines.append(f"load average after: {os.getloadavg()[0]:.2f}")
    print(lines[-1])
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
