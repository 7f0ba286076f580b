"""The CUDA ROCKET, MiniRocket, MultiRocket and Hydra kernels run on the CPU, under the CUDA emulator of
tests/cuda_emu, against the CPU ops, bit for bit: the convolution's features and argmax in every
accumulation mode, its backward, numpy's normalisation, MiniRocket's, MultiRocket's and Hydra's
transforms, Hydra's backward (csrc/rocket/cuda/convolve_ops.h, csrc/minirocket/cuda/transform_ops.h,
csrc/multirocket/cuda/transform_ops.h and csrc/hydra/cuda/transform_ops.h with their device code,
unchanged).

The emulated device caps grid-stride grids at 3 blocks per axis and claims one multiprocessor, so
the loops a GPU only reaches past 65,535 cases (ROCKET) or 32 blocks per multiprocessor
(MiniRocket) run here on small inputs. The emulated extension is compiled once per checkout into
build/cuda-emu (tests/cuda_emu/emulated_ops.py).
"""
import os
import sys

import numpy as np
import pytest
import torch
from conftest import AEON_DATASETS, needs_aeon_data

from softdtw_torch.datasets import load_ts
from softdtw_torch.rocket import kernels_from_aeon

from aeon.transformations.collection.convolution_based import _rocket as aeon_rocket

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cuda_emu"))
import emulated_ops  # noqa: E402
import harness_cases  # noqa: E402
from emulated_ops import same_bits  # noqa: E402

OPS = torch.ops.softdtw_torch
MODES = ["float64", "float32_fma", "float32"]


@pytest.fixture(scope="module")
def emu():
    return emulated_ops.load()


def aeon_kernels(C, T, K, seed):
    return list(kernels_from_aeon(aeon_rocket._generate_kernels(T, K, C, seed)))


def ragged_lengths(n_cases, T, seed):
    lengths = torch.from_numpy(np.random.default_rng(seed).integers(1, T + 1, n_cases))
    lengths[0] = T
    return lengths


def basic_motions(n_cases):
    X, _ = load_ts(os.path.join(AEON_DATASETS, "BasicMotions", "BasicMotions_TEST.ts"))
    return torch.from_numpy(np.ascontiguousarray(X[:n_cases]))


def gun_point(n_cases):
    X, _ = load_ts(os.path.join(AEON_DATASETS, "GunPoint", "GunPoint_TEST.ts"))
    return torch.from_numpy(np.ascontiguousarray(X[:n_cases]))


def check_convolve(emu, x, kernels, x_lengths=None, temperatures=(None, 0.7), modes=MODES):
    for accumulate in modes:
        for temperature in temperatures:
            want = OPS._rocket_convolve_forward(x, *kernels, accumulate, x_lengths, temperature)
            got = emu.rocket_convolve_forward(x, *kernels, accumulate, x_lengths, temperature)
            assert same_bits(got[0], want[0]) and same_bits(got[1], want[1]), (accumulate, temperature)
            grad = torch.randn(want[0].shape, generator=torch.Generator().manual_seed(5))
            want_grads = OPS._rocket_convolve_backward(grad, x, *kernels, want[1], accumulate, x_lengths, temperature)
            got_grads = emu.rocket_convolve_backward(grad, x, *kernels, got[1], accumulate, x_lengths, temperature)
            for g, w in zip(got_grads, want_grads):
                assert same_bits(g, w), (accumulate, temperature)


@pytest.mark.parametrize("ragged", [False, True])
def test_rocket_random_univariate_and_multivariate(emu, ragged):
    rng = np.random.default_rng(0)
    for C, T, K in [(1, 37, 19), (3, 50, 12)]:
        x = torch.from_numpy(rng.standard_normal((4, C, T)))
        kernels = aeon_kernels(C, T, K, seed=C)
        check_convolve(emu, x, kernels, ragged_lengths(4, T, seed=C) if ragged else None)


@needs_aeon_data
def test_rocket_on_basic_motions(emu):
    x = OPS.rocket_normalise(basic_motions(4), None)
    check_convolve(emu, x, aeon_kernels(6, 100, 20, seed=7), ragged_lengths(4, 100, seed=1), temperatures=(None,))


@pytest.mark.parametrize("seed,concurrent_blocks", [(0, 1), (7, 4), (12345, 3)])
def test_block_orders_and_concurrent_blocks(emu, monkeypatch, seed, concurrent_blocks):
    # Blocks in natural, scrambled and other orders, and several at once (each warp an OS thread).
    monkeypatch.setenv("CUDA_EMU_SEED", str(seed))
    monkeypatch.setenv("CUDA_EMU_CONCURRENT_BLOCKS", str(concurrent_blocks))
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal((5, 2, 60)))
    check_convolve(emu, x, aeon_kernels(2, 60, 30, seed=1), ragged_lengths(5, 60, seed=2), modes=["float32_fma"])
    minirocket_check(emu, x.float(), 336, ragged_lengths(5, 60, seed=3).clamp(min=9))
    multirocket_check(emu, x, 336, ragged_lengths(5, 60, seed=4).clamp(min=10))
    # one channel: the dilation kernels
    minirocket_check(emu, x[:, :1].float().contiguous(), 336, ragged_lengths(5, 60, seed=5).clamp(min=9), launches=1)
    multirocket_check(emu, x[:, :1].contiguous(), 336, ragged_lengths(5, 60, seed=6).clamp(min=10), launches=2)


def test_rocket_long_series_are_read_from_global_memory(emu):
    # 6,400 float64 values are 50 KiB, above the 48 KiB the forward stages in shared memory.
    x = torch.from_numpy(np.random.default_rng(2).standard_normal((2, 1, 6400)))
    check_convolve(emu, x, aeon_kernels(1, 6400, 8, seed=3), temperatures=(None,), modes=["float64", "float32"])


def test_rocket_normalise(emu):
    rng = np.random.default_rng(3)
    for dtype in (torch.float64, torch.float32):
        x = torch.from_numpy(rng.standard_normal((5, 3, 200)) * 3 + 1).to(dtype)
        x[1, 2] = 4.0  # a constant row: std 0 -> 1
        for lengths in (None, ragged_lengths(5, 200, seed=4)):
            assert same_bits(emu.rocket_normalise(x, lengths), OPS.rocket_normalise(x, lengths))


def minirocket_check(emu, x, n_features, lengths=None, params=None, launches=None):
    params = OPS.minirocket_fit(x, n_features, 32, 11) if params is None else params
    want = OPS.minirocket_transform(x, *params, lengths)
    emu.reset_launch_count()
    got = emu.minirocket_transform(x, *params, lengths)
    assert launches is None or emu.launches() == launches
    assert same_bits(got, want)


def test_minirocket_random_univariate_and_ragged(emu):
    x = torch.from_numpy(np.random.default_rng(5).standard_normal((3, 1, 40))).float()
    minirocket_check(emu, x, 168)
    minirocket_check(emu, x, 168, ragged_lengths(3, 40, seed=6).clamp(min=9))


@pytest.mark.parametrize("T", [9, 128, 129, 300, 600, 1100])
def test_minirocket_one_channel_kernel_positions_a_thread_and_passes(emu, T):
    # One launch of dilation_kernel: 1, 1, 2, 4, 8 and 8 positions a thread (128 threads), the
    # last in two passes over the series; ragged cases end inside a thread's positions.
    x = torch.from_numpy(np.random.default_rng(T).standard_normal((2, 1, T))).float()
    minirocket_check(emu, x, 168, launches=1)
    minirocket_check(emu, x, 168, torch.tensor([T, max(9, T // 2 + 3)]), launches=1)


def test_minirocket_both_kernels_in_one_call(emu):
    # Dilations moved onto one channel (channel 2, then channel 0) go to dilation_kernel, the
    # others' multichannel combinations to transform_kernel: two launches, one features matrix.
    x = torch.from_numpy(np.random.default_rng(14).standard_normal((4, 3, 70))).float()
    params = OPS.minirocket_fit(x, 840, 32, 3)
    n_dilations = params[2].numel()
    params = harness_cases.one_channel_dilation(params, 0, 2)
    params = harness_cases.one_channel_dilation(params, n_dilations - 1, 0)
    minirocket_check(emu, x, None, ragged_lengths(4, 70, seed=15).clamp(min=9), params=params, launches=2)


def test_minirocket_more_biases_than_a_chunk(emu):
    # One dilation (T = 9) and 100 features per combination: on one channel, 7 passes of 16
    # counters (dilation_kernel); on two, 2 chunks of 64 (transform_kernel).
    for C in (1, 2):
        x = torch.from_numpy(np.random.default_rng(7).standard_normal((2, C, 9))).float()
        minirocket_check(emu, x, 84 * 100)


@needs_aeon_data
def test_minirocket_and_multirocket_one_channel_kernels_on_gun_point(emu):
    # aeon's default sizes on real univariate data: 10,000 MiniRocket features (16 dilations, 30
    # biases a kernel at dilation 1: two passes of 16) and 6,250 MultiRocket kernels.
    x = gun_point(3)
    minirocket_check(emu, x.float(), 10_000, launches=1)
    multirocket_check(emu, x, 6_250, launches=2)


@needs_aeon_data
def test_minirocket_on_basic_motions(emu):
    minirocket_check(emu, basic_motions(3).float(), 840)


def multirocket_check(emu, x, n_kernels, lengths=None, arguments=None, launches=None):
    if arguments is None:
        p = OPS.multirocket_fit(x, n_kernels, 32, 13)
        arguments = (*p[:5], *p[7:])
    want = OPS.multirocket_transform(x, *arguments, lengths)
    emu.reset_launch_count()
    got = emu.multirocket_transform(x, *arguments, lengths)
    assert launches is None or emu.launches() == launches
    assert same_bits(got, want)


@pytest.mark.parametrize("T", [10, 128, 129, 300])
def test_multirocket_one_channel_kernel_chunks(emu, T):
    # Univariate: dilation_kernel for the series and for its difference (two launches), one chunk
    # of 128 positions or several, features pooled 128 at a time; ragged cases end inside a chunk.
    x = torch.from_numpy(np.random.default_rng(T).standard_normal((2, 1, T))).cumsum(-1)
    multirocket_check(emu, x, 168, launches=2)
    multirocket_check(emu, x, 168, torch.tensor([T, max(10, T // 2 + 3)]), launches=2)


def test_multirocket_both_kernels_in_one_call(emu):
    # A dilation moved onto channel 2 (in both representations) goes to dilation_kernel, the other
    # combinations to transform_kernel: three launches, one features matrix.
    x = torch.from_numpy(np.random.default_rng(16).standard_normal((4, 3, 70))).cumsum(-1)
    p = OPS.multirocket_fit(x, 336, 32, 3)
    arguments = (*harness_cases.one_channel_dilation(p[:5], 0, 2), *p[7:])
    multirocket_check(emu, x, None, ragged_lengths(4, 70, seed=17).clamp(min=10), arguments=arguments, launches=3)


def test_multirocket_random_univariate_ragged_and_empty_segments(emu):
    x = torch.from_numpy(np.random.default_rng(8).standard_normal((3, 1, 40))).cumsum(-1)
    multirocket_check(emu, x, 168)
    # length 10: the trimmed segments of the larger dilations are empty
    multirocket_check(emu, x, 168, torch.tensor([40, 10, 27]))


def test_multirocket_integer_data(emu):
    # Outputs equal to a bias (neither above nor below) and signs of zero.
    x = torch.from_numpy(np.random.default_rng(9).integers(-2, 3, (3, 2, 30)).astype(float))
    multirocket_check(emu, x, 500)


def test_multirocket_overflow_is_refused(emu):
    x = torch.from_numpy(np.random.default_rng(10).standard_normal((2, 1, 20))).cumsum(-1)
    p = OPS.multirocket_fit(x, 84, 32, 1)
    for transform in (OPS.multirocket_transform, emu.multirocket_transform):
        with pytest.raises(ValueError, match="multirocket_transform: expected the convolution outputs to fit in "):
            transform(x * 1e37, *p[:5], *p[7:], None)


@needs_aeon_data
def test_multirocket_on_basic_motions(emu):
    multirocket_check(emu, basic_motions(3), 840)


def hydra_check(emu, x, n_kernels, n_groups, lengths=None, seed=3):
    """Features in float32 (the CPU's 8-lane loop against the device's position-by-position one) and
    float64, and the backward's rows and weights, bit for bit."""
    weights, channels = OPS.hydra_fit(x, n_kernels, n_groups, 8, seed)
    for dtype in (torch.float32, torch.float64):
        xd, wd = x.to(dtype), weights.to(dtype)
        want = OPS.hydra_transform(xd, wd, channels, lengths)
        assert same_bits(emu.hydra_transform(xd, wd, channels, lengths), want)
        grad = torch.from_numpy(np.random.default_rng(seed).standard_normal(tuple(want.shape))).to(dtype)
        for got, expected in zip(emu.hydra_transform_backward(grad, xd, wd, channels, lengths),
                                 OPS._hydra_transform_backward(grad, xd, wd, channels, lengths)):
            assert same_bits(got, expected)


def test_hydra_univariate_ragged(emu):
    x = torch.from_numpy(np.random.default_rng(11).standard_normal((5, 1, 45))).cumsum(-1)
    hydra_check(emu, x, 8, 16)
    hydra_check(emu, x, 8, 16, torch.tensor([45, 6, 17, 8, 30]))


def test_hydra_multivariate_odd_groups_and_many_kernels(emu):
    x = torch.from_numpy(np.random.default_rng(12).standard_normal((4, 5, 33))).cumsum(-1)
    hydra_check(emu, x, 11, 7)  # more kernels than 8 lanes, an odd number of groups
    hydra_check(emu, x, 3, 1)   # one group: the series only


def test_hydra_integer_data_ties(emu):
    # Integer data and responses tie often: both devices keep the first maximum and minimum.
    x = torch.from_numpy(np.random.default_rng(13).integers(-2, 3, (4, 3, 30)).astype(float))
    hydra_check(emu, x, 8, 8)


def test_hydra_overflow_is_refused(emu):
    x = torch.tensor([3e38, -3e38] * 10).expand(2, 1, 20)  # finite; its differences are not
    weights, channels = OPS.hydra_fit(x, 8, 4, 8, 1)
    for transform in (OPS.hydra_transform, emu.hydra_transform):
        with pytest.raises(ValueError, match="hydra_transform: expected the features to be finite"):
            transform(x, weights, channels, None)


@needs_aeon_data
def test_hydra_on_basic_motions(emu):
    hydra_check(emu, basic_motions(3), 8, 64)
