"""benchmarks/gpu_check.sh runs only where a GPU is lent, a few times in the project's life: these
tests keep it from rotting in between, on the CPU. Its shell parses, and its compute-sanitizer
workload, moved to the CPU, makes only calls that exist and accept its arguments (a GPU session
found the script's own harness build broken once; the harness's nvcc build is
tests/cuda_emu/test_harness.py's)."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_check.sh"


def sanitizer_workload():
    """The Python program gpu_check.sh runs under each compute-sanitizer tool."""
    text = SCRIPT.read_text()
    return text.split("sanitize_case='", 1)[1].split("'\n", 1)[0]


def test_the_script_parses():
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # 6-7 s
def test_the_sanitizer_workload_runs_on_the_cpu():
    workload = sanitizer_workload()
    assert "sanitizer workload done" in workload and workload.count('device="cuda"') >= 5
    on_cpu = (workload.replace('device="cuda"', 'device="cpu"').replace(".cuda()", "")
              .replace("torch.cuda.synchronize()", "pass"))
    assert "cuda" not in on_cpu  # nothing left that needs a GPU
    done = subprocess.run([sys.executable, "-c", on_cpu], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.strip().endswith("sanitizer workload done")
