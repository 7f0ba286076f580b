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
from .neighbors import KNeighborsTimeSeriesClassifier, KNeighborsTimeSeriesRegressor
from .barycenter import softdtw_barycenter
from ._base import NotFittedError
from .clustering import SoftDTWKMeans
from .nn import DILATELoss, SharpSoftDTW, SoftDTW
from . import rocket  # noqa: F401  (ROCKET and MiniRocket: softdtw_torch.rocket.*)


def release_table_memory() -> int:
    """Frees the memory the CPU kernels keep from the last freed big table (one block, of a SoftDTW
    DP table or MiniRocket, MultiRocket or Hydra features of 1 MiB or more) for the next table of
    the same size; returns its size in bytes (0 when none was kept). Keeping it spares each call
    the page faults of a fresh table (README, "Memory"); ``SOFTDTW_TORCH_KEEP_TABLE_MEMORY=0`` in
    the environment turns keeping off."""
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
    "KNeighborsTimeSeriesClassifier",
    "KNeighborsTimeSeriesRegressor",
    "SoftDTW",
    "SharpSoftDTW",
    "DILATELoss",
    "softdtw_barycenter",
    "SoftDTWKMeans",
    "NotFittedError",
    "info",
    "release_table_memory",
    "ExtensionLoadError",
    "TorchVersionMismatchWarning",
    "__version__",
]
