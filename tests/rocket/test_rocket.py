"""ROCKET transform: parity with aeon (its convolution code and its Normalizer), a float64
reference for lengths and gradients, errors, determinism, TorchScript / compile (opcheck: tests/infra/test_opcheck.py)."""
import os

import numpy as np
import pytest
import torch
from numba import njit

from aeon.transformations.collection import Normalizer
from aeon.transformations.collection.convolution_based import Rocket as AeonRocket
from aeon.transformations.collection.convolution_based import _rocket as aeon_rocket

import softdtw_torch  # noqa: F401
from softdtw_torch.datasets import load_ts
from softdtw_torch.rocket import Rocket, RocketLayer, kernels_from_aeon, rocket_transform

from conftest import DEVICES
from test_rocket_generate import BIT_EXACT_TARGETS, assert_weights_match_aeon, numba_target_cpu

from conftest import AEON_DATASETS as DATA  # noqa: E402
EQUAL_LENGTH = ["UnitTest", "GunPoint", "ItalyPowerDemand", "ArrowHead", "OSULeaf", "ACSF1", "BasicMotions"]
ops = torch.ops.softdtw_torch

# aeon's convolution code (the Python source of its numba kernels) compiled with only the
# contraction flag of fastmath: the terms in aeon's source order, one FMA each (float32_fma and
# float64 modes), or with no fastmath at all: two roundings per term (float32 mode). Without
# reassociation LLVM cannot reorder the sums, so these are the arithmetic aeon's code asks for.
def _compile_aeon_kernels(fastmath):
    uni = njit(fastmath=fastmath)(aeon_rocket._apply_kernel_univariate.py_func)
    multi = njit(fastmath=fastmath)(aeon_rocket._apply_kernel_multivariate.py_func)
    glb = dict(aeon_rocket._apply_kernels.py_func.__globals__, _apply_kernel_univariate=uni,
               _apply_kernel_multivariate=multi, prange=range)
    fn = type(aeon_rocket._apply_kernels.py_func)(aeon_rocket._apply_kernels.py_func.__code__, glb)
    return njit(fastmath=fastmath)(fn)


AEON_FMA = _compile_aeon_kernels({"contract"})
AEON_NO_FMA = _compile_aeon_kernels(False)


def load(name, split):
    X, y = load_ts(os.path.join(DATA, name, f"{name}_{split}.ts"))
    return X, y


def ours(X, kernels, normalise=True, accumulate="float32_fma", device="cpu", x_lengths=None):
    k = [t.to(device) for t in kernels_from_aeon(kernels)]
    out = rocket_transform(torch.as_tensor(X).to(device), k, normalise, accumulate, x_lengths)
    return out.cpu().numpy()


def n_bits_different(a, b):
    return int((np.asarray(a, np.float32).view(np.int32) != np.asarray(b, np.float32).view(np.int32)).sum())


@pytest.fixture(scope="module", params=EQUAL_LENGTH)
def dataset(request):
    Xtr, _ = load(request.param, "TRAIN")
    Xte, _ = load(request.param, "TEST")
    kernels = AeonRocket(n_kernels=500, random_state=7).fit(Xtr).kernels
    return request.param, Xte, kernels


def test_normalise_is_aeons_normalizer_bit_for_bit(dataset):
    _, X, _ = dataset
    for dtype in (np.float64, np.float32):
        Xd = X.astype(dtype)
        expected = Normalizer().fit_transform(Xd)
        got = ops.rocket_normalise(torch.from_numpy(Xd)).numpy()
        assert got.dtype == expected.dtype
        assert np.array_equal(got.view(np.uint8), expected.view(np.uint8))


def test_float64_mode_is_aeons_kernel_code_on_float64_bit_for_bit(dataset):
    # aeon's own compiled _apply_kernels (fastmath) on float64 input: what aeon <= 1.5 returned.
    name, X, kernels = dataset
    expected = aeon_rocket._apply_kernels(Normalizer().fit_transform(X), kernels)
    assert n_bits_different(ours(X, kernels, accumulate="float64"), expected) == 0, name


@pytest.mark.parametrize("accumulate,reference", [("float32_fma", AEON_FMA), ("float32", AEON_NO_FMA)])
def test_float32_modes_follow_aeons_source_order_bit_for_bit(dataset, accumulate, reference):
    name, X, kernels = dataset
    for X_in in (X, X.astype(np.float32)):  # float64 input is normalised in float64, then cast (aeon)
        expected = reference(Normalizer().fit_transform(X_in).astype(np.float32), kernels)
        assert n_bits_different(ours(X_in, kernels, accumulate=accumulate), expected) == 0, name


def test_float32_fma_against_aeons_transform(dataset):
    # aeon >= 1.6's float32 transform lets numba vectorise the tap loop for the host CPU, so its
    # sums are reassociated; our features agree to float32 rounding: MAX within 1e-5 relative,
    # PPV counts differing only where a response is within rounding of 0.
    name, X, kernels = dataset
    aeon = AeonRocket(n_kernels=len(kernels[1]))
    aeon.kernels, aeon._n_jobs, aeon.normalise = kernels, 1, True
    expected = aeon._transform(X)
    got = ours(X, kernels)
    np.testing.assert_allclose(got[:, 1::2], expected[:, 1::2], rtol=1e-5, atol=1e-5)
    assert np.abs(got[:, 0::2] - expected[:, 0::2]).max() <= 0.05
    assert np.mean(got[:, 0::2] != expected[:, 0::2]) < 0.01



def test_default_mode_against_aeon_transform_gunpoint_10k():
    # The numbers of docs/user_guide/rocket.md ("Accumulation modes"): RocketClassifier's configuration (10,000 kernels,
    # random_state=0, fitted on GunPoint TRAIN), default accumulate, against aeon's own transform of
    # TEST. The stated bounds: MAX within 1e-5, a PPV differs by at most one count, on < 1% of PPVs.
    # Measured on the 2-core AMD EPYC (AVX2): 5.2% of features differ in some bit, MAX by <= 1.4e-6,
    # 3 of 1,500,000 PPVs by one count; the fraction depends on how numba vectorises for the CPU.
    X_train, _ = load("GunPoint", "TRAIN")
    X_test, _ = load("GunPoint", "TEST")
    aeon = AeonRocket(n_kernels=10_000, random_state=0, n_jobs=1).fit(X_train)
    expected = aeon.transform(X_test)
    got = Rocket.from_kernels(aeon.kernels).transform(X_test)
    assert got.dtype == expected.dtype == np.float32 and got.shape == expected.shape
    assert np.abs(got[:, 1::2] - expected[:, 1::2]).max() <= 1e-5
    _, lengths, _, dilations, paddings, _, _ = aeon.kernels
    out_len = X_test.shape[-1] + 2 * paddings - (lengths - 1) * dilations  # PPV = count / out_len
    counts = np.abs(got[:, 0::2].astype(np.float64) - expected[:, 0::2]) * out_len
    assert counts.max() <= 1 + 1e-4
    assert np.mean(got[:, 0::2] != expected[:, 0::2]) < 0.01
    # With aeon's kernel code compiled in its source order, the default mode is exact.
    reference = AEON_FMA(Normalizer().fit_transform(X_test).astype(np.float32), aeon.kernels)
    assert n_bits_different(got, reference) == 0

def integer_series_and_kernels(n_channels):
    """11 integer series of 157 values and 400 aeon kernels with integer weights and biases, some of
    -0.0, every fifth kernel all zeros: many responses tie for the maximum, zeros of either sign."""
    X = np.random.default_rng(4).integers(-2, 3, size=(11, n_channels, 157)).astype(np.float64)
    X[0] = -1 - np.abs(X[0])  # negative: zero weights give -0 everywhere
    X[1, :, :40] = -1 - np.abs(X[1, :, :40])  # -0 first, then zeros of both signs
    w, lengths, b, d, p, m, ch = aeon_rocket._generate_kernels(157, 400, n_channels, 6)
    w = np.round(2 * w).astype(w.dtype)
    b = np.where(np.arange(len(b)) % 2 == 0, -0.0, np.round(b)).astype(b.dtype)
    ends = np.cumsum(m * lengths)
    for k in range(0, len(lengths), 5):  # all-zero weights: every response is a zero, of either sign
        w[ends[k] - m[k] * lengths[k]:ends[k]] = 0
    return X, (w, lengths, b, d, p, m, ch)


@pytest.mark.parametrize("n_channels", [1, 3])
def test_ties_and_signed_zeros_keep_aeons_first_maximum(n_channels):
    # The MAX feature must carry the bits of the first maximum (aeon's strict `>`), however the
    # kernel splits positions into register blocks, edges and lanes, and cases into groups of 8
    # (one vector lane each; 16 on Intel CPUs with AVX-512), a partial group or a case alone:
    # 11 cases (8 + 3; one partial group of 16), 9 (8 + 1; partial 16), 27 (3·8 + 3; 16 + partial
    # 11) and 33 (4·8 + 1; 2·16 + 1), the 11 series repeated.
    X, kernels = integer_series_and_kernels(n_channels)
    w, lengths, b, d, p, m, ch = kernels
    maxima = AEON_FMA(X.astype(np.float32), kernels)[:, 1::2]
    assert (maxima == 0).any() and np.signbit(maxima[maxima == 0]).any()  # the case is exercised
    repeated = np.concatenate([X, X, X, X])
    for accumulate, reference, dtype in [("float32_fma", AEON_FMA, np.float32), ("float32", AEON_NO_FMA, np.float32),
                                         ("float64", AEON_FMA, np.float64)]:
        for n_cases in (11, 9, 27, 33):
            expected = reference(repeated[:n_cases].astype(dtype), kernels)
            got = ours(repeated[:n_cases], kernels, normalise=False, accumulate=accumulate)
            assert n_bits_different(got, expected) == 0, (accumulate, n_cases)
    # 12 positions: most kernels have no output position (both features 0, documented); grouped
    # cases give what each case gives alone.
    short = ours(X[:, :, :12], kernels, normalise=False)
    alone = np.concatenate([ours(X[i:i + 1, :, :12], kernels, normalise=False) for i in range(len(X))])
    assert n_bits_different(short, alone) == 0
    none = (12 + 2 * p - (lengths - 1) * d) <= 0
    assert none.any() and (short.reshape(len(X), -1, 2)[:, none] == 0).all()


@pytest.mark.parametrize("accumulate", ["float32_fma", "float32"])
def test_split_partial_group_gives_each_case_alone(accumulate):
    # A last group of at most half a vector of cases runs split: each case in two lanes, the
    # second scanning the later half of the positions, the two scans joined (rocket.md §5). 2, 5,
    # 6, 18 and 20 cases end in such a group with 8 lanes, 16 lanes or both. The data: maxima tied
    # between the halves (the second half repeats the first), a maximum only in the second half,
    # responses that overflow to inf and NaN (|x| near float32's largest) early and late, and
    # unpadded kernels whose output ends inside the first half. Features and first maxima must be
    # those of each case transformed alone (one scan, another code path).
    X, kernels = integer_series_and_kernels(2)
    w, lengths, b, d, p, m, ch = kernels
    T, half = X.shape[2], (X.shape[2] + 1) // 2
    out_len = T + 2 * p - (lengths - 1) * d
    assert ((out_len > 0) & (out_len < half)).any()  # outputs shorter than the first half
    X = X.copy()
    X[2, :, half:] = X[2, :, :T - half]
    X[3, :, T - 5] = 50
    X[4, :, 10], X[4, :, 11] = 3e38, -3e38
    X[6, :, T - 3] = -3e38
    # NaN at the second half's first position and large values after it, read by no position of
    # the first half: the last tap of a two-channel kernel that reaches `reach` positions ahead
    # reads +-3e38 at half + reach in both channels (the maximum must not stay NaN there).
    for case, reach in zip((5, 7, 8, 9, 10), (3, 4, 5, 6, 8)):
        X[case, 0, half + reach], X[case, 1, half + reach] = 3e38, -3e38
    x = torch.from_numpy(np.concatenate([X, X]))
    k = kernels_from_aeon(kernels)
    for n_cases in (2, 5, 6, 18, 20):
        features, argmax = ops._rocket_convolve_forward(x[:n_cases], *k, accumulate, None, None)
        for i in range(n_cases):
            alone, argmax_alone = ops._rocket_convolve_forward(x[i:i + 1], *k, accumulate, None, None)
            assert n_bits_different(features[i], alone[0]) == 0, (n_cases, i)
            assert torch.equal(argmax[i], argmax_alone[0]), (n_cases, i)
    assert torch.isinf(features).any()  # overflowing responses are exercised (a NaN one is a MAX only at 0)


@pytest.mark.parametrize("accumulate", ["float32_fma", "float32", "float64"])
def test_argmax_for_the_gradient_is_the_first_maximum(accumulate):
    # The backward routes MAX's gradient through the forward's argmax: for grouped cases (the first
    # 8), a partial group (11 cases) and a case alone (9 cases) it must be the first position of
    # the maximum. Integer data: every response is exact, so torch.argmax (first occurrence) of
    # the float64 responses is the reference.
    X, kernels = integer_series_and_kernels(3)
    w, lengths, b, d, p, m, ch = kernels
    k = kernels_from_aeon(kernels)
    _, argmax = ops._rocket_convolve_forward(torch.from_numpy(X), *k, accumulate, None, None)
    _, argmax_of_9 = ops._rocket_convolve_forward(torch.from_numpy(X[:9]), *k, accumulate, None, None)
    assert torch.equal(argmax_of_9, argmax[:9])
    x = torch.from_numpy(X)
    wo = co = 0
    for j in range(len(lengths)):
        L, dj, pj, mj = int(lengths[j]), int(d[j]), int(p[j]), int(m[j])
        weights = torch.from_numpy(w[wo:wo + mj * L].astype(np.float64)).reshape(mj, L)
        padded = torch.nn.functional.pad(x[:, torch.from_numpy(ch[co:co + mj].astype(np.int64))], (pj, pj))
        out_len = X.shape[2] + 2 * pj - (L - 1) * dj
        s = float(b[j]) + sum(weights[c, t] * padded[:, c, t * dj:t * dj + out_len]
                              for t in range(L) for c in range(mj))
        assert torch.equal(argmax[:, j], s.argmax(1)), j
        wo, co = wo + mj * L, co + mj


# --- float64 reference (torch, autograd) ------------------------------------------------------
def reference_features(x, kernels, ppv_temperature=None):
    """float64 ROCKET features of x (n, C, T) written from the definition: zero-padded dilated
    convolution over the selected channels; PPV and MAX (or soft PPV) per kernel."""
    w_all, lengths, b, d, p, m, ch = kernels
    feats, wo, co = [], 0, 0
    for k in range(len(lengths)):
        L, dk, pk, mk = int(lengths[k]), int(d[k]), int(p[k]), int(m[k])
        w = w_all[wo:wo + mk * L].reshape(mk, L).double()
        sel = x[:, ch[co:co + mk].long(), :].double()
        padded = torch.nn.functional.pad(sel, (pk, pk))
        out_len = x.shape[2] + 2 * pk - (L - 1) * dk
        s = b[k].double() + sum(
            (w[c, j] * padded[:, c, j * dk:j * dk + out_len]) for j in range(L) for c in range(mk))
        ppv = (s > 0).double().mean(1) if ppv_temperature is None else torch.sigmoid(s / ppv_temperature).mean(1)
        feats += [ppv, s.max(1).values]
        wo, co = wo + mk * L, co + mk
    return torch.stack(feats, 1)


def small_kernels(C, T, K=12, seed=3):
    return kernels_from_aeon(aeon_rocket._generate_kernels(T, K, C, seed))


@pytest.mark.parametrize("device", DEVICES)
def test_x_lengths_transform_each_case_alone(device):
    rng = np.random.default_rng(0)
    C, T = 3, 40
    kernels = small_kernels(C, T, K=40)
    lengths = [40, 25, 11, 3]
    X = rng.standard_normal((4, C, T))
    X_padded = X.copy()
    for i, n in enumerate(lengths):
        X_padded[i, :, n:] = 1e3 * rng.standard_normal((C, T - n))  # must be ignored
    for accumulate in ("float64", "float32_fma"):
        got = ours(X_padded, kernels, accumulate=accumulate, device=device,
                   x_lengths=torch.tensor(lengths, device=device))
        for i, n in enumerate(lengths):
            alone = ours(X[i:i + 1, :, :n], kernels, accumulate=accumulate, device=device)
            assert n_bits_different(got[i], alone[0]) == 0
    # a kernel with no output position on a short case: both features 0 (documented)
    short = ours(X[3:4, :, :3], kernels, accumulate="float64")[0]
    w, L, b, d, p, m, ch = kernels
    none = (3 + 2 * p - (L - 1) * d) <= 0
    assert none.any()
    assert (short.reshape(-1, 2)[none.numpy()] == 0).all()


@pytest.mark.parametrize("device", DEVICES)
def test_features_match_float64_reference(device):
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.standard_normal((5, 2, 30)))
    kernels = small_kernels(2, 30, K=30)
    expected = reference_features(ops.rocket_normalise(x), kernels)
    got = torch.from_numpy(ours(x, kernels, accumulate="float64", device=device))
    torch.testing.assert_close(got.double(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ppv_temperature", [None, 0.5])
def test_gradients_match_float64_reference(device, ppv_temperature):
    rng = np.random.default_rng(2)
    kernels = small_kernels(2, 24, K=16)
    x0 = torch.from_numpy(rng.standard_normal((3, 2, 24)))
    g = torch.from_numpy(rng.standard_normal((3, 32)))

    def grads(fn, x, w, b):
        x, w, b = (t.clone().requires_grad_(True) for t in (x, w, b))
        (fn(x, w, b).double() * g.to(x.device)).sum().backward()
        return [t.grad.double().cpu() for t in (x, w, b)]

    k = list(kernels)

    def ours_fn(x, w, b):
        kk = [t.to(device) for t in k]
        kk[0], kk[2] = w, b
        return rocket_transform(x, kk, True, "float64", None, ppv_temperature)

    def ref_fn(x, w, b):
        kk = list(k)
        kk[0], kk[2] = w, b
        # normalisation written out: population std, std == 0 -> 1
        mu = x.mean(-1, keepdim=True)
        sd = ((x - mu) ** 2).mean(-1, keepdim=True).sqrt()
        return reference_features((x - mu) / sd, kk, ppv_temperature)

    got = grads(ours_fn, x0.to(device), kernels.weights.to(device), kernels.biases.to(device))
    expected = grads(ref_fn, x0, kernels.weights.double(), kernels.biases.double())
    for a, e in zip(got, expected):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6)


def test_hard_ppv_has_zero_gradient_and_max_gradient_is_sparse():
    kernels = small_kernels(1, 20, K=1)
    x = torch.randn(1, 1, 20, dtype=torch.float64, requires_grad=True)
    f = rocket_transform(x, kernels, False, "float64")
    (ppv_grad,) = torch.autograd.grad(f[0, 0], x, retain_graph=True)
    assert (ppv_grad == 0).all()
    (max_grad,) = torch.autograd.grad(f[0, 1], x)
    assert 0 < int((max_grad != 0).sum()) <= int(kernels.lengths[0])


def test_double_backward_is_refused():
    kernels = small_kernels(1, 20, K=2)
    x = torch.randn(2, 1, 20, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="rocket_convolve: double backward"):
        torch.autograd.grad(rocket_transform(x, kernels).sum(), x, create_graph=True)


@pytest.mark.parametrize("n_cases", [9, 41])
def test_deterministic_across_thread_counts_and_batch_split(n_cases):
    # 9 cases: one group of 8 lanes and a case alone; 41: five groups and a case alone. With 16
    # lanes (Intel CPUs with AVX-512): one partial group of 9; two groups and a partial one of 9.
    # Each group's kernels run in runs shared out between the threads. Cases one by one run alone.
    rng = np.random.default_rng(3)
    X = rng.standard_normal((n_cases, 2, 60))
    kernels = small_kernels(2, 60, K=64)
    before = torch.get_num_threads()
    try:
        results = []
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            results.append(ours(X, kernels))
            results.append(np.concatenate([ours(X[i:i + 1], kernels) for i in range(len(X))]))
    finally:
        torch.set_num_threads(before)
    for r in results[1:]:
        assert n_bits_different(r, results[0]) == 0


# --- errors -------------------------------------------------------------------------------------
def test_errors_name_the_op_and_what_came():
    k = list(small_kernels(2, 20, K=4))
    x = torch.randn(3, 2, 20)
    cases = [
        # rocket_transform's operator calls rocket_normalise and rocket_convolve: errors name rocket_transform
        (lambda: rocket_transform(x[0], k), ValueError, "^rocket_transform: expected x to be a 3-D tensor"),
        (lambda: rocket_transform(x.int(), k), TypeError, "expected x to be float32 or float64, got Int"),
        (lambda: rocket_transform(x[:, :, :0], k), ValueError, "expected a non-empty x"),
        (lambda: rocket_transform(x.clone().index_fill_(2, torch.tensor([3]), float("nan")), k), ValueError,
         "expected x to contain only finite values"),
        (lambda: rocket_transform(x[:, :1], k), ValueError,
         r"^rocket_transform: expected .*channel_indices in .*the series has 1 channels"),
        (lambda: rocket_transform(x, [k[0][:-1]] + k[1:]), ValueError, "expected weights of length"),
        (lambda: rocket_transform(x, k[:2] + [k[2][:-1]] + k[3:]), ValueError, "expected biases of length 4"),
        (lambda: rocket_transform(x, k[:6] + [k[6] + 5]), ValueError, r"expected channel_indices in \[0, 2\)"),
        (lambda: rocket_transform(x, [k[0].double()] + k[1:]), TypeError, "expected weights .* of dtype Float"),
        (lambda: rocket_transform(x, k, True, "float16"), ValueError, "accumulate must be"),
        (lambda: rocket_transform(x, k, True, "float64", None, 0.0), ValueError, "ppv_temperature must be"),
        (lambda: rocket_transform(x, k, True, "float64", torch.tensor([20, 0, 3])), ValueError,
         r"expected x_lengths values in \[1, 20\]"),
        (lambda: rocket_transform(x, k, True, "float64", torch.tensor([20, 3])), ValueError,
         r"expected x_lengths of shape \(3,\)"),
    ]
    for fn, exc, message in cases:
        with pytest.raises(exc, match=message):
            fn()


def test_rocket_class_errors_and_output_types():
    X = np.random.default_rng(4).standard_normal((6, 2, 30))
    with pytest.raises(ValueError, match="not fitted"):
        Rocket(n_kernels=8).transform(X)
    r = Rocket(n_kernels=8, random_state=0).fit(X)
    with pytest.raises(ValueError, match="fitted on series of length 30, got length 25"):
        r.transform(X[:, :, :25])
    with pytest.raises(ValueError, match="fitted on 2 channels, got X with 1"):
        r.transform(X[:, :1])
    assert r.transform(X[:, :, :25], x_lengths=np.full(6, 25)).shape == (6, 16)
    out_np = r.transform(X)
    out_t = r.transform(torch.from_numpy(X))
    assert isinstance(out_np, np.ndarray) and out_np.dtype == np.float32
    assert isinstance(out_t, torch.Tensor) and np.array_equal(out_t.numpy(), out_np)
    r1 = Rocket(n_kernels=8, random_state=0).fit(X[:, 0])
    assert r1.n_channels_ == 1 and r1.transform(X[:, 0]).shape == (6, 16)
    assert np.array_equal(Rocket(n_kernels=8, random_state=0, chunk_size=4).fit(X).transform(X), out_np)
    assert r.get_params()["n_kernels"] == 8 and r.set_params(n_kernels=9).n_kernels == 9


# --- aeon's golden values (docs/design/rocket.md §6) and kernels from a seed ---------------------
UNI = np.array([np.arange(1, 16), [10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4], [5] * 15, [1, 2] * 7 + [1]],
               dtype=np.float64)[:, None, :]
MULTI = np.array([
    [np.arange(1, 12), np.arange(10, -1, -1)],
    [np.arange(10, -1, -1), [1] * 5 + [7] * 6],
    [[5] * 11, [5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5]],
    [[1, 2] * 5 + [1], [4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 8]],
], dtype=np.float64)


@pytest.mark.parametrize("X,expected", [(UNI, (1.0, 1.3438051, 0.53333336)), (MULTI, (0.6363636, 0.74931127, 0.0))])
def test_aeon_golden_values(X, expected):
    F = Rocket(n_kernels=100, random_state=0).fit_transform(X)
    assert F.shape == (4, 200)
    np.testing.assert_allclose([F[0, 0], F[1, 5], F[3, 80]], expected, rtol=1e-6)


def test_aeon_golden_values_unit_test_10k():
    X, _ = load("UnitTest", "TRAIN")
    F = Rocket(random_state=0).fit_transform(X)
    expected = [[0.54167, 3.04102, 0.41667, 2.21878, 0.66667], [0.54167, 2.63263, 0.375, 2.53897, 0.66667],
                [0.58333, 2.79819, 0.41667, 2.53153, 0.58333], [0.54167, 2.47356, 0.375, 1.90805, 0.70833],
                [0.54167, 2.54753, 0.41667, 2.16991, 0.66667]]
    np.testing.assert_allclose(F[:5, :5], expected, rtol=1e-4)


def test_seeded_rocket_matches_aeon_fitted_rocket():
    X, _ = load("GunPoint", "TRAIN")
    ours_r = Rocket(n_kernels=300, random_state=11).fit(X)
    aeon_r = AeonRocket(n_kernels=300, random_state=11).fit(X)
    for a, b in zip(ours_r.kernels[1:], aeon_r.kernels[1:]):
        assert np.array_equal(a, b)
    # weights bit-identical where numba sums rows as we do, else within the bound of the other
    # summation order (docs/design/rocket.md §3, tests/rocket/test_rocket_generate.py)
    assert_weights_match_aeon(np.asarray(ours_r.kernels[0]), aeon_r.kernels[0], aeon_r.kernels[1], aeon_r.kernels[5],
                              exact=numba_target_cpu() in BIT_EXACT_TARGETS)
    X_test, _ = load("GunPoint", "TEST")
    same = Rocket.from_kernels(aeon_r.kernels, accumulate="float64")
    assert n_bits_different(same.transform(X_test),
                            aeon_rocket._apply_kernels(Normalizer().fit_transform(X_test), aeon_r.kernels)) == 0


# --- layer, TorchScript, compile -----------------------------------------------------------------
def test_rocket_layer_trains_and_scripts(tmp_path):
    torch.manual_seed(0)
    layer = RocketLayer(c_in=2, seq_len=32, n_kernels=20, learnable=True, seed=1, ppv_temperature=0.2)
    x = torch.randn(8, 2, 32)
    out = layer(x)
    assert out.shape == (8, 40) and out.dtype == torch.float32
    out.sum().backward()
    assert layer.weights.grad is not None and layer.weights.grad.abs().sum() > 0
    assert layer.biases.grad.abs().sum() > 0
    scripted = torch.jit.script(layer)
    path = tmp_path / "rocket_layer.pt"
    scripted.save(str(path))
    loaded = torch.jit.load(str(path))
    assert torch.equal(loaded(x), layer(x))
    frozen = RocketLayer(c_in=2, seq_len=32, n_kernels=20, seed=1)
    assert "weights" in dict(frozen.named_buffers()) and len(list(frozen.parameters())) == 0


def test_torch_compile_matches_eager():
    kernels = small_kernels(2, 30, K=10)
    x = torch.randn(4, 2, 30, dtype=torch.float64)

    def f(x):
        return rocket_transform(x, kernels, True, "float64") * 2

    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    assert torch.equal(compiled(x), f(x))


# --- CUDA parity --------------------------------------------------------------------------------
@pytest.mark.needs_cuda
@pytest.mark.parametrize("accumulate", ["float64", "float32_fma", "float32"])
def test_cuda_matches_cpu_bit_for_bit(accumulate):
    X, _ = load("BasicMotions", "TEST")
    kernels = AeonRocket(n_kernels=1000, random_state=2).fit(X).kernels
    lengths = torch.from_numpy(np.random.default_rng(0).integers(20, X.shape[2] + 1, len(X)))
    for xl in (None, lengths):
        cpu = ours(X, kernels, accumulate=accumulate, x_lengths=xl)
        gpu = ours(X, kernels, accumulate=accumulate, device="cuda", x_lengths=None if xl is None else xl.cuda())
        assert n_bits_different(cpu, gpu) == 0
