"""The performance models of MiniRocket's and MultiRocket's one-channel CUDA kernels (both named
dilation_kernel: csrc/minirocket/cuda/transform.cuh, csrc/multirocket/cuda/transform.cuh;
docs/design/rocket.md, "On the GPU" in §7 and §8): static counts read from the SASS of the built
library, no GPU needed.

MiniRocket, for each instance (P = 1, 2, 4, 8 positions a thread), per warp:
  L  the counting loop of one (kernel, bias): P compares and adds, the warp's sum, the counter
  V  the code between two such loops: one kernel's outputs for the thread's P positions
  S  the rest of a pass: loading x, Cα and the nine Cγ of P positions
  instructions = n · Σ over dilations, over passes of at most 16 biases:
      4 warps · ceil(T / 128P) · (S + 84 · V + 84 · biases of the pass · L)
MultiRocket, per warp:
  C  a chunk's outputs: 128 positions (a thread each) × 84 kernels into shared memory
  W  one position pooled (the pooling loop's body over the positions it covers)
  instructions = n · Σ over both representations, dilations, groups of 128 features:
      Σ over chunks of 128 positions: (warps with a feature) · C + (warps with a feature) · steps · W
  where steps is the chunk's positions inside the segment of the whole series (the longest).

Both sum over aeon's fit for each collection (its dilations and features per dilation: MiniRocket
10,000 features, MultiRocket 6,250 kernels), and give the time when every scheduler issues one
instruction a cycle (a lower bound: latency and occupancy not counted).

    python benchmarks/rocket_gpu_model.py [--arch sm_90] [--sms 132] [--clock-ghz 1.98]
"""
import argparse
import glob
import math
import os
import re
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_loop_counts import find_cuobjdump  # noqa: E402

import softdtw_torch  # noqa: E402

THREADS, WARPS, BIAS_SLOTS, KERNELS = 128, 4, 16, 84
COLLECTIONS = [("GunPoint", 150, 150), ("ACSF1", 100, 1460), ("synthetic 1000x1000", 1000, 1000)]
OPS = torch.ops.softdtw_torch


def functions(sass, family):
    """(name, [(address, instruction)]) of every dilation_kernel of `family` in `sass`."""
    for function in re.split(r"\n\s*Function : ", sass)[1:]:
        name = function.split("\n", 1)[0]
        if f"{len(family)}{family}15dilation_kernel" in name:
            yield name, [(int(a, 16), t.strip()) for a, t in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", function)]


def backward_branches(code):
    """(first, last) instruction indices of every loop body (a branch back)."""
    index = {address: i for i, (address, _) in enumerate(code)}
    for i, (address, text) in enumerate(code):
        branch = re.search(r"BRA (?:\w+, )?0x([0-9a-f]+)", text)
        if branch and int(branch.group(1), 16) < address and int(branch.group(1), 16) in index:
            yield index[int(branch.group(1), 16)], i


def minirocket_counts(sass):
    """{P: (L, V, S)}."""
    result = {}
    for name, code in functions(sass, "minirocket"):
        back = list(backward_branches(code))
        # A counting loop sums over the warp: REDUX (sm_80 on) or five SHFL.BFLY (sm_75).
        loops = sorted({(s, e) for s, e in back if e - s < 100 and (
            any("REDUX" in t for _, t in code[s:e + 1]) or sum("SHFL.BFLY" in t for _, t in code[s:e + 1]) == 5)})
        if len(loops) != KERNELS:
            sys.exit(f"{name}: expected {KERNELS} counting loops, found {len(loops)}")
        first, last = loops[0][0], loops[-1][1]
        pass_start, pass_end = min(((s, e) for s, e in back if s <= first and e >= last), key=lambda r: r[1] - r[0])
        L = max(e - s + 1 for s, e in loops)
        V = (last - first + 1 - sum(e - s + 1 for s, e in loops)) / KERNELS
        S = (pass_end - pass_start + 1) - (last - first + 1)
        result[int(re.search(r"dilation_kernelILi(\d+)E", name).group(1))] = (L, V, S)
    return result


def multirocket_counts(sass):
    """(C, W)."""
    for name, code in functions(sass, "multirocket"):
        barriers = [i for i, (_, t) in enumerate(code) if "BAR.SYNC" in t]
        if len(barriers) != 2:
            sys.exit(f"{name}: expected 2 barriers, found {len(barriers)}")
        # The pooling loop, unrolled by the compiler: one float64 addition (MPV's sum) a position.
        pooling = [(s, e) for s, e in backward_branches(code) if any("DADD" in t for _, t in code[s:e + 1])]
        s, e = min(pooling, key=lambda r: r[1] - r[0])
        steps = sum("DADD" in t for _, t in code[s:e + 1])
        return barriers[1] - barriers[0], (e - s + 1) / steps
    sys.exit("no multirocket dilation_kernel in the library")


def minirocket_model(counts, n, T):
    per_dilation = OPS.minirocket_fit(torch.randn(1, 1, T), 10_000, 32, 0)[3].tolist()
    P = next((p for p in (1, 2, 4, 8) if THREADS * p >= T), 8)
    passes = math.ceil(T / (THREADS * P))
    L, V, S = counts[P]
    total = counting = 0.0
    for nb in per_dilation:
        for j0 in range(0, nb, BIAS_SLOTS):
            biases = min(BIAS_SLOTS, nb - j0)
            total += WARPS * passes * (S + KERNELS * V + KERNELS * biases * L)
            counting += WARPS * passes * KERNELS * biases * L
    return f"P = {P}, {passes} pass{'es' if passes > 1 else ''}", total * n, counting * n


def multirocket_model(counts, n, T):
    C, W = counts
    p = OPS.multirocket_fit(torch.randn(1, 1, T).cumsum(-1), 6_250, 32, 0)
    total = pooling = 0.0
    for length, per_dilation in ((T, p[3].tolist()), (T - 1, p[8].tolist())):
        for nb in per_dilation:
            features = KERNELS * nb
            for first in range(0, features, THREADS):
                warps = math.ceil(min(THREADS, features - first) / 32)
                for base in range(0, length, THREADS):
                    steps = min(THREADS, length - base)
                    total += warps * (C + steps * W)
                    pooling += warps * steps * W
    return f"{math.ceil(T / THREADS)} chunks", total * n, pooling * n


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--sms", type=int, default=132, help="multiprocessors (H200: 132)")
    parser.add_argument("--clock-ghz", type=float, default=1.98, help="SM clock (H200: 1.98 GHz boost)")
    parser.add_argument("--cuobjdump")
    args = parser.parse_args()
    library = glob.glob(os.path.join(os.path.dirname(softdtw_torch.__file__), "_C*.so"))[0]
    sass = subprocess.run([find_cuobjdump(args.cuobjdump), "-sass", "-arch", args.arch, library], check=True,
                          capture_output=True, text=True).stdout
    mini = minirocket_counts(sass)
    if not mini:
        sys.exit(f"no dilation_kernel in {library} for {args.arch}: build with FORCE_CUDA=1")
    multi = multirocket_counts(sass)
    print(f"MiniRocket ({args.arch}), instructions per warp:\n")
    print("| P | L: counting loop | V: a kernel's outputs | S: a pass's loads |")
    print("|---|---|---|---|")
    for P, (L, V, S) in sorted(mini.items()):
        print(f"| {P} | {L} | {V:.1f} | {S} |")
    print(f"\nMultiRocket ({args.arch}), instructions per warp: C (a chunk's outputs) = {multi[0]}, "
          f"W (a position pooled) = {multi[1]:.1f}\n")
    issue_rate = args.sms * 4 * args.clock_ghz * 1e9
    print(f"| method | collection (n, T) | shape | warp instructions | counting or pooling | "
          f"issue-bound time ({args.sms} SMs, {args.clock_ghz} GHz) |")
    print("|---|---|---|---:|---:|---:|")
    for method, model, counts in (("MiniRocket", minirocket_model, mini), ("MultiRocket", multirocket_model, multi)):
        for name, n, T in COLLECTIONS:
            shape, total, inner = model(counts, n, T)
            print(f"| {method} | {name} ({n}, {T}) | {shape} | {total / 1e6:,.0f} M | {inner / total:.0%} | "
                  f"{total / issue_rate * 1e3:.3f} ms |")


if __name__ == "__main__":
    main()
