"""Side-by-side CPU benchmark of SoftDTW forward+backward: softdtw_torch against its CPU peers.

What is timed, for every implementation: ``loss = f(x, y).sum(); loss.backward()`` on fresh leaf
tensors ``x`` (B, N, d) and ``y`` (B, M, d) (both ``requires_grad``), squared Euclidean cost,
gamma = 1, no band, float32 inputs. One warm-up call per implementation and workload (numba JIT,
allocator), then the median of ``--repeats`` timed calls (``time.perf_counter``). Every
implementation runs with the same thread count (torch intra-op threads, numba threads, and
``OMP_NUM_THREADS`` / ``NUMBA_NUM_THREADS`` set before torch and numba are imported).

Implementations (peers are the PyPI packages, imported only if installed; a missing or failing
peer is skipped with a note in the table):

- ``softdtw_torch`` fused (costs computed inside the kernel) and unfused (cost tensor built with a
  matrix product, then ``soft_dtw_from_cost``); ragged batches via ``x_lengths`` / ``y_lengths``.
- ``tslearn.metrics.SoftDTWLossPyTorch``: builds the cost tensor with a broadcast
  (B, N, M, d) difference in torch, then numba kernels with ``prange`` over the batch; R and E are
  stored in the input dtype (float32 here), each cell's soft-min is evaluated in float64. No
  lengths support: ragged pairs run one by one in a Python loop (each a batch of one, so one
  thread per pair).
- tslearn's numpy API, ``SoftDTW(SquaredEuclidean(X, Y))`` + ``jacobian_product`` (what
  ``softdtw_barycenter`` uses for gradients): one pair at a time in a Python loop, float64 only,
  single-threaded DP (the Jacobian product is a numba ``prange`` over rows).
- ``pysdtw.SoftDTW(use_cuda=False)``: cost tensor by the quadratic expansion
  ``|x|² + |y|² − 2 x·y`` (clamped at 0), then numba kernels with ``prange`` over the batch,
  computing R and E in float64 but handing R back to torch as float32 between forward and
  backward. Ragged batches through its ``PackedSequence`` support.

Correctness is checked in the same run: values and gradients (w.r.t. x and y) of every row are
compared with softdtw_torch in float64 (fused) on the same inputs; errors are
``max |a − ref| / max |ref|``. A mismatch is printed loudly and marked in the table.

Run ``python benchmarks/bench_cpu.py --help`` for the options; ``--quick`` runs tiny shapes.
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
import traceback  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Callable, List, Optional, Tuple  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _accuracy import TOLERANCES, rel_err, tolerances  # noqa: E402
from _provenance import git_revision, module_version  # noqa: E402

Tensor = torch.Tensor
# An adapter takes leaf tensors x, y (requires_grad) and optional (B,) int64 lengths, runs forward
# and backward, and returns (values (B,), grad_x, grad_y) as torch tensors.
RunFn = Callable[[Tensor, Tensor, Optional[Tensor], Optional[Tensor]], Tuple[Tensor, Tensor, Tensor]]

# --------------------------------------------------------------------------------------------
# Workloads
# --------------------------------------------------------------------------------------------
@dataclass
class Workload:
    key: str
    B: int
    N: int
    M: int
    d: int
    ragged: bool = False
    min_len: int = 0  # ragged: lengths drawn uniformly in [min_len, N] (x) and [min_len, M] (y)

    def describe(self) -> str:
        text = f"B={self.B}, N=M={self.N}, d={self.d}" if self.N == self.M else \
            f"B={self.B}, N={self.N}, M={self.M}, d={self.d}"
        if self.ragged:
            text += f", ragged: lengths uniform in [{self.min_len}, {self.N}] (padded to {self.N})"
        return text


WORKLOADS = {
    "A": Workload("A", B=64, N=256, M=256, d=8),
    "B": Workload("B", B=4, N=2048, M=2048, d=1),
    "C": Workload("C", B=64, N=256, M=256, d=8, ragged=True, min_len=128),
}
QUICK_WORKLOADS = {
    "A": Workload("A", B=4, N=32, M=32, d=8),
    "B": Workload("B", B=2, N=64, M=64, d=1),
    "C": Workload("C", B=4, N=32, M=32, d=8, ragged=True, min_len=16),
}


def make_data(w: Workload, seed: int) -> Tuple[Tensor, Tensor, Optional[Tensor], Optional[Tensor]]:
    """Random float32 inputs (never zeros) and, for ragged workloads, int64 lengths; fixed seed."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(w.B, w.N, w.d, generator=g)
    y = torch.randn(w.B, w.M, w.d, generator=g)
    if not w.ragged:
        return x, y, None, None
    x_len = torch.randint(w.min_len, w.N + 1, (w.B,), generator=g, dtype=torch.int64)
    y_len = torch.randint(w.min_len, w.M + 1, (w.B,), generator=g, dtype=torch.int64)
    return x, y, x_len, y_len


def _backward(values: Tensor, x: Tensor, y: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """The timed step every autograd adapter shares: loss = values.sum(); loss.backward()."""
    values.sum().backward()
    return values.detach(), x.grad, y.grad


# --------------------------------------------------------------------------------------------
# Implementation adapters: one function each, returning an Impl (or raising if unavailable)
# --------------------------------------------------------------------------------------------
@dataclass
class Impl:
    key: str
    name: str
    precision: str  # the precision it computes in: "float32" or "float64" (selects tolerances)
    notes: str  # how it computes, what matters for a fair comparison
    ragged_notes: str  # how it handles a ragged batch
    run: RunFn


def softdtw_torch_impl(gamma: float, fused: bool) -> Impl:
    import softdtw_torch

    def run(x, y, x_len, y_len):
        values = softdtw_torch.soft_dtw(x, y, gamma=gamma, fused=fused, x_lengths=x_len, y_lengths=y_len)
        return _backward(values, x, y)

    mode = "fused" if fused else "unfused"
    notes = ("costs computed in the kernel, no (B,N,M) tensor" if fused
             else "cost tensor by batched matmul, then soft_dtw_from_cost")
    return Impl(f"softdtw_torch-{mode}", f"softdtw_torch {mode}", "float32", notes,
                "native x_lengths / y_lengths (one batched call)", run)


def tslearn_loss_impl(gamma: float) -> Impl:
    from tslearn.metrics import SoftDTWLossPyTorch

    loss_fn = SoftDTWLossPyTorch(gamma=gamma, normalize=False)

    def run(x, y, x_len, y_len):
        if x_len is None:
            values = loss_fn(x, y)
        else:  # no lengths support: each pair at its own length, a batch of one each
            values = torch.cat([
                loss_fn(x[b:b + 1, : int(x_len[b])], y[b:b + 1, : int(y_len[b])])
                for b in range(x.shape[0])
            ])
        return _backward(values, x, y)

    notes = ("torch cost via broadcast (B,N,M,d) tensor; numba prange over batch; "
             "R/E stored float32, per-cell soft-min in float64")
    return Impl("tslearn", "tslearn SoftDTWLossPyTorch", "float32", notes,
                "no lengths support: Python loop over pairs, each at its own length (batch of 1)", run)


def tslearn_numpy_impl(gamma: float) -> Impl:
    from tslearn.metrics import SoftDTW, SquaredEuclidean

    def run(x, y, x_len, y_len):
        B = x.shape[0]
        xs = x.detach().to(torch.float64).numpy()
        ys = y.detach().to(torch.float64).numpy()
        values = np.empty(B)
        gx = np.zeros_like(xs)
        gy = np.zeros_like(ys)
        for b in range(B):
            n = xs.shape[1] if x_len is None else int(x_len[b])
            m = ys.shape[1] if y_len is None else int(y_len[b])
            X, Y = xs[b, :n], ys[b, :m]
            # be="numpy": without it tslearn picks the backend from str(array) on every call
            cost = SquaredEuclidean(X, Y, be="numpy")
            sdtw = SoftDTW(cost, gamma=gamma, be="numpy")
            values[b] = sdtw.compute()
            E = sdtw.grad()  # d value / d cost, (n, m)
            gx[b, :n] = cost.jacobian_product(E)
            gy[b, :m] = SquaredEuclidean(Y, X, be="numpy").jacobian_product(E.T)
        return torch.from_numpy(values), torch.from_numpy(gx), torch.from_numpy(gy)

    notes = ("numpy API, float64 only; Python loop over pairs, single-threaded DP; "
             "includes float32->float64 conversion; gradient via jacobian_product, no autograd")
    return Impl("tslearn-numpy", "tslearn SoftDTW+SquaredEuclidean (numpy)", "float64", notes,
                "Python loop over pairs, each at its own length", run)


def pysdtw_impl(gamma: float) -> Impl:
    import pysdtw
    from torch.nn.utils.rnn import pack_padded_sequence

    sdtw = pysdtw.SoftDTW(gamma=gamma, use_cuda=False)  # default dist_func: pairwise_l2_squared

    def run(x, y, x_len, y_len):
        if x_len is None:
            values = sdtw(x, y)
        else:  # its lengths support: PackedSequence inputs (re-padded with zeros inside)
            px = pack_padded_sequence(x, x_len, batch_first=True, enforce_sorted=False)
            py = pack_padded_sequence(y, y_len, batch_first=True, enforce_sorted=False)
            values = sdtw(px, py)
        return _backward(values, x, y)

    notes = ("torch cost via quadratic expansion x^2+y^2-2x.y (clamped at 0); numba prange over batch; "
             "R/E computed in float64, R kept as float32 between forward and backward")
    return Impl("pysdtw", "pysdtw SoftDTW (cpu)", "float32", notes,
                "native: PackedSequence inputs (one batched call)", run)


ADAPTERS = {
    "softdtw_torch-fused": lambda gamma: softdtw_torch_impl(gamma, fused=True),
    "softdtw_torch-unfused": lambda gamma: softdtw_torch_impl(gamma, fused=False),
    "tslearn": tslearn_loss_impl,
    "tslearn-numpy": tslearn_numpy_impl,
    "pysdtw": pysdtw_impl,
}
BASELINE = "softdtw_torch-fused"


# --------------------------------------------------------------------------------------------
# Timing and correctness
# --------------------------------------------------------------------------------------------
def time_run(impl: Impl, data, repeats: int) -> Tuple[List[float], Tuple[Tensor, Tensor, Tensor]]:
    """One warm-up call, then `repeats` timed calls, each on fresh leaf tensors. Returns seconds
    per call and the outputs of the last call (for the correctness check)."""
    x0, y0, x_len, y_len = data

    def fresh():
        return x0.clone().requires_grad_(True), y0.clone().requires_grad_(True)

    return timed_calls(lambda x, y: impl.run(x, y, x_len, y_len), repeats, inputs=fresh)


def reference(data, gamma: float) -> Tuple[Tensor, Tensor, Tensor]:
    """softdtw_torch in float64 (fused: exact differences, no quadratic expansion), same inputs."""
    import softdtw_torch

    x0, y0, x_len, y_len = data
    x = x0.double().requires_grad_(True)
    y = y0.double().requires_grad_(True)
    values = softdtw_torch.soft_dtw(x, y, gamma=gamma, fused=True, x_lengths=x_len, y_lengths=y_len)
    return _backward(values, x, y)


def check(impl: Impl, outputs, ref, gamma: float) -> Tuple[bool, str]:
    values, gx, gy = outputs
    ref_values, ref_gx, ref_gy = ref
    if gx is None or gy is None:
        return False, "no gradient"
    v_err = rel_err(values, ref_values)
    g_err = max(rel_err(gx, ref_gx), rel_err(gy, ref_gy))
    v_tol, g_tol = tolerances(impl.precision, ref_values, gamma)
    ok = v_err <= v_tol and g_err <= g_tol  # also False on NaN
    return ok, f"values {v_err:.1e}, grads {g_err:.1e}"


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------
@dataclass
class Row:
    key: str
    name: str
    precision: str = ""
    notes: str = ""
    median_ms: Optional[float] = None
    min_ms: Optional[float] = None
    ok: Optional[bool] = None
    errors: str = ""
    failure: str = ""


@dataclass
class CaseResult:
    workload: Workload
    tolerance_note: str = ""
    rows: List[Row] = field(default_factory=list)


def _numba_threading() -> str:
    try:
        import numba
        try:
            layer = numba.threading_layer()
        except ValueError:  # no parallel region has run yet
            layer = "not initialised"
        return f"{numba.get_num_threads()} threads, layer {layer}"
    except ImportError:
        return "numba not installed"


def _openmp_runtimes() -> str:
    """OpenMP runtimes mapped in this process: torch ships its own libgomp and numba's 'omp' layer
    may load the system one, giving two thread pools that compete for the same cores."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if any(k in line for k in ("libgomp", "libiomp", "libomp"))}
        return ", ".join(sorted(libs)) or "none"
    except OSError:
        return "unknown"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(results: List[CaseResult], args, skipped: List[str]) -> str:
    lines = ["# SoftDTW forward+backward on CPU: softdtw_torch vs CPU peers", ""]
    lines += [
        f"- machine: {cpu_model()}, {os.cpu_count()} logical CPUs ({available_cores()} available), "
        f"{platform.system()} {platform.release()}",
        f"- threads: {args.threads} for everyone (torch intra-op {torch.get_num_threads()}; numba "
        f"{_numba_threading()}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
        f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}); OpenMP runtimes loaded: {_openmp_runtimes()}",
        f"- versions: python {platform.python_version()}, torch {torch.__version__}, numpy {np.__version__}, "
        f"numba {module_version('numba')}, tslearn {module_version('tslearn')}, pysdtw {module_version('pysdtw')}, "
        f"softdtw_torch {module_version('softdtw_torch')} (git {git_revision()})",
        f"- protocol: gamma={args.gamma}, squared Euclidean cost, no band; float32 inputs; one warm-up "
        f"call per implementation, then median (and min) of {args.repeats} timed calls of "
        "`loss = f(x, y).sum(); loss.backward()` on fresh leaf x, y (both requires_grad), randn data "
        f"(seed {args.seed}); time.perf_counter." + (" QUICK MODE (tiny shapes, smoke test only)." if args.quick else ""),
        "- correctness: values and gradients w.r.t. x and y against softdtw_torch float64 (fused) on the "
        "same inputs; error = max|a - ref| / max|ref|; tolerance on values: "
        + ", ".join(f"{p} {v:.0e}" for p, (v, _) in TOLERANCES.items())
        + "; on gradients: max(floor, 10 eps max|value| / gamma) with floor "
        + ", ".join(f"{p} {g:.0e}" for p, (_, g) in TOLERANCES.items())
        + " (a peer that stores R in float32 carries eps |R| / gamma into every backward weight; per case below).",
        "- speed-up: time of that row / time of softdtw_torch fused (> 1: softdtw_torch fused is faster).",
    ]
    if skipped:
        lines.append("- skipped: " + "; ".join(skipped))
    for case in results:
        w = case.workload
        lines += ["", f"## {w.key}: {w.describe()}", "", case.tolerance_note, ""]
        notes_header = "how it runs (ragged handling)" if w.ragged else "how it runs"
        lines.append(f"| implementation | precision | median ms | min ms | speed-up of softdtw_torch fused "
                     f"| correctness (max rel. err.) | {notes_header} |")
        lines.append("|---|---|---:|---:|---:|---|---|")
        base = next((r for r in case.rows if r.key == BASELINE and r.median_ms), None)
        for r in case.rows:
            if r.failure:
                lines.append(f"| {r.name} | {r.precision} | - | - | - | **FAILED** | {_cell(r.failure)} |")
                continue
            speedup = f"{r.median_ms / base.median_ms:.2f}x" if base else "n/a"
            verdict = "ok" if r.ok else "**MISMATCH**"
            lines.append(f"| {r.name} | {r.precision} | {r.median_ms:.2f} | {r.min_ms:.2f} | {speedup} "
                         f"| {verdict} ({r.errors}) | {_cell(r.notes)} |")
    return "\n".join(lines) + "\n"




# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default="A,B,C",
                   help="comma-separated workloads: A (B=64, N=M=256, d=8), B (B=4, N=M=2048, d=1), "
                        "C (ragged: B=64, N=M=256 padded, d=8, lengths in [128, 256]); default A,B,C")
    p.add_argument("--impls", default=",".join(ADAPTERS),
                   help="comma-separated implementations, default all: " + ", ".join(ADAPTERS))
    p.add_argument("--threads", type=int, default=available_cores(),
                   help="threads for every implementation (default: all available cores)")
    p.add_argument("--numba-threading-layer", choices=["default", "safe", "threadsafe", "forksafe", "omp",
                                                           "tbb", "workqueue"],
                   help="NUMBA_THREADING_LAYER for the numba peers (default: numba's choice; with 'omp', numba's "
                        "OpenMP runtime may be a second one beside torch's, see the report header)")
    p.add_argument("--repeats", type=int, default=5, help="timed calls per implementation (default 5)")
    p.add_argument("--gamma", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="tiny shapes, for a smoke test")
    p.add_argument("--markdown", metavar="PATH", help="also write the markdown table to PATH")
    args = p.parse_args(argv)
    args.cases = [c.strip().upper() for c in args.cases.split(",") if c.strip()]
    args.impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    for c in args.cases:
        if c not in WORKLOADS:
            p.error(f"unknown case {c!r}; choose from {', '.join(WORKLOADS)}")
    for i in args.impls:
        if i not in ADAPTERS:
            p.error(f"unknown implementation {i!r}; choose from {', '.join(ADAPTERS)}")
    if args.repeats < 1 or args.threads < 1:
        p.error("--repeats and --threads must be >= 1")
    return args


def set_threads(threads: int) -> None:
    torch.set_num_threads(threads)
    try:
        import numba
        numba.set_num_threads(threads)  # raises if above NUMBA_NUM_THREADS (set before import)
    except ImportError:
        pass


def load_impls(impl_keys: List[str], gamma: float) -> Tuple[List[Impl], List[str]]:
    impls, skipped = [], []
    for key in impl_keys:
        try:
            impls.append(ADAPTERS[key](gamma))
        except Exception as exc:  # noqa: BLE001 - a peer that cannot load is skipped, not fatal
            msg = f"{key}: {type(exc).__name__}: {exc}"
            print(f"NOTE: skipping {msg}", file=sys.stderr)
            skipped.append(msg)
    return impls, skipped


def run_case(w: Workload, impls: List[Impl], args) -> CaseResult:
    data = make_data(w, args.seed)
    ref = reference(data, args.gamma)
    result = CaseResult(w)
    ref_values = ref[0]
    result.tolerance_note = (
        f"max |value| {ref_values.abs().max().item():.4g}; gradient tolerance "
        + ", ".join(f"{p} {tolerances(p, ref_values, args.gamma)[1]:.1e}" for p in TOLERANCES)
    )
    print(f"\n[{w.key}] {w.describe()}", file=sys.stderr)
    for impl in impls:
        row = Row(impl.key, impl.name, impl.precision, impl.ragged_notes if w.ragged else impl.notes)
        try:
            times, outputs = time_run(impl, data, args.repeats)
        except Exception as exc:  # noqa: BLE001 - a failing peer is reported, the run goes on
            row.failure = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            print(f"!!! {impl.name} FAILED on {w.key}:\n{traceback.format_exc()}", file=sys.stderr)
            result.rows.append(row)
            continue
        row.median_ms = 1e3 * statistics.median(times)
        row.min_ms = 1e3 * min(times)
        row.ok, row.errors = check(impl, outputs, ref, args.gamma)
        print(f"  {impl.name:42s} {row.median_ms:10.2f} ms  {'ok' if row.ok else 'MISMATCH'} ({row.errors})",
              file=sys.stderr)
        if not row.ok:
            print(f"!!! MISMATCH: {impl.name} on {w.key} disagrees with the float64 reference: {row.errors}",
                  file=sys.stderr)
        result.rows.append(row)
    return result


def main(argv=None) -> int:
    args = parse_args(argv)
    set_threads(args.threads)
    try:
        import softdtw_torch  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        print(f"error: softdtw_torch is not importable ({type(exc).__name__}: {exc}); "
              "build it first (pip install --no-build-isolation -e .)", file=sys.stderr)
        return 2
    impls, skipped = load_impls(args.impls, args.gamma)
    workloads = QUICK_WORKLOADS if args.quick else WORKLOADS
    results = [run_case(workloads[c], impls, args) for c in args.cases]
    report = render(results, args, skipped)
    print()
    print(report, end="")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report)
        print(f"\nwritten to {args.markdown}", file=sys.stderr)
    mismatches = [r for c in results for r in c.rows if r.ok is False]
    if mismatches:
        print(f"\n!!! {len(mismatches)} row(s) MISMATCH the reference: "
              + ", ".join(r.name for r in mismatches), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
