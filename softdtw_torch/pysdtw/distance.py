"""pysdtw's distance functions: (B, N, d), (B, M, d) -> the (B, N, M) pairwise costs."""
import torch
from torch import Tensor

from ..functional import pairwise_cost

__all__ = ["pairwise_l2_squared", "pairwise_l2_squared_exact"]


def pairwise_l2_squared(x: Tensor, y: Tensor) -> Tensor:
    """||x_i||² + ||y_j||² − 2 x_i·y_j clamped at 0 (pysdtw's: the expansion, one matrix product).

    Parameters
    ----------
    x : torch.Tensor
        (B, N, d).
    y : torch.Tensor
        (B, M, d).

    Returns
    -------
    torch.Tensor
        The (B, N, M) squared Euclidean costs.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.pysdtw.distance import pairwise_l2_squared
    >>> pairwise_l2_squared(torch.tensor([[[0.0], [1.0]]]), torch.tensor([[[2.0], [3.0], [1.0]]])).tolist()
    [[[4.0, 9.0, 1.0], [1.0, 4.0, 0.0]]]
    """
    return pairwise_cost(x, y, "sqeuclidean")


def pairwise_l2_squared_exact(x: Tensor, y: Tensor) -> Tensor:
    """Σ_k (x_ik − y_jk)², from the differences (pysdtw's: a (B, N, M, d) tensor).

    Parameters
    ----------
    x : torch.Tensor
        (B, N, d).
    y : torch.Tensor
        (B, M, d).

    Returns
    -------
    torch.Tensor
        The (B, N, M) squared Euclidean costs.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.pysdtw.distance import pairwise_l2_squared_exact
    >>> pairwise_l2_squared_exact(torch.tensor([[[0.0], [1.0]]]), torch.tensor([[[2.0], [3.0], [1.0]]])).tolist()
    [[[4.0, 9.0, 1.0], [1.0, 4.0, 0.0]]]
    """
    return (x.unsqueeze(2) - y.unsqueeze(1)).pow(2).sum(3)
