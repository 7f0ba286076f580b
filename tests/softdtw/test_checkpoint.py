"""soft_dtw(..., checkpoint=True): the memory-lean backward of the fused mode.

The forward keeps no (B, N, M) DP table; the backward recomputes it (on CUDA from R kept on the
64 × 64 tile borders, see tests/softdtw/test_cuda_emulation.py and tests/softdtw/test_cuda.py; on CPU by rerunning
the forward). Values and gradients must not change, on every device, through the Python API, the
module, TorchScript and torch.compile.
"""
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import _reference as ref

from conftest import DEVICES


def values_and_grads(x, y, **kwargs):
    x = x.detach().clone().requires_grad_(True)
    y = y.detach().clone().requires_grad_(True)
    values = st.soft_dtw(x, y, **kwargs)
    (values * torch.arange(1, values.shape[0] + 1, dtype=values.dtype, device=values.device)).sum().backward()
    return values.detach(), x.grad, y.grad


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(gamma=0.5),
        dict(gamma=0.01, bandwidth=3),
        dict(gamma=1.0, normalize=True),
        dict(gamma=torch.tensor(0.7)),
        dict(gamma=0.5, x_lengths=torch.tensor([70, 12, 1]), y_lengths=torch.tensor([66, 66, 9])),
    ],
    ids=["plain", "band-small-gamma", "divergence", "tensor-gamma", "ragged"],
)
def test_same_values_and_gradients_as_keeping_the_table(device, kwargs):
    kwargs = {k: (v.to(device) if isinstance(v, torch.Tensor) and k != "gamma" else v) for k, v in kwargs.items()}
    x, y = ref.random_pairs(3, 70, 66, 3)
    x, y = x.to(device), y.to(device)
    kept = values_and_grads(x, y, fused=True, **kwargs)
    recomputed = values_and_grads(x, y, checkpoint=True, **kwargs)
    for a, b in zip(kept, recomputed):
        if device == "cpu":
            assert torch.equal(a, b)  # the CPU reruns the same forward: same bits
        else:
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


def test_forward_keeps_no_table_on_cpu():
    x, y = ref.random_pairs(2, 30, 20, 2)
    values, rows, cols = torch.ops.softdtw_torch._soft_dtw_fused_forward(x, y, 1.0, None, None, None, None, "borders")
    assert values.shape == (2,) and rows.numel() == 0 and cols.numel() == 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(fused=False), 'checkpoint=True needs the fused mode .* got cost="sqeuclidean" and fused=False'),
        (dict(cost="l1"), 'checkpoint=True needs the fused mode .* got cost="l1" and fused=None'),
        (dict(cost="cosine", gamma=torch.tensor(0.5)), 'checkpoint=True needs the fused mode .* got cost="cosine"'),
    ],
)
def test_checkpoint_outside_the_fused_mode_is_refused(kwargs, message):
    x, y = ref.random_pairs(2, 8, 6, 2)
    with pytest.raises(ValueError, match=message):
        st.soft_dtw(x, y, checkpoint=True, **kwargs)


@pytest.mark.slow  # torch.compile's first compile of a forward and a backward: 10-15 s on the 2-core VM
def test_module_torchscript_and_compile():
    x, y = ref.random_pairs(2, 9, 7, 3)
    module = st.SoftDTW(gamma=0.5, checkpoint=True, reduction="sum")
    assert "checkpoint=True" in repr(module)
    xe = x.clone().requires_grad_(True)
    eager = module(xe, y)
    eager.backward()
    xs = x.clone().requires_grad_(True)
    scripted = torch.jit.script(module)(xs, y)
    scripted.backward()
    assert torch.equal(eager, scripted) and torch.equal(xe.grad, xs.grad)
    compiled = torch.compile(lambda a, b: st.soft_dtw(a, b, gamma=0.5, checkpoint=True).sum(), fullgraph=True)
    xc = x.clone().requires_grad_(True)
    value = compiled(xc, y)
    value.backward()
    torch.testing.assert_close(value, eager)
    torch.testing.assert_close(xc.grad, xe.grad)


