"""
Training a forecaster with the SoftDTW loss
===========================================

Two identical small MLPs read the first 60 points of a GunPoint series and predict the
other 90: one trained with the mean squared error, one with the soft-DTW divergence
(:class:`softdtw_torch.nn.SoftDTW`, γ = 0.1). MSE rewards being right at every time
step; the soft-DTW loss compares shapes up to a warping of time. Each model wins on what it
optimises, and it shows in the forecasts: the SoftDTW-trained ones are smooth and keep the
gesture's shape, sometimes shifted in time (a shift costs DTW little); the MSE-trained ones follow
the timing more closely but are noisy.
"""
import matplotlib.pyplot as plt
import torch

import softdtw_torch as st
from softdtw_torch.datasets import load_gunpoint

torch.manual_seed(0)
X_train, _ = load_gunpoint("train")
X_test, _ = load_gunpoint("test")
train = torch.tensor(X_train, dtype=torch.float32).transpose(1, 2)  # (50, 150, 1): tslearn's layout
test = torch.tensor(X_test, dtype=torch.float32).transpose(1, 2)
history, horizon = 60, 90


def fit(loss_fn, steps=400):
    torch.manual_seed(0)  # the same initial weights for both models
    model = torch.nn.Sequential(torch.nn.Linear(history, 128), torch.nn.ReLU(), torch.nn.Linear(128, horizon))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        forecast = model(train[:, :history, 0]).unsqueeze(-1)
        loss = loss_fn(forecast, train[:, history:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model


mse_model = fit(torch.nn.MSELoss())
sdtw_model = fit(st.SoftDTW(gamma=0.1))

# %%
# On the test split, each model wins on what it optimises: the soft-DTW model has the lower DTW
# error, the MSE model the lower squared error.
with torch.no_grad():
    target = test[:, history:]
    for name, model in (("MSE", mse_model), ("SoftDTW", sdtw_model)):
        forecast = model(test[:, :history, 0]).unsqueeze(-1)
        dtw = st.dtw(forecast, target).mean().item()
        mse = torch.nn.functional.mse_loss(forecast, target).item()
        print(f"{name:8s} DTW {dtw:.3f}  MSE {mse:.4f}")

# %%
# Three test series, their history and both forecasts.
fig, axes = plt.subplots(1, 3, figsize=(12, 3), sharey=True)
with torch.no_grad():
    for ax, i in zip(axes, (0, 10, 20)):
        ax.plot(range(150), test[i, :, 0], color="0.6", label="series")
        ax.plot(range(history, 150), mse_model(test[i:i + 1, :history, 0])[0], label="MSE-trained")
        ax.plot(range(history, 150), sdtw_model(test[i:i + 1, :history, 0])[0], label="SoftDTW-trained")
        ax.axvline(history, color="0.8", linestyle=":")
axes[0].legend()
fig.tight_layout()
