"""The error sweep: bad input to every kind of public entry point raises an error that names that
entry point (the function, layer or estimator the user called), says what was expected and what
came, with ValueError for bad values and shapes, TypeError for types.

One table (``CASES``: entry point, call, error type, message pattern) covers the rough edges seen
by users: devices that do not exist, 1-D series where 2-D works, and errors raised by an operator
the user never called (``pairwise_cost`` under ``soft_dtw``, ``minirocket_fit`` under
``MiniRocketClassifier``). Every case is also checked generically: no message of the sweep names an
operator of csrc/library.cpp other than the entry point itself (``soft_dtw`` may say ``soft_dtw``;
``dtw``, ``SoftDTW`` and ``cdist_soft_dtw`` may not). The machinery: softdtw_torch/_errors.py
(Python) and ``with_public_name`` in csrc/common/checks.h (the operators made of operators).
"""
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import rocket

LIBRARY = Path(__file__).resolve().parents[2] / "csrc" / "library.cpp"
OPS = sorted(set(re.findall(r'm\.def\(\s*"([A-Za-z_0-9]+)\(', LIBRARY.read_text())))

# Ours, then aeon's words (tests/compat/test_aeon_dropin.py)
CHANNELS_UNLIKE_FIT = (r"expected X with 1 channels \(as in fit\), got 2; X has different number of channels to the "
                       r"data seen in fit$")


def _nan(t):
    t = t.clone()
    t.view(-1)[0] = math.nan
    return t


X3 = torch.randn(2, 5, 1, dtype=torch.float64)
X3_2 = torch.randn(2, 5, 2, dtype=torch.float64)  # 2 features: a mismatch with X3
X1 = torch.randn(5, dtype=torch.float64)
D3 = torch.rand(2, 5, 4, dtype=torch.float64)
TOO_LONG = torch.tensor([9, 9])  # lengths beyond the 5 time points of X3
SERIES = np.random.default_rng(0).normal(size=(6, 1, 20))  # ROCKET input: 6 cases, 1 channel, 20 points
SHORT = SERIES[:, :, :5]  # too short for MiniRocket (9), MultiRocket (10) and Hydra (6)
ONE_POINT = SERIES[:, :, :1]  # too short for Rocket (2)
LABELS = np.array([0, 1] * 3)
TARGETS = LABELS.astype(np.float64)
UNIVARIATE_1D = r"expected x and y both 2-D \(n, features\) for one pair or both 3-D \(batch, n, features\), " \
                r"got 1-D and 1-D; for a univariate series use x\.unsqueeze\(-1\)$"


def _minirocket():
    return rocket.MiniRocket(n_kernels=84, random_state=0).fit(SERIES)


def _multirocket():
    return rocket.MultiRocket(n_kernels=84, random_state=0, normalise=False).fit(SERIES)


def _case(who, call, error, pattern, id):
    return pytest.param(who, call, error, pattern, id=id)


CASES = [
    # -- 3. 1-D series, where 2-D (one unbatched pair) works: the message says both forms
    _case("soft_dtw", lambda: st.soft_dtw(X1, X1), ValueError, UNIVARIATE_1D, "soft_dtw-1d"),
    _case("soft_dtw", lambda: st.soft_dtw(X3[0], X3), ValueError,
          r"expected x and y both 2-D .* or both 3-D .*, got 2-D and 3-D$", "soft_dtw-2d-and-3d"),
    _case("soft_dtw", lambda: st.soft_dtw(X3[None], X3[None]), ValueError, r"got 4-D and 4-D$", "soft_dtw-4d"),
    _case("soft_dtw_alignment", lambda: st.soft_dtw_alignment(X1, X1), ValueError, UNIVARIATE_1D,
          "soft_dtw_alignment-1d"),
    _case("soft_dtw_sharp", lambda: st.soft_dtw_sharp(X1, X1), ValueError, UNIVARIATE_1D, "soft_dtw_sharp-1d"),
    _case("dilate", lambda: st.dilate(X1, X1), ValueError,
          r"expected prediction and target both 2-D .*; for a univariate series use prediction\.unsqueeze\(-1\)$",
          "dilate-1d"),
    _case("dtw", lambda: st.dtw(X1, X1), ValueError, UNIVARIATE_1D, "dtw-1d"),
    _case("dtw_path", lambda: st.dtw_path(X1, X1), ValueError, UNIVARIATE_1D, "dtw_path-1d"),
    _case("soft_dtw_from_cost", lambda: st.soft_dtw_from_cost(D3[0, 0]), ValueError,
          r"expected D 2-D \(n, m\) for one pair or 3-D \(batch, n, m\), got 1-D$", "soft_dtw_from_cost-1d"),
    _case("soft_dtw_alignment_from_cost", lambda: st.soft_dtw_alignment_from_cost(D3[None]), ValueError,
          r"expected D 2-D \(n, m\) for one pair or 3-D \(batch, n, m\), got 4-D$", "alignment_from_cost-4d"),
    _case("soft_dtw_sharp_from_cost", lambda: st.soft_dtw_sharp_from_cost(D3[0, 0]), ValueError,
          r"expected D 2-D", "sharp_from_cost-1d"),
    _case("SoftDTW", lambda: st.SoftDTW()(X1, X1), ValueError,
          r"expected 3-D inputs \(batch, length, features\), or 2-D ones read as input_2d says, got 1-D and 1-D$",
          "SoftDTW-1d"),
    _case("DILATELoss", lambda: st.DILATELoss()(X1, X1), ValueError, r"expected 3-D inputs", "DILATELoss-1d"),

    # -- 2. errors an operator the user never called finds: named after the entry point
    # soft_dtw's unfused mode (pairwise_cost, then soft_dtw_from_cost)
    _case("soft_dtw", lambda: st.soft_dtw(X3, X3, cost="l2"), ValueError,
          r'cost must be one of "sqeuclidean", "l1", "cosine", got "l2"$', "soft_dtw-bad-cost"),
    _case("soft_dtw", lambda: st.soft_dtw(X3, X3, gamma=torch.tensor(0.5), cost="l2"), ValueError,
          r"cost must be one of", "soft_dtw-tensor-gamma-bad-cost"),
    _case("soft_dtw", lambda: st.soft_dtw(X3.long(), X3.long(), gamma=torch.tensor(0.5), cost="l1"), TypeError,
          r"expected x to be a floating-point tensor", "soft_dtw-tensor-gamma-int"),
    _case("soft_dtw", lambda: st.soft_dtw(_nan(X3), X3, cost="l1"), ValueError, r"D contains NaN or -inf",
          "soft_dtw-nan-l1"),
    _case("soft_dtw", lambda: st.soft_dtw(_nan(X3), X3, fused=False), ValueError, r"D contains NaN or -inf",
          "soft_dtw-nan-unfused"),
    _case("soft_dtw", lambda: st.soft_dtw(_nan(X3), X3), ValueError, r"x and y must contain only finite values",
          "soft_dtw-nan-fused"),
    _case("soft_dtw", lambda: st.soft_dtw(X3, X3, x_lengths=TOO_LONG, cost="cosine"), ValueError,
          r"expected x_lengths values in \[1, 5\], got min 9 and max 9$", "soft_dtw-lengths-unfused"),
    _case("soft_dtw", lambda: st.soft_dtw(X3, X3, x_lengths=TOO_LONG, normalize=True, fused=False), ValueError,
          r"expected x_lengths values in \[1, 5\]", "soft_dtw-lengths-divergence"),
    _case("soft_dtw", lambda: st.soft_dtw(X3, X3_2, cost="l1"), ValueError,
          r"expected x and y to have the same number of features, got 1 and 2$", "soft_dtw-features"),
    _case("soft_dtw_alignment", lambda: st.soft_dtw_alignment(X3, X3, cost="l2"), ValueError,
          r"cost must be one of", "alignment-bad-cost"),
    _case("soft_dtw_alignment", lambda: st.soft_dtw_alignment(X3, X3_2, gamma=torch.tensor(0.5)), ValueError,
          r"same number of features", "alignment-tensor-gamma-features"),
    _case("soft_dtw_alignment", lambda: st.soft_dtw_alignment(_nan(X3), X3), ValueError, r"D contains NaN",
          "alignment-nan"),
    _case("soft_dtw_alignment", lambda: st.soft_dtw_alignment(X3, X3, y_lengths=TOO_LONG), ValueError,
          r"expected y_lengths values in \[1, 5\]", "alignment-lengths"),
    _case("soft_dtw_alignment_from_cost", lambda: st.soft_dtw_alignment_from_cost(_nan(D3)), ValueError,
          r"D contains NaN or -inf", "alignment_from_cost-nan"),
    _case("soft_dtw_sharp", lambda: st.soft_dtw_sharp(X3, X3, cost="l2"), ValueError, r"cost must be one of",
          "sharp-bad-cost"),
    _case("soft_dtw_sharp", lambda: st.soft_dtw_sharp(_nan(X3), X3), ValueError, r"must contain only finite",
          "sharp-nan-fused"),
    _case("soft_dtw_sharp", lambda: st.soft_dtw_sharp(_nan(X3), X3, cost="l1"), ValueError, r"D contains NaN",
          "sharp-nan-l1"),
    _case("soft_dtw_sharp", lambda: st.soft_dtw_sharp(X3, X3_2, gamma=torch.tensor(0.5), cost="l1"), ValueError,
          r"same number of features", "sharp-tensor-gamma-features"),
    _case("soft_dtw_sharp_from_cost", lambda: st.soft_dtw_sharp_from_cost(_nan(D3)), ValueError,
          r"D contains NaN", "sharp_from_cost-nan"),
    _case("dilate", lambda: st.dilate(_nan(X3), X3), ValueError, r"D contains NaN", "dilate-nan"),
    _case("dilate", lambda: st.dilate(X3, X3, prediction_lengths=TOO_LONG), ValueError,
          r"expected x_lengths values in \[1, 5\]", "dilate-lengths"),
    _case("pairwise_cost", lambda: st.pairwise_cost(X3, X3, "l2"), ValueError, r"cost must be one of",
          "pairwise_cost-bad-cost"),
    _case("cdist_soft_dtw", lambda: st.cdist_soft_dtw(X3, cost="l2"), ValueError, r"cost must be one of",
          "cdist_soft_dtw-bad-cost"),
    _case("cdist_soft_dtw", lambda: st.cdist_soft_dtw(_nan(X3)), ValueError, r"must contain only finite values",
          "cdist_soft_dtw-nan"),
    _case("cdist_soft_dtw", lambda: st.cdist_soft_dtw(X3, X3_2, verbose=True), ValueError,
          r"same number of features", "cdist_soft_dtw-features-verbose"),
    _case("dtw", lambda: st.dtw(_nan(X3), X3), ValueError, r"must contain only finite values", "dtw-nan"),
    _case("dtw", lambda: st.dtw(X3.long(), X3.long()), TypeError, r"expected x to be a floating-point tensor",
          "dtw-int"),
    _case("dtw_path", lambda: st.dtw_path(_nan(X3[0]), X3[0]), ValueError, r"must contain only finite values",
          "dtw_path-nan"),
    _case("cdist_dtw", lambda: st.cdist_dtw(_nan(X3)), ValueError, r"must contain only finite values",
          "cdist_dtw-nan"),
    _case("cdist_dtw", lambda: st.cdist_dtw(X3, X3_2), ValueError, r"same number of features", "cdist_dtw-features"),
    _case("SoftDTW", lambda: st.SoftDTW()(_nan(X3), X3), ValueError, r"must contain only finite values",
          "SoftDTW-nan"),
    _case("SoftDTW", lambda: st.SoftDTW(cost="l2")(X3, X3), ValueError, r"cost must be one of", "SoftDTW-bad-cost"),
    _case("SoftDTW", lambda: st.SoftDTW(cost="l1")(_nan(X3), X3), ValueError, r"D contains NaN", "SoftDTW-nan-l1"),
    _case("SharpSoftDTW", lambda: st.SharpSoftDTW(cost="l1")(X3, X3_2), ValueError, r"same number of features",
          "SharpSoftDTW-features"),
    _case("DILATELoss", lambda: st.DILATELoss()(_nan(X3), X3), ValueError, r"D contains NaN", "DILATELoss-nan"),
    # ROCKET: the transformers' operators, the layers' and the pipelines' transformers
    _case("MiniRocket.fit", lambda: rocket.MiniRocket().fit(SHORT), ValueError,
          r"expected at least 9 time points \(zero-pad shorter series\)", "MiniRocket-short"),
    _case("MiniRocket.fit", lambda: rocket.MiniRocket().fit(SERIES * np.nan), ValueError,
          r"only finite values", "MiniRocket-nan"),
    _case("MiniRocket.fit", lambda: rocket.MiniRocket(max_dilations_per_kernel=0).fit(SERIES), ValueError,
          r"expected max_dilations_per_kernel >= 1, got 0$", "MiniRocket-max-dilations"),
    _case("MiniRocket.transform", lambda: _minirocket().transform(SERIES, x_lengths=[3] * 6), ValueError,
          r"expected x_lengths values in \[9, 20\]", "MiniRocket-transform-lengths"),
    _case("MiniRocket.transform", lambda: _minirocket().transform(SERIES, x_lengths=[20] * 2), ValueError,
          r"expected x_lengths of shape \(6,\)", "MiniRocket-transform-lengths-count"),
    _case("MiniRocket.transform", lambda: _minirocket().transform(np.full_like(SERIES, np.inf)),
          ValueError, r"only finite values", "MiniRocket-transform-inf"),
    _case("MiniRocket.transform", lambda: _minirocket().transform(np.concatenate([SERIES, SERIES], 1)), ValueError,
          CHANNELS_UNLIKE_FIT, "MiniRocket-transform-channels"),
    _case("MiniRocketClassifier",
          lambda: rocket.MiniRocketClassifier(n_kernels=84, random_state=0).fit(SERIES, LABELS).predict(
              np.concatenate([SERIES, SERIES], 1)),
          ValueError, CHANNELS_UNLIKE_FIT, "MiniRocketClassifier-predict-channels"),
    _case("HydraTransformer.transform",
          lambda: rocket.HydraTransformer(random_state=0).fit(SERIES).transform(np.concatenate([SERIES, SERIES], 1)),
          ValueError, CHANNELS_UNLIKE_FIT, "Hydra-transform-channels"),
    _case("MultiRocket.fit", lambda: rocket.MultiRocket().fit(SHORT), ValueError, r"expected at least 10 time points",
          "MultiRocket-short"),
    _case("MultiRocket.transform", lambda: _multirocket().transform(SERIES, x_lengths=[3] * 6), ValueError,
          r"expected x_lengths values in \[10, 20\]", "MultiRocket-transform-lengths"),
    _case("Rocket", lambda: rocket.Rocket(n_kernels=10).fit(ONE_POINT), ValueError,
          r"expected n_timepoints in \[2, ", "Rocket-one-point"),
    _case("Rocket", lambda: rocket.Rocket(n_kernels=10, random_state=0).fit(SERIES).transform(SERIES, [30] * 6),
          ValueError, r"expected x_lengths values in \[1, 20\]", "Rocket-transform-lengths"),
    _case("rocket_transform", lambda: rocket.rocket_transform(torch.from_numpy(SERIES),
                                                              rocket.generate_kernels(20, 1, 10, 0), accumulate="f16"),
          ValueError, r'accumulate must be "float32_fma", "float64" or "float32", got "f16"$',
          "rocket_transform-accumulate"),
    _case("generate_kernels", lambda: rocket.generate_kernels(1, 1, 10, 0), ValueError,
          r"expected n_timepoints in \[2, ", "generate_kernels-one-point"),
    _case("RocketLayer", lambda: rocket.RocketLayer(0, 20, n_kernels=10), ValueError, r"expected n_channels in \[1, ",
          "RocketLayer-no-channel"),
    _case("RocketLayer", lambda: rocket.RocketLayer(1, 20, n_kernels=10)(torch.randn(2, 20)), ValueError,
          r"expected x to be a 3-D tensor \(n_cases, n_channels, n_timepoints\), got 2-D$", "RocketLayer-2d"),
    _case("HydraTransformer.fit", lambda: rocket.HydraTransformer().fit(ONE_POINT), ValueError,
          r"expected at least 6 time points", "Hydra-short"),
    _case("HydraTransformer.transform",
          lambda: rocket.HydraTransformer(random_state=0).fit(SERIES).transform(SERIES, x_lengths=[30] * 6),
          ValueError, r"expected x_lengths values in \[6, 20\]", "Hydra-transform-lengths"),
    _case("HydraLayer", lambda: rocket.HydraLayer(1, 20, seed=0)(torch.randn(2, 20)), ValueError,
          r"expected x to be a 3-D tensor", "HydraLayer-2d"),
    *[_case(name, lambda name=name, X=X, y=y: getattr(rocket, name)().fit(X, y), ValueError,
            rf"expected at least {points} time points", f"{name}-short")
      for name, X, y, points in [
          ("MiniRocketClassifier", SHORT, LABELS, 9), ("MultiRocketClassifier", SHORT, LABELS, 10),
          ("HydraClassifier", ONE_POINT, LABELS, 6), ("MultiRocketHydraClassifier", SHORT, LABELS, 6),
          ("MiniRocketRegressor", SHORT, TARGETS, 9), ("MultiRocketRegressor", SHORT, TARGETS, 10),
          ("HydraRegressor", ONE_POINT, TARGETS, 6), ("MultiRocketHydraRegressor", SHORT, TARGETS, 6)]],
    *[_case(name, lambda name=name, y=y: getattr(rocket, name)(n_kernels=10).fit(ONE_POINT, y), ValueError,
            r"expected n_timepoints in \[2, ", f"{name}-one-point")
      for name, y in [("RocketClassifier", LABELS), ("RocketRegressor", TARGETS)]],
    # the nearest neighbours, k-means and barycenters check their input themselves
    _case("KNeighborsTimeSeriesClassifier.predict",
          lambda: st.KNeighborsTimeSeriesClassifier(n_neighbors=1).fit(X3, [0, 1]).predict(X3_2), ValueError,
          r"expected series with 1 features \(as in fit\), got 2$", "knn-features"),
    _case("SoftDTWKMeans.transform",
          lambda: st.SoftDTWKMeans(n_clusters=2, random_state=0, max_iter=2).fit(X3).transform(X3_2), ValueError,
          r"expected series with 1 features \(as in fit\), got 2$", "kmeans-features"),
    _case("softdtw_barycenter", lambda: st.softdtw_barycenter(X1), ValueError, r"got a 1-D input", "barycenter-1d"),
    _case("softdtw_barycenter", lambda: st.softdtw_barycenter(X3 * math.inf), ValueError, r"X holds inf values",
          "barycenter-inf"),
    _case("SoftDTWKMeans.fit", lambda: st.SoftDTWKMeans(n_clusters=2).fit(X3 * math.inf), ValueError,
          r"X holds inf values", "kmeans-inf"),
    _case("KNeighborsTimeSeriesRegressor.fit",
          lambda: st.KNeighborsTimeSeriesRegressor(metric="softdtw").fit(X3 * math.inf, [0.0, 1.0]), ValueError,
          r"X holds inf values", "knn-inf"),
    _case("gamma_soft_dtw", lambda: st.gamma_soft_dtw(np.zeros(5)), ValueError, r"got a 1-D input",
          "gamma_soft_dtw-1d"),
    _case("lb_keogh", lambda: st.lb_keogh(X3[0], X3_2[0]), ValueError,
          r"expected ts_query and ts_candidate of one shape", "lb_keogh-shapes"),
    _case("lb_envelope", lambda: st.lb_envelope(X3[None]), ValueError, r"got 4-D", "lb_envelope-4d"),
    _case("kernels_from_aeon", lambda: rocket.kernels_from_aeon([np.zeros(1)] * 6), ValueError,
          r"expected aeon's 7-array kernels tuple", "kernels_from_aeon-6"),
    _case("kernels_to_aeon", lambda: rocket.kernels_to_aeon([np.zeros(1)] * 6), ValueError,
          r"expected aeon's 7-array kernels tuple", "kernels_to_aeon-6"),
    _case("hydra_parameters_from_aeon", lambda: rocket.hydra_parameters_from_aeon(np.zeros(1), [np.zeros(1)], 8),
          ValueError, r"expected W of shape", "hydra_parameters_from_aeon-W"),
    _case("MultiRocket.transform",
          lambda: rocket.MultiRocket.from_parameters([np.zeros(1)] * 3, [np.zeros(1)] * 3).transform(SERIES),
          ValueError, r"expected dilations in \[1, ", "MultiRocket-from-bad-parameters"),
    _case("RidgeClassifierCV", lambda: rocket.RidgeClassifierCV().fit(np.full((4, 2), np.nan), [0, 1, 0, 1]),
          ValueError, r"expected X to contain only finite values", "RidgeClassifierCV-nan"),
    _case("RidgeCV", lambda: rocket.RidgeCV().fit(np.zeros((4, 2, 1)), [0.0, 1.0, 0.0, 1.0]), ValueError,
          r"expected X to be 2-D \(n_samples, n_features\), got 3-D", "RidgeCV-3d"),
    _case("StandardScaler", lambda: rocket.StandardScaler().fit(np.full((3, 2), np.nan)), ValueError,
          r"only finite values", "StandardScaler-nan"),
    _case("SparseScaler", lambda: rocket.SparseScaler().fit(np.zeros((3, 2, 2))), ValueError, r"expected X to be 2-D",
          "SparseScaler-3d"),
]


def _raised(call):
    with pytest.raises(Exception) as info:
        call()
    return info.value


def _check_names(who, error):
    """The message starts with the entry point's name ("<who>: ") and names no operator but that
    one."""
    message = str(error)
    assert message.startswith(who + ": "), message
    internal = [op for op in OPS if op != who and re.search(r"\b" + re.escape(op) + r"\b", message)]
    assert not internal, f"the message names {internal}, which {who} only calls: {message}"


@pytest.mark.parametrize("who,call,error,pattern", CASES)
def test_errors_name_the_public_entry_point(who, call, error, pattern):
    raised = _raised(call)
    assert type(raised) is error, f"{type(raised).__name__}: {raised}"
    assert re.search(pattern, str(raised)), str(raised)
    _check_names(who, raised)


def test_the_operator_list_is_read():
    # The generic check above is only as good as this list.
    assert {"soft_dtw", "pairwise_cost", "soft_dtw_from_cost", "minirocket_fit", "hydra_transform",
            "rocket_convolve", "_dtw_path"} <= set(OPS)


# -- 1. devices: checked at fit (scikit-learn's rule: nothing in __init__), named after the estimator
DEVICE_ESTIMATORS = [
    ("KNeighborsTimeSeriesClassifier", lambda d: st.KNeighborsTimeSeriesClassifier(device=d).fit(X3, [0, 1])),
    ("KNeighborsTimeSeriesRegressor", lambda d: st.KNeighborsTimeSeriesRegressor(device=d).fit(X3, [0.0, 1.0])),
    ("MiniRocket.fit", lambda d: rocket.MiniRocket(device=d).fit(SERIES)),
    ("MiniRocket.transform", lambda d: rocket.MiniRocket.from_parameters(_minirocket().parameters,
                                                                         device=d).transform(SERIES)),
    ("MultiRocket.fit", lambda d: rocket.MultiRocket(device=d).fit(SERIES)),
    ("Rocket", lambda d: rocket.Rocket(device=d).fit(SERIES)),
    ("HydraTransformer.fit", lambda d: rocket.HydraTransformer(device=d).fit(SERIES)),
    *[(name, lambda d, name=name: getattr(rocket, name)(device=d).fit(SERIES, LABELS))
      for name in ("RocketClassifier", "MiniRocketClassifier", "MultiRocketClassifier", "HydraClassifier",
                   "MultiRocketHydraClassifier")],
    *[(name, lambda d, name=name: getattr(rocket, name)(device=d).fit(SERIES, TARGETS))
      for name in ("RocketRegressor", "MiniRocketRegressor", "MultiRocketRegressor", "HydraRegressor",
                   "MultiRocketHydraRegressor")],
]


@pytest.fixture(params=["not-a-device", "no-cuda", "cuda-out-of-range", "cuda-device-object", "not-a-string"])
def bad_device(request, monkeypatch):
    """(device, error, pattern) of a device this machine cannot run, CUDA's state patched so that
    every case runs with or without a GPU."""
    if request.param == "not-a-device":
        return "gpu", ValueError, r"device='gpu' is not a torch device \(expected e\.g\. 'cpu', 'cuda', 'cuda:1'\)$"
    if request.param == "not-a-string":
        return 0, TypeError, r"expected device to be None, a string or a torch\.device, got int$"
    if request.param == "no-cuda":
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
        return "cuda", ValueError, (r"device='cuda' but CUDA is not available on this machine "
                                    r"\(torch\.cuda\.is_available\(\) is False\)$")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    device = "cuda:7" if request.param == "cuda-out-of-range" else torch.device("cuda", 7)
    return device, ValueError, r"device='cuda:7' but this machine has 1 CUDA device \(cuda:0\)$"


@pytest.mark.parametrize("who,make", DEVICE_ESTIMATORS, ids=[who for who, _ in DEVICE_ESTIMATORS])
def test_devices_are_checked_by_name(who, make, bad_device):
    device, error, pattern = bad_device
    raised = _raised(lambda: make(device))
    assert type(raised) is error, f"{type(raised).__name__}: {raised}"
    assert re.search(pattern, str(raised)), str(raised)
    _check_names(who, raised)


def test_constructors_check_no_device():
    # scikit-learn's convention: __init__ stores its parameters; the check is fit's.
    for make in (st.KNeighborsTimeSeriesClassifier, rocket.MiniRocket, rocket.Rocket, rocket.MiniRocketClassifier):
        assert make(device="gpu").device == "gpu"
