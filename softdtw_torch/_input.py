"""Input conversion for the barycenter and k-means: series given as arrays, tensors or nested lists,
one group (n, T, d) / (n, T) or K groups (K, n, T, d), lists of series of different lengths, or
NaN-padded (tslearn's format), become one padded floating tensor and its lengths (:func:`_prepare_series`);
plus the checks of the scalar arguments and the linear resampling of series to another length.

The functional API's eager side lives here too: its argument types (gamma, bandwidth, the Itakura
slope, lengths given as lists) and its numpy / list input (:func:`_pair_from_arrays`), read as
tslearn's metrics read them.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import Tensor


class _Data:
    """Series of one or K groups, padded: ``x`` (K, n, T, d), ``lengths`` (K, n) int64."""

    def __init__(self, x: Tensor, lengths: Tensor, single: bool, kind: str, squeeze_2d: bool):
        self.x = x
        self.lengths = lengths
        self.single = single          # input was one group (no K axis)
        self.kind = kind              # "torch" or "numpy": what the caller gets back
        self.squeeze_2d = squeeze_2d  # input was (n, T) univariate (tslearn's 2-D convention)


def _to_tensor(value: Any, name: str, what: str) -> Tuple[Tensor, str]:
    """Convert an array-like to a tensor; returns it and the kind the caller gave ("torch"/"numpy")."""
    if isinstance(value, Tensor):
        t = value.detach()
        if t.dtype in (torch.float16, torch.bfloat16) or t.is_complex():
            raise TypeError(f"{name}: expected {what} to be float32 or float64, got {t.dtype}")
        if not t.is_floating_point():
            t = t.to(torch.get_default_dtype())
        return t, "torch"
    try:
        a = np.asarray(value)
    except ValueError as err:  # ragged nested lists
        raise ValueError(f"{name}: could not read {what} as an array ({err})") from None
    if a.dtype == object:
        raise ValueError(f"{name}: could not read {what} as a numeric array (ragged or non-numeric)")
    if a.dtype.kind == "c":
        raise TypeError(f"{name}: expected {what} to be real, got dtype {a.dtype}")
    if a.dtype.kind not in "fiub":
        raise TypeError(f"{name}: expected {what} to be numeric, got dtype {a.dtype}")
    if a.dtype != np.float32:
        a = a.astype(np.float64)
    return torch.from_numpy(np.ascontiguousarray(a)), "numpy"


def _series_list_to_padded(series: Sequence[Any], name: str) -> Tuple[Tensor, Tensor, str]:
    """A list of (T_i, d) or (T_i,) series of possibly different lengths -> (n, T, d), lengths (n,)."""
    items = []
    kinds = set()
    for i, s in enumerate(series):
        t, kind = _to_tensor(s, name, f"X[{i}]")
        kinds.add(kind)
        if t.dim() == 1:
            t = t.unsqueeze(1)
        if t.dim() != 2:
            raise ValueError(
                f"{name}: expected each series of a list X to be 1-D (length,) or 2-D (length, features), "
                f"got {t.dim()}-D for X[{i}]"
            )
        items.append(t)
    if not items:
        raise ValueError(f"{name}: expected at least one series, got an empty X")
    dims = {t.shape[1] for t in items}
    if len(dims) != 1:
        raise ValueError(f"{name}: expected every series to have the same number of features, got {sorted(dims)}")
    devices = {t.device for t in items}
    if len(devices) != 1:
        raise ValueError(f"{name}: expected every series on one device, got {sorted(map(str, devices))}")
    dtype = torch.float64 if any(t.dtype == torch.float64 for t in items) else items[0].dtype
    lengths = torch.tensor([t.shape[0] for t in items], dtype=torch.int64)
    T = int(lengths.max())
    d = items[0].shape[1]
    out = torch.full((len(items), T, d), float("nan"), dtype=dtype, device=items[0].device)
    for i, t in enumerate(items):
        out[i, : t.shape[0]] = t.to(dtype)
    kind = "torch" if kinds == {"torch"} else "numpy"
    return out, lengths.to(out.device), kind


def _lengths_from_nan(x: Tensor, name: str) -> Tensor:
    """tslearn's convention: trailing all-NaN time steps are padding. x (..., T, d) -> lengths (...)."""
    valid = ~torch.isnan(x).all(dim=-1)                                # (..., T)
    T = x.shape[-2]
    steps = torch.arange(1, T + 1, device=x.device)
    return (valid * steps).amax(dim=-1).to(torch.int64)               # last valid step + 1 (0: none)


def _check_lengths(lengths: Any, shape: Tuple[int, ...], T: int, device: torch.device, name: str, arg: str) -> Tensor:
    """Validate user lengths of shape ``shape`` (or broadcastable (n,) for K groups) with values in [1, T]."""
    t, _ = _to_tensor(lengths, name, arg) if not isinstance(lengths, Tensor) else (lengths.detach(), "torch")
    if t.is_floating_point():
        if not torch.equal(t, t.round()):
            raise ValueError(f"{name}: expected {arg} to hold integers, got non-integer values")
    elif t.dtype == torch.bool or t.is_complex():
        raise ValueError(f"{name}: expected {arg} to be an integer tensor, got {t.dtype}")
    t = t.to(device=device, dtype=torch.int64)
    if tuple(t.shape) != shape:
        if len(shape) == 2 and tuple(t.shape) == shape[1:]:
            t = t.unsqueeze(0).expand(shape)
        else:
            want = " or ".join(str(s) for s in ([shape] if len(shape) == 1 else [shape, shape[1:]]))
            raise ValueError(f"{name}: expected {arg} of shape {want}, got {tuple(t.shape)}")
    if t.numel() and (int(t.min()) < 1 or int(t.max()) > T):
        raise ValueError(
            f"{name}: expected {arg} in [1, {T}] (the padded length), got values in [{int(t.min())}, {int(t.max())}]"
        )
    return t.contiguous()


def _prepare_series(X: Any, x_lengths: Any, name: str, allow_groups: bool) -> _Data:
    """Read X as one group (n, T, d) / (n, T) / list of series, or K groups (K, n, T, d)."""
    squeeze_2d = False
    if isinstance(X, (list, tuple)) and len(X) == 0:
        raise ValueError(f"{name}: expected non-empty X, got an empty {type(X).__name__}")
    if isinstance(X, (list, tuple)) and _is_ragged_or_series_list(X):
        x, lengths, kind = _series_list_to_padded(X, name)
        x = x.unsqueeze(0)
        lengths = lengths.unsqueeze(0)
        user_lengths = lengths
        single = True
        if x_lengths is not None:
            user_lengths = None  # checked below against the padded shape
    else:
        x, kind = _to_tensor(X, name, "X")
        user_lengths = None
        if x.dim() == 2:                         # (n, T): n univariate series (tslearn's convention)
            x = x.unsqueeze(-1)
            squeeze_2d = True
        if x.dim() == 3:
            x = x.unsqueeze(0)
            single = True
        elif x.dim() == 4 and allow_groups:
            single = False
        else:
            want = "(n, length, features), (n, length) or K groups (K, n, length, features)" if allow_groups \
                else "(n, length, features) or (n, length)"
            raise ValueError(f"{name}: expected X of shape {want}, got a {x.dim()}-D input of shape {tuple(x.shape)}")
    K, n, T, d = x.shape
    given_shape = tuple(x.shape) if not single else tuple(x.shape[1:])
    if K == 0 or n == 0 or T == 0 or d == 0:
        raise ValueError(f"{name}: expected non-empty X (groups, series, length and features), got shape "
                         f"{given_shape}")
    if not squeeze_2d:
        check_layout(name, given_shape, "tslearn", T, d, f"series of length {T} with {d} features")
    if x_lengths is not None:
        lengths = _check_lengths(x_lengths, (n,) if single else (K, n), T, x.device, name, "x_lengths")
        lengths = lengths.reshape(K, n)
        steps = torch.arange(T, device=x.device)
        inside = steps.view(1, 1, T) < lengths.unsqueeze(-1)                      # (K, n, T)
        bad = ~torch.isfinite(x) & inside.unsqueeze(-1)
        if bool(bad.any()):
            raise ValueError(f"{name}: X holds NaN or inf inside the series (within x_lengths)")
        x = torch.where(inside.unsqueeze(-1), x, torch.zeros((), dtype=x.dtype, device=x.device))
    elif user_lengths is not None:
        lengths = user_lengths
        inside = torch.arange(T, device=x.device).view(1, 1, T) < lengths.unsqueeze(-1)
        bad = ~torch.isfinite(x) & inside.unsqueeze(-1)
        if bool(bad.any()):
            raise ValueError(f"{name}: X holds NaN or inf inside a series")
        x = torch.nan_to_num(x, nan=0.0)
    else:
        if bool(torch.isinf(x).any()):
            raise ValueError(f"{name}: X holds inf values")
        if bool(torch.isnan(x).any()):
            lengths = _lengths_from_nan(x, name)
            if int(lengths.min()) == 0:
                raise ValueError(f"{name}: X holds a series made only of NaN")
            inside = torch.arange(T, device=x.device).view(1, 1, T) < lengths.unsqueeze(-1)
            if bool((torch.isnan(x) & inside.unsqueeze(-1)).any()):
                raise ValueError(
                    f"{name}: X holds NaN inside a series; only trailing all-NaN time steps are read as "
                    f"padding (tslearn's convention), or pass x_lengths"
                )
            x = torch.nan_to_num(x, nan=0.0)
        else:
            lengths = torch.full((K, n), T, dtype=torch.int64, device=x.device)
    longest = int(lengths.max())
    if longest < T:  # padding past the longest series: drop it, T is the longest length from here on
        x = x[:, :, :longest]
    return _Data(x.contiguous(), lengths, single, kind, squeeze_2d)


_LAYOUTS = {"tslearn": "(n_series, length, features)", "aeon": "(n_cases, n_channels, n_timepoints)"}


def check_layout(who: str, shape: Tuple[int, ...], layout: str, n_timepoints: int, n_features: int,
                 reading: str) -> None:
    """Catches the other family's layout: ``who`` reads ``layout`` ("tslearn" for the SoftDTW family,
    "aeon" for the ROCKET family), and X of ``shape`` reads as ``reading``. A single time step with
    several features (channels) is a ValueError, at least 4x more features than time steps a
    UserWarning; both name the two layouts and the transpose that fixes X."""
    other = "aeon" if layout == "tslearn" else "tslearn"
    fix = "pass X.transpose(0, 2, 1) for a numpy array, X.transpose(1, 2) for a tensor"
    if n_timepoints == 1 and n_features > 1:
        raise ValueError(f"{who}: X of shape {shape} reads as {reading}; that looks like {other}'s layout "
                         f"{_LAYOUTS[other]}, while {who} reads {_LAYOUTS[layout]}, {layout}'s layout: {fix}")
    if n_features >= 4 * n_timepoints:
        warnings.warn(f"{who}: X of shape {shape} reads as {reading}; if it is in {other}'s layout "
                      f"{_LAYOUTS[other]}, {who} reads {_LAYOUTS[layout]}: {fix}", UserWarning, stacklevel=4)


def _is_ragged_or_series_list(X: Sequence[Any]) -> bool:
    """Whether a Python list is a list of separate series (tensors/arrays, or nested lists of unequal lengths)."""
    if any(isinstance(s, Tensor) for s in X):
        return True
    try:
        a = np.asarray(X)
    except ValueError:
        return True
    return a.dtype == object


def _check_scalar(value: Any, name: str, arg: str, *, positive: bool = False, nonneg: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected {arg} to be a number, got {value!r}") from None
    if not math.isfinite(v) or (positive and v <= 0) or (nonneg and v < 0):
        need = "> 0" if positive else ">= 0" if nonneg else "finite"
        raise ValueError(f"{name}: expected {arg} {need} and finite, got {value!r}")
    return v


def _check_int(value: Any, name: str, arg: str, minimum: int) -> int:
    """An integer option: TypeError for another type (bools and integral floats included),
    ValueError below ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected {arg} to be an int, got {type(value).__name__} {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name}: expected {arg} >= {minimum}, got {int(value)}")
    return int(value)


def _check_bandwidth(bandwidth: Any, name: str) -> Optional[int]:
    if bandwidth is None:
        return None
    return _check_int(bandwidth, name, "bandwidth", 0)


def _resample(x: Tensor, lengths: Tensor, length: int) -> Tensor:
    """Linear interpolation of each series x[s, :lengths[s]] to ``length`` points: (S, T, d) -> (S, length, d).

    Same as tslearn's ``TimeSeriesResampler``: ``np.interp(linspace(0, 1, length), linspace(0, 1, l_s), x_s)``.
    """
    S, T, d = x.shape
    last = (lengths - 1).to(x.dtype).unsqueeze(1)                                   # (S, 1)
    if length == 1:
        pos = torch.zeros(S, 1, dtype=x.dtype, device=x.device)
    else:
        pos = torch.arange(length, dtype=x.dtype, device=x.device).unsqueeze(0) * last / (length - 1)
    i0 = pos.floor().to(torch.int64)
    i0 = torch.minimum(i0, (lengths - 1).unsqueeze(1))
    i1 = torch.minimum(i0 + 1, (lengths - 1).unsqueeze(1))
    frac = (pos - i0.to(x.dtype)).unsqueeze(-1)
    a = torch.gather(x, 1, i0.unsqueeze(-1).expand(S, length, d))
    b = torch.gather(x, 1, i1.unsqueeze(-1).expand(S, length, d))
    return a + frac * (b - a)


# --- the functional API's eager side: numpy / list input and argument types ---------------------------------------
def _is_array_input(*values: Any) -> bool:
    """Whether any of the (non-None) inputs is not a tensor: numpy arrays, lists, scalars."""
    return any(v is not None and not isinstance(v, Tensor) for v in values)


def _checked_gamma_type(gamma: Any, op: str) -> Any:
    """gamma as a float or the tensor given; TypeError for anything else (bools included)."""
    if isinstance(gamma, Tensor):
        return gamma
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
        raise TypeError(f"{op}: expected gamma to be a float or a tensor, got {type(gamma).__name__} {gamma!r}")
    return float(gamma)


def _checked_bandwidth_type(bandwidth: Any, op: str) -> Optional[int]:
    """bandwidth as an int or None; TypeError for floats (even integral ones), bools and other types."""
    if bandwidth is None:
        return None
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, numbers.Integral):
        raise TypeError(f"{op}: expected bandwidth to be an int or None, got {type(bandwidth).__name__} {bandwidth!r}")
    return int(bandwidth)


def _checked_itakura_type(value: Any, op: str, arg: str = "itakura_max_slope") -> Optional[float]:
    """itakura_max_slope as a float or None; TypeError for bools, strings and other types. Its value
    (finite, >= 1) is the ops' check, or :func:`_check_itakura_slope`'s where no op runs yet."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: expected {arg} to be a float or None, got {type(value).__name__} {value!r}")
    return float(value)


def _check_itakura_slope(value: Any, name: str, arg: str = "itakura_max_slope", optional: bool = True
                         ) -> Optional[float]:
    """An Itakura slope given to a module, an estimator or a mask, checked where it is given (not
    where first used): the type as :func:`_checked_itakura_type` (None only if ``optional``), the
    value in the ops' words (finite, >= 1)."""
    if value is None and not optional:
        raise TypeError(f"{name}: expected {arg} to be a float, got None")
    slope = _checked_itakura_type(value, name, arg)
    if slope is not None and not (math.isfinite(slope) and slope >= 1):
        raise ValueError(f"{name}: {arg} must be a finite number >= 1{' or None' if optional else ''}, got {slope:g}")
    return slope


def _checked_lengths_type(lengths: Any, op: str, arg: str) -> Optional[Tensor]:
    """Lengths as given (a tensor or None), or a list / tuple / numpy array of integers as an int64 tensor."""
    if lengths is None or isinstance(lengths, Tensor):
        return lengths
    try:
        a = np.asarray(lengths)
    except ValueError:
        a = np.asarray(None)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{op}: expected {arg} to be an integer tensor, a list of ints or None, got "
                        f"{type(lengths).__name__} of dtype {a.dtype}")
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))


def _checked_argument_types(op: str, gamma: Any, bandwidth: Any, itakura_max_slope: Any, x_lengths: Any,
                            y_lengths: Any, lengths_names: Tuple[str, str] = ("x_lengths", "y_lengths")
                            ) -> Tuple[Any, ...]:
    """The SoftDTW functions' gamma, bandwidth, itakura_max_slope and lengths, type-checked (TypeError
    naming ``op``) and converted: gamma a float or a tensor, bandwidth an int or None, the slope a
    float or None, lengths tensors or None. Values are the ops' checks."""
    return (_checked_gamma_type(gamma, op), _checked_bandwidth_type(bandwidth, op),
            _checked_itakura_type(itakura_max_slope, op),
            _checked_lengths_type(x_lengths, op, lengths_names[0]),
            _checked_lengths_type(y_lengths, op, lengths_names[1]))


def _series_ndim(value: Any) -> int:
    """The number of dimensions an input reads with; 0 for a ragged list (a batch of series)."""
    if isinstance(value, Tensor):
        return value.dim()
    try:
        a = np.asarray(value)
    except ValueError:
        return 0
    return 0 if a.dtype == object else a.ndim


def _single_series(value: Any, op: str, arg: str) -> Tensor:
    """One series, (T,) or (T, d), as a (T, d) tensor; trailing all-NaN time steps are dropped (tslearn's
    ``to_time_series(..., remove_nans=True)``), NaN elsewhere is an error."""
    t, _ = _to_tensor(value, op, arg)
    if t.dim() == 1:
        t = t.unsqueeze(1)
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise ValueError(f"{op}: expected a non-empty series {arg}, got shape {tuple(t.shape)}")
    if bool(torch.isnan(t).any()):
        length = int(_lengths_from_nan(t.unsqueeze(0), op)[0])
        if length == 0 or bool(torch.isnan(t[:length]).any()):
            raise ValueError(f"{op}: {arg} holds NaN inside the series; only trailing all-NaN time steps are read "
                             f"as padding (tslearn's convention)")
        t = t[:length]
    return t


def _series_batch(value: Any, lengths: Any, op: str, arg: str) -> Tuple[Tensor, Optional[Tensor]]:
    """A batch of series: (B, T, d) (NaN-padded or not) or a list of series of any lengths, as a padded
    (B, T, d) tensor and its lengths (None when every series has the full length)."""
    if isinstance(value, Tensor) and value.dim() == 3 and not bool(torch.isnan(value).any()):
        return value, lengths
    data = _prepare_series(value, lengths, op, allow_groups=False)
    x, found = data.x[0], data.lengths[0]
    if lengths is None and bool((found == x.shape[1]).all()):
        return x, None
    return x, found


def _pair_from_arrays(op: str, x: Any, y: Any, x_lengths: Any, y_lengths: Any, names: Tuple[str, str] = ("x", "y")
                      ) -> Tuple[Tensor, Tensor, Optional[Tensor], Optional[Tensor], bool]:
    """Reads a pair of inputs given as numpy arrays or lists, as tslearn's ``soft_dtw`` does: each side one
    series, (T,) or (T, d), or a batch of series, (B, T, d), NaN-padded or not, or a list of series of
    different lengths. Returns tensors, lengths and whether the pair is unbatched."""
    nx, ny = _series_ndim(x), _series_ndim(y)
    if (nx in (1, 2)) != (ny in (1, 2)):
        raise ValueError(f"{op}: expected {names[0]} and {names[1]} both single series ((length,) or (length, "
                         f"features)) or both batches ((batch, length, features) or lists of series), got "
                         f"{nx or 'a list of'}-D and {ny or 'a list of'}-D input")
    if nx in (1, 2):
        if x_lengths is not None or y_lengths is not None:
            raise ValueError(f"{op}: lengths apply to batches of series, got single series with lengths")
        a, b = _single_series(x, op, names[0]), _single_series(y, op, names[1])
        la = lb = None
        unbatched = True
    else:
        for n, name in ((nx, names[0]), (ny, names[1])):
            if n > 3:
                raise ValueError(f"{op}: expected {name} of at most 3 dimensions (batch, length, features), got {n}-D")
        a, la = _series_batch(x, x_lengths, op, names[0])
        b, lb = _series_batch(y, y_lengths, op, names[1])
        unbatched = False
    if a.dtype != b.dtype:  # numpy's promotion: float32 with float64 computes in float64
        a, b = a.double(), b.double()
    return a, b, la, lb, unbatched


def _datasets_from_arrays(op: str, X: Any, Y: Any, x_lengths: Any, y_lengths: Any
                          ) -> Tuple[Tensor, Optional[Tensor], Tensor, Optional[Tensor]]:
    """Two datasets given as numpy arrays or lists (``Y`` may be None), read as tslearn's ``cdist_*``
    read them: (A, N, d), (A, N) univariate, lists of series of any lengths, NaN-padded. Returns X's
    (A, N, d) tensor, Y's (or None), and their lengths; float32 with float64 computes in float64."""
    data_x = _prepare_series(X, x_lengths, op, allow_groups=False)
    data_y = None if Y is None else _prepare_series(Y, y_lengths, op, allow_groups=False)
    a, la = data_x.x[0], data_x.lengths[0]
    b, lb = (None, None) if data_y is None else (data_y.x[0], data_y.lengths[0])
    if b is not None and a.dtype != b.dtype:
        a, b = a.double(), b.double()
    return a, b, la, lb


def _to_numpy(out: Any) -> Any:
    """The result of a call on arrays, as numpy: 0-dim results as numpy scalars, tuples element-wise."""
    if isinstance(out, tuple):
        return tuple(_to_numpy(o) for o in out)
    a = out.detach().cpu().numpy()
    return a[()] if a.ndim == 0 else a


def _tslearn_constraint(who: str, constraint: Any, radius: Any, slope: Any, prefix: str = "",
                        both_unnamed: str = "warn") -> Tuple[Optional[int], Optional[float]]:
    """(Sakoe–Chiba radius, Itakura slope) from tslearn's ``global_constraint``,
    ``sakoe_chiba_radius`` and ``itakura_max_slope``, by tslearn's ``compute_mask`` rules: at most
    one of the two is used. ``"sakoe_chiba"``: the radius (1 if not given), the slope ignored;
    ``"itakura"``: the slope (2.0 if not given), the radius ignored; None or "": whichever is given,
    neither for none. Both given without a name: tslearn's metrics warn and use no constraint
    (``both_unnamed="warn"``); ``"raise"`` refuses it. Only the one used is checked; ``prefix``
    names where the arguments came from in messages (``"metric_params"``)."""
    label = (lambda key: f"{prefix}[{key!r}]") if prefix else (lambda key: key)
    if constraint not in (None, "", "sakoe_chiba", "itakura"):
        raise ValueError(f"{who}: expected {label('global_constraint')} to be None, 'sakoe_chiba' or 'itakura', "
                         f"got {constraint!r}")
    if constraint in (None, "") and radius is not None and slope is not None:
        if both_unnamed == "raise":
            raise ValueError(f"{who}: {prefix or 'the arguments'} give both sakoe_chiba_radius and itakura_max_slope "
                             f"without a global_constraint to choose one ('sakoe_chiba' or 'itakura')")
        warnings.warn(f"{who}: sakoe_chiba_radius and itakura_max_slope are both given without a global_constraint; "
                      "no constraint is used (tslearn's rule)", RuntimeWarning, stacklevel=3)
        return None, None
    if constraint == "sakoe_chiba" or (constraint in (None, "") and radius is not None):
        return _check_int(1 if radius is None else radius, who, label("sakoe_chiba_radius"), 0), None
    if constraint == "itakura" or slope is not None:
        return None, _check_itakura_slope(2.0 if slope is None else slope, who, label("itakura_max_slope"))
    return None, None
