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
