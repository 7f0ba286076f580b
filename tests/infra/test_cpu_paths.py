"""The CPU kernels' vector paths (csrc/common/cpu.h): which one each family runs is reported by
info(), measured where a family has a probe (MiniRocket's counting), capped by
SOFTDTW_TORCH_CPU_PATH or set_cpu_path_cap; and every path gives the same bits. The families' own
tests compare each path with independent references (aeon, the float64 references); here every
family's output on each path this machine runs is compared with its portable path's."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import softdtw_torch
from conftest import CPU_PATHS
from softdtw_torch import _C, _info
from softdtw_torch.rocket import HydraTransformer, MiniRocket, MultiRocket, Rocket

FAMILIES = {"hydra", "minirocket", "multirocket", "rocket", "softdtw"}


def run_python(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def test_info_names_the_cpu_and_each_family_path():
    facts = softdtw_torch.info()
    assert facts["cpu"] and facts["cpu"] != "?"
    assert set(facts["cpu_paths"]) == FAMILIES
    for kernel, line in facts["cpu_paths"].items():
        path, why = line.split(" ", 1)
        assert path in CPU_PATHS, line
        assert why.startswith("(") and why.endswith(")") and len(why) > 2, line
    printed = _info.format_info(facts)
    for kernel, line in facts["cpu_paths"].items():
        assert f"cpu_paths: {kernel}: {line}" in printed


# The families with a probe, and their paths.
MEASURED = {"minirocket": ["portable", "avx2", "avx512"], "multirocket": ["portable", "avx512"],
            "softdtw": ["portable", "avx512"]}


@pytest.mark.parametrize("kernel", sorted(MEASURED))
def test_path_is_the_fastest_measured(kernel):
    runnable = [path for path in MEASURED[kernel] if path in CPU_PATHS]
    if len(runnable) < 2:
        pytest.skip(f"this machine runs one of {kernel}'s paths only ({runnable})")
    _C.set_cpu_path_cap(None)  # decided again: measured now
    line = _info.cpu_paths()[kernel]
    match = re.fullmatch(r"(\w+) \(measured: (.*)\)", line)
    assert match, line
    times = {name: float(ms) for name, ms in re.findall(r"(\w+) ([0-9.]+) ms", match.group(2))}
    assert sorted(times) == sorted(runnable) and all(t > 0 for t in times.values())
    # The fastest, or a wider path within 5% of it (csrc/common/cpu.cpp, kNarrowerMustWinBy).
    chosen = match.group(1)
    assert times[chosen] <= 1.05 * min(times.values())
    assert all(times[path] > 1.05 * min(times.values()) for path in runnable if runnable.index(path) > runnable.index(chosen))


def test_families_without_a_probe_say_why():
    for kernel, line in _info.cpu_paths().items():
        if kernel not in MEASURED:
            assert re.search(r"\((the widest this CPU runs|the only path this CPU runs|table: .*)\)$", line), line


@pytest.mark.parametrize("cap", ["portable", "avx2", "avx512"])
def test_environment_caps_every_family(cap):
    result = run_python("import softdtw_torch; print(repr(softdtw_torch.info()['cpu_paths']))",
                        SOFTDTW_TORCH_CPU_PATH=cap)
    assert result.returncode == 0, result.stderr
    paths = eval(result.stdout)  # noqa: S307 - our own repr of a dict of str
    assert set(paths) == FAMILIES
    for kernel, line in paths.items():
        path, why = line.split(" ", 1)
        assert why == f"(capped by SOFTDTW_TORCH_CPU_PATH={cap})", line
        # The widest path the family has, this machine runs and the cap allows.
        assert CPU_PATHS.index(path) <= CPU_PATHS.index(cap) if cap in CPU_PATHS else path in CPU_PATHS
    assert paths["minirocket"].split(" ")[0] == (cap if cap in CPU_PATHS else CPU_PATHS[-1])


def test_environment_value_not_a_path_is_refused_at_first_use():
    code = ("import torch, softdtw_torch\n"
            "from softdtw_torch.rocket import MiniRocket\n"
            "x = torch.randn(2, 1, 30)\n"
            "try:\n"
            "    MiniRocket(random_state=0).fit(x).transform(x)\n"
            "except ValueError as error:\n"
            "    print('ValueError:', error)\n")
    result = run_python(code, SOFTDTW_TORCH_CPU_PATH="sse4")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ("ValueError: MiniRocket.transform: expected the environment variable SOFTDTW_TORCH_CPU_PATH "
                             "to be portable, avx2 or avx512, got 'sse4'\n")


def test_set_cpu_path_cap_refuses_other_names():
    with pytest.raises(ValueError, match="expected 'portable', 'avx2', 'avx512' or None, got 'avx3'"):
        _C.set_cpu_path_cap("avx3")
    with pytest.raises(TypeError):
        _C.set_cpu_path_cap(3)


def every_family(x_uni, x_multi):
    """Every family's CPU output whose loops have several vector paths, as numpy arrays."""
    outputs = {}
    mini = MiniRocket(n_kernels=84 * 30, random_state=1).fit(x_uni)
    outputs["minirocket"] = mini.transform(x_uni)
    outputs["minirocket multivariate"] = MiniRocket(random_state=1).fit(x_multi).transform(x_multi)
    outputs["multirocket"] = MultiRocket(random_state=2).fit(x_uni).transform(x_uni)
    outputs["rocket"] = Rocket(n_kernels=200, random_state=3).fit(x_uni).transform(x_uni)
    outputs["hydra"] = HydraTransformer(random_state=4).fit(x_multi).transform(x_multi)
    for dtype in (torch.float32, torch.float64):
        a = torch.from_numpy(x_uni[:6]).to(dtype).transpose(1, 2).contiguous().requires_grad_()
        b = torch.from_numpy(x_uni[6:12]).to(dtype).transpose(1, 2).contiguous()
        value = softdtw_torch.soft_dtw(a, b, gamma=0.5)
        (grad,) = torch.autograd.grad(value.sum(), a)
        outputs[f"softdtw {dtype}"] = value.detach()
        outputs[f"softdtw grad {dtype}"] = grad
    return {name: np.asarray(torch.as_tensor(out)).copy() for name, out in outputs.items()}


def test_every_path_gives_the_portable_path_bits():
    rng = np.random.default_rng(0)
    x_uni = rng.standard_normal((16, 1, 150)).cumsum(-1).astype(np.float32)
    x_multi = rng.standard_normal((8, 3, 100)).cumsum(-1).astype(np.float32)
    results = {}
    try:
        for path in CPU_PATHS:
            _C.set_cpu_path_cap(path)
            assert _info.cpu_paths()["minirocket"].startswith(path)
            results[path] = every_family(x_uni, x_multi)
    finally:
        _C.set_cpu_path_cap(None)
    for path in CPU_PATHS[1:]:
        for name, want in results["portable"].items():
            got = results[path][name]
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=f"{name} on {path}")
