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


def test_itakura_table_rounds_every_addition_on_its_own():
    # tslearn rounds each product before its sum, and at some lengths one fused multiply-add moves a
    # bound by a cell (tests/softdtw/test_itakura.py::test_sizes_where_a_fused_multiply_add_would_move_a_bound).
    # itakura_rows_kernel adds with __dadd_rn, which ptxas may not fuse: its SASS has exactly one
    # DADD per addition of the source (two in the constructor, one per bound, the end row's + 1);
    # its DFMAs are the correctly rounded divisions' Newton steps.
    import subprocess

    # The kernel's SASS alone (-fun, by its mangled name from the resource listing): the whole
    # library's SASS takes ten times as long to disassemble.
    cuobjdump, library = cuda_resources.find_cuobjdump(), cuda_resources.library_path()
    listing = subprocess.run([cuobjdump, "--dump-resource-usage", library], capture_output=True, text=True,
                             check=True).stdout
    names = sorted(set(re.findall(r"Function (_ZN13softdtw_torch5tiles19itakura_rows_kernel\w*):", listing)))
    assert len(names) == 1, names
    sass = subprocess.run([cuobjdump, "-sass", "-fun", names[0], library], capture_output=True, text=True,
                          check=True).stdout
    functions = re.split(r"\n\s*Function : ", sass)
    bodies = [f for f in functions if f.startswith("_ZN13softdtw_torch5tiles19itakura_rows_kernel")]
    assert len(bodies) == len(built_architectures())
    for body in bodies:
        assert len(re.findall(r"\bDADD\b", body)) == 5
