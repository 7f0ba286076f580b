"""Train two small models on GunPoint and save them as TorchScript for a C++ (LibTorch) program.

Both models call ``torch.ops.softdtw_torch`` operators in their forward, so the saved files need
the softdtw_torch library at load time: in Python ``import softdtw_torch``, in C++ link
``softdtw_torch::softdtw_torch`` and include ``softdtw_torch.h`` (examples/cpp).

- ``softdtw_forecaster.pt``: reads the first 60 points of a series and forecasts the other 90;
  ``forward(history (B, 60, 1)) -> forecast (B, 90, 1)``, and the exported method
  ``loss(history, target) -> ()``, the mean soft-DTW divergence it was trained with.
- ``rocket_classifier.pt``: a ROCKET layer with learnable kernels and a linear head;
  ``forward(x (B, 1, 150)) -> logits (B, 2)``, and ``loss(x, labels (B,) int64) -> ()`` (cross
  entropy).

Run:  python examples/export_torchscript.py [--out DIR] [--steps N]
      then: examples/cpp/softdtw_torch_example DIR/softdtw_forecaster.pt DIR/rocket_classifier.pt
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Dict, Tuple

import numpy as np
import torch
from torch import Tensor, nn

import softdtw_torch
from softdtw_torch.datasets import load_gunpoint
from softdtw_torch.rocket import RocketLayer

N_HISTORY = 60  # the forecaster sees points 0..59 and predicts 60..149
N_POINTS = 150
MODEL_FILES = {"forecaster": "softdtw_forecaster.pt", "classifier": "rocket_classifier.pt"}


class SoftDTWForecaster(nn.Module):
    """An MLP forecaster trained with the soft-DTW divergence (squared Euclidean cost)."""

    def __init__(self, n_history: int = N_HISTORY, n_future: int = N_POINTS - N_HISTORY, hidden: int = 64,
                 gamma: float = 0.1) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(n_history, hidden), nn.ReLU(), nn.Linear(hidden, n_future))
        self.criterion = softdtw_torch.SoftDTW(gamma=gamma, normalize=True)

    def forward(self, history: Tensor) -> Tensor:
        return self.mlp(history.squeeze(-1)).unsqueeze(-1)

    @torch.jit.export
    def loss(self, history: Tensor, target: Tensor) -> Tensor:
        return self.criterion(self.forward(history), target)


class RocketClassifierNet(nn.Module):
    """ROCKET features (learnable kernels, soft PPV so PPV trains too) and a linear head."""

    def __init__(self, n_kernels: int = 100, n_classes: int = 2, seed: int = 0) -> None:
        super().__init__()
        self.rocket = RocketLayer(1, N_POINTS, n_kernels=n_kernels, learnable=True, seed=seed, ppv_temperature=0.5)
        self.head = nn.Linear(2 * n_kernels, n_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.rocket(x))

    @torch.jit.export
    def loss(self, x: Tensor, labels: Tensor) -> Tensor:
        return nn.functional.cross_entropy(self.forward(x), labels)


def gunpoint(split: str) -> Tuple[Tensor, Tensor]:
    """Series (B, 1, 150) float32 and labels 0/1."""
    X, y = load_gunpoint(split)
    return torch.from_numpy(X).float(), torch.from_numpy((y == "2").astype(np.int64))


def forecaster_inputs(series: Tensor) -> Tuple[Tensor, Tensor]:
    """(history (B, 60, 1), target (B, 90, 1)) from series (B, 1, 150)."""
    seq = series.transpose(1, 2)
    return seq[:, :N_HISTORY].contiguous(), seq[:, N_HISTORY:].contiguous()


def train(model: nn.Module, inputs: Tuple[Tensor, Tensor], steps: int, lr: float) -> None:
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model.loss(*inputs)
        loss.backward()
        optimizer.step()


def export(out: Path, steps: int = 100) -> Dict[str, Path]:
    """Trains both models on GunPoint's train split and saves them; returns the paths."""
    torch.manual_seed(0)
    out.mkdir(parents=True, exist_ok=True)
    series, labels = gunpoint("train")
    forecaster = SoftDTWForecaster()
    train(forecaster, forecaster_inputs(series), steps, lr=1e-2)
    classifier = RocketClassifierNet()
    train(classifier, (series, labels), steps, lr=1e-2)
    paths = {name: out / file for name, file in MODEL_FILES.items()}
    torch.jit.script(forecaster).save(str(paths["forecaster"]))
    torch.jit.script(classifier).save(str(paths["classifier"]))
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "cpp" / "models")
    parser.add_argument("--steps", type=int, default=100, help="Adam steps for each model")
    args = parser.parse_args()
    paths = export(args.out, args.steps)
    series, labels = gunpoint("test")
    forecaster = torch.jit.load(str(paths["forecaster"]))
    classifier = torch.jit.load(str(paths["classifier"]))
    with torch.no_grad():
        test_loss = forecaster.loss(*forecaster_inputs(series)).item()
        accuracy = (classifier(series).argmax(1) == labels).double().mean().item()
    print(f"saved {paths['forecaster']}: test soft-DTW divergence {test_loss:.4f} (GunPoint test, 150 series)")
    print(f"saved {paths['classifier']}: test accuracy {accuracy:.3f} (GunPoint test, 150 series)")


if __name__ == "__main__":
    main()
