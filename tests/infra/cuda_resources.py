"""Registers, stack frames and static shared memory of every CUDA kernel in the built library, per
architecture, as cuobjdump reads them from the binary (the figures ptxas reported when it compiled
them). Used by test_cuda_resources.py and, to record new budgets after a deliberate change, as

    python tests/infra/cuda_resources.py > tests/infra/cuda_resources.json
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys


def find_cuobjdump():
    """cuobjdump from the CUDA toolkit, PATH, or the copy PyPI's triton (a torch dependency) ships."""
    candidates = [shutil.which("cuobjdump")]
    from torch.utils import cpp_extension
    if cpp_extension.CUDA_HOME:
        candidates.append(os.path.join(cpp_extension.CUDA_HOME, "bin", "cuobjdump"))
    try:
        import triton
        candidates.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump"))
    except ImportError:
        pass
    return next((c for c in candidates if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)


def short_name(demangled):
    """'void softdtw_torch::tiles::forward_tile_kernel<float, ...>(args)' -> 'forward_tile_kernel<float, ...>'."""
    name = re.sub(r"^void ", "", demangled)
    name = re.sub(r"softdtw_torch::(tiles::|rocket_cuda::|minirocket::)?", "", name)
    depth = 0
    for i in range(len(name) - 1, -1, -1):  # cut the parameter list: the last balanced (...)
        depth += name[i] == ")"
        depth -= name[i] == "("
        if name[i] == "(" and depth == 0:
            return name[:i]
    return name


def resources(library):
    """{kernel: {arch: {"registers", "stack", "static_smem"}}} of the device code in `library`."""
    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        raise RuntimeError("cuobjdump not found (CUDA toolkit, PATH, or triton's bundled copy)")
    text = subprocess.run([cuobjdump, "--dump-resource-usage", library], capture_output=True, text=True,
                          check=True).stdout
    rows, arch, function = [], None, None
    for line in text.splitlines():
        if m := re.match(r"arch = (sm_\d+)", line):
            arch = m.group(1)
        elif m := re.match(r"\s*Function (\S+):", line):
            function = m.group(1)
        elif (m := re.match(r"\s*REG:(\d+) STACK:(\d+) SHARED:(\d+)", line)) and function:
            rows.append((arch, function, *map(int, m.groups())))
            function = None
    demangled = subprocess.run(["c++filt"], input="\n".join(r[1] for r in rows), capture_output=True, text=True,
                               check=True).stdout.splitlines()
    table = {}
    for (arch, _, registers, stack, shared), name in zip(rows, demangled):
        table.setdefault(short_name(name), {})[arch] = {"registers": registers, "stack": stack, "static_smem": shared}
    return table


def library_path():
    import softdtw_torch
    return glob.glob(os.path.join(os.path.dirname(softdtw_torch.__file__), "_C*.so"))[0]


BUDGETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_resources.json")


def write_budgets(kernels, accepted_stack_frames):
    lines = ["{", ' "about": "Per kernel and architecture: registers, stack frame and static shared memory bytes, as '
             'built (tests/infra/cuda_resources.py). test_cuda_resources.py fails above these, and on a stack frame '
             'not listed in accepted_stack_frames with its reason.",', ' "accepted_stack_frames": {']
    lines.append(",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(accepted_stack_frames.items())))
    lines += [" },", ' "kernels": {']
    lines.append(",\n".join(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(kernels.items())))
    lines += [" }", "}"]
    with open(BUDGETS, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit(__doc__)
    accepted = json.load(open(BUDGETS))["accepted_stack_frames"] if os.path.exists(BUDGETS) else {}
    write_budgets(resources(library_path()), accepted)
