"""What the drop-in modules for pysdtw's and Maghoumi's users share (``softdtw_torch.pysdtw``,
``softdtw_torch.soft_dtw_cuda``): a soft-DTW loss module with a
user-given pairwise distance and those libraries' Sakoe–Chiba bands, each written as a mask of
forbidden (+inf) cells of the cost, which soft-DTW reads as cells no path may use."""
from typing import Callable, Optional, Tuple

import torch
from torch import Tensor
from torch.nn.utils.rnn import PackedSequence

from .functional import pairwise_cost, soft_dtw, soft_dtw_from_cost
from .nn import _unpack


def _unpacked(sequences, name: str, module: str) -> Tuple[Tensor, Optional[Tensor]]:
    """A PackedSequence as the loss modules read one (``nn._unpack``), or a checked 3-D tensor."""
    if isinstance(sequences, PackedSequence):
        return _unpack(module, name, f"{name}_lengths", sequences, None)
    if not isinstance(sequences, Tensor):
        raise TypeError(f"{module}: expected {name} to be a tensor or a PackedSequence, got {type(sequences).__name__}")
    if sequences.dim() != 3:
        raise ValueError(f"{module}: expected {name} of shape (batch, length, features), got {sequences.dim()}-D "
                         f"shape {tuple(sequences.shape)}")
    return sequences, None


def _band_mask(n_cells: int, m_cells: int, n: Tensor, m: Tensor, bandwidth: float, scaled: bool) -> Tensor:
    """The cells (B, N, M) outside a Sakoe–Chiba band, each pair on its lengths ``n``, ``m`` (B,),
    in float64 on 1-based indices i, j as both libraries write it. ``scaled``: pysdtw's band, the
    shorter side's index stretched to the longer side's scale (i·m/n when m > n, j·n/m when
    m < n); else Maghoumi's, |i − j| as it is."""
    i = torch.arange(1, n_cells + 1, dtype=torch.float64, device=n.device).view(1, -1, 1)
    j = torch.arange(1, m_cells + 1, dtype=torch.float64, device=n.device).view(1, 1, -1)
    if scaled:
        n, m = n.double().view(-1, 1, 1), m.double().view(-1, 1, 1)
        i = torch.where(m > n, i * m / n, i)
        j = torch.where(m < n, j * n / m, j)
    return (i - j).abs() > bandwidth


class CompatSoftDTW(torch.nn.Module):
    """Per-pair soft-DTW values (B,) of x (B, N, d) and y (B, M, d), or of PackedSequences, with an
    optional pairwise distance ``dist_func(x, y) -> (B, N, M)``, the divergence (``normalize``) and
    a Sakoe–Chiba band as pysdtw (``scaled_band``) or Maghoumi's code reads it. The public classes
    are its subclasses, with their libraries' signatures; ``_name`` is the class users see."""

    _name = "SoftDTW"

    def __init__(self, gamma: float, normalize: bool, bandwidth: Optional[float], dist_func: Optional[Callable],
                 scaled_band: bool) -> None:
        super().__init__()
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)):
            raise TypeError(f"{self._name}: expected gamma to be a float, got {type(gamma).__name__}")
        if not gamma > 0:
            raise ValueError(f"{self._name}: expected gamma > 0, got {gamma}")
        if bandwidth is not None and (isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float))):
            raise TypeError(f"{self._name}: expected bandwidth to be a number or None, got {type(bandwidth).__name__}")
        if dist_func is not None and not callable(dist_func):
            raise TypeError(f"{self._name}: expected dist_func to be callable or None, got {type(dist_func).__name__}")
        self.gamma = float(gamma)
        self.normalize = bool(normalize)
        # Both libraries store 0 for "no band", and a band of radius 0 prunes nothing there either.
        self.bandwidth = 0.0 if bandwidth is None else float(bandwidth)
        self.dist_func = dist_func
        self.scaled_band = scaled_band

    def _value(self, x: Tensor, y: Tensor, xl: Optional[Tensor], yl: Optional[Tensor]) -> Tensor:
        if self.dist_func is None and self.bandwidth <= 0:
            return soft_dtw(x, y, self.gamma, x_lengths=xl, y_lengths=yl)  # fused: no (B, N, M) tensor
        D = self.dist_func(x, y) if self.dist_func is not None else pairwise_cost(x, y)
        if not isinstance(D, Tensor) or D.dim() != 3 or D.shape != (x.shape[0], x.shape[1], y.shape[1]):
            got = tuple(D.shape) if isinstance(D, Tensor) else type(D).__name__
            raise ValueError(f"{self._name}: expected dist_func(x, y) to return a tensor of shape "
                             f"{(x.shape[0], x.shape[1], y.shape[1])} (batch, x length, y length), got {got}")
        if self.bandwidth > 0:
            b, n, m = D.shape
            n_b = (xl if xl is not None else torch.full((b,), n)).to(D.device)
            m_b = (yl if yl is not None else torch.full((b,), m)).to(D.device)
            forbidden = _band_mask(n, m, n_b, m_b, self.bandwidth, self.scaled_band)
            D = D.masked_fill(forbidden, float("inf"))
        return soft_dtw_from_cost(D, self.gamma, x_lengths=xl, y_lengths=yl)

    def forward(self, X, Y) -> Tensor:
        """The (B,) soft-DTW values (or divergences, with ``normalize``) of ``X`` and ``Y``.

        Parameters
        ----------
        X : torch.Tensor or torch.nn.utils.rnn.PackedSequence
            (B, N, d), or a pack of (length, d) series.
        Y : torch.Tensor or torch.nn.utils.rnn.PackedSequence
            (B, M, d), or a pack, with ``X``'s batch size and features.

        Returns
        -------
        torch.Tensor
            (B,) values, differentiable w.r.t. ``X`` and ``Y``.

        Raises
        ------
        ValueError
            Inputs that are not 3-D, of different batch sizes or features, a ``dist_func`` result of
            the wrong shape.
        TypeError
            Inputs that are neither tensors nor PackedSequences.
        """
        x, xl = _unpacked(X, "X", self._name)
        y, yl = _unpacked(Y, "Y", self._name)
        if x.shape[0] != y.shape[0] or x.shape[2] != y.shape[2]:
            raise ValueError(f"{self._name}: expected X and Y with the same batch size and features, got shapes "
                             f"{tuple(x.shape)} and {tuple(y.shape)}")
        value = self._value(x, y, xl, yl)
        if self.normalize:
            value = value - 0.5 * (self._value(x, x, xl, xl) + self._value(y, y, yl, yl))
        return value

    def extra_repr(self) -> str:
        return f"gamma={self.gamma}, normalize={self.normalize}, bandwidth={self.bandwidth}"
