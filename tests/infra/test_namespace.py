"""The public namespace: what `import softdtw_torch` loads, what it exports, and `__all__` in every
public module."""
import importlib
import inspect
import subprocess
import sys

import pytest
import torch

import softdtw_torch

PUBLIC_MODULES = ["softdtw_torch", "softdtw_torch.functional", "softdtw_torch.metrics", "softdtw_torch.nn",
                  "softdtw_torch.barycenter", "softdtw_torch.clustering", "softdtw_torch.neighbors",
                  "softdtw_torch.rocket", "softdtw_torch.datasets", "softdtw_torch.plot", "softdtw_torch.tslearn",
                  "softdtw_torch.pysdtw", "softdtw_torch.pysdtw.distance", "softdtw_torch.soft_dtw_cuda",
                  "softdtw_torch.aeon"]


def test_import_loads_neither_scikit_learn_nor_the_optional_packages():
    # Only what torch itself does not import (torch imports tqdm, through torch.hub).
    code = ("import sys, torch; before = set(sys.modules); import softdtw_torch; "
            "print(sorted(m for m in ('sklearn', 'scipy', 'matplotlib', 'tqdm', 'aeon', 'tslearn', 'numba') "
            "if m in sys.modules and m not in before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_module_declares_all_and_defines_it(module):
    mod = importlib.import_module(module)
    assert hasattr(mod, "__all__"), module
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert not missing, (module, missing)


def test_every_public_estimator_and_layer_is_exported_at_the_top_level():
    rocket = importlib.import_module("softdtw_torch.rocket")
    estimators = {name for name in rocket.__all__ if inspect.isclass(getattr(rocket, name))
                  and (hasattr(getattr(rocket, name), "fit") or issubclass(getattr(rocket, name), torch.nn.Module))}
    # The scikit-learn mirrors (RidgeClassifierCV, RidgeCV, the scalers) stay in softdtw_torch.rocket,
    # where they cannot be mistaken for scikit-learn's own classes; RocketKernels is a data holder.
    mirrors = {"RidgeClassifierCV", "RidgeCV", "StandardScaler", "SparseScaler", "RocketKernels"}
    assert estimators - mirrors <= set(softdtw_torch.__all__), sorted(estimators - mirrors - set(softdtw_torch.__all__))
    for name in ("KNeighborsTimeSeriesClassifier", "KNeighborsTimeSeriesRegressor", "SoftDTWKMeans",
                 "SoftDTW", "SharpSoftDTW", "DILATELoss", "NotFittedError"):
        assert name in softdtw_torch.__all__
    for name in softdtw_torch.__all__:
        assert getattr(softdtw_torch, name) is not None
    assert softdtw_torch.RocketClassifier is rocket.RocketClassifier


def test_submodules_are_attributes_and_unknown_names_raise_attribute_error():
    assert softdtw_torch.plot.plot_alignment is importlib.import_module("softdtw_torch.plot").plot_alignment
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        softdtw_torch.NoSuchThing  # noqa: B018
    assert "RocketClassifier" in dir(softdtw_torch)
