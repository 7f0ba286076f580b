"""MiniRocket operators and estimator against aeon 1.6 (the reference users compare with), a slow
readable reference for the x_lengths semantics, and the operator contracts (errors, fake kernels,
determinism, TorchScript, CUDA parity)."""
import itertools
import math

import numpy as np
import pytest
import torch

from conftest import DEVICES
from rocket_data import bits, load, random_walks
from softdtw_torch import NotFittedError, release_table_memory
from softdtw_torch.rocket import MiniRocket

import aeon.transformations.collection.convolution_based._minirocket as aeon_mr  # noqa: E402
AeonMiniRocket = aeon_mr.MiniRocket

ops = torch.ops.softdtw_torch
COMBINATIONS = list(itertools.combinations(range(9), 3))


def as_tensors(parameters, device="cpu"):
    return [torch.from_numpy(np.asarray(p)).to(device) for p in parameters]


# ---------------------------------------------------------------------------------------------
# Golden values from aeon's own tests (docs/design/rocket.md §6).

UNI = np.array(
    [list(range(1, 16)), [10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4], [5] * 15, [1, 2] * 7 + [1]], dtype=float
)[:, None, :]
MULTI = np.array(
    [
        (list(range(1, 12)), list(range(10, -1, -1))),
        (list(range(10, -1, -1)), [1] * 5 + [7] * 6),
        ([5] * 11, [5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5]),
        ([1, 2] * 5 + [1], [4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 8]),
    ],
    dtype=float,
)


@pytest.mark.parametrize(
    "X, expected", [(UNI, [0.4, 1.0, 1.0]), (MULTI, [0.27272728, 0.33333334, 0.8181818])], ids=["uni", "multi"]
)
def test_golden_values(X, expected):
    F = MiniRocket(n_kernels=100, random_state=0).fit_transform(X)
    assert F.shape == (4, 84) and F.dtype == np.float32
    np.testing.assert_array_equal([F[0][0], F[1][5], F[3][80]], np.float32(expected))


# ---------------------------------------------------------------------------------------------
# Parity with aeon on its bundled data sets: fit parameters identical, features bit-identical.


@pytest.mark.parametrize("name", ["UnitTest", "GunPoint", "BasicMotions", "ItalyPowerDemand"])
@pytest.mark.parametrize("seed", [0, 1234])
def test_fit_and_transform_match_aeon(name, seed):
    X_train, X_test = load(name, "TRAIN"), load(name, "TEST")
    aeon = AeonMiniRocket(random_state=seed).fit(X_train)
    ours = MiniRocket(random_state=seed).fit(X_train)
    for a, b in zip(aeon.parameters, ours.parameters):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert bits(ours.parameters[4]).tolist() == bits(aeon.parameters[4]).tolist()
    expected = aeon.transform(X_test)
    got = ours.transform(X_test)
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_array_equal(bits(got), bits(expected))


def test_transform_matches_aeon_with_aeon_parameters_12_channels():
    # JapaneseVowels: 12 channels, so combinations of up to 9 channels. Its length, 25, is one of
    # the few where numpy's AVX-512 pow changes aeon's dilations (see test_dilations_match_aeon),
    # so the parity contract is checked on aeon's own parameters.
    X_train, X_test = load("JapaneseVowels_eq", "TRAIN"), load("JapaneseVowels_eq", "TEST")
    aeon = AeonMiniRocket(n_kernels=2000, random_state=3).fit(X_train)
    ours = MiniRocket.from_parameters(aeon.parameters, n_channels=12, n_timepoints=25)
    np.testing.assert_array_equal(bits(ours.transform(X_test)), bits(aeon.transform(X_test)))


@pytest.mark.parametrize("n_channels", [1, 2, 3, 5, 9, 12])
@pytest.mark.parametrize("n_kernels, max_dilations", [(84, 32), (500, 4), (10_000, 32), (20_000, 64)])
def test_fit_parameters_match_aeon_on_random_data(n_channels, n_kernels, max_dilations):
    X = random_walks(7, n_channels, 61, seed=n_channels)
    for seed in (0, 99, 2**32 - 1):
        aeon = AeonMiniRocket(n_kernels=n_kernels, max_dilations_per_kernel=max_dilations, random_state=seed).fit(X)
        got = ops.minirocket_fit(torch.from_numpy(X), n_kernels, max_dilations, seed)
        for a, b in zip(aeon.parameters, got):
            assert b.dtype == {np.dtype(np.int32): torch.int32, np.dtype(np.float32): torch.float32}[a.dtype]
            np.testing.assert_array_equal(a, b.numpy())


@pytest.mark.parametrize("trial", range(12))
def test_fit_matches_aeon_on_integer_data(trial):
    # Integer-valued series put many quantiles exactly on float32 ties, where only numba's
    # fastmath rounding (fused (n-1)*0.01*p + 1 and (upper-lower)*m + lower) gives aeon's biases;
    # some -0.0 values check the signs of zero.
    rs = np.random.RandomState(trial)
    T = [9, 10, 17, 24, 30, 33, 40, 64, 100, 150, 151, 200][trial]
    X = rs.randint(-3, 4, size=(6, 1 + trial % 4, T)).astype(float)
    X[:, :, ::3] *= -0.0 if trial % 2 else 1.0
    aeon = AeonMiniRocket(n_kernels=2000, random_state=trial).fit(X)
    got = ops.minirocket_fit(torch.from_numpy(X), 2000, 32, trial)
    for a, b in zip(aeon.parameters, got):
        np.testing.assert_array_equal(bits(a) if a.dtype == np.float32 else a, bits(b) if a.dtype == np.float32 else b)
    np.testing.assert_array_equal(bits(ops.minirocket_transform(torch.from_numpy(X), *got)), bits(aeon.transform(X)))


def test_random_state_rules():
    X = random_walks(5, 2, 30)
    # A RandomState draws the seed like aeon: randint(2**31 - 1).
    aeon = AeonMiniRocket(n_kernels=168, random_state=np.random.RandomState(5)).fit(X)
    ours = MiniRocket(n_kernels=168, random_state=np.random.RandomState(5)).fit(X)
    for a, b in zip(aeon.parameters, ours.parameters):
        np.testing.assert_array_equal(a, b)
    assert ours.seed_ == np.random.RandomState(5).randint(np.iinfo(np.int32).max)
    # None: a fresh seed from numpy's global RNG, in [0, 2**31 - 1).
    np.random.seed(11)
    first = MiniRocket(n_kernels=168).fit(X)
    np.random.seed(11)
    second = MiniRocket(n_kernels=168).fit(X)
    assert first.seed_ == second.seed_ and 0 <= first.seed_ < 2**31 - 1
    np.testing.assert_array_equal(first.parameters[4], second.parameters[4])
    with pytest.raises(TypeError, match="MiniRocket: expected random_state to be None, an int or a numpy"):
        MiniRocket(random_state=np.random.default_rng(0)).fit(X)
    with pytest.raises(ValueError, match=r"MiniRocket: expected random_state in \[0, 2\*\*32 - 1\]"):
        MiniRocket(random_state=-1).fit(X)


# ---------------------------------------------------------------------------------------------
# Dilations. aeon computes int32(np.logspace(0, log2((T-1)/8), D, base=2)); the operator uses the C
# library's pow. numpy's vectorized pow on AVX-512 machines (SVML) is not correctly rounded, which
# changes aeon's dilations for a few lengths on such machines only.


def reference_dilations(n_timepoints, n_features, max_dilations, power):
    """aeon's _fit_dilations, with the power function as a parameter."""
    per_kernel = n_features // 84
    count = min(per_kernel, max_dilations)
    multiplier = per_kernel / count
    exponents = np.linspace(0, np.log2((n_timepoints - 1) / (9 - 1)), count)
    dilations, counts = np.unique(power(exponents).astype(np.int32), return_counts=True)
    per_dilation = (counts * multiplier).astype(np.int32)
    remainder, i = per_kernel - per_dilation.sum(), 0
    while remainder > 0:
        per_dilation[i] += 1
        remainder -= 1
        i = (i + 1) % len(per_dilation)
    return dilations, per_dilation


def libm_power(exponents):
    return np.array([math.pow(2.0, e) for e in exponents])


def numpy_power(exponents):
    return np.power(2.0, exponents)  # numpy's vectorized loop, as in aeon's np.logspace


@pytest.mark.parametrize("n_features, max_dilations", [(10_000, 32), (1_000, 5), (84, 32), (50_000, 64)])
def test_dilations_match_aeon(n_features, max_dilations):
    lengths = list(range(9, 400)) + [513, 1000, 1025, 1460, 2049, 4097, 19897]
    differing = []
    for T in lengths:
        x = torch.zeros(1, 1, T)
        _, _, dilations, per_dilation, _ = ops.minirocket_fit(x, n_features, max_dilations, 0)
        ours = (dilations.numpy(), per_dilation.numpy())
        aeon = aeon_mr._fit_dilations(T, n_features, max_dilations)
        libm = reference_dilations(T, n_features, max_dilations, libm_power)
        np.testing.assert_array_equal(ours[0], libm[0])
        np.testing.assert_array_equal(ours[1], libm[1])
        if not (np.array_equal(ours[0], aeon[0]) and np.array_equal(ours[1], aeon[1])):
            # Only where numpy's vectorized pow differs from libm's (and then aeon is reproduced
            # with numpy's pow): the documented machine-dependent difference.
            numpy_ref = reference_dilations(T, n_features, max_dilations, numpy_power)
            np.testing.assert_array_equal(aeon[0], numpy_ref[0])
            np.testing.assert_array_equal(aeon[1], numpy_ref[1])
            differing.append(T)
    assert len(differing) <= len(lengths) // 20, differing


def test_ppv_ratio_in_float32_is_the_rounded_float64_ratio():
    """The CPU kernel divides count / length in float32 on AVX-512 (lengths under 2^24) where aeon
    rounds the float64 quotient to float32: the same floats, because rounding to 53 bits and then
    to 24 is innocuous for a quotient of 24-bit numbers. Checked here for every count of every
    length up to 3000, and for random counts of random lengths up to 2^24 - 1."""
    length = np.concatenate([np.full(n + 1, n) for n in range(1, 3001)])
    count = np.concatenate([np.arange(n + 1) for n in range(1, 3001)])
    rng = np.random.default_rng(0)
    big = rng.integers(3001, 2**24, size=2_000_000)
    length = np.concatenate([length, big, big])
    count = np.concatenate([count, rng.integers(0, big + 1), big - rng.integers(0, 100, size=big.size)])
    via_float64 = (count.astype(np.float64) / length.astype(np.float64)).astype(np.float32)
    in_float32 = count.astype(np.float32) / length.astype(np.float32)
    np.testing.assert_array_equal(via_float64.view(np.int32), in_float32.view(np.int32))


# ---------------------------------------------------------------------------------------------
# x_lengths: each case transformed as if it were alone with its first x_lengths[i] time points.


def reference_transform(x, parameters, lengths, dtype=np.float32):
    """Slow readable MiniRocket transform of each case's first lengths[i] time points.

    Kernel (a, b, c) at dilation d has weight -1 at taps t + (g - 4)·d, g = 0..8, plus 3 at its
    three taps (+2 overall), zero outside the series. With dtype float32 the additions follow
    aeon's order (csrc/common/minirocket/math.h), so the result is exact; with float64 it is the same
    arithmetic without float32 rounding.
    """
    ncpc, channels, dilations, per_dilation, biases = (np.asarray(p) for p in parameters)
    n = x.shape[0]
    out = np.zeros((n, 84 * int(per_dilation.sum())), np.float32)
    for i in range(n):
        T = int(lengths[i])
        series = x[i, :, :T].astype(np.float32).astype(dtype)

        def shifted(row, s):  # row[t + s], 0 outside the series
            out_row = np.zeros(T, dtype)
            if abs(s) < T:
                if s >= 0:
                    out_row[: T - s] = row[s:]
                else:
                    out_row[-s:] = row[: T + s]
            return out_row

        feature, channel_start, combination = 0, 0, 0
        for di, d in enumerate(int(v) for v in dilations):
            for k, (a, b, c) in enumerate(COMBINATIONS):
                conv = np.zeros(T, dtype)
                for ch in channels[channel_start : channel_start + ncpc[combination]]:
                    row = series[ch]
                    alpha = -row
                    for o in (-4, -3, -2, -1, 1, 2, 3, 4):
                        alpha = alpha + -shifted(row, o * d)
                    gamma = [dtype(3) * shifted(row, (g - 4) * d) for g in (a, b, c)]
                    conv = conv + (((alpha + gamma[0]) + gamma[1]) + gamma[2])
                segment = conv if (di + k) % 2 == 0 else conv[4 * d : max(T - 4 * d, 4 * d)]
                for _ in range(per_dilation[di]):
                    out[i, feature] = np.mean(segment > biases[feature]) if segment.size else 0.0
                    feature += 1
                channel_start += ncpc[combination]
                combination += 1
    return out


@pytest.mark.parametrize("n_channels", [1, 3])
def test_x_lengths_against_reference(n_channels):
    X = random_walks(6, n_channels, 80, seed=2)
    rocket = MiniRocket(n_kernels=84 * 6, random_state=7).fit(X)  # dilations up to 9
    lengths = np.array([80, 61, 40, 33, 17, 9])
    padded = X.copy()
    for i, T in enumerate(lengths):
        padded[i, :, T:] = np.nan  # never read
    got = rocket.transform(padded, x_lengths=lengths)
    expected = reference_transform(X, rocket.parameters, lengths)
    np.testing.assert_array_equal(bits(got), bits(expected))
    # Kernels whose unpadded output is empty (odd (dilation index + kernel), T <= 8d) give 0.
    _, _, dilations, per_dilation, _ = rocket.parameters
    empty = np.concatenate(
        [[(di + k) % 2 == 1 and lengths[-1] <= 8 * d] * nf for di, (d, nf) in enumerate(zip(dilations, per_dilation)) for k in range(84)]
    )
    assert empty.sum() > 0 and (got[-1, empty] == 0).all()
    # The same arithmetic in float64 could only flip comparisons that sit on a bias (none here).
    f64 = reference_transform(X, rocket.parameters, lengths, dtype=np.float64)
    assert np.mean(got != f64) < 0.01
    # The full-length case is the plain transform.
    np.testing.assert_array_equal(bits(got[:1]), bits(rocket.transform(X[:1])))


# ---------------------------------------------------------------------------------------------
# Several kernels a counting pass: on the avx512 path (csrc/common/cpu.h) the one-channel kernels
# of a dilation on one shared channel are counted up to 8 a pass, as many as 32 counters hold
# (kernels_per_pass in csrc/minirocket/cpu/kernel.cpp: 8 for nb <= 4 biases a kernel, 6 for 5, 5
# for 6, 4 for 7-8, 3 for 9-10, 2 for 11-16), and as many as keep a window of 2 rows a kernel
# within 8,192 floats (at most 7 on series longer than 512 points, 6 above 585, 5 above 682, 4
# above 819, 3 above 1,024, 2 above 1,365, 1 above 2,048); a kernel of 17-32 biases is one pass.
# Beyond 16 counters a pass keeps two counters in each vector lane, as its 16-bit halves. The avx2
# path the same with 24 counters (8 kernels for nb <= 3, 6 for 4, 4 for 5-6, 3 for 7-8, 2 for
# 9-12) and 16-bit halves beyond 12; the portable path one kernel a pass. The features must be
# the same bits on every path this machine runs (the cpu_path fixture): checked against the
# readable reference and aeon, for every number of biases a kernel around those limits and
# lengths around the vector widths and the limits.


@pytest.mark.parametrize("T", [9, 16, 31, 150, 512, 513, 1000, 1200, 1500, 2100])
def test_kernels_counted_together_match_reference(T, cpu_path):
    X = random_walks(3, 1, T, seed=T)
    for nb in list(range(1, 19)) + [31, 32, 33, 40]:  # one dilation (dilation 1) of nb biases a kernel
        aeon = AeonMiniRocket(n_kernels=84 * nb, max_dilations_per_kernel=1, random_state=nb).fit(X)
        assert aeon.parameters[3].tolist() == [nb]
        got = MiniRocket.from_parameters(aeon.parameters).transform(X)
        np.testing.assert_array_equal(bits(got), bits(reference_transform(X, aeon.parameters, [T] * 3)))
        np.testing.assert_array_equal(bits(got), bits(aeon.transform(X)))


@pytest.mark.parametrize("T", [65535, 65536])
def test_counters_in_16_bit_halves_up_to_their_limit(T, cpu_path):
    # Two counters share a lane below 65,536 positions a segment: every position above a bias
    # fills a half to its limit (a count of T in the whole-series segments). Biases far below and
    # far above every output give counts n and 0, ratios 1 and 0 exactly, in alternation (low
    # and high halves); a carry from one half into the other would break the pattern. From
    # 65,536 positions on, counters are 32-bit again.
    X = random_walks(2, 1, T, seed=1)
    fitted = AeonMiniRocket(n_kernels=84 * 20, max_dilations_per_kernel=1, random_state=0).fit(X[:, :, :200])
    ncpc, channels, dilations, per_dilation, biases = fitted.parameters
    assert dilations.tolist() == [1] and per_dilation.tolist() == [20]
    extreme = np.where(np.arange(biases.size) % 2 == 0, -3e38, 3e38).astype(biases.dtype)
    rocket = MiniRocket.from_parameters((ncpc, channels, dilations, per_dilation, extreme))
    got = rocket.transform(X)
    np.testing.assert_array_equal(got, np.tile(np.arange(20) % 2 == 0, 84)[None].repeat(2, 0).astype(np.float32))
    # Biases inside the outputs' range: the readable reference's counts.
    rocket = MiniRocket.from_parameters((ncpc, channels, dilations, per_dilation, biases))
    np.testing.assert_array_equal(bits(rocket.transform(X)), bits(reference_transform(X, fitted.parameters, [T] * 2)))


def test_kernels_counted_together_on_one_channel_of_three_with_ragged_lengths(cpu_path):
    # Every combination on channel 2 of 3 (the shared channel need not be the first), several
    # dilations with different numbers of biases, and lengths whose unpadded segments are empty.
    X = random_walks(5, 3, 120, seed=5)
    fitted = MiniRocket(n_kernels=84 * 10, max_dilations_per_kernel=6, random_state=3).fit(X)
    ncpc, channels, dilations, per_dilation, biases = fitted.parameters
    parameters = (np.ones_like(ncpc), np.full(len(ncpc), 2, channels.dtype), dilations, per_dilation, biases)
    assert len(set(per_dilation.tolist())) > 1
    rocket = MiniRocket.from_parameters(parameters, n_channels=3, n_timepoints=120)
    lengths = np.array([120, 97, 64, 33, 20])
    assert 8 * dilations.max() > lengths.min()
    got = rocket.transform(X, x_lengths=lengths)
    np.testing.assert_array_equal(bits(got), bits(reference_transform(X, parameters, lengths)))
    expected = aeon_mr._static_transform_multi(X.astype(np.float32), parameters, AeonMiniRocket._indices)
    np.testing.assert_array_equal(bits(got[:1]), bits(expected[:1]))


def test_x_lengths_match_aeon_on_truncated_series():
    # aeon is well defined on a series of length T when every dilation d has 8d < T: there the
    # operator with x_lengths must equal aeon's transform of the truncated series.
    X_train, X_test = load("GunPoint", "TRAIN"), load("GunPoint", "TEST")[:12]
    aeon = AeonMiniRocket(n_kernels=84 * 8, max_dilations_per_kernel=4, random_state=1).fit(X_train[:, :, :100])
    ours = MiniRocket.from_parameters(aeon.parameters, n_channels=1)
    lengths = np.array([100, 150, 120, 101, 130, 149, 110, 125, 140, 100, 111, 150])
    assert 8 * aeon.parameters[2].max() < lengths.min()
    got = ours.transform(X_test, x_lengths=lengths)
    for i, T in enumerate(lengths):
        expected = aeon_mr._static_transform_uni(
            X_test[i : i + 1, 0, :T].astype(np.float32), aeon.parameters, AeonMiniRocket._indices
        )
        np.testing.assert_array_equal(bits(got[i : i + 1]), bits(expected))


def test_x_lengths_errors_and_equal_lengths():
    X = torch.from_numpy(random_walks(3, 1, 30))
    params = ops.minirocket_fit(X, 168, 32, 0)
    full = ops.minirocket_transform(X, *params)
    for dtype in (torch.int32, torch.int64):
        same = ops.minirocket_transform(X, *params, torch.tensor([30, 30, 30], dtype=dtype))
        assert torch.equal(full, same)
    with pytest.raises(ValueError, match=r"minirocket_transform: expected x_lengths values in \[9, 30\]"):
        ops.minirocket_transform(X, *params, torch.tensor([30, 8, 30]))
    with pytest.raises(ValueError, match=r"minirocket_transform: expected x_lengths values in \[9, 30\]"):
        ops.minirocket_transform(X, *params, torch.tensor([30, 31, 30]))
    with pytest.raises(ValueError, match=r"minirocket_transform: expected x_lengths of shape \(3,\)"):
        ops.minirocket_transform(X, *params, torch.tensor([30, 30]))
    with pytest.raises(TypeError, match="minirocket_transform: expected x_lengths to be an integer tensor"):
        ops.minirocket_transform(X, *params, torch.tensor([30.0, 30.0, 30.0]))


# ---------------------------------------------------------------------------------------------
# Estimator behaviour.


def test_estimator_inputs_and_outputs():
    X = random_walks(5, 1, 40)
    rocket = MiniRocket(n_kernels=300, random_state=0).fit(X)
    assert rocket.n_kernels_ == 300 and rocket.parameters[4].shape == (252,)
    F = rocket.transform(X)
    assert isinstance(F, np.ndarray) and F.shape == (5, 252) and F.dtype == np.float32
    np.testing.assert_array_equal(rocket.transform(X[:, 0, :]), F)  # 2-D = one channel
    np.testing.assert_array_equal(rocket.transform(X.astype(np.float32)), F)  # cast to float32 first anyway
    T = rocket.transform(torch.from_numpy(X))
    assert isinstance(T, torch.Tensor) and T.dtype == torch.float32 and T.device.type == "cpu"
    np.testing.assert_array_equal(T.numpy(), F)
    for dtype in (torch.float16, torch.bfloat16):  # converted to float32 (exactly) first
        x = torch.from_numpy(X).to(dtype)
        np.testing.assert_array_equal(rocket.transform(x).numpy(), rocket.transform(x.float()).numpy())
    ints = np.round(X * 10).astype(np.int64)
    np.testing.assert_array_equal(rocket.transform(ints), rocket.transform(ints.astype(np.float32)))
    with pytest.raises(ValueError, match=r"MiniRocket.transform: expected X with 40 time points \(as in fit\), got 39"):
        rocket.transform(X[:, :, :39])
    with pytest.raises(ValueError, match=r"MiniRocket.transform: expected X with 1 channels \(as in fit\), got 2"):
        rocket.transform(np.concatenate([X, X], axis=1))
    with pytest.raises(ValueError, match=r"MiniRocket.transform: expected X to be 3-D \(n_cases, n_channels, n_timepoints\) or 2-D"):
        rocket.transform(X[None])
    with pytest.raises(NotFittedError, match="MiniRocket.transform: this instance is not fitted"):
        MiniRocket().transform(X)
    # Longer series with their lengths: fine.
    longer = np.concatenate([X, X], axis=2)
    np.testing.assert_array_equal(rocket.transform(longer, x_lengths=[40] * 5), F)
    assert MiniRocket(n_kernels=10).fit(X).parameters[4].shape == (84,)  # fewer than 84 -> 84, as aeon


def test_get_set_params_and_from_parameters():
    rocket = MiniRocket(n_kernels=168, max_dilations_per_kernel=8, random_state=3)
    assert rocket.get_params() == {
        "n_kernels": 168,
        "max_dilations_per_kernel": 8,
        "random_state": 3,
        "device": None,
        "verbose": False,
    }
    assert rocket.set_params(n_kernels=252, random_state=4) is rocket and rocket.n_kernels == 252
    with pytest.raises(ValueError, match="Invalid parameter 'kernels' for estimator MiniRocket"):
        rocket.set_params(kernels=1)
    X = random_walks(4, 2, 50)
    rocket.fit(X)
    aeon = AeonMiniRocket(n_kernels=252, max_dilations_per_kernel=8, random_state=4).fit(X)
    copy = MiniRocket.from_parameters(aeon.parameters)
    np.testing.assert_array_equal(bits(copy.transform(X)), bits(aeon.transform(X)))
    np.testing.assert_array_equal(bits(copy.transform(X)), bits(rocket.transform(X)))
    clone = MiniRocket.from_parameters([torch.from_numpy(p) for p in rocket.parameters], n_channels=2)
    np.testing.assert_array_equal(clone.transform(X), rocket.transform(X))
    with pytest.raises(ValueError, match="MiniRocket.from_parameters: expected aeon's 5 parameter arrays, got 4"):
        MiniRocket.from_parameters(aeon.parameters[:4])


def test_not_differentiable():
    x = torch.from_numpy(random_walks(3, 2, 30)).requires_grad_(True)
    params = ops.minirocket_fit(x, 168, 32, 0)
    assert not any(p.requires_grad for p in params)
    F = ops.minirocket_transform(x, *params)
    assert not F.requires_grad and F.grad_fn is None
    assert torch.equal(F, ops.minirocket_transform(x.detach(), *params))


# ---------------------------------------------------------------------------------------------
# Errors: the operators and their fake kernels say the same thing.


def fit_errors():
    good = torch.from_numpy(random_walks(2, 1, 20))
    nan = good.clone()
    nan[1, 0, 3] = float("nan")
    inf = good.clone()
    inf[0, 0, 0] = float("inf")
    return [
        ((good[0], 168, 32, 0), ValueError, "minirocket_fit: expected x to be a 3-D tensor"),
        ((good[None], 168, 32, 0), ValueError, "minirocket_fit: expected x to be a 3-D tensor"),
        ((good.long(), 168, 32, 0), TypeError, "minirocket_fit: expected x to be a floating-point tensor"),
        ((good[:, :, :8], 168, 32, 0), ValueError, "minirocket_fit: expected at least 9 time points"),
        ((good[:0], 168, 32, 0), ValueError, "minirocket_fit: expected at least one case"),
        ((good[:, :0], 168, 32, 0), ValueError, "minirocket_fit: expected x to have at least one channel"),
        ((good, 168, 0, 0), ValueError, "minirocket_fit: expected max_dilations_per_kernel >= 1, got 0"),
        ((good, 168, 32, -1), ValueError, r"minirocket_fit: expected seed in \[0, 2\*\*32 - 1\]"),
        ((good, 168, 32, 2**32), ValueError, r"minirocket_fit: expected seed in \[0, 2\*\*32 - 1\]"),
        ((nan, 168, 32, 0), ValueError, "minirocket_fit: expected x to contain only finite values"),
        ((inf, 168, 32, 0), ValueError, "minirocket_fit: expected x to contain only finite values"),
        ((good * 1e300, 168, 32, 0), ValueError, "minirocket_fit: expected x to contain only finite values"),
        ((torch.full_like(good, 5e37), 168, 32, 0), ValueError, "minirocket_fit: expected the convolution outputs to fit in float32"),
    ]


@pytest.mark.parametrize("case", range(13))
def test_fit_errors(case):
    args, error, message = fit_errors()[case]
    with pytest.raises(error, match=message):
        ops.minirocket_fit(*args)


def transform_errors():
    x = torch.from_numpy(random_walks(2, 2, 20))
    P = list(ops.minirocket_fit(x, 168, 32, 0))
    nan = x.clone()
    nan[0, 1, 5] = float("nan")

    def replace(i, value):
        Q = list(P)
        Q[i] = value
        return Q

    return [
        ((x[0], *P), ValueError, "minirocket_transform: expected x to be a 3-D tensor"),
        ((x.int(), *P), TypeError, "minirocket_transform: expected x to be a floating-point tensor"),
        ((x[:, :, :8], *P), ValueError, "minirocket_transform: expected at least 9 time points"),
        ((x[:, :0], *P), ValueError, "minirocket_transform: expected x to have at least one channel"),
        ((x, *replace(0, P[0][None])), ValueError, "minirocket_transform: expected num_channels_per_combination to be a 1-D"),
        ((x, *replace(1, P[1].float())), TypeError, "minirocket_transform: expected channel_indices to be an integer"),
        ((x, *replace(4, P[4].int())), TypeError, "minirocket_transform: expected biases to be a floating-point"),
        ((x, *replace(2, P[2][:0])), ValueError, "minirocket_transform: expected at least one dilation"),
        ((x, *replace(3, P[3][:1])), ValueError, "minirocket_transform: expected num_features_per_dilation to have one"),
        ((x, *replace(0, P[0][:10])), ValueError, "minirocket_transform: expected num_channels_per_combination to have 84"),
        ((x, *replace(4, P[4][:10])), ValueError, r"minirocket_transform: expected biases to have 84 \* sum"),
        ((x, *replace(2, P[2] * 0)), ValueError, r"minirocket_transform: expected dilations in \[1, 2\*\*31 - 1\]"),
        ((x, *replace(1, P[1] + 5)), ValueError, "minirocket_transform: expected x with at least 7 channels"),
        ((x[:, :1], *P), ValueError, "minirocket_transform: expected x with at least 2 channels"),
        ((nan, *P), ValueError, "minirocket_transform: expected x to contain only finite values"),
    ]


@pytest.mark.parametrize("case", range(15))
def test_transform_errors(case):
    args, error, message = transform_errors()[case]
    with pytest.raises(error, match=message):
        ops.minirocket_transform(*args)


@pytest.mark.parametrize("case", range(11))
def test_fake_kernels_give_the_same_shape_errors(case):
    # The shape-level errors (the first ones of each list) come from the fake kernels too, word
    # for word up to the value printed after "got".
    checks = [(ops.minirocket_fit, c) for c in fit_errors()[:8]] + [(ops.minirocket_transform, c) for c in transform_errors()[:3]]
    op, (args, error, message) = checks[case]
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake_args = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        with pytest.raises(Exception, match=message.split(", got")[0]):
            op(*fake_args)


def test_fake_kernels_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.from_numpy(random_walks(3, 1, 60))
    real_params = ops.minirocket_fit(x, 1000, 32, 5)
    with FakeTensorMode() as mode:
        fx = mode.from_tensor(x)
        fake_params = ops.minirocket_fit(fx, 1000, 32, 5)
        fake_out = ops.minirocket_transform(fx, *[mode.from_tensor(p) for p in real_params])
    for real, fake in zip(real_params, fake_params):
        assert real.shape == fake.shape and real.dtype == fake.dtype
    assert fake_out.shape == (3, real_params[4].shape[0]) and fake_out.dtype == torch.float32


# ---------------------------------------------------------------------------------------------
# The features' memory: a features matrix of 1 MiB or more comes from the block the CPU keeps from
# the last freed big table (csrc/common/table_memory.h, as SoftDTW's DP tables: a fresh 40 MB
# matrix cost its page faults on every call). The block holds the previous features when it is
# taken, so every feature must be written again, zeros of empty segments included.


def test_features_written_over_a_kept_block_are_the_same_bits():
    X = torch.from_numpy(random_walks(120, 1, 90, seed=11))  # 120 cases x 9,996 features: 4.8 MB
    rocket = MiniRocket(random_state=5).fit(X)
    # Every other case 9 points long: its unpadded segments of dilations 2 and up are empty (zeros).
    lengths = torch.tensor([90, 9] * 60)
    expected_full = rocket.transform(X).clone()
    expected_ragged = rocket.transform(X, x_lengths=lengths).clone()
    assert (expected_ragged[1] == 0).sum() > (expected_full[1] == 0).sum()
    release_table_memory()
    full = rocket.transform(X)
    block = full.data_ptr()
    del full  # its block is kept ...
    ragged = rocket.transform(X, x_lengths=lengths)  # ... and taken, still holding the full features
    assert ragged.data_ptr() == block
    np.testing.assert_array_equal(bits(ragged), bits(expected_ragged))
    reference = reference_transform(X[:2].numpy(), rocket.parameters, [90, 9])
    np.testing.assert_array_equal(bits(ragged[:2]), bits(reference))
    del ragged
    assert release_table_memory() == expected_full.nbytes


def test_features_from_a_kept_block_behave_as_any_tensor():
    X = torch.from_numpy(random_walks(120, 1, 90, seed=12))
    rocket = MiniRocket(random_state=6).fit(X)
    expected = rocket.transform(X).clone()
    release_table_memory()
    out = rocket.transform(X)
    assert out.is_contiguous() and out.untyped_storage().resizable()
    out.resize_(240, out.shape[1])  # moved to the CPU allocator's memory; the block is kept
    np.testing.assert_array_equal(bits(out[:120]), bits(expected))
    assert release_table_memory() == expected.nbytes
    shared = rocket.transform(X).share_memory_()  # copied into shared memory, the block kept
    assert shared.is_shared() and torch.equal(shared, expected)
    assert release_table_memory() == expected.nbytes


# ---------------------------------------------------------------------------------------------
# Determinism, TorchScript, CUDA.


def test_same_bits_for_any_thread_count():
    X = torch.from_numpy(random_walks(9, 3, 70))
    lengths = torch.tensor([70, 60, 50, 40, 30, 20, 10, 69, 9])
    previous = torch.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3, 4):
            torch.set_num_threads(threads)
            params = ops.minirocket_fit(X, 1000, 32, 8)
            results.append((params, ops.minirocket_transform(X, *params), ops.minirocket_transform(X, *params, lengths)))
    finally:
        torch.set_num_threads(previous)
    for params, full, ragged in results[1:]:
        for a, b in zip(params, results[0][0]):
            assert torch.equal(a, b)
        assert np.array_equal(bits(full), bits(results[0][1]))
        assert np.array_equal(bits(ragged), bits(results[0][2]))


def features(
    x: torch.Tensor,
    ncpc: torch.Tensor,
    channels: torch.Tensor,
    dilations: torch.Tensor,
    per_dilation: torch.Tensor,
    biases: torch.Tensor,
    lengths: torch.Tensor,
) -> torch.Tensor:
    return torch.ops.softdtw_torch.minirocket_transform(x, ncpc, channels, dilations, per_dilation, biases, lengths)


def test_torchscript_round_trip(tmp_path):
    x = torch.from_numpy(random_walks(3, 2, 45))
    params = ops.minirocket_fit(x, 500, 32, 2)
    lengths = torch.tensor([45, 30, 12])
    scripted = torch.jit.script(features)
    path = str(tmp_path / "minirocket.pt")
    scripted.save(path)
    loaded = torch.jit.load(path)
    expected = features(x, *params, lengths)
    assert np.array_equal(bits(loaded(x, *params, lengths)), bits(expected))


def test_torch_compile_matches_eager():
    x = torch.from_numpy(random_walks(3, 1, 45))
    params = ops.minirocket_fit(x, 500, 32, 2)
    lengths = torch.tensor([45, 30, 12])
    compiled = torch.compile(features, fullgraph=True)
    assert np.array_equal(bits(compiled(x, *params, lengths)), bits(features(x, *params, lengths)))


@pytest.mark.parametrize("device", DEVICES)
def test_devices_match_cpu_bits(device):
    X_train, X_test = load("BasicMotions", "TRAIN"), load("BasicMotions", "TEST")
    cpu = MiniRocket(random_state=0).fit(X_train)
    expected = cpu.transform(torch.from_numpy(X_test))
    x = torch.from_numpy(X_test).to(device)
    params = ops.minirocket_fit(torch.from_numpy(X_train).to(device), 10_000, 32, 0)
    assert all(p.device.type == device for p in params)
    for a, b in zip(params, cpu.parameters):
        np.testing.assert_array_equal(a.cpu().numpy(), b)
    got = ops.minirocket_transform(x, *params)
    assert got.device.type == device
    np.testing.assert_array_equal(bits(got), bits(expected))
    # Ragged batch, univariate and multivariate, and the estimator's device option.
    lengths = torch.tensor([100, 9, 50, 73] * 10)
    np.testing.assert_array_equal(
        bits(ops.minirocket_transform(x, *params, lengths.to(device))),
        bits(ops.minirocket_transform(x.cpu(), *[p.cpu() for p in params], lengths)),
    )
    uni = MiniRocket(random_state=1, device=device).fit(X_train[:, :1])
    got = uni.transform(torch.from_numpy(X_test[:, :1]))
    assert got.device.type == device
    np.testing.assert_array_equal(bits(got), bits(MiniRocket(random_state=1).fit(X_train[:, :1]).transform(X_test[:, :1])))
