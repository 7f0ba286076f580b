"""Maghoumi's ``soft_dtw_cuda.SoftDTW`` (pytorch-softdtw-cuda) on softdtw-torch's kernels: ``from
softdtw_torch.soft_dtw_cuda import SoftDTW`` in place of ``from soft_dtw_cuda import SoftDTW``, and
its documented usage runs unchanged (tests/compat/test_soft_dtw_cuda_dropin.py).

``SoftDTW(use_cuda, gamma=1.0, normalize=False, bandwidth=None, dist_func=None)`` returns the (B,)
soft-DTW values (``normalize=True``: the divergence v(x, y) − ½ (v(x, x) + v(y, y))) of ``X`` (B, N, d)
and ``Y`` (B, M, d), differentiable w.r.t. both, with its band (cells with ``|i − j|`` > bandwidth
pruned; ``None`` or 0: none) and ``dist_func(x, y) -> (B, N, M)`` (squared Euclidean by default).
Differences, each deliberate:

- ``use_cuda`` is accepted and not needed: the computation runs on the inputs' device (no 1,024-step
  limit, no fall back to a CPU loop).
- ``normalize=True`` works for N != M as well (the original concatenates x and y and needs N = M).
- Values are computed in the inputs' dtype, so float32 results agree with the original's to float32
  rounding.
"""
from typing import Callable, Optional

from ._compat import CompatSoftDTW

__all__ = ["SoftDTW"]


class SoftDTW(CompatSoftDTW):
    """Maghoumi's ``SoftDTW`` (see the module docstring).

    ``forward(X, Y)`` returns the (B,) soft-DTW values (``normalize=True``: the divergence) of
    ``X`` (B, N, d) and ``Y`` (B, M, d), differentiable w.r.t. both.

    Parameters
    ----------
    use_cuda : bool
        Accepted and not needed: the computation runs on the inputs' device.
    gamma : float, default 1.0
        The smoothing, > 0.
    normalize : bool, default ``False``
        Give the divergence v(x, y) − ½ (v(x, x) + v(y, y)), for N != M as well.
    bandwidth : float or None, default None
        Cells with ``|i − j|`` > bandwidth are pruned; ``None`` or 0: none.
    dist_func : Callable or None, default None
        ``dist_func(x, y) -> (B, N, M)``; None: squared Euclidean.

    Raises
    ------
    TypeError
        A ``gamma`` or ``bandwidth`` that is not a number, a ``dist_func`` that is not callable.
    ValueError
        ``gamma`` <= 0; at the call, inputs of other shapes.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.soft_dtw_cuda import SoftDTW
    >>> sdtw = SoftDTW(use_cuda=False, gamma=0.1, normalize=True)
    >>> x = torch.zeros(2, 5, 1, requires_grad=True)
    >>> values = sdtw(x, torch.ones(2, 6, 1))
    >>> values.shape
    torch.Size([2])
    >>> values.sum().backward()
    >>> x.grad.shape
    torch.Size([2, 5, 1])
    """

    def __init__(self, use_cuda: bool, gamma: float = 1.0, normalize: bool = False, bandwidth: Optional[float] = None,
                 dist_func: Optional[Callable] = None) -> None:
        super().__init__(gamma, normalize=normalize, bandwidth=bandwidth, dist_func=dist_func, scaled_band=False)
        self.use_cuda = use_cuda
