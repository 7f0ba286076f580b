"""tslearn (from PyPI) as an external reference for values and gradients, band with N != M included."""
import numpy as np
import pytest
import torch

import softdtw_torch as st
from softdtw_torch import _reference as ref

tslearn_metrics = pytest.importorskip("tslearn.metrics", reason="tslearn is a test dependency (pip install tslearn)")


@pytest.mark.parametrize("n,m,radius", [(30, 30, None), (40, 25, None), (25, 40, None), (40, 25, 3), (25, 40, 0), (33, 33, 5)])
@pytest.mark.parametrize("gamma", [0.01, 0.5, 3.0])
def test_values_match_tslearn(n, m, radius, gamma):
    x, y = ref.random_pairs(3, n, m, 2, seed=n + m)
    ours = st.soft_dtw(x, y, gamma=gamma, bandwidth=radius)
    for b in range(3):
        kwargs = {} if radius is None else {"global_constraint": "sakoe_chiba", "sakoe_chiba_radius": radius}
        theirs = tslearn_metrics.soft_dtw(x[b].numpy(), y[b].numpy(), gamma=gamma, **kwargs)
        assert ours[b].item() == pytest.approx(theirs, rel=1e-10, abs=1e-10)


def test_band_mask_matches_tslearn():
    for n, m, r in [(10, 10, 2), (12, 5, 1), (5, 12, 0), (7, 9, 3)]:
        mask = np.asarray(tslearn_metrics.sakoe_chiba_mask(n, m, radius=r))
        # tslearn >= 0.7 returns True where allowed; older versions 0.0 (allowed) / inf (masked).
        theirs = mask if mask.dtype == bool else mask == 0
        assert (np.array(ref.band_mask(n, m, r)) == theirs).all()


@pytest.mark.parametrize("n,m,radius", [(20, 20, None), (24, 15, None), (15, 24, 2)])
@pytest.mark.parametrize("normalize", [False, True])
def test_gradients_match_tslearn_pytorch_loss(n, m, radius, normalize):
    x, y = ref.random_pairs(2, n, m, 3, seed=9)
    kwargs = {} if radius is None else {"global_constraint": "sakoe_chiba", "sakoe_chiba_radius": radius}
    theirs_loss = tslearn_metrics.SoftDTWLossPyTorch(gamma=0.7, normalize=normalize, **kwargs)
    results = []
    for f in (lambda a, b: st.soft_dtw(a, b, gamma=0.7, bandwidth=radius, normalize=normalize), theirs_loss):
        a = x.clone().requires_grad_(True)
        b = y.clone().requires_grad_(True)
        values = f(a, b)
        values.sum().backward()
        results.append((values.detach(), a.grad, b.grad))
    # tslearn's SoftDTWLossPyTorch passes its R and E tables through torch.Tensor(), i.e. float32,
    # even for float64 inputs: compare at float32 accuracy (the numpy-backend test is strict).
    for ours, theirs in zip(*results):
        torch.testing.assert_close(ours, theirs.to(ours.dtype), rtol=2e-4, atol=2e-4)


def test_alignment_matches_tslearn_numpy_backend():
    x, y = ref.random_pairs(1, 35, 28, 2, seed=4)
    D = ref.sqeuclidean(x, y)
    sdtw = tslearn_metrics.SoftDTW(D[0].numpy(), gamma=0.2)
    value = sdtw.compute()
    E_theirs = sdtw.grad()
    Dr = D.clone().requires_grad_(True)
    ours = st.soft_dtw_from_cost(Dr, gamma=0.2)
    ours.backward()
    assert ours.item() == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(Dr.grad[0].numpy(), E_theirs, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("normalize", [False, True])
def test_cdist_matches_tslearn(normalize):
    X, _ = ref.random_pairs(5, 14, 14, 2, seed=5)
    Y, _ = ref.random_pairs(4, 11, 11, 2, seed=6)
    theirs_fn = tslearn_metrics.cdist_soft_dtw_normalized if normalize else tslearn_metrics.cdist_soft_dtw
    ours = st.cdist_soft_dtw(X, Y, gamma=0.7, normalize=normalize)
    np.testing.assert_allclose(ours.numpy(), theirs_fn(X.numpy(), Y.numpy(), gamma=0.7), rtol=1e-10, atol=1e-10)
    ours_sym = st.cdist_soft_dtw(X, gamma=0.7, normalize=normalize)
    np.testing.assert_allclose(ours_sym.numpy(), theirs_fn(X.numpy(), gamma=0.7), rtol=1e-10, atol=1e-10)
