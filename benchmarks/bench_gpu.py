"""GPU timing of softdtw_torch's SoftDTW ops (forward+backward, eager and replayed from a CUDA
graph, and forward only; fused, fused with the checkpointed backward, unfused) on the design
doc's reference workloads, with CUDA events, warm-up and the median of repeats, peak memory
beyond the inputs, and a float64 CPU correctness check in the same run; then the forward-mode
and second-order ops (the fused JVP and Hessian-vector product ops against one first-order
forward + backward, their peak memory, and the HVP against the float64 CPU kernels); then a sweep
over the number of features d at B = 32, N = M = 512, fused against unfused, where
``fused=None`` switches modes (softdtw_torch.soft_dtw: fused up to d = 128). This script
measures our kernels only; benchmarks/bench_gpu_peers.py puts them side by side with BGU
sdtw-cuda-torch, pysdtw and Maghoumi's soft_dtw_cuda.

    python benchmarks/bench_gpu.py [--markdown PATH] [--repeats 20]
"""
import argparse
import os
import statistics
import sys

import torch

import softdtw_torch as st
from softdtw_torch._ops import _C

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import cuda_timed_calls  # noqa: E402

SOFTDTW_MAX_FUSED_FEATURES = _C.SOFTDTW_MAX_FUSED_FEATURES  # the fused=None rule (csrc/softdtw/constants.h)
# The regime of the forward and backward one warp per pair (csrc/softdtw/constants.h).
PAIR_MAX_COLUMNS, PAIR_MAX_FUSED_FEATURES = _C.SOFTDTW_CUDA_PAIR_MAX_COLUMNS, _C.SOFTDTW_CUDA_PAIR_MAX_FUSED_FEATURES

WORKLOADS = {  # name: (B, N, M, d)
    "W1": (32, 512, 512, 64),
    "W2": (8, 4096, 4096, 1),
    "W3": (1024, 128, 128, 3),
    "unequal": (32, 512, 128, 8),
}


def cuda_time_ms(fn, repeats):
    """Median milliseconds of `repeats` calls of fn on the GPU, after a warm-up call."""
    return statistics.median(cuda_timed_calls(fn, repeats)[0]) * 1e3


def graph_replay(x, y, options):
    """forward+backward of static copies of x, y captured in a CUDA graph: its replay shows the
    kernels' time without launch overhead, Python, autograd bookkeeping or the host read of the
    invalid-input flag (skipped under capture), i.e. what the one-launch-per-tile-diagonal design
    costs beyond its kernels."""
    static_x, static_y = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up on a side stream, as torch.cuda.graphs asks
        st.soft_dtw(static_x, static_y, **options).sum().backward()
    torch.cuda.current_stream().wait_stream(stream)
    static_x.grad = static_y.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        st.soft_dtw(static_x, static_y, **options).sum().backward()
    return graph.replay


def peak_memory_beyond_inputs(fn, inputs_bytes):
    """Peak bytes torch's allocator held during fn, beyond what was allocated before it and
    inputs_bytes (fn's clones of the inputs and their gradients)."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before - inputs_bytes


def check_against_cpu(x, y, options):
    """Values and gradients of the first pairs on CUDA vs the float64 CPU kernels."""
    a, b = x[:2].detach(), y[:2].detach()
    ref_in = [t.double().cpu().requires_grad_(True) for t in (a, b)]
    ref_val = st.soft_dtw(*ref_in, fused=True)
    ref_val.sum().backward()
    got_in = [t.clone().requires_grad_(True) for t in (a, b)]
    got_val = st.soft_dtw(*got_in, **options)
    got_val.sum().backward()
    val_err = ((got_val.double().cpu() - ref_val) / ref_val.abs().clamp_min(1)).abs().max().item()
    grad_err = max((g.grad.double().cpu() - r.grad).abs().max().item() / r.grad.abs().max().clamp_min(1e-30).item()
                   for g, r in zip(got_in, ref_in))
    return val_err, grad_err


def second_order_lines(repeats):
    """The fused JVP and HVP ops per workload, against one first-order forward + backward."""
    ops = torch.ops.softdtw_torch
    lines = ["", "| workload | fwd+bwd ms | jvp op ms | hvp op ms | hvp / fwd+bwd | peak MB hvp beyond inputs "
             "| rel. err hvp vs CPU float64 |", "|---|---|---|---|---|---|---|"]
    for name, (B, N, M, d) in WORKLOADS.items():
        g = torch.Generator(device="cuda").manual_seed(1)
        x, u = (torch.randn(B, N, d, device="cuda", generator=g) for _ in range(2))
        y = torch.randn(B, M, d, device="cuda", generator=g)
        ones = torch.ones(B, device="cuda")

        def fwd_bwd():
            a, b = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
            st.soft_dtw(a, b, fused=True).sum().backward()

        def jvp():
            return ops._soft_dtw_fused_jvp(x, y, u, None, 1.0, None, None, None, None)

        def hvp():
            return ops._soft_dtw_fused_hvp(ones, None, x, y, u, None, 1.0, None, None, None, None, False)

        t_fb, t_jvp, t_hvp = (cuda_time_ms(fn, repeats) for fn in (fwd_bwd, jvp, hvp))
        peak_mb = peak_memory_beyond_inputs(hvp, inputs_bytes=0) / 1e6
        got = hvp()[3][:2].double().cpu()
        want = ops._soft_dtw_fused_hvp(ones[:2].double().cpu(), None, x[:2].double().cpu(), y[:2].double().cpu(),
                                       u[:2].double().cpu(), None, 1.0, None, None, None, None, False)[3]
        err = ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
        lines.append(f"| {name} | {t_fb:.3f} | {t_jvp:.3f} | {t_hvp:.3f} | {t_hvp / t_fb:.2f}x | {peak_mb:.1f} | {err:.1e} |")
        print(lines[-1], flush=True)
    return lines


def feature_sweep_lines(repeats):
    """Fused vs unfused forward+backward over d at B = 32, N = M = 512 (W1's shape but d): where
    the fused mode stops paying, which the ``fused=None`` rule should follow on this GPU."""
    lines = ["", "| d | fused fwd+bwd ms | unfused fwd+bwd ms | fused / unfused | fused=None picks |", "|---|---|---|---|---|"]
    for d in (1, 4, 8, 16, 32, 64, 128, 256):
        g = torch.Generator(device="cuda").manual_seed(d)
        x = torch.randn(32, 512, d, device="cuda", generator=g)
        y = torch.randn(32, 512, d, device="cuda", generator=g)
        times = {}
        for fused in (True, False):
            def fwd_bwd():
                a, b = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
                st.soft_dtw(a, b, fused=fused).sum().backward()
            times[fused] = cuda_time_ms(fwd_bwd, repeats)
        picks = "fused" if d <= SOFTDTW_MAX_FUSED_FEATURES else "unfused"  # soft_dtw's fused=None rule
        lines.append(f"| {d} | {times[True]:.3f} | {times[False]:.3f} | {times[True] / times[False]:.2f} | {picks} |")
        print(lines[-1], flush=True)
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    props = torch.cuda.get_device_properties(0)
    lines = [f"Device: {props.name}, torch {torch.__version__}, CUDA {torch.version.cuda}, float32, gamma=1", "",
             "| workload | B, N, M, d | mode | fwd+bwd ms | fwd+bwd ms, CUDA graph | fwd (no grad) ms | Gcells/s fwd "
             "| peak MB fwd+bwd beyond inputs | rel. err value | rel. err grad |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    modes = {"fused": dict(fused=True), "fused, checkpoint": dict(checkpoint=True), "unfused": dict(fused=False)}
    # Short pairs run one warp per pair, forward and backward (docs/design/cuda_kernels.md, "One warp
    # per pair"): the same workload on the tiles beside it.
    tiles_only = "fused, tiles"
    modes[tiles_only] = dict(fused=True)
    for name, (B, N, M, d) in WORKLOADS.items():
        g = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(B, N, d, device="cuda", generator=g)
        y = torch.randn(B, M, d, device="cuda", generator=g)
        for mode, options in modes.items():
            if mode == tiles_only and (M > PAIR_MAX_COLUMNS or d > PAIR_MAX_FUSED_FEATURES):
                continue  # the tiles run this workload anyway
            os.environ["SOFTDTW_TORCH_CUDA_SMALL_KERNELS"] = "0" if mode == tiles_only else "1"

            def fwd_bwd():
                a, b = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
                st.soft_dtw(a, b, **options).sum().backward()

            def fwd():
                with torch.no_grad():
                    st.soft_dtw(x, y, **options)

            t_fb = cuda_time_ms(fwd_bwd, args.repeats)
            try:
                graph_ms = f"{cuda_time_ms(graph_replay(x, y, options), args.repeats):.3f}"
            except RuntimeError as error:  # a capture failure is a finding: report it, time the rest
                graph_ms = f"capture failed: {str(error).splitlines()[0][:80]}"
            t_f = cuda_time_ms(fwd, args.repeats)
            peak_mb = peak_memory_beyond_inputs(fwd_bwd, inputs_bytes=2 * (x.nbytes + y.nbytes)) / 1e6
            val_err, grad_err = check_against_cpu(x, y, options)
            lines.append(f"| {name} | {B}, {N}, {M}, {d} | {mode} | {t_fb:.3f} | {graph_ms} | {t_f:.3f} "
                         f"| {B * N * M / t_f / 1e6:.2f} | {peak_mb:.1f} | {val_err:.1e} | {grad_err:.1e} |")
            print(lines[-1], flush=True)
    lines += second_order_lines(args.repeats)
    lines += feature_sweep_lines(args.repeats)
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
