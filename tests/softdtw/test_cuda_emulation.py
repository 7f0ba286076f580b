"""The CUDA SoftDTW kernels run on the CPU, under the CUDA emulator of tests/cuda_emu, against
the CPU ops: values, the DP table R, gradients, errors and launch counts.

This checks the logic of the tiled CUDA kernels (tile borders, wavefront lanes, messages between
tiles, bands, ragged lengths, the d-chunked fused costs, the float64 gradient sums) on every
machine, GPU or not, by running their device code with real block barriers and warp shuffles
(each warp a std::thread, its 32 lanes fibers on it; tests/cuda_emu/cuda_emu.h). The float32
cell math's intrinsics (exp2f, __log2f) err by the worst case CUDA documents for them.
It does not check what only a GPU shows (timing, the memory model, the intrinsics' actual
errors), which the needs_cuda tests do.

The emulated extension is compiled once per checkout into build/cuda-emu (about a minute).
"""
import contextlib
import functools
import os
import sys

import numpy as np
import pytest
import torch
from conftest import AEON_DATASETS, needs_aeon_data

from softdtw_torch._ops import _C
from softdtw_torch.datasets import load_ts

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cuda_emu"))
import emulated_ops  # noqa: E402
from emulated_ops import same_bits  # noqa: E402

OPS = torch.ops.softdtw_torch
NO_CACHE = torch.empty(0)  # the second cache tensor of a fused forward that keeps the table (unread)
TILE = 64  # kTileRows = kTileCols in csrc/softdtw/cuda/tiles.cuh
PAIR_MAX_COLUMNS = _C.SOFTDTW_CUDA_PAIR_MAX_COLUMNS  # one warp per pair up to this many columns


@pytest.fixture(scope="module")
def emu():
    return emulated_ops.load()


def make_pair_batch(batch, n, m, d, dtype, ragged, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n, d, generator=g, dtype=torch.float64).to(dtype)
    y = torch.randn(batch, m, d, generator=g, dtype=torch.float64).to(dtype)
    x_lengths = y_lengths = None
    if ragged:
        x_lengths = torch.randint(1, n + 1, (batch,), generator=g)
        y_lengths = torch.randint(1, m + 1, (batch,), generator=g)
        x_lengths[0], y_lengths[-1] = n, m  # the padded sizes occur too
    return x, y, x_lengths, y_lengths


def tolerances(dtype):
    return dict(rtol=1e-11, atol=1e-11) if dtype == torch.float64 else dict(rtol=2e-5, atol=2e-5)


def assert_tables_match(got_table, want_table, dtype, gamma, x_lengths=None, y_lengths=None):
    # The emulated CUDA table is row by row, the CPU's by anti-diagonal: both compared by cell, in
    # float64 (a float32 table holds each R as hi + lo).
    assert got_table.shape == want_table.shape and got_table.dtype == want_table.dtype
    got = emulated_ops.table_values(got_table)
    want = emulated_ops.cpu_table_by_rows(want_table, x_lengths, y_lengths)
    if x_lengths is not None or y_lengths is not None:  # the padding of ragged pairs is not compared
        got = torch.where(torch.isinf(want), want, got)
    assert torch.equal(torch.isinf(got), torch.isinf(want)), "+inf cells differ"
    finite = torch.isfinite(want)
    if dtype == torch.float64:
        torch.testing.assert_close(got[finite], want[finite], **tolerances(dtype))
    else:
        # float32 cells: the kernels' base-2 special-function cell math (emulated at its documented
        # worst-case error) errs by up to ~3e-7·γ per cell where the CPU's expf/log1pf err by ~1e-7·γ:
        # compare on the scale of softmin's rounding, |R| + γ (R crosses 0 inside the table).
        error = (got[finite] - want[finite]).abs() / (want[finite].abs() + gamma)
        assert error.max() <= 2e-5, f"max |ΔR|/(|R| + γ) = {error.max().item():.2e}"


# (B, N, M, d): one tile, tile edges, several tiles, N or M = 1, N != M, d above a staged chunk
# (32 float32 / 16 float64 features), and enough tiles (5 × 5) that three tiles share an
# anti-diagonal with a border slot reused by another tile of it (the rolling buffers' case).
SHAPES = [(3, 1, 1, 2), (2, 5, 3, 1), (2, 1, 70, 3), (2, 70, 1, 3), (2, 64, 64, 4), (2, 65, 64, 2),
          (2, 64, 129, 2), (2, 130, 70, 40), (1, 150, 150, 1), (2, 75, 200, 3), (2, 260, 270, 1)]


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_values_table_and_gradients_match_cpu(emu, shape, fused):
    batch, n, m, d = shape
    dtype = torch.float64
    x, y, _, _ = make_pair_batch(batch, n, m, d, dtype, ragged=False, seed=n * 1000 + m)
    compare_with_cpu(emu, x, y, None, None, gamma=0.5, bandwidth=None, fused=fused)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("bandwidth", [0, 3, 40])
@pytest.mark.parametrize("shape", [(3, 130, 70, 2), (3, 70, 140, 3), (2, 100, 100, 1), (2, 330, 290, 2)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("ragged", [False, True], ids=["equal", "ragged"])
def test_band_and_ragged_match_cpu(emu, shape, bandwidth, ragged, fused):
    # Narrow bands leave whole tiles outside the band (skipped by the kernels: R = +inf, E = 0).
    batch, n, m, d = shape
    x, y, xl, yl = make_pair_batch(batch, n, m, d, torch.float64, ragged, seed=7 + bandwidth)
    compare_with_cpu(emu, x, y, xl, yl, gamma=1.0, bandwidth=bandwidth, fused=fused)


@pytest.mark.parametrize("seed,concurrent_blocks", [(0, 1), (7, 4), (12345, 3)])
def test_block_orders_and_concurrent_blocks(emu, monkeypatch, seed, concurrent_blocks):
    # Tiles of one anti-diagonal in natural, scrambled and other orders, and several at once (each
    # warp an OS thread): the rolling border buffers must not depend on which tile runs first.
    monkeypatch.setenv("CUDA_EMU_SEED", str(seed))
    monkeypatch.setenv("CUDA_EMU_CONCURRENT_BLOCKS", str(concurrent_blocks))
    x, y, xl, yl = make_pair_batch(3, 330, 290, 2, torch.float64, ragged=True, seed=seed)
    for fused in (True, False):
        compare_with_cpu(emu, x, y, xl, yl, gamma=1.0, bandwidth=None, fused=fused)


@pytest.mark.parametrize("gamma", [1e-3, 1.0, 100.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_gamma_range_and_float32(emu, gamma, dtype):
    x, y, xl, yl = make_pair_batch(2, 90, 80, 36, dtype, ragged=True, seed=3)
    compare_with_cpu(emu, x, y, xl, yl, gamma=gamma, bandwidth=None, fused=True)
    compare_with_cpu(emu, x, y, xl, yl, gamma=gamma, bandwidth=None, fused=False)


@pytest.mark.parametrize("gamma", [1e-4, 1e-2, 1.0, 1e3])
def test_float32_cell_math_accuracy_at_worst_case_intrinsic_error(emu, gamma):
    # The float32 kernels compute each cell with exp2f and __log2f; the emulator gives every call
    # the worst-case error CUDA documents for it. Against float64 on the same float32
    # costs (3 × 3 tiles, N != M), E must stay within max |ΔE| <= 1e-4 and values within 1e-6
    # relative, as the CPU's float32 kernels do.
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 150, 3, generator=g, dtype=torch.float64).float()
    y = torch.randn(2, 140, 3, generator=g, dtype=torch.float64).float()
    cpu, emulated = emulated_ops.float32_errors(emu, OPS.pairwise_cost(x, y, "sqeuclidean"), gamma)
    assert cpu.alignment <= 1e-4 and emulated.alignment <= 1e-4
    assert cpu.value <= 1e-6 and emulated.value <= 1e-6


@needs_aeon_data
@pytest.mark.parametrize("gamma", [1e-3, 0.1])
def test_float32_fidelity_on_unnormalised_real_data(emu, gamma):
    # Raw BasicMotions (R up to 4e4, float32's spacing there 0.004): the emulated CUDA float32 kernels
    # carry R as hi + lo as the CPU's do (docs/design/softdtw.md §9), and meet the same bounds against
    # float64 on the same float32 costs: max |ΔE| <= 1e-4, values within 1e-6.
    X, _ = load_ts(os.path.join(AEON_DATASETS, "BasicMotions", "BasicMotions_TRAIN.ts"))
    X = torch.from_numpy(np.asarray(X, dtype=np.float64)).transpose(1, 2).float()
    D = OPS.pairwise_cost(X[:4], X[4:8], "sqeuclidean")
    cpu, emulated = emulated_ops.float32_errors(emu, D, gamma)
    assert cpu.alignment <= 1e-4 and emulated.alignment <= 1e-4
    assert cpu.value <= 1e-6 and emulated.value <= 1e-6


def compare_with_cpu(emu, x, y, x_lengths, y_lengths, gamma, bandwidth, fused, itakura_max_slope=None):
    dtype = x.dtype
    grad = torch.linspace(0.5, 1.5, x.shape[0], dtype=dtype)
    window = (bandwidth, itakura_max_slope)
    if fused:
        args = (x, y, gamma, *window, x_lengths, y_lengths)
        want_values, want_R, _ = OPS._soft_dtw_fused_forward(*args, "table")
        got_values, got_R, _ = emu.fused_forward(*args, "table")
        want_grads = OPS._soft_dtw_fused_backward(grad, x, y, want_R, NO_CACHE, gamma, *window, x_lengths, y_lengths,
                                                  "table")
        got_grads = emu.fused_backward(grad, x, y, got_R, NO_CACHE, gamma, *window, x_lengths, y_lengths, "table")
    else:
        D = OPS.pairwise_cost(x, y, "sqeuclidean")
        args = (D, gamma, *window, x_lengths, y_lengths)
        want_values, want_R = OPS._soft_dtw_from_cost_forward(*args, True)
        got_values, got_R = emu.from_cost_forward(*args, True)
        want_grads = (OPS._soft_dtw_from_cost_backward(grad, D, want_R, gamma, *window, x_lengths, y_lengths),)
        got_grads = (emu.from_cost_backward(grad, D, got_R, gamma, *window, x_lengths, y_lengths),)
    torch.testing.assert_close(got_values, want_values, **tolerances(dtype))
    assert_tables_match(got_R, want_R, dtype, gamma, x_lengths, y_lengths)
    for got, want in zip(got_grads, want_grads):
        scale = want.abs().max().clamp_min(1.0)
        torch.testing.assert_close(got / scale, want / scale, **tolerances(dtype))
        assert got.dtype == want.dtype and got.shape == want.shape


def test_no_grad_forward_keeps_no_table(emu):
    x, y, xl, yl = make_pair_batch(3, 140, 90, 5, torch.float64, ragged=True, seed=11)
    values, R, _ = emu.fused_forward(x, y, 1.0, 20, None, xl, yl, "nothing")
    assert R.numel() == 0
    want, _, _ = OPS._soft_dtw_fused_forward(x, y, 1.0, 20, None, xl, yl, "nothing")
    torch.testing.assert_close(values, want, **tolerances(torch.float64))


def test_the_unit_gradients_cache_is_refused(emu):
    # Each pair's unit gradients are the CPU's cache (its packs); the planner never asks CUDA for them.
    x, y, _, _ = make_pair_batch(2, 10, 9, 2, torch.float64, ragged=False, seed=3)
    message = 'soft_dtw: the "gradients" cache .* is kept on the CPU only'
    with pytest.raises(NotImplementedError, match=message):
        emu.fused_forward(x, y, 1.0, None, None, None, None, "gradients")
    with pytest.raises(NotImplementedError, match=message):
        emu.fused_backward(torch.ones(2, dtype=torch.float64), x, y, x, y, 1.0, None, None, None, None, "gradients")


@contextlib.contextmanager
def tiles_only(emu):
    """The forward on the tiles whatever the shape: the emulated launcher's cap on the small-problem
    kernels (one warp per pair) at 0."""
    previous = emu.set_small_kernel_limit(0)
    try:
        yield
    finally:
        emu.set_small_kernel_limit(previous)


@pytest.mark.parametrize("n, m", [(1, 1), (64, 64), (65, 64), (130, 70), (300, 20), (70, 130)])
def test_one_launch_per_tile_anti_diagonal(emu, n, m):
    x, y, _, _ = make_pair_batch(2, n, m, 1, torch.float32, ragged=False, seed=1)
    diagonals = -(-n // TILE) + -(-m // TILE) - 1
    with tiles_only(emu):
        for keep in ("table", "nothing"):  # no extra launch without a table
            emu.reset_launch_count()
            emu.fused_forward(x, y, 1.0, None, None, None, None, keep)
            assert emu.launches() == diagonals, keep


# The forward's regimes by shape: one launch of the pair kernel for M up to 256 columns (and, fused,
# up to 16 features), else one per tile anti-diagonal; a checkpointed forward always on the tiles.
@pytest.mark.parametrize("n, m, d, keep, pairs", [
    (1, 1, 1, "table", True), (300, 20, 3, "nothing", True), (70, 256, 16, "table", True),
    (70, 257, 1, "table", False), (70, 128, 17, "table", False), (70, 100, 2, "borders", False)])
def test_short_pairs_run_one_launch(emu, n, m, d, keep, pairs):
    assert (PAIR_MAX_COLUMNS, _C.SOFTDTW_CUDA_PAIR_MAX_FUSED_FEATURES) == (256, 16)  # the regime these cases straddle
    x, y, _, _ = make_pair_batch(9, n, m, d, torch.float32, ragged=False, seed=2)
    tiles = -(-n // TILE) + -(-m // TILE) - 1
    emu.reset_launch_count()
    emu.fused_forward(x, y, 1.0, None, None, None, None, keep)
    assert emu.launches() == (1 if pairs else tiles)
    emu.reset_launch_count()
    emu.from_cost_forward(OPS.pairwise_cost(x, y, "sqeuclidean"), 1.0, None, None, None, None, keep == "table")
    assert emu.launches() == (1 if m <= PAIR_MAX_COLUMNS else tiles)


# (B, N, M, d), bandwidth, Itakura slope, ragged: two columns a lane (M ≤ 64), four (M ≤ 128) and
# eight (M ≤ 256, its last at 256), each at the first M it takes, M = 1 and N = 1, bands (0: the
# diagonal only), parallelograms, ragged pairs, and more pairs than one block's 4 warps.
PAIR_CASES = [((3, 1, 1, 2), None, None, False), ((5, 40, 1, 3), None, None, True), ((2, 1, 70, 3), None, None, False),
              ((6, 130, 64, 3), None, None, True), ((3, 70, 65, 2), 3, None, True), ((2, 200, 128, 1), 40, None, False),
              ((5, 90, 100, 16), None, 1.5, True), ((4, 33, 31, 2), 0, None, True), ((5, 60, 129, 2), 20, None, True),
              ((2, 140, 256, 1), None, 2.0, False)]


@pytest.mark.parametrize("gamma", [0.5, 0.0], ids=["soft", "hard"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", PAIR_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-r{c[1]}-s{c[2]}-{c[3]}")
def test_pair_kernels_give_the_tiles_bits(emu, case, dtype, gamma):
    # One warp per pair computes each cell with the tiles' cell math from the same predecessors, costs
    # summed in the same order and the same window, and in reverse each cell's E from the same
    # messages added in the same order, the fused sums by the tiles' blocks: the same values, tables
    # and gradients, bit for bit (the tiles are compared with the CPU kernels by the tests above; so
    # are these kernels, which they now run for M up to 256).
    shape, bandwidth, slope, ragged = case
    batch, n, m, d = shape
    x, y, xl, yl = make_pair_batch(batch, n, m, d, dtype, ragged, seed=n * 7 + m)
    D = OPS.pairwise_cost(x, y, "sqeuclidean")
    L = (bandwidth, slope, xl, yl)
    grad = torch.linspace(-1.5, 2.0, batch, dtype=dtype)

    def forwards():
        return [*emu.fused_forward(x, y, gamma, *L, "table")[:2], *emu.from_cost_forward(D, gamma, *L, True),
                emu.fused_forward(x, y, gamma, *L, "nothing")[0], emu.from_cost_forward(D, gamma, *L, False)[0]]

    def backwards(fused_R, R):
        return [*emu.fused_backward(grad, x, y, fused_R, NO_CACHE, gamma, *L, "table"),
                emu.from_cost_backward(grad, D, R, gamma, *L)]

    emu.reset_launch_count()
    pairs = forwards()
    assert emu.launches() == 4 * (2 if slope else 1)  # with the parallelogram's rows kernel
    emu.reset_launch_count()
    pairs += backwards(pairs[1], pairs[3])
    assert emu.launches() == 3 + 1  # fused: E, then the sums over rows and over columns; from cost: grad·E
    with tiles_only(emu):
        tiles = forwards()
        tiles += backwards(tiles[1], tiles[3])
    assert len(pairs) == len(tiles) == 9
    for got, want in zip(pairs, tiles):
        assert same_bits(got, want)


def test_the_pair_backwards_e_buffer_is_preflighted(emu):
    # The fused backward of short pairs writes E (B, N, M) before summing it, the one tensor of that
    # size the tiles do without: beyond the limit it is refused before anything is computed, with
    # checkpoint=True (the tiles, no E) among the remedies. E here: 4 x 200 x 200 float64, 1.2 MiB.
    x, y, _, _ = make_pair_batch(4, 200, 200, 2, torch.float64, ragged=False, seed=6)
    grad = torch.ones(4, dtype=torch.float64)
    _, R, _ = emu.fused_forward(x, y, 1.0, None, None, None, None, "table")
    before = emu.memory_limit()  # the emulated module's own preflight limit
    emu.set_memory_limit(1 << 20)
    try:
        with pytest.raises(torch.OutOfMemoryError, match=r"^soft_dtw: needs [0-9.]+ MiB for the reverse recursion's E "
                           r"of 4 pairs of 200 x 200 cells.*pass checkpoint=True"):
            emu.fused_backward(grad, x, y, R, NO_CACHE, 1.0, None, None, None, None, "table")
        with tiles_only(emu):  # the tiles' fused backward allocates no (B, N, M) tensor
            got = emu.fused_backward(grad, x, y, R, NO_CACHE, 1.0, None, None, None, None, "table")
    finally:
        emu.set_memory_limit(before)
    assert all(same_bits(a, b) for a, b in zip(got, emu.fused_backward(grad, x, y, R, NO_CACHE, 1.0, None, None,
                                                                       None, None, "table")))


def test_results_are_bitwise_reproducible(emu):
    x, y, xl, yl = make_pair_batch(2, 100, 90, 20, torch.float32, ragged=True, seed=5)
    grad = torch.ones(2)
    first = emu.fused_forward(x, y, 0.1, None, None, xl, yl, "table")
    second = emu.fused_forward(x, y, 0.1, None, None, xl, yl, "table")
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])
    g1 = emu.fused_backward(grad, x, y, first[1], NO_CACHE, 0.1, None, None, xl, yl, "table")
    g2 = emu.fused_backward(grad, x, y, first[1], NO_CACHE, 0.1, None, None, xl, yl, "table")
    assert all(torch.equal(a, b) for a, b in zip(g1, g2))


def test_invalid_values_inside_pairs_raise_and_padding_is_ignored(emu):
    x, y, _, _ = make_pair_batch(2, 80, 70, 2, torch.float64, ragged=False, seed=2)
    D = OPS.pairwise_cost(x, y, "sqeuclidean")
    xl, yl = torch.tensor([80, 10]), torch.tensor([70, 9])
    padded = D.clone()
    padded[1, 50:, :] = float("nan")  # past pair 1's lengths: never read
    want, _ = OPS._soft_dtw_from_cost_forward(D, 1.0, None, None, xl, yl, False)
    bad = D.clone()
    bad[0, 70, 65] = float("nan")  # inside pair 0, in its second row and column block
    bad_x, bad_y = x.clone(), y.clone()
    bad_x[0, 75, 1] = float("inf")
    bad_y[1, 69, 0] = float("-inf")  # pair 1's last row of y, read by the last lane of its warp
    for kernels in (contextlib.nullcontext, functools.partial(tiles_only, emu)):  # one warp per pair, the tiles
        with kernels():
            got, _ = emu.from_cost_forward(padded, 1.0, None, None, xl, yl, False)
            torch.testing.assert_close(got, want)
            with pytest.raises(ValueError, match="soft_dtw_from_cost: D contains NaN or -inf"):
                emu.from_cost_forward(bad, 1.0, None, None, None, None, False)
            for bx, by in ((bad_x, y), (x, bad_y)):
                with pytest.raises(ValueError, match="soft_dtw: x and y must contain only finite values"):
                    emu.fused_forward(bx, by, 1.0, None, None, None, None, "nothing")


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_backward_recomputes_a_table_not_kept(emu, fused):
    # An empty R (a forward that kept no table): the body recomputes it with the device's own
    # forward, so the gradients are the ones from the kept table, and invalid inputs are refused
    # with the forward's message.
    x, y, xl, yl = make_pair_batch(3, 130, 70, 2, torch.float64, ragged=True, seed=4)
    grad = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    empty = torch.empty(0, dtype=torch.float64)
    if fused:
        _, R, _ = emu.fused_forward(x, y, 0.7, 5, None, xl, yl, "table")
        kept = emu.fused_backward(grad, x, y, R, NO_CACHE, 0.7, 5, None, xl, yl, "table")
        recomputed = emu.fused_backward(grad, x, y, empty, NO_CACHE, 0.7, 5, None, xl, yl, "table")
        assert all(torch.equal(a, b) for a, b in zip(kept, recomputed))
        bad_x = x.clone()
        bad_x[1, 3, 0] = float("nan")
        with pytest.raises(ValueError, match="soft_dtw: x and y must contain only finite values"):
            emu.fused_backward(grad, bad_x, y, empty, NO_CACHE, 0.7, 5, None, xl, yl, "table")
    else:
        D = OPS.pairwise_cost(x, y, "sqeuclidean")
        _, R = emu.from_cost_forward(D, 0.7, 5, None, xl, yl, True)
        kept = emu.from_cost_backward(grad, D, R, 0.7, 5, None, xl, yl)
        assert torch.equal(kept, emu.from_cost_backward(grad, D, empty, 0.7, 5, None, xl, yl))
        bad = D.clone()
        bad[0, 2, 2] = float("nan")
        with pytest.raises(ValueError, match="soft_dtw_from_cost: D contains NaN or -inf"):
            emu.from_cost_backward(grad, bad, empty, 0.7, 5, None, xl, yl)


def test_unreachable_end_gives_inf_and_zero_gradient(emu):
    # +inf costs that block every path (a forbidden row) make the value +inf with E = 0.
    x, y, _, _ = make_pair_batch(1, 70, 70, 1, torch.float64, ragged=False, seed=4)
    D = OPS.pairwise_cost(x, y, "sqeuclidean")
    D[0, 66, :] = float("inf")
    values, R = emu.from_cost_forward(D, 1.0, None, None, None, None, True)
    assert torch.isinf(values).all()
    grad_D = emu.from_cost_backward(torch.ones(1, dtype=torch.float64), D, R, 1.0, None, None, None, None)
    want = OPS._soft_dtw_from_cost_backward(torch.ones(1, dtype=torch.float64), D, R, 1.0, None, None, None, None)
    assert torch.equal(grad_D, want) and not grad_D.any()


@pytest.mark.parametrize("bandwidth", [None, 4], ids=["no-band", "band4"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 1, 1, 2), (3, 130, 70, 20), (2, 260, 200, 1), (2, 64, 129, 40), (3, 300, 200, 2)],
                         ids=lambda s: "x".join(map(str, s)))
def test_checkpointed_backward_matches_cpu(emu, shape, dtype, bandwidth):
    # The checkpointed pair keeps R on tile borders only, (B, ⌈N/64⌉, M) and (B, ⌈M/64⌉, N), and the
    # backward recomputes each tile from them: same values and gradients as the CPU kernels.
    batch, n, m, d = shape
    x, y, xl, yl = make_pair_batch(batch, n, m, d, dtype, ragged=batch > 2, seed=n + m + d)
    grad = torch.linspace(0.5, 1.5, batch, dtype=dtype)
    values, rows, cols = emu.fused_forward(x, y, 0.3, bandwidth, None, xl, yl, "borders")
    pair = (2,) if dtype == torch.float32 else ()  # float32: each R as hi + lo
    assert rows.shape == (batch, -(-n // TILE), m, *pair) and cols.shape == (batch, -(-m // TILE), n, *pair)
    want_values, want_R, _ = OPS._soft_dtw_fused_forward(x, y, 0.3, bandwidth, None, xl, yl, "table")
    torch.testing.assert_close(values, want_values, **tolerances(dtype))
    got = emu.fused_backward(grad, x, y, rows, cols, 0.3, bandwidth, None, xl, yl, "borders")
    want = OPS._soft_dtw_fused_backward(grad, x, y, want_R, NO_CACHE, 0.3, bandwidth, None, xl, yl, "table")
    for g, w in zip(got, want):
        scale = w.abs().max().clamp_min(1.0)
        torch.testing.assert_close(g / scale, w / scale, **tolerances(dtype))
    # The checkpoints are the table's rows 63, 127, ... and columns 63, 127, ... (where defined).
    if xl is None and n > TILE:
        got_rows = emulated_ops.table_values(rows)[:, 0, :]
        want_rows = emulated_ops.cpu_table_by_rows(want_R)[:, TILE - 1, :]
        torch.testing.assert_close(got_rows, want_rows, **tolerances(dtype))


def test_checkpointed_backward_rejects_mismatched_borders(emu):
    x, y, _, _ = make_pair_batch(2, 100, 90, 2, torch.float64, ragged=False, seed=1)
    _, rows, cols = emu.fused_forward(x, y, 1.0, None, None, None, None, "borders")
    with pytest.raises(RuntimeError, match="soft_dtw: expected the checkpointed forward's borders"):
        emu.fused_backward(torch.ones(2, dtype=torch.float64), x, y, cols, rows, 1.0, None, None, None, None,
                           "borders")


# ---- forward mode and second order (docs/design/softdtw.md §3) ----------------------------------

def compare_outputs(emulated, cpu, exact=None):
    """Emulated CUDA outputs against the CPU op's; in float32, against the CPU op in float64 on the
    same float32 inputs (`exact`), within twice the CPU float32 kernels' own error or 1e-4 of the
    output's scale, whichever is larger (second derivatives add up two recursions' rounding)."""
    emulated, cpu = tuple(emulated), tuple(cpu)
    assert len(emulated) == len(cpu)
    for i, (g, w) in enumerate(zip(emulated, cpu)):
        assert g.dtype == w.dtype and g.shape == w.shape
        # +inf values (pairs without an admissible path) on the same pairs; the rest compared below.
        infinite = torch.isinf(w)
        assert torch.equal(torch.isinf(g), infinite) and torch.equal(g[infinite], w[infinite]), i
        g, w = g[~infinite], w[~infinite]
        if not w.numel():
            continue
        if exact is None:
            scale = w.abs().max().clamp_min(1.0)
            torch.testing.assert_close(g / scale, w / scale, **tolerances(torch.float64))
        else:
            x = exact[i][~infinite]
            scale = x.abs().max().clamp_min(1.0)
            cpu_error = ((w.double() - x) / scale).abs().max().item()
            error = ((g.double() - x) / scale).abs().max().item()
            assert error <= max(1e-4, 2 * cpu_error), (i, error, cpu_error)


def compare_op_with_cpu(emu, name, *args):
    """The emulated op `name` (from_cost_jvp, fused_hvp, ...) against the CPU op on the same arguments,
    float32 outputs against the CPU op in float64 on them (compare_outputs)."""
    exact = None
    if any(isinstance(a, torch.Tensor) and a.dtype == torch.float32 for a in args):
        exact = getattr(OPS, "_soft_dtw_" + name)(*(a.double() if isinstance(a, torch.Tensor) and
                                                     a.is_floating_point() else a for a in args))
    compare_outputs(getattr(emu, name)(*args), getattr(OPS, "_soft_dtw_" + name)(*args), exact)


# The grid of the first-order cases: one tile, tile edges, several tiles, N or M = 1, N != M, d above
# a staged chunk of the tangent stages (16 float32 / 8 float64 features), bands with whole tiles
# outside, ragged lengths.
SECOND_ORDER_CASES = [((3, 1, 1, 2), None, False), ((2, 5, 3, 1), None, True), ((2, 1, 70, 3), None, False),
                      ((2, 70, 1, 3), None, False), ((2, 65, 64, 2), None, True), ((2, 64, 129, 20), None, False),
                      ((2, 130, 70, 40), 3, True), ((2, 150, 150, 1), 0, False), ((3, 200, 190, 2), 5, True),
                      ((2, 260, 270, 1), None, True)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("shape,bandwidth,ragged", SECOND_ORDER_CASES, ids=lambda v: "x".join(map(str, v))
                         if isinstance(v, tuple) else str(v))
def test_jvp_and_hvp_match_cpu(emu, shape, bandwidth, ragged, dtype):
    # The tangent channel rides through the same tiles, borders and shuffles: the forward carries Ṙ,
    # the second-order reverse sweep Ė and its messages ẇ·E + w·Ė, from R and Ṙ recomputed tile by
    # tile from the forward's checkpoints.
    batch, n, m, d = shape
    x, y, xl, yl = make_pair_batch(batch, n, m, d, dtype, ragged, seed=n + 3 * m + d)
    u, v, _, _ = make_pair_batch(batch, n, m, d, dtype, False, seed=n * m + 1)
    D = OPS.pairwise_cost(x, y, "sqeuclidean")
    T = torch.randn(D.shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64).to(dtype)
    grad = torch.linspace(0.5, 1.5, batch, dtype=dtype)
    grad_tangent = torch.linspace(-1.0, 0.3, batch, dtype=dtype)
    gamma = 0.5
    L = (bandwidth, None, xl, yl)
    check = functools.partial(compare_op_with_cpu, emu)
    check("from_cost_jvp", D, T, gamma, *L)
    check("fused_jvp", x, y, u, v, gamma, *L)
    check("fused_jvp", x, y, None, v, gamma, *L)
    for with_grad, gt in ((True, grad_tangent), (False, None)):
        check("from_cost_hvp", grad, gt, D, T, gamma, *L, with_grad)
        check("fused_hvp", grad, gt, x, y, u, None, gamma, *L, with_grad)


def test_second_order_launches_and_no_table(emu):
    # One launch per tile anti-diagonal for the forward with the tangent, and as many for the
    # reverse sweep with it; the forward keeps only tile borders (no (B, N, M) table).
    x, y, _, _ = make_pair_batch(2, 130, 70, 3, torch.float64, ragged=False, seed=3)
    diagonals = -(-130 // TILE) + -(-70 // TILE) - 1
    emu.reset_launch_count()
    emu.fused_jvp(x, y, x, None, 1.0, None, None, None, None)
    assert emu.launches() == diagonals
    emu.reset_launch_count()
    emu.fused_hvp(torch.ones(2, dtype=torch.float64), None, x, y, x, None, 1.0, None, None, None, None, False)
    assert emu.launches() == 2 * diagonals


def test_second_order_results_are_bitwise_reproducible(emu):
    x, y, xl, yl = make_pair_batch(2, 100, 90, 20, torch.float32, ragged=True, seed=5)
    args = (torch.ones(2), torch.full((2,), 0.5), x, y, 0.5 * x, y, 0.1, None, None, xl, yl, True)
    first, second = emu.fused_hvp(*args), emu.fused_hvp(*args)
    assert all(torch.equal(a, b) for a, b in zip(first, second))


def test_shared_memory_fits_the_architectures(emu):
    # Every kernel fits the 64 KiB per block of sm_75 (the oldest built), except the float64
    # forward-mode and second-order ones, which fit the 99 KiB of sm_86, sm_89 and sm_120 (and sm_80's
    # and sm_90's more); on sm_75 their launch raises a clear error (csrc/softdtw/cuda/kernel.cu).
    for float64 in (False, True):
        for kernel, smem in emu.shared_memory_bytes(float64).items():
            tangent = "tangent" in kernel
            limit = 99 * 1024 if float64 and tangent else 64 * 1024
            assert smem <= limit, (kernel, float64, smem)


def test_launches_on_sm75_opt_in_or_refuse(emu, monkeypatch):
    # The emulated device is sm_90 in these tests (emulated_ops.load); as sm_75, the emulator
    # checks each launch's shared memory against its 64 KiB and the kernel's opt-in: the float32
    # second-order kernels (50-54 KiB) opt in and run, the float64 ones (74-92 KiB) are refused
    # with the launcher's message before any launch.
    monkeypatch.setenv("CUDA_EMU_ARCH", "75")
    for dtype in (torch.float32, torch.float64):
        x, y, _, _ = make_pair_batch(2, 70, 65, 3, dtype, ragged=False, seed=3)
        u, v = torch.randn_like(x), torch.randn_like(y)
        grad = torch.ones(2, dtype=dtype)
        args = (grad, None, x, y, u, v, 1.0, None, None, None, None, True)
        if dtype == torch.float32:
            got = emu.fused_hvp(*args)
            monkeypatch.setenv("CUDA_EMU_ARCH", "90")
            assert all(torch.equal(a, b) for a, b in zip(got, emu.fused_hvp(*args)))
            monkeypatch.setenv("CUDA_EMU_ARCH", "75")
        else:
            with pytest.raises(RuntimeError, match="shared memory per block and the emulated GPU allows 65536"):
                emu.fused_hvp(*args)


# ---- hard DTW (gamma = 0, docs/design/softdtw.md §10) --------------------------------------------

HARD_CASES = [((2, 5, 3, 1), None, False), ((2, 1, 70, 3), None, False), ((2, 130, 70, 3), None, True),
              ((2, 64, 129, 2), 4, False), ((3, 200, 190, 2), 5, True), ((2, 75, 200, 40), None, True)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("shape,bandwidth,ragged", HARD_CASES, ids=lambda v: "x".join(map(str, v))
                         if isinstance(v, tuple) else str(v))
def test_hard_dtw_matches_cpu(emu, shape, bandwidth, ragged, dtype):
    # The same kernels with the cell functions at γ = 0 (Base2CellFunctions in float32): values and
    # tables as the CPU's, and the path, ∂value/∂D, exactly the CPU's (a 0/1 matrix).
    batch, n, m, d = shape
    x, y, xl, yl = make_pair_batch(batch, n, m, d, dtype, ragged, seed=n + m + 11)
    for fused in (True, False):
        compare_with_cpu(emu, x, y, xl, yl, gamma=0.0, bandwidth=bandwidth, fused=fused)
    D = OPS.pairwise_cost(x, y, "sqeuclidean")
    ones = torch.ones(batch, dtype=dtype)
    _, want_R = OPS._soft_dtw_from_cost_forward(D, 0.0, bandwidth, None, xl, yl, True)
    _, got_R = emu.from_cost_forward(D, 0.0, bandwidth, None, xl, yl, True)
    want_path = OPS._soft_dtw_from_cost_backward(ones, D, want_R, 0.0, bandwidth, None, xl, yl)
    got_path = emu.from_cost_backward(ones, D, got_R, 0.0, bandwidth, None, xl, yl)
    assert torch.equal(got_path, want_path) and set(want_path.unique().tolist()) <= {0.0, 1.0}
    # The checkpointed pair recomputes the tiles at γ = 0 too.
    values, rows, cols = emu.fused_forward(x, y, 0.0, bandwidth, None, xl, yl, "borders")
    got = emu.fused_backward(ones, x, y, rows, cols, 0.0, bandwidth, None, xl, yl, "borders")
    _, R, _ = OPS._soft_dtw_fused_forward(x, y, 0.0, bandwidth, None, xl, yl, "table")
    want = OPS._soft_dtw_fused_backward(ones, x, y, R, NO_CACHE, 0.0, bandwidth, None, xl, yl, "table")
    for g, w in zip(got, want):
        scale = w.abs().max().clamp_min(1.0)
        torch.testing.assert_close(g / scale, w / scale, **tolerances(dtype))
    # Forward mode and second order along the path: the weights' tangents are exactly 0.
    u, v, _, _ = make_pair_batch(batch, n, m, d, dtype, False, seed=n * m + 5)
    T = torch.randn(D.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64).to(dtype)
    L = (bandwidth, None, xl, yl)
    compare_op_with_cpu(emu, "from_cost_jvp", D, T, 0.0, *L)
    compare_op_with_cpu(emu, "fused_hvp", ones, None, x, y, u, v, 0.0, *L, True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("shape,bandwidth,ragged", HARD_CASES + [((300, 9, 7, 1), None, True)],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_dtw_path_matches_cpu(emu, shape, bandwidth, ragged, dtype):
    # hard_path_kernel: one thread per pair (300 pairs: two blocks, the second partly idle) walking
    # back over the row-by-row table; the CPU op walks its anti-diagonal table. Same paths, same
    # lengths, -1 past each path's end.
    batch, n, m, d = shape
    x, y, xl, yl = make_pair_batch(batch, n, m, d, dtype, ragged, seed=n * 3 + m)
    got = emu.dtw_path(x, y, bandwidth, None, xl, yl)
    want = OPS._dtw_path(x, y, bandwidth, None, xl, yl)
    torch.testing.assert_close(got[0], want[0], **tolerances(dtype))
    assert torch.equal(got[1], want[1]) and torch.equal(got[2], want[2])


# ---- the Itakura parallelogram (docs/design/softdtw.md §11) --------------------------------------

# (B, N, M, d), slope, bandwidth, ragged: corners that leave whole tiles outside the parallelogram
# (skipped by tile_touches_window), the diagonal alone (slope 1), a band and a parallelogram at
# once, ragged pairs (each with its own parallelogram, some without any admissible path: +inf).
ITAKURA_CASES = [((2, 130, 70, 3), 2.0, None, True), ((2, 200, 140, 2), 1.5, None, False),
                 ((3, 200, 190, 2), 3.0, 20, True), ((2, 65, 65, 1), 1.0, None, False),
                 ((4, 40, 90, 2), 3.0, None, True)]


@pytest.mark.parametrize("gamma", [0.5, 0.0], ids=["soft", "hard"])
@pytest.mark.parametrize("case", ITAKURA_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-s{c[1]}-r{c[2]}")
def test_itakura_matches_cpu(emu, case, gamma):
    # The per-cell test (in_window, float64 bounds computed with _rn intrinsics) and the tile
    # skipping against the CPU's per-row and per-diagonal intervals: same values, tables (+inf on
    # the same cells) and gradients, fused and not, then forward mode, second order and the paths.
    shape, slope, bandwidth, ragged = case
    batch, n, m, d = shape
    dtype = torch.float64
    x, y, xl, yl = make_pair_batch(batch, n, m, d, dtype, ragged, seed=n + 2 * m)
    for fused in (True, False):
        compare_with_cpu(emu, x, y, xl, yl, gamma=gamma, bandwidth=bandwidth, fused=fused, itakura_max_slope=slope)
    u, v, _, _ = make_pair_batch(batch, n, m, d, dtype, False, seed=n * m + 2)
    D = OPS.pairwise_cost(x, y, "sqeuclidean")
    T = torch.randn(D.shape, generator=torch.Generator().manual_seed(5), dtype=dtype)
    grad = torch.linspace(0.5, 1.5, batch, dtype=dtype)
    L = (bandwidth, slope, xl, yl)
    compare_op_with_cpu(emu, "from_cost_jvp", D, T, gamma, *L)
    compare_op_with_cpu(emu, "fused_hvp", grad, None, x, y, u, v, gamma, *L, True)
    values, rows, cols = emu.fused_forward(x, y, gamma, *L, "borders")
    got = emu.fused_backward(grad, x, y, rows, cols, gamma, *L, "borders")
    table_and_none = OPS._soft_dtw_fused_forward(x, y, gamma, *L, "table")[1:]
    want = OPS._soft_dtw_fused_backward(grad, x, y, *table_and_none, gamma, *L, "table")
    for g, w in zip(got, want):
        scale = w.abs().max().clamp_min(1.0)
        torch.testing.assert_close(g / scale, w / scale, **tolerances(dtype))
    if gamma == 0.0:
        got, want = emu.dtw_path(x, y, *L), OPS._dtw_path(x, y, *L)
        torch.testing.assert_close(got[0], want[0], **tolerances(dtype))
        assert torch.equal(got[1], want[1]) and torch.equal(got[2], want[2])


def test_itakura_rows_kernel_matches_cpu(emu):
    # itakura_rows_kernel (the table the tile kernels read, float64 bounds with _rn intrinsics)
    # against the CPU op's loop over the same ItakuraParallelogram, on lengths of every shape and
    # slopes where the rounding to two decimals decides cells; columns past a pair's m admit none.
    g = torch.Generator().manual_seed(11)
    n = torch.randint(1, 300, (400,), generator=g)
    m = torch.randint(1, 300, (400,), generator=g)
    for slope in (1.0, 1.3, 2.0, 3.7, 1e6):
        got = emu.itakura_rows(n, m, 300, slope)
        assert torch.equal(got, OPS._itakura_rows(n, m, 300, slope)), slope
    assert emu.itakura_rows(n[:0], m[:0], 300, 2.0).shape == (0, 300, 2)

