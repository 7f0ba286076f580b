"""Build of softdtw-torch: one extension, softdtw_torch._C, holding every operator.

CPU-only by default when no CUDA device is usable. FORCE_CUDA=1 compiles the CUDA kernels too,
also on a machine without a GPU (it needs a CUDA build of torch and the CUDA toolkit);
TORCH_CUDA_ARCH_LIST picks the architectures (default "9.0+PTX" when no GPU is visible).
Install with `pip install --no-build-isolation -e .` so that the extension is built against the
torch already installed.
"""
import glob
import os
import re

from setuptools import find_packages, setup

try:
    import torch
    from torch.utils import cpp_extension
except ImportError as exc:  # pragma: no cover - only hit on a machine without torch
    raise SystemExit(
        "softdtw-torch: torch must be installed before building (pip install torch), and the build must "
        "run with --no-build-isolation so it compiles against that torch."
    ) from exc

ROOT = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ARCH_LIST = "9.0+PTX"


def package_version() -> str:
    """The one place the version is written: softdtw_torch/__init__.py (CMakeLists.txt reads it too)."""
    with open(os.path.join(ROOT, "softdtw_torch", "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.MULTILINE).group(1)


def want_cuda() -> bool:
    if os.environ.get("FORCE_CUDA", "0") == "1":
        if torch.version.cuda is None:
            raise SystemExit(
                f"softdtw-torch: FORCE_CUDA=1 but the installed torch {torch.__version__} is a CPU-only build; "
                "install a CUDA build of torch (e.g. `pip install torch` from PyPI) or unset FORCE_CUDA."
            )
        if cpp_extension.CUDA_HOME is None:
            raise SystemExit("softdtw-torch: FORCE_CUDA=1 but no CUDA toolkit was found; set CUDA_HOME.")
        return True
    return torch.cuda.is_available() and cpp_extension.CUDA_HOME is not None


def check_arch_list() -> None:
    arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if arch_list is None:
        if torch.cuda.is_available():
            return  # cpp_extension targets the visible GPUs
        os.environ["TORCH_CUDA_ARCH_LIST"] = DEFAULT_ARCH_LIST
        print(f"softdtw-torch: no GPU visible, building for TORCH_CUDA_ARCH_LIST={DEFAULT_ARCH_LIST}")
    elif not arch_list.strip():
        raise SystemExit(
            "softdtw-torch: TORCH_CUDA_ARCH_LIST is set but empty, so no CUDA architecture can be determined; "
            f'set it, e.g. TORCH_CUDA_ARCH_LIST="{DEFAULT_ARCH_LIST}", or unset it.'
        )


def extension():
    sources = sorted(glob.glob(os.path.join("csrc", "*.cpp")) + glob.glob(os.path.join("csrc", "ops", "**", "*.cpp"), recursive=True))
    define_macros = [("SOFTDTW_TORCH_PYTHON_MODULE", None), ("SOFTDTW_TORCH_VERSION", f'"{package_version()}"')]
    # No FMA contraction: the CPU kernels' vectorized (AVX2) and baseline code paths then compute
    # the same bits, so results do not depend on the machine's instruction set. No trapping math
    # (we never read FP exception flags): lets the compiler turn the cell math's selects into
    # vector blends. Neither flag changes any computed value.
    # -fopenmp: at::parallel_for is inlined from torch's headers and only runs in parallel when
    # the extension itself is compiled with OpenMP (torch's own libgomp serves it at run time).
    extra_compile_args = {"cxx": ["-O3", "-ffp-contract=off", "-fno-trapping-math", "-fopenmp"]}
    if want_cuda():
        check_arch_list()
        sources += sorted(glob.glob(os.path.join("csrc", "ops", "**", "*.cu"), recursive=True))
        define_macros.append(("SOFTDTW_TORCH_WITH_CUDA", None))
        extra_compile_args["nvcc"] = ["-O3", "-lineinfo"]
        ext_class = cpp_extension.CUDAExtension
    else:
        ext_class = cpp_extension.CppExtension
    return ext_class(
        name="softdtw_torch._C",
        sources=sources,
        include_dirs=[os.path.join(ROOT, "csrc")],
        define_macros=define_macros,
        extra_compile_args=extra_compile_args,
        extra_link_args=["-fopenmp"],
    )


def main() -> None:
    setup(
        name="softdtw-torch",
        version=package_version(),
        description="SoftDTW and ROCKET as PyTorch C++/CUDA operators",
        long_description=open(os.path.join(ROOT, "README.md"), encoding="utf-8").read(),
        long_description_content_type="text/markdown",
        license="MIT",
        python_requires=">=3.9",
        packages=find_packages(include=["softdtw_torch", "softdtw_torch.*"]),
        package_data={"softdtw_torch": ["data/*.ts", "data/*.md"]},
        install_requires=["torch>=2.4", "numpy"],
        ext_modules=[extension()],
        cmdclass={"build_ext": cpp_extension.BuildExtension},
        zip_safe=False,
    )


# setuptools runs this file as __main__; tests import it to check the build configuration.
if __name__ == "__main__":
    main()
