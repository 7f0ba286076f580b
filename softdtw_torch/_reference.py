"""Slow, readable float64 references for the tests: written to read like the math of
``docs/design/softdtw.md`` (§1, §5), not to be fast. Indices are 0-based: cell (i, j) holds the
design doc's R[i+1, j+1].
"""
import math
from typing import Iterator, List, Optional, Sequence, Tuple

import torch

INF = math.inf


def band_mask(n: int, m: int, radius: Optional[int]) -> List[List[bool]]:
    """Allowed cells of the Sakoe–Chiba band, tslearn's ``sakoe_chiba_mask`` rule.

    N == M: |i − j| <= r. N != M: the band is widened by |N − M| so that the end stays reachable:
    for n <= m, row i allows columns [i − r, i + (m − n) + r]; for n > m, column j allows rows
    [j − r, j + (n − m) + r].
    """
    if radius is None:
        return [[True] * m for _ in range(n)]
    if n <= m:
        return [[i - radius <= j <= i + (m - n) + radius for j in range(m)] for i in range(n)]
    return [[j - radius <= i <= j + (n - m) + radius for j in range(m)] for i in range(n)]


def itakura_mask(n: int, m: int, max_slope: float) -> List[List[bool]]:
    """Allowed cells of the Itakura parallelogram, written from tslearn's ``_itakura_mask_generic``
    with plain Python floats (the same float64 operations in the same order).

    With a = (1/s)·(n/m) and b = s·(n/m), column j allows the rows [lb_j, ub_j), where
    lb_j = ceil(max(r(a·j), r(n − 1 − b·(m − 1) + b·j))) and
    ub_j = floor(min(r(b·j), r(n − 1 − a·(m − 1) + a·j)) + 1), r(v) = round(100·v)/100 (halves to
    even, as numpy's round). A row or a column may come out empty (no path; tslearn raises there).
    """
    low, high = (1.0 / max_slope) * (n / m), max_slope * (n / m)

    def r(v: float) -> float:
        return round(v * 100) / 100

    mask = [[False] * m for _ in range(n)]
    for j in range(m):
        lb = math.ceil(max(r(low * j), r((n - 1) - high * (m - 1) + high * j)))
        ub = math.floor(min(r(high * j), r((n - 1) - low * (m - 1) + low * j)) + 1)
        for i in range(max(lb, 0), min(ub, n)):
            mask[i][j] = True
    return mask


def softmin(values: Sequence[float], gamma: float) -> float:
    """softmin_γ(a_1..a_k) = −γ log Σ exp(−a_l/γ), computed with the minimum factored out."""
    lo = min(values)
    if lo == INF:
        return INF
    return lo - gamma * math.log(sum(math.exp(-(v - lo) / gamma) for v in values))


def soft_dtw_table(D: Sequence[Sequence[float]], gamma: float, radius: Optional[int] = None) -> List[List[float]]:
    """The full DP: R(i, j) = D(i, j) + softmin(R(i−1, j−1), R(i−1, j), R(i, j−1)); R(−1, −1) = 0."""
    n, m = len(D), len(D[0])
    allowed = band_mask(n, m, radius)

    def r_at(table, i, j):
        if i < 0 or j < 0:
            return 0.0 if (i < 0 and j < 0) else INF
        return table[i][j]

    R = [[INF] * m for _ in range(n)]
    for i in range(n):
        for j in range(m):
            if allowed[i][j]:
                R[i][j] = float(D[i][j]) + softmin([r_at(R, i - 1, j - 1), r_at(R, i - 1, j), r_at(R, i, j - 1)], gamma)
    return R


def soft_dtw(D: Sequence[Sequence[float]], gamma: float, radius: Optional[int] = None) -> float:
    """sdtw_γ(D) = R(n−1, m−1), with plain Python floats (float64)."""
    return soft_dtw_table(D, gamma, radius)[-1][-1]


def dtw(D: Sequence[Sequence[float]], radius: Optional[int] = None) -> float:
    """Hard DTW on the same costs (the γ → 0 limit)."""
    n, m = len(D), len(D[0])
    allowed = band_mask(n, m, radius)
    R = [[INF] * m for _ in range(n)]
    for i in range(n):
        for j in range(m):
            if not allowed[i][j]:
                continue
            if i == 0 and j == 0:
                R[i][j] = float(D[0][0])
                continue
            best = min(
                R[i - 1][j - 1] if i > 0 and j > 0 else INF,
                R[i - 1][j] if i > 0 else INF,
                R[i][j - 1] if j > 0 else INF,
            )
            R[i][j] = float(D[i][j]) + best
    return R[-1][-1]


def delannoy(a: int, b: int) -> int:
    """Number of monotone alignment paths from (0, 0) to (a, b) with steps (1,0), (0,1), (1,1)."""
    return sum(math.comb(a, k) * math.comb(b, k) * 2**k for k in range(min(a, b) + 1))


def alignment_paths(n: int, m: int) -> Iterator[List[Tuple[int, int]]]:
    """Every monotone path from (0, 0) to (n−1, m−1) (Delannoy(n−1, m−1) of them)."""

    def extend(path):
        i, j = path[-1]
        if (i, j) == (n - 1, m - 1):
            yield list(path)
            return
        for di, dj in ((1, 0), (0, 1), (1, 1)):
            if i + di < n and j + dj < m:
                path.append((i + di, j + dj))
                yield from extend(path)
                path.pop()

    yield from extend([(0, 0)])


def soft_dtw_brute_force(
    D: Sequence[Sequence[float]], gamma: float, radius: Optional[int] = None
) -> Tuple[float, List[List[float]]]:
    """sdtw_γ = −γ log Σ_A exp(−⟨A, D⟩/γ) over all alignments A inside the band, and the expected
    alignment E = Σ_A p_γ(A)·A (the gradient ∂sdtw/∂D), by enumerating every path."""
    n, m = len(D), len(D[0])
    allowed = band_mask(n, m, radius)
    costs, paths = [], []
    for path in alignment_paths(n, m):
        if all(allowed[i][j] for i, j in path):
            paths.append(path)
            costs.append(sum(float(D[i][j]) for i, j in path))
    lo = min(costs)
    weights = [math.exp(-(c - lo) / gamma) for c in costs]
    total = sum(weights)
    value = lo - gamma * math.log(total)
    E = [[0.0] * m for _ in range(n)]
    for path, w in zip(paths, weights):
        for i, j in path:
            E[i][j] += w / total
    return value, E


def soft_dtw_hessian_brute_force(
    D: Sequence[Sequence[float]], gamma: float, radius: Optional[int] = None
) -> List[List[List[List[float]]]]:
    """The Hessian ∂²sdtw/∂D² by enumerating every path: sdtw is a log-partition function, so its
    Hessian is −1/γ times the covariance of the alignment matrices under the Gibbs distribution,
    H[i][j][k][l] = −(1/γ)·(Σ_A p(A)·A_ij·A_kl − E_ij·E_kl)."""
    n, m = len(D), len(D[0])
    allowed = band_mask(n, m, radius)
    paths = [p for p in alignment_paths(n, m) if all(allowed[i][j] for i, j in p)]
    costs = [sum(float(D[i][j]) for i, j in p) for p in paths]
    lo = min(costs)
    weights = [math.exp(-(c - lo) / gamma) for c in costs]
    total = sum(weights)
    _, E = soft_dtw_brute_force(D, gamma, radius)
    H = [[[[-E[i][j] * E[k][l] for l in range(m)] for k in range(n)] for j in range(m)] for i in range(n)]
    for path, w in zip(paths, weights):
        for i, j in path:
            for k, l in path:
                H[i][j][k][l] += w / total
    return [[[[-h / gamma for h in row] for row in block] for block in plane] for plane in H]


def soft_dtw_autograd(D: torch.Tensor, gamma: float, radius: Optional[int] = None) -> torch.Tensor:
    """Differentiable float64 DP written with torch ops, one anti-diagonal at a time.

    Independent of the library's hand-written backward: autograd through torch.logsumexp gives
    the expected alignment E = ∂value/∂D. D is (n, m); returns a 0-dim tensor.
    """
    n, m = D.shape
    allowed = torch.tensor(band_mask(n, m, radius), dtype=torch.bool, device=D.device)
    inf = torch.tensor(INF, dtype=D.dtype, device=D.device)
    # R padded with the border: Rp[i + 1][j + 1] = R(i, j). Kept as a list of rows of cells so
    # autograd sees plain, non in-place operations.
    Rp = [[inf] * (m + 1) for _ in range(n + 1)]
    Rp[0][0] = torch.zeros((), dtype=D.dtype, device=D.device)
    for p in range(n + m - 1):
        for i in range(max(0, p - m + 1), min(n, p + 1)):
            j = p - i
            if not allowed[i, j]:
                continue
            prev = torch.stack([Rp[i][j], Rp[i][j + 1], Rp[i + 1][j]])
            if torch.isinf(prev).all():
                continue
            Rp[i + 1][j + 1] = D[i, j] - gamma * torch.logsumexp(-prev / gamma, dim=0)
    return Rp[n][m]


def dilate(
    prediction: torch.Tensor, target: torch.Tensor, alpha: float, gamma: float
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """DILATE of one pair, prediction (n, d) and target (m, d), written from Le Guen & Thome (2019):
    shape = sdtw_γ(D) with D_ij = ||prediction_i − target_j||² (by differences), temporal = ⟨E, Ω⟩
    with E = ∂shape/∂D and Ω_ij = ((i + 1)/n − (j + 1)/m)², loss = α·shape + (1 − α)·temporal.
    Differentiable (twice through ``soft_dtw_autograd``): returns (loss, shape, temporal)."""
    D = sqeuclidean(prediction, target)
    if not D.requires_grad:  # E = ∂shape/∂D is needed either way
        D = D.detach().requires_grad_(True)
    n, m = D.shape
    shape = soft_dtw_autograd(D, gamma)
    (E,) = torch.autograd.grad(shape, D, create_graph=True)
    rows = torch.arange(1, n + 1, dtype=D.dtype).reshape(n, 1) / n
    cols = torch.arange(1, m + 1, dtype=D.dtype).reshape(1, m) / m
    temporal = (E * (rows - cols) ** 2).sum()
    return alpha * shape + (1 - alpha) * temporal, shape, temporal


def random_pairs(batch: int, n: int, m: int, d: int, dtype=torch.float64, seed: int = 0):
    """Reproducible randn inputs x (batch, n, d), y (batch, m, d)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n, d, generator=g, dtype=dtype)
    y = torch.randn(batch, m, d, generator=g, dtype=dtype)
    return x, y


def sqeuclidean(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean costs ||x_i − y_j||² by direct differences: (..., n, m)."""
    return ((x.unsqueeze(-2) - y.unsqueeze(-3)) ** 2).sum(-1)


__all__ = [
    "band_mask",
    "itakura_mask",
    "softmin",
    "soft_dtw_table",
    "soft_dtw",
    "dtw",
    "delannoy",
    "alignment_paths",
    "soft_dtw_brute_force",
    "soft_dtw_hessian_brute_force",
    "soft_dtw_autograd",
    "dilate",
    "random_pairs",
    "sqeuclidean",
]
