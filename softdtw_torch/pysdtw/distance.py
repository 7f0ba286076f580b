"""pysdtw's distance functions: (B, N, d), (B, M, d) -> the (B, N, M) pairwise costs."""
import torch
from torch import Tensor

from ..functional import pairwise_cost

__all__ = ["pairwise_l2_squared", "pairwise_l2_squared_exact"]


def pairwise_l2_squared(x: Tensor, y: Tensor) -> Tensor:
    """||x_i||² + ||y_j||² − 2 x_i·y_j clamped at 0 (pysdtw's: the expansion, one matrix product)."""
    return pairwise_cost(x, y, "sqeuclidean")


def pairwise_l2_squared_exact(x: Tensor, y: Tensor) -> Tensor:
    """Σ_k (x_ik − y_jk)², from the differences (pysdtw's: a (B, N, M, d) tensor)."""
    return (x.unsqueeze(2) - y.unsqueeze(1)).pow(2).sum(3)
