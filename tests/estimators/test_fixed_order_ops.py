"""softdtw_torch.rocket._linalg: the ridge estimators' products and one-thread steps with the same
bits at any thread count, checked against numpy's float64 products (a different BLAS path) and
against themselves at 1 and 2 threads (the eigensolver through the ridge tests)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from softdtw_torch.rocket._linalg import PARALLEL_MULTIPLY_ADDS, TILE, fixed_order_ops

from conftest import run_at_threads  # noqa: E402


def _random(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# (a's shape, b's shape, b is a's transpose): one tile, tiles run in the calling thread, tiles on
# the thread pool (rows and columns cut), a vector, empty results, and Gram matrices x @ x.T (the
# ridge's; on the Intel Xeon of 2026-11-27, plain x @ x.T differed between 1 and 2 threads for x of
# (60, 300) and (300, 2000), and so did (300, 2000) @ (2000, 300) tiles computed in new threads
# that had not set torch's thread count).
SHAPES = [((60, 300), (300, 60), False), ((300, 40), (40, 3), False), ((600, 700), (700, 600), False),
          ((700, 300), (300,), False), ((2 * TILE + 7, 500), (500, TILE + 3), False), ((0, 5), (5, 4), False),
          ((5, 4), (4, 0), False), ((300, 2000), (2000, 300), False), ((60, 300), None, True),
          ((300, 2000), None, True)]


@pytest.mark.parametrize("a_shape,b_shape,gram", SHAPES,
                         ids=["x".join(map(str, a)) + ("@T" if gram else "@" + "x".join(map(str, b)))
                              for a, b, gram in SHAPES])
def test_matmul_is_the_product_with_the_same_bits_at_any_thread_count(a_shape, b_shape, gram):
    a = _random(*a_shape, seed=1)
    a = a - a.mean(0)
    b = a.T if gram else _random(*b_shape, seed=2)

    def product():
        with fixed_order_ops(a.device) as ops:
            return ops.matmul(a, b)

    one, two, again = (run_at_threads(t, product) for t in (1, 2, 2))
    assert one.shape == two.shape == (a @ b).shape and one.dtype == torch.float64
    assert torch.equal(one, two) and torch.equal(two, again)
    np.testing.assert_allclose(one.numpy(), a.numpy() @ b.numpy(), rtol=1e-12, atol=1e-12 * a.shape[1])


def test_the_pool_is_used_and_its_workers_run_the_blas_on_one_thread():
    # Big enough for the pool; the transposed operand is the ridge's x @ x.T.
    x = _random(300, 2000, seed=3)
    assert x.shape[0] * x.shape[1] * x.shape[0] >= PARALLEL_MULTIPLY_ADDS

    def gram():
        with fixed_order_ops(x.device) as ops:
            result = ops.matmul(x, x.T)
            used_pool = ops._pool is not None
        return result, used_pool

    (one, pool_one), (two, pool_two) = run_at_threads(1, gram), run_at_threads(2, gram)
    assert not pool_one and pool_two
    assert torch.equal(one, two)


def _count_in_a_new_thread():
    """The thread count torch gives a thread started now (set on its first parallel op)."""
    seen = []

    def work():
        torch.ones(1 << 20).sum()
        seen.append(torch.get_num_threads())

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    return seen[0]


def test_the_callers_thread_count_is_kept_for_threads_started_later():
    x = _random(300, 2000, seed=5)

    def gram_then_counts():
        with fixed_order_ops(x.device) as ops:
            ops.matmul(x, x.T)
            assert ops._pool is not None
        return torch.get_num_threads(), _count_in_a_new_thread()

    assert run_at_threads(2, gram_then_counts) == (2, 2)


def test_serial_runs_on_one_thread_and_restores_the_count():
    t = _random(2000, 100, seed=4)

    def mean_and_threads():
        with fixed_order_ops(t.device) as ops:
            return ops.serial(torch.mean, t), ops.serial(torch.get_num_threads), torch.get_num_threads()

    one, two = run_at_threads(1, mean_and_threads), run_at_threads(2, mean_and_threads)
    assert torch.equal(one[0], two[0]) and one[0].item() == pytest.approx(t.numpy().mean(), rel=1e-12)
    assert one[1] == two[1] == 1 and two[2] == 2
