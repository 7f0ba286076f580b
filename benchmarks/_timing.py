"""Timing shared by the benchmarks: one wall-clock loop for the CPU (read as a median or a minimum),
and one of CUDA events for the GPU."""
import statistics
import time
from typing import Any, Callable, List, Optional, Tuple, Union


def timed_calls(call: Callable[..., Any], repeats: int, warm_up: Union[bool, Callable[[], Any]] = True,
                inputs: Optional[Callable[[], tuple]] = None) -> Tuple[List[float], Any]:
    """Seconds of each of `repeats` calls, and the last call's result.

    warm_up: True runs call() once untimed first (numba's JIT, torch's allocator); a function runs
    that instead (a cheaper call with the same effect); False runs nothing. inputs: a function
    whose tuple is made, untimed, before every call (the warm-up's too) and passed to it (fresh
    leaf tensors for a backward)."""
    def run():
        return call(*inputs()) if inputs is not None else call()

    result = None
    if warm_up is True:
        result = run()
    elif callable(warm_up):
        warm_up()
    times = []
    for _ in range(repeats):
        args = inputs() if inputs is not None else ()
        start = time.perf_counter()
        result = call(*args)
        times.append(time.perf_counter() - start)
    return times, result


def cuda_timed_calls(call: Callable[[], Any], repeats: int) -> Tuple[List[float], Any]:
    """Seconds of each of `repeats` calls of call() on the GPU, measured by CUDA events around it,
    after one untimed warm-up call (module load, allocator); and the last call's result."""
    import torch

    result = call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        result = call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return times, result


def median_seconds(call: Callable[[], Any], repeats: int) -> float:
    """The median of `repeats` timed calls of call(), after one untimed warm-up call."""
    return statistics.median(timed_calls(call, repeats)[0])


def best_seconds(call: Callable[[], Any], repeats: int) -> float:
    """The fastest of `repeats` timed calls of call(), after one untimed warm-up call: for a machine
    whose speed drifts between seconds, read next to ceilings that are best-of too."""
    return min(timed_calls(call, repeats)[0])
