"""
DTW paths and soft-DTW alignments
=================================

The optimal DTW path between two GunPoint series (:func:`softdtw_torch.metrics.dtw_path`, tslearn's
function and tie rule), drawn over their cost matrix and as matches between the series, next to
soft-DTW's expected alignment (:func:`softdtw_torch.functional.soft_dtw_alignment`), whose mass concentrates
on the path as γ decreases.
"""
import matplotlib.pyplot as plt
import torch

import softdtw_torch as st
from softdtw_torch.datasets import load_gunpoint
from softdtw_torch.plot import plot_alignment, plot_warping

X, y = load_gunpoint("train")
a = torch.tensor(X[0, 0], dtype=torch.float64).unsqueeze(-1)  # (150, 1)
b = torch.tensor(X[3, 0], dtype=torch.float64).unsqueeze(-1)
path, distance = st.dtw_path(a, b)
print(f"DTW distance {distance:.4f}, path of {len(path)} steps")

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 4))
plot_warping(a, b, path, ax=axes[0])
axes[0].set_title("matched points")
plot_alignment(a, b, st.pairwise_cost(a[None], b[None])[0], path=path, ax=axes[1], title="cost matrix and path")
for ax, gamma in ((axes[2], 1.0),):
    E, _ = st.soft_dtw_alignment(a, b, gamma=gamma)
    plot_alignment(a, b, E, ax=ax, title=f"expected alignment, γ = {gamma}")
fig.tight_layout()
