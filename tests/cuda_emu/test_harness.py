"""Every CUDA kernel through the torch-free harness (tests/cuda_emu/harness.cpp), built four ways
with the host compiler and run under the CUDA emulator (harness_cases.py), and once with nvcc:

- plain: results compared with the emulated ops (same device code through the ops' bodies, which
  tests/softdtw/test_cuda_emulation.py compares with the CPU kernels) and with the CPU ops, bit for
  bit;
- memcheck: AddressSanitizer and UndefinedBehaviorSanitizer, which stop the run at the first
  out-of-bounds access, use after free or undefined behaviour in the device code;
- racecheck: ThreadSanitizer, told by the emulator which operations order memory between CUDA
  threads (barriers, __syncwarp, launches; not shuffles or votes), which reports any two accesses
  by different threads, one a write, that nothing orders: races in shared and global memory that
  did not change a result included.
The sanitized builds must report nothing and give the plain build's bits. A fourth build,
fma_contraction, lets the host compiler contract multiplies and adds into FMAs as nvcc does by
default: ROCKET, MiniRocket and MultiRocket must keep the CPU's bits (their device code rounds with
the _rn intrinsics where aeon's arithmetic does not fuse), SoftDTW stays within float rounding of
the plain build. Building the four takes about two minutes. The nvcc build must compile for the library's
architectures; on a GPU it must give what the emulated plain build gives.
"""
import hashlib
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

import softdtw_torch
from softdtw_torch._ops import _C

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulated_ops  # noqa: E402
from emulated_ops import same_bits  # noqa: E402
import harness_cases  # noqa: E402
from harness_cases import (CHECKING_FLAVOURS, hydra_case, minirocket_case, multirocket_case, rocket_case,  # noqa: E402
                           softdtw_case)

# slow: three sanitizer builds of the harness; racecheck (ThreadSanitizer) runs take 5-25 s a case
pytestmark = pytest.mark.slow

OPS = torch.ops.softdtw_torch
NO_CACHE = torch.empty(0)  # the second cache tensor of a fused forward that keeps the table (unread)


def case_key(case):
    """A case's identity: its family, meta, emulated architecture and every input's bytes."""
    family, arrays, meta, arch = case
    digest = hashlib.sha256(repr((family, sorted(meta.items()), arch)).encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name} {array.dtype} {array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    """Builds each flavour; returns run(case) -> the plain build's results, after checking that every
    flavour ran clean and gave the same bytes. The flavours of a case run at once (racecheck takes
    most of the time), and a case is run once per module: the FMA-contraction tests compare with
    the results of cases the kernel tests ran."""
    build = tmp_path_factory.mktemp("harness")
    executables = {flavour: build / f"harness-{flavour}" for flavour in CHECKING_FLAVOURS}
    # Each build is one compiler process: as many at once as there are cores.
    with ThreadPoolExecutor(min(len(executables), os.cpu_count() or 1)) as pool:
        for built in [pool.submit(harness_cases.build, flavour, exe) for flavour, exe in executables.items()]:
            built.result()
    counter = iter(range(10**6))
    done = {}

    def run(case):
        key = case_key(case)
        if key not in done:
            with ThreadPoolExecutor(len(executables)) as pool:
                runs = {flavour: pool.submit(harness_cases.run, exe, case, build / f"case{next(counter)}")
                        for flavour, exe in executables.items()}
                results = {flavour: future.result() for flavour, future in runs.items()}
            plain = results["plain"]
            for flavour, out in results.items():
                assert out.keys() == plain.keys() and all(out[k] == plain[k] for k in plain), flavour
            done[key] = plain
        return dict(done[key])

    return run


@pytest.fixture(scope="module")
def contracted(tmp_path_factory):
    """The fma_contraction build: run(case) -> its results."""
    if not harness_cases.cpu_has_fma():
        pytest.skip("this CPU has no FMA instructions to emulate nvcc's contraction with")
    build = tmp_path_factory.mktemp("harness-fma")
    exe = build / "harness-fma_contraction"
    harness_cases.build("fma_contraction", exe)
    counter = iter(range(10**6))
    return lambda case: harness_cases.run(exe, case, build / f"case{next(counter)}")


@pytest.fixture(scope="module")
def emu():
    return emulated_ops.load()


def as_tensor(raw, dtype, shape):
    return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape)


# (B, N, M, d, radius, itakura_slope, ragged, gamma): several tiles per pair with ragged lengths and
# a band that leaves whole tiles outside it; 5 × 3 tiles, where the rolling border slots are reused
# within a launch (from the fourth row block on); one tile; the first again at gamma = 0 (hard DTW's
# kernels); an Itakura parallelogram that leaves whole tiles outside it (its corners), alone and
# with a band, soft and hard; a pair whose columns fill every lane of one warp per pair (4 a lane).
SOFTDTW_CASES = [(3, 130, 70, 3, 40, 0.0, True, 0.5), (1, 260, 130, 2, -1, 0.0, False, 0.5),
                 (2, 20, 33, 2, -1, 0.0, False, 0.5), (3, 130, 70, 3, 40, 0.0, True, 0.0),
                 (2, 200, 140, 2, -1, 1.5, True, 0.5), (2, 200, 140, 2, 60, 2.0, False, 0.0),
                 (2, 90, 128, 2, -1, 0.0, False, 0.5)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", SOFTDTW_CASES, ids=lambda c: "x".join(map(str, c)))
def test_softdtw_kernels(harness, emu, case, dtype):
    B, N, M, d, radius, slope, ragged, gamma = case
    t, harness_case = softdtw_case(B, N, M, d, radius, ragged, dtype, gamma=gamma, itakura_slope=slope)
    out = harness(harness_case)
    x, y, u, v, D, D_tangent = (t[k] for k in ("x", "y", "u", "v", "D", "D_tangent"))
    grad, grad_tangent, xl, yl = (t[k] for k in ("grad", "grad_tangent", "x_lengths", "y_lengths"))
    got = lambda name, shape, kind=dtype: as_tensor(out[name], kind, shape)  # noqa: E731
    L = (None if radius < 0 else radius, slope or None, xl, yl)

    def check(name, want, shape=None, scale=None):
        # The harness against the emulated op. The same device code, but float64 cells call libm's
        # exp and log1p in two processes, which were seen to differ in the last place (one cell in
        # 27,300 by 2.8e-14): float64 within 1e-13 of each output's largest value, float32 bits.
        value = got(name, want.shape if shape is None else shape, torch.float64 if scale is not None else dtype)
        if scale is not None:  # a fused backward's float64 sums: the op returns 2·grad·Σ in x's dtype
            value = (value * scale).to(dtype)
        if dtype == torch.float32:
            assert same_bits(value, want), name
            return
        assert torch.equal(torch.isinf(value), torch.isinf(want)), name
        finite = torch.isfinite(want)
        if finite.any():
            error = (value[finite] - want[finite]).abs().max() / want[finite].abs().max().clamp(min=1e-300)
            assert error <= 1e-13, f"{name}: {error.item():.1e}"

    if slope:  # the parallelogram's table the kernels read, as the op computes it
        lengths = [torch.full((B,), size) if given is None else given for given, size in ((xl, N), (yl, M))]
        want = OPS._itakura_rows(*lengths, M, slope)
        assert same_bits(got("itakura_rows", want.shape, torch.int64), want)
    values, R = emu.from_cost_forward(D, gamma, *L, True)
    check("from_cost_values", values)
    check("from_cost_R", R)
    check("grad_D", emu.from_cost_backward(grad, D, R, gamma, *L))
    if M <= _C.SOFTDTW_CUDA_PAIR_MAX_COLUMNS:  # the harness runs one warp per pair beside the tiles: the same bits
        check("pair_from_cost_values", values)
        check("pair_from_cost_R", R)
        fused_values, fused_R, _ = emu.fused_forward(x, y, gamma, *L, "table")
        check("pair_fused_values", fused_values)
        check("pair_fused_R", fused_R)
        check("pair_grad_D", emu.from_cost_backward(grad, D, R, gamma, *L))

    scale = (2.0 * grad.double()).view(B, 1, 1)
    values, R, _ = emu.fused_forward(x, y, gamma, *L, "table")
    gx, gy = emu.fused_backward(grad, x, y, R, NO_CACHE, gamma, *L, "table")
    check("fused_values", values)
    check("fused_acc_x", gx, (B, N, d), scale)
    check("fused_acc_y", gy, (B, M, d), scale)
    if M <= _C.SOFTDTW_CUDA_PAIR_MAX_COLUMNS:
        check("pair_fused_acc_x", gx, (B, N, d), scale)
        check("pair_fused_acc_y", gy, (B, M, d), scale)
    values, rows, cols = emu.fused_forward(x, y, gamma, *L, "borders")
    gx, gy = emu.fused_backward(grad, x, y, rows, cols, gamma, *L, "borders")
    check("checkpointed_values", values)
    check("checkpointed_acc_x", gx, (B, N, d), scale)
    check("checkpointed_acc_y", gy, (B, M, d), scale)

    values, tangents = emu.fused_jvp(x, y, u, v, gamma, *L)
    check("jvp_values", values)
    check("jvp_tangents", tangents)
    _, grad_D, grad_D_tangent = emu.from_cost_hvp(grad, grad_tangent, D, D_tangent, gamma, *L, True)
    check("hvp_from_cost_grad_D", grad_D)
    check("hvp_from_cost_grad_D_tangent", grad_D_tangent)
    # The fused HVP's results from the kernels' sums as the op forms them: grad = 2·g·Σ, its
    # tangent 2·(ġ·Σ + g·Σ_hess).
    _, gx, gy, hx, hy = emu.fused_hvp(grad, grad_tangent, x, y, u, v, gamma, *L, True)
    tangent_scale = (2.0 * grad_tangent.double()).view(B, 1, 1)
    sums = {k: got(f"hvp_fused_{k}", (B, N if k.endswith("x") else M, d), torch.float64)
            for k in ("acc_x", "acc_y", "hess_x", "hess_y")}
    one = torch.ones(B, 1, 1, dtype=torch.float64)
    out.update({f"hvp_fused_{k}": ((sums[f"acc_{k}"] * tangent_scale + sums[f"hess_{k}"] * scale) / 1.0).numpy()
                .tobytes() for k in ("x", "y")})
    check("hvp_fused_acc_x", gx, (B, N, d), scale)
    check("hvp_fused_acc_y", gy, (B, M, d), scale)
    check("hvp_fused_x", hx, (B, N, d), one)
    check("hvp_fused_y", hy, (B, M, d), one)


@pytest.mark.parametrize("temperature", [None, 0.7], ids=["hard_ppv", "soft_ppv"])
def test_rocket_kernels(harness, temperature):
    t, case = rocket_case(4, 3, 50, 12, temperature)
    out = harness(case)
    x, lengths, kernels, grad = t["x"], t["lengths"], t["kernels"], t["grad"]
    n, C, T = x.shape
    K = kernels[2].numel()
    for mode in ("float64", "float32_fma", "float32"):
        features, argmax = OPS._rocket_convolve_forward(x, *kernels, mode, lengths, temperature)
        assert same_bits(as_tensor(out[f"{mode}_features"], torch.float32, (n, 2 * K)), features), mode
        assert same_bits(as_tensor(out[f"{mode}_argmax"], torch.int64, (n, K)), argmax), mode
        gx, gw, gb = OPS._rocket_convolve_backward(grad, x, *kernels, argmax, mode, lengths, temperature)
        assert same_bits(as_tensor(out[f"{mode}_x_grad"], torch.float64, (n, C, T)), gx), mode
        assert same_bits(as_tensor(out[f"{mode}_w_grad"], torch.float64, gw.shape).float(), gw), mode
        assert same_bits(as_tensor(out[f"{mode}_b_grad"], torch.float64, (K,)).float(), gb), mode
    for dtype in (torch.float64, torch.float32):
        want = OPS.rocket_normalise(x.to(dtype), lengths)
        assert same_bits(as_tensor(out[f"normalised_{str(dtype).split('.')[-1]}"], dtype, (n, C, T)), want)


def minirocket_cases(emu):
    """Both kernels: multichannel combinations beside a dilation on one channel (transform_kernel
    and dilation_kernel, one position a thread), and a univariate series of 1,100 positions
    (dilation_kernel, 8 positions a thread, two passes)."""
    return [minirocket_case(emu, 5, 2, 60, 840, one_channel_dilation_at=(0, 1)),
            minirocket_case(emu, 2, 1, 1100, 840)]


def test_minirocket_kernels(harness, emu):
    for t, case in minirocket_cases(emu):
        out = harness(case)
        want = OPS.minirocket_transform(t["x"], *t["params"], t["lengths"])
        assert same_bits(as_tensor(out["features"], torch.float32, want.shape), want)


def multirocket_cases(emu):
    """Both kernels: multichannel combinations beside a dilation on one channel (transform_kernel
    and dilation_kernel, both representations), and a univariate series of 300 positions
    (dilation_kernel, three chunks)."""
    return [multirocket_case(emu, 4, 2, 50, 336, one_channel_dilation_at=(0, 1)),
            multirocket_case(emu, 2, 1, 300, 168)]


def test_multirocket_kernels(harness, emu):
    for t, case in multirocket_cases(emu):
        out = harness(case)
        want = OPS.multirocket_transform(t["x"], *t["arguments"], t["lengths"])
        assert same_bits(as_tensor(out["features"], torch.float32, want.shape), want)
        assert as_tensor(out["overflow"], torch.int32, (1,)).item() == 0


def test_hydra_kernels(harness):
    t, case = hydra_case(5, 3, 40, 8, 16)
    out = harness(case)
    want = OPS.hydra_transform(t["x"], t["weights"], t["channels"], t["lengths"])
    assert same_bits(as_tensor(out["features"], torch.float32, want.shape), want)
    rows, weights = OPS._hydra_transform_backward(t["grad"], t["x"], t["weights"], t["channels"], t["lengths"])
    assert same_bits(as_tensor(out["grad_rows"], torch.float32, rows.shape), rows)
    assert same_bits(as_tensor(out["grad_w"], torch.float32, weights.shape), weights)


def test_rocket_and_minirocket_keep_their_bits_under_fma_contraction(harness, contracted, emu):
    # nvcc contracts a multiply feeding an add into one FMA unless the code rounds explicitly
    # (_rn intrinsics): aeon's arithmetic, which the CPU kernels reproduce, never fuses where it
    # does not say so, so neither may the CUDA kernels.
    cases = [rocket_case(4, 3, 50, 12, temperature)[1] for temperature in (None, 0.7)]
    cases += [case for _, case in minirocket_cases(emu)]
    cases += [case for _, case in multirocket_cases(emu)]
    cases.append(hydra_case(5, 3, 40, 8, 16)[1])
    for case in cases:
        got, want = contracted(case), harness(case)
        differing = sorted(k for k in want if got[k] != want[k])
        assert not differing, f"{case[0]}: {differing} differ under FMA contraction"


def assert_softdtw_close(got, want, dtype, tolerance):
    """Two harness runs' SoftDTW results within `tolerance` of each output's largest value (float32
    tables as hi + lo), the same +inf cells and invalid flags."""
    for name in want:
        if name.endswith("_invalid"):
            assert got[name] == want[name], name
            continue
        kind = torch.float64 if "acc" in name or "hess" in name or dtype == torch.float64 else torch.float32
        a, b = (torch.frombuffer(bytearray(r[name]), dtype=kind).double() for r in (got, want))
        if name.endswith("_R") and dtype == torch.float32:  # (hi, lo) pairs
            a, b = a.view(-1, 2).sum(1), b.view(-1, 2).sum(1)
        assert torch.equal(torch.isinf(a), torch.isinf(b)), name
        finite = torch.isfinite(b)
        if finite.any():
            error = ((a[finite] - b[finite]).abs().max() / b[finite].abs().max().clamp(min=1e-300)).item()
            assert error <= tolerance, f"{name}: max error {error:.2e} relative to its largest value"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_softdtw_within_rounding_under_fma_contraction(harness, contracted, dtype):
    # SoftDTW promises no bits across devices: under contraction its results move by float rounding.
    case = softdtw_case(3, 130, 70, 3, 40, True, dtype)[1]
    assert_softdtw_close(contracted(case), harness(case), dtype, 1e-12 if dtype == torch.float64 else 2e-6)


def build_architectures():
    """The build's TORCH_CUDA_ARCH_LIST entries ("7.5", "9.0+PTX"), or sm_75 and sm_90 for a CPU build."""
    arch_list = softdtw_torch.info().get("cuda_arch_list") or "7.5;9.0+PTX"
    return [a for a in arch_list.replace(" ", ";").split(";") if a]


def test_harness_builds_with_nvcc(tmp_path):
    # The same source, compiled by nvcc, makes the program a GPU (or a GPU simulator) runs: what the
    # CPU builds above run, launch for launch. For the newest architecture the library is built for
    # (the library's build has compiled the same device code for each of them).
    if harness_cases.nvcc() is None:
        pytest.skip("nvcc not found (CI compiles the CUDA kernels and has it)")
    exe = tmp_path / "harness-nvcc"
    harness_cases.build_with_nvcc(exe, build_architectures()[-1:])
    assert exe.stat().st_size > 0


@pytest.mark.needs_cuda
def test_gpu_runs_what_ci_runs(harness, emu, tmp_path):
    # On a GPU: the nvcc build of the harness on the cases above, against the emulated plain build.
    # ROCKET with the hard PPV and MiniRocket must give the CPU's bits; the soft PPV goes through
    # CUDA's exp (within 1 ulp of the host's), SoftDTW through CUDA's math library: float rounding.
    exe = tmp_path / "harness-gpu"
    major, minor = torch.cuda.get_device_capability()
    harness_cases.build_with_nvcc(exe, [f"{major}.{minor}"])
    counter = iter(range(100))
    gpu = lambda case: harness_cases.run(exe, case, tmp_path / f"case{next(counter)}")  # noqa: E731
    for case in (rocket_case(4, 3, 50, 12, None)[1], *(case for _, case in minirocket_cases(emu)),
                 *(case for _, case in multirocket_cases(emu)), hydra_case(5, 3, 40, 8, 16)[1]):
        got, want = gpu(case), harness(case)
        assert not [k for k in want if got[k] != want[k]], case[0]
    case = rocket_case(4, 3, 50, 12, 0.7)[1]
    got, want = gpu(case), harness(case)
    for name in want:
        if name.endswith("argmax"):
            assert got[name] == want[name], name
            continue
        kind = torch.float32 if name.endswith("features") or name.startswith("normalised_float32") else torch.float64
        a, b = (torch.frombuffer(bytearray(r[name]), dtype=kind).double() for r in (got, want))
        assert ((a - b).abs().max() / b.abs().max().clamp(min=1e-300)).item() <= 1e-6, name
    for dtype in (torch.float32, torch.float64):
        case = softdtw_case(3, 130, 70, 3, 40, True, dtype)[1]
        assert_softdtw_close(gpu(case), harness(case), dtype, 1e-10 if dtype == torch.float64 else 1e-4)
