import importlib.util
import os
from typing import Optional

import pytest
import torch

import softdtw_torch  # noqa: F401  (registers the operators)

HAS_CUDA = torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    # GPU tests are visibly skipped, never silently dropped, on machines without CUDA.
    skip_cuda = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "needs_cuda" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_cuda)


# Parametrise a test over devices: the CUDA case is marked needs_cuda and reported as skipped without a GPU.
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.needs_cuda)]


def _aeon_bundled_datasets() -> Optional[str]:
    """The folder of UCR/UEA datasets that aeon ships inside its package, or None without aeon.

    Provenance: the ROCKET/MiniRocket parity tests (and the dataset, barycenter and k-means tests
    that read real data) use exactly the ``.ts`` files aeon's own loaders read,
    ``os.path.join(os.path.dirname(aeon.datasets.__file__), "data")`` (UnitTest, GunPoint,
    ItalyPowerDemand, ArrowHead, OSULeaf, ACSF1, BasicMotions, JapaneseVowels, ...: copies of the
    UCR/UEA archive, timeseriesclassification.com, distributed with aeon). aeon is a test
    dependency (requirements-dev.txt), so a fresh clone needs nothing beside it, and the data are
    by construction the ones aeon's features are computed from. The folder is located without
    importing aeon (importing it takes a second and is only needed by the tests that use it);
    tests/infra/test_datasets.py checks that it is the folder named above.
    """
    spec = importlib.util.find_spec("aeon")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "datasets", "data")


# None when aeon is not installed: tests that read these files then skip (needs_aeon_data) or,
# for the ROCKET parity tests, fail at their own `import aeon`.
AEON_DATASETS = _aeon_bundled_datasets()
needs_aeon_data = pytest.mark.skipif(
    AEON_DATASETS is None, reason="needs aeon's bundled datasets (pip install aeon; see requirements-dev.txt)")
