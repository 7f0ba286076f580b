"""Side-by-side GPU benchmark of SoftDTW forward+backward: softdtw_torch against its CUDA peers.

What is timed, for every implementation: ``loss = f(x, y).sum(); loss.backward()`` on fresh leaf
tensors ``x`` (B, N, d) and ``y`` (B, M, d) (both ``requires_grad``), squared Euclidean cost
||x_i - y_j||^2 (every peer's default, and ours: no convention to adapt), gamma = 1, no band,
float32 randn inputs. CUDA events around each call (synchronized before, so that a launch-bound
peer cannot hide its host time behind a queue), one warm-up call (module load, numba JIT,
allocator), a second one that measures memory and estimates the call's time, then the median of
up to ``--repeats`` calls within ``--budget-s`` seconds per implementation and workload (slow peers
get fewer calls; the table says how many). Input sets are rotated so that the inputs of one call
are not in L2 from the previous one.

Workloads: W1 (32, 512, 512, 64), W2 (8, 4096, 4096, 1), W3 (1024, 128, 128, 3) of
docs/design/softdtw.md §7 and U (32, 512, 128, 8, unequal lengths), then BGU's own grid
B in {16, 32} x N = M in {128, 512, 1024, 2048} x d in {1, 64} (their bench/bench_memory.py), in
that order, so that a run cut short by ``--deadline-s`` still has the targets.

Implementations (``--impls``):
- softdtw_torch fused and unfused (this project);
- BGU-CS-VIL/sdtw-cuda-torch (the paper's library) unfused and fused: pure Python + numba.cuda
  kernels, nothing to compile; imported from ``--peers-dir``/sdtw-cuda-torch, as its README's
  ``pip install -e`` would;
- pysdtw (PyPI wheel; numba.cuda);
- Maghoumi/pytorch-softdtw-cuda (``soft_dtw_cuda.py`` from ``--peers-dir``; numba.cuda; its CUDA
  kernel needs max(N, M) <= 1024, beyond which the module silently falls back to its CPU code:
  reported as unsupported, not timed).
``scripts/prepare_gpu_peers.sh`` puts the peers into ``--peers-dir`` and the wheels into .whl/.

Each implementation runs in its own worker process, so that a crash, a sticky CUDA error or a hang
(killed after ``--cell-timeout-s``) costs one row, never the benchmark: the row says what happened
with the error's first line. Values and gradients of the first ``--check-pairs`` pairs are checked
in the same run against softdtw_torch in float64 on the CPU (_accuracy.py's rule).

Memory: peak of torch's caching allocator during one forward+backward, beyond what was allocated
before it (the inputs; the gradients are part of the peak), and the device memory taken outside
torch's allocator during that call (cudaMemGetInfo delta minus torch's reserved delta), which
would show allocations numba made itself. Every peer here allocates its tables as torch tensors and
hands them to numba through __cuda_array_interface__, so the first column sees them.

Throughput: cells/s = B*N*M / time, against the floors of docs/design/softdtw.md §7 (H100/H200):
compute ceiling 0.7e12 cells/s forward+backward, chain floor 35-76 ns per anti-diagonal step over
2 (N + M - 1) steps (forward, then backward).

    python benchmarks/bench_gpu_peers.py [--markdown PATH] [--plot PATH] [--quick] [--device cpu]

``--device cpu --quick`` is a smoke test for a machine without a GPU: our ops and the peers' CPU
code paths run (BGU's fused mode is CUDA-only and says so). Exit status: 1 when one of our own rows
failed or disagrees with the reference, 2 on a usage error; a failing peer is a result, not an error.
"""
import argparse
import collections
import csv
import faulthandler
import gc
import json
import os
import platform
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch

from _accuracy import TOLERANCES, rel_err, tolerances
from _provenance import git_revision

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = "@@bench_gpu_peers@@ "  # prefix of the worker's JSON messages on its stdout


# --------------------------------------------------------------------------------------------
# Workloads and floors
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    B: int
    N: int
    M: int
    d: int

    @property
    def cells(self) -> int:
        return self.B * self.N * self.M

    def describe(self) -> str:
        lengths = f"N=M={self.N}" if self.N == self.M else f"N={self.N}, M={self.M}"
        return f"B={self.B}, {lengths}, d={self.d}"

    def encode(self) -> str:
        return f"{self.B}x{self.N}x{self.M}x{self.d}"

    @staticmethod
    def decode(text: str) -> "Shape":
        return Shape(*(int(v) for v in text.split("x")))


TARGETS = {"W1": Shape(32, 512, 512, 64), "W3": Shape(1024, 128, 128, 3), "U": Shape(32, 512, 128, 8),
           "W2": Shape(8, 4096, 4096, 1)}
GRID_B, GRID_N, GRID_D = (16, 32), (128, 512, 1024, 2048), (1, 64)
QUICK_TARGETS = {"W1": Shape(4, 64, 64, 16), "W3": Shape(64, 16, 16, 3), "U": Shape(4, 64, 16, 8),
                 "W2": Shape(2, 256, 256, 1)}
QUICK_GRID_B, QUICK_GRID_N, QUICK_GRID_D = (2, 4), (16, 64), (1, 8)

# Design doc section 7 (H100/H200, sm_90): special-function-unit ceiling and dependency chain.
CEILING_FWD_BWD = 0.7e12  # cells/s, forward+backward
CHAIN_NS_PER_STEP = (35.0, 76.0)  # registers/shuffles .. a block barrier per anti-diagonal


@dataclass
class Floors:
    compute_s: float
    chain_s: Tuple[float, float]

    @property
    def floor_s(self) -> float:  # the optimistic bound: neither limit can be beaten
        return max(self.compute_s, self.chain_s[0])

    @property
    def binding(self) -> str:
        if self.compute_s > self.chain_s[1]:
            return "compute"
        if self.compute_s < self.chain_s[0]:
            return "chain"
        return "compute ~ chain"


def floors(s: Shape) -> Floors:
    steps = 2 * (s.N + s.M - 1)  # forward, then the backward walks the anti-diagonals again
    return Floors(s.cells / CEILING_FWD_BWD, tuple(steps * ns * 1e-9 for ns in CHAIN_NS_PER_STEP))


def grid_name(s: Shape) -> str:
    return f"B{s.B}-N{s.N}-d{s.d}"


def plan(quick: bool, sections: List[str]) -> List[Tuple[str, Dict[str, Shape]]]:
    """Phases in run order: [(phase, {cell name: shape})]. A grid shape equal to a target (W1) is
    measured once, under the target's name."""
    targets = QUICK_TARGETS if quick else TARGETS
    gb, gn, gd = (QUICK_GRID_B, QUICK_GRID_N, QUICK_GRID_D) if quick else (GRID_B, GRID_N, GRID_D)
    phases = []
    if "targets" in sections:
        phases.append(("targets", dict(targets)))
    if "grid" in sections:
        known = set(targets.values()) if "targets" in sections else set()
        grid = {grid_name(s): s for s in sorted((Shape(B, N, N, d) for B in gb for N in gn for d in gd),
                                                key=lambda s: (s.N, s.B, s.d)) if s not in known}
        phases.append(("grid", grid))
    return phases


def grid_shapes(quick: bool) -> List[Shape]:
    gb, gn, gd = (QUICK_GRID_B, QUICK_GRID_N, QUICK_GRID_D) if quick else (GRID_B, GRID_N, GRID_D)
    return [Shape(B, N, N, d) for B in gb for N in gn for d in gd]


# --------------------------------------------------------------------------------------------
# Implementations: how each is called, as its users call it
# --------------------------------------------------------------------------------------------
@dataclass
class ImplInfo:
    label: str
    mode: str  # "fused": costs inside the kernel; "unfused": a (B, N, M) cost tensor first
    notes: str  # how it runs on CUDA, what matters for a fair comparison
    memory_method: str


_TORCH_ALLOC = "torch allocator peak"
_NUMBA_ALLOC = ("torch allocator peak: its R/E tables are torch tensors handed to numba kernels via "
                "__cuda_array_interface__ (read from its source); the outside-torch column checks that")
IMPLS = {
    "ours-fused": ImplInfo("softdtw_torch fused", "fused",
                           "costs computed in the kernel, no (B,N,M) tensor", _TORCH_ALLOC),
    "ours-fused-checkpoint": ImplInfo("softdtw_torch fused, checkpoint", "fused",
                                      "checkpoint=True: no (B,N,M) table kept, R on tile borders, each tile "
                                      "recomputed in the backward", _TORCH_ALLOC),
    "ours-unfused": ImplInfo("softdtw_torch unfused", "unfused",
                             "cost tensor by batched matmul (pairwise_cost), then soft_dtw_from_cost", _TORCH_ALLOC),
    "bgu-unfused": ImplInfo(
        "BGU sdtw-cuda-torch unfused", "unfused",
        "SoftDTW(fused=False): cost tensor x^2+y^2-2x.y (bmm, clamped at 0); numba.cuda, one block per pair "
        "and one thread per row if max(N,M) <= 1024, else one launch per anti-diagonal; log-space backward "
        "materializes E", _NUMBA_ALLOC),
    "bgu-fused": ImplInfo(
        "BGU sdtw-cuda-torch fused", "fused",
        "SoftDTW(fused=True): costs in the kernel, one numba.cuda launch per anti-diagonal (2(N+M-1) launches); "
        "backward materializes E (B,N,M), gradient by bmm", _NUMBA_ALLOC),
    "pysdtw": ImplInfo(
        "pysdtw", "unfused",
        "pysdtw.SoftDTW(use_cuda=True): cost x^2+y^2-2x.y (bmm, clamped); numba.cuda, one block per pair, "
        "<= 1024 threads looping over longer diagonals; backward loops over pairs in Python", _NUMBA_ALLOC),
    "maghoumi": ImplInfo(
        "Maghoumi soft_dtw_cuda", "unfused",
        "SoftDTW(use_cuda=True): cost by a broadcast (B,N,M,d) difference tensor; numba.cuda, one block per "
        "pair, one thread per row (max(N,M) <= 1024)", _NUMBA_ALLOC),
}
OURS = ("ours-fused", "ours-fused-checkpoint", "ours-unfused")
PEER_SOURCES = ("sdtw-cuda-torch", "pytorch-softdtw-cuda", "pysdtw")  # their names in VERSIONS.txt
PEERS = tuple(k for k in IMPLS if k not in OURS)


class Unsupported(Exception):
    """This implementation cannot run this case (by its design, not a failure): a row says why."""


class Impl:
    """A loaded implementation: f(x, y) -> (B,) values, and why a shape cannot run (or None)."""

    def __init__(self, f, version: str, unsupported=lambda shape: None):
        self.f = f
        self.version = version
        self.unsupported = unsupported


def _peer_path(peers_dir: str, name: str) -> str:
    path = os.path.join(peers_dir, name)
    if not os.path.isdir(path):
        raise ImportError(f"{path} is missing: run scripts/prepare_gpu_peers.sh and carry benchmarks/peers")
    sys.path.insert(0, path)
    return path


def _peer_commit(peers_dir: str, name: str) -> str:
    try:
        with open(os.path.join(peers_dir, "VERSIONS.txt")) as f:
            for line in f:
                parts = [p.strip() for p in line.split("|")]
                if parts[0] == name and len(parts) > 2:
                    return f"git {parts[2][:12]}"
    except OSError:
        pass
    return "commit unknown (no VERSIONS.txt)"


def _numba_cuda_numpy_shim() -> None:
    """numpy 2.5 dropped np.row_stack (an alias of np.vstack since numpy 2.0's deprecation); the
    numba-cuda of the GPU image still registers an overload for it at import, so every numba.cuda
    peer failed to import there (2026-11-26). The alias, put back before that import, changes no
    peer's code or arithmetic."""
    import numpy as np

    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def load_impl(key: str, device: str, gamma: float, peers_dir: str) -> Impl:
    on_cuda = device == "cuda"
    if key in OURS:
        import softdtw_torch

        options = {"ours-fused": dict(fused=True), "ours-fused-checkpoint": dict(checkpoint=True),
                   "ours-unfused": dict(fused=False)}[key]
        return Impl(lambda x, y: softdtw_torch.soft_dtw(x, y, gamma=gamma, **options),
                    f"{softdtw_torch.__version__} (git {git_revision()})")
    _numba_cuda_numpy_shim()  # every peer runs on numba
    if key in ("bgu-unfused", "bgu-fused"):
        path = _peer_path(peers_dir, "sdtw-cuda-torch")
        import softdtw_cuda

        assert os.path.abspath(softdtw_cuda.__file__).startswith(os.path.abspath(path)), softdtw_cuda.__file__
        fused = key == "bgu-fused"
        module = softdtw_cuda.SoftDTW(gamma=gamma, dist="sqeuclidean", fused=fused, normalize=False)
        cpu_only = None if (on_cuda or not fused) else "needs CUDA: BGU's fused mode runs on CUDA tensors only"
        return Impl(module, _peer_commit(peers_dir, "sdtw-cuda-torch"), lambda s: cpu_only)
    if key == "pysdtw":
        import pysdtw

        return Impl(pysdtw.SoftDTW(gamma=gamma, use_cuda=on_cuda), f"{pysdtw.__version__} ({pysdtw.__file__})")
    if key == "maghoumi":
        path = _peer_path(peers_dir, "pytorch-softdtw-cuda")
        import soft_dtw_cuda

        assert os.path.abspath(soft_dtw_cuda.__file__).startswith(os.path.abspath(path)), soft_dtw_cuda.__file__

        def unsupported(s: Shape) -> Optional[str]:
            if on_cuda and max(s.N, s.M) > 1024:
                return ("unsupported: max(N, M) > 1024 (its CUDA kernel runs one thread per row in one block; "
                        "the module then falls back to its CPU code, not timed here)")
            return None

        return Impl(soft_dtw_cuda.SoftDTW(use_cuda=on_cuda, gamma=gamma),
                    _peer_commit(peers_dir, "pytorch-softdtw-cuda"), unsupported)
    raise ValueError(f"unknown implementation {key!r}")


# --------------------------------------------------------------------------------------------
# Worker: one process per implementation, runs cells and reports JSON lines
# --------------------------------------------------------------------------------------------
def make_inputs(s: Shape, seed: int, device: str = "cpu") -> Tuple[torch.Tensor, torch.Tensor]:
    """Deterministic float32 randn inputs, drawn on the CPU so that every process gets the same."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(s.B, s.N, s.d, generator=g)
    y = torch.randn(s.B, s.M, s.d, generator=g)
    return x.to(device), y.to(device)


def rotation_count(s: Shape, device: str) -> int:
    """Input sets to cycle through: enough to overflow a 50-60 MB L2 twice over, at most 32."""
    if device != "cuda":
        return 1
    set_bytes = 4 * s.B * (s.N + s.M) * s.d
    return max(1, min(32, -(-128 * 2 ** 20 // set_bytes)))


def step(f, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The timed region, as BGU's own bench and the protocol define it."""
    values = f(x, y)
    values.sum().backward()
    return values


def _timed_ms(f, x, y, device: str) -> float:
    if device == "cuda":
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step(f, x, y)
        end.record()
        end.synchronize()
        return start.elapsed_time(end)
    t0 = time.perf_counter()
    step(f, x, y)
    return 1e3 * (time.perf_counter() - t0)


def _with_memory(call, device: str):
    """Runs call() once and returns (its result, memory dict or None on CPU)."""
    if device != "cuda":
        return call(), None
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # so that the reserved and cudaMemGetInfo deltas show this call alone
    torch.cuda.reset_peak_memory_stats()
    base, reserved0 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    free0 = torch.cuda.mem_get_info()[0]
    result = call()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    free1, reserved1 = torch.cuda.mem_get_info()[0], torch.cuda.memory_reserved()
    outside = (free0 - free1) - (reserved1 - reserved0)
    return result, {"peak_beyond_inputs": peak, "outside_torch": outside}


def run_cell(impl: Impl, s: Shape, args, out_path: str) -> dict:
    device = args.device
    sets = [make_inputs(s, args.seed + i, device) for i in range(rotation_count(s, device))]

    def fresh(i):  # new leaves on stored data: no copy, so nothing is warmed in L2 for the call
        x, y = sets[i % len(sets)]
        return x.detach().requires_grad_(True), y.detach().requires_grad_(True)

    # warm-up 1 (module load, JIT, allocator) on set 0, whose outputs are checked
    x, y = fresh(0)
    t0 = time.perf_counter()
    values = step(impl.f, x, y)
    if device == "cuda":
        torch.cuda.synchronize()
    warm_ms = [1e3 * (time.perf_counter() - t0)]
    k = args.check_pairs
    torch.save({"values": values.detach()[:k].cpu(),
                "gx": None if x.grad is None else x.grad[:k].cpu(),
                "gy": None if y.grad is None else y.grad[:k].cpu()}, out_path)
    del values, x, y

    # warm-up 2 measures memory and the call's time after JIT, which sets the number of repeats
    t_est, mem = _with_memory(lambda: _timed_ms(impl.f, *fresh(1), device), device)
    warm_ms.append(t_est)
    budget_ms = 1e3 * args.budget_s
    if t_est > budget_ms:  # very slow: that call is the only one the budget allows
        times, note = [t_est], f"the memory-measuring call only ({t_est / 1e3:.3g} s > budget {args.budget_s:g} s)"
    else:
        n = min(args.repeats, max(1, int(budget_ms // max(t_est, 1e-3))))
        times, note = [], ""
        for i in range(n):
            if time.time() > args.deadline_at:
                note = f"{len(times)} of {n} calls (run deadline)"
                break
            times.append(_timed_ms(impl.f, *fresh(2 + i), device))
        if not times:
            times, note = [t_est], "the memory-measuring call only (run deadline)"
        elif not note and n < args.repeats:
            note = f"{n} of {args.repeats} calls (time budget {args.budget_s:g} s)"
    return {"status": "ok", "times_ms": times, "warmup_ms": warm_ms, "note": note, "mem": mem,
            "input_bytes": 4 * s.B * (s.N + s.M) * s.d, "outputs": out_path}


def _send(msg: dict) -> None:
    sys.stdout.write(MARKER + json.dumps(msg) + "\n")
    sys.stdout.flush()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def device_info(device: str) -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__, "device": device}
    for name in ("numba", "numba-cuda", "numpy"):
        try:
            from importlib.metadata import version

            info[name] = version(name)
        except Exception:  # noqa: BLE001 - not installed
            info[name] = "not installed"
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        info.update(name=p.name, capability=f"{p.major}.{p.minor}", sms=p.multi_processor_count,
                    memory_gib=round(p.total_memory / 2 ** 30, 1), cuda=torch.version.cuda,
                    tf32_matmul=torch.backends.cuda.matmul.allow_tf32)
    else:
        info.update(name=platform.processor() or platform.machine(), threads=torch.get_num_threads())
    return info


def worker_main(args) -> int:
    faulthandler.enable()  # a segfault or abort in a kernel launch leaves its Python stack on stderr
    try:
        impl = load_impl(args.worker, args.device, args.gamma, args.peers_dir)
        _send({"type": "hello", "version": impl.version, "info": device_info(args.device)})
    except Exception as exc:  # noqa: BLE001 - an implementation that cannot load is a row
        traceback.print_exc()
        _send({"type": "hello", "load_error": _first_line(exc)})
        return 0
    for item in args.cells.split(","):
        name, code = item.split("=")
        s = Shape.decode(code)
        _send({"type": "start", "cell": name})
        reason = impl.unsupported(s)
        if reason:
            _send({"type": "cell", "cell": name, "status": "unsupported", "message": reason})
            continue
        if time.time() > args.deadline_at:
            _send({"type": "cell", "cell": name, "status": "skipped", "message": "run deadline reached (--deadline-s)"})
            continue
        try:
            result = run_cell(impl, s, args, os.path.join(args.outdir, f"{args.worker}-{name}.pt"))
        except Exception as exc:  # noqa: BLE001 - OOM, CUDA or numba errors: a row, then a fresh process
            traceback.print_exc()
            _send({"type": "cell", "cell": name, "status": "error", "message": _first_line(exc)})
            return 3  # the CUDA context may be unusable now: the parent starts a new worker for the rest
        _send({"type": "cell", "cell": name, **result})
        gc.collect()
        if args.device == "cuda":
            torch.cuda.empty_cache()
    return 0


# --------------------------------------------------------------------------------------------
# Parent: runs one worker per implementation and phase, survives crashes and hangs
# --------------------------------------------------------------------------------------------
@dataclass
class Result:
    status: str  # ok, unsupported, error, crashed, timeout, skipped, unavailable
    message: str = ""
    times_ms: List[float] = field(default_factory=list)
    warmup_ms: List[float] = field(default_factory=list)
    note: str = ""
    mem: Optional[dict] = None
    input_bytes: int = 0
    outputs: Optional[str] = None
    ok: Optional[bool] = None  # correctness verdict (ok status only)
    errors: str = ""

    @property
    def median_ms(self) -> Optional[float]:
        return statistics.median(self.times_ms) if self.status == "ok" and self.times_ms else None

    @property
    def usable(self) -> bool:  # a time that counts: ran and agrees with the reference
        return self.median_ms is not None and self.ok is True


def _error_line(stderr_tail: List[str]) -> str:
    """The line of a dead worker's stderr that says what went wrong, best guess."""
    lines = [ln.strip() for ln in stderr_tail if ln.strip()]
    for ln in reversed(lines):
        if any(k in ln for k in ("Error", "error", "Exception", "Fatal", "Aborted", "Killed", "Segmentation")):
            return ln[:300]
    return lines[-1][:300] if lines else "no output on stderr"


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def run_impl(key: str, cells: Dict[str, Shape], args, tmpdir: str, deadline_at: float,
             header: dict) -> Dict[str, Result]:
    """All cells of one implementation, respawning the worker after a failure."""
    results: Dict[str, Result] = {}
    remaining = list(cells)
    label = IMPLS[key].label
    while remaining:
        if time.time() > deadline_at:
            for name in remaining:
                results[name] = Result("skipped", "run deadline reached (--deadline-s)")
            break
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", key,
               "--cells", ",".join(f"{n}={cells[n].encode()}" for n in remaining),
               "--device", args.device, "--repeats", str(args.repeats), "--budget-s", str(args.budget_s),
               "--check-pairs", str(args.check_pairs), "--gamma", str(args.gamma), "--seed", str(args.seed),
               "--peers-dir", args.peers_dir, "--outdir", tmpdir, "--deadline-at", str(deadline_at)]
        # numba warns at every launch of a small grid (BGU's fused mode launches thousands): log noise
        env = dict(os.environ, NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0", PYTHONUNBUFFERED="1")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                start_new_session=True, env=env)
        messages: "queue.Queue[Optional[dict]]" = queue.Queue()
        tail = collections.deque(maxlen=60)

        def read_stdout():
            for line in proc.stdout:
                if line.startswith(MARKER):
                    messages.put(json.loads(line[len(MARKER):]))
                else:
                    sys.stderr.write(f"[{key}] {line}")
            messages.put(None)

        def read_stderr():
            for line in proc.stderr:
                tail.append(line)
                sys.stderr.write(f"[{key}] {line}")

        readers = [threading.Thread(target=read_stdout, daemon=True), threading.Thread(target=read_stderr, daemon=True)]
        for t in readers:
            t.start()
        current, progressed, failed = None, False, None
        try:
            while True:
                wait = args.cell_timeout_s if current else args.startup_timeout_s
                wait = max(30.0, min(wait, deadline_at - time.time() + 60.0))
                try:
                    msg = messages.get(timeout=wait)
                except queue.Empty:
                    os.killpg(proc.pid, signal.SIGKILL)  # a hung kernel cannot be interrupted otherwise
                    proc.wait()
                    if remaining:
                        failed = (current or remaining[0], Result(
                            "timeout", f"no answer within {wait:.0f} s (process killed; --cell-timeout-s)"))
                    break
                if msg is None:  # worker ended
                    code = proc.wait()
                    for t in readers:
                        t.join(timeout=5)
                    if remaining and (current is not None or not progressed):
                        failed = (current or remaining[0],
                                  Result("crashed", f"worker died ({_exit_text(code)}): {_error_line(list(tail))}"))
                    break
                if msg["type"] == "hello":
                    if msg.get("load_error"):
                        for name in remaining:
                            results[name] = Result("unavailable", msg["load_error"])
                        remaining = []
                    else:
                        header.setdefault("info", msg["info"])
                        header.setdefault("versions", {})[key] = msg["version"]
                elif msg["type"] == "start":
                    current, progressed = msg["cell"], True
                elif msg["type"] == "cell":
                    name = msg.pop("cell")
                    msg.pop("type")
                    results[name] = Result(**msg)
                    remaining.remove(name)
                    current = None
                    r = results[name]
                    print(f"  {label:30s} {name:16s} {r.status:11s} "
                          + (f"{r.median_ms:10.3f} ms {r.note}" if r.median_ms is not None else r.message),
                          file=sys.stderr, flush=True)
        finally:  # also on Ctrl-C: the worker runs in its own session and would outlive us
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if failed:
            name, r = failed
            results[name] = r
            if name in remaining:
                remaining.remove(name)
            print(f"!!! {label} {name}: {r.status}: {r.message}", file=sys.stderr, flush=True)
            if not progressed:  # it never got to a cell: it will not get further on a retry
                for other in remaining:
                    results[other] = Result("crashed", f"not run: the worker failed before any cell ({r.message})")
                remaining = []
    return results


def references(cells: Dict[str, Shape], args) -> Dict[str, Tuple[torch.Tensor, ...]]:
    """softdtw_torch in float64 on the CPU, first pairs of input set 0 (fused: exact differences)."""
    import softdtw_torch

    refs = {}
    for name, s in cells.items():
        x, y = make_inputs(s, args.seed)
        x = x[: args.check_pairs].double().requires_grad_(True)
        y = y[: args.check_pairs].double().requires_grad_(True)
        values = softdtw_torch.soft_dtw(x, y, gamma=args.gamma, fused=True)
        values.sum().backward()
        refs[name] = (values.detach(), x.grad, y.grad)
    return refs


def judge(r: Result, ref, gamma: float) -> None:
    if r.status != "ok":
        return
    got = torch.load(r.outputs, weights_only=True)
    ref_values, ref_gx, ref_gy = ref
    if got["gx"] is None or got["gy"] is None:
        r.ok, r.errors = False, "no gradient"
        return
    v_err = rel_err(got["values"], ref_values)
    g_err = max(rel_err(got["gx"], ref_gx), rel_err(got["gy"], ref_gy))
    v_tol, g_tol = tolerances("float32", ref_values, gamma)
    r.ok = v_err <= v_tol and g_err <= g_tol  # also False on NaN
    r.errors = f"values {v_err:.1e}, grads {g_err:.1e}"


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------
def _ms(v: float) -> str:
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def _mib(b: Optional[float]) -> str:
    return "n/a" if b is None else f"{b / 2 ** 20:.1f}"


def _seconds(v: float) -> str:
    return f"{v * 1e6:.0f} µs" if v < 1e-2 else f"{v * 1e3:.1f} ms"


def _times(v: float) -> str:
    return f"{v:.1f}" if v < 10 else f"{v:.0f}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _short(r: Optional[Result]) -> str:
    """A result in a summary cell: its time, or what stopped it."""
    if r is None:
        return "not run"
    if r.median_ms is None:
        if r.status == "error" and "out of memory" in r.message.lower():
            return "OOM"
        return {"unsupported": "unsupported", "unavailable": "not available", "skipped": "skipped",
                "timeout": "timed out", "crashed": "crashed"}.get(r.status, "FAILED")
    return _ms(r.median_ms) + ("" if r.ok else " (MISMATCH)")


def _fastest_peer(row: Dict[str, Result]) -> Optional[Tuple[str, Result]]:
    usable = [(k, r) for k, r in row.items() if k in PEERS and r.usable]
    return min(usable, key=lambda kr: kr[1].median_ms) if usable else None


def published_bgu(peers_dir: str) -> Dict[Tuple[int, int, int], dict]:
    """BGU's own results CSV (bench/softdtw_memory_benchmark.csv: their GPU, which they do not name)."""
    path = os.path.join(peers_dir, "sdtw-cuda-torch", "bench", "softdtw_memory_benchmark.csv")
    try:
        with open(path) as f:
            return {(int(r["B"]), int(r["N"]), int(r["D"])): r for r in csv.DictReader(f)}
    except (OSError, KeyError, ValueError):
        return {}


def _num(text: str) -> Optional[float]:
    try:
        v = float(text)
        return v if v == v else None
    except (TypeError, ValueError):
        return None


def render(results: Dict[str, Dict[str, Result]], phases, args, header: dict,
           keys: List[str]) -> Tuple[str, str]:
    """The report, and its recap (targets summary and W1 memory) to print last."""
    info = header.get("info", {})
    targets = dict(phases[0][1]) if phases and phases[0][0] == "targets" else {}
    all_cells = {n: s for _, cells in phases for n, s in cells.items()}
    lines = ["# SoftDTW forward+backward on GPU: softdtw_torch and its peers, side by side", ""]
    if args.device == "cuda":
        lines.append(f"- device: {info.get('name', '?')} (sm_{str(info.get('capability', '?')).replace('.', '')}, "
                     f"{info.get('sms', '?')} SMs, {info.get('memory_gib', '?')} GiB), "
                     f"driver {header.get('driver', '?')}, "
                     f"CUDA {info.get('cuda', '?')}; TF32 matmul {'on' if info.get('tf32_matmul') else 'off'} "
                     "(torch default: off, so every cost tensor is float32)")
    else:
        lines.append(f"- device: CPU ({info.get('name', '?')}, torch {info.get('threads', '?')} threads). "
                     "**Smoke test of the benchmark: no GPU numbers, peers on their CPU code paths.**")
    lines.append(f"- versions: python {info.get('python', '?')}, torch {info.get('torch', '?')}, numpy "
                 f"{info.get('numpy', '?')}, numba {info.get('numba', '?')}, numba-cuda {info.get('numba-cuda', '?')} "
                 "(each implementation's own: table below)")
    if header.get("peer_sources"):
        lines.append("- peer sources (benchmarks/peers/VERSIONS.txt): " + "; ".join(header["peer_sources"]))
    lines += [
        f"- protocol: float32, gamma={args.gamma:g}, squared Euclidean cost ||x_i - y_j||^2 (every peer's default "
        "and ours: nothing to adapt), no band, randn inputs (seed "
        f"{args.seed}); `loss = f(x, y).sum(); loss.backward()` on fresh leaf tensors; "
        + ("CUDA events, synchronized before each call; " if args.device == "cuda" else "time.perf_counter; ")
        + f"one warm-up, a second call for memory and the estimate, then the median of up to {args.repeats} "
        f"calls within {args.budget_s:g} s per implementation and workload (fewer: said in the row); input sets "
        "rotated past L2; each implementation in its own process (numba's low-occupancy warnings off)."
        + (" QUICK MODE: tiny shapes." if args.quick else ""),
        "- correctness: values and gradients w.r.t. x and y of the first "
        f"{args.check_pairs} pairs against softdtw_torch float64 on the CPU; error = max|a - ref| / max|ref|; "
        f"tolerance values {TOLERANCES['float32'][0]:.0e}, gradients max({TOLERANCES['float32'][1]:.0e}, "
        "10 eps max|value| / gamma). A row that disagrees says MISMATCH and never counts as fastest.",
        "- memory: peak of torch's allocator during one forward+backward beyond what was allocated before "
        "(the inputs; gradients are in the peak), and device memory taken outside torch's allocator in that "
        "call (cudaMemGetInfo delta minus torch's reserved delta; a few MiB are the driver's page rounding).",
        f"- floors (docs/design/softdtw.md §7, H100/H200): compute ceiling {CEILING_FWD_BWD:.1e} cells/s "
        f"forward+backward; chain {CHAIN_NS_PER_STEP[0]:.0f}-{CHAIN_NS_PER_STEP[1]:.0f} ns x 2(N+M-1) anti-diagonal "
        "steps. 'x floor' = time / max(compute floor, low chain floor)."
        + (" (GPU floors: meaningless for this CPU run.)" if args.device != "cuda" else ""),
    ]
    if header.get("deadline_hit"):
        lines.append(f"- **the run deadline ({args.deadline_s:g} s) cut it short: skipped rows say so.**")

    lines += ["", "## Implementations", "", "| implementation | mode | version | how it runs |", "|---|---|---|---|"]
    lines += [f"| {IMPLS[k].label} | {IMPLS[k].mode} | {_cell(header.get('versions', {}).get(k, 'not loaded'))} | "
              f"{_cell(IMPLS[k].notes)} |" for k in keys]

    def row_of(name):
        return {k: results[k][name] for k in keys if name in results.get(k, {})}

    recap: List[str] = []
    # Summary of the targets
    if targets:
        first = len(lines)
        lines += ["", "## Targets: median forward+backward time (ms)", ""]
        head = ("| workload | " + " | ".join(IMPLS[k].label for k in keys) + " | ours: fused time / unfused time "
                "| ours fused vs fastest peer | ours fused: Gcells/s, x floor | floors: compute / chain (binding) |")
        lines += [head, "|" + "---|" * (len(keys) + 5)]
        for name, s in targets.items():
            row = row_of(name)
            f = floors(s)
            ours_f, ours_u = row.get("ours-fused"), row.get("ours-unfused")
            both = ours_f and ours_u and ours_f.usable and ours_u.usable
            ratio = f"{ours_f.median_ms / ours_u.median_ms:.2f}" if both else "n/a"
            fastest = _fastest_peer(row)
            vs = (f"{fastest[1].median_ms / ours_f.median_ms:.1f}x ({IMPLS[fastest[0]].label})"
                  if fastest and ours_f and ours_f.usable else "n/a")
            rate = (f"{s.cells / (ours_f.median_ms / 1e3) / 1e9:.1f}, {_times(ours_f.median_ms / 1e3 / f.floor_s)}"
                    if ours_f and ours_f.usable else "n/a")
            lines.append(f"| {name}: {s.describe()} | " + " | ".join(_short(row.get(k)) for k in keys)
                         + f" | {ratio} | {vs} | {rate} | {_seconds(f.compute_s)} / {_seconds(f.chain_s[0])}-"
                         f"{_seconds(f.chain_s[1])} ({f.binding}) |")
        lines += ["", "'ours fused vs fastest peer': the fastest peer's time / ours (> 1: ours is faster), among "
                  "peers that agree with the reference. 'x floor': time / max(compute floor, low chain floor)."]
        recap += lines[first:]

    # Every row: one table per target workload, one table for the whole grid
    for phase, cells in phases:
        per_cell = phase == "targets"
        lines += ["", "## " + ("Targets" if per_cell else "BGU's grid") + ": every row", ""]
        head = ("| implementation | mode | median ms | min ms | calls | Gcells/s | x floor | peak MiB beyond inputs "
                "| MiB outside torch | correctness |")
        rule = "|---|---|---:|---:|---|---:|---:|---:|---:|---|"
        if not per_cell:
            lines += ["| workload | floors: compute / chain (binding) " + head, "|---|---" + rule]
        for name, s in cells.items():
            f = floors(s)
            floor_text = f"{_seconds(f.compute_s)} / {_seconds(f.chain_s[0])}-{_seconds(f.chain_s[1])} ({f.binding})"
            if per_cell:
                lines += [f"### {name}: {s.describe()} ({s.cells / 1e6:.1f} M cells; floors: compute / chain "
                          f"{floor_text})", "", head, rule]
            prefix = "| " if per_cell else f"| {name} | {floor_text} | "
            for k, r in row_of(name).items():
                info_k = IMPLS[k]
                if r.median_ms is None:
                    lines.append(f"{prefix}{info_k.label} | {info_k.mode} | - | - | - | - | - | - | - | "
                                 f"**{r.status}**: {_cell(r.message)} |")
                    continue
                t = r.median_ms / 1e3
                verdict = ("ok" if r.ok else "**MISMATCH**") + f" ({r.errors})"
                calls = f"{len(r.times_ms)}" + (f": {r.note}" if r.note else "")
                mem = r.mem or {}
                lines.append(f"{prefix}{info_k.label} | {info_k.mode} | {_ms(r.median_ms)} | {_ms(min(r.times_ms))} | "
                             f"{_cell(calls)} | {s.cells / t / 1e9:.2f} | {_times(t / f.floor_s)} | "
                             f"{_mib(mem.get('peak_beyond_inputs'))} | {_mib(mem.get('outside_torch'))} | {verdict} |")
            if per_cell:
                lines.append("")
        if not per_cell:
            lines.append("")

    # Memory at W1
    if "W1" in targets and args.device == "cuda":
        first = len(lines)
        s = targets["W1"]
        lines += ["## Peak GPU memory at W1, forward+backward", "",
                  f"{s.describe()}; inputs x, y: {4 * s.B * (s.N + s.M) * s.d / 2 ** 20:.1f} MiB (their gradients, "
                  "the same size, are part of the peak).", "",
                  "| implementation | mode | peak MiB beyond inputs | MiB outside torch's allocator | method |",
                  "|---|---|---:|---:|---|"]
        for k, r in row_of("W1").items():
            mem = r.mem or {}
            if r.status != "ok" or not mem:
                lines.append(f"| {IMPLS[k].label} | {IMPLS[k].mode} | - | - | "
                             f"{r.status}: {_cell(r.message or 'no memory reading')} |")
            else:
                lines.append(f"| {IMPLS[k].label} | {IMPLS[k].mode} | {_mib(mem['peak_beyond_inputs'])} | "
                             f"{_mib(mem['outside_torch'])} | {_cell(IMPLS[k].memory_method)} |")
        lines.append("")
        recap += [""] + lines[first:]

    # BGU's grid, side by side, with their published numbers
    grid = [s for s in grid_shapes(args.quick) if s in all_cells.values()]
    if grid and "grid" in args.sections:
        published = published_bgu(args.peers_dir)
        by_shape = {s: n for n, s in all_cells.items()}
        for metric in ("time", "memory") if args.device == "cuda" else ("time",):
            title = ("median forward+backward ms" if metric == "time"
                     else "peak MiB beyond inputs (torch allocator)")
            pub_head = ("BGU published: unfused / fused / Maghoumi ms" if metric == "time"
                        else "BGU published: unfused / fused / Maghoumi MB (absolute peak, inputs included)")
            lines += [f"## BGU's grid side by side: {title}", "",
                      "| B | N=M | d | " + " | ".join(IMPLS[k].label for k in keys)
                      + (" | ours fused vs BGU unfused" if metric == "time" else "") + f" | {pub_head} |",
                      "|" + "---|" * (3 + len(keys) + (1 if metric == "time" else 0) + 1)]
            for s in grid:
                row = row_of(by_shape[s])
                if metric == "time":
                    vals = [_short(row.get(k)) for k in keys]
                    f, b = row.get("ours-fused"), row.get("bgu-unfused")
                    vals.append(f"{b.median_ms / f.median_ms:.1f}x" if f and b and f.usable and b.usable else "n/a")
                    cols = ("ours_unfused_ms", "ours_fused_ms", "maghoumi_ms")
                else:
                    vals = [_mib((r.mem or {}).get("peak_beyond_inputs")) if r and r.status == "ok" else _short(r)
                            for r in (row.get(k) for k in keys)]
                    cols = ("ours_unfused_mb", "ours_fused_mb", "maghoumi_mb")
                pub = published.get((s.B, s.N, s.d))
                pub_text = " / ".join((f"{v:.1f}" if v is not None else "-") for v in
                                      (_num(pub.get(c)) for c in cols)) if pub else "-"
                lines.append(f"| {s.B} | {s.N} | {s.d} | " + " | ".join(vals) + f" | {pub_text} |")
            lines.append("")

    failures: Dict[Tuple[str, str, str], List[str]] = {}  # one line per implementation and reason
    for k in keys:
        for n, r in results.get(k, {}).items():
            if r.median_ms is None:
                failures.setdefault((k, r.status, r.message), []).append(n)
    if failures:
        lines += ["## Rows without a time", ""]
        lines += [f"- {IMPLS[k].label}, {', '.join(names)}: {status}: {message}"
                  for (k, status, message), names in failures.items()]
    return "\n".join(lines) + "\n", "\n".join(recap) + "\n"


def plot(results: Dict[str, Dict[str, Result]], phases, args, header: dict, keys: List[str], path: str) -> None:
    """BGU's grid: time and memory against N, one panel per (B, d)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    all_cells = {s: n for _, cells in phases for n, s in cells.items()}
    gb, gn, gd = (QUICK_GRID_B, QUICK_GRID_N, QUICK_GRID_D) if args.quick else (GRID_B, GRID_N, GRID_D)
    panels = [(B, d) for B in gb for d in gd]
    series = {}  # (impl, metric) -> {(B, d): [(N, value)]}
    for k in keys:
        for B, d in panels:
            for N in gn:
                r = results.get(k, {}).get(all_cells.get(Shape(B, N, N, d)))
                if r is None or r.median_ms is None:
                    continue  # failed or unsupported: the tables say why
                series.setdefault((k, "time"), {}).setdefault((B, d), []).append((N, r.median_ms))
                if r.mem:
                    series.setdefault((k, "memory"), {}).setdefault((B, d), []).append(
                        (N, r.mem["peak_beyond_inputs"] / 2 ** 20))
    metrics = [("time", "forward+backward ms (median)")]
    if any(m == "memory" for _, m in series):
        metrics.append(("memory", "peak MiB beyond inputs"))
    fig, axes = plt.subplots(len(metrics), len(panels), figsize=(4.5 * len(panels), 4.2 * len(metrics) + 1),
                             squeeze=False)
    for row, (metric, ylabel) in enumerate(metrics):
        for col, (B, d) in enumerate(panels):
            ax = axes[row, col]
            for k in keys:
                pts = series.get((k, metric), {}).get((B, d))
                if pts:
                    ax.plot(*zip(*pts), marker="o", linestyle="-" if k in OURS else "--", label=IMPLS[k].label)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(list(gn))
            ax.set_xticklabels([str(n) for n in gn])
            ax.set_xlabel("N = M")
            ax.set_ylabel(ylabel)
            ax.set_title(f"B={B}, d={d}")
            ax.grid(True, which="both", linestyle=":", alpha=0.5)
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    info = header.get("info", {})
    where = (info.get("name", "?") if args.device == "cuda"
             else f"CPU smoke test ({info.get('name', '?')}), not GPU numbers")
    fig.suptitle(f"SoftDTW forward+backward, float32, gamma={args.gamma:g}: BGU's grid on {where}")
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 0.97))
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cuda (default) or cpu (a smoke test of this script: peers on their CPU code paths)")
    p.add_argument("--quick", action="store_true", help="tiny shapes and 3 repeats, for a smoke test")
    p.add_argument("--markdown", metavar="PATH", help="also write the report to PATH")
    p.add_argument("--plot", metavar="PATH", help="write the grid plot (PNG) to PATH")
    p.add_argument("--peers-dir", default=os.path.join(REPO_ROOT, "benchmarks", "peers"),
                   help="where scripts/prepare_gpu_peers.sh put the GitHub peers (default benchmarks/peers)")
    p.add_argument("--impls", default=",".join(IMPLS), help="comma-separated, default all: " + ", ".join(IMPLS))
    p.add_argument("--sections", default="targets,grid", help="targets (W1, W3, U, W2) and/or grid (BGU's)")
    p.add_argument("--repeats", type=int, default=None, help="timed calls at most (default 20; --quick 3)")
    p.add_argument("--budget-s", type=float, default=5.0,
                   help="seconds of timed calls per implementation and workload; slower ones get fewer (default 5)")
    p.add_argument("--cell-timeout-s", type=float, default=300.0,
                   help="a worker silent this long on one workload is killed, and the row says so (default 300)")
    p.add_argument("--startup-timeout-s", type=float, default=180.0, help="same, for a worker's start (default 180)")
    p.add_argument("--deadline-s", type=float, default=480.0,
                   help="whole-run wall-clock budget; workloads not started by then are skipped (default 480)")
    p.add_argument("--check-pairs", type=int, default=2, help="pairs checked against the float64 reference (default 2)")
    p.add_argument("--gamma", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    # worker mode (internal)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--cells", help=argparse.SUPPRESS)
    p.add_argument("--outdir", help=argparse.SUPPRESS)
    p.add_argument("--deadline-at", type=float, default=float("inf"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.repeats is None:
        args.repeats = 3 if args.quick else 20
    args.impls = [k.strip() for k in args.impls.split(",") if k.strip()]
    args.sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    for k in args.impls:
        if k not in IMPLS:
            p.error(f"unknown implementation {k!r}; choose from {', '.join(IMPLS)}")
    for s in args.sections:
        if s not in ("targets", "grid"):
            p.error(f"unknown section {s!r}; choose from targets, grid")
    if args.repeats < 1 or args.check_pairs < 1 or args.budget_s <= 0:
        p.error("--repeats and --check-pairs must be >= 1, --budget-s > 0")
    args.peers_dir = os.path.abspath(args.peers_dir)
    return args


def _driver_version() -> str:
    if not shutil.which("nvidia-smi"):
        return "unknown (no nvidia-smi)"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        return out.splitlines()[0] if out else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker_main(args)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA device here; use --device cpu for a smoke test of this script", file=sys.stderr)
        return 2
    start = time.time()
    deadline_at = start + args.deadline_s
    phases = plan(args.quick, args.sections)
    header = {"driver": _driver_version() if args.device == "cuda" else "n/a"}
    try:
        with open(os.path.join(args.peers_dir, "VERSIONS.txt")) as f:
            header["peer_sources"] = [ln.strip() for ln in f if ln.split("|")[0].strip() in PEER_SOURCES]
    except OSError:
        header["peer_sources"] = [f"{args.peers_dir}/VERSIONS.txt missing: run scripts/prepare_gpu_peers.sh"]
    print(f"float64 references on the CPU ({args.check_pairs} pairs per workload) ...", file=sys.stderr, flush=True)
    refs = references({n: s for _, cells in phases for n, s in cells.items()}, args)
    results: Dict[str, Dict[str, Result]] = {k: {} for k in args.impls}
    with tempfile.TemporaryDirectory(prefix="bench_gpu_peers-") as tmpdir:
        for phase, cells in phases:
            print(f"\n== {phase}: {', '.join(cells)}", file=sys.stderr, flush=True)
            for key in args.impls:
                for name, r in run_impl(key, cells, args, tmpdir, deadline_at, header).items():
                    judge(r, refs[name], args.gamma)
                    if r.ok is False:
                        print(f"!!! MISMATCH: {IMPLS[key].label} on {name}: {r.errors}", file=sys.stderr)
                    results[key][name] = r
    header["deadline_hit"] = any(r.status == "skipped" for rows in results.values() for r in rows.values())
    report, recap = render(results, phases, args, header, args.impls)
    print()
    print(report, end="")
    print("\n== recap (the full report is above)" + recap, end="")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report)
        print(f"\nwritten to {args.markdown}", file=sys.stderr)
    if args.plot:
        try:
            plot(results, phases, args, header, args.impls, args.plot)
            print(f"plot written to {args.plot}", file=sys.stderr)
        except Exception as exc:  # noqa: BLE001 - no plot is not a failed benchmark
            print(f"no plot: {_first_line(exc)}", file=sys.stderr)
    print(f"total {time.time() - start:.0f} s", file=sys.stderr)
    ours_bad = [(k, n, r) for k in OURS for n, r in results.get(k, {}).items()
                if r.status not in ("ok", "skipped") or r.ok is False]
    for k, n, r in ours_bad:
        print(f"!!! ours: {IMPLS[k].label} on {n}: {r.status} {r.message or r.errors}", file=sys.stderr)
    return 1 if ours_bad else 0


if __name__ == "__main__":
    sys.exit(main())
