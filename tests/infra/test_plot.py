"""softdtw_torch.plot: each helper renders (Agg, ``savefig`` to a PNG) and draws what it is given, on
the library's own outputs (dtw_path, soft_dtw_alignment, softdtw_barycenter, SoftDTWKMeans): the
image is the matrix, the path line goes through the path's cells, the matching lines are the path's
pairs, the members' and centers' lines are the series; the side series line up with the matrix's
rows and columns; inputs are left as they were; bad inputs raise errors that name the helper;
without matplotlib each helper says how to install it."""
import doctest
import sys

import numpy as np
import pytest
import torch

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")  # headless, before pyplot
import matplotlib.pyplot as plt  # noqa: E402

import softdtw_torch as st  # noqa: E402
import softdtw_torch.plot as plot_module  # noqa: E402
from softdtw_torch.plot import plot_alignment, plot_barycenter, plot_clusters, plot_warping  # noqa: E402

HELPERS = {"plot_alignment": plot_alignment, "plot_warping": plot_warping, "plot_barycenter": plot_barycenter,
           "plot_clusters": plot_clusters}


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def render(fig, tmp_path, name):
    """Draws the figure for real (a PNG written and read back)."""
    out = tmp_path / f"{name}.png"
    fig.savefig(out, dpi=60)
    image = plt.imread(out)
    assert image.ndim == 3 and image.shape[0] > 50 and image.shape[1] > 50
    assert image[..., :3].std() > 0  # not a blank canvas
    return image


def alignment_matrix(x, y, gamma):
    """soft_dtw_alignment's E, found by its shape: (value, E) or (E, value), whichever order it returns."""
    outputs = st.soft_dtw_alignment(x, y, gamma=gamma)
    (E,) = [o for o in outputs if o.dim() >= 2]
    return E


def series_axes(ax, label):
    (found,) = [a for a in ax.figure.axes if a.get_label() == label]
    return found


def pair(n=12, m=9, d=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, d, generator=g, dtype=torch.float64).cumsum(0),
            torch.randn(m, d, generator=g, dtype=torch.float64).cumsum(0))


def test_module_exports_the_four_helpers():
    assert sorted(plot_module.__all__) == sorted(HELPERS)


# ---------------------------------------------------------------------------------------------
# plot_alignment
# ---------------------------------------------------------------------------------------------

def test_alignment_draws_the_matrix_the_path_and_the_series_in_line(tmp_path):
    x, y = pair(12, 9)
    x_before, y_before = x.clone(), y.clone()
    path, _ = st.dtw_path(x, y)
    E = alignment_matrix(x, y, gamma=0.5)
    E_before = E.clone()
    ax = plot_alignment(x, y, E, path)
    render(ax.figure, tmp_path, "alignment")

    (image,) = ax.images
    assert image.origin == "lower"
    np.testing.assert_array_equal(np.asarray(image.get_array()), E.numpy())  # (N, M): not transposed
    assert not np.shares_memory(np.asarray(image.get_array()), E.numpy())
    (line,) = ax.lines
    np.testing.assert_array_equal(line.get_xdata(), [j for _, j in path])
    np.testing.assert_array_equal(line.get_ydata(), [i for i, _ in path])

    left, top = series_axes(ax, "x"), series_axes(ax, "y")
    (x_line,) = left.lines
    np.testing.assert_array_equal(x_line.get_xdata(), x[:, 0].numpy())
    np.testing.assert_array_equal(x_line.get_ydata(), np.arange(12))
    (y_line,) = top.lines
    np.testing.assert_array_equal(y_line.get_xdata(), np.arange(9))
    np.testing.assert_array_equal(y_line.get_ydata(), y[:, 0].numpy())
    # x runs along the rows (upwards, on the left), y along the columns (on top): x's time step i is
    # drawn at row i's height, y's time step j at column j's abscissa.
    assert left.get_position().x1 <= ax.get_position().x0 and top.get_position().y0 >= ax.get_position().y1
    for i in (0, 5, 11):
        assert left.transData.transform((x[i, 0].item(), i))[1] == pytest.approx(ax.transData.transform((0, i))[1])
    for j in (0, 4, 8):
        assert top.transData.transform((j, y[j, 0].item()))[0] == pytest.approx(ax.transData.transform((j, 0))[0])
    assert ax.transData.transform((0, 11))[1] > ax.transData.transform((0, 0))[1]  # row 0 at the bottom
    assert left.xaxis_inverted()  # the left series faces the matrix

    for after, before in ((x, x_before), (y, y_before), (E, E_before)):
        assert torch.equal(after, before)


def test_alignment_of_hard_dtw_is_the_path_drawn_over_it(tmp_path):
    # At gamma = 0, E is the optimal path as a 0/1 matrix: the line goes through exactly its ones.
    x, y = pair(10, 14, seed=1)
    path, _ = st.dtw_path(x, y)
    E = alignment_matrix(x, y, gamma=0.0)
    ax = plot_alignment(x, y, E, np.asarray(path), colorbar=True, title="hard")
    render(ax.figure, tmp_path, "hard")
    drawn = {(int(i), int(j)) for j, i in ax.lines[0].get_xydata()}
    ones = {tuple(c) for c in np.argwhere(np.asarray(ax.images[0].get_array()) == 1).tolist()}
    assert drawn == ones == set(path)
    assert series_axes(ax, "colorbar") is not None
    assert series_axes(ax, "y").get_title() == "hard"


def test_alignment_without_a_matrix_draws_the_squared_euclidean_costs(tmp_path):
    x, y = pair(8, 11, d=2, seed=2)
    a, b = x.numpy().copy(), y.numpy().copy()
    path, _ = st.dtw_path(a, b)
    cost = st.pairwise_cost(x[None], y[None])[0].numpy()
    ax = plot_alignment(a, b, path=torch.tensor(path))
    render(ax.figure, tmp_path, "cost")
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), cost, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(ax.lines[0].get_xydata(), [(j, i) for i, j in path])
    assert len(series_axes(ax, "x").lines) == 2  # every channel by default
    ax = plot_alignment(a, b, channel=1)
    (x_line,) = series_axes(ax, "x").lines
    np.testing.assert_array_equal(x_line.get_xdata(), a[:, 1])
    assert not ax.lines  # no path given, none drawn
    np.testing.assert_array_equal(a, x.numpy())  # numpy inputs untouched too


def test_alignment_on_given_axes_and_without_series(tmp_path):
    fig, (first, second) = plt.subplots(1, 2)
    D = np.arange(12.0).reshape(3, 4)
    ax = plot_alignment(None, None, D, [(0, 0), (1, 1), (2, 3)], ax=second)
    assert ax is second and ax.figure is fig
    assert not first.images and len(fig.axes) == 2  # no series axes added
    np.testing.assert_array_equal(np.asarray(ax.images[0].get_array()), D)
    render(fig, tmp_path, "given")


# ---------------------------------------------------------------------------------------------
# plot_warping
# ---------------------------------------------------------------------------------------------

def test_warping_draws_one_line_per_matched_pair(tmp_path):
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(15).cumsum(), rng.standard_normal(11).cumsum()
    x_before = x.copy()
    path, _ = st.dtw_path(x, y)
    ax = plot_warping(x, y, path)
    render(ax.figure, tmp_path, "warping")
    x_line, y_line = ax.lines
    offset = x_line.get_ydata()[0] - x[0]
    np.testing.assert_allclose(x_line.get_ydata(), x + offset, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(y_line.get_ydata(), y)
    assert x_line.get_ydata().min() > y.max()  # x drawn above y
    (matches,) = ax.collections
    segments = matches.get_segments()
    assert len(segments) == len(path)
    for (i, j), segment in zip(path, segments):
        np.testing.assert_allclose(segment, [[i, x[i] + offset], [j, y[j]]], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(x, x_before)


def test_warping_channel_offset_subsampled_path_and_tensors(tmp_path):
    x, y = pair(9, 13, d=3, seed=4)
    path, _ = st.dtw_path(x, y)
    fig, ax = plt.subplots()
    assert plot_warping(x, y, path[::3], ax=ax, channel=2, offset=0.0) is ax
    render(fig, tmp_path, "warping_channel")
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), x[:, 2].numpy())
    np.testing.assert_array_equal(ax.lines[1].get_ydata(), y[:, 2].numpy())
    segments = ax.collections[0].get_segments()
    assert len(segments) == len(path[::3])
    assert [tuple(s[:, 0].astype(int)) for s in segments] == path[::3]
    # An empty path (dtw_path's answer when the Itakura parallelogram admits none): no lines.
    ax = plot_warping(x, y, [])
    assert len(ax.collections[0].get_segments()) == 0


# ---------------------------------------------------------------------------------------------
# plot_barycenter
# ---------------------------------------------------------------------------------------------

def test_barycenter_over_ragged_members(tmp_path):
    rng = np.random.default_rng(5)
    members = [rng.standard_normal(n).cumsum() for n in (10, 14, 12)]
    members[1] = torch.from_numpy(members[1])  # a list may mix tensors and arrays
    before = [np.asarray(m).copy() for m in members]
    z, _ = st.softdtw_barycenter([torch.as_tensor(m) for m in members], gamma=1.0, max_iter=5, length=11, return_history=True)
    ax = plot_barycenter(members, z)
    render(ax.figure, tmp_path, "barycenter")
    assert len(ax.lines) == 4
    for line, member in zip(ax.lines[:3], before):
        np.testing.assert_array_equal(line.get_xdata(), np.arange(len(member)))
        np.testing.assert_array_equal(line.get_ydata(), member)
    bold = ax.lines[3]
    np.testing.assert_array_equal(bold.get_ydata(), z[:, 0].numpy() if z.dim() == 2 else z.numpy())
    assert bold.get_linewidth() > max(line.get_linewidth() for line in ax.lines[:3])
    assert bold.get_label() == "barycenter"
    for member, copy in zip(members, before):
        np.testing.assert_array_equal(np.asarray(member), copy)


def test_barycenter_multivariate_channel_and_nan_padding(tmp_path):
    X = torch.randn(4, 16, 2, dtype=torch.float64).cumsum(1)
    z, _ = st.softdtw_barycenter(X, gamma=1.0, max_iter=5, return_history=True)
    fig, ax = plt.subplots()
    assert plot_barycenter(X, z, ax=ax, channel=1) is ax
    render(fig, tmp_path, "barycenter_channel")
    for line, member in zip(ax.lines[:4], X):
        np.testing.assert_array_equal(line.get_ydata(), member[:, 1].numpy())
    np.testing.assert_array_equal(ax.lines[4].get_ydata(), z[:, 1].numpy())
    # NaN-padded numpy (tslearn's format): each member drawn at its own length.
    padded = X[:, :, 0].numpy().copy()
    padded[0, 10:] = np.nan
    ax = plot_barycenter(padded, z[:, :1])
    assert len(ax.lines[0].get_ydata()) == 10 and len(ax.lines[1].get_ydata()) == 16


# ---------------------------------------------------------------------------------------------
# plot_clusters
# ---------------------------------------------------------------------------------------------

def test_clusters_one_axes_per_cluster_with_members_and_center(tmp_path):
    g = torch.Generator().manual_seed(6)
    X = torch.cat([torch.randn(5, 16, 1, generator=g, dtype=torch.float64) + shift for shift in (-4, 0, 4)])
    km = st.SoftDTWKMeans(3, gamma=1.0, max_iter=5, random_state=0).fit(X)
    labels, centers = km.labels_, km.cluster_centers_
    axes = plot_clusters(X, labels, centers)
    fig = axes[0].figure
    render(fig, tmp_path, "clusters")
    assert len(axes) == 3 and len(fig.axes) == 3
    labels = np.asarray(labels.cpu())
    for k, ax in enumerate(axes):
        members = X[torch.from_numpy(labels == k)]
        assert len(ax.lines) == len(members) + 1
        for line, member in zip(ax.lines, members):
            np.testing.assert_array_equal(line.get_ydata(), member[:, 0].numpy())
        np.testing.assert_array_equal(ax.lines[-1].get_ydata(), centers[k, :, 0].cpu().numpy())
        assert ax.get_title() == f"cluster {k} ({len(members)} series)"


def test_clusters_without_centers_on_given_axes_with_colors(tmp_path):
    X = np.random.default_rng(7).standard_normal((7, 12)).cumsum(1)
    labels = np.array(["b", "a", "c", "a", "b", "b", "c"])
    fig, grid = plt.subplots(2, 2)
    colors = ["red", "green", "blue", "red", "green", "blue", "black"]
    axes = plot_clusters(X, labels, axes=grid, colors=colors)
    render(fig, tmp_path, "clusters_given")
    assert list(axes) == list(grid.ravel()[:3])
    assert not grid[1, 1].lines  # the fourth is left alone
    for ax, name in zip(axes, ["a", "b", "c"]):
        index = np.flatnonzero(labels == name)
        assert ax.get_title() == f"cluster {name} ({len(index)} series)"
        assert len(ax.lines) == len(index)
        for line, i in zip(ax.lines, index):
            np.testing.assert_array_equal(line.get_ydata(), X[i])
            assert matplotlib.colors.same_color(line.get_color(), colors[i])


def test_clusters_empty_cluster_and_grid(tmp_path):
    X = np.random.default_rng(8).standard_normal((6, 10, 1))
    centers = X[:5].copy()
    labels = np.array([0, 0, 1, 1, 3, 3])  # clusters 2 and 4 have no members
    axes = plot_clusters(X, labels, centers, ncols=2)
    render(axes[0].figure, tmp_path, "clusters_empty")
    assert len(axes) == 5 and len(axes[0].figure.axes) == 5
    assert len(axes[2].lines) == 1 and axes[2].get_title() == "cluster 2 (0 series)"


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

def _bad_calls():
    x, y = pair(6, 5)
    path, _ = st.dtw_path(x, y)
    batch_paths, _ = st.dtw_path(torch.randn(2, 6, 1), torch.randn(2, 5, 1))
    X = np.zeros((4, 6))
    return [
        ("plot_alignment", lambda: plot_alignment(x[None], y, path=path), ValueError, r"x .*3-D.*x\[b\]"),
        ("plot_alignment", lambda: plot_alignment(x, y, path=[(0, 0), (6, 4)]), ValueError, r"path step 1.*\(6, 4\)"),
        ("plot_alignment", lambda: plot_alignment(x, y, path=[(0, -1)]), ValueError, "out of range"),
        ("plot_alignment", lambda: plot_alignment(x, y, path=np.array(path, dtype=float)), TypeError, "integer"),
        ("plot_alignment", lambda: plot_alignment(x, y, path=batch_paths), ValueError, r"paths\[b\]"),
        ("plot_alignment", lambda: plot_alignment(x, y, path="path"), TypeError, "path"),
        ("plot_alignment", lambda: plot_alignment(x, y, torch.zeros(5, 6)), ValueError, "length 5"),
        ("plot_alignment", lambda: plot_alignment(x, y, torch.zeros(2, 6, 5)), ValueError, r"alignment\[b\]"),
        ("plot_alignment", lambda: plot_alignment("x", y), TypeError, "x"),
        ("plot_alignment", lambda: plot_alignment(x, y, ax="ax"), TypeError, "Axes"),
        ("plot_alignment", lambda: plot_alignment(x, None), ValueError, "alignment"),
        ("plot_alignment", lambda: plot_alignment(np.zeros((1, 150)), y), ValueError, "aeon"),
        ("plot_alignment", lambda: plot_alignment(x, y, channel=1), ValueError, "channel 1"),
        ("plot_warping", lambda: plot_warping(x, y, [(0, 5)]), ValueError, "out of range"),
        ("plot_warping", lambda: plot_warping(x, y, path, channel=1.0), TypeError, "channel"),
        ("plot_warping", lambda: plot_warping(x, y, path, channel=3), ValueError, "channel 3"),
        ("plot_warping", lambda: plot_warping(x, y, path, offset=float("inf")), ValueError, "offset"),
        ("plot_warping", lambda: plot_warping(x, torch.zeros(2, 5, 1), path), ValueError, "y .*3-D"),
        ("plot_warping", lambda: plot_warping(x, y, path, match_kwargs="grey"), TypeError, "match_kwargs"),
        ("plot_barycenter", lambda: plot_barycenter(np.zeros(6), np.zeros(6)), ValueError, "1-D"),
        ("plot_barycenter", lambda: plot_barycenter(np.zeros((2, 3, 6, 1)), np.zeros(6)), ValueError, "4-D"),
        ("plot_barycenter", lambda: plot_barycenter(X, np.zeros((2, 6, 1))), ValueError, "barycenter .*3-D"),
        ("plot_barycenter", lambda: plot_barycenter(X, np.zeros((6, 2))), ValueError, "feature"),
        ("plot_barycenter", lambda: plot_barycenter([], np.zeros(6)), ValueError, "empty"),
        ("plot_barycenter", lambda: plot_barycenter({"a": 1}, np.zeros(6)), TypeError, "X"),
        ("plot_clusters", lambda: plot_clusters(X, [0, 1, 0]), ValueError, r"shape \(4,\)"),
        ("plot_clusters", lambda: plot_clusters(X, [0, 1, 2, 0], X[:2]), ValueError, r"\[0, 2\)"),
        ("plot_clusters", lambda: plot_clusters(X, [0.0, 1.0, 0.0, 1.0], X[:2]), TypeError, "integer"),
        ("plot_clusters", lambda: plot_clusters(X, [0, 1, 0, 1], X[:2], axes=plt.subplots()[1]), ValueError,
         "2 axes"),
        ("plot_clusters", lambda: plot_clusters(X, [0, 1, 0, 1], axes=["ax"]), TypeError, "Axes"),
        ("plot_clusters", lambda: plot_clusters(X, [0, 1, 0, 1], colors=["red"]), ValueError, "colour"),
        ("plot_clusters", lambda: plot_clusters(X, [0, 1, 0, 1], np.zeros((2, 6, 3))), ValueError, "feature"),
        ("plot_clusters", lambda: plot_clusters(X, [0, 1, 0, 1], ncols=0), ValueError, "ncols"),
    ]


def test_bad_inputs_raise_errors_naming_the_helper():
    for who, call, error, match in _bad_calls():
        with pytest.raises(error, match=match) as caught:
            call()
        assert str(caught.value).startswith(f"{who}:"), (who, match, caught.value)


@pytest.mark.parametrize("who", sorted(HELPERS))
def test_without_matplotlib_the_error_says_how_to_install_it(monkeypatch, who):
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib.") or name.startswith("mpl_toolkits"):
            monkeypatch.setitem(sys.modules, name, None)  # `import matplotlib` now raises ImportError
    x = np.zeros((5, 1))
    args = {"plot_alignment": (x, x), "plot_warping": (x, x, [(0, 0)]), "plot_barycenter": ([x], x),
            "plot_clusters": ([x], [0])}[who]
    with pytest.raises(ImportError, match=f"^{who} needs matplotlib.*pip install matplotlib"):
        HELPERS[who](*args)


def test_docstring_examples_run():
    torch.manual_seed(0)
    result = doctest.testmod(plot_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 10 and result.failed == 0
