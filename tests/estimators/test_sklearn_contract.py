"""The scikit-learn contract of every estimator: scikit-learn's own common checks
(``check_estimator``), tags and mixins, one NotFittedError, ``clone``, pickling, pipelines and
model selection, ``n_features_in_`` as tslearn reads it, and ``predict_proba`` as aeon's
``RocketClassifier`` gives it.

References are scikit-learn's tools and checks, aeon's ``RocketClassifier`` / ``MiniRocket`` and
tslearn's ``TimeSeriesKMeans``, from the installed packages.
"""
from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch

sklearn = pytest.importorskip("sklearn")
from sklearn import linear_model, preprocessing  # noqa: E402
from sklearn.base import clone, is_classifier, is_clusterer, is_regressor  # noqa: E402
from sklearn.exceptions import NotFittedError as SklearnNotFittedError  # noqa: E402
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.utils import get_tags  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402
from sklearn.utils.validation import check_is_fitted  # noqa: E402

from conftest import AEON_DATASETS  # noqa: E402
from softdtw_torch import NotFittedError, SoftDTWKMeans  # noqa: E402
from softdtw_torch._base import as_numeric_array  # noqa: E402
from softdtw_torch.datasets import load_gunpoint, load_ts  # noqa: E402
from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier, KNeighborsTimeSeriesRegressor  # noqa: E402
from softdtw_torch.rocket import (HydraClassifier, HydraRegressor, HydraTransformer, MiniRocket,  # noqa: E402
                                  MultiRocket, RidgeClassifierCV, Rocket, RocketClassifier, SparseScaler,
                                  StandardScaler)
from softdtw_torch.rocket._classifier import MiniRocketClassifier, MultiRocketClassifier  # noqa: E402
from softdtw_torch.rocket._regressor import (MiniRocketRegressor, MultiRocketRegressor, RidgeCV,  # noqa: E402
                                            RocketRegressor)


# ----------------------------------------------------------------------------------------------
# Small, fast instances (scikit-learn's checks fit each one dozens of times)
# ----------------------------------------------------------------------------------------------
def _rocket():
    return Rocket(n_kernels=20, random_state=0)


def _minirocket():
    return MiniRocket(n_kernels=84, random_state=0)


def _multirocket():
    return MultiRocket(n_kernels=84, random_state=0)


def _rocket_classifier():
    return RocketClassifier(n_kernels=20, random_state=0)


def _rocket_regressor():
    return RocketRegressor(n_kernels=20, random_state=0)


def _minirocket_classifier():
    return MiniRocketClassifier(n_kernels=84, random_state=0)


def _minirocket_regressor():
    return MiniRocketRegressor(n_kernels=84, random_state=0)


def _multirocket_classifier():
    return MultiRocketClassifier(n_kernels=84, random_state=0)


def _multirocket_regressor():
    return MultiRocketRegressor(n_kernels=84, random_state=0)


def _kmeans():
    return SoftDTWKMeans(n_clusters=2, max_iter=3, barycenter_max_iter=5, random_state=0)


class MiniRocketOnPaddedSeries(MiniRocket):
    """MiniRocket after appending 8 zeros to each 2-D series, so that scikit-learn's checks, whose
    2-D data are series of 1 to 10 time points, reach MiniRocket's fit and transform (which need 9
    or more). Series of different lengths stay of different lengths."""

    def fit(self, X, y=None):
        return super().fit(_pad(X), y)

    def transform(self, X, x_lengths=None):
        return super().transform(_pad(X), x_lengths)


class MultiRocketOnPaddedSeries(MultiRocket):
    """MultiRocket after appending 9 zeros to each 2-D series (it needs 10 time points or more), as
    MiniRocketOnPaddedSeries."""

    def fit(self, X, y=None):
        return super().fit(_pad(X, 9), y)

    def transform(self, X, x_lengths=None):
        return super().transform(_pad(X, 9), x_lengths)


class HydraOnPaddedSeries(HydraTransformer):
    """HydraTransformer after appending 5 zeros to each 2-D series (it needs 6 time points or more),
    as MiniRocketOnPaddedSeries."""

    def fit(self, X, y=None):
        return super().fit(_pad(X, 5), y)

    def transform(self, X, x_lengths=None):
        return super().transform(_pad(X, 5), x_lengths)


def _pad(X, zeros=8):
    a = as_numeric_array(X, "MiniRocketOnPaddedSeries")  # the input errors scikit-learn expects
    return np.pad(a, ((0, 0), (0, zeros))) if a.ndim == 2 and a.shape[1] > 0 else a


# ----------------------------------------------------------------------------------------------
# scikit-learn's common checks, and the ones that cannot apply to time-series input
# ----------------------------------------------------------------------------------------------
N_FEATURES_IN = (
    "n_features_in_ is the number of channels (tslearn's convention) and a 2-D X is "
    "(n_cases, n_timepoints), one channel: n_features_in_ is 1, not X.shape[1]")
SERIES_OF_ONE_POINT = (
    "a 2-D X of one column is series of one time point, which ROCKET's kernels cannot convolve: "
    "the ValueError says n_timepoints must be >= 2, not '1 feature(s)'")
SHORT_SERIES = (
    "the check's 2-D data are series of 1 to 10 time points, nearly all fewer than the 9 MiniRocket "
    "(10 MultiRocket, 6 Hydra) needs (a ValueError, as aeon's); MiniRocketOnPaddedSeries, "
    "MultiRocketOnPaddedSeries and HydraOnPaddedSeries run these checks on padded series")
OTHER_LENGTH = (
    "a 2-D X with fewer columns is series of another length, which soft-DTW compares with the "
    "centers: not an error")
PREDICT_OTHER_LENGTH = (
    "the check predicts on X.T, a 2-D X of another width, i.e. series of another length, which DTW "
    "compares with the training series: not an error")
NAN_INSIDE = (
    "with allow_nan the check puts NaN at X[0, 0], inside the first series; NaN is read only as "
    "trailing padding (tslearn's format), so NaN inside a series is a ValueError")

#: The checks that fit a ROCKET-family pipeline on 2-D data (series of 1 to 10 time points), which
#: fail for MiniRocket's (and MultiRocket's) pipelines as for the MiniRocket transformer; the
#: pipelines' shared code is checked in full through RocketClassifier and RocketRegressor.
SHORT_SERIES_PIPELINE_CHECKS = [
    "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self", "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_pipeline_consistency",
    "check_estimators_nan_inf", "check_estimators_pickle", "check_f_contiguous_array_estimator",
    "check_supervised_y_2d", "check_methods_sample_order_invariance", "check_methods_subset_invariance",
    "check_fit2d_1feature", "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted",
    "check_n_features_in", "check_fit2d_predict1d",
]
#: The same for the ROCKET-family transformers that need more time points than the checks' series have.
SHORT_SERIES_TRANSFORMER_CHECKS = [
    "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self", "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_pipeline_consistency",
    "check_estimators_nan_inf", "check_estimators_pickle", "check_f_contiguous_array_estimator",
    "check_transformer_data_not_an_array", "check_transformer_general", "check_transformer_preserve_dtypes",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance", "check_fit2d_1feature",
    "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in",
    "check_fit2d_predict1d",
]
SHORT_SERIES_CLASSIFIER_CHECKS = SHORT_SERIES_PIPELINE_CHECKS + [
    "check_classifier_data_not_an_array", "check_classifiers_classes", "check_classifiers_train",
    "check_class_weight_classifiers", "check_decision_proba_consistency",
]
SHORT_SERIES_REGRESSOR_CHECKS = SHORT_SERIES_PIPELINE_CHECKS + ["check_regressors_no_decision_function"]

#: check name -> reason, per estimator: every check not listed must pass, every one listed must fail.
EXPECTED_FAILED_CHECKS = {
    "Rocket": {
        "check_n_features_in": N_FEATURES_IN,
        "check_n_features_in_after_fitting": N_FEATURES_IN,
        "check_fit2d_1feature": SERIES_OF_ONE_POINT,
    },
    "RocketClassifier": {
        "check_n_features_in": N_FEATURES_IN,
        "check_n_features_in_after_fitting": N_FEATURES_IN,
        "check_fit2d_1feature": SERIES_OF_ONE_POINT,
    },
    "MiniRocket": dict.fromkeys(SHORT_SERIES_TRANSFORMER_CHECKS, SHORT_SERIES),
    "MultiRocket": dict.fromkeys(SHORT_SERIES_TRANSFORMER_CHECKS, SHORT_SERIES),
    "MiniRocketOnPaddedSeries": {
        "check_n_features_in": N_FEATURES_IN,
        "check_n_features_in_after_fitting": N_FEATURES_IN,
    },
    "MultiRocketOnPaddedSeries": {
        "check_n_features_in": N_FEATURES_IN,
        "check_n_features_in_after_fitting": N_FEATURES_IN,
    },
    "SoftDTWKMeans": {
        "check_n_features_in": N_FEATURES_IN,
        "check_n_features_in_after_fitting": N_FEATURES_IN,
        "check_transformer_general": OTHER_LENGTH,
        "check_estimators_pickle": NAN_INSIDE,
    },
    "KNeighborsTimeSeriesClassifier": {
        "check_n_features_in": N_FEATURES_IN,
        "check_n_features_in_after_fitting": N_FEATURES_IN,
        "check_classifiers_train": PREDICT_OTHER_LENGTH,
        "check_estimators_pickle": NAN_INSIDE,
    },
    "KNeighborsTimeSeriesRegressor": {
        "check_n_features_in": N_FEATURES_IN,
        "check_n_features_in_after_fitting": N_FEATURES_IN,
        "check_estimators_pickle": NAN_INSIDE,
    },
    "RidgeClassifierCV": {},
    "StandardScaler": {},
    "RidgeCV": {},
    "RocketRegressor": {
        "check_n_features_in": N_FEATURES_IN,
        "check_n_features_in_after_fitting": N_FEATURES_IN,
        "check_fit2d_1feature": SERIES_OF_ONE_POINT,
    },
    "MiniRocketClassifier": dict.fromkeys(SHORT_SERIES_CLASSIFIER_CHECKS, SHORT_SERIES),
    "MiniRocketRegressor": dict.fromkeys(SHORT_SERIES_REGRESSOR_CHECKS, SHORT_SERIES),
    "MultiRocketClassifier": dict.fromkeys(SHORT_SERIES_CLASSIFIER_CHECKS, SHORT_SERIES),
    "MultiRocketRegressor": dict.fromkeys(SHORT_SERIES_REGRESSOR_CHECKS, SHORT_SERIES),
    "HydraTransformer": dict.fromkeys(SHORT_SERIES_TRANSFORMER_CHECKS, SHORT_SERIES),
    "HydraOnPaddedSeries": {
        "check_n_features_in": N_FEATURES_IN,
        "check_n_features_in_after_fitting": N_FEATURES_IN,
    },
    "SparseScaler": {},
    "HydraClassifier": dict.fromkeys(SHORT_SERIES_CLASSIFIER_CHECKS, SHORT_SERIES),
    "HydraRegressor": dict.fromkeys(SHORT_SERIES_REGRESSOR_CHECKS, SHORT_SERIES),
}

CHECKED = [_rocket(), _minirocket(), MiniRocketOnPaddedSeries(n_kernels=84, random_state=0), _multirocket(),
           MultiRocketOnPaddedSeries(n_kernels=84, random_state=0), _rocket_classifier(),
           RidgeClassifierCV(), StandardScaler(), _kmeans(), KNeighborsTimeSeriesClassifier(),
           KNeighborsTimeSeriesRegressor(), RidgeCV(), _rocket_regressor(), _minirocket_classifier(),
           _minirocket_regressor(), _multirocket_classifier(), _multirocket_regressor(),
           HydraTransformer(n_groups=8, random_state=0), HydraOnPaddedSeries(n_groups=8, random_state=0),
           SparseScaler(), HydraClassifier(n_groups=8, random_state=0), HydraRegressor(n_groups=8, random_state=0)]


@pytest.mark.parametrize("estimator", CHECKED, ids=lambda e: type(e).__name__)
def test_check_estimator(estimator):
    name = type(estimator).__name__
    expected = EXPECTED_FAILED_CHECKS[name]
    results = check_estimator(estimator, expected_failed_checks=expected, on_fail=None, on_skip=None)
    failed = [f"{r['check_name']}: {type(r['exception']).__name__}: {r['exception']}"
              for r in results if r["status"] == "failed"]
    assert not failed, "\n".join(failed)
    # The list is exact: a check declared as failing that passes is a stale entry.
    failing = {r["check_name"] for r in results if r["status"] == "xfail"}
    assert failing == set(expected)
    assert len(results) >= 45  # all of them ran (none is run where the tags refuse 2-D input)


# ----------------------------------------------------------------------------------------------
# Kinds and tags
# ----------------------------------------------------------------------------------------------
def test_kinds_and_tags():
    for est in (_rocket_classifier(), RidgeClassifierCV()):
        assert is_classifier(est) and not is_regressor(est) and not is_clusterer(est)
        assert get_tags(est).target_tags.required
    assert is_clusterer(_kmeans()) and not is_classifier(_kmeans())
    for est in (_rocket(), _minirocket(), StandardScaler(), _kmeans()):
        assert get_tags(est).transformer_tags is not None and not get_tags(est).target_tags.required
    for est in (_rocket(), _minirocket(), _rocket_classifier(), _kmeans()):
        tags = get_tags(est)
        assert tags.input_tags.three_d_array and tags.input_tags.two_d_array
        assert tags.input_tags.allow_nan == isinstance(est, SoftDTWKMeans)  # tslearn's NaN padding
        assert not tags.non_deterministic
    assert get_tags(_rocket()).transformer_tags.preserves_dtype == ["float32"]
    assert not get_tags(StandardScaler()).input_tags.three_d_array


def test_nan_padded_series_are_accepted_by_the_kmeans_only():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 12, 1))
    padded = X.copy()
    padded[::2, 9:] = np.nan  # tslearn's format: every other series 9 steps long
    km = _kmeans().fit(padded)
    np.testing.assert_array_equal(km.labels_, _kmeans().fit(X, x_lengths=[9, 12] * 3).labels_)
    with pytest.raises(ValueError, match="NaN or infinity"):
        _rocket().fit(padded[:, :, 0])


# ----------------------------------------------------------------------------------------------
# One NotFittedError
# ----------------------------------------------------------------------------------------------
X3 = np.random.default_rng(0).normal(size=(8, 2, 20))  # (cases, channels, time points)
Y3 = np.array([0, 1] * 4)


def _input_for(est):
    """X3 as each estimator reads it: tabular helpers take one channel's (n, T) as (n, features),
    the k-means tslearn's layout (n, T, d)."""
    if isinstance(est, (RidgeClassifierCV, StandardScaler, RidgeCV, SparseScaler)):
        return X3[:, 0]
    return np.transpose(X3, (0, 2, 1)) if isinstance(est, SoftDTWKMeans) else X3


@pytest.mark.parametrize("make,method,reported", [
    (_rocket, "transform", "transform"),
    (_minirocket, "transform", "transform"),
    (_rocket_classifier, "predict", "predict"),
    (_rocket_classifier, "predict_proba", "predict_proba"),
    (_rocket_classifier, "decision_function", "decision_function"),
    (_rocket_classifier, "score", "predict"),  # ClassifierMixin.score calls predict
    (RidgeClassifierCV, "predict", "predict"),
    (RidgeClassifierCV, "decision_function", "decision_function"),
    (RidgeClassifierCV, "score", "predict"),
    (StandardScaler, "transform", "transform"),
    (_kmeans, "predict", "predict"),
    (_kmeans, "transform", "transform"),
    (RidgeCV, "predict", "predict"),
    (RidgeCV, "score", "predict"),  # RegressorMixin.score calls predict
    (_rocket_regressor, "predict", "predict"),
    (_rocket_regressor, "score", "predict"),
    (_minirocket_classifier, "predict", "predict"),
    (_minirocket_classifier, "predict_proba", "predict_proba"),
    (_minirocket_classifier, "decision_function", "decision_function"),
    (_minirocket_regressor, "predict", "predict"),
    (_multirocket_classifier, "predict_proba", "predict_proba"),
    (_multirocket_regressor, "predict", "predict"),
])
def test_every_method_raises_one_not_fitted_error(make, method, reported):
    est = make()
    X = _input_for(est)
    args = (X, Y3) if method == "score" else (X,)
    with pytest.raises(NotFittedError, match=rf"^{type(est).__name__}\.{reported}: this instance is not fitted yet; "
                                             rf"call fit first") as info:
        getattr(est, method)(*args)
    # scikit-learn's class (so its tools catch it), and a RuntimeError as MiniRocket's used to be.
    assert isinstance(info.value, SklearnNotFittedError) and isinstance(info.value, RuntimeError)
    with pytest.raises(SklearnNotFittedError):
        check_is_fitted(est)
    est.fit(X, Y3)
    check_is_fitted(est)
    getattr(est, method)(*args)


@pytest.mark.parametrize("make,attribute", [(_rocket, "kernels"), (_minirocket, "parameters")])
def test_aeon_attributes_before_fit(make, attribute):
    """aeon's ``kernels`` / ``parameters`` exist only after fit (read-only properties)."""
    est = make()
    assert not hasattr(est, attribute)
    with pytest.raises(NotFittedError, match=rf"^{type(est).__name__}\.{attribute}: this instance is not fitted"):
        getattr(est, attribute)
    assert "kernels" not in vars(est.fit(X3)) and "parameters" not in vars(est)
    assert len(getattr(est, attribute)) == (7 if attribute == "kernels" else 5)


def test_not_fitted_error_is_exported_once():
    import softdtw_torch
    from softdtw_torch.rocket import _classifier

    assert softdtw_torch.NotFittedError is _classifier.NotFittedError is NotFittedError
    assert issubclass(NotFittedError, SklearnNotFittedError)
    assert "NotFittedError" in softdtw_torch.__all__


# ----------------------------------------------------------------------------------------------
# clone, parameters, pickling
# ----------------------------------------------------------------------------------------------
def _unfitted_all():
    """Each estimator, with parameters other than the defaults."""
    return [Rocket(n_kernels=30, random_state=1, normalise=False), MiniRocket(n_kernels=168, random_state=1),
            MultiRocket(n_kernels=168, random_state=1, normalise=True),
            RocketClassifier(n_kernels=30, random_state=1), RidgeClassifierCV(alphas=(0.1, 1.0)),
            StandardScaler(with_mean=False), SoftDTWKMeans(n_clusters=2, max_iter=3, gamma=0.5, random_state=1),
            RidgeCV(alphas=(0.1, 1.0)), RocketRegressor(n_kernels=30, random_state=1, normalise=False),
            MiniRocketClassifier(n_kernels=168, random_state=1, class_weight="balanced"),
            MiniRocketRegressor(n_kernels=168, max_dilations_per_kernel=8, random_state=1),
            MultiRocketClassifier(n_kernels=84, random_state=1, class_weight={0: 2.0}),
            MultiRocketRegressor(n_kernels=84, max_dilations_per_kernel=8, random_state=1),
            HydraTransformer(n_kernels=4, n_groups=8, random_state=1), SparseScaler(mask=False),
            HydraClassifier(n_groups=8, random_state=1, class_weight="balanced"),
            HydraRegressor(n_kernels=4, random_state=1)]


def _fitted_all():
    """Each estimator of :func:`_unfitted_all`, fitted; and the X its methods take."""
    return [(est.fit(_input_for(est), Y3), _input_for(est)) for est in _unfitted_all()]


def _outputs(est, X):
    methods = ("predict", "transform", "decision_function", "predict_proba")
    return {m: np.asarray(getattr(est, m)(X)) for m in methods if hasattr(est, m)}


@pytest.mark.parametrize("index", range(len(_unfitted_all())))
def test_clone_gives_equal_parameters_unfitted(index):
    est, _ = _fitted_all()[index]
    copy = clone(est)
    assert copy is not est and type(copy) is type(est)
    assert copy.get_params() == est.get_params()
    assert repr(copy) == repr(est)
    with pytest.raises(SklearnNotFittedError):
        check_is_fitted(copy)


@pytest.mark.parametrize("index", range(len(_unfitted_all())))
def test_pickled_fitted_estimator_gives_identical_outputs(index):
    est, X = _fitted_all()[index]
    restored = pickle.loads(pickle.dumps(est))
    assert restored.get_params() == est.get_params()
    before, after = _outputs(est, X), _outputs(restored, X)
    assert before.keys() == after.keys() and before
    for method in before:
        np.testing.assert_array_equal(after[method], before[method], err_msg=method)


def test_params_and_repr_are_scikit_learns():
    est = Rocket(n_kernels=20, accumulate="float64")
    assert repr(est) == "Rocket(accumulate='float64', n_kernels=20)"
    assert est.set_params(n_kernels=30) is est and est.n_kernels == 30
    pipe = make_pipeline(Rocket(n_kernels=20), RidgeClassifierCV())
    assert pipe.get_params()["rocket__n_kernels"] == 20
    pipe.set_params(ridgeclassifiercv__fit_intercept=False)
    assert pipe.steps[1][1].fit_intercept is False
    with pytest.raises(ValueError, match=r"^Invalid parameter 'kernels' for estimator MiniRocket"):
        MiniRocket().set_params(kernels=1)


# ----------------------------------------------------------------------------------------------
# n_features_in_
# ----------------------------------------------------------------------------------------------
def test_n_features_in_is_the_channel_count_as_tslearns():
    tslearn_clustering = pytest.importorskip("tslearn.clustering")
    Xk = np.transpose(X3, (0, 2, 1))  # (n, T, d) for the k-means, as tslearn
    reference = tslearn_clustering.TimeSeriesKMeans(n_clusters=2, max_iter=2, random_state=0)
    for X in (Xk, Xk[:, :, 0]):
        assert _kmeans().fit(X).n_features_in_ == reference.fit(X).n_features_in_
    assert reference.fit(Xk).n_features_in_ == 2 and reference.fit(Xk[:, :, 0]).n_features_in_ == 1
    for make in (_rocket, _minirocket, _rocket_classifier, _rocket_regressor, _minirocket_classifier,
                 _minirocket_regressor, _multirocket_classifier, _multirocket_regressor):
        assert make().fit(X3, Y3).n_features_in_ == 2
        assert make().fit(X3[:, 0], Y3).n_features_in_ == 1
    assert RidgeClassifierCV().fit(X3[:, 0], Y3).n_features_in_ == 20
    assert RidgeCV().fit(X3[:, 0], Y3).n_features_in_ == 20
    assert StandardScaler().fit(X3[:, 0]).n_features_in_ == 20
    assert Rocket.from_kernels(_rocket().fit(X3).kernels, n_channels=2).n_features_in_ == 2
    assert not hasattr(Rocket.from_kernels(_rocket().fit(X3).kernels), "n_features_in_")  # channels unknown


# ----------------------------------------------------------------------------------------------
# Pipelines and model selection
# ----------------------------------------------------------------------------------------------
def test_rocket_pipeline_is_the_rocket_classifier():
    """Rocket -> StandardScaler -> RidgeClassifierCV as a scikit-learn Pipeline of our stages is
    what RocketClassifier computes."""
    X_train, y_train = load_gunpoint("train")
    X_test, _ = load_gunpoint("test")
    pipe = make_pipeline(Rocket(n_kernels=300, random_state=2), StandardScaler(with_mean=False),
                         RidgeClassifierCV()).fit(X_train, y_train)
    clf = RocketClassifier(n_kernels=300, random_state=2).fit(X_train, y_train)
    np.testing.assert_array_equal(pipe.predict(X_test), clf.predict(X_test))
    np.testing.assert_array_equal(pipe.decision_function(X_test), clf.decision_function(X_test))
    assert is_classifier(pipe) and pipe.classes_.tolist() == clf.classes_.tolist()


def test_minirocket_in_a_scikit_learn_pipeline_is_aeons():
    """MiniRocket -> scikit-learn's StandardScaler -> RidgeClassifierCV, against the same pipeline
    on aeon's MiniRocket (same seed: the same features, so the same fitted ridge)."""
    aeon_mr = pytest.importorskip("aeon.transformations.collection.convolution_based")
    X_train, y_train = load_gunpoint("train")
    X_test, _ = load_gunpoint("test")

    def pipeline(transform):
        return make_pipeline(transform, preprocessing.StandardScaler(with_mean=False),
                             linear_model.RidgeClassifierCV(alphas=np.logspace(-3, 3, 10))).fit(X_train, y_train)

    ours = pipeline(MiniRocket(n_kernels=840, random_state=3))
    aeons = pipeline(aeon_mr.MiniRocket(n_kernels=840, random_state=3))
    np.testing.assert_array_equal(ours.decision_function(X_test), aeons.decision_function(X_test))
    np.testing.assert_array_equal(ours.predict(X_test), aeons.predict(X_test))
    assert ours.score(X_test, aeons.predict(X_test)) == 1.0


def test_cross_val_score_uses_stratified_folds_of_a_classifier():
    X, y = load_gunpoint("train")
    est = RocketClassifier(n_kernels=100, random_state=0)
    scores = cross_val_score(est, X, y, cv=3)
    # What scikit-learn does for a classifier: stratified folds, a clone fitted per fold, score.
    expected = [clone(est).fit(X[train], y[train]).score(X[test], y[test])
                for train, test in StratifiedKFold(3).split(X, y)]
    np.testing.assert_array_equal(scores, expected)
    assert scores.mean() > 0.7


def test_grid_search_over_a_pipeline_parameter():
    X, y = load_gunpoint("train")
    X_test, _ = load_gunpoint("test")
    pipe = make_pipeline(MiniRocket(random_state=0), RidgeClassifierCV())
    grid = GridSearchCV(pipe, {"minirocket__n_kernels": [84, 168], "ridgeclassifiercv__fit_intercept": [True, False]},
                        cv=3).fit(X, y)
    assert len(grid.cv_results_["params"]) == 4
    for params, mean in zip(grid.cv_results_["params"], grid.cv_results_["mean_test_score"]):
        assert mean == pytest.approx(cross_val_score(clone(pipe).set_params(**params), X, y, cv=3).mean())
    refit = clone(pipe).set_params(**grid.best_params_).fit(X, y)
    np.testing.assert_array_equal(grid.predict(X_test), refit.predict(X_test))


def test_kmeans_in_a_pipeline_and_fit_transform_with_lengths():
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(0, 0.1, (5, 15)), rng.normal(3, 0.1, (5, 15))])
    km = _kmeans()
    labels = make_pipeline(km).fit_predict(X)
    assert len(set(labels[:5])) == 1 and len(set(labels[5:])) == 1 and labels[0] != labels[5]
    lengths = np.array([12, 15] * 5)
    np.testing.assert_array_equal(_kmeans().fit_transform(X, x_lengths=lengths),
                                  _kmeans().fit(X, x_lengths=lengths).transform(X, x_lengths=lengths))


# ----------------------------------------------------------------------------------------------
# predict_proba: aeon's RocketClassifier's
# ----------------------------------------------------------------------------------------------
def _basic_motions(split):
    if AEON_DATASETS is None:
        pytest.skip("needs aeon's bundled datasets (pip install aeon; see requirements-dev.txt)")
    return load_ts(os.path.join(AEON_DATASETS, "BasicMotions", f"BasicMotions_{split}.ts"))


@pytest.mark.parametrize("dataset", ["GunPoint", "BasicMotions"])
def test_predict_proba_is_aeons(dataset):
    """aeon's RocketClassifier.predict_proba for a ridge (no probabilities): the one-hot encoding
    of the prediction, float64 (n_cases, n_classes), columns in classes_ order."""
    aeon_cls = pytest.importorskip("aeon.classification.convolution_based")
    if dataset == "GunPoint":
        (X_train, y_train), (X_test, _) = load_gunpoint("train"), load_gunpoint("test")
    else:
        (X_train, y_train), (X_test, _) = _basic_motions("TRAIN"), _basic_motions("TEST")
    ours = RocketClassifier(n_kernels=1_000, random_state=0).fit(X_train, y_train)
    aeons = aeon_cls.RocketClassifier(n_kernels=1_000, random_state=0).fit(X_train, y_train)
    proba, reference = ours.predict_proba(X_test), aeons.predict_proba(X_test)
    assert isinstance(proba, np.ndarray) and proba.dtype == reference.dtype == np.float64
    assert proba.shape == reference.shape == (len(X_test), len(np.unique(y_train)))
    np.testing.assert_array_equal(ours.classes_, aeons.classes_)
    predicted = ours.predict(X_test)
    np.testing.assert_array_equal(proba, (predicted[:, None] == ours.classes_[None, :]).astype(np.float64))
    # Same rows wherever the predictions agree, which is nearly everywhere (the features are
    # within float32 rounding of aeon's; tests/estimators/test_rocket_classifier.py).
    same = predicted == aeons.predict(X_test)
    assert same.mean() >= 0.99
    np.testing.assert_array_equal(proba[same], reference[same])


def test_predict_proba_of_a_tensor_is_a_tensor():
    clf = _rocket_classifier().fit(X3, Y3)
    proba = clf.predict_proba(torch.from_numpy(X3))
    assert isinstance(proba, torch.Tensor) and proba.dtype == torch.float64
    np.testing.assert_array_equal(proba.numpy(), clf.predict_proba(X3))
