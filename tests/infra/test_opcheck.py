"""torch.library.opcheck on every operator of the library (schema, autograd registration, fake
kernel against the real one, AOT dispatch), with sample calls that reach its optional arguments.
The contract table of tests/infra/test_build.py lists the ops; every one must have samples here."""
import pytest
import torch

import softdtw_torch  # noqa: F401  (registers the operators and their fakes)
from softdtw_torch import _reference as ref

ops = torch.ops.softdtw_torch


def _softdtw_samples():
    x, y = ref.random_pairs(2, 6, 5, 3)
    D = ref.sqeuclidean(x, y)
    lengths, grad = torch.tensor([6, 3]), torch.tensor([1.0, -0.5], dtype=torch.float64)
    s = 2.0  # an Itakura slope (itakura_max_slope)
    _, R, none = ops._soft_dtw_fused_forward(x, y, 0.5, 1, None, None, None, "table")
    _, rows, cols = ops._soft_dtw_fused_forward(x, y, 0.5, 1, None, lengths, None, "borders")
    _, rows_s, cols_s = ops._soft_dtw_fused_forward(x, y, 0.5, None, s, lengths, None, "borders")
    _, unit_x, unit_y = ops._soft_dtw_fused_forward(x, y, 0.5, None, None, lengths, None, "gradients")
    grad_x, grad_y = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    grad_D = D.clone().requires_grad_(True)
    tangent_D, tangent_x = torch.randn_like(D), torch.randn_like(x)
    return {
        "soft_dtw_from_cost": [(D, 0.5, 2, lengths, None), (grad_D, 0.5, 2, lengths, None, s)],
        "soft_dtw_fused": [(x, y, 0.5, None, None, lengths[:2] - 1, False),
                           (grad_x, grad_y, 0.5, None, None, None, True, s)],
        "soft_dtw": [(x, y, 0.5, 1, True, None, lengths, None),
                     (grad_x, grad_y, 0.5, None, False, False, None, None, "l1", False, s)],
        "pairwise_cost": [(x, y, "sqeuclidean"), (grad_x, grad_y, "cosine")],
        "soft_dtw_alignment": [(x, y, 0.5, 1, lengths, None, "sqeuclidean"),
                               (x, y, 0.5, None, lengths, None, "sqeuclidean", s)],
        "soft_dtw_alignment_from_cost": [(D, 0.5, None, None, lengths - 1), (grad_D, 0.5, 1, lengths, None, s)],
        "soft_dtw_sharp": [(x, y, 0.5, 1, True, None, lengths, None, "sqeuclidean", s),
                           (grad_x, grad_y, 0.5, None, False, False, None, None, "cosine")],
        "soft_dtw_sharp_from_cost": [(D, 0.5, None, lengths, None), (grad_D, 0.5, 2, None, None, s)],
        "dilate": [(x, y, 0.5, 0.1, None, None, lengths, None, s),
                   (grad_x, grad_y, 0.3, 1.0, 1, torch.rand(6, 5), None, None)],
        "_soft_dtw_from_cost_forward": [(D, 0.5, None, None, None, None, False), (D, 0.5, None, s, None, None, True)],
        "_soft_dtw_from_cost_backward": [(grad, D, ops._soft_dtw_from_cost_forward(D, 0.5, 1, s, None, None, True)[1],
                                          0.5, 1, s, None, None),
                                         (grad, grad_D, torch.empty(0), 0.5, None, None, lengths, None)],
        "_soft_dtw_from_cost_jvp": [(D, tangent_D, 0.5, 1, s, lengths, None),
                                    (grad_D, tangent_D, 0.5, None, None, None, None)],
        "_soft_dtw_from_cost_hvp": [(grad, None, D, tangent_D, 0.5, 1, None, lengths, None, False),
                                    (grad, grad.flip(0), D, None, 0.5, None, s, None, None, True)],
        "_soft_dtw_fused_forward": [(x, y, 0.5, 1, None, None, None, keep) for keep in ("nothing", "table")]
        + [(grad_x, grad_y, 0.5, None, s, lengths, None, "table"), (x, y, 0.5, 1, None, lengths, None, "borders"),
           (x, y, 0.5, None, s, lengths, None, "borders"), (x, y, 0.5, 1, None, lengths, None, "gradients"),
           (grad_x, grad_y, 0.5, None, s, None, lengths - 1, "gradients")],
        "_soft_dtw_fused_backward": [(grad, x, y, R, none, 0.5, 1, None, None, None, "table"),
                                     (grad, grad_x, grad_y, torch.empty(0), none, 0.5, None, s, lengths, None, "table"),
                                     (grad, x, y, none, none, 0.5, None, None, lengths, None, "nothing"),
                                     (grad, x, y, rows, cols, 0.5, 1, None, lengths, None, "borders"),
                                     (grad, x, y, rows_s, cols_s, 0.5, None, s, lengths, None, "borders"),
                                     (grad, x, y, unit_x, unit_y, 0.5, None, None, lengths, None, "gradients"),
                                     (grad, grad_x, grad_y, unit_x, unit_y, 0.5, None, None, lengths, None,
                                      "gradients")],
        "_soft_dtw_fused_jvp": [(x, y, tangent_x, None, 0.5, 1, s, lengths, None),
                                (grad_x, grad_y, None, y, 0.5, None, None, None, None)],
        "_soft_dtw_fused_hvp": [(grad, None, x, y, tangent_x, None, 0.5, 1, None, lengths, None, True),
                                (grad, grad.flip(0), x, y, None, y, 0.5, None, s, None, None, False)],
        "_soft_dtw_fused_value_and_grad": [(x, y, grad.abs(), 0.5, None, None, lengths, None),
                                           (x, y, grad.abs(), 0.5, 1, s, None, None)],
        "_dtw_path": [(x, y, None, None, None, None), (x, y, 1, s, lengths, lengths[:2] - 1)],
        "_itakura_rows": [(torch.tensor([5, 9, 1]), torch.tensor([7, 3, 1]), 8, 2.0),
                          (torch.tensor([40, 2], dtype=torch.int32), torch.tensor([13, 2]), 13, 1.0)],
    }


def _rocket_samples():
    k = list(ops.rocket_generate_kernels(16, 2, 5, 3))
    x = torch.randn(3, 2, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    lengths = torch.tensor([16, 9, 12])
    features, argmax = ops._rocket_convolve_forward(x, *k, "float64", None, None)
    xr = x.clone().requires_grad_(True)
    return {
        "rocket_generate_kernels": [(100, 3, 10, 7), (5, 12, 1000, 2**33 + 3), (2, 1, 1, 0)],
        "rocket_normalise": [(x, lengths), (xr, None)],
        "rocket_convolve": [(x, *k, "float64", lengths, None), (xr, *k, "float32_fma", None, 0.5)],
        "rocket_transform": [(x, *k, True, "float32", lengths, None), (xr, *k, False, "float64", None, 0.5)],
        "_rocket_convolve_forward": [(x, *k, "float64", None, None)],
        "_rocket_convolve_backward": [(torch.randn_like(features), x, *k, argmax, "float64", None, None)],
    }


def _minirocket_samples():
    x = torch.randn(4, 2, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(1)).cumsum(-1)
    params = ops.minirocket_fit(x, 200, 32, 0)
    lengths = torch.tensor([40, 31, 20, 9])
    xr = x.clone().requires_grad_(True)
    return {
        "minirocket_fit": [(x, 200, 32, 0), (x[:, :1], 200, 32, 0)],
        "minirocket_transform": [(x, *params, None), (x, *params, lengths), (xr, *params, None)],
    }


def _multirocket_samples():
    x = torch.randn(4, 2, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).cumsum(-1)
    p = ops.multirocket_fit(x, 200, 32, 0)
    lengths = torch.tensor([40, 31, 20, 10])
    xr = x.clone().requires_grad_(True)
    return {
        "multirocket_fit": [(x, 200, 32, 0), (x[:, :1].contiguous(), 200, 32, 0)],
        "multirocket_transform": [(x, *p[:5], *p[7:], None), (x, *p[:5], *p[7:], lengths), (xr, *p[:5], *p[7:], None)],
    }


def _hydra_samples():
    x = torch.randn(4, 3, 30, dtype=torch.float64, generator=torch.Generator().manual_seed(3)).cumsum(-1)
    weights, channels = ops.hydra_fit(x, 4, 8, 8, 0)
    w64 = weights.double()
    lengths = torch.tensor([30, 21, 6, 12])
    xr = x.clone().requires_grad_(True)
    wr = w64.clone().requires_grad_(True)
    grad = torch.randn(4, weights.shape[0] * 2 * 2 * 4 * 4, dtype=torch.float64)
    return {
        "hydra_fit": [(x, 4, 8, 8, 0), (x[:, :1].contiguous(), 8, 3, 2, 7)],
        "hydra_transform": [(x.float(), weights, channels, None), (x, w64, channels, lengths),
                            (xr, wr, channels, None), (xr[:, :1], wr, channels, lengths)],
        "_hydra_transform_backward": [(grad, x, w64, channels, None), (grad, x, w64, channels, lengths)],
    }


FAMILIES = {"softdtw": _softdtw_samples, "rocket": _rocket_samples, "minirocket": _minirocket_samples,
            "multirocket": _multirocket_samples, "hydra": _hydra_samples}


def test_every_op_has_samples():
    from test_build import REGISTRATIONS

    sampled = {op for make in FAMILIES.values() for op in make()}
    assert sampled == set(REGISTRATIONS)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_opcheck(family):
    for op, calls in FAMILIES[family]().items():
        for args in calls:
            torch.library.opcheck(getattr(ops, op).default, args)
