"""Memory of each SoftDTW mode on the CPU, from the allocator's own events (torch.profiler with
profile_memory=True), against what docs/guarantees.md ("Fused and unfused modes", "memory" row of the
behaviour table) states; benchmarks/bench_memory.py measures the same at B=8, N=M=1024, d=64.

- fused: no (B, N, M) cost tensor, in forward or backward; with autograd the forward keeps one
  DP table for the backward (in float32 8 bytes per cell: each R as a pair hi + lo), and the
  backward allocates no (B, N, M) tensor; where the CPU runs the pairs in packs (at least as many
  pairs as threads, at most 512 steps) the forward computes each pair's gradient instead and keeps
  that, O(B·(N+M)·d), and no table;
- unfused: keeps the cost tensor and the DP table for the backward;
- checkpoint=True: keeps no (B, N, M) tensor between forward and backward;
- without autograd, the fused forward allocates no (B, N, M) tensor.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
from _memory_events import allocation_events  # noqa: E402
from conftest import run_at_threads  # noqa: E402

B, N, M, D = 2, 160, 130, 8
MATRIX = B * N * M * 4  # bytes of one float32 (B, N, M) tensor: the costs
TABLE = 2 * MATRIX  # the float32 DP table, (B, N, M, 2)


def _run(kwargs, grad):
    """(allocations of the forward, allocations of the backward, bytes held between them), each
    allocation as its signed size (negative: a free), from the profiler's CPU allocator events."""
    events, forward_end = allocation_events(kwargs, grad, B, N, M, D)
    assert events and forward_end is not None, "the profiler recorded no CPU allocation"
    forward = [n for t, n in events if t <= forward_end]
    backward = [n for t, n in events if t > forward_end]
    return forward, backward, sum(forward)


@pytest.mark.parametrize("threads", [B, 2 * B])
def test_fused_builds_no_cost_tensor_and_keeps_one_table_or_the_gradients(threads):
    forward, backward, held = run_at_threads(threads, lambda: _run(dict(fused=True), grad=True))
    big = [n for n in forward if n >= MATRIX]
    if threads <= B:  # packs: each pair's gradient, float64, is what the backward reads
        assert not big, big
        gradients = B * (N + M) * D * 8
        assert gradients <= held < gradients + MATRIX // 8
    else:
        assert big == [TABLE], big  # the DP table R, and no cost tensor
        assert TABLE <= held < TABLE + MATRIX // 8  # R kept for the backward (plus O(B·(N+M)))
    assert not [n for n in backward if n >= MATRIX]  # the backward writes no (B, N, M) tensor


def test_unfused_keeps_the_cost_tensor_and_the_table():
    forward, _, held = _run(dict(fused=False), grad=True)
    assert len([n for n in forward if n >= MATRIX]) >= 2
    assert MATRIX + TABLE <= held < MATRIX + TABLE + MATRIX // 8


def test_checkpoint_keeps_no_table_between_forward_and_backward():
    _, backward, held = _run(dict(checkpoint=True), grad=True)
    assert held < MATRIX // 8
    # On the CPU the backward reruns the whole forward, table included (docs/user_guide/softdtw.md: checkpoint).
    assert [n for n in backward if n >= TABLE]


@pytest.mark.parametrize("fused", [True, False])
def test_no_grad_forward(fused):
    forward, _, held = _run(dict(fused=fused), grad=False)
    big = [n for n in forward if n >= MATRIX]
    if fused:
        assert not big  # no table, no cost tensor: only O(B·(N+M)) buffers
    else:
        assert big  # the cost tensor is built, the DP table is not kept
    assert held < MATRIX // 8
