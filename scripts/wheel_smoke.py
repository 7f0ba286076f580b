"""Smoke test of an installed softdtw-torch wheel, run by scripts/wheel_check.sh in a fresh virtual
environment from a directory outside the source tree. Checks that the installed package (not the
source tree) is imported, its build record, `python -m softdtw_torch --info`, a soft-DTW value and
gradient against a tiny float64 reference written here, and a ROCKET transform of the packaged
GunPoint data against a direct transcription of aeon's kernel loop. Exits non-zero on any failure.
"""
import importlib.metadata
import math
import os
import subprocess
import sys

import numpy as np
import torch

import softdtw_torch
from softdtw_torch.datasets import load_gunpoint
from softdtw_torch.rocket import Rocket


def check(condition: bool, message: str) -> None:
    if not condition:
        sys.exit(f"wheel smoke test FAILED: {message}")


def soft_dtw_reference(x: torch.Tensor, y: torch.Tensor, gamma: float) -> torch.Tensor:
    """Cuturi & Blondel's recursion, cell by cell in float64 autograd: R[i,j] = D[i,j] + softmin."""
    n, m = x.shape[0], y.shape[0]
    inf = torch.tensor(math.inf, dtype=torch.float64)
    R = [[inf] * (m + 1) for _ in range(n + 1)]
    R[0][0] = torch.tensor(0.0, dtype=torch.float64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            prev = torch.stack([R[i - 1][j - 1], R[i - 1][j], R[i][j - 1]])
            R[i][j] = ((x[i - 1] - y[j - 1]) ** 2).sum() - gamma * torch.logsumexp(-prev / gamma, 0)
    return R[n][m]


def rocket_reference(X: np.ndarray, kernels) -> np.ndarray:
    """aeon's univariate ROCKET (normalise, then per kernel PPV and MAX), transcribed in float64."""
    weights, lengths, biases, dilations, paddings = kernels[:5]
    X = (X - X.mean(axis=-1, keepdims=True)) / np.where(X.std(axis=-1) == 0, 1, X.std(axis=-1))[..., None]
    out = np.zeros((X.shape[0], 2 * len(lengths)))
    for case, series in enumerate(X[:, 0]):
        start = 0
        for k, (length, bias, dilation, padding) in enumerate(zip(lengths, biases, dilations, paddings)):
            w = weights[start:start + length].astype(np.float64)
            start += length
            sums = []
            for i in range(-padding, len(series) + padding - (length - 1) * dilation):
                index = i + dilation * np.arange(length)
                inside = (index >= 0) & (index < len(series))
                sums.append(float(bias) + float(np.sum(w[inside] * series[index[inside]])))
            sums = np.array(sums)
            out[case, 2 * k], out[case, 2 * k + 1] = np.mean(sums > 0), sums.max()
    return out


def main() -> None:
    # The installed wheel, not a source tree.
    check(os.path.realpath(softdtw_torch.__file__).startswith(os.path.realpath(sys.prefix)),
          f"softdtw_torch imported from {softdtw_torch.__file__}, outside the environment {sys.prefix}")

    facts = softdtw_torch.info()
    check(facts["extension_loaded"], f"extension not loaded: {facts['extension_error']}")
    check(facts["built_with_torch"] == torch.__version__,
          f"build record says torch {facts['built_with_torch']}, running {torch.__version__}")
    check(facts["version"] == importlib.metadata.version("softdtw-torch"),
          f"info() version {facts['version']} != installed {importlib.metadata.version('softdtw-torch')}")
    cli = subprocess.run([sys.executable, "-m", "softdtw_torch", "--info"], capture_output=True, text=True)
    check(cli.returncode == 0 and f"built_with_torch: {torch.__version__}" in cli.stdout,
          f"`python -m softdtw_torch --info` exited {cli.returncode}:\n{cli.stdout}{cli.stderr}")

    # soft-DTW value and gradient vs the reference, float64, N != M.
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(5, 2, dtype=torch.float64, generator=gen, requires_grad=True)
    y = torch.randn(4, 2, dtype=torch.float64, generator=gen)
    value = softdtw_torch.soft_dtw(x[None], y[None], gamma=0.5)[0]
    (grad,) = torch.autograd.grad(value, x)
    x_ref = x.detach().clone().requires_grad_(True)
    ref = soft_dtw_reference(x_ref, y, 0.5)
    (grad_ref,) = torch.autograd.grad(ref, x_ref)
    check(torch.allclose(value, ref, rtol=1e-12, atol=1e-12), f"soft_dtw value {value.item()} != reference {ref.item()}")
    check(torch.allclose(grad, grad_ref, rtol=1e-10, atol=1e-12),
          f"soft_dtw gradient differs from the reference by {(grad - grad_ref).abs().max().item():.3e}")

    # ROCKET on the packaged data (the wheel must ship softdtw_torch/data/*.ts).
    X, _ = load_gunpoint("train")
    X = X[:4]
    rocket = Rocket(n_kernels=20, random_state=0, accumulate="float64").fit(X)
    features = rocket.transform(X)
    expected = rocket_reference(X, rocket.kernels)
    check(features.shape == (4, 40), f"ROCKET features of shape {features.shape}, expected (4, 40)")
    check(np.allclose(features, expected, rtol=1e-5, atol=1e-5),
          f"ROCKET features differ from the reference by {np.abs(features - expected).max():.3e}")

    print(f"wheel smoke test passed: softdtw-torch {facts['version']} from {os.path.dirname(softdtw_torch.__file__)}, "
          f"torch {torch.__version__}, CUDA kernels {'compiled' if facts['cuda_kernels'] else 'not compiled'}; "
          f"soft_dtw {value.item():.6f} (reference {ref.item():.6f}), ROCKET features {features.shape}")


if __name__ == "__main__":
    main()
