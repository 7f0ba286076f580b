"""Deploy models that call softdtw_torch operators with torch.export and AOTInductor (.pt2).

Two small models on GunPoint series (150 points):

- ``forecaster.pt2``: ``ForecasterWithLoss``, an MLP that reads the first 60 points and forecasts
  the other 90, returning the forecast and its soft-DTW divergence to the target
  (``softdtw_torch.SoftDTW``): ``(history (B, 60, 1), target (B, 90, 1)) -> (forecast (B, 90, 1),
  loss ())``, any batch size B.
- ``classifier.pt2``: ``RocketClassifier``, ROCKET features (``RocketLayer``, learnable kernels,
  soft PPV) and MiniRocket features (``minirocket_transform``, parameters fitted on GunPoint's
  train split, kept as buffers) into a linear head: ``x (B, 1, 150) -> logits (B, 2)``, any batch
  size B.

The weights are random (fixed seed): the point is the route, not the accuracy; train first in
practice (examples/train_softdtw_loss.py, examples/export_torchscript.py).

The script exports both models (``torch.export.export``), compiles each into a package
(``torch._inductor.aoti_compile_and_package``), loads the packages back
(``torch._inductor.aoti_load_package``) and checks that they give the eager models' outputs. A
C++ program runs the same packages with ``torch::inductor::AOTIModelPackageLoader`` when it links
the softdtw_torch library (tests/cpp/test_aoti.cpp, docs/user_guide/deployment.md); in Python,
``import softdtw_torch`` must come before loading, as it registers the operators the package calls.

Needs torch >= 2.6 (``aoti_compile_and_package`` taking the exported program alone).
Run:  python examples/export_aoti.py [--out DIR]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Dict, Tuple

import torch
import torch._inductor  # not imported by `import torch` on every release
from torch import Tensor, nn

import softdtw_torch
from softdtw_torch.datasets import load_gunpoint
from softdtw_torch.rocket import RocketLayer

N_HISTORY = 60  # the forecaster sees points 0..59 and predicts 60..149
N_POINTS = 150
BATCH = 8  # the forecaster's example batch size (the package takes any)


class ForecasterWithLoss(nn.Module):
    """An MLP forecaster and the soft-DTW divergence of its forecast to the target."""

    def __init__(self, hidden: int = 32, gamma: float = 0.1) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(N_HISTORY, hidden), nn.ReLU(), nn.Linear(hidden, N_POINTS - N_HISTORY))
        self.criterion = softdtw_torch.SoftDTW(gamma=gamma, normalize=True)

    def forward(self, history: Tensor, target: Tensor) -> Tuple[Tensor, Tensor]:
        forecast = self.mlp(history.squeeze(-1)).unsqueeze(-1)
        return forecast, self.criterion(forecast, target)


class RocketClassifier(nn.Module):
    """ROCKET and MiniRocket features of a univariate series, then a linear head."""

    def __init__(self, train_series: Tensor, n_kernels: int = 50, n_minirocket_features: int = 168,
                 seed: int = 0) -> None:
        super().__init__()
        self.rocket = RocketLayer(1, N_POINTS, n_kernels=n_kernels, learnable=True, seed=seed, ppv_temperature=0.5)
        # MiniRocket's 5 parameter arrays (aeon's), fitted once and stored with the model.
        parameters = torch.ops.softdtw_torch.minirocket_fit(train_series, n_minirocket_features, 32, seed)
        for i, p in enumerate(parameters):
            self.register_buffer(f"minirocket_{i}", p)
        self.head = nn.Linear(2 * n_kernels + n_minirocket_features, 2)

    def forward(self, x: Tensor) -> Tensor:
        minirocket = torch.ops.softdtw_torch.minirocket_transform(
            x, self.minirocket_0, self.minirocket_1, self.minirocket_2, self.minirocket_3, self.minirocket_4)
        return self.head(torch.cat([self.rocket(x), minirocket], dim=1))


def gunpoint(split: str) -> Tensor:
    """GunPoint series (n, 1, 150), float32."""
    return torch.from_numpy(load_gunpoint(split)[0]).float()


def build(seed: int = 0) -> Tuple[Dict[str, nn.Module], Dict[str, Tuple[Tensor, ...]]]:
    """The two models and their example inputs (GunPoint test series)."""
    torch.manual_seed(seed)
    models = {"forecaster": ForecasterWithLoss(), "classifier": RocketClassifier(gunpoint("train"), seed=seed)}
    test = gunpoint("test")
    seq = test[:BATCH].transpose(1, 2)  # (B, 150, 1)
    inputs = {
        "forecaster": (seq[:, :N_HISTORY].contiguous(), seq[:, N_HISTORY:].contiguous()),
        "classifier": (test[:5],),
    }
    return models, inputs


def export(models: Dict[str, nn.Module], inputs: Dict[str, Tuple[Tensor, ...]]) -> Dict[str, torch.export.ExportedProgram]:
    """torch.export of both models, each with a dynamic batch dimension."""
    batch = torch.export.Dim("batch", min=1, max=4096)
    return {
        "forecaster": torch.export.export(models["forecaster"], inputs["forecaster"],
                                          dynamic_shapes=({0: batch}, {0: batch})),
        "classifier": torch.export.export(models["classifier"], inputs["classifier"], dynamic_shapes=({0: batch},)),
    }


def package(out: Path, seed: int = 0):
    """Builds, exports and compiles both models into out/<name>.pt2; returns (paths, models, inputs)."""
    out.mkdir(parents=True, exist_ok=True)
    models, inputs = build(seed)
    paths = {}
    # Inference packages: no autograd state is recorded while exporting.
    with torch.no_grad():
        for name, program in export(models, inputs).items():
            paths[name] = Path(torch._inductor.aoti_compile_and_package(program, package_path=str(out / f"{name}.pt2")))
    return paths, models, inputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "cpp" / "models")
    args = parser.parse_args()
    if not hasattr(torch._inductor, "aoti_compile_and_package"):
        sys.exit(f"torch {torch.__version__} has no torch._inductor.aoti_compile_and_package (torch >= 2.6 needed)")
    start = time.perf_counter()
    paths, models, inputs = package(args.out)
    print(f"compiled {len(paths)} packages in {time.perf_counter() - start:.0f} s")
    test = gunpoint("test")
    forecast_inputs = inputs["forecaster"]
    checks = {"forecaster": [forecast_inputs, tuple(t[:3] for t in forecast_inputs)],
              "classifier": [inputs["classifier"], (test[5:8],), (test,)]}
    ok = True
    for name, path in paths.items():
        runner = torch._inductor.aoti_load_package(str(path))
        for args_ in checks[name]:
            with torch.no_grad():
                expected = models[name](*args_)
            got = runner(*args_)
            expected = expected if isinstance(expected, tuple) else (expected,)
            got = got if isinstance(got, (tuple, list)) else (got,)
            # The operators run the same kernels as in eager mode; inductor's own code for the
            # rest (linear layers, the divergence's arithmetic) need not round as eager does.
            diff = max((g - e).abs().max().item() for g, e in zip(got, expected))
            same = all(torch.allclose(g, e, rtol=1e-5, atol=1e-6) for g, e in zip(got, expected))
            ok &= same
            print(f"{path}: batch {args_[0].shape[0]}, max |package - eager| = {diff:.3g}"
                  f" ({'match' if same else 'MISMATCH'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
