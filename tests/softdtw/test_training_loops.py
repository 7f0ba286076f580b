"""Training loops as people write them: mixed precision (torch.autocast) and compiled dynamic shapes.

Autocast follows torch's policy for its losses (csrc/autocast.cpp): float16/bfloat16 inputs on the
autocast device are cast to float32, the op computes and returns float32, float32 and float64 are
left alone. So under autocast every op must give exactly what it gives on the inputs cast to
float32 by hand, and the gradient must reach the low-precision tensors through the cast.

Dynamic shapes: torch.compile(dynamic=True) and torch.export with Dims keep the batch and the
lengths symbolic, so one compiled graph serves every length (the fused=None rule and the CPU's
packed-forward choice add inequality guards, d <= 128 and lengths <= 512, not equalities).
"""
import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend

import softdtw_torch as st
from softdtw_torch.rocket import HydraLayer, RocketLayer

LOW = torch.bfloat16  # CPU autocast's dtype (float16 on CPU needs a newer torch than we support)


def pair(b=3, n=9, m=7, d=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, n, d, generator=g), torch.randn(b, m, d, generator=g)


def as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


# Each case: a call of a public function on two float tensors, x and y (the "_from_cost" ones: a
# cost D (B, N, M) and an unused second tensor).
CALLS = {
    "soft_dtw fused": lambda x, y: st.soft_dtw(x, y, gamma=0.5),
    "soft_dtw unfused": lambda x, y: st.soft_dtw(x, y, gamma=0.5, fused=False),
    "soft_dtw divergence band": lambda x, y: st.soft_dtw(x, y, gamma=0.5, normalize=True, bandwidth=2),
    "soft_dtw l1": lambda x, y: st.soft_dtw(x, y, gamma=0.5, cost="l1"),
    "soft_dtw tensor gamma": lambda x, y: st.soft_dtw(x, y, gamma=torch.tensor(0.5)),
    "soft_dtw_from_cost": lambda D, _: st.soft_dtw_from_cost(D),
    "soft_dtw_from_cost tensor gamma": lambda D, _: st.soft_dtw_from_cost(D, gamma=torch.tensor(0.5)),
    "soft_dtw_alignment_from_cost": lambda D, _: st.soft_dtw_alignment_from_cost(D, gamma=torch.tensor(0.5)),
    "soft_dtw_sharp_from_cost": lambda D, _: st.soft_dtw_sharp_from_cost(D, gamma=0.5),
    "soft_dtw_alignment": lambda x, y: st.soft_dtw_alignment(x, y, gamma=0.5),
    "soft_dtw_alignment tensor gamma": lambda x, y: st.soft_dtw_alignment(x, y, gamma=torch.tensor(0.5)),
    "soft_dtw_sharp tensor gamma": lambda x, y: st.soft_dtw_sharp(x, y, gamma=torch.tensor([0.5, 1.0, 2.0])),
    "dilate tensor gamma": lambda x, y: st.dilate(x, y, gamma=torch.tensor(0.5)),
    "soft_dtw_sharp": lambda x, y: st.soft_dtw_sharp(x, y, gamma=0.5),
    "dilate": lambda x, y: st.dilate(x, y, gamma=0.5),
    "pairwise_cost": lambda x, y: st.pairwise_cost(x, y),
    "dtw": lambda x, y: st.dtw(x, y),
    "cdist_soft_dtw": lambda x, y: st.cdist_soft_dtw(x, y, gamma=0.5),
    "SoftDTW": lambda x, y: st.SoftDTW(gamma=0.5)(x, y),
    "DILATELoss": lambda x, y: st.DILATELoss(gamma=0.5)(x, y),
}


@pytest.mark.parametrize("case", sorted(CALLS))
def test_autocast_computes_in_float32(case):
    x, y = pair()
    if "from_cost" in case:
        x = st.pairwise_cost(x, y)
    x_low, y_low = x.to(LOW), y.to(LOW)
    expected = as_tuple(CALLS[case](x_low.float(), y_low.float()))
    with torch.autocast("cpu", dtype=LOW):
        both_low = as_tuple(CALLS[case](x_low, y_low))
        mixed = as_tuple(CALLS[case](x_low, y_low.float()))  # model output low, target float32
    for got in (both_low, mixed):
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            assert a.dtype == torch.float32
            assert torch.equal(a, b), case


def test_autocast_leaves_float64_and_outside_autocast_keeps_the_input_dtype():
    x, y = pair()
    with torch.autocast("cpu", dtype=LOW):
        value64 = st.soft_dtw(x.double(), y.double())
    assert value64.dtype == torch.float64
    assert torch.equal(value64, st.soft_dtw(x.double(), y.double()))
    # Without autocast, low-precision input returns its own dtype (accumulated in float32).
    assert st.soft_dtw(x.to(LOW), y.to(LOW)).dtype == LOW


def test_autocast_rocket_layers_compute_in_float32():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 2, 40, generator=g).to(LOW)
    for layer in (RocketLayer(2, 40, n_kernels=20, seed=0), HydraLayer(2, 40, seed=0)):
        with torch.autocast("cpu", dtype=LOW):
            features = layer(x)
        assert features.dtype == torch.float32
        assert torch.equal(features, layer(x.float()))


def test_autocast_gradient_reaches_the_low_precision_tensor():
    x, y = pair()
    x_low = x.to(LOW).requires_grad_(True)
    with torch.autocast("cpu", dtype=LOW):
        loss = st.SoftDTW(gamma=0.5)(x_low, y)
    loss.backward()
    x32 = x.to(LOW).float().requires_grad_(True)
    st.SoftDTW(gamma=0.5)(x32, y).backward()
    assert x_low.grad.dtype == LOW
    assert torch.equal(x_low.grad, x32.grad.to(LOW))


def train(model, loss_fn, batches, autocast, steps=3, scale=2.0 ** 12):
    """A few SGD steps: forward (under bf16 autocast or not), the loss scaled as GradScaler
    scales it, backward, gradients unscaled. Returns the losses and the first step's gradients."""
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    losses, first_grads = [], None
    for step in range(steps):
        x, target = batches[step % len(batches)]
        opt.zero_grad()
        with torch.autocast("cpu", dtype=LOW, enabled=autocast):
            loss = loss_fn(model(x), target)
        assert loss.dtype == torch.float32
        (loss * scale).backward()
        for p in model.parameters():
            p.grad /= scale
        if first_grads is None:
            first_grads = [p.grad.clone() for p in model.parameters()]
        losses.append(loss.item())
        opt.step()
    return losses, first_grads


@pytest.mark.parametrize("loss_fn", [st.SoftDTW(gamma=0.1, normalize=True), st.DILATELoss(gamma=0.1)],
                         ids=["softdtw_divergence", "dilate"])
def test_bf16_autocast_training_matches_float32(loss_fn):
    g = torch.Generator().manual_seed(2)
    batches = [(torch.randn(8, 30, 4, generator=g), torch.randn(8, 30, 4, generator=g)) for _ in range(3)]
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    mixed = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    mixed.load_state_dict(reference.state_dict())
    losses32, grads32 = train(reference, loss_fn, batches, autocast=False)
    losses16, grads16 = train(mixed, loss_fn, batches, autocast=True)
    # bfloat16 keeps 8 significant bits (relative rounding 2^-9 ≈ 0.002 per operation): the model's
    # matrix products round in bfloat16, the loss in float32.
    for a, b in zip(grads16, grads32):
        assert (a - b).norm() <= 3e-2 * b.norm()
    torch.testing.assert_close(torch.tensor(losses16), torch.tensor(losses32), rtol=2e-2, atol=0)


# --- compiled dynamic shapes: one graph for every length and batch ---------------------------
LENGTHS = (50, 57, 64, 71, 80, 90, 100, 120)  # 8 lengths, batches 3-5

MODELS = {
    "SoftDTW": lambda: st.SoftDTW(gamma=0.1),
    "SoftDTW divergence band": lambda: st.SoftDTW(gamma=0.1, normalize=True, bandwidth=5),
    "SoftDTW unfused": lambda: st.SoftDTW(gamma=0.1, fused=False),
    "SharpSoftDTW": lambda: st.SharpSoftDTW(gamma=0.1),
    "DILATELoss": lambda: st.DILATELoss(gamma=0.1),
    "RocketLayer": lambda: RocketLayer(2, 60, n_kernels=20, seed=0),
    "HydraLayer": lambda: HydraLayer(2, 60, seed=0),
}


def model_inputs(name, k, n):
    g = torch.Generator().manual_seed(k)
    batch = 3 + k % 3  # never 2, the channel / feature count: torch's duck sizing would tie them
    if name in ("RocketLayer", "HydraLayer"):
        return (torch.randn(batch, 2, n, generator=g, requires_grad=True),)
    return (torch.randn(batch, n, 2, generator=g, requires_grad=True), torch.randn(batch, n + 3, 2, generator=g))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_compiled_dynamic_loop_compiles_once(name):
    """torch.compile(dynamic=True), forward and backward traced (aot_eager), over 8 lengths and 3
    batch sizes: no recompilation after the first step, and eager's values and gradients."""
    torch._dynamo.reset()
    model = MODELS[name]()
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(model, backend=counter, dynamic=True)
    frames_after_first = None
    for k, n in enumerate(LENGTHS):
        inputs = model_inputs(name, k, n)
        out = compiled(*inputs)
        (grad,) = torch.autograd.grad(out.sum(), inputs[0])
        eager_inputs = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
        eager = model(*eager_inputs)
        (eager_grad,) = torch.autograd.grad(eager.sum(), eager_inputs[0])
        torch.testing.assert_close(out, eager, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(grad, eager_grad, rtol=1e-5, atol=1e-6)
        if frames_after_first is None:
            frames_after_first = counter.frame_count
    assert frames_after_first >= 1
    assert counter.frame_count == frames_after_first, f"{name} recompiled for a new length or batch"


def test_mark_dynamic_compiles_once():
    torch._dynamo.reset()
    loss = st.SoftDTW(gamma=0.1, normalize=True)
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(loss, backend=counter)
    for k, n in enumerate(LENGTHS[:4]):
        x, y = pair(b=3, n=n, m=n + 2, seed=k)
        for t in (x, y):
            torch._dynamo.mark_dynamic(t, 1)
        compiled(x, y)
        if k == 0:
            frames = counter.frame_count
    assert counter.frame_count == frames
