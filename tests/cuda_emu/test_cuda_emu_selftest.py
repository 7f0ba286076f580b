"""The CUDA emulator (tests/cuda_emu/cuda_emu.h) that runs the CUDA kernels' device code on the CPU:
its self-test program, compiled with the host C++ compiler, must pass (it needs no GPU)."""
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

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
