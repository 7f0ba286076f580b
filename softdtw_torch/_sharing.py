"""How one call's work is shared across the ranks of a ``torch.distributed`` process group: the
share of the active call (``active_share``, read by the computations that can split their work),
the split of chunks and of row blocks, the exchange of the results, and the agreement of every
rank before any result is used (the same inputs everywhere; a rank's failure raised on all).

The computations (``functional``'s chunked pairs, the barycenter objective, k-means) import this
module; :mod:`softdtw_torch.distributed`, the public functions, imports both, so neither imports
the other's callers.
"""
import contextlib
import threading
from typing import Any, Callable, Iterator, List, Optional, Sequence

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor

from ._version import __version__

# The share of the work this thread's call computes, set by ``_sharing`` and read by
# ``functional._pairs_in_chunks`` (eager only).
_active = threading.local()


class _Share:
    """A process group's split of chunked work: chunk k belongs to rank k mod world_size."""

    def __init__(self, who: str, group: Optional[Any]):
        self.who = who
        self.group = group
        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)

    def owns(self, chunk: int) -> bool:
        return chunk % self.world == self.rank


def active_share() -> Optional[_Share]:
    """The share of the current call under :func:`_sharing`, or None (every chunk computed here)."""
    return getattr(_active, "share", None)


@contextlib.contextmanager
def _sharing(who: str, group: Optional[Any]) -> Iterator[_Share]:
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(f"{who}: torch.distributed is not initialized; call "
                           "torch.distributed.init_process_group first (or use softdtw_torch's single-process "
                           "function of the same name)")
    if active_share() is not None:
        raise RuntimeError(f"{who}: already inside a distributed call ({active_share().who})")
    share = _Share(who, group)
    _active.share = share
    try:
        yield share
    finally:
        _active.share = None


def _collective(who: str, call: Any, *args: Any, **kwargs: Any) -> Any:
    """A torch.distributed collective whose failure (a rank that died, the group's timeout) is
    raised under the public function's name, with the backend's message kept."""
    try:
        return call(*args, **kwargs)
    except RuntimeError as error:
        raise RuntimeError(f"{who}: the process group failed while the ranks exchanged results (a rank died or the "
                           f"group's timeout passed): {error}") from error


def _describe(value: Any) -> Any:
    """What must agree between ranks about one input: its shape, dtype and device (or, for a list
    of series, its type and length)."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        return (tuple(value.shape), str(value.dtype), value.device.type)
    if isinstance(value, np.ndarray):
        return (value.shape, str(value.dtype), "numpy")
    return (type(value).__name__, len(value) if hasattr(value, "__len__") else None)


def _check_same_everywhere(who: str, group: Optional[Any], *inputs: Any, settings: Any = None) -> None:
    """Refuses, on every rank, inputs that are not the same on every rank (shape, dtype, device
    type, library version, and ``settings``, a picklable summary of anything else that must agree):
    a rank holding another collection would give another matrix."""
    mine = (__version__,) + tuple(_describe(value) for value in inputs) + ((settings,) if settings is not None else ())
    everyone: List[Any] = [None] * dist.get_world_size(group)
    _collective(who, dist.all_gather_object, everyone, mine, group=group)
    for rank, theirs in enumerate(everyone):
        if theirs != mine:
            raise ValueError(f"{who}: every rank must pass the same inputs and run the same softdtw_torch; rank "
                             f"{rank} has {theirs}, rank {dist.get_rank(group)} has {mine} (version, then each "
                             f"input's shape, dtype and device)")


def _raise_if_any_failed(share: _Share, error: Optional[BaseException]) -> None:
    """Every rank says whether its part failed; all raise the first failing rank's error. One small
    tensor collective when all succeeded (the barycenter asks at every evaluation), the messages
    exchanged only after a failure."""
    backend = dist.get_backend(share.group)
    device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
    failed = torch.tensor([0 if error is None else 1], dtype=torch.int32, device=device)
    _collective(share.who, dist.all_reduce, failed, op=dist.ReduceOp.MAX, group=share.group)
    if not int(failed.item()):
        return
    report = None if error is None else (type(error).__name__, str(error))
    reports: List[Any] = [None] * share.world
    _collective(share.who, dist.all_gather_object, reports, report, group=share.group)
    for rank, got in enumerate(reports):
        if got is None:
            continue
        if rank == share.rank and error is not None:
            raise error
        kind = {"ValueError": ValueError, "TypeError": TypeError}.get(got[0], RuntimeError)
        raise kind(f"{share.who}: rank {rank} failed ({got[0]}): {got[1]}")


def gather_chunks(share: _Share, mine: Sequence[Tensor], chunk_sizes: Sequence[int], like: Tensor) -> List[Tensor]:
    """Every chunk's values on every rank: each rank sends its chunks (one tensor, padded to the
    largest share), and chunk k is read from rank k mod world_size's part."""
    totals = [sum(size for k, size in enumerate(chunk_sizes) if k % share.world == r) for r in range(share.world)]
    longest = max(totals) if totals else 0
    mine_flat = torch.cat([like.new_empty((0,))] + list(mine))
    padded = torch.cat([mine_flat, like.new_zeros((longest - mine_flat.numel(),))])
    parts = [torch.empty_like(padded) for _ in range(share.world)]
    _collective(share.who, dist.all_gather, parts, padded.contiguous(), group=share.group)
    chunks, offsets = [], [0] * share.world
    for k, size in enumerate(chunk_sizes):
        r = k % share.world
        chunks.append(parts[r][offsets[r]: offsets[r] + size])
        offsets[r] += size
    return chunks


def _block_bounds(n_rows: int, world: int) -> List[int]:
    """Where each rank's contiguous block of ``n_rows`` rows starts and stops: rank r has rows
    ``bounds[r]:bounds[r + 1]`` (near-equal blocks, in rank order)."""
    return [int(b) for b in np.linspace(0, n_rows, world + 1).round().astype(int)]


def rows_by_rank(n_rows: int, row_shapes: Sequence[Sequence[int]], like: Tensor,
                 compute: Callable[[int, int], Sequence[Tensor]]) -> List[Tensor]:
    """``compute(0, n_rows)`` (tensors of ``n_rows`` rows each, of shapes ``(n_rows, *row_shapes[k])``
    and ``like``'s dtype and device), shared out when a call of this module is active: this rank
    computes its contiguous block of rows, every rank learns whether all blocks succeeded, and every
    block is gathered on every rank. A row's values must not depend on the other rows of its call,
    which holds for the per-pair soft-DTW kernels (each pair's DP runs alone, tested) and for the
    ROCKET transforms (each case alone). Used by the barycenter objective and by k-means."""
    share = active_share()
    if share is None:
        return list(compute(0, n_rows))
    bounds = _block_bounds(n_rows, share.world)
    lo, hi = bounds[share.rank], bounds[share.rank + 1]
    mine: List[Tensor] = []
    error = None
    try:
        if hi > lo:
            mine = [part.reshape(-1) for part in compute(lo, hi)]
    except Exception as caught:  # reported to every rank before any exchange
        error = caught
    _raise_if_any_failed(share, error)
    row_sizes = [int(np.prod(shape)) for shape in row_shapes]
    counts = [bounds[r + 1] - bounds[r] for r in range(share.world)]
    parts = gather_chunks(share, [torch.cat(mine)] if mine else [], [c * sum(row_sizes) for c in counts], like)
    columns: List[List[Tensor]] = [[] for _ in row_shapes]
    for part, count in zip(parts, counts):
        offset = 0
        for k, (shape, size) in enumerate(zip(row_shapes, row_sizes)):
            columns[k].append(part[offset: offset + count * size].reshape(count, *shape))
            offset += count * size
    return [torch.cat(blocks) for blocks in columns]


def pairs_in_chunks(share: _Share, compute_chunk: Any, n_pairs: int, chunk_size: int, like: Tensor) -> Tensor:
    """``functional._pairs_in_chunks`` under a share: this rank computes its chunks
    (``compute_chunk(start)``, the single-process call's batched call for the chunk starting at
    pair ``start``), every rank learns whether all parts succeeded, then every chunk's values are
    gathered on every rank, in the single-process order."""
    starts = list(range(0, n_pairs, chunk_size))
    sizes = [min(chunk_size, n_pairs - start) for start in starts]
    mine: List[Tensor] = []
    error = None
    try:
        for k, start in enumerate(starts):
            if share.owns(k):
                mine.append(compute_chunk(start))
    except Exception as caught:  # reported to every rank before any exchange
        error = caught
    _raise_if_any_failed(share, error)
    return torch.cat([like.new_empty((0,))] + gather_chunks(share, mine, sizes, like))
