"""Deterministic by default: identical bits on repeated runs and across thread counts, including
the intra-pair (tile wavefront) parallel path used when the batch is smaller than the thread count."""
import subprocess
import sys
import textwrap

import pytest
import torch

import softdtw_torch as st
from conftest import run_at_threads
from softdtw_torch import _reference as ref


def run_all(x, y, xl, yl):
    outs = []
    for fused in (True, False):
        a = x.clone().requires_grad_(True)
        b = y.clone().requires_grad_(True)
        values = st.soft_dtw(a, b, gamma=0.1, bandwidth=40, fused=fused, x_lengths=xl, y_lengths=yl)
        (values * torch.arange(1, values.numel() + 1)).sum().backward()
        outs += [values.detach(), a.grad, b.grad]
    return outs


@pytest.mark.parametrize("batch", [1, 5])
def test_repeated_runs_and_thread_counts_give_identical_bits(batch):
    x, y = ref.random_pairs(batch, 300, 260, 3, dtype=torch.float32, seed=batch)
    xl = torch.tensor([300, 170, 1, 299, 64][:batch])
    yl = torch.tensor([260, 260, 90, 1, 65][:batch])
    threads = torch.get_num_threads()
    try:
        reference = run_all(x, y, xl, yl)
        for n in (1, 2, 3, 8):
            torch.set_num_threads(n)
            for got, expected in zip(run_all(x, y, xl, yl), reference):
                assert torch.equal(got, expected)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow  # a fresh process, aeon's numba first compile: 4-21 s
def test_same_bits_in_a_process_with_one_thread(tmp_path):
    # A fresh process pinned to one thread from the start (no intra-op pool at all).
    x, y = ref.random_pairs(2, 200, 150, 2, dtype=torch.float32, seed=3)
    torch.save({"x": x, "y": y}, tmp_path / "in.pt")
    code = textwrap.dedent(
        f"""
        import torch
        torch.set_num_threads(1)
        import softdtw_torch as st
        d = torch.load({str(tmp_path / 'in.pt')!r}, weights_only=True)
        x = d["x"].clone().requires_grad_(True)
        v = st.soft_dtw(x, d["y"], gamma=0.05)
        v.sum().backward()
        torch.save({{"v": v.detach(), "g": x.grad}}, {str(tmp_path / 'out.pt')!r})
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    single = torch.load(tmp_path / "out.pt", weights_only=True)
    xr = x.clone().requires_grad_(True)
    v = st.soft_dtw(xr, y, gamma=0.05)
    v.sum().backward()
    assert torch.equal(v.detach(), single["v"]) and torch.equal(xr.grad, single["g"])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_long_pairs_run_packed_with_the_bits_of_tiles(dtype):
    # Pairs longer than 512 steps with at most 16 features run packed (lane = pair) when the batch
    # has at least as many pairs as threads, in tiles otherwise: 2 pairs at 2 threads run packed,
    # at 4 threads (and each pair alone at 2) in tiles. Same values and gradients, bit for bit.
    x, y = ref.random_pairs(2, 600, 530, 2, dtype=dtype, seed=5)
    w = torch.tensor([1.0, -2.0], dtype=dtype)

    def value_and_grads(x, y):
        a, b = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
        v = st.soft_dtw(a, b, gamma=0.1)
        (v * w).sum().backward()
        return v.detach(), a.grad, b.grad

    packed = run_at_threads(2, lambda: value_and_grads(x, y))
    tiled = run_at_threads(4, lambda: value_and_grads(x, y))
    for got, want in zip(tiled, packed):
        assert torch.equal(got, want)
    for i in range(2):
        ai, bi = x[i:i + 1].clone().requires_grad_(True), y[i:i + 1].clone().requires_grad_(True)
        vi = run_at_threads(2, lambda: st.soft_dtw(ai, bi, gamma=0.1))
        run_at_threads(2, lambda: (vi * w[i]).sum().backward())
        assert torch.equal(vi.detach(), packed[0][i:i + 1])
        assert torch.equal(ai.grad, packed[1][i:i + 1]) and torch.equal(bi.grad, packed[2][i:i + 1])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("options", [{}, {"bandwidth": 40},
                                     {"x_lengths": torch.tensor([600, 311]), "y_lengths": torch.tensor([402, 530])}],
                         ids=["full", "band", "ragged"])
def test_long_pairs_skip_zero_flow_with_the_bits_of_tiles(dtype, options):
    # E is exactly 0 in most cells away from the paths: the packs' first-order backward computes
    # E and the weights only next to the successors' nonzero rows (flow_candidates), the tiles
    # every cell. Same values and gradients, bit for bit.
    x, y = ref.random_pairs(2, 600, 530, 2, dtype=dtype, seed=7)
    E, _ = st.soft_dtw_alignment(x, y, gamma=0.05, **options)
    assert (E == 0).double().mean() > 0.5  # the data has wide zero regions
    w = torch.tensor([0.5, -3.0], dtype=dtype)

    def value_and_grads():
        a, b = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
        v = st.soft_dtw(a, b, gamma=0.05, **options)
        (v * w).sum().backward()
        return v.detach(), a.grad, b.grad

    packed, tiled = run_at_threads(2, value_and_grads), run_at_threads(4, value_and_grads)
    for got, want in zip(tiled, packed):
        assert torch.equal(got, want)


@pytest.mark.parametrize("features", [3, 20])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_packed_pairs_give_the_bits_of_each_pair_alone(dtype, features):
    # Batches of short equal-length pairs run packed (lane = pair, CPU); a pair alone runs in tiles.
    # Both must give the same bits, as must the barycenter's one-call value-and-gradient op. The
    # packs add their gradient sums by blocks of diagonals, feature by feature (DeferredGradients):
    # 116 diagonals make several blocks, and 20 features several planes per block.
    x, y = ref.random_pairs(9, 37, 80, features, dtype=dtype, seed=11)
    w = torch.arange(1, 10, dtype=dtype)
    a = x.clone().requires_grad_(True)
    b = y.clone().requires_grad_(True)
    v = st.soft_dtw(a, b, gamma=0.1)
    (v * w).sum().backward()
    values, grad = torch.ops.softdtw_torch._soft_dtw_fused_value_and_grad(x, y, w, 0.1, None, None, None, None)
    assert torch.equal(values, v.detach()) and torch.equal(grad, a.grad)
    for i in range(9):
        ai = x[i:i + 1].clone().requires_grad_(True)
        bi = y[i:i + 1].clone().requires_grad_(True)
        vi = st.soft_dtw(ai, bi, gamma=0.1)
        (vi * w[i]).sum().backward()
        assert torch.equal(vi.detach(), v.detach()[i:i + 1])
        assert torch.equal(ai.grad, a.grad[i:i + 1]) and torch.equal(bi.grad, b.grad[i:i + 1])


def test_barycenter_and_kmeans_give_the_same_bits_at_every_thread_count():
    # The default start, the members' weighted mean, is a sum in the members' order: a matrix
    # product (einsum) gave other bits at 1, 2 and 3 threads for 400 members of 32 x 3, and the
    # L-BFGS iterations carry any difference on to the barycenter.
    from softdtw_torch.barycenter import softdtw_barycenter
    from softdtw_torch.clustering import SoftDTWKMeans

    members = ref.random_pairs(400, 32, 32, 3, dtype=torch.float32, seed=5)[0]

    def fit():
        z = softdtw_barycenter(members, gamma=1.0, max_iter=3, tol=0.0)
        km = SoftDTWKMeans(n_clusters=3, max_iter=2, barycenter_max_iter=3, random_state=0).fit(members[:90])
        return [z, torch.as_tensor(km.cluster_centers_), torch.as_tensor(km.labels_)]

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        reference = fit()
        for n in (2, 3):
            torch.set_num_threads(n)
            for got, expected in zip(fit(), reference):
                assert torch.equal(got, expected), f"{n} threads"
    finally:
        torch.set_num_threads(threads)
