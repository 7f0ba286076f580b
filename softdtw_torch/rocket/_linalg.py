"""Linear algebra for the ridge estimators with the same bits at any thread count on the CPU.

torch's CPU BLAS (MKL in the PyPI wheels) shares a matrix product's work among its threads in a
way that can change the order of the float64 sums: on an Intel Xeon (AVX-512) with torch 2.15,
``x @ x.T`` for x of shape (60, 300) and ``x @ c.T`` for (300, 2000) @ (2000, 3) differ in the
last bits between 1 and 2 threads, and so does the sum of all elements of a (2000, 10000) tensor
(the AMD machines of earlier runs gave equal bits for the ridge tests' shapes). The symmetric
eigensolver's eigenvectors differ too (~1e-13). Element-wise operations and sums along the
first dimension (column means) were equal.

:class:`FixedOrderOps` (from :func:`fixed_order_ops`) therefore cuts every product's result into
tiles of a fixed size (:data:`TILE`) and computes each tile with one BLAS call on one thread, the
tiles spread over the caller's threads; the tiles do not depend on the thread count, so neither
do the bits. Whole-tensor sums and the eigensolver run on one thread. On CUDA everything runs as
it is (cuBLAS picks its algorithm by shape, not by the number of CPU threads).

``torch.set_num_threads`` is process-wide: torch work that runs in another Python thread while a
one-thread step runs (the eigensolver, a sum, a small product) sees one thread meanwhile.
"""
from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Optional, TypeVar

import torch
from torch import Tensor

__all__ = ["FixedOrderOps", "fixed_order_ops"]

T = TypeVar("T")

# The result is cut into tiles of TILE rows and TILE columns: large enough that each tile is an
# efficient product (measured, x @ x.T for x of (1000, 20000) on one thread: 454 ms whole, 495 ms
# in blocks of 256 rows, 778 ms in blocks of 64: every block packs all of x.T again), and with
# columns cut too, so that a few hundred samples already give several threads tiles of their own.
TILE = 256
# Products with fewer multiply-adds run their tiles in the calling thread: handing them to the
# pool costs more than it saves.
PARALLEL_MULTIPLY_ADDS = 1 << 22


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class FixedOrderOps:
    """Operations on ``device`` whose order of float64 sums does not depend on the thread count:
    :meth:`matmul`, and :meth:`serial` for anything else that reduces a whole tensor."""

    def __init__(self, device: torch.device):
        self.on_cpu = device.type == "cpu"
        self.threads = torch.get_num_threads()
        self._pool: Optional[ThreadPoolExecutor] = None

    def matmul(self, a: Tensor, b: Tensor) -> Tensor:
        """``a @ b`` for a 2-D ``a`` and a 1-D or 2-D ``b``; on the CPU, one one-thread BLAS call
        per tile of the result."""
        columns = b.shape[1] if b.dim() == 2 else 1
        if not self.on_cpu or a.shape[0] == 0 or columns == 0:
            return a @ b
        row_blocks = [a[i:i + TILE] for i in range(0, a.shape[0], TILE)]
        column_blocks = [b[:, j:j + TILE] for j in range(0, columns, TILE)] if b.dim() == 2 else [b]
        tiles = [(rows, cols) for rows in row_blocks for cols in column_blocks]
        if self.threads == 1 or len(tiles) == 1 or a.shape[0] * a.shape[1] * columns < PARALLEL_MULTIPLY_ADDS:
            with _one_thread():
                products = [rows @ cols for rows, cols in tiles]
        else:
            if self._pool is None:
                # torch.set_num_threads(1) in each worker: torch's setting of the BLAS's threads is
                # per thread, and a new thread would otherwise run the BLAS on all cores.
                self._pool = ThreadPoolExecutor(self.threads, initializer=torch.set_num_threads, initargs=(1,))
            products = list(self._pool.map(lambda tile: tile[0] @ tile[1], tiles))
        if len(products) == 1:
            return products[0]
        if b.dim() == 1:
            return torch.cat(products)
        n = len(column_blocks)
        return torch.cat([torch.cat(products[i:i + n], dim=1) for i in range(0, len(products), n)])

    def serial(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)``, on one thread on the CPU (a whole-tensor sum, a dot product, the
        eigensolver)."""
        if not self.on_cpu:
            return function(*args)
        with _one_thread():
            return function(*args)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
            # The workers' torch.set_num_threads(1) also set the count torch gives threads that
            # start later (a process-wide value): back to the caller's.
            torch.set_num_threads(self.threads)


@contextlib.contextmanager
def fixed_order_ops(device: torch.device) -> Iterator[FixedOrderOps]:
    """Yields the :class:`FixedOrderOps` for ``device``, using the caller's thread count; its worker
    threads end with the block."""
    ops = FixedOrderOps(device)
    try:
        yield ops
    finally:
        ops.close()
