"""pysdtw's API on softdtw-torch's kernels: ``import softdtw_torch.pysdtw as pysdtw`` in place of
``import pysdtw``, and pysdtw's documented usage runs unchanged (tests/compat/test_pysdtw_dropin.py).

``SoftDTW(gamma=1.0, dist_func=None, use_cuda=True, bandwidth=None)`` returns the (B,) soft-DTW
values of ``X`` (B, N, d) and ``Y`` (B, M, d), tensors or PackedSequences, differentiable w.r.t.
both, with pysdtw's band (``bandwidth``: the shorter series' index stretched to the longer's
scale, a cell kept when ``|i − j|`` <= bandwidth on that scale; ``None`` or 0: none) and its
``dist_func(x, y) -> (B, N, M)`` (``distance.pairwise_l2_squared`` by default). Differences, each
deliberate:

- ``use_cuda`` is accepted and not needed: the computation runs on the inputs' device, as every
  torch module's (pysdtw's ``use_cuda=True`` fails on CPU tensors).
- Values are computed in the inputs' dtype (float64 stays float64; pysdtw rounds its table to
  float32), so they agree with pysdtw's to float32 rounding.
- Without ``dist_func`` and without a band, the squared Euclidean cost is fused into the kernel (no
  (B, N, M) tensor, the exact ||x_i − y_j||² instead of the expansion).
"""
from typing import Callable, Optional

from .._compat import CompatSoftDTW
from . import distance  # noqa: F401  (pysdtw.distance.pairwise_l2_squared)

__all__ = ["SoftDTW", "distance"]


class SoftDTW(CompatSoftDTW):
    """pysdtw's ``SoftDTW`` (see the module docstring)."""

    def __init__(self, gamma: float = 1.0, dist_func: Optional[Callable] = None, use_cuda: bool = True,
                 bandwidth: Optional[int] = None) -> None:
        super().__init__(gamma, normalize=False, bandwidth=bandwidth, dist_func=dist_func, scaled_band=True)
        self.use_cuda = use_cuda
