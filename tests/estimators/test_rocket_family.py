"""The ROCKET-family estimators (softdtw_torch.rocket._classifier / _regressor): RidgeClassifierCV's
class_weight, RidgeCV, and the Rocket / MiniRocket / MultiRocket classifiers and regressors.

References are independent of our code: scikit-learn's RidgeClassifierCV / RidgeCV /
StandardScaler, aeon's transforms, classifiers and regressors, and aeon's bundled datasets, all
from the installed packages.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest
import torch

from softdtw_torch.rocket._classifier import (MiniRocketClassifier, MultiRocketClassifier, NotFittedError,
                                              RidgeClassifierCV, RocketClassifier, StandardScaler)
from softdtw_torch.rocket._regressor import MiniRocketRegressor, MultiRocketRegressor, RidgeCV, RocketRegressor

from conftest import run_at_threads  # noqa: E402

sklearn_linear = pytest.importorskip("sklearn.linear_model")
sklearn_pre = pytest.importorskip("sklearn.preprocessing")
aeon_datasets = pytest.importorskip("aeon.datasets")
aeon_transforms = pytest.importorskip("aeon.transformations.collection.convolution_based")
aeon_classifiers = pytest.importorskip("aeon.classification.convolution_based")
aeon_regressors = pytest.importorskip("aeon.regression.convolution_based")

ALPHAS = np.logspace(-2, 4, 13)
AEON_ALPHAS = np.logspace(-3, 3, 10)  # aeon's pipelines' ridge


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------
def _features(n, p, seed):
    """Features of different scales and offsets (so the intercept and alpha both matter)."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, p)) * rng.uniform(0.5, 3.0, p) + 2.0 * rng.normal(size=p), rng


def _classes(n, p, k, seed, noise=0.5, skew=2.0):
    """k classes, imbalanced (``skew`` favours the later ones), from noisy linear scores."""
    X, rng = _features(n, p, seed)
    scores = (X - X.mean(0)) @ rng.normal(size=(p, k)) / np.sqrt(p) + noise * rng.normal(size=(n, k))
    return X, (scores + np.linspace(0.0, skew, k)).argmax(1)


def _targets(n, p, shape, seed, noise=3.0):
    """Regression targets: (n,) for "1d", (n, 1) for "column", (n, 3) for "3 targets"."""
    X, rng = _features(n, p, seed)
    k = {"1d": 1, "column": 1, "3 targets": 3}[shape]
    Y = (X - X.mean(0)) @ rng.normal(size=(p, k)) / np.sqrt(p) + noise * rng.normal(size=(n, k)) + 5.0
    return X, (Y[:, 0] if shape == "1d" else Y)


@functools.lru_cache(maxsize=None)
def _dataset(name):
    """(X_train, y_train, X_test, y_test): aeon's bundled datasets as aeon's loaders read them, or
    noisy sines whose frequency and amplitude are the regression target (a set on which aeon's
    regressors choose alphas inside their grid)."""
    if name == "noisy-sines":
        def make(n, seed):
            rng = np.random.default_rng(seed)
            f, a = rng.uniform(1, 4, n), rng.uniform(0.5, 2, n)
            t = np.linspace(0, 1, 60)
            X = a[:, None] * np.sin(2 * np.pi * f[:, None] * t + rng.uniform(0, 6, n)[:, None])
            return (X + rng.normal(size=X.shape))[:, None, :], f + 0.5 * a
        return (*make(60, 0), *make(30, 1))
    load = {"GunPoint": aeon_datasets.load_gunpoint, "BasicMotions": aeon_datasets.load_basic_motions,
            "Covid3Month": aeon_datasets.load_covid_3month}[name]
    return (*load(split="train"), *load(split="test"))


def _imbalanced(X, y, keep_every=3):
    """All cases of the first class, every ``keep_every``-th case of the others."""
    first = y == np.unique(y)[0]
    keep = first | (np.cumsum(~first) % keep_every == 0)
    return X[keep], y[keep]


# ----------------------------------------------------------------------------------------------
# RidgeClassifierCV(class_weight) against sklearn's
# ----------------------------------------------------------------------------------------------
def _assert_same_fit(ours, ref, X, atol=1e-10):
    """Same alpha (exact), coefficients and intercept to float64 rounding (``atol`` relative to
    their scale), same scores and predictions as sklearn's fitted ridge ``ref``."""
    assert ours.alpha_ == ref.alpha_
    coef = ours.coef_.cpu().numpy()
    assert coef.shape == np.shape(ref.coef_)
    np.testing.assert_allclose(coef, ref.coef_, rtol=0, atol=atol * np.abs(ref.coef_).max())
    if type(ref.intercept_) is float:  # sklearn's intercept_ without an intercept: the float 0.0, as ours
        assert type(ours.intercept_) is float and ours.intercept_ == ref.intercept_ == 0.0
    else:
        intercept = ours.intercept_.cpu().numpy()
        assert intercept.shape == np.shape(ref.intercept_)
        np.testing.assert_allclose(intercept, ref.intercept_, rtol=0,
                                   atol=atol * max(1.0, np.abs(ref.intercept_).max()))
    assert ours.best_score_ == pytest.approx(ref.best_score_, rel=1e-10, abs=1e-12)
    if hasattr(ref, "classes_"):
        np.testing.assert_array_equal(ours.classes_, ref.classes_)
        np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), rtol=1e-9, atol=1e-9)
    predicted, expected = ours.predict(X), ref.predict(X)
    if hasattr(ref, "classes_"):
        np.testing.assert_array_equal(predicted, expected)
    else:
        assert predicted.shape == expected.shape and predicted.dtype == np.float64
        np.testing.assert_allclose(predicted, expected, rtol=0, atol=1e-10 * np.abs(expected).max())


CLASS_WEIGHTS = {"balanced": "balanced", "dict": {0: 3.0, 1: 0.5}, "dict-one-class": {1: 2.5}}


@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("class_weight", list(CLASS_WEIGHTS))
@pytest.mark.parametrize("k", [2, 3], ids=["binary", "3-class"])
@pytest.mark.parametrize("n,p", [(30, 80), (40, 40), (120, 25)], ids=["gram-wide", "gram-square", "cov-long"])
def test_class_weight_matches_sklearn(n, p, k, class_weight, fit_intercept):
    X, y = _classes(n, p, k, seed=n + p + k, noise=1.0)
    weights = CLASS_WEIGHTS[class_weight]
    ref = sklearn_linear.RidgeClassifierCV(alphas=ALPHAS, fit_intercept=fit_intercept, class_weight=weights).fit(X, y)
    ours = RidgeClassifierCV(alphas=ALPHAS, fit_intercept=fit_intercept, class_weight=weights).fit(X, y)
    _assert_same_fit(ours, ref, X)
    X_new, _ = _classes(50, p, k, seed=999)
    np.testing.assert_array_equal(ours.predict(X_new), ref.predict(X_new))
    # The weights are really applied: sklearn's unweighted fit differs.
    unweighted = sklearn_linear.RidgeClassifierCV(alphas=ALPHAS, fit_intercept=fit_intercept).fit(X, y)
    assert unweighted.alpha_ != ref.alpha_ or not np.allclose(unweighted.coef_, ref.coef_, rtol=1e-6, atol=0)


def test_class_weight_changes_the_alpha_as_sklearns():
    """The weighted leave-one-out criterion is exercised: over noise levels sklearn's weighted
    fits choose interior alphas, some other than the unweighted fit's, and ours the same ones."""
    changed = 0
    for n, p, k in [(30, 80, 3), (40, 40, 2), (40, 40, 3), (120, 25, 2)]:
        for noise in (0.3, 1.0, 3.0):
            X, y = _classes(n, p, k, seed=n + p + k, noise=noise)
            unweighted = sklearn_linear.RidgeClassifierCV(alphas=ALPHAS).fit(X, y).alpha_
            for weights in ("balanced", {0: 3.0, 1: 0.5}):
                ref = sklearn_linear.RidgeClassifierCV(alphas=ALPHAS, class_weight=weights).fit(X, y)
                assert RidgeClassifierCV(alphas=ALPHAS, class_weight=weights).fit(X, y).alpha_ == ref.alpha_
                changed += ref.alpha_ != unweighted and ALPHAS[0] < ref.alpha_ < ALPHAS[-1]
    assert changed >= 3


@pytest.mark.parametrize("labels,weights", [
    (np.array(["cat", "dog", "eel"]), {"cat": 0.2, "eel": 4.0}),
    (np.array(["1", "2", "3"]), {1: 0.2, 3: 4.0}),        # sklearn looks "1" up as int("1")
    (np.array([0.0, 1.0, 2.0]), {1: 3.0, 2.0: 0.5}),     # and 1.0 as int(1.0)
    (np.array([-1, 7]), {np.int64(7): 2.0, -1: 0.25}),
])
def test_class_weight_label_types_match_sklearn(labels, weights):
    X, index = _classes(60, 20, len(labels), seed=4, noise=1.0)
    y = labels[index]
    ref = sklearn_linear.RidgeClassifierCV(alphas=ALPHAS, class_weight=weights).fit(X, y)
    _assert_same_fit(RidgeClassifierCV(alphas=ALPHAS, class_weight=weights).fit(X, y), ref, X)


def test_class_weight_keys_may_be_the_labels_themselves():
    """For labels "1", "2", "3" (UCR datasets'), the keys "1", "3" work as sklearn's 1, 3 (which
    sklearn refuses); both spellings of one class are refused."""
    X, index = _classes(60, 20, 3, seed=4, noise=1.0)
    y = np.array(["1", "2", "3"])[index]
    ref = sklearn_linear.RidgeClassifierCV(alphas=ALPHAS, class_weight={1: 0.2, 3: 4.0}).fit(X, y)
    _assert_same_fit(RidgeClassifierCV(alphas=ALPHAS, class_weight={"1": 0.2, "3": 4.0}).fit(X, y), ref, X)
    with pytest.raises(ValueError, match=r"The classes, \[1, 2, 3\], are not in class_weight"):
        sklearn_linear.RidgeClassifierCV(class_weight={"1": 0.2, "3": 4.0}).fit(X, y)
    with pytest.raises(ValueError, match=r"^RidgeClassifierCV: class_weight has 2 keys for the class '1': "
                                         r"\[1, '1'\]; expected one"):
        RidgeClassifierCV(class_weight={1: 0.2, "1": 0.3}).fit(X, y)


def test_class_weight_empty_dict_is_no_weighting_as_sklearns():
    X, y = _classes(40, 30, 3, seed=8, noise=1.0)
    ref = sklearn_linear.RidgeClassifierCV(alphas=ALPHAS, class_weight={}).fit(X, y)
    _assert_same_fit(RidgeClassifierCV(alphas=ALPHAS, class_weight={}).fit(X, y), ref, X)
    _assert_same_fit(RidgeClassifierCV(alphas=ALPHAS).fit(X, y), ref, X)


@pytest.mark.slow  # aeon's MultiRocket on real data: up to 16 s on a first numba compile
@pytest.mark.parametrize("class_weight", ["balanced", "dict"])
@pytest.mark.parametrize("name", ["GunPoint", "BasicMotions"])
def test_class_weight_on_real_features(name, class_weight):
    """aeon's MiniRocket features of an imbalanced training set: our scaler and weighted ridge
    against sklearn's (sklearn stores float32 coefficients for float32 features)."""
    X_train, y_train, X_test, _ = _dataset(name)
    X_train, y_train = _imbalanced(X_train, y_train)
    classes = np.unique(y_train)
    key = {"GunPoint": int, "BasicMotions": str}[name]  # sklearn's lookup: int("1") for GunPoint's "1"
    weights = "balanced" if class_weight == "balanced" else {key(classes[0]): 0.3, key(classes[-1]): 2.0}
    transform = aeon_transforms.MiniRocket(n_kernels=840, random_state=5).fit(X_train)
    F_train, F_test = transform.transform(X_train), transform.transform(X_test)

    sk_scaler = sklearn_pre.StandardScaler(with_mean=False).fit(F_train)
    ref = sklearn_linear.RidgeClassifierCV(alphas=AEON_ALPHAS, class_weight=weights).fit(
        sk_scaler.transform(F_train), y_train)
    scaler = StandardScaler(with_mean=False).fit(F_train)
    ours = RidgeClassifierCV(class_weight=weights).fit(scaler.transform(F_train), y_train)
    assert ours.alpha_ == ref.alpha_
    np.testing.assert_allclose(ours.coef_.numpy(), ref.coef_, rtol=0, atol=1e-6 * np.abs(ref.coef_).max())
    np.testing.assert_array_equal(ours.predict(scaler.transform(F_test)), ref.predict(sk_scaler.transform(F_test)))
    unweighted = sklearn_linear.RidgeClassifierCV(alphas=AEON_ALPHAS).fit(sk_scaler.transform(F_train), y_train)
    assert not np.allclose(unweighted.coef_, ref.coef_, rtol=1e-3, atol=0)  # the weights matter


BAD_CLASS_WEIGHTS = [
    ("bal", ValueError, r"expected class_weight to be None, 'balanced' or a dict \{label: weight\}, got 'bal'"),
    ("balanced_subsample", ValueError, r"expected class_weight to be None, 'balanced' or a dict"),
    ([{0: 1.0}], TypeError, r"expected class_weight to be None, 'balanced' or a dict \{label: weight\}, got list"),
    (2.0, TypeError, r"expected class_weight to be None, 'balanced' or a dict \{label: weight\}, got float"),
    ({0: 1.0, 5: 2.0}, ValueError, r"class_weight has labels that are not classes of y: \[5\] \(the classes are \[0, 1\]\)"),
    ({"0": 1.0}, ValueError, r"class_weight has labels that are not classes of y: \['0'\]"),
    ({0: -1.0}, ValueError, r"expected the class_weight of 0 to be finite and >= 0, got -1.0"),
    ({1: float("nan")}, ValueError, r"expected the class_weight of 1 to be finite and >= 0, got nan"),
    ({0: "2"}, TypeError, r"expected the class_weight of 0 to be a number, got str '2'"),
    ({0: True}, TypeError, r"expected the class_weight of 0 to be a number, got bool True"),
    ({0: 0.0, 1: 0}, ValueError, r"class_weight gives every sample the weight 0"),
]


@pytest.mark.parametrize("class_weight,error,message", BAD_CLASS_WEIGHTS,
                         ids=[str(i) for i in range(len(BAD_CLASS_WEIGHTS))])
def test_class_weight_errors(class_weight, error, message):
    X, y = _classes(20, 5, 2, seed=0, skew=0.0)
    assert set(y) == {0, 1}
    with pytest.raises(error, match=r"^RidgeClassifierCV: " + message):
        RidgeClassifierCV(class_weight=class_weight).fit(X, y)
    # The pipelines check it with their own name, before the transform: series of 5 time points
    # (too short for MiniRocket) do not reach it.
    short = np.random.default_rng(0).normal(size=(20, 1, 5))
    for make in (MiniRocketClassifier, RocketClassifier, MultiRocketClassifier):
        with pytest.raises(error, match=rf"^{make.__name__}: " + message):
            make(n_kernels=84, class_weight=class_weight).fit(short, y)


# ----------------------------------------------------------------------------------------------
# Attribute conventions: scikit-learn's types and shapes
# ----------------------------------------------------------------------------------------------
def _convention(value):
    """What a fitted coef_ / intercept_ is by scikit-learn's conventions: ("float", ()) for a
    Python float, else ("array", shape) (ours are tensors on the fit device, sklearn's numpy arrays
    or, for RidgeCV's 1-D y, a numpy float64 scalar: shape () both)."""
    if type(value) is float:
        return "float", ()
    assert isinstance(value, (np.ndarray, np.generic, torch.Tensor)), type(value)
    return "array", tuple(np.shape(value))


@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("task", ["binary", "3 classes", "1d", "column", "3 targets"])
def test_coef_and_intercept_follow_sklearns_conventions(task, fit_intercept):
    """intercept_ is the float 0.0 without an intercept, an array of sklearn's shape with one
    (RidgeClassifierCV: (1,) binary, (n_classes,); RidgeCV: () for 1-D y, (n_targets,)); coef_
    has sklearn's shape."""
    if task in ("binary", "3 classes"):
        X, y = _classes(40, 12, 2 if task == "binary" else 3, seed=2)
        ours = RidgeClassifierCV(alphas=ALPHAS, fit_intercept=fit_intercept).fit(X, y)
        ref = sklearn_linear.RidgeClassifierCV(alphas=ALPHAS, fit_intercept=fit_intercept).fit(X, y)
    else:
        X, y = _targets(40, 12, task, seed=2)
        ours = RidgeCV(alphas=ALPHAS, fit_intercept=fit_intercept).fit(X, y)
        ref = sklearn_linear.RidgeCV(alphas=ALPHAS, fit_intercept=fit_intercept).fit(X, y)
    assert _convention(ours.intercept_) == _convention(ref.intercept_)
    assert _convention(ours.coef_) == _convention(ref.coef_)
    if not fit_intercept:
        assert ours.intercept_ == ref.intercept_ == 0.0
    np.testing.assert_allclose(np.asarray(ours.predict(X), dtype=np.float64),
                               np.asarray(ref.predict(X), dtype=np.float64), rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------------------------------------
# RidgeCV against sklearn's
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("shape", ["1d", "column", "3 targets"])
@pytest.mark.parametrize("n,p", [(30, 80), (40, 40), (120, 25)], ids=["gram-wide", "gram-square", "cov-long"])
def test_ridge_cv_matches_sklearn(n, p, shape, fit_intercept):
    X, y = _targets(n, p, shape, seed=n * 3 + p)
    ref = sklearn_linear.RidgeCV(alphas=ALPHAS, fit_intercept=fit_intercept).fit(X, y)
    ours = RidgeCV(alphas=ALPHAS, fit_intercept=fit_intercept).fit(X, y)
    _assert_same_fit(ours, ref, X)
    X_new, y_new = _targets(25, p, shape, seed=77)
    expected = ref.predict(X_new)
    predicted = ours.predict(X_new)
    assert isinstance(predicted, np.ndarray) and predicted.dtype == np.float64 and predicted.shape == expected.shape
    np.testing.assert_allclose(predicted, expected, rtol=0, atol=1e-10 * np.abs(expected).max())
    assert ours.score(X_new, y_new) == pytest.approx(ref.score(X_new, y_new), rel=1e-9)


def test_ridge_cv_chooses_interior_alphas_like_sklearn():
    chosen = []
    for n, p in [(120, 25), (40, 80)]:  # cov and gram modes
        for noise in (0.3, 1.0, 3.0):
            X, y = _targets(n, p, "1d", seed=0, noise=noise)
            ref = sklearn_linear.RidgeCV(alphas=ALPHAS).fit(X, y)
            assert RidgeCV(alphas=ALPHAS).fit(X, y).alpha_ == ref.alpha_
            chosen.append(ref.alpha_)
    assert len(set(chosen)) >= 4
    assert all(ALPHAS[0] < a < ALPHAS[-1] for a in chosen)


def test_ridge_cv_default_alphas_are_aeons():
    np.testing.assert_array_equal(np.asarray(RidgeCV().alphas), AEON_ALPHAS)
    X, y = _targets(40, 10, "1d", seed=2)
    assert RidgeCV().fit(X, y).alpha_ == sklearn_linear.RidgeCV(alphas=AEON_ALPHAS).fit(X, y).alpha_


def test_ridge_cv_input_types():
    """float32 tensors, tensor / list / integer targets: the fit of the same float64 numpy data;
    tensor in, float64 tensor out."""
    X, y = _targets(40, 60, "1d", seed=3)
    X32 = X.astype(np.float32)
    ref = sklearn_linear.RidgeCV(alphas=ALPHAS).fit(X32.astype(np.float64), y)
    from_tensor = RidgeCV(alphas=ALPHAS).fit(torch.from_numpy(X32), torch.from_numpy(y))
    from_list = RidgeCV(alphas=ALPHAS).fit(X32, y.tolist())
    for est in (from_tensor, from_list):
        _assert_same_fit(est, ref, X32.astype(np.float64))
    out = from_tensor.predict(torch.from_numpy(X32))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64 and out.shape == (40,)
    np.testing.assert_array_equal(out.numpy(), from_list.predict(X32))
    y_int = np.round(y * 10).astype(np.int64)
    _assert_same_fit(RidgeCV(alphas=ALPHAS).fit(X, y_int), sklearn_linear.RidgeCV(alphas=ALPHAS).fit(X, y_int), X)


def test_ridge_cv_shares_the_classifiers_ridge():
    """RidgeClassifierCV on two classes is RidgeCV on ±1 targets (as in sklearn): one code, the
    same bits."""
    X, y = _classes(50, 30, 2, seed=6, noise=1.0)
    signs = np.where(y == 1, 1.0, -1.0)
    clf = RidgeClassifierCV(alphas=ALPHAS).fit(X, y)
    reg = RidgeCV(alphas=ALPHAS).fit(X, signs)
    assert clf.alpha_ == reg.alpha_ == sklearn_linear.RidgeCV(alphas=ALPHAS).fit(X, signs).alpha_
    assert torch.equal(clf.coef_, reg.coef_) and torch.equal(clf.intercept_[0], reg.intercept_)


@pytest.mark.parametrize("n,p", [(60, 300), (2000, 300)], ids=["gram", "cov"])
def test_ridge_cv_deterministic_across_thread_counts(n, p):
    """The same bits at 1 and 2 threads, fit and predict (the classifier's test has the shapes'
    story)."""
    X, y = _targets(n, p, "3 targets", seed=5)

    def fit():
        est = RidgeCV(alphas=ALPHAS).fit(X, y)
        return est, est.predict(torch.from_numpy(X))

    (one, one_predicted), (many, many_predicted) = (run_at_threads(count, fit)
                                                    for count in (1, max(2, torch.get_num_threads())))
    assert one.alpha_ == many.alpha_ and one.best_score_ == many.best_score_
    assert torch.equal(one.coef_, many.coef_) and torch.equal(one.intercept_, many.intercept_)
    assert torch.equal(one_predicted, many_predicted)


def test_ridge_cv_errors():
    X, y = _targets(20, 5, "1d", seed=0)
    with pytest.raises(ValueError, match=r"^RidgeCV: requires y to be passed, but the target y is None"):
        RidgeCV().fit(X, None)
    with pytest.raises(ValueError, match=r"^RidgeCV: expected numeric targets y, got dtype <U1"):
        RidgeCV().fit(X, np.array(list("ab") * 10))
    with pytest.raises(ValueError, match=r"^RidgeCV: expected y to have 20 rows \(one per case of X\), got 19"):
        RidgeCV().fit(X, y[:19])
    with pytest.raises(ValueError, match=r"^RidgeCV: expected y to be 1-D \(n_samples,\) or 2-D"):
        RidgeCV().fit(X, np.zeros((20, 2, 2)))
    with pytest.raises(ValueError, match=r"^RidgeCV: expected y with at least 1 target, got shape \(20, 0\)"):
        RidgeCV().fit(X, np.zeros((20, 0)))
    bad_y = y.copy()
    bad_y[4] = np.inf
    with pytest.raises(ValueError, match=r"^RidgeCV: expected y to contain only finite values, got NaN or infinity"):
        RidgeCV().fit(X, bad_y)
    bad_X = X.copy()
    bad_X[2, 2] = np.nan
    with pytest.raises(ValueError, match=r"^RidgeCV: expected X to contain only finite values, got NaN or infinity"):
        RidgeCV().fit(bad_X, y)
    with pytest.raises(ValueError, match=r"^RidgeCV: expected X to be 2-D \(n_samples, n_features\), got 3-D"):
        RidgeCV().fit(X[:, :, None], y)
    with pytest.raises(ValueError, match=r"^RidgeCV: expected every alpha to be finite and > 0"):
        RidgeCV(alphas=(1.0, -2.0)).fit(X, y)
    with pytest.raises(NotFittedError, match=r"^RidgeCV.predict: this instance is not fitted yet; call fit first"):
        RidgeCV().predict(X)
    fitted = RidgeCV().fit(X, y)
    with pytest.raises(ValueError, match=r"^RidgeCV: X has 4 features, but RidgeCV is expecting 5 features as input"):
        fitted.predict(X[:, :4])


# ----------------------------------------------------------------------------------------------
# The pipelines against aeon's
# ----------------------------------------------------------------------------------------------
CLASSIFIERS = {
    "MiniRocket": (MiniRocketClassifier, aeon_classifiers.MiniRocketClassifier, {"n_kernels": 840}),
    "MultiRocket": (MultiRocketClassifier, aeon_classifiers.MultiRocketClassifier, {"n_kernels": 250}),
}


@pytest.mark.parametrize("class_weight", [None, "balanced"])
@pytest.mark.parametrize("name", ["GunPoint", "BasicMotions"])
@pytest.mark.parametrize("family", list(CLASSIFIERS))
def test_classifier_matches_aeon(family, name, class_weight):
    """Bit-identical features, sklearn's scaler bits and sklearn's ridge: aeon's predictions,
    accuracy and predict_proba exactly, its decision_function (float32 in aeon) closely."""
    ours_cls, aeon_cls, params = CLASSIFIERS[family]
    X_train, y_train, X_test, y_test = _dataset(name)
    if class_weight is not None:
        X_train, y_train = _imbalanced(X_train, y_train)
    ours = ours_cls(random_state=3, class_weight=class_weight, **params).fit(X_train, y_train)
    aeons = aeon_cls(random_state=3, class_weight=class_weight, **params).fit(X_train, y_train)
    np.testing.assert_array_equal(ours.classes_, aeons.classes_)
    assert ours.ridge_.alpha_ == aeons.estimator_.alpha_
    predicted = ours.predict(X_test)
    np.testing.assert_array_equal(predicted, aeons.predict(X_test))
    assert ours.score(X_test, y_test) == aeons.score(X_test, y_test)
    proba = ours.predict_proba(X_test)
    assert proba.dtype == np.float64
    np.testing.assert_array_equal(proba, aeons.predict_proba(X_test))
    reference = aeons.pipeline_.decision_function(X_test)
    np.testing.assert_allclose(ours.decision_function(X_test), reference, rtol=0,
                               atol=1e-5 * np.abs(reference).max())


@pytest.mark.parametrize("family", list(CLASSIFIERS))
def test_random_state_instance_is_aeons(family):
    """A RandomState draws the transformer's seed as in aeon (the pipeline draws nothing itself)."""
    ours_cls, aeon_cls, params = CLASSIFIERS[family]
    X_train, y_train, X_test, _ = _dataset("GunPoint")
    ours = ours_cls(random_state=np.random.RandomState(11), **params).fit(X_train, y_train)
    aeons = aeon_cls(random_state=np.random.RandomState(11), **params).fit(X_train, y_train)
    np.testing.assert_array_equal(ours.decision_function(X_test) > 0, aeons.pipeline_.decision_function(X_test) > 0)
    reference = aeons.pipeline_.decision_function(X_test)
    np.testing.assert_allclose(ours.decision_function(X_test), reference, rtol=0, atol=1e-5 * np.abs(reference).max())


REGRESSORS = {
    "Rocket": (RocketRegressor, aeon_regressors.RocketRegressor, aeon_transforms.Rocket, {"n_kernels": 300}),
    "MiniRocket": (MiniRocketRegressor, aeon_regressors.MiniRocketRegressor, aeon_transforms.MiniRocket,
                   {"n_kernels": 840}),
    "MultiRocket": (MultiRocketRegressor, aeon_regressors.MultiRocketRegressor, aeon_transforms.MultiRocket,
                    {"n_kernels": 250}),
}


@pytest.mark.parametrize("name", ["Covid3Month", "noisy-sines"])
@pytest.mark.parametrize("family", list(REGRESSORS))
def test_regressor_matches_aeon(family, name):
    """aeon's alpha_ and predictions to float32 rounding (aeon's ridge predicts in float32); for
    the bit-identical transforms, sklearn's float64 ridge on aeon's features to ~1e-10."""
    ours_cls, aeon_cls, aeon_transform, params = REGRESSORS[family]
    X_train, y_train, X_test, _ = _dataset(name)
    ours = ours_cls(random_state=4, **params).fit(X_train, y_train)
    aeons = aeon_cls(random_state=4, **params).fit(X_train, y_train)
    assert ours.ridge_.alpha_ == aeons.pipeline_[-1].alpha_
    predicted, reference = ours.predict(X_test), aeons.predict(X_test)
    assert isinstance(predicted, np.ndarray) and predicted.dtype == np.float64 and predicted.shape == reference.shape
    np.testing.assert_allclose(predicted, reference, rtol=0, atol=1e-5 * np.abs(reference).max())
    if family == "Rocket":  # features within float32 rounding of aeon's, not bit-identical
        return
    transform = aeon_transform(random_state=4, **params).fit(X_train)
    scaler = sklearn_pre.StandardScaler(with_mean=False).fit(transform.transform(X_train))

    def scaled(X):
        return scaler.transform(transform.transform(X)).astype(np.float64)

    ridge = sklearn_linear.RidgeCV(alphas=AEON_ALPHAS).fit(scaled(X_train), y_train)
    assert ridge.alpha_ == ours.ridge_.alpha_
    expected = ridge.predict(scaled(X_test))
    np.testing.assert_allclose(predicted, expected, rtol=0, atol=1e-10 * np.abs(expected).max())


@pytest.mark.parametrize("class_weight", [None, "balanced", {1: 2.0}])
def test_rocket_classifier_class_weight_is_sklearns_on_its_features(class_weight):
    """RocketClassifier(class_weight) is its Rocket features -> sklearn's StandardScaler ->
    sklearn's RidgeClassifierCV(class_weight)."""
    X_train, y_train, X_test, _ = _dataset("GunPoint")
    X_train, y_train = _imbalanced(X_train, y_train)
    clf = RocketClassifier(n_kernels=300, random_state=2, class_weight=class_weight).fit(X_train, y_train)
    F_train, F_test = clf.rocket_.transform(X_train), clf.rocket_.transform(X_test)
    scaler = sklearn_pre.StandardScaler(with_mean=False).fit(F_train)
    ridge = sklearn_linear.RidgeClassifierCV(alphas=AEON_ALPHAS, class_weight=class_weight).fit(
        scaler.transform(F_train), y_train)
    assert clf.ridge_.alpha_ == ridge.alpha_
    np.testing.assert_array_equal(clf.predict(X_test), ridge.predict(scaler.transform(F_test)))


AEON_PAIRS = [
    (RocketClassifier, aeon_classifiers.RocketClassifier),
    (MiniRocketClassifier, aeon_classifiers.MiniRocketClassifier),
    (MultiRocketClassifier, aeon_classifiers.MultiRocketClassifier),
    (RocketRegressor, aeon_regressors.RocketRegressor),
    (MiniRocketRegressor, aeon_regressors.MiniRocketRegressor),
    (MultiRocketRegressor, aeon_regressors.MultiRocketRegressor),
]


@pytest.mark.parametrize("ours,aeons", AEON_PAIRS, ids=[p[0].__name__ for p in AEON_PAIRS])
def test_parameters_and_defaults_are_aeons(ours, aeons):
    """aeon's parameters with aeon's defaults, less the documented unsupported ones
    (``estimator``, ``n_jobs``; MultiRocketRegressor's unused ``rocket_transform``), plus ours
    (``device``, ``alphas`` = aeon's ridge alphas, ``verbose`` = the package's progress convention;
    Rocket's ``normalise`` and ``accumulate``)."""
    def defaults(cls):
        return {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items() if name != "self"}

    mine, theirs = defaults(ours), defaults(aeons)
    unsupported = {"estimator", "n_jobs"} | ({"rocket_transform"} if ours is MultiRocketRegressor else set())
    assert set(theirs) - set(mine) == unsupported
    extra = {"device", "alphas", "verbose"}
    if ours.__name__.startswith("Rocket"):
        extra |= {"normalise", "accumulate"}
    assert set(mine) - set(theirs) == extra
    for name in set(mine) & set(theirs):
        assert mine[name] == theirs[name], name
    np.testing.assert_array_equal(np.asarray(mine["alphas"]), AEON_ALPHAS)
    assert mine["device"] is None
    if "normalise" in mine:  # aeon's Rocket transform's default, which aeon's pipelines keep
        assert mine["normalise"] == inspect.signature(aeon_transforms.Rocket.__init__).parameters["normalise"].default


# ----------------------------------------------------------------------------------------------
# Input forms, outputs, errors
# ----------------------------------------------------------------------------------------------
def _small_classification(n_channels=1):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(16, n_channels, 40))
    X[8:] += np.sin(np.linspace(0, 6, 40))  # a learnable class difference
    return X, np.array(["x"] * 8 + ["y"] * 8)


@pytest.mark.parametrize("make", [MiniRocketClassifier, MultiRocketClassifier], ids=lambda m: m.__name__)
def test_classifier_input_forms(make):
    """numpy 3-D, numpy 2-D (one channel) and tensor input: the same fit and predictions; tensor
    in, tensor out for the scores and probabilities (numpy labels)."""
    X, y = _small_classification()
    a = make(n_kernels=168, random_state=7).fit(X, y)
    b = make(n_kernels=168, random_state=7).fit(X[:, 0, :], y)
    c = make(n_kernels=168, random_state=7).fit(torch.from_numpy(X), y)
    expected = a.predict(X)
    assert expected.dtype.kind == "U"
    np.testing.assert_array_equal(b.predict(X[:, 0, :]), expected)
    np.testing.assert_array_equal(c.predict(torch.from_numpy(X)), expected)
    assert torch.equal(a.ridge_.coef_, c.ridge_.coef_) and torch.equal(a.ridge_.coef_, b.ridge_.coef_)
    scores = c.decision_function(torch.from_numpy(X))
    assert isinstance(scores, torch.Tensor) and scores.dtype == torch.float64
    np.testing.assert_array_equal(scores.numpy(), a.decision_function(X))
    proba = c.predict_proba(torch.from_numpy(X))
    assert isinstance(proba, torch.Tensor)
    np.testing.assert_array_equal(proba.numpy(), a.predict_proba(X))
    assert a.n_features_in_ == a.n_channels_ == 1 and a.device_ == torch.device("cpu")


@pytest.mark.parametrize("make", [RocketRegressor, MiniRocketRegressor, MultiRocketRegressor],
                         ids=lambda m: m.__name__)
def test_regressor_input_forms(make):
    """numpy / 2-D / tensor input and 1-D / 2-D targets: float64 predictions, numpy for numpy
    input, a tensor for tensor input; a 2-D y gives one ridge column per target, as RidgeCV."""
    X, _ = _small_classification(n_channels=2)
    y = X[:, 0, 10:20].mean(1) + 2 * X[:, 1, 5]
    a = make(n_kernels=168, random_state=7).fit(X, y)
    predicted = a.predict(X)
    assert isinstance(predicted, np.ndarray) and predicted.dtype == np.float64 and predicted.shape == (16,)
    c = make(n_kernels=168, random_state=7).fit(torch.from_numpy(X), torch.from_numpy(y))
    out = c.predict(torch.from_numpy(X))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    np.testing.assert_array_equal(out.numpy(), predicted)
    two = make(n_kernels=168, random_state=7).fit(X, np.stack([y, -3 * y], 1))
    both = two.predict(X)
    assert both.shape == (16, 2)
    # -3y's leave-one-out errors are -3 times y's: the same alpha, the same first column.
    assert two.ridge_.alpha_ == a.ridge_.alpha_
    np.testing.assert_allclose(both[:, 0], predicted, rtol=0, atol=1e-10 * np.abs(predicted).max())
    assert a.n_features_in_ == 2
    one_channel = make(n_kernels=168, random_state=7)
    np.testing.assert_array_equal(one_channel.fit(X[:, 0, :], y).predict(X[:, 0, :]),
                                  make(n_kernels=168, random_state=7).fit(X[:, :1, :], y).predict(X[:, :1, :]))


PIPELINES = [RocketClassifier, MiniRocketClassifier, MultiRocketClassifier, RocketRegressor, MiniRocketRegressor,
             MultiRocketRegressor]


@pytest.mark.parametrize("make", PIPELINES, ids=lambda m: m.__name__)
def test_pipeline_errors_name_the_estimator(make):
    name = make.__name__
    X, labels = _small_classification()
    y = labels if name.endswith("Classifier") else np.arange(16.0)
    with pytest.raises(TypeError, match=rf"^{name}: expected n_kernels to be an int, got str 'many'"):
        make(n_kernels="many").fit(X, y)
    with pytest.raises(ValueError, match=rf"^{name}: expected n_kernels >= 1, got 0"):
        make(n_kernels=0).fit(X, y)
    if "max_dilations_per_kernel" in make().get_params():
        with pytest.raises(ValueError, match=rf"^{name}: expected max_dilations_per_kernel >= 1, got 0"):
            make(max_dilations_per_kernel=0).fit(X, y)
    if "n_features_per_kernel" in make().get_params():  # MultiRocket's own check, named
        with pytest.raises(ValueError, match=rf"^{name}: .*expected n_features_per_kernel=4 .*got 3"):
            make(n_kernels=84, n_features_per_kernel=3).fit(X, y)
    with pytest.raises(TypeError, match=rf"^{name}: expected random_state to be None, an int or a "
                                        r"numpy.random.RandomState, got str"):
        make(n_kernels=84, random_state="seed").fit(X, y)
    with pytest.raises(ValueError, match=rf"^{name}: expected every alpha to be finite and > 0"):
        make(alphas=(0.0,)).fit(X, y)
    with pytest.raises(ValueError, match=rf"^{name}: requires y to be passed, but the target y is None"):
        make().fit(X, None)
    with pytest.raises(ValueError, match=rf"^{name}: expected y to have 16 .* got 15"):
        make().fit(X, y[:15])
    bad = X.copy()
    bad[3, 0, 5] = np.nan
    with pytest.raises(ValueError, match=rf"^{name}: expected X to contain only finite values, got NaN or infinity"):
        make().fit(bad, y)
    with pytest.raises(ValueError, match=rf"^{name}: expected X to be 3-D \(n_cases, n_channels, n_timepoints\) or 2-D"):
        make().fit(X[:, :, :, None], y)
    with pytest.raises(NotFittedError, match=rf"^{name}.predict: this instance is not fitted yet; call fit first"):
        make().predict(X)
    fitted = make(n_kernels=84, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=rf"^{name}: expected X with 1 channels \(as in fit\), got 2"):
        fitted.predict(np.zeros((2, 2, 40)))
    assert fitted.n_timepoints_ == 40
    with pytest.raises(ValueError, match=rf"^{name}: expected X with 40 time points \(as in fit\), got 30; X has different "
                                         r"length to the data seen in fit$"):
        fitted.predict(X[:, :, :30])
    if name.endswith("Classifier"):
        with pytest.raises(ValueError, match=rf"^{name}: expected at least 2 classes in y, got 1"):
            make().fit(X, np.array(["x"] * 16))
    else:
        with pytest.raises(ValueError, match=rf"^{name}: expected numeric targets y"):
            make().fit(X, labels)


@pytest.mark.parametrize("make", [MiniRocketClassifier, MiniRocketRegressor, MultiRocketClassifier,
                                  MultiRocketRegressor], ids=lambda m: m.__name__)
def test_transformer_errors_are_named(make):
    """The transformer's own check (series too short) surfaces with the estimator's name in front."""
    name = make.__name__
    X, labels = _small_classification()
    y = labels if name.endswith("Classifier") else np.arange(16.0)
    with pytest.raises(ValueError, match=rf"^{name}: .*time points"):
        make(n_kernels=84, random_state=0).fit(X[:, :, :5], y)


def test_kinds_and_tags():
    base = pytest.importorskip("sklearn.base")
    utils = pytest.importorskip("sklearn.utils")
    for make in (MiniRocketClassifier, MultiRocketClassifier, RocketClassifier):
        assert base.is_classifier(make()) and not base.is_regressor(make())
    for make in (RidgeCV, RocketRegressor, MiniRocketRegressor, MultiRocketRegressor):
        est = make()
        assert base.is_regressor(est) and not base.is_classifier(est)
        tags = utils.get_tags(est)
        assert tags.target_tags.required and tags.target_tags.multi_output
    for make in PIPELINES:
        tags = utils.get_tags(make())
        assert tags.input_tags.three_d_array and tags.input_tags.two_d_array and not tags.input_tags.allow_nan
        assert base.clone(make(n_kernels=84, random_state=1)).get_params() == make(n_kernels=84, random_state=1).get_params()


# ----------------------------------------------------------------------------------------------
# GPU parity
# ----------------------------------------------------------------------------------------------
@pytest.mark.needs_cuda
@pytest.mark.parametrize("n,p", [(40, 300), (300, 40)], ids=["gram", "cov"])
def test_ridge_cv_and_class_weight_gpu_match_cpu(n, p):
    X, y = _targets(n, p, "3 targets", seed=2)
    cpu = RidgeCV(alphas=ALPHAS).fit(X, y)
    gpu = RidgeCV(alphas=ALPHAS).fit(torch.from_numpy(X).cuda(), torch.from_numpy(y).cuda())
    assert gpu.coef_.device.type == "cuda" and gpu.alpha_ == cpu.alpha_
    np.testing.assert_allclose(gpu.coef_.cpu().numpy(), cpu.coef_.numpy(), rtol=0,
                               atol=1e-10 * float(cpu.coef_.abs().max()))
    out = gpu.predict(torch.from_numpy(X).cuda())
    assert out.device.type == "cuda"
    X, labels = _classes(n, p, 3, seed=2, noise=1.0)
    cpu = RidgeClassifierCV(alphas=ALPHAS, class_weight="balanced").fit(X, labels)
    gpu = RidgeClassifierCV(alphas=ALPHAS, class_weight="balanced").fit(torch.from_numpy(X).cuda(), labels)
    assert gpu.alpha_ == cpu.alpha_
    np.testing.assert_array_equal(gpu.predict(torch.from_numpy(X).cuda()), cpu.predict(X))


@pytest.mark.needs_cuda
@pytest.mark.parametrize("make", PIPELINES, ids=lambda m: m.__name__)
def test_pipeline_gpu_matches_cpu(make):
    X_train, y_train, X_test, _ = _dataset("GunPoint" if make.__name__.endswith("Classifier") else "Covid3Month")
    cpu = make(n_kernels=336, random_state=0).fit(X_train, y_train)
    gpu = make(n_kernels=336, random_state=0, device="cuda").fit(X_train, y_train)
    assert gpu.ridge_.coef_.device.type == "cuda" and gpu.ridge_.alpha_ == cpu.ridge_.alpha_
    if make.__name__.endswith("Classifier"):
        np.testing.assert_array_equal(gpu.predict(X_test), cpu.predict(X_test))
    else:
        np.testing.assert_allclose(gpu.predict(X_test), cpu.predict(X_test), rtol=1e-9, atol=1e-12)
