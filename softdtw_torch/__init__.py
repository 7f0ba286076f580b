"""softdtw-torch: SoftDTW, ROCKET and MiniRocket as PyTorch C++/CUDA operators.

Every operator is registered with the dispatcher as ``torch.ops.softdtw_torch.*``, so it works in
eager mode, under autograd, in TorchScript, with ``torch.compile`` and from C++.
"""
from ._version import __version__
from ._info import ExtensionLoadError, TorchVersionMismatchWarning, info
from . import _info

try:
    # Loads the compiled operators (ExtensionLoadError, naming the torch versions and how to
    # rebuild, when they cannot load) and registers their fake kernels.
    from . import _ops  # noqa: F401
except ExtensionLoadError:
    if not _info.invoked_as_info_cli():
        raise
    # `python -m softdtw_torch --info` reports a broken extension instead of dying of it.
    raise SystemExit(_info.main())
from .functional import (
    cdist_soft_dtw,
    dilate,
    pairwise_cost,
    soft_dtw,
    soft_dtw_alignment,
    soft_dtw_alignment_from_cost,
    soft_dtw_from_cost,
    soft_dtw_sharp,
    soft_dtw_sharp_from_cost,
)
from .metrics import cdist_dtw, dtw, dtw_path, gamma_soft_dtw, lb_envelope, lb_keogh
from .barycenter import softdtw_barycenter
from .nn import DILATELoss, SharpSoftDTW, SoftDTW
from ._memory import memory_limit, set_memory_limit

# The estimators (and the submodules that define them) import scikit-learn, which takes longer to
# import than the rest of the package: they load on first use (PEP 562), so that `import
# softdtw_torch` costs little beyond `import torch` (tests/infra/test_namespace.py measures it).
_LAZY = {
    "KNeighborsTimeSeriesClassifier": "neighbors",
    "KNeighborsTimeSeriesRegressor": "neighbors",
    "SoftDTWKMeans": "clustering",
    "NotFittedError": "_base",
    **{name: "rocket" for name in (
        "Rocket", "MiniRocket", "MultiRocket", "HydraTransformer", "RocketLayer", "HydraLayer",
        "RocketClassifier", "MiniRocketClassifier", "MultiRocketClassifier", "HydraClassifier",
        "MultiRocketHydraClassifier", "RocketRegressor", "MiniRocketRegressor", "MultiRocketRegressor",
        "HydraRegressor", "MultiRocketHydraRegressor")},
}
# Submodules reachable as attributes (`softdtw_torch.plot.plot_alignment`) without an import.
_SUBMODULES = ("functional", "metrics", "nn", "barycenter", "clustering", "neighbors", "rocket", "datasets", "plot",
               "tslearn", "pysdtw", "soft_dtw_cuda", "aeon")


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups find it directly
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


def release_table_memory() -> int:
    """Free the memory the CPU kernels keep from the last freed big table, for the next table of its size.

    The block kept is one block, of a SoftDTW DP table or MiniRocket, MultiRocket or Hydra features
    of 1 MiB or more. Keeping it spares each call the page faults of a fresh table (docs/user_guide/softdtw.md,
    ``release_table_memory``); ``SOFTDTW_TORCH_KEEP_TABLE_MEMORY=0`` in the environment turns keeping off.

    Returns
    -------
    int
        The size in bytes of the block freed (0 when none was kept).

    Examples
    --------
    >>> import softdtw_torch as st
    >>> freed = st.release_table_memory()
    >>> freed >= 0
    True
    >>> st.release_table_memory()  # nothing is kept any more
    0
    """
    return _ops._C.release_table_memory()

__all__ = [
    "soft_dtw",
    "soft_dtw_from_cost",
    "soft_dtw_alignment",
    "soft_dtw_alignment_from_cost",
    "soft_dtw_sharp",
    "soft_dtw_sharp_from_cost",
    "dilate",
    "pairwise_cost",
    "cdist_soft_dtw",
    "dtw",
    "dtw_path",
    "cdist_dtw",
    "gamma_soft_dtw",
    "lb_envelope",
    "lb_keogh",
    "SoftDTW",
    "SharpSoftDTW",
    "DILATELoss",
    "softdtw_barycenter",
    *_LAZY,
    "info",
    "release_table_memory",
    "set_memory_limit",
    "memory_limit",
    "ExtensionLoadError",
    "TorchVersionMismatchWarning",
    "__version__",
]
