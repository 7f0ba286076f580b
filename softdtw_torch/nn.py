"""``nn.Module`` wrappers: they only store hyper-parameters and call the functional API."""
from typing import Optional, Union

import torch
from torch import Tensor, nn

from .functional import soft_dtw

_REDUCTIONS = ("none", "mean", "sum")


class SoftDTW(nn.Module):
    """Soft-DTW loss between batches ``x`` (B, N, d) and ``y`` (B, M, d) (squared Euclidean cost).

    Args:
        gamma: smoothing (> 0); smaller is closer to DTW. A tensor works too, and an
            ``nn.Parameter`` is learned with the model (∂loss/∂γ is exact).
        bandwidth: Sakoe–Chiba radius, ``None`` for no band (see ``softdtw_torch.soft_dtw``).
        normalize: use the soft-DTW divergence (≥ 0, 0 at x = y) instead of the raw value.
        fused: ``None`` picks by feature count; see ``softdtw_torch.soft_dtw``. ``True`` builds no
            (B, N, M) cost tensor (its forward keeps the (B, N, M) DP table for the backward);
            ``False`` keeps the cost tensor and the DP table (benchmarks/bench_memory.py).
        reduction: ``'mean'`` (default, as torch's losses), ``'sum'`` or ``'none'`` for the (B,)
            per-pair values.
        cost: ``"sqeuclidean"`` (default), ``"l1"`` or ``"cosine"``; see ``softdtw_torch.soft_dtw``.
        checkpoint: memory-lean backward (fused mode): keep no (B, N, M) DP table between forward
            and backward and recompute it; see ``softdtw_torch.soft_dtw``.

    ``forward(x, y, x_lengths=None, y_lengths=None)`` accepts ragged batches. The module is
    scriptable with ``torch.jit.script`` and compiles with ``torch.compile(fullgraph=True)``.
    """

    bandwidth: Optional[int]
    fused: Optional[bool]

    def __init__(
        self,
        gamma: Union[float, Tensor] = 1.0,
        bandwidth: Optional[int] = None,
        normalize: bool = False,
        fused: Optional[bool] = None,
        reduction: str = "mean",
        cost: str = "sqeuclidean",
        checkpoint: bool = False,
    ) -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"SoftDTW: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
        if isinstance(gamma, Tensor):
            if not bool((torch.isfinite(gamma) & (gamma > 0)).all()):
                raise ValueError("SoftDTW: gamma must be positive and finite")
        elif not gamma > 0 or gamma == float("inf"):
            raise ValueError(f"SoftDTW: gamma must be a positive finite number, got {gamma}")
        if bandwidth is not None and bandwidth < 0:
            raise ValueError(f"SoftDTW: bandwidth must be >= 0 or None, got {bandwidth}")
        # A float, or a tensor: an nn.Parameter makes gamma learnable (registered as a parameter).
        self.gamma = gamma if isinstance(gamma, Tensor) else float(gamma)
        self.bandwidth = bandwidth
        self.normalize = normalize
        self.fused = fused
        self.reduction = reduction
        self.cost = cost
        self.checkpoint = checkpoint

    def forward(
        self, x: Tensor, y: Tensor, x_lengths: Optional[Tensor] = None, y_lengths: Optional[Tensor] = None
    ) -> Tensor:
        values = soft_dtw(
            x, y, self.gamma, self.bandwidth, self.normalize, self.fused, x_lengths, y_lengths, self.cost,
            self.checkpoint,
        )
        if self.reduction == "mean":
            return values.mean()
        if self.reduction == "sum":
            return values.sum()
        return values

    def extra_repr(self) -> str:
        return (
            f"gamma={self.gamma}, bandwidth={self.bandwidth}, normalize={self.normalize}, fused={self.fused}, "
            f"reduction={self.reduction!r}, cost={self.cost!r}, checkpoint={self.checkpoint}"
        )
