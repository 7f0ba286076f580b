"""The Hydra pipelines (HydraClassifier, MultiRocketHydraClassifier, HydraRegressor,
MultiRocketHydraRegressor) and SparseScaler against aeon's, on aeon's bundled data: the same
scaler bits, the same alphas, the same predictions and accuracy. References are aeon's own
estimators, from the installed package."""
from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest
import torch

from softdtw_torch.rocket import (HydraClassifier, HydraRegressor, MultiRocketHydraClassifier,
                                  MultiRocketHydraRegressor, SparseScaler)

aeon_datasets = pytest.importorskip("aeon.datasets")
aeon_classifiers = pytest.importorskip("aeon.classification.convolution_based")
aeon_regressors = pytest.importorskip("aeon.regression.convolution_based")
from aeon.classification.convolution_based._hydra import _SparseScaler as AeonSparseScaler  # noqa: E402

AEON_ALPHAS = np.logspace(-3, 3, 10)


@functools.lru_cache(maxsize=None)
def _dataset(name):
    load = {"GunPoint": aeon_datasets.load_gunpoint, "BasicMotions": aeon_datasets.load_basic_motions,
            "ArrowHead": aeon_datasets.load_arrow_head, "ItalyPowerDemand": aeon_datasets.load_italy_power_demand,
            "Covid3Month": aeon_datasets.load_covid_3month}[name]
    return (*load(split="train"), *load(split="test"))


def _assert_same_alpha_or_a_near_tie(ours, aeons, X_train, y_train):
    """aeon's alpha, or, where ours differs, a near-tie: scikit-learn's own leave-one-out errors of
    the two alphas, on our scaled features, within 1e-6 of each other (relative). Measured on
    MultiRocket-Hydra, GunPoint: 1.6e-7 between alphas 0.001 and 0.0046, which float64 rounding in
    two ridge implementations orders differently; the predictions below are the same."""
    theirs = _aeon_ridge(aeons).alpha_
    if ours.ridge_.alpha_ == theirs:
        return
    from sklearn.linear_model import RidgeClassifierCV as SklearnRidge

    scaled = ours.scaler_.transform(getattr(ours, ours._transformer_attribute).transform(torch.from_numpy(X_train)))
    ridge = SklearnRidge(alphas=AEON_ALPHAS, class_weight=ours.class_weight, store_cv_results=True).fit(
        scaled.double().numpy(), y_train)
    errors = {alpha: float((ridge.cv_results_[..., i] ** 2).mean()) for i, alpha in enumerate(AEON_ALPHAS)}
    ours_error, theirs_error = errors[ours.ridge_.alpha_], errors[theirs]
    assert abs(ours_error - theirs_error) <= 1e-6 * abs(theirs_error), (ours.ridge_.alpha_, theirs, errors)


def _aeon_ridge(estimator):
    """The fitted sklearn ridge inside an aeon Hydra pipeline."""
    return estimator.clf_[-1] if hasattr(estimator, "clf_") else (
        estimator._clf[-1] if hasattr(estimator, "_clf") else estimator.classifier)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mask", [True, False])
def test_sparse_scaler_is_aeons_bit_for_bit(mask, dtype):
    rng = np.random.default_rng(0)
    X = torch.from_numpy((np.maximum(rng.normal(size=(40, 300)), 0) * rng.integers(0, 3, (40, 300))).astype(dtype))
    X[:, 5] = 0  # a feature that is always zero
    X_new = torch.from_numpy(rng.normal(size=(7, 300)).astype(dtype))
    aeon = AeonSparseScaler(mask=mask)
    expected_train = aeon.fit_transform(X)
    ours = SparseScaler(mask=mask)
    got_train = ours.fit_transform(X)
    assert torch.equal(got_train, expected_train)
    assert torch.equal(ours.transform(X_new), aeon.transform(X_new))
    np.testing.assert_array_equal(ours.transform(X_new.numpy()), aeon.transform(X_new).numpy())
    with pytest.raises(ValueError, match="SparseScaler: expected at least 2 cases .an unbiased std., got n_samples=1"):
        SparseScaler().fit(X[:1])


CLASSIFIERS = {"Hydra": (HydraClassifier, aeon_classifiers.HydraClassifier),
               "MultiRocketHydra": (MultiRocketHydraClassifier, aeon_classifiers.MultiRocketHydraClassifier)}


@pytest.mark.slow  # aeon's MultiRocket (numba) and ours with aeon's defaults: 10-50 s a case, first compile included
@pytest.mark.parametrize("name", ["GunPoint", "BasicMotions", "ArrowHead", "ItalyPowerDemand"])
@pytest.mark.parametrize("family", list(CLASSIFIERS))
def test_classifier_matches_aeon(family, name):
    """aeon's kernels, aeon's features (within the stated tolerance), aeon's scalers and sklearn's
    ridge: the same alpha, the same predictions and accuracy, the same one-hot predict_proba."""
    ours_cls, aeon_cls = CLASSIFIERS[family]
    X_train, y_train, X_test, y_test = _dataset(name)
    ours = ours_cls(random_state=0).fit(X_train, y_train)
    aeons = aeon_cls(random_state=0).fit(X_train, y_train)
    np.testing.assert_array_equal(ours.classes_, aeons.classes_)
    _assert_same_alpha_or_a_near_tie(ours, aeons, X_train, y_train)
    predicted = ours.predict(X_test)
    np.testing.assert_array_equal(predicted, aeons.predict(X_test))
    assert ours.score(X_test, y_test) == aeons.score(X_test, y_test)
    np.testing.assert_array_equal(ours.predict_proba(X_test), aeons.predict_proba(X_test))


def test_class_weight_and_random_state_instance_are_aeons():
    X_train, y_train, X_test, _ = _dataset("GunPoint")
    keep = (y_train == np.unique(y_train)[0]) | (np.arange(len(y_train)) % 3 == 0)
    for ours_cls, aeon_cls in CLASSIFIERS.values():
        ours = ours_cls(random_state=np.random.RandomState(4), class_weight="balanced")
        aeons = aeon_cls(random_state=np.random.RandomState(4), class_weight="balanced")
        ours.fit(X_train[keep], y_train[keep])
        aeons.fit(X_train[keep], y_train[keep])
        _assert_same_alpha_or_a_near_tie(ours, aeons, X_train[keep], y_train[keep])
        np.testing.assert_array_equal(ours.predict(X_test), aeons.predict(X_test))


REGRESSORS = {"Hydra": (HydraRegressor, aeon_regressors.HydraRegressor),
              "MultiRocketHydra": (MultiRocketHydraRegressor, aeon_regressors.MultiRocketHydraRegressor)}


@pytest.mark.parametrize("family", list(REGRESSORS))
def test_regressor_matches_aeon(family):
    ours_cls, aeon_cls = REGRESSORS[family]
    X_train, y_train, X_test, _ = _dataset("Covid3Month")
    ours = ours_cls(random_state=1).fit(X_train, y_train)
    aeons = aeon_cls(random_state=1).fit(X_train, y_train)
    assert ours.ridge_.alpha_ == _aeon_ridge(aeons).alpha_
    expected = np.asarray(aeons.predict(X_test), dtype=np.float64)
    np.testing.assert_allclose(ours.predict(X_test), expected, rtol=0, atol=1e-4 * np.abs(expected).max())


PAIRS = [(HydraClassifier, aeon_classifiers.HydraClassifier),
         (MultiRocketHydraClassifier, aeon_classifiers.MultiRocketHydraClassifier),
         (HydraRegressor, aeon_regressors.HydraRegressor),
         (MultiRocketHydraRegressor, aeon_regressors.MultiRocketHydraRegressor)]


@pytest.mark.parametrize("ours,aeons", PAIRS, ids=[p[0].__name__ for p in PAIRS])
def test_parameters_and_defaults_are_aeons(ours, aeons):
    def defaults(cls):
        return {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items() if name != "self"}

    mine, theirs = defaults(ours), defaults(aeons)
    assert set(theirs) - set(mine) == {"n_jobs"}
    assert set(mine) - set(theirs) == {"device", "alphas", "verbose"}  # verbose: the package's progress convention
    for name in set(mine) & set(theirs):
        assert mine[name] == theirs[name], name
    np.testing.assert_array_equal(np.asarray(mine["alphas"]), AEON_ALPHAS)


def test_errors_name_the_estimator():
    X = np.random.default_rng(0).normal(size=(8, 1, 5))
    y = np.array([0, 1] * 4)
    with pytest.raises(ValueError, match="^HydraClassifier: expected at least 6 time points"):
        HydraClassifier(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="^MultiRocketHydraClassifier: "):
        MultiRocketHydraClassifier(random_state=0).fit(np.concatenate([X, X], 2)[:, :, :9], y)
    with pytest.raises(TypeError, match="^HydraRegressor: expected n_groups to be an int"):
        HydraRegressor(n_groups=2.5).fit(np.concatenate([X, X], 2), y.astype(float))
