"""``nn.Module`` wrappers: they only store hyper-parameters and call the functional API (in eager
mode, after unpacking ``PackedSequence`` inputs into padded tensors and lengths, and with its
errors named after the module: ``SoftDTW: ...``, not ``soft_dtw: ...``)."""
from typing import Any, Optional, Tuple, Union

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pad_packed_sequence

from ._errors import public_errors
from ._input import _check_itakura_slope
from .functional import dilate, soft_dtw, soft_dtw_sharp

__all__ = ["SoftDTW", "SharpSoftDTW", "DILATELoss"]

_REDUCTIONS = ("none", "mean", "sum")


def _checked_options(module: str, gamma: Union[float, Tensor], bandwidth: Optional[int],
                     itakura_max_slope: Optional[float], reduction: str
                     ) -> Tuple[Union[float, Tensor], Optional[float]]:
    """The options every loss module takes, checked; returns gamma as a float or as the tensor given
    (an ``nn.Parameter`` is then learned with the model: ∂loss/∂γ is exact), and the Itakura slope as
    a float or None."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{module}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if isinstance(gamma, Tensor):
        if not bool((torch.isfinite(gamma) & (gamma > 0)).all()):
            raise ValueError(f"{module}: a tensor gamma must be positive and finite (hard DTW: the float 0.0)")
    elif not gamma >= 0 or gamma == float("inf"):
        raise ValueError(f"{module}: gamma must be 0 (hard DTW) or a positive finite number, got {gamma}")
    if bandwidth is not None and bandwidth < 0:
        raise ValueError(f"{module}: bandwidth must be >= 0 or None, got {bandwidth}")
    slope = _check_itakura_slope(itakura_max_slope, module)
    return (gamma if isinstance(gamma, Tensor) else float(gamma)), slope


_INPUT_2D = (None, "univariate", "pair")


def _checked_input_2d(module: str, input_2d: Optional[str]) -> Optional[str]:
    if input_2d not in _INPUT_2D:
        raise ValueError(f"{module}: input_2d must be one of {_INPUT_2D}, got {input_2d!r}")
    return input_2d


def _read_2d(module: str, x: Tensor, y: Tensor, input_2d: Optional[str]) -> Tuple[Tensor, Tensor]:
    """A 2-D input to a loss reads two ways: (B, length), B univariate series, as ``nn.MSELoss`` reads
    (B, T); or (length, features), one unbatched pair, as the functional API reads it. Only an explicit
    ``input_2d`` picks one; without it, 2-D input is an error that names both readings."""
    if x.dim() not in (2, 3) or y.dim() not in (2, 3):
        raise ValueError(
            module + ": expected 3-D inputs (batch, length, features), or 2-D ones read as input_2d says, got "
            + str(x.dim()) + "-D and " + str(y.dim()) + "-D"
        )
    if x.dim() != 2 and y.dim() != 2:
        return x, y
    if input_2d is None:
        raise ValueError(
            module + ": got 2-D input (shapes " + str(list(x.shape)) + " and " + str(list(y.shape)) + "), which "
            "reads two ways: a batch of univariate series (batch, length), as nn.MSELoss reads (B, T), or one "
            "unbatched pair of series (length, features). Pass input_2d='univariate' or input_2d='pair' to the "
            "module, or 3-D (batch, length, features) tensors"
        )
    if input_2d == "univariate":
        return (x.unsqueeze(-1) if x.dim() == 2 else x), (y.unsqueeze(-1) if y.dim() == 2 else y)
    return x, y


def _unpack(module: str, name: str, lengths_name: str, sequences: Any, lengths: Any) -> Tuple[Any, Any]:
    """A ``PackedSequence`` as the padded (batch, time, features) tensor and (batch,) lengths of a
    ragged batch, in the caller's batch order (``pad_packed_sequence`` applies ``unsorted_indices``),
    the lengths on the data's device; anything else unchanged. Eager only: the modules call it
    under ``if not torch.jit.is_scripting():``, so scripting never compiles it."""
    if not isinstance(sequences, PackedSequence):
        if not isinstance(sequences, Tensor):  # as torch's losses: modules take tensors
            raise TypeError(
                f"{module}: expected {name} to be a torch.Tensor or a PackedSequence, got {type(sequences).__name__} "
                f"(convert arrays with torch.as_tensor; the functions of softdtw_torch also take numpy arrays)"
            )
        return sequences, lengths
    if lengths is not None:
        raise ValueError(
            f"{module}: {lengths_name} was given with a PackedSequence {name}, which carries its own lengths; "
            f"pass a PackedSequence alone, or a padded tensor with {lengths_name}"
        )
    if sequences.data.dim() != 2:
        raise ValueError(
            f"{module}: expected a PackedSequence {name} whose data is 2-D (total time steps, features), as "
            f"packing (length, features) series gives, since the loss reads (batch, time, features); got data "
            f"of shape {list(sequences.data.shape)} (pack univariate series as (length, 1))"
        )
    padded, unpacked_lengths = pad_packed_sequence(sequences, batch_first=True)
    return padded, unpacked_lengths.to(padded.device)


def _unpacked(module: str, names: Tuple[str, str, str, str], x: Any, y: Any, x_lengths: Any,
              y_lengths: Any) -> Tuple[Any, Any, Any, Any]:
    """``_unpack`` on both sides of a loss: ``names`` are the two inputs' and the two lengths' names."""
    x, x_lengths = _unpack(module, names[0], names[2], x, x_lengths)
    y, y_lengths = _unpack(module, names[1], names[3], y, y_lengths)
    return x, y, x_lengths, y_lengths


def _reduce(values: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return values.mean()
    if reduction == "sum":
        return values.sum()
    return values


class SoftDTW(nn.Module):
    """Soft-DTW loss between batches ``x`` (B, N, d) and ``y`` (B, M, d) (squared Euclidean cost).

    ``forward(x, y, x_lengths=None, y_lengths=None)`` accepts ragged batches. The loss is
    differentiable twice (``create_graph=True``, Hessian-vector products, ``torch.func``). The module
    is scriptable with ``torch.jit.script`` and compiles with ``torch.compile(fullgraph=True)``.

    ``x`` and/or ``y`` may also be a ``torch.nn.utils.rnn.PackedSequence`` of (length, features)
    series, as pysdtw's ``SoftDTW`` takes them: the pack is unpacked (``pad_packed_sequence``,
    ``batch_first=True``) and its lengths become ``x_lengths`` / ``y_lengths`` (on the data's
    device), so values and gradients are bit for bit those of the zero-padded tensors with those
    lengths, and the gradient flows back into the pack's ``data``. Results come in the batch order of
    the packed list, ``enforce_sorted=False`` packs included. A tensor beside a pack is read at full
    length unless its own lengths are given; lengths given for a packed side, or a pack whose data
    is not 2-D (total time steps, features), raise ``ValueError``. Eager (Python) only: a scripted
    module keeps its Tensor signature and refuses a pack, and ``torch.compile`` runs it with a graph
    break at ``pad_packed_sequence`` (``fullgraph=True`` refuses it). Compared with pysdtw's
    ``SoftDTW`` on the same packs (tests/softdtw/test_packed_sequence.py): same values and gradients
    to float32 rounding, since pysdtw keeps its DP table in float32 whatever the input dtype; pysdtw
    returns the (B,) values (here ``reduction="none"``; the default ``"mean"`` averages them) and its
    ``bandwidth`` is another band (scaled by the length ratio).

    Parameters
    ----------
    gamma : float or torch.Tensor, default 1.0
        Smoothing (> 0); smaller is closer to DTW (0.0 is hard DTW). A tensor works too, and an
        ``nn.Parameter`` is learned with the model (∂loss/∂γ is exact).
    bandwidth : int or None, default None
        Sakoe–Chiba radius, ``None`` for no band (see :func:`softdtw_torch.functional.soft_dtw`).
    normalize : bool, default ``False``
        Use the soft-DTW divergence (≥ 0, 0 at x = y) instead of the raw value.
    fused : bool or None, default None
        ``None`` picks by feature count; see :func:`softdtw_torch.functional.soft_dtw`. ``True``
        builds no (B, N, M) cost tensor (its forward keeps the (B, N, M) DP table for the
        backward); ``False`` keeps the cost tensor and the DP table (benchmarks/bench_memory.py).
    reduction : {'mean', 'sum', 'none'}, default 'mean'
        ``'mean'`` (as torch's losses), ``'sum'`` or ``'none'`` for the (B,) per-pair values.
    cost : {'sqeuclidean', 'l1', 'cosine'}, default 'sqeuclidean'
        See :func:`softdtw_torch.functional.soft_dtw`.
    checkpoint : bool, default ``False``
        Memory-lean backward (fused mode): keep no (B, N, M) DP table between forward and backward
        and recompute it; see :func:`softdtw_torch.functional.soft_dtw`.
    input_2d : {'univariate', 'pair'} or None, default None
        How 2-D input reads: ``"univariate"`` ((B, length): B univariate series, as ``nn.MSELoss``
        reads (B, T)) or ``"pair"`` ((length, features): one unbatched pair). ``None``: 2-D input
        raises a ValueError naming both readings.
    itakura_max_slope : float or None, default None
        The Itakura parallelogram's maximum slope (tslearn's ``itakura_max_slope``, a float >= 1),
        ``None`` for none; with ``bandwidth``, the cells both admit (see
        :func:`softdtw_torch.functional.soft_dtw`).

    Raises
    ------
    ValueError
        At construction: an unknown ``reduction`` or ``input_2d``, a negative or infinite
        ``gamma``, a negative ``bandwidth``, a slope < 1. At the call: the errors of
        :func:`softdtw_torch.functional.soft_dtw`, named ``SoftDTW``.
    TypeError
        At the call: inputs that are neither tensors nor PackedSequences.

    See Also
    --------
    softdtw_torch.functional.soft_dtw : the function it calls.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.nn import SoftDTW
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> x = torch.randn(4, 10, 2, requires_grad=True)
    >>> y = torch.randn(4, 8, 2)
    >>> loss = SoftDTW(gamma=0.1)(x, y)  # the mean over the batch
    >>> loss.shape
    torch.Size([])
    >>> loss.backward()
    >>> x.grad.shape
    torch.Size([4, 10, 2])
    >>> SoftDTW(gamma=0.1, reduction="none")(x, y).shape
    torch.Size([4])
    >>> SoftDTW(normalize=True, reduction="none")(x, x).abs().max().item() < 1e-4  # the divergence
    True

    2-D input says how it reads, here B univariate series:

    >>> SoftDTW(input_2d="univariate", reduction="none")(torch.zeros(3, 5), torch.ones(3, 6)).shape
    torch.Size([3])
    """

    bandwidth: Optional[int]
    fused: Optional[bool]
    itakura_max_slope: Optional[float]

    def __init__(
        self,
        gamma: Union[float, Tensor] = 1.0,
        bandwidth: Optional[int] = None,
        normalize: bool = False,
        fused: Optional[bool] = None,
        reduction: str = "mean",
        cost: str = "sqeuclidean",
        checkpoint: bool = False,
        input_2d: Optional[str] = None,
        itakura_max_slope: Optional[float] = None,
    ) -> None:
        super().__init__()
        self.gamma, self.itakura_max_slope = _checked_options("SoftDTW", gamma, bandwidth, itakura_max_slope,
                                                              reduction)
        self.input_2d = _checked_input_2d("SoftDTW", input_2d)
        self.bandwidth = bandwidth
        self.normalize = normalize
        self.fused = fused
        self.reduction = reduction
        self.cost = cost
        self.checkpoint = checkpoint

    def forward(
        self, x: Tensor, y: Tensor, x_lengths: Optional[Tensor] = None, y_lengths: Optional[Tensor] = None
    ) -> Tensor:
        """The soft-DTW loss of ``x`` and ``y`` (see the class docstring).

        Parameters
        ----------
        x : torch.Tensor or torch.nn.utils.rnn.PackedSequence
            (B, N, d) (or 2-D, read as ``input_2d`` says), or a pack of (length, d) series.
        y : torch.Tensor or torch.nn.utils.rnn.PackedSequence
            (B, M, d), as ``x``.
        x_lengths, y_lengths : torch.Tensor or None, default None
            (B,) lengths of a ragged batch (not with a pack, which carries its own).

        Returns
        -------
        torch.Tensor
            The reduced loss (0-dim), or the (B,) values with ``reduction="none"``.
        """
        if not torch.jit.is_scripting():  # PackedSequence input, errors named SoftDTW: eager only
            x, y, x_lengths, y_lengths = _unpacked("SoftDTW", ("x", "y", "x_lengths", "y_lengths"), x, y,
                                                   x_lengths, y_lengths)
            with public_errors("SoftDTW"):
                return self._loss(x, y, x_lengths, y_lengths)
        return self._loss(x, y, x_lengths, y_lengths)

    def _loss(self, x: Tensor, y: Tensor, x_lengths: Optional[Tensor], y_lengths: Optional[Tensor]) -> Tensor:
        x, y = _read_2d("SoftDTW", x, y, self.input_2d)
        values = soft_dtw(
            x, y, self.gamma, self.bandwidth, self.normalize, self.fused, x_lengths, y_lengths, self.cost,
            self.checkpoint, self.itakura_max_slope,
        )
        return _reduce(values, self.reduction)

    def extra_repr(self) -> str:
        return (
            f"gamma={self.gamma}, bandwidth={self.bandwidth}, normalize={self.normalize}, fused={self.fused}, "
            f"reduction={self.reduction!r}, cost={self.cost!r}, checkpoint={self.checkpoint}, "
            f"input_2d={self.input_2d!r}, itakura_max_slope={self.itakura_max_slope}"
        )


class SharpSoftDTW(nn.Module):
    """Sharp soft-DTW loss ⟨E, D⟩ between ``x`` (B, N, d) and ``y`` (B, M, d).

    Or, with ``normalize=True``, the sharp soft-DTW divergence (Blondel, Mensch & Vert 2021); see
    :func:`softdtw_torch.functional.soft_dtw_sharp`. Options as for :class:`SoftDTW` (no
    ``checkpoint``), ``input_2d`` and ``itakura_max_slope`` included.

    ``forward(x, y, x_lengths=None, y_lengths=None)``; differentiable once (its gradient already uses
    soft-DTW's Hessian). Scriptable with ``torch.jit.script``. ``x`` and/or ``y`` may be a
    ``PackedSequence``, read as a ragged batch, in eager mode only, as for :class:`SoftDTW`.

    Parameters
    ----------
    gamma : float or torch.Tensor, default 1.0
        Smoothing, as for :class:`SoftDTW`.
    bandwidth : int or None, default None
        Sakoe–Chiba radius, ``None`` for no band.
    normalize : bool, default ``False``
        Use the sharp soft-DTW divergence.
    fused : bool or None, default None
        As for :class:`SoftDTW`.
    reduction : {'mean', 'sum', 'none'}, default 'mean'
        As for :class:`SoftDTW`.
    cost : {'sqeuclidean', 'l1', 'cosine'}, default 'sqeuclidean'
        As for :class:`SoftDTW`.
    input_2d : {'univariate', 'pair'} or None, default None
        As for :class:`SoftDTW`.
    itakura_max_slope : float or None, default None
        As for :class:`SoftDTW`.

    Raises
    ------
    ValueError
        As for :class:`SoftDTW`, named ``SharpSoftDTW``.
    TypeError
        As for :class:`SoftDTW`.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.nn import SharpSoftDTW
    >>> x = torch.tensor([[[0.0], [1.0], [2.0]]], requires_grad=True)
    >>> y = torch.tensor([[[0.0], [2.0]]])
    >>> loss = SharpSoftDTW(gamma=1.0)(x, y)
    >>> round(loss.item(), 4)
    1.2139
    >>> loss.backward()
    >>> x.grad.shape
    torch.Size([1, 3, 1])
    """

    bandwidth: Optional[int]
    fused: Optional[bool]
    itakura_max_slope: Optional[float]

    def __init__(
        self,
        gamma: Union[float, Tensor] = 1.0,
        bandwidth: Optional[int] = None,
        normalize: bool = False,
        fused: Optional[bool] = None,
        reduction: str = "mean",
        cost: str = "sqeuclidean",
        input_2d: Optional[str] = None,
        itakura_max_slope: Optional[float] = None,
    ) -> None:
        super().__init__()
        self.gamma, self.itakura_max_slope = _checked_options("SharpSoftDTW", gamma, bandwidth, itakura_max_slope,
                                                              reduction)
        self.input_2d = _checked_input_2d("SharpSoftDTW", input_2d)
        self.bandwidth = bandwidth
        self.normalize = normalize
        self.fused = fused
        self.reduction = reduction
        self.cost = cost

    def forward(
        self, x: Tensor, y: Tensor, x_lengths: Optional[Tensor] = None, y_lengths: Optional[Tensor] = None
    ) -> Tensor:
        """The sharp soft-DTW loss of ``x`` and ``y`` (see the class docstring).

        Parameters
        ----------
        x : torch.Tensor or torch.nn.utils.rnn.PackedSequence
            (B, N, d) (or 2-D, read as ``input_2d`` says), or a pack of (length, d) series.
        y : torch.Tensor or torch.nn.utils.rnn.PackedSequence
            (B, M, d), as ``x``.
        x_lengths, y_lengths : torch.Tensor or None, default None
            (B,) lengths of a ragged batch (not with a pack, which carries its own).

        Returns
        -------
        torch.Tensor
            The reduced loss (0-dim), or the (B,) values with ``reduction="none"``.
        """
        if not torch.jit.is_scripting():  # PackedSequence input, errors named SharpSoftDTW: eager only
            x, y, x_lengths, y_lengths = _unpacked("SharpSoftDTW", ("x", "y", "x_lengths", "y_lengths"), x, y,
                                                   x_lengths, y_lengths)
            with public_errors("SharpSoftDTW"):
                return self._loss(x, y, x_lengths, y_lengths)
        return self._loss(x, y, x_lengths, y_lengths)

    def _loss(self, x: Tensor, y: Tensor, x_lengths: Optional[Tensor], y_lengths: Optional[Tensor]) -> Tensor:
        x, y = _read_2d("SharpSoftDTW", x, y, self.input_2d)
        values = soft_dtw_sharp(
            x, y, self.gamma, self.bandwidth, self.normalize, self.fused, x_lengths, y_lengths, self.cost,
            self.itakura_max_slope,
        )
        return _reduce(values, self.reduction)

    def extra_repr(self) -> str:
        return (
            f"gamma={self.gamma}, bandwidth={self.bandwidth}, normalize={self.normalize}, fused={self.fused}, "
            f"reduction={self.reduction!r}, cost={self.cost!r}, input_2d={self.input_2d!r}, "
            f"itakura_max_slope={self.itakura_max_slope}"
        )


class DILATELoss(nn.Module):
    """DILATE loss (Le Guen & Thome 2019) between ``prediction`` (B, N, d) and ``target`` (B, M, d).

    α·shape + (1 − α)·temporal per pair, reduced; see :func:`softdtw_torch.functional.dilate`,
    which also returns the two terms. With ``reduction="mean"`` (default) it is the loss of the
    authors' ``dilate_loss(outputs, targets, alpha, gamma, device)``.

    ``forward(prediction, target, prediction_lengths=None, target_lengths=None)``; differentiable
    once (its gradient uses soft-DTW's Hessian). Scriptable with ``torch.jit.script``.
    ``prediction`` and/or ``target`` may be a ``PackedSequence``, read as a ragged batch (its
    lengths become ``prediction_lengths`` / ``target_lengths``), in eager mode only, as for
    :class:`SoftDTW`; a fixed ``penalty`` must then match the padded lengths, the longest series of
    each pack.

    Parameters
    ----------
    alpha : float, default 0.5
        Weight of the shape term, in [0, 1] (the authors' default).
    gamma : float or torch.Tensor, default 0.01
        Soft-DTW smoothing (the authors' default); a tensor may be learned.
    bandwidth : int or None, default None
        Sakoe–Chiba radius of the alignments, ``None`` for none.
    penalty : torch.Tensor or None, default None
        A fixed time penalty Ω, (N, M) or (B, N, M), instead of ((i + 1)/N − (j + 1)/M)²;
        registered as a buffer.
    reduction : {'mean', 'sum', 'none'}, default 'mean'
        As for :class:`SoftDTW`.
    input_2d : {'univariate', 'pair'} or None, default None
        How 2-D input reads, as for :class:`SoftDTW` (``None``: 2-D input is an error).
    itakura_max_slope : float or None, default None
        The Itakura parallelogram of the alignments (tslearn's slope, >= 1), as for
        :class:`SoftDTW`; ``None`` for none.

    Raises
    ------
    ValueError
        ``alpha`` outside [0, 1], and as for :class:`SoftDTW`, named ``DILATELoss``.
    TypeError
        As for :class:`SoftDTW`.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.nn import DILATELoss
    >>> prediction = torch.tensor([[[0.0], [1.0], [2.0]]], requires_grad=True)
    >>> target = torch.tensor([[[0.0], [2.0]]])
    >>> loss = DILATELoss(alpha=0.5, gamma=0.01)(prediction, target)
    >>> round(loss.item(), 4)  # 0.5 * shape + 0.5 * temporal
    0.5451
    >>> loss.backward()
    >>> prediction.grad.shape
    torch.Size([1, 3, 1])
    """

    bandwidth: Optional[int]
    penalty: Optional[Tensor]
    itakura_max_slope: Optional[float]

    def __init__(
        self,
        alpha: float = 0.5,
        gamma: Union[float, Tensor] = 0.01,
        bandwidth: Optional[int] = None,
        penalty: Optional[Tensor] = None,
        reduction: str = "mean",
        input_2d: Optional[str] = None,
        itakura_max_slope: Optional[float] = None,
    ) -> None:
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"DILATELoss: alpha must be in [0, 1], got {alpha}")
        self.gamma, self.itakura_max_slope = _checked_options("DILATELoss", gamma, bandwidth, itakura_max_slope,
                                                              reduction)
        self.input_2d = _checked_input_2d("DILATELoss", input_2d)
        self.alpha = float(alpha)
        self.bandwidth = bandwidth
        self.register_buffer("penalty", penalty)
        self.reduction = reduction

    def forward(
        self,
        prediction: Tensor,
        target: Tensor,
        prediction_lengths: Optional[Tensor] = None,
        target_lengths: Optional[Tensor] = None,
    ) -> Tensor:
        """The DILATE loss of ``prediction`` and ``target`` (see the class docstring).

        Parameters
        ----------
        prediction : torch.Tensor or torch.nn.utils.rnn.PackedSequence
            (B, N, d) (or 2-D, read as ``input_2d`` says), or a pack of (length, d) series.
        target : torch.Tensor or torch.nn.utils.rnn.PackedSequence
            (B, M, d), as ``prediction``.
        prediction_lengths, target_lengths : torch.Tensor or None, default None
            (B,) lengths of a ragged batch (not with a pack, which carries its own).

        Returns
        -------
        torch.Tensor
            The reduced loss (0-dim), or the (B,) values with ``reduction="none"``.
        """
        if not torch.jit.is_scripting():  # PackedSequence input, errors named DILATELoss: eager only
            prediction, target, prediction_lengths, target_lengths = _unpacked(
                "DILATELoss", ("prediction", "target", "prediction_lengths", "target_lengths"), prediction, target,
                prediction_lengths, target_lengths)
            with public_errors("DILATELoss"):
                return self._loss(prediction, target, prediction_lengths, target_lengths)
        return self._loss(prediction, target, prediction_lengths, target_lengths)

    def _loss(self, prediction: Tensor, target: Tensor, prediction_lengths: Optional[Tensor],
              target_lengths: Optional[Tensor]) -> Tensor:
        prediction, target = _read_2d("DILATELoss", prediction, target, self.input_2d)
        loss, _, _ = dilate(
            prediction, target, self.alpha, self.gamma, self.bandwidth, self.penalty, prediction_lengths,
            target_lengths, self.itakura_max_slope,
        )
        return _reduce(loss, self.reduction)

    def extra_repr(self) -> str:
        return (
            f"alpha={self.alpha}, gamma={self.gamma}, bandwidth={self.bandwidth}, "
            f"penalty={'given' if self.penalty is not None else None}, reduction={self.reduction!r}, "
            f"input_2d={self.input_2d!r}, itakura_max_slope={self.itakura_max_slope}"
        )
