"""Records the outputs of every operator (and of the main Python API) on a fixed grid of inputs,
and compares two such records bit for bit: the check that a refactoring, a move or an
optimisation that must not change numerics indeed changed none.

    python scripts/output_snapshot.py record before.pt [--library path/to/_C.so] [--api]
    ...change, rebuild...
    python scripts/output_snapshot.py record after.pt [--library ...] [--api]
    python scripts/output_snapshot.py compare before.pt after.pt

`record` calls the ops through torch.ops: from the extension at --library (an old build can be
kept aside and loaded without its Python package), else from the softdtw_torch package of the
current directory. --api also records the Python API (cdist_soft_dtw, barycenters, k-means,
Rocket, MiniRocket, RocketClassifier, the SoftDTW loss and its gradient) and needs the package.
The grid: float32, float64 and bfloat16; N != M, N = 1, bands, ragged lengths, two gammas; every
SoftDTW op and mode with gradients; ROCKET generation, normalisation, the three accumulation
modes with gradients; MiniRocket and MultiRocket fit and transform; Hydra fit, transform and
gradients. `compare` exits with status 1 when any output
differs in dtype, shape or any bit.
"""
import argparse
import os
import sys
import warnings

import numpy as np
import torch


def record_ops(out, save):
    ops = torch.ops.softdtw_torch
    g = torch.Generator().manual_seed(0)

    def rnd(*s, dtype=torch.float64):
        return torch.randn(*s, generator=g, dtype=torch.float64).to(dtype)

    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        for (B, N, M, d) in [(3, 7, 5, 2), (2, 70, 130, 3), (5, 1, 9, 1), (9, 33, 33, 4)]:
            x, y = rnd(B, N, d, dtype=dtype), rnd(B, M, d, dtype=dtype)
            xl = torch.randint(1, N + 1, (B,), generator=g); yl = torch.randint(1, M + 1, (B,), generator=g)
            for gamma in (0.01, 1.0):
                for bw in (None, 2):
                    for lens in (False, True):
                        L = (xl, yl) if lens else (None, None)
                        k = f"{dtype}-{B}x{N}x{M}x{d}-g{gamma}-bw{bw}-l{lens}"
                        D = ops.pairwise_cost(x, y, "sqeuclidean")
                        save("pc " + k, D)
                        save("fcf " + k, ops._soft_dtw_from_cost_forward(D, gamma, bw, None, *L, True))
                        v, R = ops._soft_dtw_from_cost_forward(D, gamma, bw, None, *L, True)
                        gr = rnd(B, dtype=R.dtype)
                        save("fcb " + k, ops._soft_dtw_from_cost_backward(gr, D, R, gamma, bw, None, *L))
                        v, R, none = ops._soft_dtw_fused_forward(x, y, gamma, bw, None, *L, "table")
                        save("ff " + k, (v, R))
                        save("fb " + k, ops._soft_dtw_fused_backward(gr, x, y, R, none, gamma, bw, None, *L, "table"))
                        save("vg " + k, ops._soft_dtw_fused_value_and_grad(x, y, gr.abs(), gamma, bw, None, *L))
                        save("ckf " + k, ops._soft_dtw_fused_forward(x, y, gamma, bw, None, *L, "borders"))
                        for fused in (None, True, False):
                            for cost in ("sqeuclidean", "l1", "cosine"):
                                if (fused or dtype == torch.bfloat16) and cost != "sqeuclidean":
                                    continue
                                for normalize in (False, True):
                                    xr = x.clone().requires_grad_(dtype != torch.bfloat16)
                                    yr = y.clone().requires_grad_(dtype != torch.bfloat16)
                                    val = ops.soft_dtw(xr, yr, gamma, bw, normalize, fused, *L, cost, False)
                                    save(f"sd {k} {fused} {cost} {normalize}", val)
                                    if xr.requires_grad:
                                        gx, gy = torch.autograd.grad((val * torch.arange(1, B + 1)).sum(), (xr, yr))
                                        save(f"sdg {k} {fused} {cost} {normalize}", (gx, gy))
                        xr = x.clone().requires_grad_(dtype != torch.bfloat16)
                        val = ops.soft_dtw_fused(xr, y, gamma, bw, *L, True)
                        save("ck " + k, val)
                        if xr.requires_grad:
                            save("ckg " + k, torch.autograd.grad(val.sum(), xr))
                        save("al " + k, ops.soft_dtw_alignment(x, y, gamma, bw, *L, "sqeuclidean"))
                        save("alc " + k, ops.soft_dtw_alignment_from_cost(D, gamma, bw, *L))
                        Dr = D.clone().requires_grad_(dtype != torch.bfloat16)
                        val = ops.soft_dtw_from_cost(Dr, gamma, bw, *L)
                        save("sfc " + k, val)
                        if Dr.requires_grad:
                            save("sfcg " + k, torch.autograd.grad(val.sum(), Dr))

    # ROCKET
    for (n, c, T, K) in [(4, 1, 50, 30), (3, 3, 40, 25), (2, 2, 9, 10)]:
        kern = ops.rocket_generate_kernels(T, c, K, 7)
        save(f"rg {n}{c}{T}{K}", kern)
        for dtype in (torch.float32, torch.float64):
            x = rnd(n, c, T, dtype=dtype)
            xl = torch.randint(9, T + 1, (n,), generator=g)
            for lens in (None, xl):
                save(f"rn {n}{c}{T}{dtype}{lens is None}", ops.rocket_normalise(x, lens))
                for acc in ("float32_fma", "float64", "float32"):
                    save(f"rt {n}{c}{T}{dtype}{acc}{lens is None}", ops.rocket_transform(x, *kern, True, acc, lens, None))
                    save(f"rc {n}{c}{T}{dtype}{acc}{lens is None}", ops.rocket_convolve(x, *kern, acc, lens, None))
                    for temp in (None, 0.5):
                        xr = x.clone().requires_grad_(True)
                        w = kern[0].clone().requires_grad_(True); b = kern[2].clone().requires_grad_(True)
                        f = ops.rocket_transform(xr, w, kern[1], b, *kern[3:], True, acc, lens, temp)
                        save(f"rtf {n}{c}{T}{dtype}{acc}{temp}{lens is None}", f)
                        save(f"rtg {n}{c}{T}{dtype}{acc}{temp}{lens is None}",
                             torch.autograd.grad((f * rnd(*f.shape, dtype=f.dtype)).sum(), (xr, w, b)))

    # MiniRocket
    for (n, c, T) in [(5, 1, 60), (4, 3, 30), (3, 2, 9)]:
        for dtype in (torch.float32, torch.float64):
            x = rnd(n, c, T, dtype=dtype)
            params = ops.minirocket_fit(x, 840, 32, 3)
            save(f"mf {n}{c}{T}{dtype}", params)
            save(f"mt {n}{c}{T}{dtype}", ops.minirocket_transform(x, *params, None))
            xl = torch.randint(9, T + 1, (n,), generator=g)
            save(f"mtl {n}{c}{T}{dtype}", ops.minirocket_transform(x, *params, xl))

    # MultiRocket (fit, transform with and without lengths) and Hydra (fit, transform, gradients)
    for (n, c, T) in [(5, 1, 60), (4, 3, 30), (3, 2, 12)]:
        for dtype in (torch.float32, torch.float64):
            x = rnd(n, c, T, dtype=dtype)
            xl = torch.randint(10, T + 1, (n,), generator=g)  # MultiRocket's shortest series: 10
            params = ops.multirocket_fit(x, 168, 32, 3)
            save(f"mrf {n}{c}{T}{dtype}", params)
            save(f"mrt {n}{c}{T}{dtype}", ops.multirocket_transform(x, *params[:5], *params[7:], None))
            save(f"mrtl {n}{c}{T}{dtype}", ops.multirocket_transform(x, *params[:5], *params[7:], xl))
            weights, channels = ops.hydra_fit(x, 8, 16, 3, 5)
            save(f"hf {n}{c}{T}{dtype}", (weights, channels))
            for lens in (None, xl):
                xr = x.clone().requires_grad_(True)
                w = weights.clone().requires_grad_(True)
                f = ops.hydra_transform(xr, w, channels, lens)
                save(f"ht {n}{c}{T}{dtype}{lens is None}", f)
                save(f"htg {n}{c}{T}{dtype}{lens is None}",
                     torch.autograd.grad((f * rnd(*f.shape, dtype=f.dtype)).sum(), (xr, w)))



def record_api(out):
    warnings.filterwarnings("ignore")
    import softdtw_torch as st
    from softdtw_torch.datasets import load_gunpoint
    from softdtw_torch.rocket import MiniRocket, Rocket, RocketClassifier

    X, y = load_gunpoint("train")  # (cases, 1, 150): GunPoint's first 40 training cases
    X, y = np.asarray(X, dtype=np.float64)[:40], np.asarray(y)[:40]
    g = torch.Generator().manual_seed(0)
    a = torch.randn(6, 30, 2, generator=g, dtype=torch.float64)
    b = torch.randn(5, 25, 2, generator=g, dtype=torch.float64)
    out["cdist"] = st.cdist_soft_dtw(a, b, gamma=0.3)
    out["cdist_normalized"] = st.cdist_soft_dtw(a, None, gamma=0.3, normalize=True)
    out["barycenter_lbfgs"] = torch.as_tensor(st.softdtw_barycenter(a, gamma=0.5, max_iter=20)[0])
    out["barycenter_adam"] = torch.as_tensor(st.softdtw_barycenter(a, gamma=0.5, method="adam", max_iter=30)[0])
    km = st.SoftDTWKMeans(n_clusters=3, gamma=0.5, max_iter=5, random_state=0).fit(a)
    out["kmeans_centers"] = torch.as_tensor(np.asarray(km.cluster_centers_))
    out["kmeans_labels"] = torch.as_tensor(np.asarray(km.labels_))
    out["kmeans_inertia"] = torch.tensor(float(km.inertia_))
    out["rocket"] = torch.as_tensor(np.asarray(Rocket(n_kernels=200, random_state=3).fit(X).transform(X)))
    out["minirocket"] = torch.as_tensor(np.asarray(MiniRocket(random_state=4).fit(X).transform(X)))
    clf = RocketClassifier(n_kernels=300, random_state=5).fit(X, y)
    out["rocket_classifier_decision"] = torch.as_tensor(np.asarray(clf.decision_function(X)))
    x = a[:5].clone().requires_grad_(True)
    value = st.SoftDTW(gamma=0.2, normalize=True)(x, b)
    value.backward()
    out["loss"], out["loss_grad"] = value.detach(), x.grad

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("output")
    rec.add_argument("--library", help="a built extension (.so) to load instead of the package")
    rec.add_argument("--api", action="store_true", help="also record the Python API (needs the package)")
    cmp = sub.add_parser("compare")
    cmp.add_argument("before")
    cmp.add_argument("after")
    args = parser.parse_args()
    if args.command == "compare":
        a, b = torch.load(args.before), torch.load(args.after)
        differ = sorted(set(a) ^ set(b))
        for key in sorted(set(a) & set(b)):
            x, y = a[key], b[key]
            if x.dtype != y.dtype or x.shape != y.shape or not torch.equal(
                    x.reshape(-1).contiguous().view(torch.uint8), y.reshape(-1).contiguous().view(torch.uint8)):
                differ.append(key)
        print(f"{len(set(a) | set(b))} outputs compared bit for bit, {len(differ)} differ")
        for key in differ[:20]:
            print("  differs:", key)
        sys.exit(1 if differ else 0)
    if args.library:
        torch.ops.load_library(args.library)
    else:
        sys.path.insert(0, os.getcwd())
        import softdtw_torch  # noqa: F401
    out = {}

    def save(name, val):
        if isinstance(val, (tuple, list)):
            for i, v in enumerate(val):
                save(f"{name}[{i}]", v)
        elif isinstance(val, torch.Tensor):
            out[name] = val.detach().clone()
        else:
            out[name] = torch.as_tensor(np.asarray(val))

    record_ops(out, save)
    if args.api:
        record_api(out)
    torch.save(out, args.output)
    print(f"{len(out)} outputs recorded in {args.output}")


if __name__ == "__main__":
    main()
