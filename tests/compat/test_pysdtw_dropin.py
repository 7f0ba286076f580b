"""softdtw_torch.pysdtw as a drop-in for pysdtw: its README's usage runs with only the import
changed, and SoftDTW gives pysdtw's values and gradients (to pysdtw's float32 table) with its
band, its distance functions and PackedSequences, ragged ones included."""
import pytest
import torch
from torch.nn.utils.rnn import pack_sequence

pysdtw = pytest.importorskip("pysdtw")
import softdtw_torch.pysdtw as ours  # noqa: E402

# pysdtw keeps its DP table in float32 (torch.Tensor(R)) whatever the input dtype.
TOL = dict(rtol=2e-5, atol=2e-5)


def test_readme_usage_runs_unchanged():
    import softdtw_torch.pysdtw as pysdtw  # the README's `import pysdtw`, nothing else changed

    device = "cuda" if torch.cuda.is_available() else "cpu"
    use_cuda = device == "cuda"
    # the input data includes a batch dimension
    X = torch.rand((10, 5, 7), device=device, requires_grad=True)
    Y = torch.rand((10, 9, 7), device=device)
    # optionally choose a pairwise distance function
    fun = pysdtw.distance.pairwise_l2_squared
    # create the SoftDTW distance function
    sdtw = pysdtw.SoftDTW(gamma=1.0, dist_func=fun, use_cuda=use_cuda)
    # soft-DTW discrepancy, approximated DTW
    res = sdtw(X, Y)
    # vectorize the result
    res.sum().backward()
    assert res.shape == (10,) and X.grad.shape == X.shape


def compare(ours_module, theirs_module, X, Y):
    xa = X.detach().clone().requires_grad_(True) if isinstance(X, torch.Tensor) else X
    xb = X.detach().clone().requires_grad_(True) if isinstance(X, torch.Tensor) else X
    got, expected = ours_module(xa, Y), theirs_module(xb, Y)
    if torch.isnan(expected).all():
        # A band that leaves no path (e.g. radius 1 on 12 x 5: cell (1, 1) is outside pysdtw's
        # stretched band): pysdtw's softmin of three infinities is NaN; ours is +inf, the value
        # of a pair with every path forbidden, with a zero gradient.
        assert torch.isinf(got).all()
        got.sum().backward()
        assert torch.equal(xa.grad, torch.zeros_like(xa))
        return
    torch.testing.assert_close(got, expected.to(got.dtype), **TOL)
    if isinstance(X, torch.Tensor):
        got.sum().backward()
        expected.sum().backward()
        torch.testing.assert_close(xa.grad, xb.grad, **TOL)


@pytest.mark.slow  # pysdtw's numba code compiles on first use; 12 settings of lengths and bands
@pytest.mark.parametrize("bandwidth", [None, 1, 2, 5])
@pytest.mark.parametrize("n,m", [(8, 8), (7, 12), (12, 5)])
def test_values_and_gradients_match_pysdtw(bandwidth, n, m):
    g = torch.Generator().manual_seed(n * 31 + m)
    X, Y = torch.randn(4, n, 3, generator=g), torch.randn(4, m, 3, generator=g)
    for dist in (None, pysdtw.distance.pairwise_l2_squared_exact):
        mine = None if dist is None else ours.distance.pairwise_l2_squared_exact
        compare(ours.SoftDTW(gamma=0.5, dist_func=mine, use_cuda=False, bandwidth=bandwidth),
                pysdtw.SoftDTW(gamma=0.5, dist_func=dist, use_cuda=False, bandwidth=bandwidth), X, Y)


@pytest.mark.parametrize("bandwidth", [None, 2])
def test_ragged_packed_sequences_match_pysdtw(bandwidth):
    g = torch.Generator().manual_seed(9)
    xs = [torch.randn(n, 2, generator=g) for n in (9, 6, 11)]
    ys = [torch.randn(m, 2, generator=g) for m in (7, 10, 4)]
    X, Y = pack_sequence(xs, enforce_sorted=False), pack_sequence(ys, enforce_sorted=False)
    got = ours.SoftDTW(gamma=0.3, use_cuda=False, bandwidth=bandwidth)(X, Y)
    expected = pysdtw.SoftDTW(gamma=0.3, use_cuda=False, bandwidth=bandwidth)(X, Y)
    torch.testing.assert_close(got, expected, **TOL)


def test_distance_functions_match_pysdtw():
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(2, 6, 3, generator=g, dtype=torch.float64), torch.randn(2, 4, 3, generator=g, dtype=torch.float64)
    for name in ("pairwise_l2_squared", "pairwise_l2_squared_exact"):
        torch.testing.assert_close(getattr(ours.distance, name)(x, y), getattr(pysdtw.distance, name)(x, y))


def test_bad_arguments_name_the_class():
    with pytest.raises(TypeError, match="SoftDTW: expected dist_func to be callable"):
        ours.SoftDTW(dist_func="l2")
    with pytest.raises(ValueError, match="SoftDTW: expected dist_func\\(x, y\\) to return a tensor of shape"):
        ours.SoftDTW(dist_func=lambda x, y: x)(torch.randn(2, 5, 3), torch.randn(2, 4, 3))
