"""
Classifying with the ROCKET family
==================================

MiniRocket (:class:`softdtw_torch.rocket.MiniRocket`) turns each series into about 10,000 features
with aeon's kernels and aeon's features to the bit; a ridge classifier on them
(:class:`softdtw_torch.rocket.MiniRocketClassifier`) reaches high accuracy on GunPoint in a
fraction of a second. Below: the accuracy of each family member's classifier, and the features
that separate the two classes best.
"""
import time

import matplotlib.pyplot as plt
import numpy as np

from softdtw_torch.datasets import load_gunpoint
from softdtw_torch.rocket import HydraClassifier, MiniRocket, MiniRocketClassifier, MultiRocketClassifier, RocketClassifier

X_train, y_train = load_gunpoint("train")  # (50, 1, 150): aeon's layout
X_test, y_test = load_gunpoint("test")

scores = {}
for cls in (RocketClassifier, MiniRocketClassifier, MultiRocketClassifier, HydraClassifier):
    kwargs = {"n_kernels": 2_000} if cls is RocketClassifier else {}
    start = time.perf_counter()
    clf = cls(random_state=0, **kwargs).fit(X_train, y_train)
    scores[cls.__name__] = clf.score(X_test, y_test)
    print(f"{cls.__name__:24s} accuracy {scores[cls.__name__]:.3f}  ({time.perf_counter() - start:.2f} s)")

# %%
# The MiniRocket features whose class means differ most (in units of their spread).
features = MiniRocket(random_state=0).fit(X_train).transform(X_train)
ones, twos = features[y_train == "1"], features[y_train == "2"]
separation = np.abs(ones.mean(0) - twos.mean(0)) / (features.std(0) + 1e-6)
best = np.argsort(separation)[::-1][:2]
fig, ax = plt.subplots(figsize=(5, 4))
for subset, name in ((ones, "class 1"), (twos, "class 2")):
    ax.scatter(subset[:, best[0]], subset[:, best[1]], label=name, alpha=0.7)
ax.set_xlabel(f"feature {best[0]}")
ax.set_ylabel(f"feature {best[1]}")
ax.legend()
fig.tight_layout()
