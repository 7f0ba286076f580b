"""Seeded ROCKET kernel generation (rocket_generate_kernels) against aeon's own numba generator,
the MT19937 / numpy-legacy stream of csrc/common/numpy_random.h against numpy's RandomState, and the
conversions to and from aeon's kernels tuple."""
import io
import math
import os
import shutil
import subprocess
import sys
import textwrap
from fractions import Fraction

import numpy as np
import pytest
import torch

import softdtw_torch  # noqa: F401  (registers the operators)
from conftest import DEVICES
from softdtw_torch.rocket import RocketKernels, generate_kernels, kernels_from_aeon, kernels_to_aeon

aeon_rocket = pytest.importorskip("aeon.transformations.collection.convolution_based._rocket")
aeon_generate = aeon_rocket._generate_kernels  # numba; note its argument order (T, K, C, seed)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OP = torch.ops.softdtw_torch.rocket_generate_kernels
AEON_DTYPES = (np.float32, np.int32, np.float32, np.int32, np.int32, np.int32, np.int32)


# ---------------------------------------------------------------------------------------------
# csrc/common/numpy_random.h, compiled on its own into a tiny driver, against numpy's RandomState.

DRIVER = r"""
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include "common/numpy_random.h"

// Reads commands from stdin, prints one value per line (doubles in hex, so exactly).
int main() {
  std::unique_ptr<softdtw_torch::NumpyLegacyRandom> rng;
  std::string cmd;
  while (std::cin >> cmd) {
    long long n = 0;
    if (cmd == "seed") {
      unsigned long long s; std::cin >> s;
      rng.reset(new softdtw_torch::NumpyLegacyRandom(s));
    } else if (cmd == "u32") {
      std::cin >> n; for (long long i = 0; i < n; ++i) std::printf("%u\n", rng->next_u32());
    } else if (cmd == "double") {
      std::cin >> n; for (long long i = 0; i < n; ++i) std::printf("%a\n", rng->next_double());
    } else if (cmd == "uniform") {
      double lo, hi; std::cin >> lo >> hi >> n;
      for (long long i = 0; i < n; ++i) std::printf("%a\n", rng->uniform(lo, hi));
    } else if (cmd == "randint") {
      long long bound; std::cin >> bound >> n;
      for (long long i = 0; i < n; ++i) std::printf("%lld\n", static_cast<long long>(rng->randint(bound)));
    } else if (cmd == "normal") {
      std::cin >> n; for (long long i = 0; i < n; ++i) std::printf("%a\n", rng->normal());
    } else if (cmd == "fused") {
      std::cin >> n; for (long long i = 0; i < n; ++i) std::printf("%a\n", rng->normal_fused());
    } else if (cmd == "perm") {
      std::cin >> n;
      for (int v : rng->permutation(static_cast<int>(n))) std::printf("%d ", v);
      std::printf("\n");
    } else {
      std::fprintf(stderr, "unknown command %s\n", cmd.c_str());
      return 1;
    }
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def header_driver(tmp_path_factory):
    cxx = shutil.which(os.environ.get("CXX", "c++"))
    if cxx is None:
        pytest.skip("needs a C++ compiler to build the common/numpy_random.h driver")
    tmp = tmp_path_factory.mktemp("rocket_random")
    src, exe = tmp / "driver.cpp", tmp / "driver"
    src.write_text(DRIVER)
    # The same floating-point flags as setup.py's build of the extension.
    subprocess.run(
        [cxx, "-std=c++17", "-O3", "-ffp-contract=off", "-I", os.path.join(REPO, "csrc"), str(src), "-o", str(exe)],
        check=True,
    )

    def run(commands):
        out = subprocess.run([str(exe)], input=commands, capture_output=True, text=True, check=True).stdout
        return out.splitlines()

    return run


def as_doubles(lines):
    return np.array([float.fromhex(v) for v in lines])


SEEDS = [0, 1, 42, 123456789, 2**31 - 1, 2**32 - 1]


@pytest.mark.parametrize("seed", SEEDS)
def test_header_raw_stream_and_doubles(header_driver, seed):
    # 2,000 words cross several MT19937 twists; numpy draws raw words for randint(0, 2**32, uint32).
    lines = header_driver(f"seed {seed} u32 2000 double 1000 uniform -1 1 300 uniform 0 3.584962500721156 300 "
                          f"uniform 0 -2.584962500721156 100")
    rs = np.random.RandomState(seed)
    assert [int(v) for v in lines[:2000]] == rs.randint(0, 2**32, size=2000, dtype=np.uint32).tolist()
    np.testing.assert_array_equal(as_doubles(lines[2000:3000]), rs.random_sample(1000))
    np.testing.assert_array_equal(as_doubles(lines[3000:3300]), rs.uniform(-1, 1, 300))
    np.testing.assert_array_equal(as_doubles(lines[3300:3600]), rs.uniform(0, 3.584962500721156, 300))
    np.testing.assert_array_equal(as_doubles(lines[3600:3700]), rs.uniform(0, -2.584962500721156, 100))


def test_header_seed_keeps_low_32_bits(header_driver):
    lines = header_driver(f"seed {2**32 + 7} u32 5 seed {2**40 + 2**32 * 3 + 7} u32 5")
    expected = np.random.RandomState(7).randint(0, 2**32, size=5, dtype=np.uint32).tolist()
    assert [int(v) for v in lines] == expected + expected


@pytest.mark.parametrize("seed", [0, 5, 2**32 - 1])
def test_header_randint(header_driver, seed):
    bounds = [2, 3, 5, 7, 11, 12, 100, 1000, 2**31 + 1, 2**32 - 1, 2**32, 2**32 + 3, 2**40 + 5]
    lines = header_driver(f"seed {seed} " + " ".join(f"randint {n} 200" for n in bounds))
    rs = np.random.RandomState(seed)
    expected = np.concatenate([rs.randint(0, n, size=200) for n in bounds])
    assert [int(v) for v in lines] == expected.tolist()


def test_header_randint_of_one_draws_nothing(header_driver):
    lines = header_driver("seed 3 randint 1 50 double 2")
    rs = np.random.RandomState(3)
    assert [int(v) for v in lines[:50]] == rs.randint(0, 1, size=50).tolist() == [0] * 50
    np.testing.assert_array_equal(as_doubles(lines[50:]), rs.random_sample(2))


@pytest.mark.parametrize("seed", SEEDS)
def test_header_normal_and_its_cache(header_driver, seed):
    # An odd count leaves a cached value; it survives the other draws and comes out next.
    lines = header_driver(f"seed {seed} normal 2001 double 3 randint 12 4 normal 4 uniform -1 1 1 normal 1")
    rs = np.random.RandomState(seed)
    expected = [
        *rs.standard_normal(2001),
        *rs.random_sample(3),
        *rs.randint(0, 12, size=4),
        *rs.standard_normal(4),
        rs.uniform(-1, 1),
        rs.standard_normal(),
    ]
    got = [*as_doubles(lines[:2004]), *map(int, lines[2004:2008]), *as_doubles(lines[2008:])]
    assert got == expected


@pytest.mark.parametrize("seed", [0, 9, 2**32 - 1])
def test_header_permutation(header_driver, seed):
    sizes = [1, 2, 3, 4, 10, 12, 100, 1000]
    lines = header_driver(f"seed {seed} " + " ".join(f"perm {n} perm {n}" for n in sizes) + " double 1")
    rs = np.random.RandomState(seed)
    for i, n in enumerate(s for s in sizes for _ in range(2)):
        assert [int(v) for v in lines[i].split()] == rs.permutation(n).tolist()
    assert float.fromhex(lines[-1]) == rs.random_sample()


def fused_normals_mirror(seed, count):
    """numba's fastmath polar method (r2 = fma(x2, x2, x1 * x1)), in float64 from numpy's doubles;
    the fma is computed exactly with fractions and rounded once."""
    rs = np.random.RandomState(seed)
    out, cached = [], None
    while len(out) < count:
        if cached is not None:
            out.append(cached)
            cached = None
            continue
        while True:
            x1 = 2.0 * rs.random_sample() - 1.0
            x2 = 2.0 * rs.random_sample() - 1.0
            r2 = float(Fraction(x2) * Fraction(x2) + Fraction(x1 * x1))
            if r2 < 1.0 and r2 != 0.0:
                break
        f = math.sqrt(-2.0 * math.log(r2) / r2)
        cached = f * x1
        out.append(f * x2)
    return out


@pytest.mark.parametrize("seed", [0, 1, 77, 2**32 - 1])
def test_header_fused_normal(header_driver, seed):
    fused = as_doubles(header_driver(f"seed {seed} fused 3001"))
    assert fused.tolist() == fused_normals_mirror(seed, 3001)
    # The single rounding of r2 really changes draws now and then, so the variant matters.
    assert (fused != np.random.RandomState(seed).standard_normal(3001)).any()


# ---------------------------------------------------------------------------------------------
# The generator against aeon's numba _generate_kernels.


def aeon_kernels(n_timepoints, n_channels, n_kernels, seed):
    return aeon_generate(n_timepoints, n_kernels, n_channels, seed)


def numba_target_cpu():
    import numba
    import llvmlite.binding as llvm

    return numba.config.CPU_NAME or llvm.get_host_cpu_name()


# numba targets where aeon's weights were measured bit-identical to ours: znver4 (the development
# machine, whose LLVM IR for aeon's row mean the C++ order follows), and znver5, x86-64 and x86-64-v2
# run with NUMBA_CPU_NAME. There rows of 7 are summed left to right. Under AVX2-style targets (Intel and AMD up to Zen 3, and Intel AVX-512 CPUs, which LLVM tunes to
# prefer 256-bit vectors) rows of 7 go through a 4-lane tree: see test_weights_under_avx2_numba.
BIT_EXACT_TARGETS = {"znver4", "znver5", "x86-64-v2", "x86-64"}


def row_scale_and_length(weights, lengths, num_channel_indices):
    """Per weight, the largest |weight| of its (channel) row, and the row's length."""
    scale = np.empty(weights.shape, np.float32)
    row_length = np.empty(weights.shape, np.int64)
    offset = 0
    for length, rows in zip(np.asarray(lengths).tolist(), np.asarray(num_channel_indices).tolist()):
        for _ in range(rows):
            scale[offset : offset + length] = np.abs(weights[offset : offset + length]).max()
            row_length[offset : offset + length] = length
            offset += length
    return scale, row_length


def assert_weights_match_aeon(w, aw, lengths, num_channel_indices, exact):
    """Weights bit-identical to aeon's; or, where numba sums rows of 7 in its 4-lane order (not
    exact), identical in every row of 9 or 11 and within 12 float32 ulps of the row's largest
    |weight| in rows of 7. The bound is the error analysis of two orders of a 7-term float32 sum
    (each within 6u·Σ|x|, u = 2^-24; the difference, divided by 7 for the mean, is at most
    12u·max|x| <= 12 ulps of the row's scale, plus the rounding of the stored difference, which
    the largest-|weight| ulp absorbs). Measured: <= 3 ulps under NUMBA_CPU_NAME=haswell on a Zen 4
    host, <= 5 ulps with numba targeting znver3, over about 220,000 rows each."""
    identical = w.view(np.int32) == aw.view(np.int32)
    if exact:
        assert identical.all()
        return int(identical.sum())
    scale, row_length = row_scale_and_length(aw, lengths, num_channel_indices)
    assert identical[row_length != 7].all()
    sevens = row_length == 7
    np.testing.assert_array_less(np.abs(w.astype(np.float64) - aw)[sevens], 12.5 * np.spacing(scale[sevens]))
    return int(identical.sum())


def compare_with_aeon(ours, theirs, exact_weights):
    """Every non-weight field identical (values and dtypes); weights identical, or within a few float32
    ulps of their row's scale where numba sums a row in another order. Returns #identical weights."""
    assert len(ours) == len(theirs) == 7
    names = RocketKernels._fields
    for name, a, b, dtype in zip(names, ours, theirs, AEON_DTYPES):
        assert a.device.type == "cpu" and a.is_contiguous() and a.dim() == 1, name
        assert b.dtype == dtype and a.numpy().dtype == dtype, name
    for name, a, b in list(zip(names, ours, theirs))[1:]:
        np.testing.assert_array_equal(a.numpy(), b, err_msg=name)
    w, aw = ours.weights.numpy(), theirs[0]
    assert w.shape == aw.shape
    return assert_weights_match_aeon(w, aw, theirs[1], theirs[5], exact_weights)


# Shapes from the brief: T in 2..5000 (T < L_i gives aeon's dilation 0), C in 1..12, K up to 10,000.
AEON_CASES = [
    (2, 1, 300, 0),
    (3, 2, 300, 1),
    (5, 3, 500, 2),
    (7, 1, 500, 3),
    (8, 4, 500, 4),
    (10, 12, 1000, 5),
    (11, 5, 1000, 6),
    (12, 7, 1000, 7),
    (100, 1, 10_000, 0),
    (150, 3, 10_000, 42),
    (1000, 6, 10_000, 2021),
    (5000, 12, 10_000, 2**31 - 1),
    (640, 9, 2000, 2**32 - 1),
    (57, 11, 3000, 123456789),
]


@pytest.mark.parametrize("n_timepoints,n_channels,n_kernels,seed", AEON_CASES)
def test_generate_matches_aeon(n_timepoints, n_channels, n_kernels, seed):
    ours = generate_kernels(n_timepoints, n_channels, n_kernels, seed)
    theirs = aeon_kernels(n_timepoints, n_channels, n_kernels, seed)
    compare_with_aeon(ours, theirs, exact_weights=numba_target_cpu() in BIT_EXACT_TARGETS)
    if n_timepoints < 7:
        # Shorter than every kernel: aeon's exponent range is negative, dilation 0, padding 0.
        assert (ours.dilations == 0).all() and (ours.paddings == 0).all()


def test_generate_matches_aeon_on_a_grid_of_shapes():
    # Every non-weight field over many (T, C, seed): the int32(2 ** u) truncations of the
    # channel counts and dilations are where a last-bit difference (pow vs exp2) would show.
    exact = numba_target_cpu() in BIT_EXACT_TARGETS
    n_weights = n_identical = 0
    for n_timepoints in [2, 3, 4, 6, 9, 10, 11, 13, 16, 33, 65, 129, 200, 257, 1000, 1025, 4097, 5000]:
        for n_channels in range(1, 13):
            seed = n_timepoints * 13 + n_channels
            ours = generate_kernels(n_timepoints, n_channels, 400, seed)
            n_identical += compare_with_aeon(ours, aeon_kernels(n_timepoints, n_channels, 400, seed), exact)
            n_weights += ours.weights.numel()
    assert n_weights > 0 and (not exact or n_identical == n_weights)


def test_seed_keeps_low_32_bits_like_numba():
    ours = generate_kernels(60, 3, 200, 2**32 + 5)
    for a, b in zip(ours, generate_kernels(60, 3, 200, 5)):
        assert torch.equal(a, b)
    # numba's np.random.seed takes a uint32 too.
    compare_with_aeon(ours, aeon_kernels(60, 3, 200, 2**32 + 5), numba_target_cpu() in BIT_EXACT_TARGETS)


def test_kernel_structure():
    k = generate_kernels(300, 5, 2000, 11)
    assert set(k.lengths.tolist()) == {7, 9, 11}
    m = k.num_channel_indices.long()
    assert ((m >= 1) & (m <= 5)).all()
    assert k.weights.numel() == int((m * k.lengths.long()).sum()) and k.channel_indices.numel() == int(m.sum())
    assert ((k.biases >= -1) & (k.biases < 1)).all()
    assert ((k.dilations >= 1) & (k.dilations <= (300 - 1) // (k.lengths - 1))).all()
    odd = k.paddings != 0
    assert torch.equal(k.paddings[odd], (k.lengths[odd] - 1) * k.dilations[odd] // 2)
    # Rows are mean-centred and a kernel's channels are distinct.
    offset, c_offset = 0, 0
    for length, rows in zip(k.lengths.tolist(), m.tolist()):
        w = k.weights[offset : offset + rows * length].double().view(rows, length)
        assert w.mean(1).abs().max() < 1e-6
        channels = k.channel_indices[c_offset : c_offset + rows].tolist()
        assert len(set(channels)) == rows and all(0 <= c < 5 for c in channels)
        offset, c_offset = offset + rows * length, c_offset + rows


def test_deterministic_across_calls_and_thread_counts():
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = generate_kernels(500, 4, 3000, 99)
        torch.set_num_threads(max(2, threads))
        many = generate_kernels(500, 4, 3000, 99)
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(one, many):
        assert torch.equal(a, b)
    assert not torch.equal(generate_kernels(500, 4, 3000, 98).biases, one.biases)


def avx2_numba_available():
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    return features.get("avx2", False) and features.get("fma", False)


@pytest.mark.slow  # numba compiles aeon's generator for AVX2 in a subprocess: 9-25 s
@pytest.mark.skipif(sys.platform != "linux", reason="emulates a numba target CPU on x86-64 Linux")
def test_weights_under_avx2_numba(tmp_path):
    """The documented difference: aeon compiled for an AVX2 target (NUMBA_CPU_NAME=haswell, which an
    AVX-512 host also runs) sums rows of 7 in a 4-lane tree, so some weights of 7-long rows differ
    by a few ulps; every other field, and every row of 9 or 11, stays identical."""
    if not avx2_numba_available():
        pytest.skip("needs a host that runs AVX2 + FMA code")
    cases = [(100, 1, 2000, 0), (500, 3, 2000, 1), (50, 12, 1000, 7)]
    code = textwrap.dedent(
        f"""
        import numpy as np
        from aeon.transformations.collection.convolution_based._rocket import _generate_kernels
        out = {{}}
        for i, (t, c, k, s) in enumerate({cases!r}):
            for j, a in enumerate(_generate_kernels(t, k, c, s)):
                out[f"{{i}}_{{j}}"] = a
        np.savez({str(tmp_path / 'aeon.npz')!r}, **out)
        """
    )
    env = dict(os.environ, NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES="", NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    saved = np.load(tmp_path / "aeon.npz")
    differing_rows = 0
    for i, case in enumerate(cases):
        ours = generate_kernels(*case)
        theirs = [saved[f"{i}_{j}"] for j in range(7)]
        compare_with_aeon(ours, theirs, exact_weights=False)
        offset = 0
        for length, rows in zip(ours.lengths.tolist(), ours.num_channel_indices.tolist()):
            for _ in range(rows):
                row = slice(offset, offset + length)
                same = np.array_equal(ours.weights[row].numpy(), theirs[0][row])
                assert same or length == 7
                differing_rows += not same
                offset += length
    assert differing_rows > 0  # the test does see the other order


# ---------------------------------------------------------------------------------------------
# Errors, TorchScript, torch.compile.


@pytest.mark.parametrize(
    "args,message",
    [
        ((100, 1, 0, 0), "rocket_generate_kernels: expected n_kernels >= 1, got 0"),
        ((100, 1, -5, 0), "rocket_generate_kernels: expected n_kernels >= 1, got -5"),
        ((100, 0, 10, 0), r"rocket_generate_kernels: expected n_channels in \[1, 2147483647\], got 0"),
        ((100, 2**31, 10, 0), r"rocket_generate_kernels: expected n_channels in \[1, 2147483647\], got 2147483648"),
        ((1, 1, 10, 0), r"rocket_generate_kernels: expected n_timepoints in \[2, 2147483647\], got 1"),
        ((-3, 1, 10, 0), r"rocket_generate_kernels: expected n_timepoints in \[2, 2147483647\], got -3"),
        ((2**31, 1, 10, 0), r"rocket_generate_kernels: expected n_timepoints in \[2, 2147483647\], got 2147483648"),
        ((100, 1, 10, -1), "rocket_generate_kernels: expected seed >= 0, got -1"),
    ],
)
def test_errors(args, message):
    with pytest.raises(ValueError, match=message):
        OP(*args)
    # The function's errors name the function the user called.
    with pytest.raises(ValueError, match="^" + message.replace("rocket_generate_kernels:", "generate_kernels:")):
        generate_kernels(*args)
    # The fake kernel (torch.compile, opcheck) raises the same message.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(), pytest.raises(ValueError, match=message):
        OP(*args)


def test_torchscript_script_save_load():
    def fn(n_timepoints: int, n_channels: int, n_kernels: int, seed: int):
        return torch.ops.softdtw_torch.rocket_generate_kernels(n_timepoints, n_channels, n_kernels, seed)

    eager = fn(321, 4, 500, 8)
    for scripted in (torch.jit.script(fn), torch.jit.script(generate_kernels)):
        buffer = io.BytesIO()
        torch.jit.save(scripted, buffer)
        buffer.seek(0)
        loaded = torch.jit.load(buffer)
        for out in (scripted(321, 4, 500, 8), loaded(321, 4, 500, 8)):
            assert len(out) == 7
            for a, b in zip(out, eager):
                assert torch.equal(a, b)
    with pytest.raises(Exception, match="rocket_generate_kernels: expected seed >= 0, got -2"):
        torch.jit.script(generate_kernels)(10, 1, 3, -2)


@pytest.mark.slow  # torch.compile (Inductor) from an empty cache: about 9 s
def test_compile_fullgraph_static_matches_eager():
    def fn(x):
        k = torch.ops.softdtw_torch.rocket_generate_kernels(200, 3, 300, 17)
        return x + k[2], k[0], k[6]  # elementwise only: inductor may reorder sums

    x = torch.randn(300)
    compiled = torch.compile(fn, fullgraph=True)
    for a, b in zip(compiled(x), fn(x)):
        assert torch.equal(a, b)


def test_compile_with_dynamic_shapes_specialises_the_ints():
    from torch._dynamo.testing import CompileCounter

    def fn(x, n_kernels: int):
        k = torch.ops.softdtw_torch.rocket_generate_kernels(200, 3, n_kernels, 17)
        return x + k[2][:3], k[0], k[6].shape[0]

    counter = CompileCounter()
    compiled = torch.compile(fn, backend=counter, dynamic=True, fullgraph=True)
    x = torch.randn(3)
    for n in (10, 20, 35):
        got, expected = compiled(x, n), fn(x, n)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1]) and got[2] == expected[2]
    # The schema takes `int`, not `SymInt`: the dispatcher specialises n_kernels, so each new value
    # recompiles (documented) and every graph has exact static output sizes.
    assert counter.frame_count == 3


# ---------------------------------------------------------------------------------------------
# Conversions to and from aeon's tuple.


def aeon_fitted_rocket(n_channels, n_timepoints, n_kernels, seed):
    from aeon.transformations.collection.convolution_based import Rocket

    X = np.random.RandomState(seed).randn(6, n_channels, n_timepoints)
    return Rocket(n_kernels=n_kernels, random_state=seed).fit(X), X


def test_from_aeon_matches_generate():
    rocket, _ = aeon_fitted_rocket(3, 40, 250, 4)
    k = kernels_from_aeon(rocket.kernels)
    assert isinstance(k, RocketKernels)
    for t, array in zip(k, rocket.kernels):
        np.testing.assert_array_equal(t.numpy(), array)
        assert np.shares_memory(t.numpy(), array)  # no conversion needed: shared, like torch.as_tensor
    compare_with_aeon(generate_kernels(40, 3, 250, 4), rocket.kernels, numba_target_cpu() in BIT_EXACT_TARGETS)


def test_to_aeon_is_accepted_by_aeon():
    rocket, X = aeon_fitted_rocket(2, 30, 120, 9)
    expected = rocket.transform(X)
    arrays = kernels_to_aeon(kernels_from_aeon(rocket.kernels))
    assert isinstance(arrays, tuple) and len(arrays) == 7
    for array, dtype in zip(arrays, AEON_DTYPES):
        assert type(array) is np.ndarray and array.dtype == dtype and array.flags.c_contiguous
    other, _ = aeon_fitted_rocket(2, 30, 120, 10)
    other.kernels = arrays
    np.testing.assert_array_equal(other.transform(X), expected)
    # And aeon runs our generator's kernels.
    ours = kernels_to_aeon(generate_kernels(30, 2, 120, 9))
    features = aeon_rocket._apply_kernels(X.astype(np.float32), ours)
    assert features.shape == (6, 240) and features.dtype == np.float32


@pytest.mark.parametrize("device", DEVICES)
def test_to_aeon_from_tensors_on_any_device(device):
    k = generate_kernels(50, 2, 40, 1)
    arrays = kernels_to_aeon([t.to(device) for t in k])
    for array, t, dtype in zip(arrays, k, AEON_DTYPES):
        assert array.dtype == dtype
        np.testing.assert_array_equal(array, t.numpy())
    back = kernels_from_aeon(arrays)
    for a, b in zip(back, k):
        assert torch.equal(a, b)


def test_exact_dtype_conversions_are_accepted():
    k = generate_kernels(50, 3, 30, 2)
    widened = [
        k.weights.double().numpy(),
        k.lengths.long().numpy(),
        k.biases.numpy().astype(np.float64),
        k.dilations.numpy().astype(np.int64),
        k.paddings.numpy().astype(np.float32),  # integral floats convert exactly
        k.num_channel_indices.numpy().astype(np.int16),
        k.channel_indices.numpy().astype(">i8"),  # non-native byte order
    ]
    out = kernels_from_aeon(widened)
    for a, b in zip(out, k):
        assert a.dtype == b.dtype and torch.equal(a, b) and a.is_contiguous()
    strided = kernels_from_aeon([np.repeat(t.numpy(), 2)[::2] for t in k])  # non-contiguous views
    for a, b in zip(strided, k):
        assert a.is_contiguous() and torch.equal(a, b)


def replace(kernels, index, value):
    items = [t.numpy() for t in kernels]
    items[index] = value
    return items


@pytest.mark.parametrize("convert", [kernels_from_aeon, kernels_to_aeon])
def test_conversion_errors(convert):
    op = convert.__name__
    k = generate_kernels(50, 3, 30, 2)
    with pytest.raises(ValueError, match=f"{op}: expected aeon's 7-array kernels tuple .* got 6 items"):
        convert(list(k)[:6])
    with pytest.raises(ValueError, match=f"{op}: expected weights to be 1-D, got shape"):
        convert(replace(k, 0, k.weights.numpy().reshape(1, -1)))
    bad = k.weights.double().numpy().copy()
    bad[3] = 0.1  # not a float32 value
    message = rf"{op}: expected weights to be torch.float32 or exactly convertible .* 0.1 \(index 3\)"
    with pytest.raises(ValueError, match=message):
        convert(replace(k, 0, bad))
    with pytest.raises(ValueError, match=f"{op}: expected lengths to be torch.int32 or exactly convertible .* {2**40}"):
        convert(replace(k, 1, np.full(30, 2**40, dtype=np.int64)))
    with pytest.raises(ValueError, match=f"{op}: expected dilations to be torch.int32 or exactly convertible .* 1.5"):
        convert(replace(k, 3, np.full(30, 1.5)))
    with pytest.raises(TypeError, match=f"{op}: expected paddings to be torch.int32 .* got torch.bool"):
        convert(replace(k, 4, np.zeros(30, dtype=bool)))
    message = rf"{op}: expected biases to hold one value per kernel \(30, as lengths\), got 29"
    with pytest.raises(ValueError, match=message):
        convert(replace(k, 2, k.biases.numpy()[:29]))
    n_weights = k.weights.numel()
    with pytest.raises(ValueError, match=rf"{op}: expected weights of size .* = {n_weights}, got {n_weights - 1}"):
        convert(replace(k, 0, k.weights.numpy()[:-1]))
    n_indices = k.channel_indices.numel()
    message = rf"{op}: expected channel_indices of size .* = {n_indices}, got {n_indices + 1}"
    with pytest.raises(ValueError, match=message):
        convert(replace(k, 6, np.zeros(n_indices + 1, dtype=np.int32)))
