"""The optimal DTW alignment of two real series, drawn: hard DTW (gamma = 0) next to soft-DTW's
expected alignment.

Two GunPoint series (shipped with the package) of different classes are aligned with
``softdtw_torch.dtw_path`` (tslearn's function and tie rule); the same path is checked against
tslearn's ``dtw_path`` when tslearn is installed. One PNG with three panels, drawn
with ``softdtw_torch.plot``:

1. the two series, offset vertically, with a line between every matched pair of points
   (``plot_warping``);
2. the pairwise cost matrix with the optimal path on it, and the Sakoe–Chiba-banded path
   (``--bandwidth``) beside it, the series along its sides (``plot_alignment``);
3. soft-DTW's expected alignment E at ``--gamma`` (``soft_dtw_alignment``), whose mass
   concentrates on the hard path as gamma decreases; ``gamma=0.0`` gives the path itself.

Run:  python examples/dtw_path.py [--out DIR] [--pair 0 3] [--bandwidth 10] [--gamma 1.0]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: only write the PNG
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import softdtw_torch as st  # noqa: E402
from softdtw_torch.datasets import load_gunpoint  # noqa: E402
from softdtw_torch.plot import plot_alignment, plot_warping  # noqa: E402


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("out"), help="folder for the PNG (default: out/)")
    parser.add_argument("--pair", type=int, nargs=2, default=(0, 3), help="indices into GunPoint's train split")
    parser.add_argument("--bandwidth", type=int, default=10)
    parser.add_argument("--gamma", type=float, default=1.0)
    args = parser.parse_args(argv)

    X, labels = load_gunpoint("train")                    # aeon's layout (50, 1, 150)
    a, b = (np.asarray(X[i, 0], dtype=np.float64) for i in args.pair)
    path, distance = st.dtw_path(a, b)                    # numpy in, tslearn's (path, float) out
    band_path, band_distance = st.dtw_path(a, b, bandwidth=args.bandwidth)
    try:
        from tslearn.metrics import dtw_path as tslearn_dtw_path

        same = tslearn_dtw_path(a, b)[0] == path
        print(f"same path as tslearn's dtw_path: {same}")
    except ImportError:
        print("tslearn not installed: no comparison")
    print(f"DTW distance {distance:.4f} ({len(path)} matched pairs); with a band of {args.bandwidth}: "
          f"{band_distance:.4f}")

    x, y = torch.from_numpy(a).unsqueeze(-1), torch.from_numpy(b).unsqueeze(-1)
    cost = st.pairwise_cost(x.unsqueeze(0), y.unsqueeze(0))[0].numpy()
    E, _ = st.soft_dtw_alignment(x, y, gamma=args.gamma)

    names = [f"series {i} (class {labels[i]})" for i in args.pair]
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.6))
    # every third match, for legibility
    ax = plot_warping(a, b, path[::3], ax=axes[0], labels=names, match_kwargs={"colors": "0.75"})
    ax.set_title(f"DTW matches (distance {distance:.2f})")
    ax.legend(loc="upper right", fontsize=8)

    short = [f"series {i}" for i in args.pair]
    ax = plot_alignment(a, b, cost, path, ax=axes[1], labels=short, title="cost matrix and optimal paths",
                        path_kwargs={"label": "no band"})
    ax.plot([j for _, j in band_path], [i for i, _ in band_path], color="red", lw=1.0, ls="--",
            label=f"band {args.bandwidth}")
    ax.legend(loc="upper left", fontsize=8)

    plot_alignment(a, b, E, path, ax=axes[2], labels=short, cmap="magma",
                   title=f"soft-DTW expected alignment, gamma={args.gamma:g},\nand the hard path",
                   path_kwargs={"color": "cyan", "lw": 0.6, "alpha": 0.7})
    fig.tight_layout()
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / "dtw_path_gunpoint.png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main()
