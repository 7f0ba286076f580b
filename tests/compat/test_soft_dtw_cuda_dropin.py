"""softdtw_torch.soft_dtw_cuda as a drop-in for Maghoumi's soft_dtw_cuda.SoftDTW: its README's
usage runs with only the import changed (on the GPU where there is one), and values and
gradients match a float64 reference written from that code's recursion and band rule (a cell
(i, j), 1-based, is pruned when 0 < bandwidth < |i − j|), with its normalisation."""
import numpy as np
import pytest
import torch

from softdtw_torch.soft_dtw_cuda import SoftDTW


def reference(D: np.ndarray, gamma: float, bandwidth: float) -> np.ndarray:
    """The (B,) soft-DTW values of costs D (B, N, M), float64, the band as Maghoumi's code prunes."""
    B, N, M = D.shape
    out = np.empty(B)
    for b in range(B):
        R = np.full((N + 2, M + 2), np.inf)
        R[0, 0] = 0.0
        for j in range(1, M + 1):
            for i in range(1, N + 1):
                if 0 < bandwidth < abs(i - j):
                    continue
                r = -np.array([R[i - 1, j - 1], R[i - 1, j], R[i, j - 1]]) / gamma
                rmax = r.max()
                softmin = -gamma * (np.log(np.exp(r - rmax).sum()) + rmax) if np.isfinite(rmax) else np.inf
                R[i, j] = D[b, i - 1, j - 1] + softmin
        out[b] = R[N, M]
    return out


def sqeuclidean(x, y):
    return ((x[:, :, None, :] - y[:, None, :, :]) ** 2).sum(-1)


def test_readme_usage_runs_unchanged():
    # Create the sequences
    batch_size, len_x, len_y, dims = 8, 15, 12, 5
    x = torch.rand((batch_size, len_x, dims), requires_grad=True)
    y = torch.rand((batch_size, len_y, dims))
    if torch.cuda.is_available():  # the README moves them to the GPU
        x = x.cuda()
        y = y.cuda()
    # Create the "criterion" object
    sdtw = SoftDTW(use_cuda=True, gamma=0.1)
    # Compute the loss value
    loss = sdtw(x, y)  # Just like any torch.nn.xyzLoss()
    # Aggregate and call backward()
    loss.mean().backward()
    expected = reference(sqeuclidean(x.detach().double().cpu().numpy(), y.double().cpu().numpy()), 0.1, 0)
    np.testing.assert_allclose(loss.detach().double().cpu().numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("bandwidth", [None, 1, 2.5, 4])
@pytest.mark.parametrize("normalize", [False, True])
def test_values_and_gradients_match_the_reference(bandwidth, normalize):
    g = torch.Generator().manual_seed(11)
    x = torch.randn(3, 9, 2, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, 9, 2, generator=g, dtype=torch.float64)
    dist = lambda a, b: ((a.unsqueeze(2) - b.unsqueeze(1)) ** 2).sum(3)  # noqa: E731  (its default, written out)
    for dist_func in (None, dist):
        value = SoftDTW(False, gamma=0.4, normalize=normalize, bandwidth=bandwidth, dist_func=dist_func)(x, y)

        def expected_of(xv):
            bw = 0 if bandwidth is None else bandwidth
            v = reference(sqeuclidean(xv, y.detach().numpy()), 0.4, bw)
            if normalize:
                v = v - 0.5 * (reference(sqeuclidean(xv, xv), 0.4, bw)
                               + reference(sqeuclidean(y.detach().numpy(), y.detach().numpy()), 0.4, bw))
            return v

        xv = x.detach().numpy()
        np.testing.assert_allclose(value.detach().numpy(), expected_of(xv), rtol=1e-10, atol=1e-10)
        # the gradient of the summed values, by central differences of the reference
        (grad,) = torch.autograd.grad(value.sum(), x)
        h, fd = 1e-6, np.zeros_like(xv)
        for idx in np.ndindex(*xv.shape):
            plus, minus = xv.copy(), xv.copy()
            plus[idx] += h
            minus[idx] -= h
            fd[idx] = (expected_of(plus).sum() - expected_of(minus).sum()) / (2 * h)
        np.testing.assert_allclose(grad.numpy(), fd, rtol=1e-5, atol=1e-6)


def test_normalize_works_for_different_lengths():
    g = torch.Generator().manual_seed(12)
    x, y = torch.randn(2, 7, 2, generator=g, dtype=torch.float64), torch.randn(2, 10, 2, generator=g, dtype=torch.float64)
    got = SoftDTW(False, gamma=0.5, normalize=True)(x, y)
    xv, yv = x.numpy(), y.numpy()
    expected = (reference(sqeuclidean(xv, yv), 0.5, 0)
                - 0.5 * (reference(sqeuclidean(xv, xv), 0.5, 0) + reference(sqeuclidean(yv, yv), 0.5, 0)))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-10)


def test_positional_use_cuda_and_errors():
    sdtw = SoftDTW(True, 0.2)  # use_cuda first, positionally, as in the original
    assert sdtw.gamma == 0.2 and sdtw.use_cuda is True
    with pytest.raises(ValueError, match="SoftDTW: expected gamma > 0"):
        SoftDTW(False, gamma=0.0)
    with pytest.raises(ValueError, match="SoftDTW: expected X and Y with the same batch size"):
        SoftDTW(False)(torch.randn(2, 5, 3), torch.randn(3, 5, 3))
