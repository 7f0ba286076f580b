"""RidgeClassifierCV, StandardScaler and RocketClassifier (softdtw_torch.rocket._classifier).

References are independent of our code: scikit-learn's RidgeClassifierCV / StandardScaler and
aeon's Rocket transform and RocketClassifier, all from the installed packages.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from softdtw_torch.datasets import load_ts
from softdtw_torch.rocket import RidgeClassifierCV, RocketClassifier, StandardScaler
from softdtw_torch.rocket._classifier import NotFittedError

sklearn_linear = pytest.importorskip("sklearn.linear_model")
sklearn_pre = pytest.importorskip("sklearn.preprocessing")
SkRidgeCV = sklearn_linear.RidgeClassifierCV
SkScaler = sklearn_pre.StandardScaler

from conftest import AEON_DATASETS as DATA, run_at_threads  # noqa: E402
ALPHAS = np.logspace(-2, 4, 13)


def _make(n, p, k, seed, noise=0.5, labels="int"):
    """Linearly separable-ish classes with noise, features of different scales and offsets (so
    the intercept and the choice of alpha both matter)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * rng.uniform(0.5, 3.0, p) + 2.0 * rng.normal(size=p)
    W = rng.normal(size=(p, k))
    scores = (X - X.mean(0)) @ W / np.sqrt(p) + noise * rng.normal(size=(n, k))
    y = scores.argmax(1)
    if labels == "str":
        y = np.array(["cls_" + "abcdefgh"[i] for i in y])
    return X, y


def _load(name, split):
    if DATA is None:
        pytest.skip("needs aeon's bundled datasets (pip install aeon; see requirements-dev.txt)")
    return load_ts(os.path.join(DATA, name, f"{name}_{split}.ts"))


def _assert_same_fit(ours, ref, X):
    """Same alpha (exact), coefficients to float64 rounding, same predictions as sklearn."""
    assert ours.alpha_ == ref.alpha_
    np.testing.assert_array_equal(ours.classes_, ref.classes_)
    coef = ours.coef_.cpu().numpy()
    assert coef.shape == ref.coef_.shape
    scale = np.abs(ref.coef_).max()
    np.testing.assert_allclose(coef, ref.coef_, rtol=0, atol=1e-10 * scale)
    if type(ref.intercept_) is float:  # sklearn's intercept_ without an intercept: the float 0.0, as ours
        assert type(ours.intercept_) is float and ours.intercept_ == ref.intercept_ == 0.0
    else:
        intercept = ours.intercept_.cpu().numpy()
        assert intercept.shape == ref.intercept_.shape
        np.testing.assert_allclose(intercept, ref.intercept_, rtol=0,
                                   atol=1e-10 * max(1.0, np.abs(ref.intercept_).max()))
    assert ours.best_score_ == pytest.approx(ref.best_score_, rel=1e-10, abs=1e-12)
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


# ----------------------------------------------------------------------------------------------
# RidgeClassifierCV vs sklearn
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("labels", ["int", "str"])
@pytest.mark.parametrize("k", [2, 4], ids=["binary", "4-class"])
@pytest.mark.parametrize("n,p", [(30, 80), (40, 40), (120, 25)],
                         ids=["gram-wide", "gram-square", "cov-long"])
def test_ridge_matches_sklearn(n, p, k, labels, fit_intercept):
    X, y = _make(n, p, k, seed=n * 7 + p + k, labels=labels)
    ref = SkRidgeCV(alphas=ALPHAS, fit_intercept=fit_intercept).fit(X, y)
    ours = RidgeClassifierCV(alphas=ALPHAS, fit_intercept=fit_intercept).fit(X, y)
    _assert_same_fit(ours, ref, X)
    X_new, _ = _make(50, p, k, seed=999)
    np.testing.assert_array_equal(ours.predict(X_new), ref.predict(X_new))
    assert ours.score(X, y) == ref.score(X, y)


def test_ridge_chooses_interior_alphas_like_sklearn():
    """The LOO criterion is really exercised: over noise levels sklearn picks several different
    alphas, none at the ends of the grid, and ours picks the same ones."""
    chosen = []
    for noise in (0.1, 0.3, 1.0, 3.0):
        X, y = _make(120, 25, 3, seed=5, noise=noise)
        ref = SkRidgeCV(alphas=ALPHAS).fit(X, y)
        ours = RidgeClassifierCV(alphas=ALPHAS).fit(X, y)
        assert ours.alpha_ == ref.alpha_
        chosen.append(ref.alpha_)
    assert len(set(chosen)) >= 2
    assert all(ALPHAS[0] < a < ALPHAS[-1] for a in chosen)


def test_ridge_default_alphas_are_aeons():
    np.testing.assert_array_equal(np.asarray(RidgeClassifierCV().alphas), np.logspace(-3, 3, 10))
    np.testing.assert_array_equal(np.asarray(RocketClassifier().alphas), np.logspace(-3, 3, 10))


@pytest.mark.parametrize("order", [[5.0, 0.1, 30.0], [0.1, 30.0, 5.0], [30.0, 5.0, 0.1]])
def test_ridge_tie_keeps_first_alpha(order):
    """Constant features (cov mode): the LOO error does not depend on alpha, every alpha ties,
    and sklearn and ours keep the first one listed."""
    X = np.full((10, 3), 3.0)
    y = np.array([0, 1, 0, 1, 1, 0, 0, 1, 1, 1])
    ref = SkRidgeCV(alphas=order).fit(X, y)
    ours = RidgeClassifierCV(alphas=order).fit(X, y)
    assert ref.alpha_ == order[0]
    assert ours.alpha_ == order[0]


def test_ridge_tensor_and_label_types():
    """float32 tensors, tensor labels and list labels give the fit of the same float64 numpy data."""
    X, y = _make(40, 60, 3, seed=3)
    X32 = X.astype(np.float32)
    ref = RidgeClassifierCV(alphas=ALPHAS).fit(X32.astype(np.float64), y)
    from_tensor = RidgeClassifierCV(alphas=ALPHAS).fit(torch.from_numpy(X32), torch.from_numpy(y))
    from_list = RidgeClassifierCV(alphas=ALPHAS).fit(X32, [int(v) for v in y])
    for est in (from_tensor, from_list):
        assert est.alpha_ == ref.alpha_
        assert torch.equal(est.coef_, ref.coef_)
        assert torch.equal(est.intercept_, ref.intercept_)
    scores = from_tensor.decision_function(torch.from_numpy(X32))
    assert isinstance(scores, torch.Tensor) and scores.dtype == torch.float64
    assert isinstance(from_list.decision_function(X32), np.ndarray)
    labels = from_tensor.predict(torch.from_numpy(X32))
    assert isinstance(labels, np.ndarray)
    np.testing.assert_array_equal(labels, SkRidgeCV(alphas=ALPHAS).fit(X32, y).predict(X32))


def test_ridge_sklearn_protocol():
    base = pytest.importorskip("sklearn.base")
    est = RidgeClassifierCV(alphas=(0.5, 2.0), fit_intercept=False)
    assert est.get_params() == {"alphas": (0.5, 2.0), "fit_intercept": False, "class_weight": None}
    assert est.set_params(fit_intercept=True) is est and est.fit_intercept is True
    clone = base.clone(est)
    assert clone is not est and clone.get_params() == est.get_params()
    X, y = _make(30, 10, 2, seed=1)
    assert est.fit(X, y) is est
    # scikit-learn's own set_params (BaseEstimator's) and its message.
    with pytest.raises(ValueError, match=r"^Invalid parameter 'alpha' for estimator RidgeClassifierCV"):
        est.set_params(alpha=1.0)
    rocket = RocketClassifier(n_kernels=100, random_state=3)
    assert base.clone(rocket).get_params() == rocket.get_params()


# Shapes where torch's own products gave other bits at 2 threads than at 1 on the Intel Xeon of
# 2026-11-27 (x @ x.T for (60, 300), x @ coef.T for (300, 2000)); (300, 40) and (2000, 300) take
# the n > p path.
@pytest.mark.parametrize("n,p", [(60, 300), (300, 40), (300, 2000), (2000, 300)],
                         ids=["gram", "cov", "gram-wide", "cov-tall"])
@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_ridge_deterministic_across_thread_counts(n, p, class_weight):
    X, y = _make(n, p, 3, seed=11)

    def fit():
        est = RidgeClassifierCV(class_weight=class_weight).fit(X, y)
        return est, est.decision_function(torch.from_numpy(X))

    threads = torch.get_num_threads()
    (one, one_scores), (many, many_scores) = (run_at_threads(count, fit) for count in (1, max(2, threads)))
    assert torch.get_num_threads() == threads
    assert one.alpha_ == many.alpha_ and one.best_score_ == many.best_score_
    assert torch.equal(one.coef_, many.coef_)
    assert torch.equal(one.intercept_, many.intercept_)
    assert torch.equal(one_scores, many_scores)


# ----------------------------------------------------------------------------------------------
# StandardScaler vs sklearn
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("with_mean", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scaler_matches_sklearn(dtype, with_mean):
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(50, 8)) * rng.uniform(0.1, 10, 8) + rng.normal(size=8) * 5).astype(dtype)
    X[:, 2] = 0.0                       # zero variance -> scale 1
    X[:, 5] = dtype(1.3)                # constant non-zero -> scale 1 (sklearn's near-constant rule)
    X_new = rng.normal(size=(7, 8)).astype(dtype)
    ref = SkScaler(with_mean=with_mean).fit(X)
    ours = StandardScaler(with_mean=with_mean).fit(X)
    np.testing.assert_allclose(ours.scale_.numpy(), ref.scale_, rtol=1e-13)
    np.testing.assert_allclose(ours.var_.numpy(), ref.var_, rtol=1e-12, atol=1e-300)
    assert ours.scale_[2] == 1.0 and ours.scale_[5] == 1.0
    out = ours.transform(X_new)
    assert isinstance(out, np.ndarray) and out.dtype == dtype
    if dtype == np.float32:
        # sklearn casts the float64 statistics to float32 and divides in float32: same bits.
        np.testing.assert_array_equal(out, ref.transform(X_new))
    else:
        np.testing.assert_allclose(out, ref.transform(X_new), rtol=1e-14, atol=1e-14)
    as_tensor = ours.transform(torch.from_numpy(X_new))
    assert isinstance(as_tensor, torch.Tensor)
    np.testing.assert_array_equal(as_tensor.numpy(), out)


def test_scaler_population_std_by_brute_force():
    """Independent of sklearn: float64 loops over the population variance (ddof 0)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(13, 4)) * 3 + 1
    ours = StandardScaler(with_mean=False).fit(X)
    for j in range(X.shape[1]):
        col = [float(v) for v in X[:, j]]
        mean = sum(col) / len(col)
        var = sum((v - mean) ** 2 for v in col) / len(col)
        assert float(ours.scale_[j]) == pytest.approx(var ** 0.5, rel=1e-14)
    np.testing.assert_allclose(ours.transform(X), X / X.std(0), rtol=1e-14)


# ----------------------------------------------------------------------------------------------
# On real ROCKET features (aeon's Rocket transform): our scaler + ridge == sklearn's pipeline
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def aeon_rocket():
    conv = pytest.importorskip("aeon.transformations.collection.convolution_based")
    return conv.Rocket


@pytest.mark.slow  # aeon's Rocket features on real data: up to 7 s
@pytest.mark.parametrize("name", ["GunPoint", "ItalyPowerDemand"])
def test_pipeline_on_aeon_rocket_features(name, aeon_rocket):
    X_train, y_train = _load(name, "TRAIN")
    X_test, y_test = _load(name, "TEST")
    rocket = aeon_rocket(n_kernels=10_000, random_state=0).fit(X_train)
    F_train, F_test = rocket.transform(X_train), rocket.transform(X_test)
    assert F_train.dtype == np.float32

    sk_scaler = SkScaler(with_mean=False).fit(F_train)
    sk_ridge = SkRidgeCV(alphas=np.logspace(-3, 3, 10)).fit(sk_scaler.transform(F_train), y_train)
    scaler = StandardScaler(with_mean=False).fit(F_train)
    ridge = RidgeClassifierCV().fit(scaler.transform(F_train), y_train)

    # The scaled float32 features are sklearn's, bit for bit.
    np.testing.assert_array_equal(scaler.transform(F_test), sk_scaler.transform(F_test))
    assert ridge.alpha_ == sk_ridge.alpha_
    # sklearn stores float32 coefficients for float32 input; ours stay float64.
    np.testing.assert_allclose(ridge.coef_.numpy(), sk_ridge.coef_, rtol=0,
                               atol=1e-6 * np.abs(sk_ridge.coef_).max())
    predicted = ridge.predict(scaler.transform(F_test))
    expected = sk_ridge.predict(sk_scaler.transform(F_test))
    np.testing.assert_array_equal(predicted, expected)
    assert ridge.score(scaler.transform(F_test), y_test) == sk_ridge.score(
        sk_scaler.transform(F_test), y_test)


# ----------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------
def test_ridge_errors():
    X, y = _make(20, 5, 2, seed=0)
    with pytest.raises(ValueError, match=r"^RidgeClassifierCV: expected at least 2 classes in y, got 1"):
        RidgeClassifierCV().fit(X, np.zeros(20))
    with pytest.raises(ValueError, match=r"^RidgeClassifierCV: expected y to have 20 labels \(one per case of X\), got 19"):
        RidgeClassifierCV().fit(X, y[:19])
    with pytest.raises(ValueError, match=r"^RidgeClassifierCV: expected y to be 1-D"):
        RidgeClassifierCV().fit(X, np.zeros((20, 2)))
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"^RidgeClassifierCV: expected X to contain only finite values, got NaN or infinity"):
        RidgeClassifierCV().fit(bad, y)
    with pytest.raises(ValueError, match=r"^RidgeClassifierCV: expected X to be 2-D \(n_samples, n_features\), got 3-D"):
        RidgeClassifierCV().fit(X[:, :, None], y)
    with pytest.raises(ValueError, match=r"^RidgeClassifierCV: expected every alpha to be finite and > 0"):
        RidgeClassifierCV(alphas=(1.0, 0.0)).fit(X, y)
    with pytest.raises(NotFittedError, match=r"^RidgeClassifierCV.predict: this instance is not fitted yet; call fit first"):
        RidgeClassifierCV().predict(X)
    fitted = RidgeClassifierCV().fit(X, y)
    with pytest.raises(ValueError, match=r"^RidgeClassifierCV: X has 4 features, but RidgeClassifierCV is expecting 5 features as input"):
        fitted.predict(X[:, :4])
    with pytest.raises(ValueError, match=r"^RidgeClassifierCV: expected X to contain only finite values"):
        fitted.predict(bad)
    # NotFittedError is scikit-learn's (a subclass), so a ValueError and an AttributeError.
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)


def test_scaler_errors():
    with pytest.raises(NotFittedError, match=r"^StandardScaler.transform: this instance is not fitted yet"):
        StandardScaler().transform(np.ones((2, 3)))
    scaler = StandardScaler().fit(np.arange(12.0).reshape(4, 3))
    with pytest.raises(ValueError, match=r"^StandardScaler: X has 2 features, but StandardScaler is expecting 3 features as input"):
        scaler.transform(np.ones((2, 2)))


def test_rocket_classifier_errors_before_the_transform():
    """Errors raised by the classifier itself, before any convolution."""
    X = np.random.default_rng(0).normal(size=(6, 1, 20))
    y = np.array(["a", "b"] * 3)
    with pytest.raises(ValueError, match=r"^RocketClassifier: expected at least 2 classes in y, got 1"):
        RocketClassifier(n_kernels=10).fit(X, np.array(["a"] * 6))
    with pytest.raises(ValueError, match=r"^RocketClassifier: expected y to have 6 labels \(one per case of X\), got 5"):
        RocketClassifier(n_kernels=10).fit(X, y[:5])
    bad = X.copy()
    bad[2, 0, 7] = np.nan
    with pytest.raises(ValueError, match=r"^RocketClassifier: expected X to contain only finite values, got NaN or infinity"):
        RocketClassifier(n_kernels=10).fit(bad, y)
    with pytest.raises(ValueError, match=r"^RocketClassifier: expected X to be 3-D \(n_cases, n_channels, n_timepoints\) or 2-D"):
        RocketClassifier(n_kernels=10).fit(X[:, :, :, None], y)
    with pytest.raises(NotFittedError, match=r"^RocketClassifier.predict: this instance is not fitted yet; call fit first"):
        RocketClassifier(n_kernels=10).predict(X)
    with pytest.raises(ValueError, match=r"^Invalid parameter 'n_kernel' for estimator RocketClassifier"):
        RocketClassifier().set_params(n_kernel=5)


def test_rocket_classifier_channel_mismatch():
    X = np.random.default_rng(0).normal(size=(6, 2, 20))
    y = np.array([0, 1] * 3)
    clf = RocketClassifier(n_kernels=20, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"^RocketClassifier: expected X with 2 channels \(as in fit\), got 3"):
        clf.predict(np.zeros((2, 3, 20)))


# ----------------------------------------------------------------------------------------------
# RocketClassifier end to end (needs softdtw_torch.rocket.Rocket)
# ----------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name,minimum", [("GunPoint", 0.97), ("ItalyPowerDemand", 0.95),
                                          ("BasicMotions", 0.95)])
def test_rocket_classifier_accuracy(name, minimum):
    X_train, y_train = _load(name, "TRAIN")
    X_test, y_test = _load(name, "TEST")
    clf = RocketClassifier(n_kernels=10_000, random_state=0).fit(X_train, y_train)
    assert clf.score(X_test, y_test) >= minimum
    # Against aeon's own classifier, same kernels (same seed): the same predictions, up to the
    # odd case that a 1-ulp kernel weight difference (numba fastmath, see design notes) could flip.
    aeon_cls = pytest.importorskip("aeon.classification.convolution_based")
    reference = aeon_cls.RocketClassifier(n_kernels=10_000, random_state=0).fit(X_train, y_train)
    agreement = np.mean(clf.predict(X_test) == reference.predict(X_test))
    assert agreement >= 0.99


def test_rocket_classifier_input_forms():
    """numpy 3-D, numpy 2-D (one channel) and tensor input give the same predictions."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(16, 1, 40))
    X[8:] += np.sin(np.linspace(0, 6, 40))  # a learnable class difference
    y = np.array(["x"] * 8 + ["y"] * 8)
    a = RocketClassifier(n_kernels=200, random_state=7).fit(X, y)
    b = RocketClassifier(n_kernels=200, random_state=7).fit(X[:, 0, :], y)
    c = RocketClassifier(n_kernels=200, random_state=7).fit(torch.from_numpy(X), y)
    expected = a.predict(X)
    assert expected.dtype.kind == "U"
    np.testing.assert_array_equal(b.predict(X[:, 0, :]), expected)
    np.testing.assert_array_equal(c.predict(torch.from_numpy(X)), expected)
    assert a.ridge_.alpha_ == b.ridge_.alpha_ == c.ridge_.alpha_
    assert torch.equal(a.ridge_.coef_, c.ridge_.coef_)


# ----------------------------------------------------------------------------------------------
# GPU parity
# ----------------------------------------------------------------------------------------------
@pytest.mark.needs_cuda
@pytest.mark.parametrize("n,p", [(40, 300), (300, 40)], ids=["gram", "cov"])
def test_ridge_gpu_matches_cpu(n, p):
    device = "cuda"
    X, y = _make(n, p, 4, seed=2, labels="str")
    cpu = RidgeClassifierCV(alphas=ALPHAS).fit(X, y)
    gpu = RidgeClassifierCV(alphas=ALPHAS).fit(torch.from_numpy(X).to(device), y)
    assert gpu.coef_.device.type == "cuda"
    assert gpu.alpha_ == cpu.alpha_
    np.testing.assert_allclose(gpu.coef_.cpu().numpy(), cpu.coef_.numpy(), rtol=0,
                               atol=1e-10 * float(cpu.coef_.abs().max()))
    np.testing.assert_array_equal(gpu.predict(torch.from_numpy(X).to(device)), cpu.predict(X))
    scaler = StandardScaler(with_mean=False).fit(torch.from_numpy(X).to(device))
    np.testing.assert_allclose(scaler.scale_.cpu().numpy(),
                               StandardScaler(with_mean=False).fit(X).scale_.numpy(), rtol=1e-13)


@pytest.mark.slow
@pytest.mark.needs_cuda
def test_rocket_classifier_gpu_matches_cpu():
    device = "cuda"
    X_train, y_train = _load("GunPoint", "TRAIN")
    X_test, _ = _load("GunPoint", "TEST")
    cpu = RocketClassifier(n_kernels=2_000, random_state=0).fit(X_train, y_train)
    gpu = RocketClassifier(n_kernels=2_000, random_state=0, device=device).fit(X_train, y_train)
    assert gpu.ridge_.coef_.device.type == "cuda"
    assert gpu.ridge_.alpha_ == cpu.ridge_.alpha_
    np.testing.assert_array_equal(gpu.predict(X_test), cpu.predict(X_test))
