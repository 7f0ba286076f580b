"""Data and comparison helpers shared by the MiniRocket, MultiRocket and Hydra tests."""
import os

import numpy as np
import pytest
import torch
from conftest import AEON_DATASETS

from softdtw_torch.datasets import load_ts


def load(name, split):
    """X of a data set aeon bundles (``<Name>_eq`` variants live in ``<Name>``'s folder); the test is
    skipped where aeon's data are not installed."""
    path = os.path.join(AEON_DATASETS or "", name.split("_")[0], f"{name}_{split}.ts")
    if not os.path.exists(path):
        pytest.skip(f"dataset {path} not available")
    X, _ = load_ts(path)
    return X


def bits(a):
    """float32 bit patterns, so that equality is bit for bit (and NaN == NaN, -0.0 != 0.0)."""
    a = a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    return a.astype(np.float32).view(np.uint32)


def random_walks(n, c, t, seed=0):
    return np.random.RandomState(seed).randn(n, c, t).cumsum(-1)
