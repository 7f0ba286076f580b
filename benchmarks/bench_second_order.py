"""Second-order and forward-mode SoftDTW on the CPU, and the losses built on them, side by side with
the peers that have them.

1. Hessian-vector products at workload A (B=64, N=M=256, d=8, float32, γ = 1, fused): the median
   time of one first-order forward+backward (``soft_dtw(x, y).sum().backward()``) next to
   - ``hvp op``: ``_soft_dtw_fused_hvp`` alone, i.e. one forward recursion carrying the tangent
     and one reverse recursion carrying Ė (docs/design/softdtw.md §3);
   - ``double backward``: what a user writes, forward, ``autograd.grad(create_graph=True)``, then
     ``autograd.grad(⟨∇f, v⟩)``, the whole chain;
   - ``forward-over-reverse``: ``torch.func.jvp(torch.func.grad(f), (x, y), (u, v))``;
   - ``jvp``: the forward-mode directional derivative, ``torch.func.jvp(f, (x, y), (u, v))``;
   and the same from a cost tensor (``soft_dtw_from_cost``). These are timed in interleaved rounds
   (one call of each per round), so that the machine's drift affects all alike. No peer offers second derivatives of
   soft-DTW on a batch; the ratios are to our own first order.
2. DILATE forward+backward against the authors' implementation (vincent-leguen/DILATE,
   ``loss/dilate_loss.py``: numba, one pair at a time) on the same float32 inputs: their training
   setting (batch 100, N = 20, d = 1, α = 0.5, γ = 0.01) and longer horizons. Checked in the same
   run: loss, shape and temporal terms against theirs; gradients against theirs divided by the
   batch size, because their backward returns B times the gradient of the batch mean they return
   (``SoftDTWBatch.backward`` and ``PathDTWBatch.backward`` omit the 1/B of their forward).
3. The sharp soft-DTW divergence, value and gradient, against its authors' reference code
   (google-research/soft-dtw-divergences, ``sdtw_div.numba_ops.sharp_sdtw_div_value_and_grad``,
   numpy + numba, float64, one pair at a time, cost ½‖x − y‖²: compared through
   sharp_γ(½D) = ½·sharp_2γ(D)).

The authors' code comes from ``benchmarks/peers/`` (``scripts/prepare_gpu_peers.sh`` puts it there;
it is never committed); a missing peer is reported and skipped. Every implementation gets the same
threads (``--threads``: torch intra-op, numba, OpenMP). ``--quick`` runs small shapes.
"""
import argparse
import os
import sys

from _threads import available_cores, cpu_model, set_thread_env_from_argv  # noqa: E402

if __name__ == "__main__":
    set_thread_env_from_argv()

import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from typing import Callable, List, Optional, Tuple  # noqa: E402

import torch  # noqa: E402
from _provenance import git_revision, module_version  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers")


def interleaved_medians_ms(fns: List[Callable[[], object]], repeats: int) -> List[float]:
    """Median time of each function, measured in rounds (one call of each per round, after one
    warm-up call each: numba JIT, allocator), so that a drift of the machine's speed affects all
    alike and their ratios stay meaningful."""
    for fn in fns:
        fn()
    times: List[List[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, bucket in zip(fns, times):
            start = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - start)
    return [1e3 * statistics.median(bucket) for bucket in times]


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-300)).item()


# ---- 1. Hessian-vector products -----------------------------------------------------------------

def hvp_rows(B: int, N: int, d: int, repeats: int) -> List[Tuple[str, float, str]]:
    import softdtw_torch as st

    ops = torch.ops.softdtw_torch
    g = torch.Generator().manual_seed(0)
    x, y, u, v = (torch.randn(B, N, d, generator=g) for _ in range(4))
    ones = torch.ones(B)

    def first_order():
        a, b = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
        st.soft_dtw(a, b, 1.0).sum().backward()

    def hvp_op():
        return ops._soft_dtw_fused_hvp(ones, None, x, y, u, v, 1.0, None, None, None, None, False)

    def double_backward():
        a, b = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
        ga, gb = torch.autograd.grad(st.soft_dtw(a, b, 1.0).sum(), (a, b), create_graph=True)
        return torch.autograd.grad((ga * u).sum() + (gb * v).sum(), (a, b))

    f = lambda a, b: st.soft_dtw(a, b, 1.0).sum()  # noqa: E731

    def forward_over_reverse():
        return torch.func.jvp(torch.func.grad(f, argnums=(0, 1)), (x, y), (u, v))[1]

    def jvp():
        return torch.func.jvp(f, (x, y), (u, v))[1]

    # the same HVP three ways: same numbers (float32 rounding)
    want = hvp_op()[3:]
    agree = max(rel_err(a, b) for got in (double_backward(), forward_over_reverse())
                for a, b in zip(got, want))
    D = st.pairwise_cost(x, y)
    T = torch.randn(D.shape, generator=g)

    def from_cost_first_order():
        d_ = D.clone().requires_grad_(True)
        st.soft_dtw_from_cost(d_, 1.0).sum().backward()

    def from_cost_hvp_op():
        return ops._soft_dtw_from_cost_hvp(ones, None, D, T, 1.0, None, None, None, None, False)

    fused = [("fused first order: forward + backward", first_order),
             ("fused hvp op (forward and reverse with the tangent)", hvp_op),
             ("fused double backward (forward + backward(create_graph) + HVP)", double_backward),
             ("fused forward-over-reverse (torch.func.jvp of torch.func.grad)", forward_over_reverse),
             ("fused jvp (torch.func.jvp: one forward with the tangent)", jvp)]
    times = interleaved_medians_ms([fn for _, fn in fused], repeats)
    rows = [(name, t, f"{t / times[0]:.2f}x" + (" (baseline)" if i == 0 else "")) for i, ((name, _), t) in
            enumerate(zip(fused, times))]
    base_cost, t = interleaved_medians_ms([from_cost_first_order, from_cost_hvp_op], repeats)
    rows.append(("from cost first order: forward + backward", base_cost, "1.00x (baseline)"))
    rows.append(("from cost hvp op", t, f"{t / base_cost:.2f}x"))
    rows.append(("(the three fused HVPs agree to)", float("nan"), f"{agree:.1e} relative"))
    return rows


# ---- 2. DILATE against the authors' code --------------------------------------------------------

def load_peer(folder: str, module: str):
    path = os.path.join(PEERS, folder)
    if not os.path.isdir(path):
        raise ImportError(f"{path} is missing: run scripts/prepare_gpu_peers.sh")
    sys.path.insert(0, path)
    return __import__(module, fromlist=["*"])


def dilate_rows(shapes, repeats: int) -> Tuple[List[Tuple[str, float, float, str, str]], Optional[str]]:
    import softdtw_torch as st

    try:
        authors = load_peer("DILATE", "loss.dilate_loss")
    except Exception as exc:  # noqa: BLE001 - report and skip a missing peer
        return [], f"DILATE authors' code not run: {exc}"
    rows = []
    for B, N in shapes:
        g = torch.Generator().manual_seed(N)
        prediction = torch.randn(B, N, 1, generator=g)
        target = torch.randn(B, N, 1, generator=g)

        def theirs():
            p = prediction.clone().requires_grad_(True)
            loss, shape, temporal = authors.dilate_loss(p, target, 0.5, 0.01, "cpu")
            loss.backward()
            return loss, shape, temporal, p.grad

        def ours():
            p = prediction.clone().requires_grad_(True)
            loss, shape, temporal = st.dilate(p, target, 0.5, 0.01)
            loss.mean().backward()
            return loss.mean(), shape.mean(), temporal.mean(), p.grad

        t_ours, t_theirs = interleaved_medians_ms([ours, theirs], repeats)
        a, b = ours(), theirs()
        values = max(rel_err(a[i], b[i]) for i in range(3))
        grads = rel_err(a[3], b[3] / B)
        rows.append((f"B={B}, N=M={N}, d=1", t_ours, t_theirs, f"{t_theirs / t_ours:.1f}x",
                     f"values {values:.1e}, gradient (theirs / B) {grads:.1e}"))
    return rows, None


# ---- 3. sharp divergence against its authors' code ---------------------------------------------

def sharp_rows(shapes, repeats: int) -> Tuple[List[Tuple[str, float, float, str, str]], Optional[str]]:
    import numpy as np

    import softdtw_torch as st

    try:
        numba_ops = load_peer("sdtw-div", "sdtw_div.numba_ops")
    except Exception as exc:  # noqa: BLE001
        return [], f"soft-dtw-divergences code not run: {exc}"
    rows = []
    for B, N, d in shapes:
        g = torch.Generator().manual_seed(N + d)
        x = torch.randn(B, N, d, generator=g, dtype=torch.float64)
        y = torch.randn(B, N, d, generator=g, dtype=torch.float64)
        X, Y = x.numpy(), y.numpy()

        def theirs():
            out = [numba_ops.sharp_sdtw_div_value_and_grad(X[b], Y[b], gamma=0.5) for b in range(B)]
            return np.array([v for v, _ in out]), np.stack([gr for _, gr in out])

        def ours():
            a = x.clone().requires_grad_(True)
            values = 0.5 * st.soft_dtw_sharp(a, y, gamma=1.0, normalize=True)  # their ½‖x − y‖² cost at γ = 0.5
            values.sum().backward()
            return values, a.grad

        t_ours, t_theirs = interleaved_medians_ms([ours, theirs], repeats)
        (v_ours, g_ours), (v_theirs, g_theirs) = ours(), theirs()
        check = f"values {rel_err(v_ours, torch.from_numpy(v_theirs)):.1e}, gradient {rel_err(g_ours, torch.from_numpy(g_theirs)):.1e}"
        rows.append((f"B={B}, N=M={N}, d={d}, float64", t_ours, t_theirs, f"{t_theirs / t_ours:.1f}x", check))
    return rows, None


def peer_table(title, rows, skipped):
    """A markdown section comparing softdtw_torch with a peer per shape (or why the peer was skipped)."""
    lines = [f"## {title}", ""]
    if skipped:
        lines += [skipped, ""]
    lines += ["| shape | softdtw_torch ms | authors' ms | speed-up | agreement |", "|---|---:|---:|---:|---|"]
    return lines + [f"| {s} | {a:.1f} | {b:.1f} | {r} | {c} |" for s, a, b, r, c in rows]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=available_cores())
    parser.add_argument("--numba-threading-layer", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small shapes (a smoke test)")
    parser.add_argument("--markdown", help="also write the report to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    import softdtw_torch  # noqa: F401

    quick = args.quick
    lines = ["# Second order, forward mode, DILATE and the sharp divergence on CPU", ""]
    lines += [f"- machine: {cpu_model()}, {available_cores()} logical CPUs available; {platform.system()} {platform.release()}",
              f"- threads: {args.threads} for everyone (torch intra-op, numba, OMP_NUM_THREADS)",
              f"- versions: python {platform.python_version()}, torch {torch.__version__}, numba "
              f"{module_version('numba')}, softdtw_torch {module_version('softdtw_torch')} (git {git_revision()})",
              f"- protocol: median of {args.repeats} timed calls after one warm-up, time.perf_counter; the "
              "implementations of a table are timed in interleaved rounds (one call of each per round)", ""]
    B, N, d = (8, 64, 4) if quick else (64, 256, 8)
    lines += [f"## Hessian-vector products, B={B}, N=M={N}, d={d}, float32, gamma=1", "",
              "| what | median ms | ratio to first order |", "|---|---:|---:|"]
    for name, ms, ratio in hvp_rows(B, N, d, args.repeats):
        lines.append(f"| {name} | {'' if ms != ms else f'{ms:.1f}'} | {ratio} |")
    lines.append("")
    dilate_shapes = [(10, 20)] if quick else [(100, 20), (100, 100), (32, 256)]
    lines += peer_table("DILATE forward + backward, float32, alpha=0.5, gamma=0.01, against the authors' code",
                        *dilate_rows(dilate_shapes, args.repeats))
    lines.append("")
    sharp_shapes = [(4, 20, 2)] if quick else [(32, 100, 3), (8, 256, 8)]
    lines += peer_table("Sharp soft-DTW divergence, value + gradient, against its authors' code",
                        *sharp_rows(sharp_shapes, args.repeats))
    report = "\n".join(lines) + "\n"
    print(report)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
