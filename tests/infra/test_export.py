"""torch.export and AOTInductor with models that call softdtw_torch operators (docs/user_guide/deployment.md).

torch.export: the exported program's module (``ep.module()``) runs the same ATen and softdtw_torch
kernels as eager mode, so its outputs and its gradients (autograd through the unlifted module) are
compared with eager's bit for bit, before and after a torch.export.save/load round trip; the SoftDTW
values also against an independent float64 DP. The batch dimension is dynamic for the SoftDTW
losses, ROCKET and MiniRocket.

AOTInductor: the packages of examples/export_aoti.py (torch >= 2.6), loaded in a fresh interpreter,
against the eager models; and the same interpreter's failure to load them before
``import softdtw_torch``. The C++ side is tests/cpp/test_aoti.cpp (tests/infra/test_cpp.py).
"""
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch.export import Dim

import softdtw_torch as st
from softdtw_torch import _reference as ref
from softdtw_torch.rocket import RocketLayer

ROOT = Path(__file__).resolve().parents[2]
TORCH_VERSION = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])
# aoti_compile_and_package(exported_program) without example inputs: torch >= 2.6.
needs_aoti = pytest.mark.skipif(TORCH_VERSION < (2, 6), reason=f"AOTInductor packages need torch >= 2.6, "
                                f"this is torch {torch.__version__}")
GAMMA = 0.5


class Forecaster(torch.nn.Module):
    """A linear forecaster and its SoftDTW losses (the fused divergence with a band, and the
    unfused value, which builds the cost tensor): forward -> (forecast, loss)."""

    def __init__(self, n_history: int = 9, n_future: int = 7, features: int = 2) -> None:
        super().__init__()
        self.n_future, self.features = n_future, features
        self.linear = torch.nn.Linear(n_history * features, n_future * features)
        self.divergence = st.SoftDTW(gamma=GAMMA, bandwidth=3, normalize=True)
        self.value = st.SoftDTW(gamma=GAMMA, fused=False, reduction="sum")

    def forward(self, history: torch.Tensor, target: torch.Tensor):
        forecast = self.linear(history.flatten(1)).view(-1, self.n_future, self.features)
        return forecast, self.divergence(forecast, target) + 0.1 * self.value(forecast, target)


class MiniRocketFeatures(torch.nn.Module):
    """minirocket_transform with fitted parameters kept as buffers."""

    def __init__(self, fit_series: torch.Tensor) -> None:
        super().__init__()
        for i, p in enumerate(torch.ops.softdtw_torch.minirocket_fit(fit_series, 168, 32, 7)):
            self.register_buffer(f"p{i}", p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.softdtw_torch.minirocket_transform(x, self.p0, self.p1, self.p2, self.p3, self.p4)


class MultiRocketFeatures(torch.nn.Module):
    """multirocket_transform with fitted parameters kept as buffers (the series' five, the first
    difference's dilations, feature counts and biases)."""

    def __init__(self, fit_series: torch.Tensor) -> None:
        super().__init__()
        fitted = torch.ops.softdtw_torch.multirocket_fit(fit_series, 168, 32, 7)
        for i, p in enumerate(fitted[:5] + fitted[7:]):
            self.register_buffer(f"p{i}", p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.softdtw_torch.multirocket_transform(
            x, self.p0, self.p1, self.p2, self.p3, self.p4, self.p5, self.p6, self.p7)


def as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def assert_same_outputs(a, b) -> None:
    a, b = as_tuple(a), as_tuple(b)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert torch.equal(x, y), (x - y).abs().max()


def gradients(model: torch.nn.Module, inputs, grad_input: int = 0):
    """Outputs, d(sum of outputs)/d(inputs[grad_input]) and d/d(parameters), by autograd."""
    inputs = list(inputs)
    inputs[grad_input] = inputs[grad_input].detach().clone().requires_grad_(True)
    model.zero_grad(set_to_none=True)
    out = as_tuple(model(*inputs))
    sum(o.sum() for o in out).backward()
    params = {name: p.grad.clone() for name, p in model.named_parameters()}
    return tuple(o.detach() for o in out), inputs[grad_input].grad, params


def assert_export_matches_eager(model, example, runs, tmp_path, dynamic_shapes=None, grad_input=0):
    """Exports model; on every input tuple of runs, ep.module() (fresh and after save/load) gives
    eager's outputs, input gradient and parameter gradients, bit for bit. Returns the program."""
    program = torch.export.export(model, example, dynamic_shapes=dynamic_shapes)
    path = tmp_path / "program.pt2"
    torch.export.save(program, path)
    for module in (program.module(), torch.export.load(path).module()):
        for inputs in runs:
            out, grad, params = gradients(module, inputs, grad_input)
            eager_out, eager_grad, eager_params = gradients(model, inputs, grad_input)
            assert_same_outputs(out, eager_out)
            assert torch.equal(grad, eager_grad)
            assert params.keys() == eager_params.keys()
            for name in params:
                assert torch.equal(params[name], eager_params[name]), name
    return program


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softdtw_loss_module(dtype, tmp_path):
    x, y = ref.random_pairs(3, 8, 6, 2, dtype=dtype, seed=1)
    model = st.SoftDTW(gamma=GAMMA, reduction="none")
    program = assert_export_matches_eager(model, (x, y), [(x, y)], tmp_path)
    # And the values, independently: the float64 DP of softdtw_torch._reference.
    values = program.module()(x, y)
    expected = torch.stack([ref.soft_dtw_autograd(ref.sqeuclidean(x[i], y[i]).double(), GAMMA) for i in range(3)])
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(values.double(), expected, rtol=tol, atol=tol)


def test_forecaster_with_softdtw_losses(tmp_path):
    torch.manual_seed(0)
    model = Forecaster()
    history, target = torch.randn(4, 9, 2), torch.randn(4, 7, 2)
    assert_export_matches_eager(model, (history, target), [(history, target)], tmp_path)


def test_rocket_layer_dynamic_batch_and_length(tmp_path):
    model = RocketLayer(2, 40, n_kernels=30, learnable=True, seed=3, ppv_temperature=0.5)
    g = torch.Generator().manual_seed(2)
    runs = [(torch.randn(b, 2, t, generator=g),) for b, t in ((3, 40), (1, 52), (7, 33))]
    program = assert_export_matches_eager(model, runs[0], runs, tmp_path,
                                          dynamic_shapes=({0: Dim("batch"), 2: Dim("length")},))
    assert "softdtw_torch.rocket_transform" in str(program.graph)


def test_minirocket_transform_dynamic_batch(tmp_path):
    g = torch.Generator().manual_seed(4)
    model = MiniRocketFeatures(torch.randn(6, 1, 30, generator=g))
    runs = [(torch.randn(b, 1, 30, generator=g),) for b in (4, 1, 9)]
    program = torch.export.export(model, runs[0], dynamic_shapes=({0: Dim("batch")},))
    path = tmp_path / "program.pt2"
    torch.export.save(program, path)
    for module in (program.module(), torch.export.load(path).module()):
        for (x,) in runs:  # MiniRocket features are not differentiable: outputs only
            assert torch.equal(module(x), model(x))


def test_multirocket_transform_dynamic_batch_and_torchscript(tmp_path):
    g = torch.Generator().manual_seed(6)
    model = MultiRocketFeatures(torch.randn(6, 2, 30, generator=g))
    runs = [(torch.randn(b, 2, 30, generator=g),) for b in (4, 1, 9)]
    program = torch.export.export(model, runs[0], dynamic_shapes=({0: Dim("batch")},))
    path = tmp_path / "program.pt2"
    torch.export.save(program, path)
    scripted_path = tmp_path / "scripted.pt"
    torch.jit.script(model).save(str(scripted_path))
    modules = (program.module(), torch.export.load(path).module(), torch.jit.load(str(scripted_path)))
    for module in modules:
        for (x,) in runs:
            assert torch.equal(module(x), model(x))


@pytest.mark.parametrize("make_loss", [
    lambda: st.SoftDTW(gamma=GAMMA, reduction="none"),
    lambda: st.SoftDTW(gamma=GAMMA, bandwidth=2, normalize=True),
    lambda: st.SoftDTW(gamma=GAMMA, fused=False, reduction="sum"),
    lambda: st.SharpSoftDTW(gamma=GAMMA, reduction="none"),
    lambda: st.DILATELoss(gamma=GAMMA, reduction="none"),
], ids=["fused", "divergence_band", "unfused", "sharp", "dilate"])
def test_softdtw_losses_dynamic_batch_and_lengths(make_loss, tmp_path):
    """The SoftDTW losses export with a dynamic batch and lengths: their C++ code keeps sizes
    symbolic, so the program gives eager's outputs and gradients at other batches and lengths."""
    g = torch.Generator().manual_seed(5)
    runs = [(torch.randn(b, n, 2, generator=g), torch.randn(b, m, 2, generator=g))
            for b, n, m in ((3, 8, 6), (1, 11, 5), (6, 7, 9))]
    batch, n, m = Dim("batch"), Dim("n"), Dim("m")
    assert_export_matches_eager(make_loss(), runs[0], runs, tmp_path,
                                dynamic_shapes=({0: batch, 1: n}, {0: batch, 1: m}))


@pytest.mark.slow  # 5-7 s: fresh interpreters
def test_saved_program_needs_the_operators_in_a_fresh_interpreter(tmp_path):
    """torch.export.load resolves softdtw_torch's operators by name: it fails before
    `import softdtw_torch`, and gives eager's output after it."""
    x, y = ref.random_pairs(2, 6, 5, 1)
    model = st.SoftDTW(gamma=GAMMA, normalize=True, reduction="none")
    torch.export.save(torch.export.export(model, (x, y)), tmp_path / "program.pt2")
    torch.save({"x": x, "y": y}, tmp_path / "inputs.pt")
    code = textwrap.dedent(f"""
        import torch
        try:
            torch.export.load({str(tmp_path / 'program.pt2')!r})
        except Exception as error:
            print("refused:", error)
        else:
            raise SystemExit("loaded without softdtw_torch's operators")
        import softdtw_torch
        module = torch.export.load({str(tmp_path / 'program.pt2')!r}).module()
        inputs = torch.load({str(tmp_path / 'inputs.pt')!r}, weights_only=True)
        torch.save(module(inputs["x"], inputs["y"]), {str(tmp_path / 'out.pt')!r})
        """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "refused:" in result.stdout
    assert torch.equal(torch.load(tmp_path / "out.pt", weights_only=True), model(x, y))


def load_export_aoti_example():
    spec = importlib.util.spec_from_file_location("export_aoti", ROOT / "examples" / "export_aoti.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # AOTInductor compiles C++: 20-25 s
@needs_aoti
def test_aoti_packages_from_python(tmp_path):
    """examples/export_aoti.py's packages, loaded with aoti_load_package in a fresh interpreter:
    refused before `import softdtw_torch` (the package calls our operators through the
    dispatcher), then the eager models' outputs, each at several batch sizes."""
    example = load_export_aoti_example()
    paths, models, inputs = example.package(tmp_path)
    test = example.gunpoint("test")
    cases = {"forecaster": [inputs["forecaster"], tuple(t[:2] for t in inputs["forecaster"])],
             "classifier": [inputs["classifier"], (test[10:11],), (test[:40],)]}
    torch.save(cases, tmp_path / "cases.pt")
    code = textwrap.dedent(f"""
        import torch, torch._inductor
        paths = {({k: str(v) for k, v in paths.items()})!r}
        try:
            torch._inductor.aoti_load_package(paths["classifier"])
        except RuntimeError as error:
            print("refused:", error)
        else:
            raise SystemExit("a package loaded without softdtw_torch's operators")
        import softdtw_torch
        cases = torch.load({str(tmp_path / 'cases.pt')!r}, weights_only=True)
        outputs = {{name: [torch._inductor.aoti_load_package(paths[name])(*args) for args in runs]
                    for name, runs in cases.items()}}
        torch.save(outputs, {str(tmp_path / 'outputs.pt')!r})
        """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "refused: Could not find schema for softdtw_torch::" in result.stdout, result.stdout
    outputs = torch.load(tmp_path / "outputs.pt", weights_only=True)
    for name, runs in cases.items():
        for args, got in zip(runs, outputs[name]):
            with torch.no_grad():
                expected = as_tuple(models[name](*args))
            got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
            assert len(got) == len(expected)
            for g, e in zip(got, expected):
                # Our operators run the same kernels as in eager mode; inductor generates its own
                # code for the rest (linear layers, the divergence's arithmetic), which need not
                # round as eager does (it matched bit for bit with torch 2.15 on the CPU).
                torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)
