"""softdtw-torch: SoftDTW (and, soon, ROCKET) as PyTorch C++/CUDA operators.

Every operator is registered with the dispatcher as ``torch.ops.softdtw_torch.*``, so it works in
eager mode, under autograd, in TorchScript, with ``torch.compile`` and from C++.
"""
from . import _ops  # noqa: F401  (loads the compiled operators and registers their fake kernels)
from .functional import (
    cdist_soft_dtw,
    pairwise_cost,
    soft_dtw,
    soft_dtw_alignment,
    soft_dtw_alignment_from_cost,
    soft_dtw_from_cost,
)
from .barycenter import SoftDTWKMeans, softdtw_barycenter
from .nn import SoftDTW
from . import rocket  # noqa: F401  (ROCKET: registers its fake kernels; softdtw_torch.rocket.*)

__version__ = "0.1.0"
__all__ = [
    "soft_dtw",
    "soft_dtw_from_cost",
    "soft_dtw_alignment",
    "soft_dtw_alignment_from_cost",
    "pairwise_cost",
    "cdist_soft_dtw",
    "SoftDTW",
    "softdtw_barycenter",
    "SoftDTWKMeans",
    "__version__",
]
