"""The ROCKET-family ops with their series on the CPU and another tensor argument on a CUDA device.

The dispatcher runs an op's CUDA kernel when any tensor argument is on a CUDA device; each op must
then refuse by name (ValueError), never fail inside a CUDA guard. The estimators move their
parameters and lengths to the input's device, so these call the ops directly. Needs a GPU.
"""
import pytest
import torch

from softdtw_torch.rocket import generate_kernels

pytestmark = pytest.mark.needs_cuda
OPS = torch.ops.softdtw_torch


def series(n_cases=4, n_channels=2, n_timepoints=40):
    return torch.randn(n_cases, n_channels, n_timepoints, generator=torch.Generator().manual_seed(0))


def refusal(op):
    return pytest.raises(ValueError, match=op + r": expected x on the CUDA device of the other tensor arguments, "
                                                r"got x on cpu")


def test_rocket():
    x = series()
    kernels = generate_kernels(40, 2, 20, seed=0)
    lengths = torch.tensor([40, 30, 20, 12], device="cuda")
    with refusal("rocket_normalise"):
        OPS.rocket_normalise(x, lengths)
    # rocket_convolve's refusals, named rocket_transform: the op called (csrc/common/checks.h, with_public_name)
    with refusal("rocket_transform"):
        OPS.rocket_transform(x, *kernels, False, "float32_fma", lengths, None)
    with refusal("rocket_transform"):  # parameters on the GPU, series on the CPU
        OPS.rocket_transform(x, *[k.cuda() for k in kernels], False, "float32_fma", None, None)


def test_minirocket():
    x = series()
    params = OPS.minirocket_fit(x, 84, 32, 0)
    with refusal("minirocket_transform"):
        OPS.minirocket_transform(x, *params, torch.tensor([40, 30, 20, 12], device="cuda"))
    with refusal("minirocket_transform"):
        OPS.minirocket_transform(x, *[p.cuda() for p in params])


def test_multirocket():
    x = series()
    p = OPS.multirocket_fit(x, 84, 32, 0)
    with refusal("multirocket_transform"):
        OPS.multirocket_transform(x, *p[:5], *p[7:], torch.tensor([40, 30, 20, 12], device="cuda"))


def test_hydra():
    x = series()
    weights, channels = OPS.hydra_fit(x, 8, 4, 2, 0)
    with refusal("hydra_transform"):
        OPS.hydra_transform(x, weights, channels, torch.tensor([40, 30, 20, 12], device="cuda"))
    with refusal("hydra_transform"):
        OPS.hydra_transform(x, weights.cuda(), channels.cuda())
