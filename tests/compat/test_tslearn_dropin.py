"""softdtw_torch.tslearn as a drop-in for tslearn's soft-DTW API: tslearn's own documented examples
(its docstrings' doctests) run with only the import changed, and every name gives tslearn's
results, in its order and types, on random data with its constraints."""
import doctest
import re
import warnings

import numpy as np
import pytest
import torch

tslearn = pytest.importorskip("tslearn")
from tslearn import barycenters as ts_barycenters  # noqa: E402
from tslearn import clustering as ts_clustering  # noqa: E402
from tslearn import metrics as ts_metrics  # noqa: E402
from tslearn.utils import to_time_series_dataset  # noqa: E402

import softdtw_torch.tslearn as ours  # noqa: E402

THEIRS = {"soft_dtw": ts_metrics, "soft_dtw_alignment": ts_metrics, "cdist_soft_dtw": ts_metrics,
          "cdist_soft_dtw_normalized": ts_metrics, "softdtw_barycenter": ts_barycenters,
          "TimeSeriesKMeans": ts_clustering, "SoftDTWLossPyTorch": ts_metrics}


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")


class _Checker(doctest.OutputChecker):
    """tslearn's expected outputs, but for the name of autograd's node (grad_fn=<SelectBackward0>
    there, another node here: not part of the API), and numbers compared to 1e-6 relative and 1e-12
    absolute when the text differs (numpy prints another format once an entry is tiny: soft-DTW of
    a series with itself at gamma = 0.01 is -2.2e-45 here, the exact value, where tslearn's
    1 + 3.7e-44 rounds to 1 and gives 0.0)."""

    def check_output(self, want, got, optionflags):
        strip = lambda s: re.sub(r"grad_fn=<\w+>", "grad_fn=<...>", s)  # noqa: E731
        want, got = strip(want), strip(got)
        if super().check_output(want, got, optionflags):
            return True
        a, b = _NUMBER.findall(want), _NUMBER.findall(got)
        same_text = re.sub(r"\s+", "", _NUMBER.sub("#", want)) == re.sub(r"\s+", "", _NUMBER.sub("#", got))
        return (same_text and len(a) == len(b) > 0
                and np.allclose(np.array(b, dtype=float), np.array(a, dtype=float), rtol=1e-6, atol=1e-12))


def _only_the_import_changed(example: doctest.Example) -> bool:
    """Rewrites tslearn's import of the name to ours; False for the examples of what we do not
    provide (TimeSeriesKMeans with metric="euclidean" or "dtw": this library's k-means is soft-DTW's)."""
    example.source = re.sub(r"from tslearn\.(metrics|barycenters|clustering) import", "from softdtw_torch.tslearn import",
                            example.source)
    return not re.search(r'metric="(euclidean|dtw)"|\bkm\.|\bkm_dba\b', example.source)


@pytest.mark.parametrize("name", sorted(THEIRS))
def test_tslearn_docstring_examples_run_unchanged(name):
    tests = [t for t in doctest.DocTestFinder().find(getattr(THEIRS[name], name), name) if t.examples]
    assert tests, f"tslearn's {name} has no examples"
    for test in tests:
        test.examples = [e for e in test.examples if _only_the_import_changed(e)]
        # tslearn's data helpers stay tslearn's: only the soft-DTW names are swapped.
        test.globs = {"np": np, "numpy": np, "to_time_series_dataset": to_time_series_dataset,
                      **{k: getattr(ours, k) for k in ours.__all__}}
        runner = doctest.DocTestRunner(checker=_Checker(), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        report = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runner.run(test, out=report.append)
        result = runner.summarize(verbose=False)
        assert result.attempted > 0
        assert result.failed == 0, "".join(report)


CONSTRAINTS = [{}, {"global_constraint": "sakoe_chiba"}, {"sakoe_chiba_radius": 2}, {"global_constraint": "itakura"},
               {"itakura_max_slope": 3.0}, {"global_constraint": "itakura", "sakoe_chiba_radius": 2,
                                            "itakura_max_slope": 2.5},
               {"global_constraint": "sakoe_chiba", "sakoe_chiba_radius": 3, "itakura_max_slope": 2.5}]


@pytest.mark.slow  # tslearn's numba code compiles on first use; the doctests keep the drop-in in the inner loop
@pytest.mark.parametrize("constraint", CONSTRAINTS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()) or "none")
def test_pair_functions_match_tslearn(constraint):
    rng = np.random.default_rng(3)
    s1, s2 = rng.standard_normal((9, 2)), rng.standard_normal((12, 2))
    value = ours.soft_dtw(s1, s2, gamma=0.5, **constraint)
    assert type(value) is float
    assert value == pytest.approx(ts_metrics.soft_dtw(s1, s2, gamma=0.5, **constraint), rel=1e-10)
    A, sim = ours.soft_dtw_alignment(s1, s2, gamma=0.5, **constraint)
    A_theirs, sim_theirs = ts_metrics.soft_dtw_alignment(s1, s2, gamma=0.5, **constraint)
    assert isinstance(A, np.ndarray) and A.shape == (9, 12) and type(sim) is float
    np.testing.assert_allclose(A, A_theirs, rtol=1e-8, atol=1e-12)
    assert sim == pytest.approx(sim_theirs, rel=1e-10)


@pytest.mark.slow  # tslearn's numba soft_dtw compiles on first use: about 9 s
def test_both_parameters_without_a_name_warn_as_tslearn():
    s1, s2 = np.arange(6.0), np.arange(5.0) ** 2
    with pytest.warns(RuntimeWarning):
        got = ours.soft_dtw(s1, s2, sakoe_chiba_radius=1, itakura_max_slope=2.0)
    assert got == pytest.approx(ts_metrics.soft_dtw(s1, s2), rel=1e-10)


@pytest.mark.slow  # tslearn's numba code compiles on first use; the doctests keep the drop-in in the inner loop
@pytest.mark.parametrize("fn", ["cdist_soft_dtw", "cdist_soft_dtw_normalized"])
def test_cdist_matches_tslearn(fn):
    rng = np.random.default_rng(4)
    X, Y = rng.standard_normal((5, 10, 2)), rng.standard_normal((3, 8, 2))
    for args in ((X,), (X, Y), (X[:, :, 0],)):
        got = getattr(ours, fn)(*args, gamma=0.7, sakoe_chiba_radius=2)
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, getattr(ts_metrics, fn)(*args, gamma=0.7, sakoe_chiba_radius=2),
                                   rtol=1e-9, atol=1e-9)
    ragged = [rng.standard_normal(n) for n in (6, 9, 7)]
    np.testing.assert_allclose(getattr(ours, fn)(ragged), getattr(ts_metrics, fn)(ragged), rtol=1e-9, atol=1e-9)


def test_tensor_input_gives_float64_tensors_with_gradients_as_tslearn():
    g = torch.Generator().manual_seed(5)
    s1, s2 = torch.randn(7, 2, generator=g), torch.randn(6, 2, generator=g)
    ours_s1, theirs_s1 = s1.clone().requires_grad_(True), s1.clone().requires_grad_(True)
    value = ours.soft_dtw(ours_s1, s2, gamma=0.3)
    expected = ts_metrics.soft_dtw(theirs_s1, s2, gamma=0.3)
    assert value.dtype == expected.dtype == torch.float64 and value.dim() == 0
    torch.testing.assert_close(value, expected)
    value.backward()
    expected.backward()
    torch.testing.assert_close(ours_s1.grad, theirs_s1.grad)


def test_barycenter_returns_tslearns_array():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((4, 12, 1)).cumsum(1)
    got = ours.softdtw_barycenter(X, gamma=0.5, max_iter=10)
    theirs = ts_barycenters.softdtw_barycenter(X, gamma=0.5, max_iter=10)
    assert isinstance(got, np.ndarray) and got.shape == theirs.shape == (12, 1)
    np.testing.assert_allclose(got, theirs, rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="softdtw_barycenter: the Itakura parallelogram is not supported"):
        ours.softdtw_barycenter(X, global_constraint="itakura")


def test_timeserieskmeans_softdtw_finds_tslearns_clusters():
    rng = np.random.default_rng(7)
    shapes = [np.sin(np.linspace(0, 3, 20)), np.linspace(-2, 2, 20), np.cos(np.linspace(0, 6, 20)) * 2]
    X = np.stack([shapes[k] + 0.1 * rng.standard_normal(20) for k in range(3) for _ in range(6)])[:, :, None]
    kw = dict(n_clusters=3, metric="softdtw", metric_params={"gamma": 0.5}, max_iter=10, random_state=0)
    km = ours.TimeSeriesKMeans(**kw).fit(X)
    theirs = ts_clustering.TimeSeriesKMeans(**kw).fit(X)
    assert km.cluster_centers_.shape == theirs.cluster_centers_.shape == (3, 20, 1)
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(km.labels_, theirs.labels_) == 1.0
    assert adjusted_rand_score(km.labels_, np.repeat([0, 1, 2], 6)) == 1.0
    assert set(km.get_params()) == set(theirs.get_params())
    with pytest.raises(ValueError, match='TimeSeriesKMeans: softdtw_torch provides metric="softdtw" only'):
        ours.TimeSeriesKMeans(n_clusters=2).fit(X)


@pytest.mark.slow  # tslearn's numba code compiles on first use; the doctests keep the drop-in in the inner loop
@pytest.mark.parametrize("options", [{}, {"normalize": True}, {"sakoe_chiba_radius": 1},
                                     {"dist_func": lambda x, y: (x.unsqueeze(2) - y.unsqueeze(1)).abs().sum(-1)}],
                         ids=["plain", "normalize", "band", "dist_func"])
def test_softdtw_loss_matches_tslearn(options):
    g = torch.Generator().manual_seed(8)
    x, y = torch.randn(3, 6, 2, generator=g, dtype=torch.float64), torch.randn(3, 6, 2, generator=g, dtype=torch.float64)
    xa, xb = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    got = ours.SoftDTWLossPyTorch(gamma=0.2, **options)(xa, y)
    expected = ts_metrics.SoftDTWLossPyTorch(gamma=0.2, **options)(xb, y)
    torch.testing.assert_close(got, expected)
    got.sum().backward()
    expected.sum().backward()
    # tslearn's loss keeps its DP table as torch.Tensor(R), i.e. float32, whatever the input's dtype:
    # its gradients are float32-accurate only (ours: float64).
    torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-4, atol=1e-4)
