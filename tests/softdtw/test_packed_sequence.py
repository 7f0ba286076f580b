"""``torch.nn.utils.rnn.PackedSequence`` input to the loss modules (``SoftDTW``, ``SharpSoftDTW``,
``DILATELoss``), as pysdtw's users pass it: a pack is the ragged batch of its padded tensor and its
lengths, so values and gradients (w.r.t. the pack's data) are bit for bit those of the padded call
with lengths, in the caller's batch order also for ``enforce_sorted=False`` packs. Eager only: a
scripted module keeps its Tensor signature."""
import pytest
import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pack_sequence, pad_sequence

import softdtw_torch as st
from conftest import DEVICES

X_LENGTHS = (5, 12, 3, 9)  # unsorted: enforce_sorted=False packs reorder them
Y_LENGTHS = (4, 7, 11, 9)
FULL_Y = 6  # the length of an unpacked (tensor) y
FEATURES = 3

MODULES = {
    "SoftDTW": lambda: st.SoftDTW(gamma=0.5, reduction="none"),
    "SoftDTW-divergence-unfused": lambda: st.SoftDTW(gamma=0.5, normalize=True, fused=False, reduction="none"),
    "SoftDTW-band-l1": lambda: st.SoftDTW(gamma=0.3, bandwidth=2, cost="l1", reduction="none"),
    "SharpSoftDTW": lambda: st.SharpSoftDTW(gamma=0.5, normalize=True, reduction="none"),
    "DILATELoss": lambda: st.DILATELoss(alpha=0.3, gamma=0.2, reduction="none"),
}


def series(lengths, dtype, seed, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, FEATURES, dtype=dtype, generator=g).to(device) for n in lengths]


def packed_leaf(seqs, sort):
    """A pack of ``seqs`` whose data is a leaf that requires grad (the gradient lands in ``.data.grad``)."""
    if sort:
        seqs = sorted(seqs, key=len, reverse=True)
    pack = pack_sequence(seqs, enforce_sorted=sort)
    data = pack.data.detach().clone().requires_grad_(True)
    return PackedSequence(data, pack.batch_sizes, pack.sorted_indices, pack.unsorted_indices), seqs


def padded_leaf(seqs):
    """The zero-padded (B, T, d) leaf and (B,) lengths of ``seqs``, in their order."""
    lengths = torch.tensor([len(s) for s in seqs], device=seqs[0].device)
    return pad_sequence(seqs, batch_first=True).detach().clone().requires_grad_(True), lengths


def as_packed_grad(grad, lengths, like):
    """A padded gradient laid out as the data of ``like`` (a pack of the same sequences)."""
    packed = pack_padded_sequence(grad, lengths.cpu(), batch_first=True, enforce_sorted=like.sorted_indices is None)
    assert torch.equal(packed.batch_sizes, like.batch_sizes)
    return packed.data


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("sort", [True, False], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("which", ["both", "x", "y"], ids=["both-packed", "x-packed", "y-packed"])
@pytest.mark.parametrize("name", list(MODULES))
def test_packed_equals_padded_with_lengths(name, which, sort, dtype):
    module = MODULES[name]()
    xs, ys = series(X_LENGTHS, dtype, 1), series(Y_LENGTHS, dtype, 2)
    if which == "x":  # the other side: a (B, FULL_Y, d) tensor, read at full length
        ys = series((FULL_Y,) * len(X_LENGTHS), dtype, 2)
    if which == "y":
        xs = series((FULL_Y,) * len(Y_LENGTHS), dtype, 1)
    # The packed side(s), each sorted by its own length for enforce_sorted=True packs; the padded
    # reference is built from the same lists in the same order.
    px, xs = packed_leaf(xs, sort) if which in ("both", "x") else (None, xs)
    py, ys = packed_leaf(ys, sort) if which in ("both", "y") else (None, ys)
    x_ref, x_len = padded_leaf(xs)
    y_ref, y_len = padded_leaf(ys)
    x_in = px if px is not None else x_ref.detach().clone().requires_grad_(True)
    y_in = py if py is not None else y_ref.detach().clone().requires_grad_(True)

    got = module(x_in, y_in)
    want = module(x_ref, y_ref, x_len if px is not None else None, y_len if py is not None else None)
    assert got.dtype == dtype and got.shape == (len(xs),)
    assert torch.equal(got, want)

    weights = torch.linspace(0.5, 2.0, len(xs), dtype=dtype)  # a gradient that tells the pairs apart
    (got * weights).sum().backward()
    (want * weights).sum().backward()
    for given, ref, lengths in ((x_in, x_ref, x_len), (y_in, y_ref, y_len)):
        if isinstance(given, PackedSequence):  # the gradient lands in the pack's data
            assert given.data.grad is not None
            assert torch.equal(given.data.grad, as_packed_grad(ref.grad, lengths, given))
        else:
            assert torch.equal(given.grad, ref.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_unsorted_pack_keeps_the_callers_batch_order(dtype):
    # An enforce_sorted=False pack stores the series longest first; the results come back in the order
    # of the list packed: pair b is (xs[b], ys[b]), each as if alone (fused mode: bit for bit).
    xs, ys = series(X_LENGTHS, dtype, 3), series(Y_LENGTHS, dtype, 4)
    px, py = pack_sequence(xs, enforce_sorted=False), pack_sequence(ys, enforce_sorted=False)
    assert not torch.equal(px.sorted_indices, torch.arange(len(xs)))  # the pack did reorder
    for module in (st.SoftDTW(gamma=0.5, reduction="none"), st.SharpSoftDTW(gamma=0.5, reduction="none"),
                   st.DILATELoss(gamma=0.5, reduction="none")):
        got = module(px, py)
        alone = torch.cat([module(x[None], y[None]) for x, y in zip(xs, ys)])
        assert torch.equal(got, alone)
        # One side packed: the tensor side is read in the caller's order too.
        y_full = torch.stack([y[:3] for y in ys])
        assert torch.equal(module(px, y_full), torch.cat([module(x[None], y[None, :3]) for x, y in zip(xs, ys)]))


def test_gradient_flows_back_through_packing():
    # The usual pipeline: series that require grad, packed; their gradients equal the padded call's.
    xs = [s.requires_grad_(True) for s in series(X_LENGTHS, torch.float64, 5)]
    ys = series(Y_LENGTHS, torch.float64, 6)
    st.SoftDTW(gamma=0.5)(pack_sequence(xs, enforce_sorted=False), pack_sequence(ys, enforce_sorted=False)).backward()
    x_ref, x_len = padded_leaf([x.detach() for x in xs])
    y_ref, y_len = padded_leaf(ys)
    st.SoftDTW(gamma=0.5)(x_ref, y_ref, x_len, y_len).backward()
    for b, x in enumerate(xs):
        assert torch.equal(x.grad, x_ref.grad[b, :len(x)])


def test_tensor_side_lengths_still_apply():
    # One side packed, the other a padded tensor with its own lengths.
    xs, ys = series(X_LENGTHS, torch.float64, 7), series(Y_LENGTHS, torch.float64, 8)
    y_pad, y_len = padded_leaf(ys)
    x_pad, x_len = padded_leaf(xs)
    for module in (st.SoftDTW(reduction="none"), st.DILATELoss(reduction="none")):
        got = module(pack_sequence(xs, enforce_sorted=False), y_pad, None, y_len)
        assert torch.equal(got, module(x_pad, y_pad, x_len, y_len))
        got = module(x_pad, pack_sequence(ys, enforce_sorted=False), x_len)
        assert torch.equal(got, module(x_pad, y_pad, x_len, y_len))


def test_reductions_and_input_2d_on_the_tensor_side():
    xs, ys = series(X_LENGTHS, torch.float32, 9), series(Y_LENGTHS, torch.float32, 10)
    px, py = pack_sequence(xs, enforce_sorted=False), pack_sequence(ys, enforce_sorted=False)
    x_pad, x_len = padded_leaf(xs)
    y_pad, y_len = padded_leaf(ys)
    for reduction in ("mean", "sum"):
        module = st.SoftDTW(reduction=reduction)
        assert torch.equal(module(px, py), module(x_pad, y_pad, x_len, y_len))
    # A univariate pack, (length, 1) series, against a (B, M) tensor read as univariate series.
    ux = pack_sequence([x[:, :1] for x in xs], enforce_sorted=False)
    uy = torch.randn(len(xs), 5, generator=torch.Generator().manual_seed(11))
    module = st.SoftDTW(input_2d="univariate", reduction="none")
    assert torch.equal(module(ux, uy), module(x_pad[..., :1], uy.unsqueeze(-1), x_len))


@pytest.mark.parametrize("device", DEVICES)
def test_lengths_on_the_data_device(device):
    xs, ys = series(X_LENGTHS, torch.float32, 12, device), series(Y_LENGTHS, torch.float32, 13, device)
    px, py = pack_sequence(xs, enforce_sorted=False), pack_sequence(ys, enforce_sorted=False)
    x_pad, x_len = padded_leaf(xs)
    y_pad, y_len = padded_leaf(ys)
    got = st.SoftDTW(gamma=0.5, reduction="none")(px, py)
    assert got.device == x_pad.device
    assert torch.equal(got, st.SoftDTW(gamma=0.5, reduction="none")(x_pad, y_pad, x_len, y_len))


@pytest.mark.parametrize("module,names", [
    (st.SoftDTW, ("x", "y", "x_lengths", "y_lengths")),
    (st.SharpSoftDTW, ("x", "y", "x_lengths", "y_lengths")),
    (st.DILATELoss, ("prediction", "target", "prediction_lengths", "target_lengths")),
])
def test_errors_name_the_module(module, names):
    xs, ys = series(X_LENGTHS, torch.float64, 14), series(Y_LENGTHS, torch.float64, 15)
    px, py = pack_sequence(xs, enforce_sorted=False), pack_sequence(ys, enforce_sorted=False)
    lengths = torch.tensor(X_LENGTHS)
    loss = module()
    name = module.__name__
    # Lengths given for a packed side: the pack carries its own.
    with pytest.raises(ValueError, match=f"{name}: {names[2]} was given with a PackedSequence {names[0]}"):
        loss(px, py, lengths)
    with pytest.raises(ValueError, match=f"{name}: {names[3]} was given with a PackedSequence {names[1]}"):
        loss(padded_leaf(xs)[0], py, None, torch.tensor(Y_LENGTHS))
    # Data that is not (total time steps, features).
    univariate = pack_sequence([x[:, 0] for x in xs], enforce_sorted=False)
    with pytest.raises(ValueError, match=(rf"{name}: expected a PackedSequence {names[0]} whose data is 2-D "
                                          r"\(total time steps, features\).*got data of shape \[29\]")):
        loss(univariate, py)
    four_d = pack_sequence([y[:, None, :] for y in ys], enforce_sorted=False)
    with pytest.raises(ValueError,
                       match=rf"{name}: expected a PackedSequence {names[1]} whose data is 2-D.*\[31, 1, 3\]"):
        loss(px, four_d)


@pytest.mark.parametrize("module", [st.SoftDTW, st.SharpSoftDTW, st.DILATELoss])
def test_scripted_modules_keep_their_tensor_signature(module):
    # PackedSequence handling is eager only: scripting does not compile it, and a scripted module
    # computes what it did on tensors and refuses a pack by its Tensor annotation.
    xs, ys = series(X_LENGTHS, torch.float64, 16), series(Y_LENGTHS, torch.float64, 17)
    x_pad, x_len = padded_leaf(xs)
    y_pad, y_len = padded_leaf(ys)
    eager = module(reduction="none")
    scripted = torch.jit.script(eager)
    assert "pad_packed_sequence" not in scripted.code
    assert torch.equal(scripted(x_pad, y_pad, x_len, y_len), eager(x_pad, y_pad, x_len, y_len))
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor'"):
        scripted(pack_sequence(xs, enforce_sorted=False), y_pad)


def test_compile_with_a_graph_break():
    # torch.compile runs it with a graph break at torch's pad_packed_sequence (fullgraph=True refuses it).
    torch._dynamo.reset()
    xs, ys = series(X_LENGTHS, torch.float32, 18), series(Y_LENGTHS, torch.float32, 19)
    px, py = pack_sequence(xs, enforce_sorted=False), pack_sequence(ys, enforce_sorted=False)
    module = st.SoftDTW(gamma=0.5, reduction="none")
    assert torch.equal(torch.compile(module, backend="aot_eager")(px, py), module(px, py))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("which", ["both", "x"], ids=["both-packed", "x-packed"])
def test_matches_pysdtw_on_packed_sequences(which, dtype):
    # pysdtw.SoftDTW unpacks a PackedSequence the same way (pad_packed_sequence, batch_first, caller's
    # order; a tensor side at full length) and returns the (B,) values: reduction="none" here. It keeps
    # its DP table R in float32 whatever the input dtype, so the two agree to float32 rounding, in
    # values and gradients (with bandwidth=None: its band is another, scaled one).
    pysdtw = pytest.importorskip("pysdtw")
    xs, ys = series(X_LENGTHS, dtype, 20), series(Y_LENGTHS, dtype, 21)
    if which == "x":
        ys = series((FULL_Y,) * len(X_LENGTHS), dtype, 21)
    grads, values = [], []
    for loss in (st.SoftDTW(gamma=0.5, reduction="none"), pysdtw.SoftDTW(gamma=0.5, use_cuda=False)):
        px, _ = packed_leaf(xs, sort=False)
        py, _ = packed_leaf(ys, sort=False) if which == "both" else (torch.stack(ys).requires_grad_(True), None)
        value = loss(px, py)
        value.sum().backward()
        values.append(value.detach())
        grads.append(torch.cat([px.data.grad.flatten(), (py.data if which == "both" else py).grad.flatten()]))
    assert values[1].dtype == dtype
    torch.testing.assert_close(values[0], values[1], rtol=1e-6, atol=0)
    scale = grads[0].abs().max()
    torch.testing.assert_close(grads[0] / scale, grads[1] / scale, rtol=0, atol=1e-4)
