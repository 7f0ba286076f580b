"""Plants known bugs in the CUDA device code, one at a time, and shows which CPU-side check catches
each: the emulated values (against the unmutated kernels, themselves tested against the CPU
kernels), memcheck, racecheck or the emulator's own checks (harness_cases.py).

    python tests/cuda_emu/mutants.py [--markdown FILE] [--only FAMILY_OR_SUBSTRING ...]

Each mutant is one textual change to a copy of csrc/; the harness is built from the copy in its
three flavours and run on the mutant's family of cases. A mutant counts as caught when a run fails
(sanitizer or emulator report, crash, timeout) or its results differ from the unmutated kernels'.
Takes about a minute per mutant on 2 cores. docs/design/cuda_kernels.md records the last run.
(One slot for the column borders and messages, kColumnSlots = 1, is not a bug: it is safe by the
slot argument of docs/design/cuda_kernels.md and every check agrees, so it is not listed.)
"""
import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from typing import NamedTuple

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import softdtw_torch  # noqa: E402,F401
import emulated_ops  # noqa: E402
import harness_cases  # noqa: E402


class Mutant(NamedTuple):
    family: str  # softdtw | rocket | minirocket | multirocket | hydra
    name: str
    path: str  # under csrc/
    before: str  # occurs exactly once in the file
    after: str


# The transform kernel's grid-stride loop (its backward has the same header, a different body).
_HYDRA_TRANSFORM_LOOP = ("       unit += {step}) {{\n"
                         "    const int64_t case_index = unit / items, item = unit % items;\n"
                         "    const int64_t i = item / (s.n_representations * s.n_groups), g = item % s.n_groups;\n"
                         "    const int64_t block = item / s.n_groups;  // (dilation, representation)")

MUTANTS = [
    Mutant("softdtw", "__syncwarp deleted in the backward sweep", "softdtw/cuda/tiles.cuh",
           "    __syncwarp();  // this step's E stores", "    // this step's E stores"),
    Mutant("softdtw", "2 rolling slots for the forward's bottom rows instead of 3", "softdtw/cuda/tiles.cuh",
           "constexpr int kForwardSlots = 3;", "constexpr int kForwardSlots = 2;"),
    Mutant("softdtw", "2 rolling slots for the backward's row messages instead of 3", "softdtw/cuda/tiles.cuh",
           "constexpr int kBackwardSlots = 3;", "constexpr int kBackwardSlots = 2;"),
    Mutant("softdtw", "off-by-one: ∂D written one row past the tile", "softdtw/cuda/tiles.cuh",
           "      if (i < t.rows && j < t.cols) grad_D[", "      if (i <= t.rows && j < t.cols) grad_D["),
    Mutant("softdtw", "wrong shuffle offset in the forward wavefront (2 lanes instead of 1)", "softdtw/cuda/tiles.cuh",
           "  return __shfl_up_sync(kFullMask, value, 1);", "  return __shfl_up_sync(kFullMask, value, 2);"),
    Mutant("softdtw", "wrong shuffle offset for the backward's diagonal message", "softdtw/cuda/tiles.cuh",
           "    recv_diag = __shfl_down_sync(kFullMask, out_diag, 1);",
           "    recv_diag = __shfl_down_sync(kFullMask, out_diag, 2);"),
    Mutant("softdtw", "off-by-one in the window test (band and parallelogram)", "softdtw/cuda/tiles.cuh",
           "return first <= i && i <= last; }", "return first <= i && i < last; }"),
    Mutant("softdtw", "off-by-one in the parallelogram: one row too many per column", "softdtw/math.h",
           "    return clamped_row(floor((b < a ? b : a) + 1.0));",
           "    return clamped_row(floor((b < a ? b : a) + 2.0));"),
    Mutant("softdtw", "off-by-one in the tile skipping: a tile meeting the window in its last column skipped",
           "softdtw/cuda/tiles.cuh", "  for (int j = 0; j < t.cols; ++j) {\n    const ColumnWindow w",
           "  for (int j = 0; j < t.cols - 1; ++j) {\n    const ColumnWindow w"),
    Mutant("softdtw", "missing barrier after the backward's tile is staged", "softdtw/cuda/tiles.cuh",
           "    if constexpr (kWideR<T>) __syncthreads();      // the scratch is consumed: R's los may overwrite it\n"
           "    stage_borders(",
           "    stage_borders("),
    Mutant("softdtw", "the pair kernel's columns left to right (a cell reads its left neighbour's new R)",
           "softdtw/cuda/tiles.cuh", "      for (int c = kCols - 1; c >= 0; --c) {",
           "      for (int c = 0; c < kCols; ++c) {"),
    Mutant("softdtw", "the pair kernel's origin R(-1, -1) = 0 at every step", "softdtw/cuda/tiles.cuh",
           "        from_left_diag = step == 0 ? r_origin<T>() : inf;", "        from_left_diag = r_origin<T>();"),
    Mutant("softdtw", "the pair kernel's diagonal from lane - 1 one step late", "softdtw/cuda/tiles.cuh",
           "      from_left_diag = from_left;\n      from_left = shuffle_up(r2[kCols - 1]);",
           "      from_left = shuffle_up(r2[kCols - 1]);\n      from_left_diag = from_left;"),
    Mutant("softdtw", "the pair kernel one step short", "softdtw/cuda/tiles.cuh",
           "    const int steps = n + m - 1;", "    const int steps = n + m - 2;"),
    Mutant("softdtw", "the pair kernel's ring of two anti-diagonals not turned on the trip's second step",
           "softdtw/cuda/tiles.cuh", "      run_step(s + 1, r[1], r[0]);", "      run_step(s + 1, r[0], r[1]);"),
    Mutant("softdtw", "the pair backward's columns right to left (a cell reads column c + 1's new messages)",
           "softdtw/cuda/tiles.cuh", "      for (int c = 0; c < kCols; ++c) {\n        const int j = j0 + c, i = level - j;",
           "      for (int c = kCols - 1; c >= 0; --c) {\n        const int j = j0 + c, i = level - j;"),
    Mutant("softdtw", "the pair backward's diagonal message from lane + 1 one step early", "softdtw/cuda/tiles.cuh",
           "          const T from_diag = c + 1 < kCols ? diag_sent[c + 1] : right_diag_prev;",
           "          const T from_diag = c + 1 < kCols ? diag_sent[c + 1] : right_diag;"),
    Mutant("softdtw", "the pair backward's last lane keeps the messages its shuffle returns", "softdtw/cuda/tiles.cuh",
           "      if (lane == kWarpSize - 1) right_left = right_diag = T(0);\n", ""),
    Mutant("softdtw", "the pair backward's R of the next anti-diagonal loaded one too early", "softdtw/cuda/tiles.cuh",
           "      for (int k = 0; k <= kCols; ++k) next[k] = r_column(level - 3, k);",
           "      for (int k = 0; k <= kCols; ++k) next[k] = r_column(level - 4, k);"),
    Mutant("softdtw", "the pair backward's ring of anti-diagonals turned the wrong way in one step",
           "softdtw/cuda/tiles.cuh", "      step(level - 1, r[1], r[2], r[3], r[0], diag[1]);",
           "      step(level - 1, r[1], r[3], r[2], r[0], diag[1]);"),
    Mutant("softdtw", "the pair backward's diagonal messages of two steps back read from the last step",
           "softdtw/cuda/tiles.cuh", "      step(level - 2, r[2], r[3], r[0], r[1], diag[0]);",
           "      step(level - 2, r[2], r[3], r[0], r[1], diag[1]);"),
    Mutant("softdtw", "the pair backward one step short (a last trip that starts at anti-diagonal 0)",
           "softdtw/cuda/tiles.cuh", "    for (int level = first; level >= 0; level -= 4) {",
           "    for (int level = first; level > 0; level -= 4) {"),
    Mutant("softdtw", "the pair backward's sums over blocks first to last", "softdtw/cuda/tiles.cuh",
           "  for (int64_t q0 = (others - 1) / kBlock * kBlock; q0 >= 0; q0 -= kBlock) {",
           "  for (int64_t q0 = 0; q0 < others; q0 += kBlock) {"),
    Mutant("rocket", "__syncwarp deleted in the weight gradient (MAX then soft PPV)", "rocket/cuda/convolve.cuh",
           "      __syncwarp();\n    }\n    const double g_ppv", "    }\n    const double g_ppv"),
    Mutant("rocket", "missing barrier before restaging the next case's series", "rocket/cuda/convolve.cuh",
           "      __syncthreads();  // the previous case's readers are done\n", ""),
    Mutant("rocket", "off-by-one: taps at the case's last valid position skipped", "rocket/cuda/convolve.cuh",
           "    if (u < 0 || u >= length) continue;", "    if (u < 0 || u >= length - 1) continue;"),
    Mutant("rocket", "wrong shuffle offset in the first-maximum reduction", "rocket/cuda/convolve.cuh",
           "      const int64_t other_at = __shfl_down_sync(kFullMask, best_at, offset);",
           "      const int64_t other_at = __shfl_down_sync(kFullMask, best_at, offset / 2);"),
    Mutant("minirocket", "missing barrier before the counters are reset for the next chunk",
           "minirocket/cuda/transform.cuh",
           "      __syncthreads();  // the counters and biases are reset for the next chunk or block\n", ""),
    Mutant("minirocket", "missing barrier between staging the biases and counting", "minirocket/cuda/transform.cuh",
           "      for (int j = threadIdx.x; j < nb; j += kThreads) bias_chunk[j] = biases[cb.feature_start + j0 + j];\n"
           "      __syncthreads();\n",
           "      for (int j = threadIdx.x; j < nb; j += kThreads) bias_chunk[j] = biases[cb.feature_start + j0 + j];\n"),
    Mutant("minirocket", "off-by-one: one bias too many summed per chunk", "minirocket/cuda/transform.cuh",
           "      for (int j = threadIdx.x; j < nb; j += kThreads) {\n        int64_t count = 0;",
           "      for (int j = threadIdx.x; j <= nb; j += kThreads) {\n        int64_t count = 0;"),
    Mutant("minirocket", "dilation kernel: missing barrier between staging the biases and counting",
           "minirocket/cuda/transform.cuh",
           "          if (j < nb) shared.biases[k][j] = biases[dl.feature_start + k * dl.n_features + j0 + j];\n"
           "        }\n        __syncthreads();\n",
           "          if (j < nb) shared.biases[k][j] = biases[dl.feature_start + k * dl.n_features + j0 + j];\n"
           "        }\n"),
    Mutant("minirocket", "dilation kernel: missing barrier before the warps' counters are summed",
           "minirocket/cuda/transform.cuh",
           "        __syncthreads();\n        for (int s = threadIdx.x; s < kKernels * nb; s += kDilationThreads) {",
           "        for (int s = threadIdx.x; s < kKernels * nb; s += kDilationThreads) {"),
    Mutant("minirocket", "dilation kernel: missing barrier before the counters are set again",
           "minirocket/cuda/transform.cuh",
           "        __syncthreads();  // the counters and biases are set again for the next pass or block\n", ""),
    Mutant("minirocket", "dilation kernel: every lane adds the warp's count", "minirocket/cuda/transform.cuh",
           "              if (lane == 0) warp_counts[k][j] += count;", "              warp_counts[k][j] += count;"),
    Mutant("minirocket", "dilation kernel: the even and odd kernels' segments swapped", "minirocket/cuda/transform.cuh",
           "combine_transform(k % 2 == 0 ? alpha_even[p] : alpha_odd[p],",
           "combine_transform(k % 2 == 1 ? alpha_even[p] : alpha_odd[p],"),
    Mutant("minirocket", "dilation kernel: off-by-one: the trimmed segment one position longer",
           "minirocket/cuda/transform.cuh", "alpha_odd[p] = t >= odd_lo && t < odd_hi ? alpha : -INFINITY;",
           "alpha_odd[p] = t >= odd_lo && t <= odd_hi ? alpha : -INFINITY;"),
    Mutant("minirocket", "dilation kernel: a pass advances by one position a thread", "minirocket/cuda/transform.cuh",
           "base += P * kDilationThreads)", "base += kDilationThreads)"),
    Mutant("minirocket", "dilation kernel: a thread's positions a warp apart instead of a block",
           "minirocket/cuda/transform.cuh",
           "const int64_t t = base + p * kDilationThreads + threadIdx.x;",
           "const int64_t t = base + p * 32 + threadIdx.x;"),
    Mutant("minirocket", "dilation kernel: every pass stages the first biases", "minirocket/cuda/transform.cuh",
           "biases[dl.feature_start + k * dl.n_features + j0 + j];",
           "biases[dl.feature_start + k * dl.n_features + j];"),
    Mutant("minirocket", "dilation kernel: count_above's tree adds one value twice", "minirocket/cuda/transform.cuh",
           "ones[p] = ones[2 * p] + ones[2 * p + 1];", "ones[p] = ones[2 * p] + ones[2 * p];"),
    Mutant("minirocket", "warp_sum's butterfly starts at 8 lanes", "common/device.cuh",
           "for (int offset = 16; offset > 0; offset /= 2)", "for (int offset = 8; offset > 0; offset /= 2)"),
    Mutant("minirocket", "split_layout: a multichannel dilation's last combination dropped",
           "common/minirocket/layout.h",
           "combinations + first, combinations + end);", "combinations + first, combinations + end - 1);"),
    Mutant("multirocket", "off-by-one: a feature's segment read one position past its end",
           "multirocket/cuda/transform.cuh", "    for (int64_t t = lo; t < hi; ++t) {",
           "    for (int64_t t = lo; t <= hi; ++t) {"),
    Mutant("multirocket", "the first difference read with the series' row stride", "multirocket/cuda/transform.cuh",
           "    const int64_t row_stride = n_timepoints - r;", "    const int64_t row_stride = n_timepoints;"),
    Mutant("multirocket", "grid-stride step of one block instead of the grid", "multirocket/cuda/transform.cuh",
           "       item += static_cast<int64_t>(gridDim.x) * blockDim.x) {", "       item += blockDim.x) {"),
    Mutant("multirocket", "dilation kernel: missing barrier between writing a chunk's outputs and pooling them",
           "multirocket/cuda/transform.cuh", "          __syncthreads();  // the chunk's outputs are written\n", ""),
    Mutant("multirocket", "dilation kernel: missing barrier before the next chunk's outputs are written",
           "multirocket/cuda/transform.cuh",
           "          __syncthreads();  // the previous chunk's outputs are pooled\n", ""),
    Mutant("multirocket", "dilation kernel: off-by-one: a chunk's last position not pooled",
           "multirocket/cuda/transform.cuh",
           "base + kDilationThreads < hi ? base + kDilationThreads : hi;",
           "base + kDilationThreads - 1 < hi ? base + kDilationThreads - 1 : hi;"),
    Mutant("multirocket", "dilation kernel: positions indexed from the chunk, not the segment",
           "multirocket/cuda/transform.cuh",
           "pooling.add(shared.outputs[k][u - base], bias, u - lo);",
           "pooling.add(shared.outputs[k][u - base], bias, u - base);"),
    Mutant("multirocket", "dilation kernel: the difference's taps not shifted", "multirocket/cuda/transform.cuh",
           "  const bool difference = representation == 1;", "  const bool difference = false;"),
    Mutant("multirocket", "dilation kernel: the difference pooled against the series' biases",
           "multirocket/cuda/transform.cuh",
           "           biases + r * n_features, out + r * kPoolings * n_features,",
           "           biases, out + r * kPoolings * n_features,"),
    Mutant("hydra", "grid-stride step of one block instead of the grid in the transform", "hydra/cuda/transform.cuh",
           _HYDRA_TRANSFORM_LOOP.format(step="static_cast<int64_t>(gridDim.x) * blockDim.x"),
           _HYDRA_TRANSFORM_LOOP.format(step="blockDim.x")),
    Mutant("hydra", "the backward's row gradient written with the difference's row length as stride",
           "hydra/cuda/transform.cuh", "                   grad_rows + unit * s.n_timepoints,",
           "                   grad_rows + unit * (s.n_timepoints - 1),"),
    Mutant("hydra", "off-by-one: a case's last position read past its length", "hydra/math.h",
           "      v[tap] = (p >= 0 && p < length) ? value(p) : scalar_t(0);",
           "      v[tap] = (p >= 0 && p <= length) ? value(p) : scalar_t(0);"),
]


def cases(emu):
    return {
        # 5 × 3 tiles: a rolling border slot is reused within a launch from the fourth row block on.
        "softdtw": [harness_cases.softdtw_case(3, 130, 70, 3, 40, True, dtype)[1]
                    for dtype in (torch.float32, torch.float64)]
        + [harness_cases.softdtw_case(1, 260, 130, 2, -1, False, torch.float32)[1]]
        # One warp per pair with every lane's columns in the pair (4 columns a lane).
        + [harness_cases.softdtw_case(2, 90, 128, 2, -1, False, torch.float32)[1]]
        # An Itakura parallelogram whose corners leave whole tiles outside it.
        + [harness_cases.softdtw_case(2, 200, 140, 2, -1, True, torch.float32, itakura_slope=1.5)[1]],
        "rocket": [harness_cases.rocket_case(5, 3, 50, 12, temperature)[1] for temperature in (None, 0.7)],
        # dilation_kernel beside transform_kernel (a dilation moved onto one channel) over 3 blocks:
        # every block loops; 200 features a kernel (up to 107 a dilation): up to 7 passes of 16
        # counters (one channel) and 2 chunks of 64 (two channels); 1,100 positions: 8 a thread,
        # two passes.
        "minirocket": [harness_cases.minirocket_case(emu, 5, 2, 60, 840, one_channel_dilation_at=(0, 1))[1],
                       harness_cases.minirocket_case(emu, 3, 1, 30, 84 * 200)[1],
                       harness_cases.minirocket_case(emu, 3, 2, 30, 84 * 200)[1],
                       harness_cases.minirocket_case(emu, 2, 1, 1100, 840)[1]],
        # A ragged case of length 10 (empty segments) and grid-stride loops over 3 blocks; both
        # kernels (a dilation moved onto one channel); 300 positions: dilation_kernel's 3 chunks.
        "multirocket": [harness_cases.multirocket_case(emu, 4, 2, 50, 336, one_channel_dilation_at=(0, 1))[1],
                        harness_cases.multirocket_case(emu, 2, 1, 300, 168)[1]],
        # Ragged cases down to length 6 and a grid-stride loop over 3 blocks.
        "hydra": [harness_cases.hydra_case(5, 3, 40, 8, 16)[1]],
    }


def kind_of(report):
    """What a failed run's report says, in a few words."""
    asan = re.search(r"ERROR: AddressSanitizer: ([\w-]+)", report)
    emulator = re.search(r"cuda_emu: ([^:(]+)", report)
    if "WARNING: ThreadSanitizer: data race" in report:
        return "racecheck: data race"
    if asan:
        return f"memcheck: {asan.group(1)}"
    if "runtime error:" in report:
        return "memcheck: undefined behaviour"
    if emulator:
        return f"emulator: {emulator.group(1).strip()}"
    return "crash or timeout"


def outcome(executables, family_cases, reference, work):
    """What catches the build: a list of findings, empty when nothing does."""
    findings = []
    for flavour, exe in executables.items():
        for i, case in enumerate(family_cases):
            try:
                out = harness_cases.run(exe, case, os.path.join(work, f"{flavour}-{i}"), timeout=300)
            except harness_cases.HarnessError as error:
                findings.append(f"{kind_of(str(error))} ({flavour})")
                break
            differing = sorted(k for k in reference[i] if out.get(k) != reference[i][k])
            if differing:
                findings.append(f"values differ ({flavour}: {', '.join(differing[:3])}"
                                f"{' …' if len(differing) > 3 else ''})")
                break
    return findings


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", help="write the results as a markdown table to this file")
    parser.add_argument("--only", action="append", default=[],
                        help="run the mutants of this family, or whose name contains this (repeatable: any of them)")
    args = parser.parse_args()
    emu = emulated_ops.load()
    all_cases = cases(emu)
    with tempfile.TemporaryDirectory() as tmp:
        original = {flavour: os.path.join(tmp, f"harness-{flavour}") for flavour in harness_cases.CHECKING_FLAVOURS}
        for flavour, exe in original.items():
            harness_cases.build(flavour, exe)
        reference = {}
        for family, family_cases in all_cases.items():
            if outcome(original, family_cases, {i: {} for i in range(len(family_cases))}, os.path.join(tmp, family)):
                sys.exit(f"the unmutated kernels do not run clean on the {family} cases")
            reference[family] = [harness_cases.run(original["plain"], c, os.path.join(tmp, f"{family}-ref{i}"))
                                 for i, c in enumerate(family_cases)]
        rows = []
        chosen = [m for m in MUTANTS if not args.only or any(o in m.name or o == m.family for o in args.only)]
        for number, mutant in enumerate(chosen):
            start = time.time()
            csrc = os.path.join(tmp, f"csrc{number}")
            shutil.copytree(harness_cases.CSRC, csrc)
            path = os.path.join(csrc, mutant.path)
            with open(path) as f:
                text = f.read()
            if text.count(mutant.before) != 1:
                sys.exit(f"mutant '{mutant.name}': its text occurs {text.count(mutant.before)} times in {mutant.path}")
            with open(path, "w") as f:
                f.write(text.replace(mutant.before, mutant.after))
            executables = {}
            for flavour in harness_cases.CHECKING_FLAVOURS:
                executables[flavour] = os.path.join(tmp, f"mutant{number}-{flavour}")
                harness_cases.build(flavour, executables[flavour], csrc=csrc)
            findings = outcome(executables, all_cases[mutant.family], reference[mutant.family],
                               os.path.join(tmp, f"mutant{number}"))
            rows.append((mutant, findings))
            print(f"{'CAUGHT' if findings else 'MISSED'}  {mutant.family}: {mutant.name}: "
                  f"{'; '.join(findings) or 'nothing noticed'} ({time.time() - start:.0f} s)", flush=True)
    table = ["| family | planted bug | caught by |", "|---|---|---|"]
    table += [f"| {m.family} | {m.name} | {'; '.join(f) or '**missed**'} |" for m, f in rows]
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(table) + "\n")
    missed = sum(1 for _, f in rows if not f)
    print(f"{len(rows) - missed} of {len(rows)} mutants caught")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
