"""ROCKET / MiniRocket / MultiRocket / Hydra transform time: softdtw-torch next to aeon, same machine,
same threads.

CPU: aeon's numba Rocket, MiniRocket and MultiRocket transforms vs ours on GunPoint, BasicMotions,
ACSF1 (test splits, from the datasets aeon bundles in its package) and a synthetic 1,000 x 1,000
collection, 10,000 kernels (MultiRocket: aeon's default 6,250; Hydra: aeon's defaults, 8 kernels
in 64 groups, against aeon's torch implementation), the same kernels / parameters (features checked
equal in the same run; MultiRocket's bit for bit, Hydra's share of bit-identical features). GPU (when
CUDA is available): each method's transform on every collection with the input already on the GPU,
timed with CUDA events, next to aeon and ours on this machine's CPU threads, with the share of its
features bit-identical to our CPU's of the same run (Rocket: float32 input, float32_fma, as its GPU
default; the others: the CPU row's float64 input).

    python benchmarks/bench_rocket.py [--threads N] [--methods rocket,minirocket,multirocket,hydra]
        [--synthetic-cases 1000]
        [--markdown out.md]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _threads import cpu_model, set_thread_env_from_argv  # noqa: E402
from _timing import cuda_timed_calls, timed_calls  # noqa: E402

set_thread_env_from_argv()

import argparse  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import softdtw_torch  # noqa: E402,F401
from softdtw_torch.datasets import aeon_datasets_dir, load_ts  # noqa: E402
from softdtw_torch.rocket import Rocket  # noqa: E402


def best_of(fn, repeats):
    """The fastest of `repeats` calls and the last one's result (each estimator is warmed up
    beforehand on two cases: a full warm-up call of aeon would cost minutes)."""
    times, out = timed_calls(fn, repeats, warm_up=False)
    return min(times), out


def gpu_row(name, method, ours, x, cpu_features, t_aeon, t_ours, args, gpu_lines):
    """Ours on CUDA for the numpy input x (moved to the GPU before timing), next to the CPU rows' times;
    the share of features with the bits of `cpu_features` (ours on the CPU, same input)."""
    if not torch.cuda.is_available():
        return
    xg = torch.from_numpy(x).cuda()
    times, features = cuda_timed_calls(lambda: ours.transform(xg), args.repeats)
    t_gpu = min(times)
    got, want = np.asarray(features.cpu()), np.asarray(cpu_features)
    same = (got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")).mean() if got.dtype == want.dtype else 0.0
    gpu_lines.append(f"| {name} {x.shape} | {method} | {t_gpu * 1e3:.2f} | {t_aeon:.3f} | {t_aeon / t_gpu:.0f}x | "
                     f"{t_ours:.3f} | {t_ours / t_gpu:.0f}x | {100 * same:.2f}% |")
    print(gpu_lines[-1], flush=True)


def collections(args):
    data = aeon_datasets_dir()
    if data is None:
        sys.exit("bench_rocket: aeon is not installed (pip install aeon): it is the reference and holds the data")
    for name in ("GunPoint", "BasicMotions", "ACSF1"):
        X, _ = load_ts(os.path.join(data, name, f"{name}_TEST.ts"))
        yield name, X
    rng = np.random.default_rng(0)
    yield f"synthetic {args.synthetic_cases}x{args.synthetic_length}", rng.standard_normal(
        (args.synthetic_cases, 1, args.synthetic_length))


def run_minirocket(name, X, args, threads, MiniRocket, AeonMiniRocket, lines, gpu_lines):
    if MiniRocket is None:
        return
    aeon_m = AeonMiniRocket(n_kernels=args.n_kernels, random_state=0, n_jobs=threads).fit(X)
    aeon_m.transform(X[:2])
    ours_m = MiniRocket.from_parameters(aeon_m.parameters)
    ours_m.transform(X[:2])
    t_aeon_m, ref_m = best_of(lambda: aeon_m.transform(X), args.repeats)
    t_ours_m, got_m = best_of(lambda: ours_m.transform(X), args.repeats)
    lines.append(f"| {name} {X.shape} | MiniRocket | {t_aeon_m:.3f} | {t_ours_m:.3f} | "
                 f"{t_aeon_m / t_ours_m:.1f}x | {np.array_equal(np.asarray(got_m), ref_m)} |")
    print(lines[-1], flush=True)
    gpu_row(name, "MiniRocket", ours_m, X, got_m, t_aeon_m, t_ours_m, args, gpu_lines)


def run_multirocket(name, X, args, threads, lines, gpu_lines):
    from aeon.transformations.collection.convolution_based import MultiRocket as AeonMultiRocket
    from softdtw_torch.rocket import MultiRocket

    aeon_m = AeonMultiRocket(n_kernels=args.multirocket_kernels, random_state=0, n_jobs=threads).fit(X)
    aeon_m.transform(X[:2])  # numba compilation
    ours_m = MultiRocket.from_parameters(aeon_m.parameter, aeon_m.parameter1)
    ours_m.transform(X[:2])
    t_aeon_m, ref_m = best_of(lambda: aeon_m.transform(X), args.repeats)
    t_ours_m, got_m = best_of(lambda: ours_m.transform(X), args.repeats)
    same = np.array_equal(np.asarray(got_m).view(np.uint32), ref_m.view(np.uint32))
    lines.append(f"| {name} {X.shape} | MultiRocket | {t_aeon_m:.3f} | {t_ours_m:.3f} | "
                 f"{t_aeon_m / t_ours_m:.1f}x | {same} |")
    print(lines[-1], flush=True)
    gpu_row(name, "MultiRocket", ours_m, X, got_m, t_aeon_m, t_ours_m, args, gpu_lines)


def run_hydra(name, X, args, threads, lines, gpu_lines):
    """aeon's HydraTransformer (torch conv1d, on torch's threads) against ours on the same kernels.
    aeon's transform converts X to float32 and calls its torch module on the whole collection."""
    from aeon.transformations.collection.convolution_based import HydraTransformer as AeonHydra
    from softdtw_torch.rocket import HydraTransformer

    aeon_h = AeonHydra(random_state=0, n_jobs=threads).fit(X)
    ours_h = HydraTransformer.from_aeon(aeon_h)
    t_aeon_h, ref_h = best_of(lambda: aeon_h.transform(X), args.repeats)
    torch.set_num_threads(threads)  # aeon's fit sets torch's threads to n_jobs: the same for both
    t_ours_h, got_h = best_of(lambda: ours_h.transform(X), args.repeats)
    same = (np.asarray(got_h).view(np.uint32) == ref_h.numpy().view(np.uint32)).mean()
    lines.append(f"| {name} {X.shape} | Hydra | {t_aeon_h:.3f} | {t_ours_h:.3f} | "
                 f"{t_aeon_h / t_ours_h:.1f}x | {100 * same:.2f}% bit-identical |")
    print(lines[-1], flush=True)
    gpu_row(name, "Hydra", ours_h, X, got_h, t_aeon_h, t_ours_h, args, gpu_lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int)
    parser.add_argument("--numba-threading-layer")
    parser.add_argument("--n-kernels", type=int, default=10_000)
    parser.add_argument("--synthetic-cases", type=int, default=1000)
    parser.add_argument("--synthetic-length", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--multirocket-kernels", type=int, default=6_250)
    parser.add_argument("--methods", default="rocket,minirocket,multirocket,hydra",
                        help="comma-separated subset of rocket,minirocket,multirocket,hydra (default: all)")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    methods = set(args.methods.split(","))
    threads = int(os.environ["OMP_NUM_THREADS"])
    torch.set_num_threads(threads)

    from aeon.transformations.collection.convolution_based import MiniRocket as AeonMiniRocket
    from aeon.transformations.collection.convolution_based import Rocket as AeonRocket
    try:
        from softdtw_torch.rocket import MiniRocket
    except ImportError:
        MiniRocket = None

    kernels = f"{args.n_kernels} kernels" + (f" (MultiRocket {args.multirocket_kernels})" if "multirocket" in methods
                                              else "")
    lines = [f"# ROCKET transform benchmark ({threads} CPU threads, {kernels}, best of {args.repeats})",
             "", f"CPU: {cpu_model()}; torch {torch.__version__}; load average before: {os.getloadavg()[0]:.2f}", "",
             "| collection | method | aeon (s) | ours (s) | speed-up | features equal |", "|---|---|---|---|---|---|"]
    print(lines[2], flush=True)
    gpu_lines = []
    for name, X in collections(args):
        if "hydra" in methods:
            run_hydra(name, X, args, threads, lines, gpu_lines)
        if "multirocket" in methods:
            run_multirocket(name, X, args, threads, lines, gpu_lines)
        if "rocket" not in methods:
            if "minirocket" in methods:
                run_minirocket(name, X, args, threads, MiniRocket, AeonMiniRocket, lines, gpu_lines)
            continue
        aeon = AeonRocket(n_kernels=args.n_kernels, random_state=0, n_jobs=threads).fit(X)
        aeon.transform(X[:2])  # numba compilation
        ours = Rocket.from_kernels(aeon.kernels)
        ours.transform(X[:2])
        t_aeon, ref = best_of(lambda: aeon.transform(X), args.repeats)
        t_ours, got = best_of(lambda: ours.transform(X), args.repeats)
        # aeon >= 1.6's float32 sums are reassociated by numba for the host CPU (see docs/user_guide/rocket.md):
        # equal here means MAX within 1e-5 and PPV equal on >= 99% of features.
        equal = np.allclose(got[:, 1::2], ref[:, 1::2], rtol=1e-5, atol=1e-5) and np.mean(
            got[:, 0::2] == ref[:, 0::2]) > 0.99
        lines.append(f"| {name} {X.shape} | Rocket | {t_aeon:.3f} | {t_ours:.3f} | {t_aeon / t_ours:.1f}x | {equal} |")
        print(lines[-1], flush=True)
        if "minirocket" in methods:
            run_minirocket(name, X, args, threads, MiniRocket, AeonMiniRocket, lines, gpu_lines)
        if torch.cuda.is_available():
            x32 = X.astype(np.float32)
            t_ours32, cpu32 = best_of(lambda: ours.transform(x32), args.repeats)
            gpu_row(name, "Rocket", Rocket.from_kernels(aeon.kernels), x32, cpu32, t_aeon, t_ours32, args, gpu_lines)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if gpu_lines:
        lines += ["", f"GPU: {torch.cuda.get_device_name()} (input on the GPU before timing, CUDA events; CPU "
                  f"columns: the rows above, {threads} threads; Rocket: float32 input on both)", "",
                  "| collection | method | ours GPU (ms) | aeon CPU (s) | GPU vs aeon | ours CPU (s) | GPU vs ours CPU "
                  "| features with our CPU's bits |",
                  "|---|---|---|---|---|---|---|---|"] + gpu_lines
    else:
        lines += ["", "GPU: not available on this machine (no GPU numbers)."]
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
