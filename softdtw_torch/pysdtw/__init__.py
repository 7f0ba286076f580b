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
    """pysdtw's ``SoftDTW`` (see the module docstring).

    ``forward(X, Y)`` returns the (B,) soft-DTW values of ``X`` (B, N, d) and ``Y`` (B, M, d),
    tensors or PackedSequences, differentiable w.r.t. both.

    Parameters
    ----------
    gamma : float, default 1.0
        The smoothing, > 0.
    dist_func : Callable or None, default None
        ``dist_func(x, y) -> (B, N, M)``; None: ``distance.pairwise_l2_squared`` (fused into the
        kernel without a band).
    use_cuda : bool, default ``True``
        Accepted and not needed: the computation runs on the inputs' device.
    bandwidth : int or None, default None
        pysdtw's band (the shorter series' index stretched to the longer's scale); ``None`` or 0:
        none.

    Raises
    ------
    TypeError
        A ``gamma`` or ``bandwidth`` that is not a number, a ``dist_func`` that is not callable.
    ValueError
        ``gamma`` <= 0; at the call, inputs of other shapes or a ``dist_func`` result of the wrong
        shape.

    Examples
    --------
    >>> import torch
    >>> import softdtw_torch.pysdtw as pysdtw
    >>> sdtw = pysdtw.SoftDTW(gamma=1.0, use_cuda=False)
    >>> x = torch.zeros(2, 5, 1, requires_grad=True)
    >>> values = sdtw(x, torch.ones(2, 6, 1))
    >>> values.shape
    torch.Size([2])
    >>> values.sum().backward()
    >>> x.grad.shape
    torch.Size([2, 5, 1])
    """

    def __init__(self, gamma: float = 1.0, dist_func: Optional[Callable] = None, use_cuda: bool = True,
                 bandwidth: Optional[int] = None) -> None:
        super().__init__(gamma, normalize=False, bandwidth=bandwidth, dist_func=dist_func, scaled_band=True)
        self.use_cuda = use_cuda
