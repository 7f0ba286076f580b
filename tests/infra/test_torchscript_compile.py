"""TorchScript round trip in a fresh process and torch.compile(fullgraph=True) against eager
(torch.library.opcheck of every operator: tests/infra/test_opcheck.py)."""
import subprocess
import sys
import textwrap

import pytest
import torch

import softdtw_torch as st
from softdtw_torch import _reference as ref


class Model(torch.nn.Module):
    """A small model whose loss is SoftDTW: a learned linear map applied before the comparison."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 3).double()
        self.loss = st.SoftDTW(gamma=0.5, bandwidth=4, reduction="sum")
        self.div = st.SoftDTW(gamma=0.5, normalize=True, fused=False, reduction="none")

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = self.proj(x)
        return self.loss(z, y) + self.div(z, y).sum() + st.soft_dtw_from_cost(ref.sqeuclidean(z, y)).sum()


def values_and_grads(model, x, y):
    x = x.clone().requires_grad_(True)
    out = model(x, y)
    out.backward()
    return out.detach(), x.grad


def test_torchscript_save_load_in_fresh_process(tmp_path):
    torch.manual_seed(0)
    model = Model()
    x, y = ref.random_pairs(2, 9, 7, 3)
    scripted = torch.jit.script(model)
    eager_value, eager_grad = values_and_grads(model, x, y)
    script_value, script_grad = values_and_grads(scripted, x, y)
    assert torch.equal(eager_value, script_value) and torch.equal(eager_grad, script_grad)

    path = tmp_path / "model.pt"
    scripted.save(str(path))
    torch.save({"x": x, "y": y}, tmp_path / "inputs.pt")
    # A fresh interpreter that only imports the package (for the ops) and loads the file.
    code = textwrap.dedent(
        f"""
        import torch, softdtw_torch
        model = torch.jit.load({str(path)!r})
        inputs = torch.load({str(tmp_path / 'inputs.pt')!r}, weights_only=True)
        x = inputs["x"].clone().requires_grad_(True)
        out = model(x, inputs["y"])
        out.backward()
        torch.save({{"value": out.detach(), "grad": x.grad}}, {str(tmp_path / 'out.pt')!r})
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    loaded = torch.load(tmp_path / "out.pt", weights_only=True)
    assert torch.equal(loaded["value"], eager_value)
    assert torch.equal(loaded["grad"], eager_grad)


def test_scripted_functions_raise_clear_errors():
    scripted = torch.jit.script(st.soft_dtw)
    with pytest.raises(Exception, match="soft_dtw: expected x and y both 2-D"):
        scripted(torch.rand(3, 2), torch.rand(1, 3, 2))


@pytest.mark.parametrize("fused", [True, False])
def test_compile_fullgraph_matches_eager(fused):
    torch._dynamo.reset()
    x, y = ref.random_pairs(3, 17, 12, 2, dtype=torch.float32)
    xl = torch.tensor([17, 9, 4])

    def loss(a, b):
        return st.soft_dtw(a, b, gamma=0.3, bandwidth=5, fused=fused, x_lengths=xl).sum() + st.soft_dtw(
            a, b, gamma=0.3, normalize=True, fused=fused
        ).mean()

    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    outs = []
    for f in (loss, compiled):
        a = x.clone().requires_grad_(True)
        b = y.clone().requires_grad_(True)
        value = f(a, b)
        value.backward()
        outs.append((value.detach(), a.grad, b.grad))
    for eager, comp in zip(*outs):
        torch.testing.assert_close(comp, eager, rtol=0, atol=0)


@pytest.mark.slow
def test_compile_inductor_matches_eager():
    torch._dynamo.reset()
    x, y = ref.random_pairs(2, 10, 8, 2, dtype=torch.float32)
    model = st.SoftDTW(gamma=0.5)
    compiled = torch.compile(model, fullgraph=True)
    a = x.clone().requires_grad_(True)
    value = compiled(a, y)
    value.backward()
    b = x.clone().requires_grad_(True)
    expected = model(b, y)
    expected.backward()
    torch.testing.assert_close(value, expected)
    torch.testing.assert_close(a.grad, b.grad)
