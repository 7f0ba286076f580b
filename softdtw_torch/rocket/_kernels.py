"""ROCKET kernels: seeded generation identical to aeon's, and conversion to and from aeon's tuple.

A kernels tuple holds K random convolution kernels in aeon's 7-array layout (``Rocket.kernels``),
in this order (m_i: channels kernel i reads, L_i: its length):

- ``weights``, float32 (sum_i m_i * L_i,): kernel i's rows, row-major (m_i, L_i), each row
  mean-centred;
- ``lengths``, int32 (K,): L_i, one of 7, 9, 11;
- ``biases``, float32 (K,): in [-1, 1), added to every output position;
- ``dilations``, int32 (K,): d_i >= 1 (0 when n_timepoints < L_i, as in aeon);
- ``paddings``, int32 (K,): 0 or (L_i - 1) * d_i // 2;
- ``num_channel_indices``, int32 (K,): m_i in [1, min(C, L_i)];
- ``channel_indices``, int32 (sum_i m_i,): kernel i's distinct channels; row c of its weights
  reads its c-th channel.

Kernel i's weights start at ``sum_{j<i} m_j * L_j`` and its channels at ``sum_{j<i} m_j``.
"""
from typing import NamedTuple, Sequence, Tuple

import numpy as np
import torch
from torch import Tensor

from .._errors import public_errors

__all__ = ["RocketKernels", "generate_kernels", "kernels_from_aeon", "kernels_to_aeon"]


class RocketKernels(NamedTuple):
    """aeon's kernels tuple as 7 CPU tensors (see the module docstring for shapes and dtypes).

    A ``NamedTuple``: it unpacks, indexes and iterates as aeon's tuple, and names its fields
    (K kernels; m_i: channels kernel i reads, L_i: its length). Kernel i's weights start at
    ``sum_{j<i} m_j * L_j`` and its channels at ``sum_{j<i} m_j``.

    Parameters
    ----------
    weights : torch.Tensor
        float32 (sum_i m_i * L_i,): kernel i's rows, row-major (m_i, L_i), each row mean-centred.
    lengths : torch.Tensor
        int32 (K,): L_i, one of 7, 9, 11.
    biases : torch.Tensor
        float32 (K,): in [-1, 1), added to every output position.
    dilations : torch.Tensor
        int32 (K,): d_i >= 1 (0 when n_timepoints < L_i, as in aeon).
    paddings : torch.Tensor
        int32 (K,): 0 or (L_i - 1) * d_i // 2.
    num_channel_indices : torch.Tensor
        int32 (K,): m_i in [1, min(C, L_i)].
    channel_indices : torch.Tensor
        int32 (sum_i m_i,): kernel i's distinct channels; row c of its weights reads its c-th
        channel.

    Examples
    --------
    >>> from softdtw_torch.rocket import RocketKernels, generate_kernels
    >>> kernels = generate_kernels(n_timepoints=30, n_channels=2, n_kernels=100, seed=0)
    >>> isinstance(kernels, RocketKernels), len(kernels)
    (True, 7)
    >>> kernels.lengths.shape, kernels.lengths.dtype
    (torch.Size([100]), torch.int32)
    >>> set(kernels.lengths.tolist()) <= {7, 9, 11}
    True
    """

    weights: Tensor
    lengths: Tensor
    biases: Tensor
    dilations: Tensor
    paddings: Tensor
    num_channel_indices: Tensor
    channel_indices: Tensor


# Field names and aeon's dtypes, in tuple order.
_FIELDS: Tuple[Tuple[str, torch.dtype], ...] = (
    ("weights", torch.float32),
    ("lengths", torch.int32),
    ("biases", torch.float32),
    ("dilations", torch.int32),
    ("paddings", torch.int32),
    ("num_channel_indices", torch.int32),
    ("channel_indices", torch.int32),
)


def generate_kernels(n_timepoints: int, n_channels: int, n_kernels: int, seed: int) -> RocketKernels:
    """``n_kernels`` random ROCKET kernels, the same as aeon's ``Rocket(random_state=seed)`` draws.

    Reproduces aeon's ``_generate_kernels(n_timepoints, n_kernels, n_channels, seed)`` (note the
    argument order differs) from the same MT19937 stream (seeded with ``seed & 0xffffffff``):
    lengths, biases, dilations, paddings, channel counts and channel indices are identical to
    aeon's. Weights are identical to those of aeon running on AMD Zen 4/5 (AVX-512) or SSE-only
    numba targets. Where numba targets AVX2 (most Intel and older AMD CPUs, Intel AVX-512 CPUs
    included) it sums aeon's 7-long weight rows in another order, and a few of the weights differ
    by a few float32 ulps of their row's largest value. For exact parity on any machine, import
    aeon's kernels with :func:`kernels_from_aeon`.

    Deterministic (sequential, independent of the thread count). Works in eager mode, TorchScript
    and ``torch.compile`` (the ints are specialised: a new value recompiles) through
    ``torch.ops.softdtw_torch.rocket_generate_kernels``, which returns the same 7 tensors as a tuple.

    Parameters
    ----------
    n_timepoints : int
        Series length T >= 2 (sets the largest dilation; T < L gives dilation 0, as in aeon).
    n_channels : int
        C >= 1.
    n_kernels : int
        K >= 1.
    seed : int
        >= 0; aeon's ``random_state`` as an int.

    Returns
    -------
    RocketKernels
        7 CPU tensors (see the module docstring).

    Raises
    ------
    ValueError
        For n_kernels < 1, n_channels < 1, n_timepoints < 2, seed < 0, or n_channels or
        n_timepoints above 2**31 - 1 (int32 outputs).

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.rocket import generate_kernels
    >>> kernels = generate_kernels(n_timepoints=30, n_channels=2, n_kernels=100, seed=0)
    >>> [t.dtype for t in kernels][:3]
    [torch.float32, torch.int32, torch.float32]
    >>> again = generate_kernels(30, 2, 100, 0)
    >>> all(torch.equal(a, b) for a, b in zip(kernels, again))  # deterministic
    True
    """
    if not torch.jit.is_scripting():
        with public_errors("generate_kernels"):  # the operator's errors name this function (eager only)
            return RocketKernels(*torch.ops.softdtw_torch.rocket_generate_kernels(n_timepoints, n_channels,
                                                                                  n_kernels, seed))
    w, lengths, b, d, p, m, ch = torch.ops.softdtw_torch.rocket_generate_kernels(
        n_timepoints, n_channels, n_kernels, seed
    )
    return RocketKernels(w, lengths, b, d, p, m, ch)


def _as_cpu_tensor(op: str, name: str, value) -> Tensor:
    if isinstance(value, Tensor):
        return value.detach().cpu()
    array = np.asarray(value)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    try:
        return torch.from_numpy(np.ascontiguousarray(array))
    except TypeError as exc:
        raise TypeError(f"{op}: expected {name} to be a numeric array, got dtype {array.dtype}") from exc


def _convert(op: str, name: str, t: Tensor, dtype: torch.dtype) -> Tensor:
    """``t`` as a contiguous 1-D ``dtype`` tensor; only exact conversions are allowed."""
    if t.dim() != 1:
        raise ValueError(f"{op}: expected {name} to be 1-D, got shape {tuple(t.shape)}")
    if t.dtype == dtype:
        return t.contiguous()
    if t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{op}: expected {name} to be {dtype} (or exactly convertible to it), got {t.dtype}")
    out = t.to(dtype).contiguous()
    back = out.to(t.dtype)
    # Exact when the values come back unchanged (out-of-range integers wrap, fractions truncate,
    # float64 weights round); NaN stays NaN.
    same = back == t
    if t.is_floating_point():
        same = same | (torch.isnan(t) & torch.isnan(back))
    if not bool(same.all()):
        bad = int((~same).nonzero()[0, 0])
        raise ValueError(
            f"{op}: expected {name} to be {dtype} or exactly convertible to it, got {t.dtype} with a value "
            f"{t[bad].item()} (index {bad}) that {dtype} cannot hold"
        )
    return out


def _checked_kernels(op: str, kernels: Sequence) -> RocketKernels:
    if len(kernels) != len(_FIELDS):
        raise ValueError(
            f"{op}: expected aeon's 7-array kernels tuple (weights, lengths, biases, dilations, paddings, "
            f"num_channel_indices, channel_indices), got {len(kernels)} items"
        )
    k = RocketKernels(
        *[_convert(op, name, _as_cpu_tensor(op, name, value), dtype) for (name, dtype), value in zip(_FIELDS, kernels)]
    )
    n_kernels = k.lengths.numel()
    for name in ("biases", "dilations", "paddings", "num_channel_indices"):
        got = getattr(k, name).numel()
        if got != n_kernels:
            raise ValueError(f"{op}: expected {name} to hold one value per kernel ({n_kernels}, as lengths), got {got}")
    # The ragged arrays' sizes follow from lengths and num_channel_indices (int64: no overflow).
    m = k.num_channel_indices.to(torch.int64)
    n_weights = int((m * k.lengths.to(torch.int64)).sum())
    n_indices = int(m.sum())
    if k.weights.numel() != n_weights:
        raise ValueError(
            f"{op}: expected weights of size sum(num_channel_indices * lengths) = {n_weights}, got {k.weights.numel()}"
        )
    if k.channel_indices.numel() != n_indices:
        raise ValueError(
            f"{op}: expected channel_indices of size sum(num_channel_indices) = {n_indices}, "
            f"got {k.channel_indices.numel()}"
        )
    return k


def kernels_from_aeon(kernels: Sequence) -> RocketKernels:
    """aeon's kernels tuple (numpy arrays, e.g. ``Rocket().fit(X).kernels``, or tensors) as tensors.

    Other dtypes are converted only when every value is exactly representable (int64 lengths,
    float64 weights that are float32 values, ...); otherwise a ValueError names the field and
    value. Like ``torch.as_tensor``, an array or tensor that needs no conversion is shared, not
    copied; tensors come back detached.

    Parameters
    ----------
    kernels : tuple or list
        aeon's 7 arrays (or tensors): weights, lengths, biases, dilations, paddings,
        num_channel_indices, channel_indices.

    Returns
    -------
    RocketKernels
        7 contiguous 1-D CPU tensors with aeon's dtypes (float32 weights and biases, int32 for the
        rest).

    Raises
    ------
    ValueError
        Not 7 items, a field not 1-D, an inexact conversion, or sizes that do not fit together
        (per-kernel fields of unequal length, weights not of size
        sum(num_channel_indices * lengths), channel_indices not of size sum(num_channel_indices)).
    TypeError
        A field of bool, complex or non-numeric dtype.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.rocket import generate_kernels, kernels_from_aeon, kernels_to_aeon
    >>> kernels = generate_kernels(30, 2, 100, 0)
    >>> arrays = kernels_to_aeon(kernels)  # aeon's tuple of numpy arrays
    >>> back = kernels_from_aeon(arrays)
    >>> all(torch.equal(a, b) for a, b in zip(back, kernels))
    True
    """
    return _checked_kernels("kernels_from_aeon", kernels)


def kernels_to_aeon(kernels: Sequence) -> Tuple[np.ndarray, ...]:
    """A kernels tuple (tensors on any device, or arrays) as aeon's tuple of 7 numpy arrays.

    The arrays have exactly aeon's dtypes (float32, int32, float32, int32, int32, int32, int32)
    and are C-contiguous, so aeon's ``_apply_kernels(X, kernels)`` accepts them and
    ``rocket.kernels = kernels_to_aeon(k)`` makes a fitted aeon ``Rocket`` use these kernels.
    CPU tensors of the right dtype are shared, not copied.

    Parameters
    ----------
    kernels : tuple or list
        7 tensors or arrays, as :func:`kernels_from_aeon` takes them.

    Returns
    -------
    tuple of numpy.ndarray
        aeon's 7 arrays.

    Raises
    ------
    ValueError
        Same checks and errors as :func:`kernels_from_aeon`.
    TypeError
        Same checks and errors as :func:`kernels_from_aeon`.

    Examples
    --------
    >>> from softdtw_torch.rocket import generate_kernels, kernels_to_aeon
    >>> arrays = kernels_to_aeon(generate_kernels(30, 2, 100, 0))
    >>> [a.dtype.name for a in arrays]
    ['float32', 'int32', 'float32', 'int32', 'int32', 'int32', 'int32']
    """
    return tuple(t.numpy() for t in _checked_kernels("kernels_to_aeon", kernels))
