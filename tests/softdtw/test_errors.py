"""Bad input: a clear error naming the function, what was expected and what came; never a crash,
a hang or a silent NaN. Each case checks the message as users see it."""
import math

import pytest
import torch

import softdtw_torch as st
from conftest import HAS_CUDA


def xy(batch=2, n=5, m=4, d=3, dtype=torch.float32):
    return torch.randn(batch, n, d, dtype=dtype), torch.randn(batch, m, d, dtype=dtype)


@pytest.mark.parametrize(
    "x_shape,y_shape,message",
    [
        # soft_dtw takes one pair (2-D) or a batch (3-D) and says so; its operator takes 3-D only.
        ((2, 5, 3, 1), (2, 4, 3), "soft_dtw: expected x and y both 2-D (n, features) for one pair or both 3-D "
                                  "(batch, n, features), got 4-D and 3-D"),
        ((2, 5, 3), (4, 3), "soft_dtw: expected x and y both 2-D"),
        ((5,), (4,), "soft_dtw: expected x and y both 2-D (n, features) for one pair or both 3-D (batch, n, "
                     "features), got 1-D and 1-D; for a univariate series use x.unsqueeze(-1)"),
        ((2, 5, 3), (3, 4, 3), "soft_dtw: expected x and y to have the same batch size, got 2 and 3"),
        ((2, 5, 3), (2, 4, 2), "soft_dtw: expected x and y to have the same number of features, got 3 and 2"),
        ((2, 0, 3), (2, 4, 3), "soft_dtw: expected non-empty sequences and features"),
        ((2, 5, 0), (2, 4, 0), "soft_dtw: expected non-empty sequences and features"),
    ],
)
def test_shape_errors(x_shape, y_shape, message):
    with pytest.raises(ValueError) as info:
        st.soft_dtw(torch.randn(x_shape), torch.randn(y_shape))
    assert message in str(info.value)


@pytest.mark.parametrize("fused", [True, False])
def test_dtype_errors(fused):
    x, y = xy()
    with pytest.raises(TypeError, match="soft_dtw: expected x and y to have the same dtype, got Float and Double"):
        st.soft_dtw(x, y.double(), fused=fused)
    with pytest.raises(TypeError, match="soft_dtw: expected x to be a floating-point tensor .* got Long"):
        st.soft_dtw(x.long(), y.long(), fused=fused)


def test_cost_errors():
    with pytest.raises(ValueError,
                       match=r"soft_dtw_from_cost: expected D 2-D \(n, m\) for one pair or 3-D \(batch, n, m\), got 4-D"):
        st.soft_dtw_from_cost(torch.rand(1, 2, 3, 4))
    with pytest.raises(ValueError, match=r"soft_dtw_from_cost: expected D to be a 3-D tensor \(batch, n, m\), got 4-D"):
        torch.ops.softdtw_torch.soft_dtw_from_cost(torch.rand(1, 2, 3, 4))  # the operator takes a batch only
    with pytest.raises(TypeError, match="soft_dtw_from_cost: expected D to be a floating-point tensor"):
        st.soft_dtw_from_cost(torch.ones(1, 3, 3, dtype=torch.int32))
    with pytest.raises(ValueError, match="soft_dtw_from_cost: expected non-empty sequences, got D of shape"):
        st.soft_dtw_from_cost(torch.rand(2, 3, 0))


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.needs_cuda
def test_device_mismatch():
    x, y = xy()
    with pytest.raises(ValueError, match="soft_dtw: expected x and y on the same device, got cpu and cuda:0"):
        st.soft_dtw(x, y.cuda())


def test_device_mismatch_is_checked_before_any_kernel():
    # Runs without a GPU: a 'meta' tensor stands in for another device.
    x, y = xy()
    with pytest.raises(ValueError, match="soft_dtw: expected x and y on the same device, got cpu and meta"):
        st.soft_dtw(x, y.to("meta"))


@pytest.mark.parametrize("gamma", [-1.0, -1e-300, math.nan, math.inf])
def test_bad_gamma(gamma):
    # 0 is hard DTW (tests/softdtw/test_hard_dtw.py); negative, NaN and inf are refused.
    x, y = xy()
    message = r"gamma must be 0 \(hard DTW\) or a positive finite number"
    with pytest.raises(ValueError, match="soft_dtw: " + message):
        st.soft_dtw(x, y, gamma=gamma)
    with pytest.raises(ValueError, match="soft_dtw_from_cost: " + message):
        st.soft_dtw_from_cost(torch.rand(1, 3, 3), gamma=gamma)
    with pytest.raises(ValueError, match="SoftDTW: " + message):
        st.SoftDTW(gamma=gamma)


def test_negative_bandwidth():
    x, y = xy()
    with pytest.raises(ValueError, match="soft_dtw: bandwidth must be >= 0 or None, got -1"):
        st.soft_dtw(x, y, bandwidth=-1)
    with pytest.raises(ValueError, match="SoftDTW: bandwidth must be >= 0 or None, got -3"):
        st.SoftDTW(bandwidth=-3)


def test_bad_reduction():
    with pytest.raises(ValueError, match="SoftDTW: reduction must be one of"):
        st.SoftDTW(reduction="avg")


@pytest.mark.parametrize(
    "lengths,message",
    [
        (torch.tensor([5, 6]), r"soft_dtw: expected x_lengths values in \[1, 5\], got min 5 and max 6"),
        (torch.tensor([0, 3]), r"soft_dtw: expected x_lengths values in \[1, 5\], got min 0 and max 3"),
        (torch.tensor([5]), r"soft_dtw: expected x_lengths of shape \(2,\) \(one length per pair\), got shape \[1\]"),
        (torch.tensor([[5, 5]]), r"soft_dtw: expected x_lengths of shape \(2,\)"),
        (torch.tensor([5.0, 4.0]), "soft_dtw: expected x_lengths to be an integer tensor, got Float"),
    ],
)
@pytest.mark.parametrize("fused", [True, False])
def test_bad_lengths(lengths, message, fused):
    x, y = xy()  # unfused too, the message names soft_dtw (not soft_dtw_from_cost, which it calls)
    error = TypeError if "integer tensor" in message else ValueError
    with pytest.raises(error, match=message):
        st.soft_dtw(x, y, x_lengths=lengths, fused=fused)


def test_bad_y_lengths_on_cost():
    with pytest.raises(ValueError, match=r"soft_dtw_from_cost: expected y_lengths values in \[1, 4\]"):
        st.soft_dtw_from_cost(torch.rand(2, 5, 4), y_lengths=torch.tensor([4, 9]))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_sequences_raise(bad):
    x, y = xy()
    x[1, 2, 0] = bad
    with pytest.raises(ValueError, match=r"soft_dtw: x and y must contain only finite values \(found NaN or inf\)"):
        st.soft_dtw(x, y, fused=True)


@pytest.mark.parametrize("bad", [math.nan, -math.inf])
def test_nan_or_negative_infinite_cost_raises(bad):
    D = torch.rand(2, 4, 4)
    D[1, 3, 0] = bad
    with pytest.raises(ValueError, match="soft_dtw_from_cost: D contains NaN or -inf"):
        st.soft_dtw_from_cost(D)


def test_nan_outside_band_or_lengths_is_ignored():
    # Cells the DP never reads cannot poison the result.
    D = torch.rand(1, 6, 6, dtype=torch.float64)
    D[0, 0, 5] = math.nan
    assert math.isfinite(st.soft_dtw_from_cost(D, bandwidth=1).item())
    assert math.isfinite(st.soft_dtw_from_cost(D, y_lengths=torch.tensor([4])).item())


def test_nan_in_unfused_sequences_raises():
    x, y = xy()
    x[0, 0, 0] = math.nan
    with pytest.raises(ValueError, match="^soft_dtw: D contains NaN"):
        st.soft_dtw(x, y, fused=False)


def test_backward_op_checks_its_table():
    D = torch.rand(2, 3, 3)
    backward = torch.ops.softdtw_torch._soft_dtw_from_cost_backward
    # float32 keeps each R as a pair hi + lo (a last dimension of 2); float64 as one number.
    with pytest.raises(RuntimeError, match=r"soft_dtw_from_cost: expected R, the forward's DP table, of shape "
                       r"\(2, 3, 3, 2\), dtype float"):
        backward(torch.ones(2), D, torch.zeros(2, 3, 3), 1.0, None, None, None, None)
    with pytest.raises(RuntimeError, match=r"soft_dtw_from_cost: expected R, the forward's DP table, of shape "
                       r"\(2, 3, 3\), dtype double"):
        backward(torch.ones(2), D.double(), torch.zeros(2, 3, 3, 2, dtype=torch.float64), 1.0, None, None, None, None)
    with pytest.raises(ValueError, match=r"soft_dtw_from_cost: expected grad of shape \(2,\), got \[3\]"):
        backward(torch.ones(3), D, torch.zeros(2, 3, 3, 2), 1.0, None, None, None, None)
    # An empty table is recomputed: the same gradient as from the forward's table.
    _, R = torch.ops.softdtw_torch._soft_dtw_from_cost_forward(D, 1.0, None, None, None, None, True)
    assert torch.equal(backward(torch.ones(2), D, torch.empty(0), 1.0, None, None, None, None),
                       backward(torch.ones(2), D, R, 1.0, None, None, None, None))
    # ... by the backward itself, which refuses invalid inputs with the forward's message.
    bad = D.clone()
    bad[1, 0, 2] = float("nan")
    with pytest.raises(ValueError, match="soft_dtw_from_cost: D contains NaN or -inf"):
        backward(torch.ones(2), bad, torch.empty(0), 1.0, None, None, None, None)
    x, y = torch.rand(2, 4, 1, dtype=torch.float64), torch.rand(2, 5, 1, dtype=torch.float64)
    fused_backward = torch.ops.softdtw_torch._soft_dtw_fused_backward
    _, R, none = torch.ops.softdtw_torch._soft_dtw_fused_forward(x, y, 1.0, None, None, None, None, "table")
    kept = fused_backward(torch.ones(2, dtype=torch.float64), x, y, R, none, 1.0, None, None, None, None, "table")
    for R, kept_name in ((torch.empty(0), "table"), (none, "nothing"), (none, "borders")):  # the CPU: no borders
        recomputed = fused_backward(torch.ones(2, dtype=torch.float64), x, y, R, none, 1.0, None, None, None, None,
                                    kept_name)
        assert all(torch.equal(a, b) for a, b in zip(kept, recomputed))
    x[0, 1, 0] = float("inf")
    with pytest.raises(ValueError, match="soft_dtw: x and y must contain only finite values"):
        fused_backward(torch.ones(2, dtype=torch.float64), x, y, none, none, 1.0, None, None, None, None, "nothing")


@pytest.mark.parametrize("device", ["cpu", "meta"])  # the kernel and the fake
def test_the_fused_pair_refuses_an_unknown_cache(device):
    # What the fused forward keeps (the memory planner's choice, csrc/softdtw/plan.h) is named by
    # a string: anything else is refused before the inputs are read.
    ops = torch.ops.softdtw_torch
    x, y = torch.rand(2, 4, 1, device=device), torch.rand(2, 5, 1, device=device)
    message = r'soft_dtw: expected {} to be one of "nothing", "table", "borders" or "gradients", got "{}"'
    with pytest.raises(ValueError, match=message.format("keep", "Table")):
        ops._soft_dtw_fused_forward(x, y, 1.0, None, None, None, None, "Table")
    with pytest.raises(ValueError, match=message.format("kept", "")):
        ops._soft_dtw_fused_backward(torch.ones(2, device=device), x, y, x, y, 1.0, None, None, None, None, "")
