"""Instructions per iteration of the CUDA SoftDTW kernels' sweep loops, read from their SASS: a
static count, no GPU needed (docs/design/cuda_kernels.md, "Cell math", quotes it).

Compiles csrc/softdtw/cuda/kernel.cu for one architecture with nvcc, disassembles it with
cuobjdump (from the CUDA toolkit, or `pip install nvidia-cuda-cuobjdump`), and prints, for every
kernel, the instruction count of its sweep loops: the smallest loop with a SHFL.UP (forward
sweep) and with a SHFL.DOWN (backward sweep). An iteration of a tile sweep is one lane step (2
cells), or two when the compiler unrolled it; of pair_forward_kernel, one anti-diagonal step of
its 2, 4 or 8 columns a lane (the template's third argument); of pair_backward_kernel, four such
steps (its ring of anti-diagonals turns once a trip); the MUFU count shows which (float32: 3 per
forward cell, 2 per backward cell plus the division's reciprocal). The fused pair kernels' count
holds one trip of their loop over the d features of each cell.

    python benchmarks/sass_loop_counts.py [--arch sm_90] [--cuobjdump PATH]
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from torch.utils import cpp_extension

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_cuobjdump(explicit):
    candidates = [explicit, shutil.which("cuobjdump"), os.path.join(cpp_extension.CUDA_HOME or "", "bin", "cuobjdump")]
    candidates += glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "nvidia", "cu*", "bin", "cuobjdump"))
    # the copy PyPI's triton (a torch dependency) ships
    candidates += glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "triton", "backends", "nvidia",
                                         "bin", "cuobjdump"))
    for path in candidates:
        if path and os.path.isfile(path):
            return path
    sys.exit("cuobjdump not found: pass --cuobjdump, or pip install nvidia-cuda-cuobjdump")


def sweep_loops(sass):
    """Per kernel: (name, {"UP": (instructions, MUFU), "DOWN": ...}) of the smallest backward-branching
    loop with a SHFL.UP (a forward sweep) and with a SHFL.DOWN (a backward sweep). A jump back from
    the code the compiler adds for a shuffle reached by diverged lanes (WARPSYNC.COLLECTIVE ...
    ENDCOLLECTIVE, placed after the kernel's exit) is not a loop."""
    for function in re.split(r"\n\s*Function : ", sass)[1:]:
        name = function.split("\n", 1)[0].strip()
        code = [(int(a, 16), text.strip()) for a, text in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", function)]
        smallest = {}
        for address, text in code:
            branch = re.search(r"BRA (?:\w+, )?0x([0-9a-f]+)", text)
            if branch and int(branch.group(1), 16) < address:
                body = [t for a, t in code if int(branch.group(1), 16) <= a <= address]
                if any("ENDCOLLECTIVE" in t for t in body):
                    continue
                for kind in ("UP", "DOWN"):
                    if any(f"SHFL.{kind}" in t for t in body):
                        count = (len(body), sum("MUFU" in t for t in body))
                        smallest[kind] = min(smallest.get(kind, count), count)
        if smallest:
            yield name, smallest


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--cuobjdump")
    args = parser.parse_args()
    cuobjdump = find_cuobjdump(args.cuobjdump)
    nvcc = os.path.join(cpp_extension.CUDA_HOME or "/usr/local/cuda", "bin", "nvcc")
    includes = [f"-I{p}" for p in cpp_extension.include_paths()] + [f"-I{os.path.join(ROOT, 'csrc')}"]
    with tempfile.TemporaryDirectory() as tmp:
        obj = os.path.join(tmp, "softdtw_kernel.o")
        compute = args.arch.replace("sm_", "compute_")
        subprocess.run([nvcc, "-std=c++20", "-O3", "--expt-relaxed-constexpr", "-DSOFTDTW_TORCH_WITH_CUDA",
                        f"-gencode=arch={compute},code={args.arch}", *includes, "-c",
                        os.path.join(ROOT, "csrc", "softdtw", "cuda", "kernel.cu"), "-o", obj], check=True)
        sass = subprocess.run([cuobjdump, "-sass", obj], check=True, capture_output=True, text=True).stdout
    loops = list(sweep_loops(sass))
    demangled = subprocess.run(["c++filt"], input="\n".join(name for name, _ in loops),
                               capture_output=True, text=True).stdout.splitlines()
    print(f"| kernel ({args.arch}) | forward sweep loop: instructions (MUFU) | backward sweep loop: instructions (MUFU) |")
    print("|---|---|---|")
    for pretty, (_, smallest) in sorted(zip(demangled, loops)):
        kernel = pretty.replace("softdtw_torch::tiles::", "").removeprefix("void ").split("(")[0]
        cells = [f"{smallest[k][0]} ({smallest[k][1]})" if k in smallest else "" for k in ("UP", "DOWN")]
        print(f"| {kernel} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
