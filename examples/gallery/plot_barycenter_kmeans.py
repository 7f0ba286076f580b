"""
Barycenters and k-means under soft-DTW
======================================

The soft-DTW barycenter of a class (:func:`softdtw_torch.barycenter.softdtw_barycenter`) keeps the shape its
members share even where they are shifted in time, where the Euclidean mean smears it. Both
GunPoint classes are averaged in one batched call; then :class:`softdtw_torch.clustering.SoftDTWKMeans`
clusters a sample of the series.
"""
import matplotlib.pyplot as plt
import numpy as np

from softdtw_torch import SoftDTWKMeans, softdtw_barycenter
from softdtw_torch.datasets import load_gunpoint
from softdtw_torch.plot import plot_barycenter, plot_clusters

X, labels = load_gunpoint("train")
X = X.transpose(0, 2, 1)  # (50, 150, 1): tslearn's layout
groups = np.stack([X[labels == c][:20] for c in ("1", "2")])  # (2, 20, 150, 1)
barycenters = softdtw_barycenter(groups, gamma=1.0, max_iter=50)

fig, axes = plt.subplots(1, 2, figsize=(11, 3.5), sharey=True)
for ax, group, barycenter, name in zip(axes, groups, barycenters, ("class 1", "class 2")):
    plot_barycenter(group, barycenter, ax=ax)
    ax.plot(group.mean(axis=0)[:, 0], color="k", linestyle="--", label="Euclidean mean")
    ax.set_title(name)
    ax.legend()
fig.tight_layout()

# %%
# Soft-DTW k-means on 30 series; each cluster drawn with its members under its barycenter.
km = SoftDTWKMeans(n_clusters=2, gamma=1.0, max_iter=10, random_state=0).fit(X[:30])
print("inertia", round(float(km.inertia_), 2), "cluster sizes", np.bincount(km.labels_))
axes = plot_clusters(X[:30], km.labels_, km.cluster_centers_)
