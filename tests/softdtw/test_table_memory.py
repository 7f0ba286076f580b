"""The CPU keeps one freed DP table's block for the next table of its size
(csrc/common/table_memory.h; docs/design/softdtw.md §9, "The table's pages"; MiniRocket's,
MultiRocket's and Hydra's features use it too: tests/rocket/test_minirocket.py, test_multirocket.py,
test_hydra.py).

What must hold: a live table never shares memory with another; results are the same bits whether
the block is new or kept; at most one block is kept, freed by release_table_memory(); tables under
1 MiB are left to the allocator; SOFTDTW_TORCH_KEEP_TABLE_MEMORY=0 turns keeping off.
"""
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import torch

import softdtw_torch as st

OPS = torch.ops.softdtw_torch


def inputs(B=4, N=128, M=160, d=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, N, d, generator=g), torch.randn(B, M, d, generator=g)


def table(x, y):
    """The fused forward's values and DP table (float32: (B, N, M, 2), 8 bytes a cell)."""
    return OPS._soft_dtw_fused_forward(x, y, 1.0, None, None, None, None, "table")[:2]


def test_a_freed_table_block_serves_the_next_table_of_its_size():
    x, y = inputs(B=8)  # 8·128·160 cells of 8 bytes: 1.25 MiB
    st.release_table_memory()
    v1, R1 = table(x, y)
    assert R1.nbytes >= 1 << 20
    address, R1_copy = R1.data_ptr(), R1.clone()
    del R1  # its block is kept ...
    v2, R2 = table(x, y)  # ... and taken by the next table of its size: none is kept now
    assert st.release_table_memory() == 0
    assert R2.data_ptr() == address
    torch.testing.assert_close(v2, v1, rtol=0, atol=0)
    torch.testing.assert_close(R2, R1_copy, rtol=0, atol=0)
    del R2
    assert st.release_table_memory() == R1_copy.nbytes
    assert st.release_table_memory() == 0


def test_live_tables_never_share_memory():
    x, y = inputs(B=8)
    _, R1 = table(x, y)
    _, R2 = table(x, y)
    _, R3 = table(x, y)
    starts = {R.data_ptr() for R in (R1, R2, R3)}
    assert len(starts) == 3
    ranges = sorted((R.data_ptr(), R.data_ptr() + R.nbytes) for R in (R1, R2, R3))
    assert all(end <= next_start for (_, end), (next_start, _) in zip(ranges, ranges[1:]))
    torch.testing.assert_close(R2, R1, rtol=0, atol=0)
    torch.testing.assert_close(R3, R1, rtol=0, atol=0)


def test_one_block_at_most_and_of_the_last_freed_table():
    st.release_table_memory()
    x, y = inputs(B=8)
    x2, y2 = inputs(B=16)
    _, R_small = table(x, y)
    _, R_big = table(x2, y2)
    small, big = R_small.nbytes, R_big.nbytes
    del R_small, R_big  # the big one is freed last: it replaces the small one
    assert st.release_table_memory() == big
    assert st.release_table_memory() == 0
    _, R_small = table(x, y)
    del R_small
    _, R_big = table(x2, y2)  # another size: the kept block is freed, a new one allocated
    assert st.release_table_memory() == 0
    del R_big
    assert st.release_table_memory() == big
    assert small != big


def test_small_tables_are_left_to_the_allocator():
    st.release_table_memory()
    x, y = inputs(B=2, N=32, M=32)
    _, R = table(x, y)
    assert R.nbytes < 1 << 20
    del R
    assert st.release_table_memory() == 0


def test_training_steps_reusing_the_block_give_the_same_bits():
    # forward + backward frees the table at the end of the backward; the next step reuses it
    x, y = inputs(B=8)
    grads, values = [], []
    for _ in range(3):
        leaf = x.clone().requires_grad_(True)
        v = st.soft_dtw(leaf, y, gamma=0.1)
        v.sum().backward()
        values.append(v.detach())
        grads.append(leaf.grad)
    for v, g in zip(values[1:], grads[1:]):
        torch.testing.assert_close(v, values[0], rtol=0, atol=0)
        torch.testing.assert_close(g, grads[0], rtol=0, atol=0)


def test_concurrent_calls_from_threads_get_their_own_tables():
    # Python threads calling the op at once (the op releases the GIL): tables taken and kept
    # concurrently must never alias, or some result would be another call's.
    shapes = [(8, 128, 160), (8, 160, 128), (12, 128, 128)]
    data = [inputs(B, N, M, seed=k) for k, (B, N, M) in enumerate(shapes)]
    with torch.no_grad():
        expected = [OPS._soft_dtw_fused_forward(x, y, 1.0, None, None, None, None, "nothing")[0] for x, y in data]

    def work(k):
        x, y = data[k % len(data)]
        leaf = x.clone().requires_grad_(True)
        v = st.soft_dtw(leaf, y, gamma=1.0)
        v.sum().backward()
        return k % len(data), v.detach(), leaf.grad

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(work, range(24)))
    finally:
        torch.set_num_threads(threads)
    grads = {}
    for k, v, g in results:
        torch.testing.assert_close(v, expected[k], rtol=0, atol=0)
        if k in grads:
            torch.testing.assert_close(g, grads[k], rtol=0, atol=0)
        grads[k] = g


def test_keeping_turned_off_by_the_environment():
    code = textwrap.dedent("""
        import torch, softdtw_torch as st
        g = torch.Generator().manual_seed(0)
        x, y = torch.randn(8, 128, 3, generator=g), torch.randn(8, 160, 3, generator=g)
        v, R, _ = torch.ops.softdtw_torch._soft_dtw_fused_forward(x, y, 1.0, None, None, None, None, "table")
        assert R.nbytes >= 1 << 20
        del R
        print(st.release_table_memory())
    """)
    env = dict(os.environ, SOFTDTW_TORCH_KEEP_TABLE_MEMORY="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"
