"""The test budget (CONTRIBUTING.md, "The test budget"), a pytest plugin that tests/conftest.py loads.

A case whose call takes more than about five seconds on the 2-core CI machine, on a first run
included (numba's first compile, a build without the compiler cache), carries @pytest.mark.slow, so
that the inner loop (`bash scripts/test.sh -m "not slow"`) stays under five minutes on a built tree
as the suite grows. An unmarked case whose call takes more than SLOW_LIMIT_S (three times that, for
a noisy machine) fails with its time. Only the call counts, not the setup: a module's shared builds
(emulator, harness, CMake) are paid once, in its first case's setup, and cached by ccache across
runs. SOFTDTW_TORCH_SLOW_LIMIT_S overrides the limit (0 turns the check off, e.g. under a debugger or
on a much slower machine). At the end, the unmarked cases' total time is printed beside the inner
loop's budget.
"""
import os

import pytest

SLOW_LIMIT_S = float(os.environ.get("SOFTDTW_TORCH_SLOW_LIMIT_S", "15"))
INNER_LOOP_BUDGET_S = 300
_unmarked_seconds = 0.0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    global _unmarked_seconds
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("slow") is not None:
        return
    _unmarked_seconds += report.duration
    if call.when == "call" and report.passed and SLOW_LIMIT_S > 0 and report.duration > SLOW_LIMIT_S:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} passed but took {report.duration:.1f} s, over the {SLOW_LIMIT_S:g} s "
                           "limit for a test without @pytest.mark.slow: mark it slow, or make its case smaller "
                           "while it still checks what it is for (tests/budget.py)")


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(
        f"softdtw-torch test budget: the cases without the slow mark took {_unmarked_seconds:.0f} s (setup, call "
        f"and teardown) of the inner loop's {INNER_LOOP_BUDGET_S} s; an unmarked case over {SLOW_LIMIT_S:g} s fails")
