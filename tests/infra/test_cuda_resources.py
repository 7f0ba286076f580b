"""Resource gates of the CUDA kernels, read from the built library (no GPU needed): for every kernel
and every architecture in the build's TORCH_CUDA_ARCH_LIST, registers, stack frame and static
shared memory within the budgets recorded in cuda_resources.json, and no stack frame (spills,
local arrays) other than the accepted ones, each with its reason there. A new kernel, a kernel
gone, or an architecture without budgets fails too: record deliberate changes with
`python tests/infra/cuda_resources.py --record` and say why in the diff.

Dynamic shared memory, which the kernels use for all their data, is checked against each
architecture's limit by the emulation tests (the emulator refuses launches above it)."""
import json
import re

import pytest

import cuda_resources
import softdtw_torch

BUILD = softdtw_torch.info()
pytestmark = pytest.mark.skipif(not BUILD["cuda_kernels"],
                                reason="the library was built without CUDA kernels (FORCE_CUDA=1 builds them)")


def built_architectures():
    """sm_XX for each entry of the build's TORCH_CUDA_ARCH_LIST ('7.5;9.0+PTX' -> sm_75, sm_90)."""
    entries = re.split(r"[;\s]+", BUILD["cuda_arch_list"].strip())
    return {"sm_" + e.replace("+PTX", "").replace(".", "") for e in entries if e}


def test_every_kernel_within_its_recorded_resources():
    with open(cuda_resources.BUDGETS) as f:  # noqa: PTH123
        recorded = json.load(f)
    budgets, accepted = recorded["kernels"], recorded["accepted_stack_frames"]
    measured = cuda_resources.resources(cuda_resources.library_path())
    architectures = built_architectures()
    assert measured, "no CUDA kernel found in the library"
    problems = []
    for kernel in sorted(set(measured) | set(budgets)):
        if kernel not in budgets:
            problems.append(f"{kernel}: new kernel without a recorded budget")
            continue
        if kernel not in measured:
            problems.append(f"{kernel}: recorded but not built")
            continue
        for arch in sorted(architectures):
            got, budget = measured[kernel].get(arch), budgets[kernel].get(arch)
            if got is None or budget is None:
                problems.append(f"{kernel} @ {arch}: {'not built' if got is None else 'no recorded budget'}")
                continue
            for what in ("registers", "stack", "static_smem"):
                if got[what] > budget[what]:
                    problems.append(f"{kernel} @ {arch}: {got[what]} {what}, budget {budget[what]}")
            if got["stack"] > 0 and f"{kernel} @ {arch}" not in accepted:
                problems.append(f"{kernel} @ {arch}: a {got['stack']}-byte stack frame (spills?) not accepted")
    assert not problems, "\n".join(problems)
    # Every accepted frame still exists (a fixed spill leaves no stale excuse behind).
    stale = [k for k in accepted if k.rsplit(" @ ", 1)[1] in architectures and
             measured.get(k.rsplit(" @ ", 1)[0], {}).get(k.rsplit(" @ ", 1)[1], {}).get("stack", 0) == 0]
    assert not stale, f"accepted stack frames that are gone (remove them from cuda_resources.json): {stale}"
