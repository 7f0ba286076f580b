import os
import shutil
import tempfile

import pytest
import torch

import softdtw_torch  # noqa: F401  (registers the operators)
from softdtw_torch.datasets import aeon_datasets_dir

HAS_CUDA = torch.cuda.is_available()


# torch.compile's on-disk caches (TorchInductor's FX graph cache, the AOTAutograd cache) key on the
# graph and torch, not on this extension's build: a graph cached by another build of softdtw-torch
# whose fake kernels give other shapes fails to load ("wrong number of dimensions", "mismatch in
# length of strides and shape"). The tests compile into a cache of their own, removed at the end.
_INDUCTOR_CACHE = tempfile.mkdtemp(prefix="softdtw-torch-tests-inductor-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = _INDUCTOR_CACHE


def pytest_unconfigure(config):
    shutil.rmtree(_INDUCTOR_CACHE, ignore_errors=True)


# The test budget: unmarked cases over the time limit fail (tests/budget.py).
pytest_plugins = ["budget"]


# The C++ (CMake) build's test module, when its tests were selected (see below).
_cmake_tests = None


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(config, items):
    global _cmake_tests
    # GPU tests are visibly skipped, never silently dropped, on machines without CUDA.
    skip_cuda = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "needs_cuda" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_cuda)
    # The CMake build of tests/infra/test_cpp.py compiles for minutes from a cold cache: it starts
    # now, in the background at the lowest CPU priority, and its tests run last, so that it
    # compiles on the cores the other tests leave idle.
    cmake = [item for item in items if item.path.name == "test_cpp.py" and item.path.parent.name == "infra"]
    if cmake and not config.option.collectonly:
        items[:] = [item for item in items if item not in cmake] + cmake
        _cmake_tests = cmake[0].module
        _cmake_tests.start_background_build()


def pytest_sessionfinish(session):
    if _cmake_tests is not None:
        _cmake_tests.stop_background_build()


# Parametrise a test over devices: the CUDA case is marked needs_cuda and reported as skipped without a GPU.
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.needs_cuda)]


# The UCR/UEA .ts files the tests read (beside the packaged GunPoint): the copies aeon ships inside
# its package, the files its own loaders read, so parity tests and aeon see the same data; aeon is
# a test dependency (requirements-dev.txt), so a fresh clone needs nothing beside it.
# tests/infra/test_datasets.py checks the folder. None when aeon is not installed: tests that read
# these files then skip (needs_aeon_data) or, for the ROCKET parity tests, fail at their own
# `import aeon`.
AEON_DATASETS = aeon_datasets_dir()
needs_aeon_data = pytest.mark.skipif(
    AEON_DATASETS is None, reason="needs aeon's bundled datasets (pip install aeon; see requirements-dev.txt)")


def run_at_threads(threads, function):
    """function() with torch at `threads` threads; the caller's count restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return function()
    finally:
        torch.set_num_threads(before)


# The CPU kernels' vector paths this machine runs (csrc/common/cpu.h), narrowest first: each path
# capped in turn, the one MiniRocket's counting then takes (the only family with all three).
def _runnable_cpu_paths():
    from softdtw_torch import _C, _info

    runnable = []
    try:
        for path in ("portable", "avx2", "avx512"):
            _C.set_cpu_path_cap(path)
            if _info.cpu_paths()["minirocket"].split(" ")[0] == path:
                runnable.append(path)
    finally:
        _C.set_cpu_path_cap(None)
    return runnable


CPU_PATHS = _runnable_cpu_paths()


@pytest.fixture(params=CPU_PATHS)
def cpu_path(request):
    """Runs the test with every CPU kernel capped at each path this machine runs (all of them give
    the same bits: the tests that take this fixture check it against independent references)."""
    from softdtw_torch import _C

    _C.set_cpu_path_cap(request.param)
    try:
        yield request.param
    finally:
        _C.set_cpu_path_cap(None)
