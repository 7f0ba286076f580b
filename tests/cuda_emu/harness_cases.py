"""Building and running the torch-free kernel harness (harness.cpp), and its input cases: shared by
test_harness.py (results against the emulated and CPU ops) and mutants.py (planted bugs)."""
import os
import shlex
import shutil
import subprocess

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CSRC = os.path.join(ROOT, "csrc")

# How each build checks the device code, besides running it under the CUDA emulator.
FLAVOURS = {
    "plain": ["-O2"],
    # memcheck: out-of-bounds accesses, use after free, undefined behaviour stop the run.
    "memcheck": ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                 "-fno-sanitize-recover=undefined"],
    # racecheck: the emulator tells ThreadSanitizer what orders memory between CUDA threads.
    "racecheck": ["-O1", "-g", "-fsanitize=thread"],
    # nvcc's default floating point: a multiply feeding an add may become one FMA (the host
    # compiler's choices stand in for nvcc's); the _rn intrinsics stay uncontracted.
    "fma_contraction": ["-O2", "-mfma", "-ffp-contract=fast"],
}
# The flavours whose results must be the plain build's bits whatever the kernel.
CHECKING_FLAVOURS = ("plain", "memcheck", "racecheck")


SANITIZER_REPORT = ("ERROR: AddressSanitizer", "runtime error:", "WARNING: ThreadSanitizer", "cuda_emu:")


def cpu_has_fma():
    """Whether this x86-64 CPU has FMA instructions (the fma_contraction build runs them)."""
    with open("/proc/cpuinfo") as f:
        return " fma " in f.read().replace("\n", " ")


class HarnessError(AssertionError):
    """A harness run that failed: an exit code, a sanitizer's or the emulator's report."""


def compiler_launcher():
    """The compiler cache to put in front of a compile of the repository's own sources: what
    scripts/env.sh exports in SOFTDTW_TORCH_COMPILER_LAUNCHER (ccache when it is installed), else
    ccache when it is on PATH; nothing when that variable is set but empty (caching turned off)."""
    launcher = os.environ.get("SOFTDTW_TORCH_COMPILER_LAUNCHER")
    if launcher is None:
        launcher = "ccache" if shutil.which("ccache") else ""
    return shlex.split(launcher)


def compiler():
    command = shlex.split(os.environ.get("CXX", "g++"))
    if not command or shutil.which(command[0]) is None:
        raise HarnessError(f"no C++ compiler: {command[0] if command else '$CXX is empty'} not found")
    return command


def compile_and_link(compile_command, link_command, exe, csrc, what, timeout):
    """Compiles harness.cpp into exe + ".o" with compile_command (through the compiler cache when
    `csrc` is the repository's own: a mutant's copy would only fill it), then links exe with
    link_command: two steps, as a compiler cache keeps objects, not programs."""
    launcher = compiler_launcher() if os.path.samefile(csrc, CSRC) else []
    obj = f"{exe}.o"
    for command in ([*launcher, *compile_command, "-c", os.path.join(HERE, "harness.cpp"), "-o", obj],
                    [*link_command, obj, "-o", str(exe)]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise HarnessError(f"building {what} failed:\n{result.stderr[-4000:]}")


def build(flavour, exe, csrc=CSRC):
    """Compiles harness.cpp (with the device code under `csrc`) as `flavour` into `exe`."""
    flags = [*compiler(), "-std=c++20", "-pthread", *FLAVOURS[flavour]]
    compile_and_link([*flags, f"-I{csrc}", f"-I{HERE}"], flags, exe, csrc, f"the {flavour} harness", 900)


def nvcc():
    """The CUDA toolkit's nvcc (torch's CUDA_HOME, then PATH), or None."""
    from torch.utils import cpp_extension
    candidates = [os.path.join(cpp_extension.CUDA_HOME, "bin", "nvcc")] if cpp_extension.CUDA_HOME else []
    candidates.append(shutil.which("nvcc"))
    return next((c for c in candidates if c and os.path.isfile(c)), None)


def build_with_nvcc(exe, architectures=("7.5",), csrc=CSRC):
    """Compiles harness.cpp with nvcc for real GPUs of the given compute capabilities."""
    compiler = nvcc()
    if compiler is None:
        raise HarnessError("nvcc not found")
    targets = []
    for arch in architectures:
        number = arch.replace("+PTX", "").replace(".", "")
        code = f"[sm_{number},compute_{number}]" if arch.endswith("+PTX") else f"sm_{number}"
        targets += ["-gencode", f"arch=compute_{number},code={code}"]
    compile_and_link([compiler, "-x", "cu", "-std=c++20", "-O3", *targets, f"-I{csrc}"], [compiler, *targets],
                     exe, csrc, "the harness with nvcc", 1800)


def run(exe, case, work_dir, timeout=900):
    """Runs one case (family, arrays, meta, arch) in `work_dir`; returns {result name: raw bytes}."""
    family, _, _, arch = case
    in_dir, out_dir = os.path.join(work_dir, "in"), os.path.join(work_dir, "out")
    write_case(case, in_dir)
    os.makedirs(out_dir)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", TSAN_OPTIONS="halt_on_error=1:exitcode=66",
               UBSAN_OPTIONS="print_stacktrace=1", CUDA_EMU_ARCH=str(arch), CUDA_EMU_TIMEOUT_S="60")
    try:
        result = subprocess.run([str(exe), family, in_dir, out_dir], capture_output=True, text=True, timeout=timeout,
                                env=env)
    except subprocess.TimeoutExpired as error:
        raise HarnessError(f"{exe} {family}: no result within {timeout} s") from error
    stderr = result.stderr if len(result.stderr) <= 8000 else result.stderr[:3000] + "\n[...]\n" + result.stderr[-5000:]
    report = f"{os.path.basename(str(exe))} {family}: exit {result.returncode}\n{stderr}"
    if result.returncode != 0 or any(marker in result.stderr for marker in SANITIZER_REPORT):
        raise HarnessError(report)
    out = {}
    for name in os.listdir(out_dir):
        with open(os.path.join(out_dir, name), "rb") as f:
            out[name[:-4]] = f.read()
    return out


def softdtw_case(B, N, M, d, radius, ragged, dtype, seed=0, gamma=0.5, itakura_slope=0.0):
    """SoftDTW's inputs as tensors (x, y, u, v, D, D_tangent, grad, grad_tangent, x_lengths,
    y_lengths; lengths None unless ragged) and the harness case; gamma = 0 runs the hard-DTW
    kernels (their kHard instances); itakura_slope 0 is no parallelogram. The float64 forward-mode and
    second-order tiles need more than sm_75's 64 KiB of shared memory: float64 runs on an emulated
    sm_90, float32 on sm_75 (the oldest built)."""
    g = torch.Generator().manual_seed(seed + N + M)
    x, u = (torch.randn(B, N, d, generator=g, dtype=torch.float64).to(dtype) for _ in range(2))
    y, v = (torch.randn(B, M, d, generator=g, dtype=torch.float64).to(dtype) for _ in range(2))
    D = torch.ops.softdtw_torch.pairwise_cost(x, y, "sqeuclidean")
    D_tangent = torch.randn(B, N, M, generator=g, dtype=torch.float64).to(dtype)
    grad, grad_tangent = torch.linspace(0.5, 1.5, B, dtype=dtype), torch.linspace(-1.0, 0.3, B, dtype=dtype)
    xl = yl = None
    if ragged:
        xl, yl = torch.randint(1, N + 1, (B,), generator=g), torch.randint(1, M + 1, (B,), generator=g)
        xl[0], yl[-1] = N, M
    tensors = dict(x=x, y=y, u=u, v=v, D=D, D_tangent=D_tangent, grad=grad, grad_tangent=grad_tangent,
                   x_lengths=xl, y_lengths=yl)
    arrays = {k: t.numpy() for k, t in tensors.items() if t is not None}
    meta = dict(B=B, N=N, M=M, d=d, gamma=gamma, radius=radius, itakura_slope=itakura_slope, ragged=int(ragged),
                grid_cap=3)
    family = "softdtw_float64" if dtype == torch.float64 else "softdtw_float32"
    return tensors, (family, arrays, meta, 90 if dtype == torch.float64 else 75)


def rocket_case(n, C, T, K, temperature, seed=3):
    """ROCKET's inputs (x, lengths, the kernels tuple, grad; ragged lengths) and the harness case."""
    from aeon.transformations.collection.convolution_based import _rocket as aeon_rocket
    from softdtw_torch.rocket import kernels_from_aeon

    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((n, C, T)))
    lengths = torch.from_numpy(rng.integers(1, T + 1, n))
    lengths[0] = T
    kernels = list(kernels_from_aeon(aeon_rocket._generate_kernels(T, K, C, seed + 2)))
    weights, klengths, biases, dilations, paddings, num_channels, channels = kernels
    per_kernel = (num_channels * klengths).long()
    grad = torch.from_numpy(rng.standard_normal((n, 2 * K)).astype(np.float32))
    arrays = dict(x=x.numpy(), lengths=lengths.numpy(), weights=weights.numpy(), biases=biases.numpy(),
                  kernel_lengths=klengths.numpy(), dilations=dilations.numpy(), paddings=paddings.numpy(),
                  num_channels=num_channels.numpy(), channels=channels.numpy(),
                  weight_offsets=(torch.cumsum(per_kernel, 0) - per_kernel).numpy(),
                  channel_offsets=(torch.cumsum(num_channels.long(), 0) - num_channels.long()).numpy(),
                  grad=grad.numpy())
    meta = dict(n=n, C=C, T=T, K=K, temperature=-1.0 if temperature is None else temperature, ragged=1,
                n_weights=weights.numel(), n_channel_indices=channels.numel(), grid_cap=3)
    return dict(x=x, lengths=lengths, kernels=kernels, grad=grad), ("rocket", arrays, meta, 75)


def one_channel_dilation(params, dilation_index, channel):
    """MiniRocket's fitted parameters with the 84 kernels of one dilation all on `channel` alone (a
    dilation the one-channel CUDA kernel counts, beside the multichannel ones)."""
    ncpc, channels, dilations, per_dilation, biases = params
    first = 84 * dilation_index
    starts = torch.cat([torch.zeros(1, dtype=ncpc.dtype), ncpc.cumsum(0)])
    ncpc = ncpc.clone()
    ncpc[first:first + 84] = 1
    channels = torch.cat([channels[:starts[first]], torch.full((84,), channel, dtype=channels.dtype),
                          channels[starts[first + 84]:]])
    return ncpc, channels, dilations, per_dilation, biases


def minirocket_case(emu, n, C, T, n_features, seed=4, one_channel_dilation_at=None):
    """MiniRocket's inputs (x float32, ragged lengths, the first case whole, the fitted parameters)
    and the harness case; `emu` (emulated_ops.load()) gives the combination layout the op uploads.
    one_channel_dilation_at: (dilation index, channel) of a dilation moved onto one channel."""
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((n, C, T)).astype(np.float32))
    lengths = torch.from_numpy(rng.integers(9, T + 1, n))
    lengths[0] = T
    params = torch.ops.softdtw_torch.minirocket_fit(x, n_features, 32, seed + 3)
    if one_channel_dilation_at is not None:
        params = one_channel_dilation(params, *one_channel_dilation_at)
    combinations, channels, biases = emu.minirocket_layout(x, *params)
    arrays = dict(x=x.numpy(), lengths=lengths.numpy(), combinations=combinations.numpy(),
                  channels=channels.numpy(), biases=biases.numpy())
    meta = dict(n=n, C=C, T=T, n_combinations=combinations.shape[0], n_channel_indices=channels.numel(),
                n_features=biases.numel(), ragged=1, grid_cap=3)
    return dict(x=x, lengths=lengths, params=params), ("minirocket", arrays, meta, 75)


def multirocket_case(emu, n, C, T, n_kernels, seed=5, one_channel_dilation_at=None):
    """MultiRocket's inputs (x float32, ragged lengths down to 10, the fitted parameters) and the
    harness case; `emu` (emulated_ops.load()) gives the layout the op uploads.
    one_channel_dilation_at: (dilation index, channel) of a dilation moved onto one channel (the
    channel combinations are both representations')."""
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((n, C, T)).astype(np.float32)).cumsum(-1)
    lengths = torch.from_numpy(rng.integers(10, T + 1, n))
    lengths[0] = 10  # the trimmed segments of the larger dilations are empty
    params = torch.ops.softdtw_torch.multirocket_fit(x, n_kernels, 32, seed + 3)
    arguments = (*params[:5], *params[7:])
    if one_channel_dilation_at is not None:
        arguments = (*one_channel_dilation(arguments[:5], *one_channel_dilation_at), *arguments[5:])
    combinations, feature_combination, channels, biases = emu.multirocket_layout(x, *arguments)
    arrays = dict(x=x.numpy(), difference=(x[:, :, 1:] - x[:, :, :-1]).numpy(), lengths=lengths.numpy(),
                  combinations=combinations.numpy(), feature_combination=feature_combination.numpy(),
                  channels=channels.numpy(), biases=biases.numpy())
    meta = dict(n=n, C=C, T=T, n_combinations=combinations.shape[0], n_channel_indices=channels.numel(),
                n_features=biases.numel() // 2, ragged=1, grid_cap=3)
    return dict(x=x, lengths=lengths, arguments=arguments), ("multirocket", arrays, meta, 75)


def hydra_case(n, C, T, K, G, seed=6):
    """Hydra's inputs (x float32, ragged lengths down to 6, the fitted weights and channels, a
    gradient of the features) and the harness case."""
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((n, C, T)).astype(np.float32)).cumsum(-1)
    lengths = torch.from_numpy(rng.integers(6, T + 1, n))
    lengths[0] = T
    weights, channels = torch.ops.softdtw_torch.hydra_fit(x, K, G, 8, seed + 3)
    D, R, G_half, _, _ = weights.shape
    grad = torch.from_numpy(rng.standard_normal((n, D * R * 2 * G_half * K)).astype(np.float32))
    arrays = dict(x=x.numpy(), weights=weights.numpy(), channels=channels.numpy(), lengths=lengths.numpy(),
                  grad=grad.numpy())
    meta = dict(n=n, C=C, T=T, D=D, R=R, G=G_half, K=K, per_group=channels.shape[3], ragged=1, grid_cap=3)
    return dict(x=x, lengths=lengths, weights=weights, channels=channels, grad=grad), ("hydra", arrays, meta, 75)


def standard_cases(emu):
    """The cases test_harness.py runs, by name: every kernel family, several tiles, bands, ragged
    lengths, grid-stride loops."""
    return {
        "softdtw_float32": softdtw_case(3, 130, 70, 3, 40, True, torch.float32)[1],
        "softdtw_float64": softdtw_case(3, 130, 70, 3, 40, True, torch.float64)[1],
        "hard_dtw_float32": softdtw_case(3, 130, 70, 3, 40, True, torch.float32, gamma=0.0)[1],
        "rocket_hard_ppv": rocket_case(4, 3, 50, 12, None)[1],
        "rocket_soft_ppv": rocket_case(4, 3, 50, 12, 0.7)[1],
        "minirocket": minirocket_case(emu, 5, 2, 60, 840, one_channel_dilation_at=(0, 1))[1],
        "multirocket": multirocket_case(emu, 4, 2, 50, 336, one_channel_dilation_at=(0, 1))[1],
        "hydra": hydra_case(5, 3, 40, 8, 16)[1],
    }


def write_case(case, directory):
    """Writes a case's inputs as harness.cpp reads them (IN_DIR); returns its family."""
    family, arrays, meta, _ = case
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "meta.txt"), "w") as f:
        f.write("".join(f"{k} {v}\n" for k, v in meta.items()))
    for name, array in arrays.items():
        np.ascontiguousarray(array).tofile(os.path.join(directory, f"{name}.bin"))
    return family


if __name__ == "__main__":
    # python tests/cuda_emu/harness_cases.py DIR: writes DIR/<case>/in and prints "<case> <family>"
    # lines, for running the harness elsewhere (benchmarks/gpu_check.sh, a GPU simulator).
    import sys

    sys.path.insert(0, HERE)
    import softdtw_torch  # noqa: F401
    import emulated_ops

    for name, case in standard_cases(emulated_ops.load()).items():
        print(name, write_case(case, os.path.join(sys.argv[1], name, "in")))
