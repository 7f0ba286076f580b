"""The CPU allocator's events during one SoftDTW call, from torch.profiler: shared by
benchmarks/bench_memory.py (the numbers of docs/guarantees.md) and tests/softdtw/test_memory.py (its
statements at a small size), so both read memory the same way."""
import torch
from torch._C._profiler import _EventType
from torch.profiler import ProfilerActivity, profile, record_function

import softdtw_torch as st


def allocation_events(kwargs, grad, B, N, M, d):
    """Runs ``soft_dtw(x, y, gamma=1, **kwargs).sum()`` (and its backward when ``grad``) on random
    float32 x (B, N, d), y (B, M, d), once unprofiled as a warm-up, then once under the profiler.
    Returns the (time ns, signed bytes) of every CPU allocation (negative: a free) of the profiled
    call, in time order, and the end time of its forward (None when not recorded). x and y are
    allocated before the profile, so they are not counted."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, N, d, generator=g).requires_grad_(grad)
    y = torch.randn(B, M, d, generator=g).requires_grad_(grad)

    def step():
        with torch.set_grad_enabled(grad):
            with record_function("forward"):
                loss = st.soft_dtw(x, y, gamma=1.0, **kwargs).sum()
            if grad:
                loss.backward()

    step()  # warm-up: thread pools, lazily allocated buffers
    x.grad = y.grad = None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events, forward_end = [], None
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        e = stack.pop()
        stack.extend(e.children)
        if e.tag == _EventType.Allocation and str(e.extra_fields.device) == "cpu":
            events.append((e.start_time_ns, e.extra_fields.alloc_size))
        elif e.name == "forward":
            forward_end = e.end_time_ns
    events.sort()
    return events, forward_end
