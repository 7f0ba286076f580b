"""Functional SoftDTW API. Every function here is TorchScript-scriptable and ``torch.compile``-able.

Conventions (all functions):

- Batched inputs are 3-D: ``x`` (B, N, d), ``y`` (B, M, d), or a cost tensor ``D`` (B, N, M);
  the result has shape (B,). A single pair may be given unbatched (``x`` (N, d) and ``y`` (M, d),
  or ``D`` (N, M)); the result is then a 0-dim tensor, as torch's layers do for unbatched input.
- ``gamma > 0`` is the smoothing; ``bandwidth`` is the Sakoe–Chiba radius (``None``: no band). For
  N != M the band is widened by |N − M| (tslearn's ``sakoe_chiba_mask``), so the end is always
  reachable.
- ``x_lengths`` / ``y_lengths``: optional (B,) integer tensors for ragged batches; pair b uses
  ``x[b, :x_lengths[b]]`` and ``y[b, :y_lengths[b]]`` exactly as if it were alone (band included),
  and padding gets a zero gradient.
- float32 and float64 compute in their own precision; float16/bfloat16 accumulate in float32 and
  return their own dtype. Results are deterministic: same inputs, same bits, whatever the number
  of threads.
- Bad input raises an error naming the function, what was expected and what came. Non-finite
  values: a cost ``D`` may hold ``+inf`` (a forbidden cell; a pair with every path forbidden gets
  ``+inf`` and a zero gradient), while NaN or ``-inf`` in ``D``, and NaN or ±inf in ``x``/``y`` for
  the fused mode, raise ``ValueError``.
"""
from typing import Optional

import torch
from torch import Tensor

from . import _ops  # noqa: F401  (registers the operators)


def soft_dtw(
    x: Tensor,
    y: Tensor,
    gamma: float = 1.0,
    bandwidth: Optional[int] = None,
    normalize: bool = False,
    fused: Optional[bool] = None,
    x_lengths: Optional[Tensor] = None,
    y_lengths: Optional[Tensor] = None,
) -> Tensor:
    """Soft-DTW with squared Euclidean cost ``||x_i − y_j||²`` between ``x`` (B, N, d) and ``y`` (B, M, d).

    Returns (B,) values, differentiable w.r.t. ``x`` and ``y``.

    Args:
        normalize: return the soft-DTW divergence sdtw(x, y) − ½·sdtw(x, x) − ½·sdtw(y, y) (Blondel,
            Mensch & Vert 2021), which is ≥ 0 and 0 at x = y; computed with three DPs, so it is
            correct for N != M (and with lengths: each self-term uses that sequence's own length).
        fused: ``True`` computes the costs inside the kernel and never builds a (B, N, M) tensor in
            forward or backward; ``False`` builds the cost tensor with a batched matrix product
            (``sqeuclidean_cost``) and runs ``soft_dtw_from_cost`` on it; ``None`` (default) picks
            fused when d <= 128 and unfused beyond, where the matrix product is cheaper than O(d)
            work per cell.

    Works on CPU and CUDA, in TorchScript, under ``torch.compile`` and from C++
    (``torch.ops.softdtw_torch.soft_dtw``). SoftDTW values may be negative and sdtw(x, x) != 0:
    that is the definition; use ``normalize=True`` for a divergence.
    """
    unbatched = x.dim() == 2 and y.dim() == 2
    if unbatched:
        x = x.unsqueeze(0)
        y = y.unsqueeze(0)
    elif x.dim() != y.dim() and (x.dim() == 2 or y.dim() == 2):
        raise ValueError(
            "soft_dtw: expected x and y both 2-D (one pair: (n, features), (m, features)) or both 3-D "
            "(a batch), got " + str(x.dim()) + "-D and " + str(y.dim()) + "-D"
        )
    values = torch.ops.softdtw_torch.soft_dtw(x, y, gamma, bandwidth, normalize, fused, x_lengths, y_lengths)
    return values.squeeze(0) if unbatched else values


def soft_dtw_from_cost(
    D: Tensor,
    gamma: float = 1.0,
    bandwidth: Optional[int] = None,
    x_lengths: Optional[Tensor] = None,
    y_lengths: Optional[Tensor] = None,
) -> Tensor:
    """Soft-DTW of a precomputed cost tensor ``D`` (B, N, M) (or (N, M)), differentiable w.r.t. ``D``.

    Any differentiable cost written in PyTorch works: autograd carries ∂sdtw/∂D = E (the expected
    alignment) back into it. ``x_lengths`` bound the rows and ``y_lengths`` the columns of each pair.
    """
    unbatched = D.dim() == 2
    if unbatched:
        D = D.unsqueeze(0)
    values = torch.ops.softdtw_torch.soft_dtw_from_cost(D, gamma, bandwidth, x_lengths, y_lengths)
    return values.squeeze(0) if unbatched else values
