"""Hydra operators, transformer and layer against aeon 1.6's HydraTransformer (kernels and channels
identical; features bit for bit where the convolution is exact, within the stated tolerance on real
data), a float64 reference written from the definitions with torch's conv1d (values and, through
autograd, gradients), finite differences, and the operator contracts (x_lengths, errors,
determinism, devices)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from conftest import DEVICES
from rocket_data import bits, load, random_walks
from softdtw_torch import NotFittedError, release_table_memory
from softdtw_torch.rocket import HydraLayer, HydraTransformer, hydra_parameters_from_aeon

from aeon.transformations.collection.convolution_based import HydraTransformer as AeonHydra  # noqa: E402

ops = torch.ops.softdtw_torch


def reference_features(x, weights, channels):
    """Hydra's features from their definition, in torch ops (aeon's forward, written again): per
    dilation 2^i and representation (x, then diff(x)), the groups' rows (channel 0, or the sum of
    the group's channels), conv1d with padding 4d, count_max as the sum of the first maxima's
    values, count_min as the count of first minima. Differentiable through count_max (autograd)."""
    n, C, _ = x.shape
    D, R, G, K, _ = weights.shape
    reps = [x, torch.diff(x)]
    out = []
    for i in range(D):
        d = 2**i
        for r in range(R):
            src = reps[r]
            if C > 1:
                rows = src[:, channels[i, r]].sum(2)  # (n, G, L)
                z = F.conv1d(rows, weights[i, r].reshape(G * K, 1, 9), dilation=d, padding=4 * d, groups=G)
            else:
                z = F.conv1d(src[:, :1], weights[i, r].reshape(G * K, 1, 9), dilation=d, padding=4 * d)
            z = z.view(n, G, K, -1)
            max_values, max_indices = z.max(2)
            min_indices = z.min(2).indices
            count_max = torch.zeros(n, G, K, dtype=x.dtype).scatter_add(-1, max_indices, max_values)
            count_min = torch.zeros(n, G, K, dtype=x.dtype).scatter_add(
                -1, min_indices, torch.ones_like(max_values))
            out += [count_max, count_min]
    return torch.cat(out, 1).reshape(n, -1)


def aeon_parameters(aeon):
    return hydra_parameters_from_aeon(aeon._hydra.W, aeon._hydra.idx, aeon._hydra.k)


# ---------------------------------------------------------------------------------------------
# Parity with aeon.


@pytest.mark.parametrize("shape", [(3, 1, 150), (2, 6, 100), (2, 20, 37), (1, 3, 6), (1, 1, 1000)])
@pytest.mark.parametrize("n_kernels, n_groups, max_num_channels", [(8, 64, 8), (4, 16, 16), (3, 1, 2), (12, 7, 1)])
@pytest.mark.parametrize("seed", [0, 2**32 - 1])
def test_fit_matches_aeon(shape, n_kernels, n_groups, max_num_channels, seed):
    X = random_walks(*shape)
    aeon = AeonHydra(n_kernels=n_kernels, n_groups=n_groups, max_num_channels=max_num_channels,
                     random_state=seed).fit(X)
    ours = HydraTransformer(n_kernels=n_kernels, n_groups=n_groups, max_num_channels=max_num_channels,
                            random_state=seed).fit(X)
    weights, channels = aeon_parameters(aeon)
    assert ours.weights_.dtype == torch.float32 and ours.channels_.dtype == torch.int64
    assert torch.equal(ours.weights_, weights)
    assert torch.equal(ours.channels_, channels)


def test_fit_draws_a_seed_from_a_random_state_as_aeon_does():
    X = random_walks(2, 3, 60)
    aeon = AeonHydra(random_state=np.random.RandomState(5)).fit(X)
    ours = HydraTransformer(random_state=np.random.RandomState(5)).fit(X)
    assert torch.equal(ours.weights_, aeon_parameters(aeon)[0])


@pytest.mark.parametrize("shape", [(6, 1, 150), (5, 6, 100), (4, 20, 37)])
def test_transform_matches_aeon_bit_for_bit_where_the_convolution_is_exact(shape):
    # Small integers and weights on a grid of 1/64: every response is exact in any order of
    # operations, so aeon's oneDNN convolution and ours agree and the features must be bit-identical,
    # ties included (integer data ties often: both take the first maximum and minimum).
    X = np.random.RandomState(1).randint(-4, 5, size=shape).astype(np.float64)
    aeon = AeonHydra(n_kernels=8, n_groups=16, random_state=3).fit(X)
    aeon._hydra.W = torch.round(aeon._hydra.W * 64) / 64
    expected = aeon.transform(X)
    ours = HydraTransformer.from_aeon(aeon)
    got = ours.transform(X)
    assert got.dtype == np.float32 and got.shape == tuple(expected.shape)
    np.testing.assert_array_equal(bits(got), bits(expected))


# The agreement measured on the bundled data (aeon's defaults, random_state=0, TEST split, the 2-core
# AVX2 development machine); docs/user_guide/rocket.md quotes these. Features differ only where aeon's convolution
# rounds otherwise (its last n_timepoints mod 8 positions of a row): the count_min features were all
# equal (no first minimum moved), the count_max features within float32 rounding of their sums.
SAME_FRACTION = {"GunPoint": 0.98, "ArrowHead": 0.99, "BasicMotions": 0.95, "ItalyPowerDemand": 0.94}


@pytest.mark.parametrize("name", sorted(SAME_FRACTION))
def test_transform_matches_aeon_within_the_stated_tolerance(name):
    X_train, X_test = load(name, "TRAIN"), load(name, "TEST")
    aeon = AeonHydra(random_state=0).fit(X_train)
    ours = HydraTransformer(random_state=0).fit(X_train)
    expected = aeon.transform(X_test).numpy()
    got = ours.transform(X_test)
    assert got.shape == expected.shape
    assert (bits(got) == bits(expected)).mean() >= SAME_FRACTION[name]
    n, G, K = got.shape[0], ours.weights_.shape[2], ours.weights_.shape[3]
    got_blocks, expected_blocks = got.reshape(n, -1, 2, G * K), expected.reshape(n, -1, 2, G * K)
    np.testing.assert_array_equal(got_blocks[:, :, 1], expected_blocks[:, :, 1])  # count_min
    scale = np.abs(expected_blocks[:, :, 0]).max()
    np.testing.assert_allclose(got_blocks[:, :, 0], expected_blocks[:, :, 0], rtol=0, atol=1e-6 * scale)


# ---------------------------------------------------------------------------------------------
# The definition, in float64.


@pytest.mark.parametrize("shape, n_kernels, n_groups", [((4, 1, 40), 8, 16), ((3, 5, 33), 5, 6), ((2, 2, 6), 3, 1)])
def test_float64_features_match_the_definition(shape, n_kernels, n_groups):
    x = torch.from_numpy(random_walks(*shape, seed=2))
    weights, channels = ops.hydra_fit(x, n_kernels, n_groups, 8, 4)
    w64 = weights.double()
    got = ops.hydra_transform(x, w64, channels)
    assert got.dtype == torch.float64
    expected = reference_features(x, w64, channels)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def test_float32_features_match_the_definition_up_to_rounding():
    x = torch.from_numpy(random_walks(5, 3, 64, seed=3)).float()
    weights, channels = ops.hydra_fit(x, 8, 32, 8, 6)
    got = ops.hydra_transform(x, weights, channels)
    expected = reference_features(x.double(), weights.double(), channels).float()
    n = x.shape[0]
    got_min = got.reshape(n, -1, 2, 16 * 8)[:, :, 1]
    expected_min = expected.reshape(n, -1, 2, 16 * 8)[:, :, 1]
    assert (got_min == expected_min).float().mean() > 0.999  # a near-tie may move one count
    torch.testing.assert_close(got, expected, rtol=1e-3, atol=2.0)


# ---------------------------------------------------------------------------------------------
# Gradients.


@pytest.mark.parametrize("n_channels", [1, 3])
def test_gradients_match_the_definition_and_finite_differences(n_channels):
    x = torch.from_numpy(random_walks(2, n_channels, 14, seed=7)).requires_grad_()
    weights, channels = ops.hydra_fit(x.detach(), 3, 4, 8, 11)
    w = weights.double().requires_grad_()
    out = ops.hydra_transform(x, w, channels)
    g = torch.randn_like(out)
    gx, gw = torch.autograd.grad(out, (x, w), g)
    ref = reference_features(x, w, channels)
    rx, rw = torch.autograd.grad(ref, (x, w), g)
    torch.testing.assert_close(gx, rx, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(gw, rw, rtol=1e-10, atol=1e-10)
    assert torch.autograd.gradcheck(lambda a, b: ops.hydra_transform(a, b, channels), (x, w), eps=1e-6, atol=1e-6)


def test_gradients_with_lengths_follow_each_case_alone():
    x = torch.from_numpy(random_walks(3, 2, 30, seed=8)).requires_grad_()
    weights, channels = ops.hydra_fit(x.detach(), 4, 8, 8, 2)
    w = weights.double()
    lengths = torch.tensor([30, 11, 6])
    g = torch.randn(3, w.shape[0] * 2 * 2 * 4 * 4, dtype=torch.float64)
    (gx,) = torch.autograd.grad(ops.hydra_transform(x, w, channels, lengths), x, g)
    for i, length in enumerate(lengths.tolist()):
        xi = x.detach()[i:i + 1, :, :length].clone().requires_grad_()
        (gi,) = torch.autograd.grad(ops.hydra_transform(xi, w, channels), xi, g[i:i + 1])
        torch.testing.assert_close(gx[i, :, :length], gi[0], rtol=0, atol=0)
        assert not gx[i, :, length:].any()


def test_double_backward_is_refused():
    x = torch.from_numpy(random_walks(2, 1, 20)).requires_grad_()
    weights, channels = ops.hydra_fit(x.detach(), 8, 4, 8, 0)
    out = ops.hydra_transform(x, weights.double(), channels)
    with pytest.raises(RuntimeError, match="hydra_transform: double backward"):
        torch.autograd.grad(out.sum(), x, create_graph=True)


def test_layer_trains_and_scripts():
    torch.manual_seed(0)
    layer = HydraLayer(c_in=2, seq_len=32, n_kernels=4, n_groups=8, learnable=True, seed=1)
    assert isinstance(layer.weights, torch.nn.Parameter)
    x = torch.randn(6, 2, 32)
    out = layer(x)
    assert out.shape == (6, layer.n_features) and out.dtype == torch.float32
    out.sum().backward()
    assert layer.weights.grad is not None and layer.weights.grad.abs().sum() > 0
    scripted = torch.jit.script(layer)
    torch.testing.assert_close(scripted(x), layer(x), rtol=0, atol=0)
    frozen = HydraLayer(c_in=2, seq_len=32, seed=1)
    assert "weights" in dict(frozen.named_buffers())
    # The layer's kernels are the transformer's for the same seed.
    t = HydraTransformer(random_state=1).fit(np.zeros((1, 2, 32)))
    assert torch.equal(frozen.weights, t.weights_)


# ---------------------------------------------------------------------------------------------
# Operator contracts.


def test_lengths_transform_each_case_alone():
    x = torch.from_numpy(random_walks(4, 3, 50, seed=9)).float()
    weights, channels = ops.hydra_fit(x, 8, 16, 8, 1)
    lengths = torch.tensor([50, 6, 17, 33])
    x_padded = x.clone()
    x_padded[1, :, 6:] = float("nan")  # never read
    got = ops.hydra_transform(x_padded, weights, channels, lengths)
    for i, length in enumerate(lengths.tolist()):
        alone = ops.hydra_transform(x[i:i + 1, :, :length], weights, channels)
        np.testing.assert_array_equal(bits(got[i]), bits(alone[0]))


def test_features_written_over_a_kept_block_are_the_same_bits():
    # A features matrix of 1 MiB or more comes from the block the CPU keeps from the last freed big
    # table (csrc/common/table_memory.h). The block still holds the previous features when it is
    # taken: every feature must be written again.
    x = torch.from_numpy(random_walks(96, 2, 50, seed=10)).float()  # 96 cases x 3,072 features: 1.2 MB
    weights, channels = ops.hydra_fit(x, 8, 64, 8, 2)
    lengths = torch.tensor([50, 6] * 48)
    release_table_memory()
    full = ops.hydra_transform(x, weights, channels)
    block, nbytes = full.data_ptr(), full.nbytes
    assert nbytes >= 2**20
    del full  # its block is kept ...
    ragged = ops.hydra_transform(x, weights, channels, lengths)  # ... and taken, holding the full features
    assert ragged.data_ptr() == block
    for i, length in enumerate(lengths.tolist()):  # each case alone (a small matrix, from the allocator)
        alone = ops.hydra_transform(x[i:i + 1, :, :length], weights, channels)
        np.testing.assert_array_equal(bits(ragged[i]), bits(alone[0]))
    expected = reference_features(x[:1].double(), weights.double(), channels)  # the full-length case
    np.testing.assert_allclose(ragged[:1].double().numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)
    del ragged
    assert release_table_memory() == nbytes


def test_same_bits_at_any_thread_count_and_input_dtype():
    x = torch.from_numpy(random_walks(9, 4, 90, seed=5))
    weights, channels = ops.hydra_fit(x, 8, 64, 8, 3)
    def features_and_gradients():
        xf, w = x.float().requires_grad_(), weights.clone().requires_grad_()
        out = ops.hydra_transform(xf, w, channels)
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(6))
        return (out.detach(), *torch.autograd.grad(out, (xf, w), g))

    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = features_and_gradients()
        torch.set_num_threads(max(2, previous))
        many = features_and_gradients()
    finally:
        torch.set_num_threads(previous)
    assert one[1].abs().sum() > 0 and one[2].abs().sum() > 0  # the backward has work to share out
    for a, b in zip(one, many):  # features, then the backward's series and weight gradients
        np.testing.assert_array_equal(bits(a), bits(b))
    for dtype in (torch.float16, torch.bfloat16):
        xd = x.to(dtype)
        np.testing.assert_array_equal(bits(ops.hydra_transform(xd, weights, channels)),
                                      bits(ops.hydra_transform(xd.float(), weights, channels)))


@pytest.mark.parametrize("device", DEVICES)
def test_devices_agree(device):
    x = torch.from_numpy(random_walks(4, 3, 70, seed=6)).float()
    weights, channels = ops.hydra_fit(x, 8, 32, 8, 1)
    cpu = ops.hydra_transform(x, weights, channels)
    other = ops.hydra_transform(x.to(device), weights.to(device), channels.to(device))
    np.testing.assert_array_equal(bits(cpu), bits(other))


def test_errors_name_the_op_and_what_came():
    x = torch.randn(2, 3, 20, generator=torch.Generator().manual_seed(0))
    weights, channels = ops.hydra_fit(x, 4, 8, 8, 0)
    alternating = torch.tensor([3e38, -3e38] * 10).expand(2, 3, 20)  # finite, differences are not
    cases = [
        (ValueError, "hydra_fit: expected at least 6 time points", lambda: ops.hydra_fit(x[:, :, :5], 4, 8, 8, 0)),
        (ValueError, "hydra_fit: expected n_kernels >= 1", lambda: ops.hydra_fit(x, 0, 8, 8, 0)),
        (ValueError, "hydra_fit: expected n_groups >= 1", lambda: ops.hydra_fit(x, 4, 0, 8, 0)),
        (ValueError, "hydra_fit: expected max_num_channels >= 1", lambda: ops.hydra_fit(x, 4, 8, 0, 0)),
        (ValueError, r"hydra_fit: expected seed in \[0, 2\*\*32 - 1\]", lambda: ops.hydra_fit(x, 4, 8, 8, -1)),
        (ValueError, "hydra_transform: expected x to be a 3-D tensor",
         lambda: ops.hydra_transform(x[0], weights, channels)),
        (TypeError, "hydra_transform: expected x to be a floating-point tensor",
         lambda: ops.hydra_transform(x.int(), weights, channels)),
        (ValueError, "hydra_transform: expected weights of shape",
         lambda: ops.hydra_transform(x, weights[..., :8], channels)),
        (ValueError, "hydra_transform: expected channels of shape",
         lambda: ops.hydra_transform(x, weights, channels[:, :1])),
        (ValueError, r"hydra_transform: expected channels in \[0, 3\)",
         lambda: ops.hydra_transform(x, weights, channels + 3)),
        (TypeError, "hydra_transform: expected channels to be an integer tensor",
         lambda: ops.hydra_transform(x, weights, channels.float())),
        (ValueError, "hydra_transform: expected finite weights", lambda: ops.hydra_transform(x, weights / 0, channels)),
        (ValueError, "hydra_transform: expected x to contain only finite values",
         lambda: ops.hydra_transform(x.masked_fill(x > 1, float("nan")), weights, channels)),
        (ValueError, r"hydra_transform: expected x_lengths values in \[6, 20\]",
         lambda: ops.hydra_transform(x, weights, channels, torch.tensor([5, 20]))),
        (ValueError, r"hydra_transform: expected x_lengths of shape \(2,\)",
         lambda: ops.hydra_transform(x, weights, channels, torch.tensor([20]))),
        (ValueError, "hydra_transform: expected the features to be finite, got inf or NaN",  # the difference
         lambda: ops.hydra_transform(alternating, weights, channels)),
        (ValueError, "hydra_transform: expected the features to be finite, got inf or NaN",
         lambda: ops.hydra_transform(x, weights * 1e38, channels)),
        (ValueError, "hydra_transform: expected 1 or 2 representations",
         lambda: ops.hydra_transform(x, torch.cat([weights] * 2, 1), torch.cat([channels] * 2, 1))),
    ]
    for error, message, call in cases:
        with pytest.raises(error, match=message):
            call()


def test_transformer_contract():
    X = random_walks(5, 2, 40)
    with pytest.raises(NotFittedError):
        HydraTransformer().transform(X)
    with pytest.raises(TypeError, match="HydraTransformer.fit: expected n_kernels to be an int"):
        HydraTransformer(n_kernels=2.5).fit(X)
    with pytest.raises(ValueError, match="HydraTransformer.fit: expected n_groups >= 1, got 0"):
        HydraTransformer(n_groups=0).fit(X)
    t = HydraTransformer(random_state=0).fit(X)
    with pytest.raises(ValueError, match="HydraTransformer.transform: expected X with 2 channels"):
        t.transform(X[:, :1])
    with pytest.raises(ValueError, match="HydraTransformer.transform: expected X with 40 time points"):
        t.transform(X[:, :, :30])
    # numpy in, numpy out; tensors stay tensors; 2-D input is one channel; float64 input computes
    # in float32, as aeon's torch.tensor(X).float().
    out = t.transform(X)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    tensor_out = t.transform(torch.from_numpy(X))
    assert isinstance(tensor_out, torch.Tensor) and tensor_out.dtype == torch.float32
    np.testing.assert_array_equal(bits(out), bits(tensor_out))
    uni = HydraTransformer(random_state=0).fit(X[:, 0])
    np.testing.assert_array_equal(bits(uni.transform(X[:, 0])), bits(uni.transform(X[:, :1])))
