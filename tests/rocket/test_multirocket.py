"""MultiRocket operators and estimator against aeon 1.6 (fit parameters identical, features bit for
bit), a slow reference written from the definitions (x_lengths, empty segments), and the operator
contracts (errors, fake kernels, determinism, devices)."""
import itertools

import numpy as np
import pytest
import torch

from conftest import DEVICES
from rocket_data import bits, load, random_walks
from softdtw_torch import NotFittedError, release_table_memory
from softdtw_torch.rocket import MultiRocket

import aeon.transformations.collection.convolution_based._multirocket as aeon_multirocket  # noqa: E402

AeonMultiRocket = aeon_multirocket.MultiRocket
ops = torch.ops.softdtw_torch
COMBINATIONS = list(itertools.combinations(range(9), 3))


def assert_parameters_equal(aeon, ours):
    for a, b in zip(aeon.parameter + aeon.parameter1, ours.parameter + ours.parameter1):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(bits(a) if a.dtype == np.float32 else a, bits(b) if a.dtype == np.float32 else b)


# ---------------------------------------------------------------------------------------------
# Parity with aeon: parameters identical, features bit-identical.


@pytest.mark.parametrize("name", ["GunPoint", "BasicMotions", "ItalyPowerDemand", "ArrowHead"])
@pytest.mark.parametrize("seed", [0, 1234])
def test_fit_and_transform_match_aeon(name, seed):
    X_train, X_test = load(name, "TRAIN"), load(name, "TEST")
    aeon = AeonMultiRocket(n_kernels=1000, random_state=seed).fit(X_train)
    ours = MultiRocket(n_kernels=1000, random_state=seed).fit(X_train)
    assert_parameters_equal(aeon, ours)
    expected = aeon.transform(X_test)
    got = ours.transform(X_test)
    assert got.dtype == np.float32 and got.shape == expected.shape == (len(X_test), 8 * 84 * (1000 // 84))
    np.testing.assert_array_equal(bits(got), bits(expected))


def test_default_kernels_match_aeon_on_gunpoint():
    # aeon's defaults (6,250 kernels, 49,728 features): the MPV of a few features in 10^5 needs the
    # reciprocal aeon's compiled loop divides by (csrc/multirocket/math.h).
    X = load("GunPoint", "TRAIN")
    aeon = AeonMultiRocket(random_state=7).fit(X)
    ours = MultiRocket(random_state=7).fit(X)
    assert_parameters_equal(aeon, ours)
    np.testing.assert_array_equal(bits(ours.transform(X)), bits(aeon.transform(X)))


@pytest.mark.parametrize("n_channels", [1, 2, 3, 9, 12])
@pytest.mark.parametrize("n_kernels, max_dilations", [(84, 32), (500, 4), (3000, 32)])
def test_fit_and_transform_match_aeon_on_random_data(n_channels, n_kernels, max_dilations):
    X = random_walks(6, n_channels, 47, seed=n_channels)
    for seed in (0, 2**32 - 1):
        aeon = AeonMultiRocket(n_kernels=n_kernels, max_dilations_per_kernel=max_dilations, random_state=seed).fit(X)
        ours = MultiRocket(n_kernels=n_kernels, max_dilations_per_kernel=max_dilations, random_state=seed).fit(X)
        assert_parameters_equal(aeon, ours)
        np.testing.assert_array_equal(bits(ours.transform(X)), bits(aeon.transform(X)))


@pytest.mark.parametrize("T", [127, 128, 129, 300, 641])
def test_match_aeon_across_position_blocks(T):
    # The CPU kernel pools a segment in blocks of 128 positions (kPositionBlock, csrc/multirocket/cpu/pooling.h),
    # carrying every lane's counts, index sums, float64 sums and stretches across them: segments
    # shorter, equal and longer than a block, a block and one position, several blocks and a rest.
    X = random_walks(3, 1 + T % 2, T, seed=T)
    aeon = AeonMultiRocket(n_kernels=500, random_state=T).fit(X)
    ours = MultiRocket(n_kernels=500, random_state=T).fit(X)
    assert_parameters_equal(aeon, ours)
    np.testing.assert_array_equal(bits(ours.transform(X)), bits(aeon.transform(X)))


@pytest.mark.parametrize("trial", range(6))
def test_match_aeon_on_integer_data(trial):
    # Integer-valued series: many outputs equal a bias (neither above nor below: LSPV's and MPV's
    # branches), quantiles on float32 ties, and signs of zero.
    rs = np.random.RandomState(trial)
    T = [10, 11, 17, 33, 64, 151][trial]
    X = rs.randint(-3, 4, size=(5, 1 + trial % 3, T)).astype(float)
    X[:, :, ::3] *= -0.0 if trial % 2 else 1.0
    aeon = AeonMultiRocket(n_kernels=500, random_state=trial).fit(X)
    ours = MultiRocket(n_kernels=500, random_state=trial).fit(X)
    assert_parameters_equal(aeon, ours)
    np.testing.assert_array_equal(bits(ours.transform(X)), bits(aeon.transform(X)))


def test_normalise_matches_aeon():
    X = random_walks(6, 2, 40, seed=3) * 5 + 2
    aeon = AeonMultiRocket(n_kernels=300, normalise=True, random_state=4).fit(X)
    ours = MultiRocket(n_kernels=300, normalise=True, random_state=4).fit(X)
    assert_parameters_equal(aeon, ours)
    np.testing.assert_array_equal(bits(ours.transform(X)), bits(aeon.transform(X)))
    # A tensor in gives a tensor out, with the same bits.
    np.testing.assert_array_equal(bits(ours.transform(torch.from_numpy(X))), bits(aeon.transform(X)))
    with pytest.raises(ValueError, match="MultiRocket.transform: normalise=True normalises whole series"):
        ours.transform(X, x_lengths=[40] * 6)


def test_from_aeon_parameters():
    X = random_walks(5, 3, 30, seed=1)
    aeon = AeonMultiRocket(n_kernels=400, random_state=2).fit(X)
    ours = MultiRocket.from_parameters(aeon.parameter, aeon.parameter1, n_channels=3, n_timepoints=30)
    np.testing.assert_array_equal(bits(ours.transform(X)), bits(aeon.transform(X)))
    uni = AeonMultiRocket(n_kernels=400, random_state=2).fit(X[:, :1])
    ours = MultiRocket.from_parameters(uni.parameter, uni.parameter1)
    assert len(ours.parameter) == 3
    np.testing.assert_array_equal(bits(ours.transform(X[:, :1])), bits(uni.transform(X[:, :1])))
    with pytest.raises(ValueError, match="MultiRocket.from_parameters: expected aeon's parameter and parameter1"):
        MultiRocket.from_parameters(aeon.parameter, uni.parameter1)


def test_random_state_rules():
    X = random_walks(5, 2, 30)
    aeon = AeonMultiRocket(n_kernels=168, random_state=np.random.RandomState(5)).fit(X)
    ours = MultiRocket(n_kernels=168, random_state=np.random.RandomState(5)).fit(X)
    assert_parameters_equal(aeon, ours)
    a, b = MultiRocket(n_kernels=168).fit(X), MultiRocket(n_kernels=168).fit(X)
    assert a.seed_ != b.seed_


# ---------------------------------------------------------------------------------------------
# A slow reference from the definitions (docs/design/rocket.md §8), for what aeon cannot check:
# ragged lengths and empty segments.


def reference_features(x, parameter, parameter1):
    """float32 features of one case x (n_channels, L), written from MultiRocket's definitions with
    aeon's rounding order; empty segments give (0, 0, 0, -1)."""
    out = []
    ncpc, channels = parameter[0], parameter[1]
    for representation, (_, _, dilations, per_dilation, biases) in enumerate((parameter, parameter1)):
        rows = x.astype(np.float32) if representation == 0 else np.diff(x.astype(np.float32), axis=1)
        T = rows.shape[1]
        blocks = [[] for _ in range(4)]
        feature, combination, channel = 0, 0, 0
        for di, d in enumerate(dilations):
            for k, taps in enumerate(COMBINATIONS):
                m = ncpc[combination]
                chosen = channels[channel:channel + m]
                C = np.zeros(T, np.float32)
                for ch in chosen:
                    row = rows[ch]

                    def tap(g, t):
                        u = t + (g - 4) * d + (1 if representation == 1 and g < 4 else 0)
                        return row[u] if 0 <= u < T else np.float32(0)

                    for t in range(T):
                        alpha = -row[t]
                        for g in (0, 1, 2, 3, 5, 6, 7, 8):
                            alpha = np.float32(alpha + -tap(g, t))
                        value = alpha
                        for g in taps:
                            value = np.float32(value + np.float32(3) * tap(g, t))
                        C[t] = np.float32(C[t] + value)
                segment = C if (di + k) % 2 == 0 else C[4 * d:max(4 * d, T - 4 * d)]
                for f in range(per_dilation[di]):
                    b = biases[feature + f]
                    above = segment > b
                    below = np.nonzero(segment < b)[0]
                    n = len(segment)
                    gaps = np.diff(np.concatenate([[0], below, [n - 1]])) if n else np.array([0])
                    positives = int(above.sum())
                    total = 0.0
                    for v in segment[above]:
                        total += float(np.float32(v + b))
                    blocks[0].append(positives / n if n else 0.0)
                    blocks[1].append(max(0, gaps.max()))
                    blocks[2].append(total * (1.0 / positives) if positives else 0.0)
                    blocks[3].append(np.nonzero(above)[0].sum() * (1.0 / positives) if positives else -1.0)
                feature += per_dilation[di]
                combination += 1
                channel += m
        out.extend(np.concatenate([np.asarray(b, np.float64) for b in blocks]).astype(np.float32))
    return np.asarray(out, np.float32)


def test_matches_reference_with_lengths_and_empty_segments():
    X = random_walks(3, 2, 40, seed=8)
    rocket = MultiRocket(n_kernels=168, random_state=3).fit(X)
    lengths = np.array([40, 23, 10])  # 10: dilation 4's trimmed segments are empty
    got = rocket.transform(X, x_lengths=lengths)
    for i, length in enumerate(lengths):
        full = rocket._parameters
        expected = reference_features(X[i, :, :length], full[:5], full[5:])
        np.testing.assert_array_equal(bits(got[i]), bits(expected))
        # and the case alone, cut to its length, has the same features
        alone = rocket.transform(np.ascontiguousarray(X[i:i + 1, :, :length]), x_lengths=[length])
        np.testing.assert_array_equal(bits(alone[0]), bits(got[i]))


def test_features_written_over_a_kept_block_are_the_same_bits():
    # A features matrix of 1 MiB or more comes from the block the CPU keeps from the last freed big
    # table (csrc/common/table_memory.h; a fresh 200 MB matrix of 1,000 cases faulted 49,000 pages
    # a call). The block still holds the previous features when it is taken: every feature must be
    # written again, those of empty segments included.
    X = random_walks(8, 2, 40, seed=12)  # 8 cases x 49,728 features: 1.6 MB
    rocket = MultiRocket(random_state=4).fit(X)
    lengths = np.array([40, 10] * 4)  # 10: the trimmed segments of the larger dilations are empty
    release_table_memory()
    full = rocket.transform(torch.from_numpy(X))
    block, nbytes = full.data_ptr(), full.nbytes
    assert full.shape == (8, 49_728)
    del full  # its block is kept ...
    ragged = rocket.transform(torch.from_numpy(X), x_lengths=lengths)  # ... and taken, holding the full features
    assert ragged.data_ptr() == block
    parameters = rocket._parameters
    for i in (0, 1):  # the readable reference
        expected = reference_features(X[i, :, :lengths[i]], parameters[:5], parameters[5:])
        np.testing.assert_array_equal(bits(ragged[i]), bits(expected))
    for i, length in enumerate(lengths):  # each case alone (a small matrix, from the allocator)
        alone = rocket.transform(np.ascontiguousarray(X[i:i + 1, :, :length]), x_lengths=[length])
        np.testing.assert_array_equal(bits(alone[0]), bits(ragged[i]))
    del ragged
    assert release_table_memory() == nbytes


def test_same_bits_at_any_thread_count_and_dtype():
    X = torch.from_numpy(random_walks(7, 3, 80, seed=5))
    p = ops.multirocket_fit(X, 2000, 32, 9)
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = ops.multirocket_transform(X, *p[:5], *p[7:])
        torch.set_num_threads(max(2, previous))
        many = ops.multirocket_transform(X, *p[:5], *p[7:])
    finally:
        torch.set_num_threads(previous)
    np.testing.assert_array_equal(bits(one), bits(many))
    # Any floating dtype is converted to float32 first (aeon's astype).
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = X.to(dtype)
        np.testing.assert_array_equal(
            bits(ops.multirocket_transform(x, *p[:5], *p[7:])),
            bits(ops.multirocket_transform(x.float(), *p[:5], *p[7:])),
        )
    assert not ops.multirocket_transform(X.requires_grad_(), *p[:5], *p[7:]).requires_grad


@pytest.mark.parametrize("device", DEVICES)
def test_devices_agree(device):
    X = torch.from_numpy(random_walks(4, 2, 50, seed=6))
    p = ops.multirocket_fit(X.to(device), 600, 32, 1)
    assert all(t.device.type == torch.device(device).type for t in p)
    want = ops.multirocket_transform(X, *[t.cpu() for t in p[:5]], *[t.cpu() for t in p[7:]])
    got = ops.multirocket_transform(X.to(device), *p[:5], *p[7:], torch.tensor([50, 50, 50, 50], device=device))
    np.testing.assert_array_equal(bits(got), bits(want))


# ---------------------------------------------------------------------------------------------
# Errors: each names the op, what was expected and what came.

X_GOOD = torch.from_numpy(random_walks(3, 2, 30))
P = ops.multirocket_fit(X_GOOD, 168, 32, 0)


@pytest.mark.parametrize(
    "args, error, message",
    [
        ((X_GOOD[:, :, :9], 168, 32, 0), ValueError, "multirocket_fit: expected at least 10 time points"),
        ((X_GOOD, 83, 32, 0), ValueError, r"multirocket_fit: expected n_kernels >= 84 \(MultiRocket's 84 kernels\), got 83"),
        ((X_GOOD, 168, 0, 0), ValueError, "multirocket_fit: expected max_dilations_per_kernel >= 1, got 0"),
        ((X_GOOD, 168, 32, -1), ValueError, r"multirocket_fit: expected seed in \[0, 2\*\*32 - 1\]"),
        ((X_GOOD[:0], 168, 32, 0), ValueError, "multirocket_fit: expected at least one case"),
        ((X_GOOD.int(), 168, 32, 0), TypeError, "multirocket_fit: expected x to be a floating-point tensor"),
        ((torch.full((2, 1, 12), float("nan")), 168, 32, 0), ValueError, "multirocket_fit: expected x to contain only finite"),
    ],
)
def test_fit_errors(args, error, message):
    with pytest.raises(error, match=message):
        ops.multirocket_fit(*args)


@pytest.mark.parametrize(
    "args, error, message",
    [
        ((X_GOOD[:, :, :9], *P[:5], *P[7:]), ValueError, "multirocket_transform: expected at least 10 time points"),
        ((X_GOOD, *P[:5], torch.cat([P[7], P[7]]), torch.cat([P[8], P[8]]), P[9]), ValueError,
         "multirocket_transform: expected diff_dilations to have at most as many entries as dilations"),
        ((X_GOOD, *P[:5], P[7], P[8], P[9][:-1]), ValueError,
         r"multirocket_transform: expected diff_biases to have 84 \* sum\(diff_num_features_per_dilation\)"),
        ((X_GOOD, *P[:5], P[7], P[8].double(), P[9]), TypeError,
         "multirocket_transform: expected diff_num_features_per_dilation to be an integer tensor"),
        ((X_GOOD, *P[:5], *P[7:], torch.tensor([30, 9, 30])), ValueError,
         r"multirocket_transform: expected x_lengths values in \[10, 30\]"),
        ((X_GOOD * float("inf"), *P[:5], *P[7:]), ValueError, "multirocket_transform: expected x to contain only finite"),
        ((X_GOOD * 1e37, *P[:5], *P[7:]), ValueError,
         "multirocket_transform: expected the convolution outputs to fit in float32"),
    ],
)
def test_transform_errors(args, error, message):
    with pytest.raises(error, match=message):
        ops.multirocket_transform(*args)


def test_transform_refuses_unequal_feature_counts():
    # aeon lays both representations out with the series' feature count: a difference with fewer
    # features cannot be placed.
    fewer = P[8].clone()
    fewer[0] -= 1
    with pytest.raises(ValueError, match="multirocket_transform: expected as many features for the first difference"):
        ops.multirocket_transform(X_GOOD, *P[:5], P[7], fewer, P[9][:-84])


def test_estimator_errors():
    with pytest.raises(ValueError, match="MultiRocket.fit: expected n_features_per_kernel=4"):
        MultiRocket(n_features_per_kernel=3).fit(X_GOOD)
    with pytest.raises(ValueError, match="MultiRocket.fit: expected n_kernels >= 84, got 83"):
        MultiRocket(n_kernels=83).fit(X_GOOD)
    with pytest.raises(TypeError, match="MultiRocket.fit: expected n_kernels to be an int, got float 100.5"):
        MultiRocket(n_kernels=100.5).fit(X_GOOD)
    with pytest.raises(TypeError, match="MultiRocket.fit: expected max_dilations_per_kernel to be an int"):
        MultiRocket(max_dilations_per_kernel="8").fit(X_GOOD)
    with pytest.raises(NotFittedError):
        MultiRocket().transform(X_GOOD)
    rocket = MultiRocket(n_kernels=168, random_state=0).fit(X_GOOD)
    with pytest.raises(ValueError, match=r"MultiRocket.transform: expected X with 2 channels \(as in fit\), got 1"):
        rocket.transform(X_GOOD[:, :1])
    with pytest.raises(ValueError, match=r"MultiRocket.transform: expected X with 30 time points"):
        rocket.transform(X_GOOD[:, :, :20])


def test_fake_kernels_match():
    from torch._subclasses.fake_tensor import FakeTensorMode

    real = ops.multirocket_transform(X_GOOD, *P[:5], *P[7:])
    with FakeTensorMode() as mode:
        fake_x = mode.from_tensor(X_GOOD)
        fake_p = [mode.from_tensor(t) for t in P]
        out = ops.multirocket_transform(fake_x, *fake_p[:5], *fake_p[7:])
        assert out.shape == real.shape and out.dtype == real.dtype
        with pytest.raises(ValueError, match="multirocket_transform: expected diff_dilations to have at most"):
            ops.multirocket_transform(fake_x, *fake_p[:5], torch.cat([fake_p[7]] * 2), torch.cat([fake_p[8]] * 2),
                                      fake_p[9])
    one_channel = X_GOOD[:, :1].contiguous()
    fit = ops.multirocket_fit(one_channel, 500, 32, 0)
    with FakeTensorMode() as mode:
        fake = ops.multirocket_fit(mode.from_tensor(one_channel), 500, 32, 0)
    assert [tuple(t.shape) for t in fake] == [tuple(t.shape) for t in fit]
