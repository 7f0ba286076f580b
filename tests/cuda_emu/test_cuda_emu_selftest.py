"""The CUDA emulator (tests/cuda_emu/cuda_emu.h) that runs the CUDA kernels' device code on the CPU:
its self-test program, compiled with the host C++ compiler, must pass (it needs no GPU)."""
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

# slow: the emulator's self-tests, built with the sanitizers (4-9 s a test)
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent


def _compiler():
    command = shlex.split(os.environ.get("CXX", "g++"))
    if not command or shutil.which(command[0]) is None:
        pytest.skip(f"no C++ compiler: {command[0] if command else '$CXX is empty'} not found")
    return command


def test_cuda_emu_selftest(tmp_path):
    compiler = _compiler()
    exe = tmp_path / "cuda_emu_selftest"
    build = subprocess.run(
        [*compiler, "-std=c++20", "-O1", "-pthread", str(HERE / "selftest.cpp"), "-o", str(exe)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, f"compiling selftest.cpp failed:\n{build.stdout}\n{build.stderr}"
    # The self-test sets the CUDA_EMU_* variables it needs itself.
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_EMU_")}
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, env=env)
    report = f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    assert run.returncode == 0, report
    assert re.search(r"^cuda_emu selftest: all \d+ checks passed", run.stdout, re.MULTILINE), report


# Racecheck's own cases (racecheck_cases.cpp): ThreadSanitizer must report a race exactly where CUDA
# orders nothing between the two accesses.
RACE_CASES = {
    "across_warps_racy": True,  # warp 0 writes shared memory that warp 1 reads, no barrier
    "across_warps_barrier": False,  # the same with __syncthreads between
    "neighbour_racy": True,  # lanes read their neighbour's shared word, nothing between
    "neighbour_syncwarp": False,  # the same with __syncwarp between
    "neighbour_shuffle": True,  # a shuffle between: it exchanges a value, orders no memory
    "same_global_word": True,  # every thread writes one global word
    "blocks_same_word": True,  # two blocks of one launch write one global word
    "launches_in_order": False,  # one launch writes, the next reads
}


def test_racecheck_reports_exactly_the_unordered_accesses(tmp_path):
    compiler = _compiler()
    exe = tmp_path / "racecheck_cases"
    build = subprocess.run(
        [*compiler, "-std=c++20", "-O1", "-g", "-pthread", "-fsanitize=thread", str(HERE / "racecheck_cases.cpp"),
         "-o", str(exe)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, f"compiling racecheck_cases.cpp with -fsanitize=thread failed:\n{build.stderr}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_EMU_")}
    env["TSAN_OPTIONS"] = "exitcode=66"
    for case, racy in RACE_CASES.items():
        run = subprocess.run([str(exe), case], capture_output=True, text=True, timeout=120, env=env)
        reported = "WARNING: ThreadSanitizer: data race" in run.stderr
        assert reported == racy and run.returncode == (66 if racy else 0), f"{case}:\n{run.stdout}\n{run.stderr}"
        assert f"case {case} ran" in run.stdout, f"{case}:\n{run.stdout}\n{run.stderr}"
