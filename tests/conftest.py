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


def _aeon_datasets_dir() -> str:
    """The UCR/UEA .ts files the ROCKET tests read: $AEON_DATASETS, else the project's shared copy
    beside the checkout, else the copy aeon (a test dependency) ships inside its package."""
    import os

    if os.environ.get("AEON_DATASETS"):
        return os.environ["AEON_DATASETS"]
    shared = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "aeon-datasets")
    if os.path.isdir(shared):
        return shared
    import aeon.datasets

    return os.path.join(os.path.dirname(aeon.datasets.__file__), "data")


AEON_DATASETS = _aeon_datasets_dir()
