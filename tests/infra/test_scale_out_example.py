"""examples/scale_out.py, run as a user runs it: on a LocalCluster of 2 Dask workers and on 2
spawned gloo ranks, each of its five operations on GunPoint reported with the single-process
bits."""
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scale_out.py"

pytestmark = pytest.mark.slow  # starts a cluster or a process group of processes that import torch: 20-40 s


@pytest.mark.parametrize("engine", ["dask", "torch"])
def test_the_example_reproduces_one_process_on_each_engine(engine):
    if engine == "dask":
        pytest.importorskip("distributed", reason="dask.distributed is not installed (requirements-dev.txt)")
    run = subprocess.run([sys.executable, str(EXAMPLE), "--engine", engine, "--workers", "2"], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    lines = [line for line in run.stdout.splitlines() if "same bits as one process" in line]
    assert len(lines) == 5 and all(line.endswith("True") for line in lines), run.stdout
