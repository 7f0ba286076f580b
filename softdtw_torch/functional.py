"""Functional SoftDTW API. Every function here is TorchScript-scriptable and ``torch.compile``-able.

Conventions (all functions):

- Batched inputs are 3-D: ``x`` (B, N, d), ``y`` (B, M, d), or a cost tensor ``D`` (B, N, M);
  the result has shape (B,). A single pair may be given unbatched (``x`` (N, d) and ``y`` (M, d),
  or ``D`` (N, M)); the result is then a 0-dim tensor, as torch's layers do for unbatched input.
- ``gamma >= 0`` is the smoothing: a float, or a tensor (0-dim, or (B,) for one gamma per pair,
  positive) that may require grad. ``gamma = 0.0`` is hard DTW in every function (the minimum in
  every cell, the optimal path as the alignment, tslearn's tie rule: ``softdtw_torch.metrics``,
  docs/design/softdtw.md §10). To a tensor gamma, ∂sdtw/∂γ = (sdtw − ⟨E, D⟩)/γ flows (design doc
  §3). A tensor gamma uses the homogeneity sdtw_γ(D) = γ·sdtw_1(D/γ): the kernels run with γ = 1 on D/γ (for
  the squared Euclidean cost, on x/√γ and y/√γ, so the fused mode stays available), and autograd
  gives the γ-gradient, with no (B, N, M) tensor for it. ``bandwidth`` is the Sakoe–Chiba radius (``None``: no band). For
  N != M the band is widened by ``|N − M|`` (tslearn's ``sakoe_chiba_mask``), so the end is always
  reachable.
- ``itakura_max_slope`` (the last argument of every function that takes ``bandwidth``) is the
  Itakura parallelogram of tslearn's ``itakura_max_slope``: a float s >= 1 (``None``: none); a pair
  of lengths N, M may use only the cells of tslearn's ``itakura_mask(N, M, s)``
  (``softdtw_torch.metrics.itakura_mask``), each pair on its own lengths in a ragged batch, and the
  divergence's self terms on their (N, N) and (M, M) parallelograms. With ``bandwidth`` as well, a
  pair uses the cells both admit (tslearn takes one or the other). A pair left with no path (a row
  or a column of the parallelogram without an admissible cell, which tslearn refuses with an error)
  gets ``+inf`` and a zero gradient, as a cost ``D`` whose paths are all forbidden does.
- ``x_lengths`` / ``y_lengths``: optional (B,) integer tensors for ragged batches; pair b uses
  ``x[b, :x_lengths[b]]`` and ``y[b, :y_lengths[b]]`` (band included), and padding gets a zero
  gradient. The fused mode and ``soft_dtw_from_cost`` (on a given ``D``) compute each pair bit for
  bit as if it were alone, values and gradients. The unfused mode builds the cost tensor of the
  padded batch with a batched matrix product (``pairwise_cost``), which rounds differently from
  the product of the pair alone (forward and backward): values agree within 4·eps relative and
  gradients within 1e-5 of the pair's largest gradient in float32 (tests/softdtw/test_ragged.py).
- float32 and float64 compute in their own precision; float16/bfloat16 accumulate in float32 and
  return their own dtype. Results are deterministic: same inputs, same bits, whatever the number
  of threads.
- Tensors are read as above. numpy arrays and (nested) lists are read as tslearn reads them: by
  ``soft_dtw``, ``soft_dtw_alignment``, ``soft_dtw_sharp`` and ``dilate`` as one series per side,
  (N,) or (N, d), or a batch per side, (B, N, d) or a list of series of any lengths, trailing
  all-NaN time steps being padding; by ``cdist_soft_dtw`` as datasets, (A, N, d), (A, N) univariate,
  lists or NaN-padded; the result is then numpy (no autograd). float32 arrays compute in float32,
  other numbers in float64. Lengths may be lists of ints.
- Bad input raises an error naming the function, what was expected and what came: ValueError for
  bad values, shapes and empty input, TypeError for wrong types (dtypes included). ``gamma`` must
  be 0 or a normal number of the compute dtype, and so must 1/gamma (float32: [1.2e-38, 8.5e37]; float64:
  [2.2e-308, 4.5e307]); inside that range a float32 value beyond float32's range overflows. Non-finite
  values: a cost ``D`` may hold ``+inf`` (a forbidden cell; a pair with every path forbidden gets
  ``+inf`` and a zero gradient), while NaN or ``-inf`` in ``D``, and NaN or ±inf in ``x``/``y`` for
  the fused mode, raise ``ValueError``.
- A call whose memory grows with the problem (a cost tensor, a DP table kept for autograd, an
  all-pairs matrix) that needs more than the device can give raises ``torch.OutOfMemoryError``
  before it allocates (:func:`softdtw_torch.set_memory_limit`).
"""
from typing import Any, Callable, Optional, Tuple, Union

import torch
from torch import Tensor

from . import _memory, _ops  # noqa: F401  (_ops registers the operators)
from ._errors import public_errors
from ._input import (_check_int, _checked_argument_types, _datasets_from_arrays, _is_array_input, _pair_from_arrays,
                     _to_numpy, _to_tensor)
from ._progress import Progress
from ._sharing import active_share, pairs_in_chunks

__all__ = ["soft_dtw", "soft_dtw_from_cost", "soft_dtw_alignment", "soft_dtw_alignment_from_cost", "soft_dtw_sharp",
           "soft_dtw_sharp_from_cost", "dilate", "pairwise_cost", "cdist_soft_dtw"]


def _unbatched_pair(op: str, x: Tensor, y: Tensor, names: Tuple[str, str] = ("x", "y")) -> bool:
    """Whether x and y are one unbatched pair, (n, features) and (m, features); a batch is both
    3-D. Any other ranks raise a ValueError saying both forms (the operators take 3-D only)."""
    if x.dim() == 2 and y.dim() == 2:
        return True
    if x.dim() == 3 and y.dim() == 3:
        return False
    hint = ""
    if x.dim() == 1 or y.dim() == 1:
        hint = "; for a univariate series use " + (names[0] if x.dim() == 1 else names[1]) + ".unsqueeze(-1)"
    raise ValueError(
        op + ": expected " + names[0] + " and " + names[1] + " both 2-D (n, features) for one pair or both 3-D "
        "(batch, n, features), got " + str(x.dim()) + "-D and " + str(y.dim()) + "-D" + hint
    )


def _unbatched_cost(op: str, D: Tensor) -> bool:
    """Whether D is one unbatched cost matrix (n, m); a batch is 3-D. Other ranks raise."""
    if D.dim() != 2 and D.dim() != 3:
        raise ValueError(op + ": expected D 2-D (n, m) for one pair or 3-D (batch, n, m), got " + str(D.dim()) + "-D")
    return D.dim() == 2


def _pair_call_on_arrays(fn: Callable[..., Any], op: str, x: Any, y: Any, x_lengths: Any, y_lengths: Any,
                         *args: Any, **kwargs: Any) -> Any:
    """``fn(x, y, *args, x_lengths=, y_lengths=, **kwargs)`` on numpy / list input, read as tslearn reads
    it (``_pair_from_arrays``), without autograd; returns numpy."""
    a, b, la, lb, _ = _pair_from_arrays(op, x, y, x_lengths, y_lengths)
    with torch.no_grad():
        return _to_numpy(fn(a, b, *args, x_lengths=la, y_lengths=lb, **kwargs))


def _cost_call_on_arrays(fn: Callable[..., Any], op: str, D: Any, *args: Any) -> Any:
    """``fn(D, *args)`` on a numpy / list cost matrix, without autograd; returns numpy."""
    cost, _ = _to_tensor(D, op, "D")
    with torch.no_grad():
        return _to_numpy(fn(cost, *args))


def _autocast_to_float32(t: Tensor) -> Tensor:
    """What the ops' autocast kernel (csrc/autocast.cpp) does to their inputs, for the arithmetic
    done here before calling them (a tensor gamma's scaling): under torch.autocast, a
    float16/bfloat16 tensor on the autocast device computes as float32."""
    if not torch.jit.is_scripting():
        if t.dtype in (torch.float16, torch.bfloat16) and _autocast_enabled(t.device.type):
            return t.float()
    return t


def _autocast_enabled(device_type: str) -> bool:
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4 took no device type
        return torch.is_autocast_cpu_enabled() if device_type == "cpu" else torch.is_autocast_enabled()


def _checked_gamma(op: str, gamma: Tensor, like: Tensor) -> Tensor:
    """A tensor gamma as a (1,) or (batch,) scaling tensor on the device of ``like`` (the series or D,
    batch first), checked positive and finite, and with gamma and 1/gamma normal numbers of the
    compute dtype (float64 for float64 input, else float32), as the ops check a float gamma (in eager
    mode and TorchScript; reading the values would break a torch.compile graph). Like the lengths,
    gamma may be on the input's device or on the CPU."""
    batch = like.shape[0]
    dtype = like.dtype
    if gamma.device != like.device and gamma.device.type != "cpu":
        raise ValueError(op + ": expected gamma on " + str(like.device) + " or the CPU, got " + str(gamma.device))
    scale = gamma.reshape(-1).to(like.device)
    if scale.numel() != 1 and scale.numel() != batch:
        raise ValueError(
            op + ": expected gamma to be a float, a 0-dim tensor or a (batch,) tensor with batch = "
            + str(batch) + ", got shape " + str(list(gamma.shape))
        )
    check = True
    if not torch.jit.is_scripting():
        check = not torch.compiler.is_compiling()
    if check and not bool((torch.isfinite(scale) & (scale > 0)).all()):
        raise ValueError(op + ": a tensor gamma must be positive and finite (hard DTW: the float 0.0)")
    smallest = 2.2250738585072014e-308 if dtype == torch.float64 else 1.1754943508222875e-38
    if check and not bool(((scale >= smallest) & (scale <= 1.0 / smallest)).all()):
        raise ValueError(op + ": gamma must be in [" + str(smallest) + ", " + str(1.0 / smallest) + "] for "
                         + str(dtype) + " input (gamma and 1/gamma normal numbers of its compute dtype)")
    return scale


def soft_dtw(
    x: Tensor,
    y: Tensor,
    gamma: Union[float, Tensor] = 1.0,
    bandwidth: Optional[int] = None,
    normalize: bool = False,
    fused: Optional[bool] = None,
    x_lengths: Optional[Tensor] = None,
    y_lengths: Optional[Tensor] = None,
    cost: str = "sqeuclidean",
    checkpoint: bool = False,
    itakura_max_slope: Optional[float] = None,
) -> Tensor:
    """Soft-DTW between ``x`` (B, N, d) and ``y`` (B, M, d) under a named cost.

    The cost is the squared Euclidean ``||x_i − y_j||²`` by default. Returns (B,) values,
    differentiable w.r.t. ``x`` and ``y`` (and a tensor ``gamma``). Works on CPU and CUDA, in
    TorchScript, under ``torch.compile`` and from C++ (``torch.ops.softdtw_torch.soft_dtw``).
    SoftDTW values may be negative and sdtw(x, x) != 0: that is the definition; use
    ``normalize=True`` for a divergence.

    Parameters
    ----------
    x, y : torch.Tensor, numpy.ndarray or list
        The two batches, (B, N, d) and (B, M, d), or one unbatched pair (N, d) and (M, d). numpy
        arrays and lists are read as tslearn's ``soft_dtw`` reads them: ``x`` and ``y`` each one
        series, (N,) or (N, d), or each a batch, (B, N, d) or a list of series of any lengths, with
        trailing all-NaN time steps as padding (tslearn's format); the result is then numpy.
    gamma : float or torch.Tensor, default 1.0
        The smoothing, >= 0 (0.0: hard DTW); a tensor (0-dim, or (B,) for one gamma per pair) must
        be positive and may require grad (module docstring).
    bandwidth : int or None, default None
        The Sakoe–Chiba radius, widened by ``|N − M|`` for N != M; ``None``: no band.
    normalize : bool, default ``False``
        Return the soft-DTW divergence sdtw(x, y) − ½·sdtw(x, x) − ½·sdtw(y, y) (Blondel, Mensch &
        Vert 2021), which is ≥ 0 and 0 at x = y; computed with three DPs, so it is correct for
        N != M (and with lengths: each self-term uses that sequence's own length).
    fused : bool or None, default None
        ``True`` computes the costs inside the kernel and builds no (B, N, M) cost tensor, in
        forward or backward; with autograd its forward keeps the (B, N, M) DP table for the
        backward (unless ``checkpoint=True``), and the backward writes no (B, N, M) tensor.
        ``False`` builds the cost tensor with a batched matrix product (``pairwise_cost``) and runs
        ``soft_dtw_from_cost`` on it, keeping the cost tensor and the DP table for the backward, so
        it keeps about twice the fused mode's memory between forward and backward and peaks higher;
        ``checkpoint=True`` keeps nothing beyond x and y between them (benchmarks/README.md has the
        measured figures). ``None`` (default) picks fused when d <= 128 and unfused beyond, where
        the matrix product is cheaper than O(d) work per cell. On the CPU, batches of short pairs
        can run forward+backward faster unfused at moderate d (benchmarks/README.md, "fused or
        unfused"); the rule keeps the fused mode there for its float32 accuracy (no
        ||x||² + ||y||² − 2x·y cancellation) and memory.
    x_lengths, y_lengths : torch.Tensor or None, default None
        (B,) integer tensors for ragged batches: pair b uses ``x[b, :x_lengths[b]]`` and
        ``y[b, :y_lengths[b]]`` (module docstring); lists of ints are accepted with numpy input.
    cost : {'sqeuclidean', 'l1', 'cosine'}, default 'sqeuclidean'
        ``"sqeuclidean"``, ``"l1"`` (``Σ_k |x_ik − y_jk|``) or ``"cosine"`` (1 − cos(x_i, y_j), a
        zero vector counting as norm 1e-8); the last two run unfused (``pairwise_cost`` then
        ``soft_dtw_from_cost``), and ``fused=True`` with them is an error. The divergence is ≥ 0
        for the squared Euclidean cost; other costs keep D(x, x) = 0 but not necessarily the sign.
    checkpoint : bool, default ``False``
        Memory-lean backward (fused squared Euclidean mode only; implies it, and ``fused=False`` or
        another cost with it is an error). The forward keeps no (B, N, M) DP table for the
        backward: on CUDA it keeps R on the borders of its 64 × 64 tiles, B·N·M/32 values, and the
        backward recomputes each tile from them (one more forward sweep); on CPU the backward
        reruns the whole forward, so the peak during the backward is the fused mode's
        (benchmarks/bench_memory.py). Same values and gradients (tests/softdtw/test_checkpoint.py).
    itakura_max_slope : float or None, default None
        The Itakura parallelogram's maximum slope (tslearn's), a float >= 1, or ``None`` for none;
        with ``bandwidth``, the cells both admit (module docstring).

    Returns
    -------
    torch.Tensor or numpy.ndarray
        The (B,) values, in the inputs' dtype and on their device; a 0-dim tensor for one unbatched
        pair; numpy (no autograd) for numpy or list input.

    Raises
    ------
    ValueError
        Bad shapes or values (ranks other than 2-D/2-D or 3-D/3-D, empty input, ``gamma`` < 0 or out
        of the compute dtype's range, NaN or ±inf in ``x``/``y`` in the fused mode, lengths out of
        range, ``checkpoint=True`` without the fused squared Euclidean mode, ``fused=True`` with
        another cost).
    TypeError
        Wrong types, dtypes included (integer tensors, a string ``bandwidth``).
    torch.OutOfMemoryError
        A cost tensor or DP table that the device cannot give (the memory preflight,
        :func:`softdtw_torch.set_memory_limit`).

    See Also
    --------
    soft_dtw_from_cost : soft-DTW of a cost tensor of your own.
    soft_dtw_alignment : the expected alignment E as well as the value.
    softdtw_torch.nn.SoftDTW : the loss module.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.functional import soft_dtw
    >>> x = torch.tensor([[0.0], [1.0], [2.0]])
    >>> y = torch.tensor([[0.0], [2.0]])
    >>> round(float(soft_dtw(x, y, gamma=1.0)), 4)
    0.1227
    >>> float(soft_dtw(x, y, gamma=0.0))  # hard DTW: the cheapest path's cost
    1.0

    A batch, with gradients:

    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> xb = torch.randn(2, 5, 3, requires_grad=True)
    >>> yb = torch.randn(2, 4, 3)
    >>> values = soft_dtw(xb, yb, gamma=0.1)
    >>> values.shape
    torch.Size([2])
    >>> values.sum().backward()
    >>> xb.grad.shape
    torch.Size([2, 5, 3])
    >>> bool((soft_dtw(xb, xb, gamma=0.1, normalize=True).abs() < 1e-5).all())  # the divergence
    True
    """
    if not torch.jit.is_scripting():
        gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths = _checked_argument_types(
            "soft_dtw", gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths)
        if _is_array_input(x, y):
            return _pair_call_on_arrays(soft_dtw, "soft_dtw", x, y, x_lengths, y_lengths, gamma, bandwidth,
                                        normalize, fused, cost=cost, checkpoint=checkpoint,
                                        itakura_max_slope=itakura_max_slope)
    unbatched = _unbatched_pair("soft_dtw", x, y)
    if unbatched:
        x = x.unsqueeze(0)
        y = y.unsqueeze(0)
    if isinstance(gamma, Tensor):
        x, y = _autocast_to_float32(x), _autocast_to_float32(y)
        scale = _checked_gamma("soft_dtw", gamma, x)
        if cost == "sqeuclidean":  # ||x/√γ − y/√γ||² = ||x − y||²/γ: the fused kernel still applies
            root = scale.sqrt().to(x.dtype).reshape(-1, 1, 1)
            values = torch.ops.softdtw_torch.soft_dtw(
                x / root, y / root, 1.0, bandwidth, normalize, fused, x_lengths, y_lengths, cost, checkpoint,
                itakura_max_slope
            )
            values = values * scale.to(values.dtype)
        else:
            if checkpoint:
                raise ValueError(
                    'soft_dtw: checkpoint=True needs the fused mode (cost="sqeuclidean", fused=None or True), '
                    'got cost="' + cost + '"'
                )
            values = _divergence_or_value_from_cost("soft_dtw", x, y, scale, bandwidth, itakura_max_slope, normalize,
                                                    x_lengths, y_lengths, cost)
    else:
        values = torch.ops.softdtw_torch.soft_dtw(
            x, y, gamma, bandwidth, normalize, fused, x_lengths, y_lengths, cost, checkpoint, itakura_max_slope
        )
    return values.squeeze(0) if unbatched else values


def _scaled_from_cost(
    D: Tensor,
    scale: Tensor,
    bandwidth: Optional[int],
    itakura_max_slope: Optional[float],
    x_lengths: Optional[Tensor],
    y_lengths: Optional[Tensor],
    sharp: bool = False,
) -> Tensor:
    """sdtw_γ(D) = γ·sdtw_1(D/γ) (or the same for sharp soft-DTW, ``sharp``: E depends on D/γ only)
    for a checked (1,) or (B,) tensor γ: the γ-gradient comes from autograd."""
    s = scale.to(D.dtype)
    if sharp:
        values = torch.ops.softdtw_torch.soft_dtw_sharp_from_cost(D / s.reshape(-1, 1, 1), 1.0, bandwidth,
                                                                  x_lengths, y_lengths, itakura_max_slope)
    else:
        values = torch.ops.softdtw_torch.soft_dtw_from_cost(D / s.reshape(-1, 1, 1), 1.0, bandwidth, x_lengths,
                                                            y_lengths, itakura_max_slope)
    return values * s


def _divergence_or_value_from_cost(
    op: str,
    x: Tensor,
    y: Tensor,
    scale: Tensor,
    bandwidth: Optional[int],
    itakura_max_slope: Optional[float],
    normalize: bool,
    x_lengths: Optional[Tensor],
    y_lengths: Optional[Tensor],
    cost: str,
    sharp: bool = False,
) -> Tensor:
    """sdtw_γ (or the divergence; with ``sharp``, the sharp ones) of a named cost for a checked
    (1,) or (B,) tensor γ. The self terms use their own (N, N) and (M, M) constraints. The errors
    of the ops it calls name ``op``, the function called (eager only)."""
    if not torch.jit.is_scripting():
        with public_errors(op):
            return _terms_from_cost(x, y, scale, bandwidth, itakura_max_slope, normalize, x_lengths, y_lengths, cost,
                                    sharp)
    return _terms_from_cost(x, y, scale, bandwidth, itakura_max_slope, normalize, x_lengths, y_lengths, cost, sharp)


def _terms_from_cost(
    x: Tensor,
    y: Tensor,
    scale: Tensor,
    bandwidth: Optional[int],
    itakura_max_slope: Optional[float],
    normalize: bool,
    x_lengths: Optional[Tensor],
    y_lengths: Optional[Tensor],
    cost: str,
    sharp: bool,
) -> Tensor:
    cost_of = torch.ops.softdtw_torch.pairwise_cost
    slope = itakura_max_slope
    value = _scaled_from_cost(cost_of(x, y, cost), scale, bandwidth, slope, x_lengths, y_lengths, sharp)
    if normalize:
        xx = _scaled_from_cost(cost_of(x, x, cost), scale, bandwidth, slope, x_lengths, x_lengths, sharp)
        yy = _scaled_from_cost(cost_of(y, y, cost), scale, bandwidth, slope, y_lengths, y_lengths, sharp)
        value = value - 0.5 * xx - 0.5 * yy
    return value


def soft_dtw_from_cost(
    D: Tensor,
    gamma: Union[float, Tensor] = 1.0,
    bandwidth: Optional[int] = None,
    x_lengths: Optional[Tensor] = None,
    y_lengths: Optional[Tensor] = None,
    itakura_max_slope: Optional[float] = None,
) -> Tensor:
    """Soft-DTW of a precomputed cost tensor ``D`` (B, N, M) (or (N, M)), differentiable w.r.t. ``D``.

    Any differentiable cost written in PyTorch works: autograd carries ∂sdtw/∂D = E (the expected
    alignment) back into it.

    Parameters
    ----------
    D : torch.Tensor, numpy.ndarray or list
        The costs, (B, N, M), or (N, M) for one pair. It may hold ``+inf`` (a forbidden cell); NaN
        or ``-inf`` raise. A numpy ``D`` gives numpy.
    gamma : float or torch.Tensor, default 1.0
        The smoothing, >= 0 (0.0: hard DTW), as for :func:`soft_dtw`.
    bandwidth : int or None, default None
        The Sakoe–Chiba radius; ``None``: no band.
    x_lengths, y_lengths : torch.Tensor or None, default None
        ``x_lengths`` bound the rows and ``y_lengths`` the columns of each pair; each pair's value and
        gradient are bit for bit those of ``D[b, :x_lengths[b], :y_lengths[b]]`` alone, and the
        padding gets a zero gradient (tests/softdtw/test_ragged.py).
    itakura_max_slope : float or None, default None
        The Itakura parallelogram of each pair's (x_lengths[b], y_lengths[b]) (module docstring).

    Returns
    -------
    torch.Tensor or numpy.ndarray
        The (B,) values (0-dim for an (N, M) ``D``); numpy for a numpy ``D``.

    Raises
    ------
    ValueError
        ``D`` not 2-D or 3-D, NaN or ``-inf`` in ``D``, bad ``gamma`` or lengths.
    TypeError
        Wrong types (a non-floating ``D``).

    See Also
    --------
    pairwise_cost : the named costs as a tensor.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.functional import soft_dtw_from_cost
    >>> D = torch.tensor([[0.0, 4.0], [1.0, 1.0], [4.0, 0.0]], requires_grad=True)
    >>> value = soft_dtw_from_cost(D, gamma=1.0)
    >>> round(value.item(), 4)
    0.1227
    >>> value.backward()
    >>> D.grad.shape  # the expected alignment E
    torch.Size([3, 2])
    >>> float(soft_dtw_from_cost(D.detach(), gamma=0.0))
    1.0
    """
    if not torch.jit.is_scripting():
        gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths = _checked_argument_types(
            "soft_dtw_from_cost", gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths)
        if _is_array_input(D):
            return _cost_call_on_arrays(soft_dtw_from_cost, "soft_dtw_from_cost", D, gamma, bandwidth, x_lengths,
                                        y_lengths, itakura_max_slope)
    unbatched = _unbatched_cost("soft_dtw_from_cost", D)
    if unbatched:
        D = D.unsqueeze(0)
    if isinstance(gamma, Tensor):
        D = _autocast_to_float32(D)
        scale = _checked_gamma("soft_dtw_from_cost", gamma, D)
        values = _scaled_from_cost(D, scale, bandwidth, itakura_max_slope, x_lengths, y_lengths)
    else:
        values = torch.ops.softdtw_torch.soft_dtw_from_cost(D, gamma, bandwidth, x_lengths, y_lengths,
                                                            itakura_max_slope)
    return values.squeeze(0) if unbatched else values


def pairwise_cost(x: Tensor, y: Tensor, cost: str = "sqeuclidean") -> Tensor:
    """The (B, N, M) cost tensor of ``x`` (B, N, d) and ``y`` (B, M, d) for a named cost.

    Differentiable through autograd.

    Parameters
    ----------
    x, y : torch.Tensor or numpy.ndarray
        (B, N, d) and (B, M, d). numpy inputs give numpy.
    cost : {'sqeuclidean', 'l1', 'cosine'}, default 'sqeuclidean'
        The cost, see :func:`soft_dtw`.

    Returns
    -------
    torch.Tensor or numpy.ndarray
        (B, N, M), ``D[b, i, j]`` the cost of ``x[b, i]`` and ``y[b, j]``.

    Raises
    ------
    ValueError
        Inputs that are not 3-D with the same batch size and features, an unknown cost.
    TypeError
        Non-floating tensors.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.functional import pairwise_cost
    >>> x = torch.tensor([[[0.0], [1.0], [2.0]]])
    >>> y = torch.tensor([[[0.0], [2.0]]])
    >>> pairwise_cost(x, y).tolist()
    [[[0.0, 4.0], [1.0, 1.0], [4.0, 0.0]]]
    >>> pairwise_cost(x, y, cost="l1").tolist()
    [[[0.0, 2.0], [1.0, 1.0], [2.0, 0.0]]]
    """
    if not torch.jit.is_scripting():
        if _is_array_input(x, y):
            a, _ = _to_tensor(x, "pairwise_cost", "x")
            b, _ = _to_tensor(y, "pairwise_cost", "y")
            if a.dtype != b.dtype:
                a, b = a.double(), b.double()
            with torch.no_grad():
                return _to_numpy(torch.ops.softdtw_torch.pairwise_cost(a, b, cost))
    return torch.ops.softdtw_torch.pairwise_cost(x, y, cost)


def soft_dtw_alignment(
    x: Tensor,
    y: Tensor,
    gamma: Union[float, Tensor] = 1.0,
    bandwidth: Optional[int] = None,
    x_lengths: Optional[Tensor] = None,
    y_lengths: Optional[Tensor] = None,
    cost: str = "sqeuclidean",
    itakura_max_slope: Optional[float] = None,
) -> Tuple[Tensor, Tensor]:
    """Expected alignment matrices E (B, N, M) and values (B,) of ``x`` (B, N, d) and ``y`` (B, M, d).

    Returns ``(E, values)``, tslearn's order (its ``soft_dtw_alignment`` returns ``(A, sim)``); the
    operator ``torch.ops.softdtw_torch.soft_dtw_alignment`` and the C++ API return ``(values, E)``,
    the order of torch's ``(values, indices)``-style ops.

    E[b, i, j] = Σ_A p_γ(A)·A_ij is the probability that the soft alignment matches x_i with y_j;
    it equals ∂value/∂D, lies in [0, 1], has E[0, 0] = E[N−1, M−1] = 1, and tends to the hard
    DTW path as γ → 0. Padding (ragged batches) and cells outside the band or the Itakura
    parallelogram (``itakura_max_slope``) are 0. Unbatched inputs give a 0-dim value and an (N, M)
    matrix.

    Both outputs are differentiable w.r.t. ``x``, ``y`` and a tensor ``gamma``: E through soft-DTW's
    Hessian (a forward and a reverse recursion carrying a tangent, docs/design/softdtw.md §3), so E
    can serve as a layer (attention-like weights, DILATE's temporal term). A derivative of E's
    derivative (a third derivative of the value) raises. Use ``E.detach()`` for fixed weights.

    Parameters
    ----------
    x, y : torch.Tensor, numpy.ndarray or list
        (B, N, d) and (B, M, d), or one unbatched pair. numpy / list input is read as by
        :func:`soft_dtw` and gives numpy.
    gamma : float or torch.Tensor, default 1.0
        The smoothing, >= 0; at 0.0, E is the optimal path (tslearn's tie rule).
    bandwidth : int or None, default None
        The Sakoe–Chiba radius; ``None``: no band.
    x_lengths, y_lengths : torch.Tensor or None, default None
        Ragged batches, as for :func:`soft_dtw`.
    cost : {'sqeuclidean', 'l1', 'cosine'}, default 'sqeuclidean'
        The cost, as for :func:`soft_dtw`.
    itakura_max_slope : float or None, default None
        The Itakura parallelogram (module docstring).

    Returns
    -------
    E : torch.Tensor or numpy.ndarray
        (B, N, M) expected alignments ((N, M) for one unbatched pair).
    values : torch.Tensor or numpy.ndarray
        (B,) soft-DTW values (0-dim for one unbatched pair).

    Raises
    ------
    ValueError
        Bad shapes or values, as for :func:`soft_dtw`.
    TypeError
        Wrong types, as for :func:`soft_dtw`.
    torch.OutOfMemoryError
        A cost tensor or table the device cannot give (the memory preflight).

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.functional import soft_dtw_alignment
    >>> x = torch.tensor([[0.0], [1.0], [2.0]])
    >>> y = torch.tensor([[0.0], [2.0]])
    >>> E, value = soft_dtw_alignment(x, y, gamma=0.0)  # the optimal path
    >>> E.tolist()
    [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    >>> E, value = soft_dtw_alignment(x, y, gamma=1.0)
    >>> [round(v, 4) for v in E[1].tolist()]
    [0.5765, 0.5765]
    >>> round(float(value), 4)
    0.1227
    """
    if not torch.jit.is_scripting():
        gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths = _checked_argument_types(
            "soft_dtw_alignment", gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths)
        if _is_array_input(x, y):
            return _pair_call_on_arrays(soft_dtw_alignment, "soft_dtw_alignment", x, y, x_lengths, y_lengths,
                                        gamma, bandwidth, cost=cost, itakura_max_slope=itakura_max_slope)
    unbatched = _unbatched_pair("soft_dtw_alignment", x, y)
    if unbatched:
        x = x.unsqueeze(0)
        y = y.unsqueeze(0)
    if isinstance(gamma, Tensor):
        _checked_gamma("soft_dtw_alignment", gamma, x)
        if not torch.jit.is_scripting():
            with public_errors("soft_dtw_alignment"):  # errors name the function called (eager only)
                E, values = _alignment_of_cost(x, y, gamma, bandwidth, x_lengths, y_lengths, cost, itakura_max_slope)
        else:
            E, values = _alignment_of_cost(x, y, gamma, bandwidth, x_lengths, y_lengths, cost, itakura_max_slope)
    else:
        values, E = torch.ops.softdtw_torch.soft_dtw_alignment(x, y, gamma, bandwidth, x_lengths, y_lengths, cost,
                                                               itakura_max_slope)
    if unbatched:
        return E.squeeze(0), values.squeeze(0)
    return E, values


def _alignment_of_cost(x: Tensor, y: Tensor, gamma: Tensor, bandwidth: Optional[int], x_lengths: Optional[Tensor],
                       y_lengths: Optional[Tensor], cost: str, itakura_max_slope: Optional[float]
                       ) -> Tuple[Tensor, Tensor]:
    """``soft_dtw_alignment`` for a tensor gamma: on the cost tensor of x and y."""
    D = torch.ops.softdtw_torch.pairwise_cost(x, y, cost)
    return soft_dtw_alignment_from_cost(D, gamma, bandwidth, x_lengths, y_lengths, itakura_max_slope)


def soft_dtw_alignment_from_cost(
    D: Tensor,
    gamma: Union[float, Tensor] = 1.0,
    bandwidth: Optional[int] = None,
    x_lengths: Optional[Tensor] = None,
    y_lengths: Optional[Tensor] = None,
    itakura_max_slope: Optional[float] = None,
) -> Tuple[Tensor, Tensor]:
    """:func:`soft_dtw_alignment` on a precomputed cost tensor ``D`` (B, N, M) (or (N, M)).

    Returns ``(E, values)`` (tslearn's order, as :func:`soft_dtw_alignment`), both differentiable
    w.r.t. ``D`` (and a tensor ``gamma``).

    Parameters
    ----------
    D : torch.Tensor, numpy.ndarray or list
        The costs, (B, N, M) or (N, M); a numpy ``D`` gives numpy.
    gamma : float or torch.Tensor, default 1.0
        The smoothing, >= 0.
    bandwidth : int or None, default None
        The Sakoe–Chiba radius; ``None``: no band.
    x_lengths, y_lengths : torch.Tensor or None, default None
        The rows and columns of each pair, as for :func:`soft_dtw_from_cost`.
    itakura_max_slope : float or None, default None
        The Itakura parallelogram (module docstring).

    Returns
    -------
    E : torch.Tensor or numpy.ndarray
        (B, N, M) expected alignments ((N, M) for an (N, M) ``D``).
    values : torch.Tensor or numpy.ndarray
        (B,) values (0-dim for an (N, M) ``D``).

    Raises
    ------
    ValueError
        ``D`` not 2-D or 3-D, NaN or ``-inf`` in ``D``, bad ``gamma`` or lengths.
    TypeError
        Wrong types.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.functional import soft_dtw_alignment_from_cost
    >>> D = torch.tensor([[0.0, 4.0], [1.0, 1.0], [4.0, 0.0]])
    >>> E, value = soft_dtw_alignment_from_cost(D, gamma=0.0)
    >>> E.tolist()
    [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    >>> float(value)
    1.0
    """
    if not torch.jit.is_scripting():
        gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths = _checked_argument_types(
            "soft_dtw_alignment_from_cost", gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths)
        if _is_array_input(D):
            return _cost_call_on_arrays(soft_dtw_alignment_from_cost, "soft_dtw_alignment_from_cost", D, gamma,
                                        bandwidth, x_lengths, y_lengths, itakura_max_slope)
    unbatched = _unbatched_cost("soft_dtw_alignment_from_cost", D)
    if unbatched:
        D = D.unsqueeze(0)
    if isinstance(gamma, Tensor):  # E(D, γ) = E(D/γ, 1); values scale with γ
        D = _autocast_to_float32(D)
        scale = _checked_gamma("soft_dtw_alignment_from_cost", gamma, D).to(D.dtype)
        values, E = torch.ops.softdtw_torch.soft_dtw_alignment_from_cost(
            D / scale.reshape(-1, 1, 1), 1.0, bandwidth, x_lengths, y_lengths, itakura_max_slope
        )
        values = values * scale.to(values.dtype)
    else:
        values, E = torch.ops.softdtw_torch.soft_dtw_alignment_from_cost(D, gamma, bandwidth, x_lengths, y_lengths,
                                                                         itakura_max_slope)
    if unbatched:
        return E.squeeze(0), values.squeeze(0)
    return E, values


def soft_dtw_sharp(
    x: Tensor,
    y: Tensor,
    gamma: Union[float, Tensor] = 1.0,
    bandwidth: Optional[int] = None,
    normalize: bool = False,
    fused: Optional[bool] = None,
    x_lengths: Optional[Tensor] = None,
    y_lengths: Optional[Tensor] = None,
    cost: str = "sqeuclidean",
    itakura_max_slope: Optional[float] = None,
) -> Tensor:
    """The sharp soft-DTW ⟨E, D⟩ of ``x`` (B, N, d) and ``y`` (B, M, d) (Blondel, Mensch & Vert 2021).

    The cost of the expected alignment E, i.e. soft-DTW without its entropy term, so it tends to DTW
    from above as γ → 0 where soft-DTW tends to it from below. Returns (B,).

    The fused mode builds no (B, N, M) tensor. The value is one forward recursion carrying the
    tangent D itself (docs/design/softdtw.md §3), and its gradient E + H·D (H: soft-DTW's Hessian)
    one more forward and one reverse recursion. Differentiable to the first order (a second
    derivative is a third derivative of soft-DTW and raises). Works in TorchScript and from C++
    (``torch.ops.softdtw_torch.soft_dtw_sharp``).

    Parameters
    ----------
    x, y : torch.Tensor, numpy.ndarray or list
        (B, N, d) and (B, M, d), or one unbatched pair; numpy / list input is read as by
        :func:`soft_dtw` and gives numpy.
    gamma : float or torch.Tensor, default 1.0
        The smoothing, >= 0.
    bandwidth : int or None, default None
        The Sakoe–Chiba radius; ``None``: no band.
    normalize : bool, default ``False``
        Give the sharp soft-DTW divergence sharp(x, y) − ½ sharp(x, x) − ½ sharp(y, y) (three DPs,
        so N != M is right).
    fused : bool or None, default None
        As for :func:`soft_dtw`.
    x_lengths, y_lengths : torch.Tensor or None, default None
        Ragged batches, as for :func:`soft_dtw`.
    cost : {'sqeuclidean', 'l1', 'cosine'}, default 'sqeuclidean'
        As for :func:`soft_dtw` (there is no ``checkpoint``).
    itakura_max_slope : float or None, default None
        The Itakura parallelogram (module docstring).

    Returns
    -------
    torch.Tensor or numpy.ndarray
        The (B,) values (0-dim for one unbatched pair; numpy for numpy input).

    Raises
    ------
    ValueError
        Bad shapes or values, as for :func:`soft_dtw`.
    TypeError
        Wrong types, as for :func:`soft_dtw`.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.functional import soft_dtw, soft_dtw_sharp
    >>> x = torch.tensor([[0.0], [1.0], [2.0]])
    >>> y = torch.tensor([[0.0], [2.0]])
    >>> round(float(soft_dtw_sharp(x, y, gamma=1.0)), 4)  # above DTW (1.0) ...
    1.2139
    >>> round(float(soft_dtw(x, y, gamma=1.0)), 4)  # ... where soft-DTW is below it
    0.1227
    """
    if not torch.jit.is_scripting():
        gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths = _checked_argument_types(
            "soft_dtw_sharp", gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths)
        if _is_array_input(x, y):
            return _pair_call_on_arrays(soft_dtw_sharp, "soft_dtw_sharp", x, y, x_lengths, y_lengths, gamma,
                                        bandwidth, normalize, fused, cost=cost, itakura_max_slope=itakura_max_slope)
    unbatched = _unbatched_pair("soft_dtw_sharp", x, y)
    if unbatched:
        x = x.unsqueeze(0)
        y = y.unsqueeze(0)
    if isinstance(gamma, Tensor):
        # sharp_γ(D) = γ·sharp_1(D/γ) (E depends on D/γ only); for the squared Euclidean cost on x/√γ, y/√γ.
        x, y = _autocast_to_float32(x), _autocast_to_float32(y)
        scale = _checked_gamma("soft_dtw_sharp", gamma, x)
        if cost == "sqeuclidean":
            root = scale.sqrt().to(x.dtype).reshape(-1, 1, 1)
            values = torch.ops.softdtw_torch.soft_dtw_sharp(
                x / root, y / root, 1.0, bandwidth, normalize, fused, x_lengths, y_lengths, cost, itakura_max_slope
            )
            values = values * scale.to(values.dtype)
        else:
            values = _divergence_or_value_from_cost("soft_dtw_sharp", x, y, scale, bandwidth, itakura_max_slope,
                                                    normalize, x_lengths, y_lengths, cost, sharp=True)
    else:
        values = torch.ops.softdtw_torch.soft_dtw_sharp(
            x, y, gamma, bandwidth, normalize, fused, x_lengths, y_lengths, cost, itakura_max_slope
        )
    return values.squeeze(0) if unbatched else values


def soft_dtw_sharp_from_cost(
    D: Tensor,
    gamma: Union[float, Tensor] = 1.0,
    bandwidth: Optional[int] = None,
    x_lengths: Optional[Tensor] = None,
    y_lengths: Optional[Tensor] = None,
    itakura_max_slope: Optional[float] = None,
) -> Tensor:
    """The sharp soft-DTW ⟨E, D⟩ of a cost tensor ``D`` (B, N, M) (or (N, M)).

    Differentiable w.r.t. ``D`` (gradient E + H·D); see :func:`soft_dtw_sharp`.

    Parameters
    ----------
    D : torch.Tensor, numpy.ndarray or list
        The costs, (B, N, M) or (N, M). A numpy ``D`` gives numpy.
    gamma : float or torch.Tensor, default 1.0
        The smoothing, >= 0.
    bandwidth : int or None, default None
        The Sakoe–Chiba radius; ``None``: no band.
    x_lengths, y_lengths : torch.Tensor or None, default None
        The rows and columns of each pair, as for :func:`soft_dtw_from_cost`.
    itakura_max_slope : float or None, default None
        The Itakura parallelogram (module docstring).

    Returns
    -------
    torch.Tensor or numpy.ndarray
        The (B,) values (0-dim for an (N, M) ``D``).

    Raises
    ------
    ValueError
        ``D`` not 2-D or 3-D, NaN or ``-inf`` in ``D``, bad ``gamma`` or lengths.
    TypeError
        Wrong types.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.functional import soft_dtw_sharp_from_cost
    >>> D = torch.tensor([[0.0, 4.0], [1.0, 1.0], [4.0, 0.0]])
    >>> round(float(soft_dtw_sharp_from_cost(D, gamma=1.0)), 4)
    1.2139
    """
    if not torch.jit.is_scripting():
        gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths = _checked_argument_types(
            "soft_dtw_sharp_from_cost", gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths)
        if _is_array_input(D):
            return _cost_call_on_arrays(soft_dtw_sharp_from_cost, "soft_dtw_sharp_from_cost", D, gamma, bandwidth,
                                        x_lengths, y_lengths, itakura_max_slope)
    unbatched = _unbatched_cost("soft_dtw_sharp_from_cost", D)
    if unbatched:
        D = D.unsqueeze(0)
    if isinstance(gamma, Tensor):
        D = _autocast_to_float32(D)
        scale = _checked_gamma("soft_dtw_sharp_from_cost", gamma, D)
        values = _scaled_from_cost(D, scale, bandwidth, itakura_max_slope, x_lengths, y_lengths, sharp=True)
    else:
        values = torch.ops.softdtw_torch.soft_dtw_sharp_from_cost(D, gamma, bandwidth, x_lengths, y_lengths,
                                                                  itakura_max_slope)
    return values.squeeze(0) if unbatched else values


def dilate(
    prediction: Tensor,
    target: Tensor,
    alpha: float = 0.5,
    gamma: Union[float, Tensor] = 0.01,
    bandwidth: Optional[int] = None,
    penalty: Optional[Tensor] = None,
    prediction_lengths: Optional[Tensor] = None,
    target_lengths: Optional[Tensor] = None,
    itakura_max_slope: Optional[float] = None,
) -> Tuple[Tensor, Tensor, Tensor]:
    """DILATE (Le Guen & Thome 2019), the shape-and-time loss for forecasting, per pair.

    Returns ``(loss, shape, temporal)``, each (B,), with loss = α·shape + (1 − α)·temporal.

    D_ij = ||prediction_i − target_j||²; shape = sdtw_γ(D) (the soft-DTW value, not normalized)
    and temporal = ⟨E, Ω⟩ with E the expected alignment and Ω the time penalty
    Ω_ij = ((i + 1)/N − (j + 1)/M)² on each pair's own lengths, which for N = M is the authors'
    (i − j)²/N². The authors' ``dilate_loss(outputs, targets, alpha, gamma, device)`` returns the
    means over the batch of these three terms (``DILATELoss`` with ``reduction="mean"``); the
    defaults α = 0.5, γ = 0.01 are theirs. Both terms come from one forward recursion carrying Ω
    as a tangent; the backward is one Hessian-vector product (docs/design/softdtw.md §3), with no
    (B, N, M) tensor besides D and Ω. Differentiable w.r.t. ``prediction``, ``target``,
    ``penalty`` and a tensor ``gamma`` (first order). Works in TorchScript and from C++
    (``torch.ops.softdtw_torch.dilate``).

    Parameters
    ----------
    prediction, target : torch.Tensor, numpy.ndarray or list
        (B, N, d) and (B, M, d), or one unbatched pair; numpy / list input is read as by
        :func:`soft_dtw` and gives numpy.
    alpha : float, default 0.5
        The weight of the shape term, in [0, 1].
    gamma : float or torch.Tensor, default 0.01
        The soft-DTW smoothing, >= 0.
    bandwidth : int or None, default None
        The Sakoe–Chiba radius of the alignments (module docstring); ``None``: no band.
    penalty : torch.Tensor or None, default None
        (N, M) or (B, N, M), replaces Ω (it may require grad).
    prediction_lengths, target_lengths : torch.Tensor or None, default None
        Ragged batches, as ``x_lengths`` / ``y_lengths`` of :func:`soft_dtw`.
    itakura_max_slope : float or None, default None
        The Itakura parallelogram of the alignments (module docstring).

    Returns
    -------
    loss : torch.Tensor or numpy.ndarray
        (B,) α·shape + (1 − α)·temporal (0-dim for one unbatched pair).
    shape : torch.Tensor or numpy.ndarray
        (B,) soft-DTW values.
    temporal : torch.Tensor or numpy.ndarray
        (B,) ⟨E, Ω⟩.

    Raises
    ------
    ValueError
        Bad shapes or values (as for :func:`soft_dtw`; a ``penalty`` of the wrong shape).
    TypeError
        Wrong types.

    See Also
    --------
    softdtw_torch.nn.DILATELoss : the loss module.

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.functional import dilate
    >>> prediction = torch.tensor([[[0.0], [1.0], [2.0]]])
    >>> target = torch.tensor([[[0.0], [2.0]]])
    >>> loss, shape, temporal = dilate(prediction, target, alpha=0.5, gamma=0.01)
    >>> loss.shape
    torch.Size([1])
    >>> round(float(shape), 4), round(float(temporal), 4)
    (0.9931, 0.0972)
    >>> bool(torch.allclose(loss, 0.5 * shape + 0.5 * temporal))
    True
    """
    if not torch.jit.is_scripting():
        gamma, bandwidth, itakura_max_slope, prediction_lengths, target_lengths = _checked_argument_types(
            "dilate", gamma, bandwidth, itakura_max_slope, prediction_lengths, target_lengths,
            ("prediction_lengths", "target_lengths"))
        if _is_array_input(prediction, target, penalty):
            a, b, la, lb, _ = _pair_from_arrays("dilate", prediction, target, prediction_lengths, target_lengths,
                                                ("prediction", "target"))
            omega = None if penalty is None else _to_tensor(penalty, "dilate", "penalty")[0].to(a.dtype)
            with torch.no_grad():
                return _to_numpy(dilate(a, b, alpha, gamma, bandwidth, omega, la, lb, itakura_max_slope))
    unbatched = _unbatched_pair("dilate", prediction, target, ("prediction", "target"))
    if unbatched:
        prediction = prediction.unsqueeze(0)
        target = target.unsqueeze(0)
    if isinstance(gamma, Tensor):
        # shape_γ = γ·shape_1 and temporal_γ = temporal_1 on D/γ, i.e. on prediction/√γ, target/√γ.
        prediction, target = _autocast_to_float32(prediction), _autocast_to_float32(target)
        scale = _checked_gamma("dilate", gamma, prediction)
        root = scale.sqrt().to(prediction.dtype).reshape(-1, 1, 1)
        _, shape, temporal = torch.ops.softdtw_torch.dilate(
            prediction / root, target / root, alpha, 1.0, bandwidth, penalty, prediction_lengths, target_lengths,
            itakura_max_slope
        )
        shape = shape * scale.to(shape.dtype)
        loss = alpha * shape + (1 - alpha) * temporal
    else:
        loss, shape, temporal = torch.ops.softdtw_torch.dilate(
            prediction, target, alpha, gamma, bandwidth, penalty, prediction_lengths, target_lengths,
            itakura_max_slope
        )
    if unbatched:
        return loss.squeeze(0), shape.squeeze(0), temporal.squeeze(0)
    return loss, shape, temporal


def _check_datasets(op: str, X: Tensor, Y: Optional[Tensor]) -> None:
    """The all-pairs functions' tensors: X (A, N, d) and Y (B, M, d) or None."""
    if X.dim() != 3 or (Y is not None and Y.dim() != 3):
        got = str(X.dim()) + "-D" + ("" if Y is None else " and " + str(Y.dim()) + "-D")
        raise ValueError(op + ": expected X (A, N, d) and Y (B, M, d) as 3-D tensors (a (A, N) tensor of "
                         "univariate series: X.unsqueeze(-1)), got " + got)


def _one_chunk(
    a: Tensor,
    b: Tensor,
    ia: Tensor,
    ib: Tensor,
    a_lengths: Optional[Tensor],
    b_lengths: Optional[Tensor],
    gamma: Union[float, Tensor],
    bandwidth: Optional[int],
    fused: Optional[bool],
    cost: str,
    itakura_max_slope: Optional[float],
) -> Tensor:
    """soft_dtw(a[ia[k]], b[ib[k]]) for every k, in one batched call."""
    li = a_lengths[ia.to(a_lengths.device)] if a_lengths is not None else None
    lj = b_lengths[ib.to(b_lengths.device)] if b_lengths is not None else None
    return soft_dtw(a[ia], b[ib], gamma, bandwidth, False, fused, li, lj, cost, False, itakura_max_slope)


@torch.jit.ignore
def _shared_pairs_in_chunks(a: Tensor, b: Tensor, ia: Tensor, ib: Tensor, a_lengths: Optional[Tensor],
                            b_lengths: Optional[Tensor], gamma: Any, bandwidth: Optional[int], fused: Optional[bool],
                            cost: str, chunk_size: int, itakura_max_slope: Optional[float],
                            progress: Any) -> Optional[Tensor]:
    """``_pairs_in_chunks``'s values when a call of :mod:`softdtw_torch.distributed` is active (this
    rank's chunks computed, every chunk gathered); None otherwise. Eager only."""
    share = active_share()
    if share is None:
        return None

    def chunk(start: int) -> Tensor:
        i, j = ia[start : start + chunk_size], ib[start : start + chunk_size]
        values = _one_chunk(a, b, i, j, a_lengths, b_lengths, gamma, bandwidth, fused, cost, itakura_max_slope)
        if progress is not None:
            progress.update(int(i.numel()))
        return values

    return pairs_in_chunks(share, chunk, int(ia.numel()), chunk_size, a.new_empty((0,)))


def _pairs_in_chunks(
    a: Tensor,
    b: Tensor,
    ia: Tensor,
    ib: Tensor,
    a_lengths: Optional[Tensor],
    b_lengths: Optional[Tensor],
    gamma: Union[float, Tensor],
    bandwidth: Optional[int],
    fused: Optional[bool],
    cost: str,
    chunk_size: int,
    itakura_max_slope: Optional[float],
    progress: Any = None,
) -> Tensor:
    """soft_dtw(a[ia[k]], b[ib[k]]) for every k, ``chunk_size`` pairs per batched call; each call's
    pairs counted on ``progress`` (a ``Progress``, or None). Inside a call of
    :mod:`softdtw_torch.distributed`, this rank computes its share of the chunks and every chunk's
    values are gathered from the ranks that computed them (the same batched calls, the same bits)."""
    if not torch.jit.is_scripting():
        shared = _shared_pairs_in_chunks(a, b, ia, ib, a_lengths, b_lengths, gamma, bandwidth, fused, cost, chunk_size,
                                         itakura_max_slope, progress)
        if shared is not None:
            return shared
    parts = [a.new_empty((0,))]
    for start in range(0, ia.numel(), chunk_size):
        i = ia[start : start + chunk_size]
        j = ib[start : start + chunk_size]
        parts.append(_one_chunk(a, b, i, j, a_lengths, b_lengths, gamma, bandwidth, fused, cost, itakura_max_slope))
        if not torch.jit.is_scripting():  # progress is eager only: TorchScript compiles none of this
            if progress is not None:
                progress.update(int(i.numel()))
    return torch.cat(parts)


def cdist_soft_dtw(
    X: Tensor,
    Y: Optional[Tensor] = None,
    gamma: Union[float, Tensor] = 1.0,
    normalize: bool = False,
    bandwidth: Optional[int] = None,
    cost: str = "sqeuclidean",
    fused: Optional[bool] = None,
    x_lengths: Optional[Tensor] = None,
    y_lengths: Optional[Tensor] = None,
    chunk_size: int = 1024,
    itakura_max_slope: Optional[float] = None,
    verbose: bool = False,
) -> Tensor:
    """All-pairs soft-DTW matrix (A, B') between the series of ``X`` (A, N, d) and ``Y`` (B', M, d).

    ``Y=None`` compares ``X`` with itself: the matrix is symmetric and each unordered pair is
    computed once (the diagonal too, or not at all for the divergence, where it is exactly 0).
    Pairs are processed ``chunk_size`` at a time, so memory stays bounded: each chunk gathers its
    own pairs' series, and no (A·B', N, d) copy of the inputs is ever built. Differentiable w.r.t.
    ``X`` and ``Y`` (the gathers' backward accumulates deterministically, with index_put).

    Parameters
    ----------
    X : torch.Tensor, numpy.ndarray or list
        (A, N, d). numpy arrays and lists are read as tslearn's ``cdist_soft_dtw`` reads its
        datasets: (A, N, d), (A, N) for univariate series, a list of series of any lengths, or
        NaN-padded; the result is then numpy.
    Y : torch.Tensor, numpy.ndarray, list or None, default None
        (B', M, d); ``None``: ``X`` against itself.
    gamma : float or torch.Tensor, default 1.0
        The smoothing, >= 0.
    normalize : bool, default ``False``
        Give the soft-DTW divergence, each self term sdtw(x_i, x_i) being computed once per series
        rather than once per pair (tslearn's ``cdist_soft_dtw_normalized``).
    bandwidth : int or None, default None
        The Sakoe–Chiba radius; ``None``: no band.
    cost : {'sqeuclidean', 'l1', 'cosine'}, default 'sqeuclidean'
        As for :func:`soft_dtw`.
    fused : bool or None, default None
        As for :func:`soft_dtw`.
    x_lengths, y_lengths : torch.Tensor or None, default None
        ``x_lengths`` (A,) / ``y_lengths`` (B',) give ragged datasets; each entry is what
        :func:`soft_dtw` gives for that pair in a ragged batch (bit for bit as if alone in the fused
        mode, within a few ulps in the unfused mode, see the module docstring).
    chunk_size : int, default 1024
        Pairs per batched call, >= 1.
    itakura_max_slope : float or None, default None
        Each pair's Itakura parallelogram on its own lengths, the divergence's self terms on theirs
        (module docstring).
    verbose : bool, default ``False``
        Report progress after each chunk of pairs (self terms included): a tqdm bar when tqdm is
        installed, else a few lines on stderr (the package's convention, CONTRIBUTING.md
        "Progress"); the result is the same, bit for bit. TorchScript ignores it.

    Returns
    -------
    torch.Tensor or numpy.ndarray
        The (A, B') matrix; numpy for numpy or list input.

    Raises
    ------
    ValueError
        ``X`` or ``Y`` not 3-D (a (A, N) tensor of univariate series: ``X.unsqueeze(-1)``),
        ``chunk_size`` < 1, and the errors of :func:`soft_dtw` (named ``cdist_soft_dtw``).
    TypeError
        Wrong types.
    torch.OutOfMemoryError
        The (A, B') matrix and its pairs' indices beyond what the device can give (the memory
        preflight; compute it in blocks of rows).

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch.functional import cdist_soft_dtw
    >>> X = torch.tensor([[[0.0], [1.0], [2.0]], [[1.0], [2.0], [3.0]]])
    >>> K = cdist_soft_dtw(X, gamma=1.0)
    >>> K.shape
    torch.Size([2, 2])
    >>> [[round(v, 4) for v in row] for row in K.tolist()]
    [[-1.1904, 0.9468], [0.9468, -1.1904]]
    >>> cdist_soft_dtw(X, gamma=1.0, normalize=True).diagonal().tolist()  # the divergence
    [0.0, 0.0]
    """
    if not torch.jit.is_scripting():
        gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths = _checked_argument_types(
            "cdist_soft_dtw", gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths)
        chunk_size = _check_int(chunk_size, "cdist_soft_dtw", "chunk_size", 1)
        if _is_array_input(X, Y):
            a, b, la, lb = _datasets_from_arrays("cdist_soft_dtw", X, Y, x_lengths, y_lengths)
            with torch.no_grad():
                return _to_numpy(cdist_soft_dtw(a, b, gamma, normalize, bandwidth, cost, fused, la, lb, chunk_size,
                                                itakura_max_slope, verbose))
    _check_datasets("cdist_soft_dtw", X, Y)
    if chunk_size < 1:
        raise ValueError("cdist_soft_dtw: chunk_size must be >= 1, got " + str(chunk_size))
    if not torch.jit.is_scripting():  # a Progress is a Python object, and so is public_errors: eager only
        _check_cdist_memory("cdist_soft_dtw", X, Y, normalize)
        with public_errors("cdist_soft_dtw"):  # soft_dtw's errors name this function
            if verbose:
                total = _cdist_pair_count(X.shape[0], None if Y is None else Y.shape[0], normalize)
                with Progress(verbose, "cdist_soft_dtw", total, unit="pairs") as progress:
                    return _cdist_soft_dtw(X, Y, gamma, normalize, bandwidth, cost, fused, x_lengths, y_lengths,
                                           chunk_size, itakura_max_slope, progress)
            return _cdist_soft_dtw(X, Y, gamma, normalize, bandwidth, cost, fused, x_lengths, y_lengths, chunk_size,
                                   itakura_max_slope, None)
    return _cdist_soft_dtw(X, Y, gamma, normalize, bandwidth, cost, fused, x_lengths, y_lengths, chunk_size,
                           itakura_max_slope, None)


def _check_cdist_memory(who: str, X: Tensor, Y: Optional[Tensor], normalize: bool) -> None:
    """The memory preflight of an all-pairs matrix (_memory.check): per pair, its two int64 indices,
    its value, its entry of the (A, B') output and index_put's copy of it."""
    n_y = X.shape[0] if Y is None else Y.shape[0]
    pairs = _cdist_pair_count(X.shape[0], None if Y is None else n_y, normalize)
    element = X.element_size()
    nbytes = pairs * (16 + element) + 2 * X.shape[0] * n_y * element
    _memory.check(who, f"the {X.shape[0]} x {n_y} matrix and its pairs' indices", nbytes, X.device,
                  "compute it in blocks of rows (X[i:i + k] against Y), each block's result kept or reduced "
                  "before the next")


def _cdist_pair_count(n_x: int, n_y: Optional[int], normalize: bool) -> int:
    """How many soft-DTW pairs ``_cdist_soft_dtw`` computes (its progress total): the unordered
    pairs for ``n_y=None`` (the diagonal too, except for the divergence), the ``n_x·n_y`` pairs
    otherwise, and the divergence's self terms."""
    if n_y is None:
        return n_x * (n_x - 1) // 2 + n_x if normalize else n_x * (n_x + 1) // 2
    return n_x * n_y + (n_x + n_y if normalize else 0)


def _cdist_soft_dtw(
    X: Tensor,
    Y: Optional[Tensor],
    gamma: Union[float, Tensor],
    normalize: bool,
    bandwidth: Optional[int],
    cost: str,
    fused: Optional[bool],
    x_lengths: Optional[Tensor],
    y_lengths: Optional[Tensor],
    chunk_size: int,
    itakura_max_slope: Optional[float],
    progress: Any,
) -> Tensor:
    """``cdist_soft_dtw`` on checked tensors, counting its pairs on ``progress`` (a ``Progress`` or
    None): its own function so that ``cdist_dtw`` and the k-NN search report the same work under
    their own names."""
    symmetric = Y is None
    if Y is None:
        Y = X
        y_lengths = x_lengths
    n_x, n_y = X.shape[0], Y.shape[0]
    if symmetric:
        pairs = torch.triu_indices(n_x, n_x, offset=1 if normalize else 0, device=X.device)
        rows, cols = pairs[0], pairs[1]
    else:
        rows = torch.arange(n_x, device=X.device).repeat_interleave(n_y)
        cols = torch.arange(n_y, device=X.device).repeat(n_x)

    slope = itakura_max_slope
    values = _pairs_in_chunks(X, Y, rows, cols, x_lengths, y_lengths, gamma, bandwidth, fused, cost, chunk_size, slope,
                              progress)
    if normalize:
        idx_x = torch.arange(n_x, device=X.device)
        self_x = _pairs_in_chunks(X, X, idx_x, idx_x, x_lengths, x_lengths, gamma, bandwidth, fused, cost, chunk_size,
                                  slope, progress)
        if symmetric:
            self_y = self_x
        else:
            idx_y = torch.arange(n_y, device=X.device)
            self_y = _pairs_in_chunks(Y, Y, idx_y, idx_y, y_lengths, y_lengths, gamma, bandwidth, fused, cost,
                                      chunk_size, slope, progress)
        values = values - 0.5 * self_x[rows] - 0.5 * self_y[cols]
    out = values.new_zeros((n_x, n_y))
    out = out.index_put((rows, cols), values)
    if symmetric:
        out = out.index_put((cols, rows), values)
    return out
