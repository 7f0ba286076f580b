"""The test budget of tests/budget.py, run on a small suite of its own in a fresh pytest: an unmarked
case over the limit fails with its time, a slow-marked one and a fast one pass."""
import os
import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

SUITE = '''
import time

import pytest


def test_fast():
    pass


def test_over_the_limit_unmarked():
    time.sleep(0.6)


@pytest.mark.slow
def test_over_the_limit_marked_slow():
    time.sleep(0.6)


def test_failing_on_its_own():
    assert False, "its own failure"
'''


def run_suite(tmp_path, limit):
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = dict(os.environ, SOFTDTW_TORCH_SLOW_LIMIT_S=limit, PYTHONPATH=str(TESTS))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "budget", "-p", "no:cacheprovider", "-rA",
                           "-o", "markers=slow: slow", str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    return done.stdout


def test_an_unmarked_case_over_the_limit_fails(tmp_path):
    out = run_suite(tmp_path, "0.3")
    assert "PASSED test_suite.py::test_fast" in out, out
    assert "PASSED test_suite.py::test_over_the_limit_marked_slow" in out, out
    assert "FAILED test_suite.py::test_over_the_limit_unmarked" in out, out
    assert re.search(r"test_over_the_limit_unmarked passed but took \d+\.\d s, over the 0.3 s limit", out), out
    assert "FAILED test_suite.py::test_failing_on_its_own" in out and "its own failure" in out, out
    assert "2 failed, 2 passed" in out, out
    assert "softdtw-torch test budget: the cases without the slow mark took" in out, out


def test_limit_zero_turns_the_check_off(tmp_path):
    out = run_suite(tmp_path, "0")
    assert "PASSED test_suite.py::test_over_the_limit_unmarked" in out and "1 failed, 3 passed" in out, out
