"""Writes what the C++ tests (tests/cpp/test_softdtw_torch.cpp) compare against, from Python.

Usage: python tests/cpp/write_references.py OUTDIR

OUTDIR gets
- references.pt: a TorchScript module whose attributes hold the inputs, the Python API's outputs
  and gradients, independent float64 references (softdtw_torch._reference: a DP written with torch
  ops and differentiated by autograd), and the error messages the Python API raises for misuse;
- softdtw_forecaster.pt, rocket_classifier.pt: the TorchScript models of
  examples/export_torchscript.py, plus their outputs and parameter gradients on fixed inputs;
- forecaster.pt2, classifier.pt2: the AOTInductor packages of examples/export_aoti.py, plus the
  eager models' outputs on the inputs tests/cpp/test_aoti.cpp gives the packages (torch >= 2.6;
  skipped, with a message, on an older torch).
"""
import importlib.util
import sys
from pathlib import Path
from typing import Callable, Dict

import torch
import torch._inductor  # not imported by `import torch` on every release

import softdtw_torch as st
from softdtw_torch import _reference as ref
from softdtw_torch.rocket import generate_kernels

ROOT = Path(__file__).resolve().parents[2]
GAMMA = 0.7


# torch._inductor.aoti_compile_and_package taking the exported program alone: torch >= 2.6.
AOTI_AVAILABLE = hasattr(torch._inductor, "aoti_compile_and_package") and tuple(
    int(v) for v in torch.__version__.split(".")[:2]) >= (2, 6)


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class References(torch.nn.Module):
    """A container the C++ side reads with torch::jit::load(path).attr(name)."""

    tensors: Dict[str, torch.Tensor]
    messages: Dict[str, str]

    def __init__(self, tensors: Dict[str, torch.Tensor], messages: Dict[str, str]) -> None:
        super().__init__()
        self.tensors = tensors
        self.messages = messages

    def forward(self) -> int:  # TorchScript needs a method; the data is in the attributes
        return len(self.tensors)


def grads(f: Callable[..., torch.Tensor], *inputs: torch.Tensor):
    """f(*inputs).sum() and its gradients w.r.t. every input."""
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    value = f(*leaves)
    value.sum().backward()
    return [value.detach()] + [t.grad for t in leaves]


def softdtw_references(t: Dict[str, torch.Tensor]) -> None:
    x, y = ref.random_pairs(3, 7, 5, 2, seed=1)
    t["x"], t["y"] = x, y
    t["fused"], t["fused_grad_x"], t["fused_grad_y"] = grads(lambda a, b: st.soft_dtw(a, b, GAMMA, fused=True), x, y)
    # Independent: the same values and gradients from a DP written with torch ops, through autograd.
    t["reference"], t["reference_grad_x"], t["reference_grad_y"] = grads(
        lambda a, b: torch.stack([ref.soft_dtw_autograd(ref.sqeuclidean(a[i], b[i]), GAMMA) for i in range(3)]), x, y)
    t["divergence_band2"], t["divergence_band2_grad_x"], t["divergence_band2_grad_y"] = grads(
        lambda a, b: st.soft_dtw(a, b, GAMMA, bandwidth=2, normalize=True), x, y)
    # The Itakura parallelogram: the op's last argument, against the reference DP on tslearn's mask
    # (cells outside it cost +inf).
    from tslearn.metrics import itakura_mask
    outside = ~torch.as_tensor(itakura_mask(7, 5, 2.0), dtype=torch.bool)
    t["itakura2"], t["itakura2_grad_x"], t["itakura2_grad_y"] = grads(
        lambda a, b: torch.stack([ref.soft_dtw_autograd(ref.sqeuclidean(a[i], b[i]).masked_fill(outside, float("inf")),
                                                        GAMMA) for i in range(3)]), x, y)
    t["x_lengths"], t["y_lengths"] = torch.tensor([7, 4, 6]), torch.tensor([5, 5, 2])
    t["ragged"] = st.soft_dtw(x, y, GAMMA, x_lengths=t["x_lengths"], y_lengths=t["y_lengths"])
    t["cosine"] = st.soft_dtw(x, y, GAMMA, cost="cosine")
    D = ref.sqeuclidean(x, y) + 0.5
    t["D"] = D
    t["from_cost_band1"], t["from_cost_band1_grad_D"] = grads(lambda d: st.soft_dtw_from_cost(d, 0.3, bandwidth=1), D)
    t["alignment_E"], t["alignment_values"] = st.soft_dtw_alignment(x, y, GAMMA)
    # Second order: the Hessian-vector product of the fused value along (u, v) by double backward,
    # and independently by the reference DP differentiated twice by autograd.
    u, v = ref.random_pairs(3, 7, 5, 2, seed=2)
    t["hvp_u"], t["hvp_v"] = u, v
    t["hvp_x"], t["hvp_y"] = hessian_vector_product(lambda a, b: st.soft_dtw(a, b, GAMMA, fused=True).sum(), x, y, u, v)
    t["hvp_reference_x"], t["hvp_reference_y"] = hessian_vector_product(
        lambda a, b: sum(ref.soft_dtw_autograd(ref.sqeuclidean(a[i], b[i]), GAMMA) for i in range(3)), x, y, u, v)
    t["sharp_divergence"], t["sharp_divergence_grad_x"], t["sharp_divergence_grad_y"] = grads(
        lambda a, b: st.soft_dtw_sharp(a, b, GAMMA, normalize=True), x, y)
    t["dilate_loss"], t["dilate_loss_grad_x"], t["dilate_loss_grad_y"] = grads(lambda a, b: st.dilate(a, b, 0.3, 0.1)[0],
                                                                               x, y)
    t["dilate_shape"], t["dilate_temporal"] = st.dilate(x, y, 0.3, 0.1)[1:]


def hessian_vector_product(f: Callable[..., torch.Tensor], x: torch.Tensor, y: torch.Tensor, u: torch.Tensor,
                           v: torch.Tensor):
    """∇²f(x, y)·(u, v) by double backward."""
    a, b = x.detach().clone().requires_grad_(True), y.detach().clone().requires_grad_(True)
    ga, gb = torch.autograd.grad(f(a, b), (a, b), create_graph=True)
    return list(torch.autograd.grad((ga * u).sum() + (gb * v).sum(), (a, b)))


def rocket_references(t: Dict[str, torch.Tensor]) -> None:
    kernels = generate_kernels(40, 2, 20, seed=3)
    for name, tensor in kernels._asdict().items():
        t["rocket_" + name] = tensor
    series = torch.randn(4, 2, 40, generator=torch.Generator().manual_seed(2))
    t["rocket_x"] = series

    def transform(w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        k = kernels._replace(weights=w, biases=b)
        return st.rocket.rocket_transform(series, list(k), ppv_temperature=0.5)

    t["rocket_soft"], t["rocket_soft_grad_weights"], t["rocket_soft_grad_biases"] = grads(
        transform, kernels.weights, kernels.biases)
    t["rocket_hard"] = torch.ops.softdtw_torch.rocket_transform(series, *kernels)
    minirocket_x = torch.randn(6, 1, 30, generator=torch.Generator().manual_seed(4))
    parameters = torch.ops.softdtw_torch.minirocket_fit(minirocket_x, 840, 32, 7)
    t["minirocket_x"] = minirocket_x
    for name, tensor in zip(["num_channels_per_combination", "channel_indices", "dilations",
                             "num_features_per_dilation", "biases"], parameters):
        t["minirocket_" + name] = tensor
    t["minirocket_features"] = torch.ops.softdtw_torch.minirocket_transform(minirocket_x, *parameters)
    multirocket_x = torch.randn(5, 2, 40, generator=torch.Generator().manual_seed(5)).cumsum(-1)
    fitted = torch.ops.softdtw_torch.multirocket_fit(multirocket_x, 336, 32, 9)
    t["multirocket_x"] = multirocket_x
    t["multirocket_biases"], t["multirocket_diff_biases"] = fitted[4], fitted[9]
    t["multirocket_diff_dilations"] = fitted[7]
    t["multirocket_features"] = torch.ops.softdtw_torch.multirocket_transform(multirocket_x, *fitted[:5], *fitted[7:])
    hydra_x = torch.randn(4, 3, 50, generator=torch.Generator().manual_seed(6)).cumsum(-1)
    t["hydra_x"] = hydra_x
    t["hydra_weights"], t["hydra_channels"] = torch.ops.softdtw_torch.hydra_fit(hydra_x, 8, 16, 8, 4)
    t["hydra_features"] = torch.ops.softdtw_torch.hydra_transform(hydra_x, t["hydra_weights"], t["hydra_channels"])
    x = hydra_x.clone().requires_grad_(True)
    torch.ops.softdtw_torch.hydra_transform(x, t["hydra_weights"], t["hydra_channels"]).sum().backward()
    t["hydra_x_grad"] = x.grad


def error_messages(t: Dict[str, torch.Tensor]) -> Dict[str, str]:
    """Misuse through the Python API; the C++ test repeats each case and expects the same text.
    Keys: "<case>" -> message and "<case>.type" -> the Python exception class."""
    x, y = t["x"], t["y"]
    nan_x = x.clone()
    nan_x[0, 1, 0] = float("nan")
    k = [t["rocket_" + n] for n in ("weights", "lengths", "biases", "dilations", "paddings",
                                    "num_channel_indices", "channel_indices")]
    cases = {
        "gamma_negative": lambda: st.soft_dtw(x, y, -1.0),
        # The C++ API takes batches only, as the operators (Python's functions also take one unbatched pair).
        "rank": lambda: torch.ops.softdtw_torch.soft_dtw_from_cost(x[0, 0]),
        "feature_mismatch": lambda: st.soft_dtw(x, y[:, :, :1]),
        "integer_dtype": lambda: st.soft_dtw(x.long(), y.long()),
        "nan_fused": lambda: st.soft_dtw(nan_x, y, fused=True),
        # found by soft_dtw_from_cost, which soft_dtw calls: the message names soft_dtw in C++ too
        "nan_unfused": lambda: st.soft_dtw(nan_x, y, cost="l1"),
        "lengths_out_of_range": lambda: st.soft_dtw(x, y, x_lengths=torch.tensor([7, 8, 1])),
        "unknown_cost": lambda: st.soft_dtw(x, y, cost="l3"),
        "rocket_channels": lambda: torch.ops.softdtw_torch.rocket_transform(t["rocket_x"][:, :1], *k),
        "rocket_accumulate": lambda: torch.ops.softdtw_torch.rocket_transform(t["rocket_x"], *k, True, "float16"),
        "minirocket_short": lambda: torch.ops.softdtw_torch.minirocket_fit(t["minirocket_x"][:, :, :8], 840, 32, 7),
        "multirocket_short": lambda: torch.ops.softdtw_torch.multirocket_fit(t["multirocket_x"][:, :, :9], 336, 32, 9),
        "hydra_short": lambda: torch.ops.softdtw_torch.hydra_fit(t["hydra_x"][:, :, :5], 8, 16, 8, 4),
    }
    messages = {}
    for name, call in cases.items():
        try:
            call()
        except Exception as error:  # noqa: BLE001 - recording whatever the API raises is the point
            messages[name] = str(error)
            messages[name + ".type"] = type(error).__name__
        else:
            raise AssertionError(f"write_references: case {name} raised nothing")
    return messages


def model_references(out: Path, t: Dict[str, torch.Tensor]) -> None:
    example = load_example("export_torchscript")
    paths = example.export(out, steps=5)
    g = torch.Generator().manual_seed(5)
    inputs = {
        "forecaster": (torch.randn(4, 60, 1, generator=g), torch.randn(4, 90, 1, generator=g)),
        "classifier": (torch.randn(4, 1, 150, generator=g), torch.tensor([0, 1, 1, 0])),
    }
    for name, (a, b) in inputs.items():
        model = torch.jit.load(str(paths[name]))
        a_leaf = a.clone().requires_grad_(a.is_floating_point())
        loss = model.loss(a_leaf, b)
        loss.backward()
        t[name + "_input"], t[name + "_target"] = a, b
        t[name + "_output"] = model(a).detach()
        t[name + "_loss"] = loss.detach()
        t[name + "_input_grad"] = a_leaf.grad
        for i, p in enumerate(model.parameters()):  # the order torch::jit::Module::parameters() gives
            t[f"{name}_param_grad_{i}"] = p.grad


def aoti_references(out: Path, t: Dict[str, torch.Tensor]) -> None:
    """Packages examples/export_aoti.py's models into out/*.pt2 and records the eager models' outputs
    on the inputs tests/cpp/test_aoti.cpp runs the packages on (the classifier at two batch sizes)."""
    if not AOTI_AVAILABLE:
        print(f"write_references: torch {torch.__version__} has no AOTInductor packaging (torch >= 2.6): no .pt2 written")
        return
    example = load_example("export_aoti")
    _, models, inputs = example.package(out)
    with torch.no_grad():
        history, target = inputs["forecaster"]
        t["aoti_forecaster_history"], t["aoti_forecaster_target"] = history, target
        t["aoti_forecaster_forecast"], t["aoti_forecaster_loss"] = models["forecaster"](history, target)
        test = example.gunpoint("test")
        for i, x in enumerate([inputs["classifier"][0], test[20:27]]):
            t[f"aoti_classifier_x_{i}"] = x
            t[f"aoti_classifier_logits_{i}"] = models["classifier"](x)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tensors: Dict[str, torch.Tensor] = {}
    softdtw_references(tensors)
    rocket_references(tensors)
    messages = error_messages(tensors)
    model_references(out, tensors)
    aoti_references(out, tensors)
    torch.jit.script(References(tensors, messages)).save(str(out / "references.pt"))
    print(f"write_references: {len(tensors)} tensors, {len(messages) // 2} error messages in {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
