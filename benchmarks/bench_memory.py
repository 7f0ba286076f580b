"""Extra CPU memory of each SoftDTW mode, forward + backward: what the memory statements of docs/guarantees.md rest on.

For each mode, ``v = soft_dtw(x, y, ...); v.sum().backward()`` runs once under
``torch.profiler.profile(profile_memory=True)`` (after one unprofiled warm-up call of the same
size). Every allocation and free of the CPU allocator is an event in the profiler's event tree
(``_ExtraFields_Allocation.alloc_size``, negative for a free); summing them in time order gives
the bytes allocated at every moment, counted from the start of the profile, so the inputs x and y
(allocated before it) are not counted. Reported per mode:

- peak: the most bytes allocated at any moment of forward + backward, over the inputs;
- held after forward: bytes still allocated when the forward (and ``v.sum()``) has returned, i.e.
  what autograd keeps for the backward plus the (B,) output;
- saved for backward: an independent count of the same thing, the distinct storages that
  autograd saves (``torch.autograd.graph.saved_tensors_hooks``; the C++ autograd functions save
  through the same ``SavedVariable``), leaving out x and y, which the caller holds anyway;
- after backward: what is left (x.grad and y.grad);
- peak RSS: a cross-check that sees everything, the kernels' scratch buffers (``std::vector``,
  which the profiler does not see) included: the rise of the process's peak resident memory
  (``VmHWM`` after ``/proc/self/clear_refs``) over a fresh process's RSS just before the call,
  after a warm-up on a small problem. Page granularity and the C library's heap add some noise.

``no_grad`` rows run the forward only, under ``torch.no_grad()``.

    python benchmarks/bench_memory.py [--threads N] [--batch 8] [--n 1024] [--m 1024] [--d 64] [--markdown PATH]

Run on the CPU; the CUDA kernels' memory is measured by benchmarks/bench_gpu.py.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _threads import cpu_model, set_thread_env_from_argv  # noqa: E402

set_thread_env_from_argv()

import argparse  # noqa: E402
import datetime  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402

import torch  # noqa: E402

import softdtw_torch as st  # noqa: E402
from _memory_events import allocation_events  # noqa: E402
from _provenance import git_revision  # noqa: E402

MiB = 2.0 ** 20

# mode name -> (keyword arguments of soft_dtw, with autograd)
MODES = {
    "fused": (dict(fused=True), True),
    "unfused": (dict(fused=False), True),
    "fused, checkpoint=True": (dict(checkpoint=True), True),
    "fused, no_grad": (dict(fused=True), False),
    "unfused, no_grad": (dict(fused=False), False),
}


def _saved_bytes(kwargs, B, N, M, d):
    """Bytes of the distinct storages autograd saves for the backward of one call on x (B, N, d)
    and y (B, M, d), x's and y's left out."""
    x = torch.randn(B, N, d, requires_grad=True)
    y = torch.randn(B, M, d, requires_grad=True)
    storages = {}
    inputs = {x.untyped_storage().data_ptr(), y.untyped_storage().data_ptr()}

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in inputs:
            storages[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        v = st.soft_dtw(x, y, gamma=1.0, **kwargs)
    del v
    return sum(storages.values())


def size(nbytes):
    """MiB, or KiB below one MiB (the no_grad buffers are O(B·(N+M)))."""
    if abs(nbytes) >= MiB or nbytes == 0:
        return f"{nbytes / MiB:.2f} MiB"
    return f"{nbytes / 1024:.1f} KiB" if abs(nbytes) >= 1024 else f"{nbytes} B"


def measure(mode, B, N, M, d):
    kwargs, grad = MODES[mode]
    events, forward_end = allocation_events(kwargs, grad, B, N, M, d)
    current, peak, held = 0, 0, None
    for t, nbytes in events:
        if held is None and forward_end is not None and t > forward_end:
            held = current
        current += nbytes
        peak = max(peak, current)
    if held is None:
        held = current
    saved = _saved_bytes(kwargs, B, N, M, d) if grad else 0
    return dict(peak=peak, held=held, saved=saved, after=current)


def _rss(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field + " not in /proc/self/status")


def rss_child(mode, B, N, M, d):
    """In a fresh process: peak RSS rise of one forward (+ backward), printed in bytes."""
    kwargs, grad = MODES[mode]
    g = torch.Generator().manual_seed(0)
    for n, m in ((min(N, 100), min(M, 100)), (N, M)):
        x = torch.randn(B, n, d, generator=g).requires_grad_(grad)
        y = torch.randn(B, m, d, generator=g).requires_grad_(grad)
        if n == N and m == M:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the current RSS
            base = _rss("VmRSS")
        with torch.set_grad_enabled(grad):
            loss = st.soft_dtw(x, y, gamma=1.0, **kwargs).sum()
            if grad:
                loss.backward()
    print(_rss("VmHWM") - base)


def peak_rss(mode, args):
    if not os.path.exists("/proc/self/clear_refs"):
        return None
    cmd = [sys.executable, os.path.abspath(__file__), "--rss-child", mode, "--batch", str(args.batch),
           "--n", str(args.n), "--m", str(args.m), "--d", str(args.d)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    return int(out[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--numba-threading-layer", default=None)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--m", type=int, default=1024)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--markdown", default=None, help="also write the report to this file")
    parser.add_argument("--rss-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.rss_child:
        rss_child(args.rss_child, args.batch, args.n, args.m, args.d)
        return
    B, N, M, d = args.batch, args.n, args.m, args.d
    one = B * N * M * 4 / MiB
    lines = [
        f"B={B}, N={N}, M={M}, d={d}, float32, gamma=1, CPU, forward + backward "
        f"(a float32 (B, N, M) tensor is {one:.2f} MiB; x and y are {B * N * d * 4 / MiB:.2f} and "
        f"{B * M * d * 4 / MiB:.2f} MiB)",
        "",
        "| mode | peak over the inputs | held after forward | saved for backward | after backward (grads) "
        "| peak RSS rise |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for mode in MODES:
        r = measure(mode, B, N, M, d)
        saved = size(r["saved"]) if MODES[mode][1] else "-"
        rss = peak_rss(mode, args)
        rss = size(rss) if rss is not None else "n/a"
        lines.append(f"| {mode} | {size(r['peak'])} | {size(r['held'])} | {saved} | {size(r['after'])} | {rss} |")
    lines += [
        "",
        f"- machine: {cpu_model()}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}; "
        f"torch threads {torch.get_num_threads()}",
        f"- versions: python {platform.python_version()}, torch {torch.__version__}, softdtw_torch "
        f"{st.__version__} (git {git_revision()}); date {datetime.date.today().isoformat()}",
    ]
    report = "\n".join(lines)
    print(report)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report + "\n")


if __name__ == "__main__":
    main()
