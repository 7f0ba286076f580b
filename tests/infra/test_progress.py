"""The progress convention (softdtw_torch/_progress.py, CONTRIBUTING.md "Progress"): every long
call takes ``verbose``, off by default. Off, it prints nothing and never looks for tqdm; on, it
reports through a tqdm bar, or without tqdm through a few lines on stderr that name the call and
reach the total; either way the results are the same bits.

Each call runs on a tiny input three times: quiet, with plain lines (tqdm made "not installed" by
the module's one switch, ``_tqdm_class``) and, for a few, with a recording tqdm bar.
"""
import re

import numpy as np
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import _progress
from softdtw_torch.neighbors import KNeighborsTimeSeriesClassifier, KNeighborsTimeSeriesRegressor
from softdtw_torch.rocket import (HydraClassifier, HydraRegressor, HydraTransformer, MiniRocket, MiniRocketClassifier,
                                  MiniRocketRegressor, MultiRocket, MultiRocketClassifier, MultiRocketHydraClassifier,
                                  MultiRocketHydraRegressor, MultiRocketRegressor, Rocket, RocketClassifier,
                                  RocketRegressor)

pytestmark = pytest.mark.filterwarnings("ignore:h5py not installed")

# A plain progress line: "desc: n/total unit (p%)[, status][, done in 0.0 s]".
LINE = re.compile(r"^(?P<desc>[\w.]+): (?P<n>\d+)/(?P<total>\d+) \w+")


# ----------------------------------------------------------------------------------------------
# Tiny inputs
# ----------------------------------------------------------------------------------------------
def _series(n, length=16, d=1, seed=0):
    """(n, length, d) float64 series (tslearn's layout: the SoftDTW functions and the k-NN)."""
    return torch.from_numpy(np.random.default_rng(seed).normal(size=(n, length, d)).cumsum(1))


def _cases(n=10, channels=1, length=40, seed=1):
    """(n, channels, length) float32 cases (aeon's layout: the ROCKET family) and two classes."""
    x = np.random.default_rng(seed).normal(size=(n, channels, length)).astype(np.float32)
    x[n // 2:] += np.sin(np.linspace(0, 6, length, dtype=np.float32))
    return torch.from_numpy(x), np.array([0] * (n // 2) + [1] * (n - n // 2))


A, B = _series(6, seed=0), _series(4, length=12, seed=1)
Y_KNN = np.array([0, 1, 0, 1, 0, 1])
XR, Y_ROCKET = _cases()
ROCKET_TARGETS = np.linspace(0.0, 1.0, XR.shape[0])


# ----------------------------------------------------------------------------------------------
# The calls: run(verbose) -> results, and the calls that must report (desc -> total)
# ----------------------------------------------------------------------------------------------
def _knn(cls, y, **params):
    def run(verbose):
        est = cls(n_neighbors=2, verbose=verbose, **params).fit(A, y)
        out = [est.predict(A[:4]), est.kneighbors(A[:4]), est.kneighbors()]
        if hasattr(est, "predict_proba"):
            out.append(est.predict_proba(A[:4]))
        return out
    return run


def _knn_reports(cls, unit_pairs, symmetric_pairs):
    """kneighbors(A[:4]) and predict(A[:4]): 4 queries or 4·6 pairs; kneighbors(): 6 queries or the
    6·7/2 unordered pairs."""
    name = cls.__name__
    queries = {"predict": 4, "kneighbors": 6}  # the last kneighbors call (X=None) sets the last line
    if unit_pairs:
        queries = {"predict": 4 * 6, "kneighbors": symmetric_pairs}
    reports = {f"{name}.{method}": total for method, total in queries.items()}
    if cls is KNeighborsTimeSeriesClassifier:
        reports[f"{name}.predict_proba"] = queries["predict"]
    return reports


def _transformer(cls, **params):
    def run(verbose):
        est = cls(random_state=0, verbose=verbose, **params).fit(XR)
        return est.transform(XR)
    return run


def _pipeline(cls, **params):
    classifier = cls.__name__.endswith("Classifier")

    def run(verbose):
        est = cls(random_state=0, verbose=verbose, **params).fit(XR, Y_ROCKET if classifier else ROCKET_TARGETS)
        out = [est.predict(XR), est.ridge_.coef_]
        if classifier:
            out.append(est.decision_function(XR))
        return out
    return run


def _pipeline_reports(cls):
    reports = {f"{cls.__name__}.fit": 4, f"{cls.__name__}.predict": 2}
    if cls.__name__.endswith("Classifier"):
        reports[f"{cls.__name__}.decision_function"] = 2
    return reports


CALLS = {
    "cdist_soft_dtw": (lambda v: st.cdist_soft_dtw(A, B, normalize=True, chunk_size=5, verbose=v),
                       {"cdist_soft_dtw": 6 * 4 + 6 + 4}),                 # pairs and self terms
    "cdist_soft_dtw-numpy-symmetric": (lambda v: st.cdist_soft_dtw(A.numpy(), chunk_size=4, verbose=v),
                                       {"cdist_soft_dtw": 6 * 7 // 2}),
    "cdist_dtw": (lambda v: st.cdist_dtw(A, B, chunk_size=5, verbose=v), {"cdist_dtw": 6 * 4}),
    "cdist_dtw-symmetric-divergence-free": (lambda v: st.cdist_dtw(A, verbose=v), {"cdist_dtw": 6 * 7 // 2}),
    "softdtw_barycenter": (lambda v: st.softdtw_barycenter(A, max_iter=3, tol=0, verbose=v),
                           {"softdtw_barycenter": 3}),
    "softdtw_barycenter-adam-groups": (
        lambda v: st.softdtw_barycenter(A.view(2, 3, 16, 1), method="adam", max_iter=4, verbose=v),
        {"softdtw_barycenter": 4}),
    "softdtw_barycenter-progress": (lambda v: st.softdtw_barycenter(A, max_iter=2, tol=0, progress=v),
                                    {"softdtw_barycenter": 2}),           # the former name of verbose
    "knn-dtw-pruned": (_knn(KNeighborsTimeSeriesClassifier, Y_KNN),
                       _knn_reports(KNeighborsTimeSeriesClassifier, False, 0)),
    "knn-dtw-unpruned": (_knn(KNeighborsTimeSeriesClassifier, Y_KNN, pruning=False),
                         _knn_reports(KNeighborsTimeSeriesClassifier, True, 6 * 7 // 2)),
    "knn-softdtw": (_knn(KNeighborsTimeSeriesClassifier, Y_KNN, metric="softdtw"),
                    _knn_reports(KNeighborsTimeSeriesClassifier, True, 6 * 7 // 2)),
    "knn-euclidean": (_knn(KNeighborsTimeSeriesClassifier, Y_KNN, metric="euclidean"),
                      _knn_reports(KNeighborsTimeSeriesClassifier, False, 0)),
    "knn-regressor": (_knn(KNeighborsTimeSeriesRegressor, Y_KNN.astype(float), weights="distance"),
                      _knn_reports(KNeighborsTimeSeriesRegressor, False, 0)),
    "Rocket": (_transformer(Rocket, n_kernels=20, chunk_size=3), {"Rocket.fit": 10, "Rocket.transform": 10}),
    "MiniRocket": (_transformer(MiniRocket, n_kernels=84), {"MiniRocket.fit": 10, "MiniRocket.transform": 10}),
    "MultiRocket": (_transformer(MultiRocket, n_kernels=84), {"MultiRocket.fit": 10, "MultiRocket.transform": 10}),
    "HydraTransformer": (_transformer(HydraTransformer, n_kernels=2, n_groups=4),
                         {"HydraTransformer.fit": 10, "HydraTransformer.transform": 10}),
}
PIPELINES = [(RocketClassifier, {"n_kernels": 20}), (RocketRegressor, {"n_kernels": 20}),
             (MiniRocketClassifier, {"n_kernels": 84}), (MiniRocketRegressor, {"n_kernels": 84}),
             (MultiRocketClassifier, {"n_kernels": 84}), (MultiRocketRegressor, {"n_kernels": 84}),
             (HydraClassifier, {"n_kernels": 2, "n_groups": 4}), (HydraRegressor, {"n_kernels": 2, "n_groups": 4}),
             (MultiRocketHydraClassifier, {"n_kernels": 2, "n_groups": 4}),
             (MultiRocketHydraRegressor, {"n_kernels": 2, "n_groups": 4})]
for _cls, _params in PIPELINES:
    CALLS[_cls.__name__] = (_pipeline(_cls, **_params), _pipeline_reports(_cls))


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------
def _assert_same_bits(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for u, v in zip(a, b):
            _assert_same_bits(u, v)
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b) and a.dtype == b.dtype
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    else:
        assert a == b


def _last_lines(err):
    """desc -> (n, total, line) of the last plain line of each call; every line must be one."""
    last = {}
    for line in err.splitlines():
        match = LINE.match(line)
        assert match, f"not a progress line: {line!r}"
        last[match["desc"]] = (int(match["n"]), int(match["total"]), line)
    return last


@pytest.fixture
def recording_bar():
    """tqdm's bar class, each bar remembered (``.bars``) so that a test reads where it ended."""
    std = pytest.importorskip("tqdm.std", reason="tqdm is optional (requirements-dev.txt installs it)")

    class RecordingBar(std.tqdm):
        bars = []

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            RecordingBar.bars.append(self)

    return RecordingBar


def _no_tqdm_lookup():
    raise AssertionError("verbose is off: the progress must not even look for tqdm")


# ----------------------------------------------------------------------------------------------
# Every call: quiet when off, plain lines that reach the total when on, the same bits
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CALLS))
def test_quiet_by_default_plain_lines_when_verbose_same_bits(name, capsys, monkeypatch):
    run, reports = CALLS[name]
    monkeypatch.setattr(_progress, "_tqdm_class", _no_tqdm_lookup)
    quiet = run(False)
    assert capsys.readouterr() == ("", "")

    monkeypatch.setattr(_progress, "_tqdm_class", lambda: None)  # tqdm "not installed"
    loud = run(True)
    out, err = capsys.readouterr()
    assert out == ""
    last = _last_lines(err)
    assert set(last) == set(reports)
    for desc, total in reports.items():
        n, reported_total, line = last[desc]
        assert (n, reported_total) == (total, total), line
        assert line.endswith(" s") and ", done in " in line, line
    _assert_same_bits(quiet, loud)


@pytest.mark.parametrize("name", ["cdist_soft_dtw", "cdist_dtw", "softdtw_barycenter", "knn-dtw-pruned",
                                  "knn-softdtw", "Rocket", "MiniRocketClassifier"])
def test_tqdm_bar_reaches_its_total_and_is_closed(name, capsys, monkeypatch, recording_bar):
    run, reports = CALLS[name]
    monkeypatch.setattr(_progress, "_tqdm_class", lambda: recording_bar)
    loud = run(True)
    err = capsys.readouterr().err
    assert {bar.desc for bar in recording_bar.bars} == set(reports)
    for bar in recording_bar.bars:
        assert bar.n == bar.total, bar.desc
        assert bar.disable, f"{bar.desc}: not closed"   # tqdm.close() disables the bar
    for desc in reports:
        assert desc in err
    monkeypatch.setattr(_progress, "_tqdm_class", _no_tqdm_lookup)
    _assert_same_bits(run(False), loud)


def test_kmeans_prints_the_inertia_of_each_iteration(capsys, monkeypatch):
    """SoftDTWKMeans keeps its line per Lloyd iteration (scikit-learn's KMeans does the same), with
    or without tqdm, named by the method."""
    def fit(verbose):
        km = st.SoftDTWKMeans(n_clusters=2, max_iter=2, random_state=0, verbose=verbose).fit(A)
        return [km.cluster_centers_, km.labels_]

    monkeypatch.setattr(_progress, "_tqdm_class", _no_tqdm_lookup)
    quiet = fit(False)
    assert capsys.readouterr() == ("", "")
    loud = fit(True)
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(re.match(r"^SoftDTWKMeans\.fit: iteration \d+, inertia -?[\d.e+-]+$", line) for line in lines)
    assert lines[0].startswith("SoftDTWKMeans.fit: iteration 0,")
    _assert_same_bits(quiet, loud)


def test_torchscript_ignores_verbose(capsys):
    scripted = torch.jit.script(st.cdist_soft_dtw)
    capsys.readouterr()
    assert torch.equal(scripted(A, B, chunk_size=5, verbose=True), st.cdist_soft_dtw(A, B, chunk_size=5))
    assert capsys.readouterr() == ("", "")


# ----------------------------------------------------------------------------------------------
# The helper itself: few lines, a last line, closed on errors
# ----------------------------------------------------------------------------------------------
class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_plain_lines_at_most_one_a_second_and_one_per_tenth(capsys, monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_progress.time, "monotonic", clock)
    monkeypatch.setattr(_progress, "_tqdm_class", lambda: None)
    with _progress.Progress(True, "fast", total=1000, unit="pairs") as progress:
        for _ in range(1000):          # 1000 steps in 5 s: one line per tenth would be too many a second
            clock.now += 0.005
            progress.update(1)
    fast = capsys.readouterr().err.splitlines()
    assert fast[0] == "fast: 0/1000 pairs (0%)" and fast[-1] == "fast: 1000/1000 pairs (100%), done in 5.0 s"
    assert len(fast) - 2 <= 5

    clock.now = 0.0
    with _progress.Progress(True, "slow", total=1000, unit="pairs") as progress:
        for _ in range(1000):          # 1000 steps in 1000 s: a line a second would be too many
            clock.now += 1.0
            progress.update(1, status="objective 1")
    slow = capsys.readouterr().err.splitlines()
    assert len(slow) - 2 == 9 and slow[1] == "slow: 100/1000 pairs (10%), objective 1"
    assert slow[-1] == "slow: 1000/1000 pairs (100%), objective 1, done in 1000.0 s"


def test_closed_when_the_call_raises(capsys, monkeypatch, recording_bar):
    monkeypatch.setattr(_progress, "_tqdm_class", lambda: None)
    with pytest.raises(KeyError):
        with _progress.Progress(True, "failing", total=4, unit="cases") as progress:
            progress.update(1)
            raise KeyError("x")
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("failing: 1/4 cases (25%), stopped by KeyError in ")

    monkeypatch.setattr(_progress, "_tqdm_class", lambda: recording_bar)
    with pytest.raises(KeyError):
        with _progress.Progress(True, "failing", total=4, unit="cases") as progress:
            raise KeyError("x")
    assert recording_bar.bars[0].disable


def test_off_is_free(monkeypatch):
    monkeypatch.setattr(_progress, "_tqdm_class", _no_tqdm_lookup)
    monkeypatch.setattr(_progress.time, "monotonic", _no_tqdm_lookup)
    with _progress.Progress(0, "off", total=10) as progress:
        progress.update(10, status="ignored")
    assert not progress.enabled
