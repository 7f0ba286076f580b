"""Soft-DTW barycenters versus the Euclidean mean: real class averages and the block-wave example.

Two panels of plots, written to one PNG (the class panels drawn with ``softdtw_torch.plot.plot_barycenter``):

1. Class barycenters of a real data set (GunPoint, shipped with the package, or ArrowHead from the
   datasets aeon bundles in its package; ``--data-dir`` reads another folder): all classes are
   averaged in ONE call of ``softdtw_barycenter`` on a (K, n, T, 1) batch. Classes have different
   sizes, so each group is padded to the largest one and the padding members get weight 0 (they
   are dropped, not computed).
2. The synthetic example of Cuturi & Blondel (ICML 2017, Fig. 1 and §4): a few square "block"
   waves, each randomly shifted in time and warped (different rise and fall times). Their
   Euclidean mean smears the blocks into a staircase; the soft-DTW barycenter keeps one sharp
   block, sharper as gamma decreases.

Run:  python examples/barycenter.py [--out DIR] [--dataset gunpoint|arrowhead] [--gammas 1 0.1 0.01]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import List, Optional, Tuple

import matplotlib

matplotlib.use("Agg")  # headless: only write the PNG
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from softdtw_torch.barycenter import softdtw_barycenter  # noqa: E402
from softdtw_torch.datasets import aeon_datasets_dir, load_gunpoint, load_ts  # noqa: E402
from softdtw_torch.plot import plot_barycenter  # noqa: E402


def load_classes(dataset: str, data_dir: Optional[Path]) -> Tuple[List[str], List[np.ndarray]]:
    """The train split as one (n_c, T, 1) array per class."""
    if dataset == "gunpoint":
        X, y = load_gunpoint("train")
    else:
        data_dir = data_dir or aeon_datasets_dir()
        if data_dir is None:
            raise SystemExit("ArrowHead is read from the datasets aeon bundles: pip install aeon, "
                             "or pass --data-dir (a folder of <Name>/<Name>_TRAIN.ts files), or use --dataset gunpoint")
        path = Path(data_dir) / "ArrowHead" / "ArrowHead_TRAIN.ts"
        if not path.exists():
            raise SystemExit(f"{path} not found: pass --data-dir (a folder of <Name>/<Name>_TRAIN.ts files) "
                             "or --dataset gunpoint")
        X, y = load_ts(path)
    X = np.asarray(X).transpose(0, 2, 1)  # (n, channels, T) -> (n, T, channels)
    labels = sorted(set(y.tolist()))
    return labels, [X[y == c] for c in labels]


def pad_groups(groups: List[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """Stack groups of different sizes into (K, n_max, T, d), with weights 0 for the padding members."""
    n_max = max(len(g) for g in groups)
    K, (T, d) = len(groups), groups[0].shape[1:]
    X = np.zeros((K, n_max, T, d))
    weights = np.zeros((K, n_max))
    for k, g in enumerate(groups):
        X[k, : len(g)] = g
        weights[k, : len(g)] = 1.0
    return X, weights


def block_waves(n: int, T: int, seed: int) -> np.ndarray:
    """n block waves of length T: a plateau of height 1 at a random place, randomly time-warped."""
    rng = np.random.RandomState(seed)
    t = np.linspace(0.0, 1.0, T)
    waves = []
    for _ in range(n):
        # a random monotone warp of [0, 1] (power law) then a random shift
        warped = t ** rng.uniform(0.8, 1.25)
        start = rng.uniform(0.25, 0.45)
        width = rng.uniform(0.2, 0.3)
        waves.append(((warped >= start) & (warped <= start + width)).astype(float))
    return np.stack(waves)[:, :, None]  # (n, T, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out"), help="folder for the PNG (default: out/)")
    parser.add_argument("--dataset", choices=["gunpoint", "arrowhead"], default="gunpoint")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="folder of <Name>/<Name>_TRAIN.ts files for ArrowHead (default: aeon's bundled datasets)")
    parser.add_argument("--gamma", type=float, default=1.0, help="gamma for the class barycenters")
    parser.add_argument("--gammas", type=float, nargs="+", default=[1.0, 0.1, 0.01],
                        help="gammas for the block-wave barycenters")
    parser.add_argument("--max-iter", type=int, default=200)
    parser.add_argument("--tol", type=float, default=1e-6, help="relative objective tolerance (tslearn: 1e-3)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    # 1. Class barycenters, all classes in one batched solve.
    labels, groups = load_classes(args.dataset, args.data_dir)
    X, weights = pad_groups(groups)
    Xt = torch.from_numpy(X).to(args.device)
    start = time.perf_counter()
    centers, history = softdtw_barycenter(Xt, gamma=args.gamma, weights=torch.from_numpy(weights),
                                          max_iter=args.max_iter, tol=args.tol, return_history=True)
    seconds = time.perf_counter() - start
    centers = centers.cpu().numpy()
    print(f"{args.dataset}: {len(labels)} class barycenters (gamma={args.gamma}) in {seconds:.2f} s on {args.device}")
    for label, g, h in zip(labels, groups, history):
        print(f"  class {label}: {len(g)} series, objective {h[0]:.2f} (Euclidean mean) -> {h[-1]:.2f} "
              f"in {len(h) - 1} iterations")

    # 2. Block waves: Euclidean mean vs soft-DTW barycenters for several gammas, one solve per gamma.
    waves = block_waves(6, 100, seed=0)
    euclid = waves.mean(axis=0)
    block_bary = {}
    for gamma in args.gammas:
        start = time.perf_counter()
        z, h = softdtw_barycenter(torch.from_numpy(waves).to(args.device), gamma=gamma,
                                  max_iter=args.max_iter, tol=args.tol, return_history=True)
        block_bary[gamma] = z.cpu().numpy()
        print(f"block waves, gamma={gamma}: objective {h[0]:.3f} -> {h[-1]:.3f} in {len(h) - 1} iterations, "
              f"{time.perf_counter() - start:.2f} s")

    # Plots: top row the classes, bottom row the block waves.
    n_top = len(labels)
    fig, axes = plt.subplots(2, max(n_top, 2), figsize=(5 * max(n_top, 2), 7.5), squeeze=False)
    for k, (label, g) in enumerate(zip(labels, groups)):
        ax = plot_barycenter(g, centers[k], ax=axes[0, k], label=f"soft-DTW barycenter, γ={args.gamma}",
                             member_kwargs={"color": "0.75", "lw": 0.6, "alpha": 1.0, "label": "_nolegend_"},
                             barycenter_kwargs={"lw": 2.2})
        ax.plot(g.mean(axis=0)[:, 0], "--", color="tab:blue", lw=1.8, label="Euclidean mean")
        ax.set_title(f"{args.dataset}, class {label} ({len(g)} series)")
        ax.legend(loc="best", fontsize=8)
    for k in range(n_top, axes.shape[1]):
        axes[0, k].axis("off")
    ax = axes[1, 0]
    for s in waves:
        ax.plot(s[:, 0], lw=1.0, alpha=0.7)
    ax.set_title("block waves: randomly shifted and warped")
    ax = axes[1, 1]
    ax.plot(euclid[:, 0], "--", color="tab:blue", lw=1.8, label="Euclidean mean")
    colors = plt.cm.Reds(np.linspace(0.45, 0.95, len(args.gammas)))
    for color, gamma in zip(colors, args.gammas):
        ax.plot(block_bary[gamma][:, 0], color=color, lw=2.0, label=f"soft-DTW barycenter, γ={gamma}")
    ax.set_title("their averages")
    ax.legend(loc="best", fontsize=8)
    for k in range(2, axes.shape[1]):
        axes[1, k].axis("off")
    fig.tight_layout()
    path = args.out / f"barycenter_{args.dataset}.png"
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
