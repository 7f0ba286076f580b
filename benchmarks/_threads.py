"""Thread settings shared by the CPU benchmarks. numba and OpenMP read their thread-pool sizes
once, at import, so ``--threads`` (and ``--numba-threading-layer``) are applied to the environment
before torch or numba is imported."""
import argparse
import os


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def set_thread_env_from_argv() -> None:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--threads", type=int, default=available_cores())
    pre.add_argument("--numba-threading-layer", default=None)
    known = pre.parse_known_args()[0]
    for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(known.threads)
    if known.numba_threading_layer:
        os.environ["NUMBA_THREADING_LAYER"] = known.numba_threading_layer


def cpu_model() -> str:
    """The CPU (vendor, model name, family and model) and the vector path each of our CPU kernel
    families runs (softdtw_torch.info(): measured, the widest the CPU runs, or capped by
    SOFTDTW_TORCH_CPU_PATH), for benchmark headers."""
    from softdtw_torch._info import cpu_description, cpu_paths

    paths = cpu_paths() or {}
    named = ", ".join(f"{kernel} {line.split(' ')[0]}" for kernel, line in paths.items())
    capped = os.environ.get("SOFTDTW_TORCH_CPU_PATH")
    return (f"{cpu_description()}; vector paths: {named or 'unknown (extension not loaded)'}"
            + (f" (capped by SOFTDTW_TORCH_CPU_PATH={capped})" if capped else ""))
