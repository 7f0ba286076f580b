"""Wall-clock timing shared by the CPU benchmarks."""
import statistics
import time


def median_seconds(call, repeats):
    """The median of `repeats` timed calls of call(), after one untimed warm-up call (numba's JIT,
    torch's allocator)."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
