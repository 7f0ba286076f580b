"""softdtw_torch.aeon as a drop-in for aeon's distance-based k-NN: aeon's parameters, layout,
distances and weights, the same neighbours, distances, probabilities and predictions as aeon's
own estimators on aeon's bundled UCR/UEA data (univariate and multivariate)."""
import numpy as np
import pytest

aeon = pytest.importorskip("aeon")
from aeon.classification.distance_based import KNeighborsTimeSeriesClassifier as AeonClassifier  # noqa: E402
from aeon.datasets import load_basic_motions, load_unit_test  # noqa: E402
from aeon.regression.distance_based import KNeighborsTimeSeriesRegressor as AeonRegressor  # noqa: E402

from softdtw_torch.aeon import KNeighborsTimeSeriesClassifier, KNeighborsTimeSeriesRegressor  # noqa: E402


def data(name):
    load = {"unit_test": load_unit_test, "basic_motions": load_basic_motions}[name]
    X_train, y_train = load(split="train")
    X_test, y_test = load(split="test")
    return X_train, y_train, X_test[:15], y_test[:15]


CASES = [("dtw", None, 1, "uniform"), ("dtw", {"window": 0.1}, 3, "distance"), ("euclidean", None, 3, "uniform"),
         ("squared", None, 5, "distance")]


@pytest.mark.parametrize("name", ["unit_test", "basic_motions"])
@pytest.mark.parametrize("distance,params,k,weights", CASES)
def test_classifier_matches_aeon(name, distance, params, k, weights):
    X_train, y_train, X_test, _ = data(name)
    kw = dict(distance=distance, distance_params=params, n_neighbors=k, weights=weights)
    ours = KNeighborsTimeSeriesClassifier(**kw).fit(X_train, y_train)
    theirs = AeonClassifier(**kw).fit(X_train, y_train)
    dist, ind = ours.kneighbors(X_test)
    dist_theirs, ind_theirs = theirs.kneighbors(X_test)
    np.testing.assert_array_equal(ind, ind_theirs)
    np.testing.assert_allclose(dist, dist_theirs, rtol=1e-9)
    np.testing.assert_allclose(ours.predict_proba(X_test), theirs.predict_proba(X_test), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(ours.predict(X_test), theirs.predict(X_test))
    assert set(ours.get_params()) == set(theirs.get_params())


def test_regressor_matches_aeon():
    X_train, _, X_test, _ = data("unit_test")
    rng = np.random.default_rng(0)
    y = rng.standard_normal(len(X_train))
    for kw in ({}, {"distance": "dtw", "distance_params": {"window": 0.2}, "n_neighbors": 3, "weights": "distance"}):
        ours = KNeighborsTimeSeriesRegressor(**kw).fit(X_train, y)
        theirs = AeonRegressor(**kw).fit(X_train, y)
        np.testing.assert_allclose(ours.predict(X_test), theirs.predict(X_test), rtol=1e-9)


def test_list_of_unequal_series_in_aeons_layout():
    rng = np.random.default_rng(1)
    X = [rng.standard_normal((2, n)) for n in (20, 25, 18, 30, 22, 27)]
    y = np.array([0, 1, 0, 1, 0, 1])
    ours = KNeighborsTimeSeriesClassifier().fit(X, y)
    theirs = AeonClassifier().fit(X, y)
    queries = [rng.standard_normal((2, n)) for n in (21, 26)]
    np.testing.assert_array_equal(ours.predict(queries), theirs.predict(queries))
    np.testing.assert_allclose(ours.kneighbors(queries)[0], theirs.kneighbors(queries)[0], rtol=1e-9)


def test_what_is_not_provided_is_refused_by_name():
    X_train, y_train, _, _ = data("unit_test")
    with pytest.raises(ValueError, match="KNeighborsTimeSeriesClassifier: softdtw_torch provides distance in"):
        KNeighborsTimeSeriesClassifier(distance="msm").fit(X_train, y_train)
    with pytest.raises(ValueError, match=r"KNeighborsTimeSeriesClassifier.fit: distance_params \['itakura_max_slope'\]"):
        KNeighborsTimeSeriesClassifier(distance_params={"itakura_max_slope": 2.0}).fit(X_train, y_train)
    rng = np.random.default_rng(2)
    ragged = [rng.standard_normal((1, n)) for n in (10, 12)]
    with pytest.raises(ValueError, match="needs series of one length"):
        KNeighborsTimeSeriesClassifier(distance_params={"window": 0.1}).fit(ragged, [0, 1])


# Code written for aeon matches its error texts; ours carry them (after our own message, which
# names the method called). Each case runs aeon's estimator too, so the phrase is aeon's own.
def _rocket_family():
    from aeon.classification.convolution_based import MiniRocketClassifier as AeonMiniRocketClassifier
    from aeon.transformations.collection.convolution_based import MiniRocket as AeonMiniRocket
    from aeon.transformations.collection.convolution_based import MultiRocket as AeonMultiRocket

    import softdtw_torch.aeon as ours
    return [(ours.MiniRocket, AeonMiniRocket), (ours.MultiRocket, AeonMultiRocket),
            (ours.MiniRocketClassifier, AeonMiniRocketClassifier)]


@pytest.mark.slow  # aeon's numba kernels compile on first use: 37 s with an empty numba cache
@pytest.mark.parametrize("case", ["short", "missing", "channels", "length"])
def test_rocket_family_errors_carry_aeons_words(case):
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((6, 2, 20)), np.array([0, 1] * 3)
    phrase = {"short": r"n_timepoints must be >= \d+, but found 5", "missing": "has missing values",
              "channels": "X has different number of channels to the data seen in fit",
              "length": "X has different length to the data seen in fit"}[case]
    for ours_cls, aeon_cls in _rocket_family():
        for make in (ours_cls, aeon_cls):
            estimator = make()
            fit = (lambda X_: estimator.fit(X_, y)) if hasattr(estimator, "predict") else estimator.fit
            apply = estimator.predict if hasattr(estimator, "predict") else estimator.transform
            with pytest.raises(ValueError, match=phrase):
                if case == "short":
                    fit(X[:, :, :5])
                elif case == "missing":
                    fit(np.where(rng.random(X.shape) > 0.9, np.nan, X))
                else:
                    fit(X)
                    apply(X[:, :1] if case == "channels" else X[:, :, :15])


def test_the_tslearn_style_classes_name_themselves_for_aeons_arguments():
    import softdtw_torch as st

    for cls in (st.KNeighborsTimeSeriesClassifier, st.KNeighborsTimeSeriesRegressor):
        with pytest.raises(TypeError, match=rf"^{cls.__name__}\.__init__\(\) got an unexpected keyword argument 'distance'"):
            cls(distance="dtw")
