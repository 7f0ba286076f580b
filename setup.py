"""Build of softdtw-torch: one extension, softdtw_torch._C, holding every operator.

CPU-only by default when no CUDA device is usable. FORCE_CUDA=1 compiles the CUDA kernels too,
also on a machine without a GPU (it needs a CUDA build of torch and the CUDA toolkit);
TORCH_CUDA_ARCH_LIST picks the architectures (default "9.0+PTX" when no GPU is visible).
Install with `pip install --no-build-isolation -e .` so that the extension is built against the
torch already installed. Every build also writes softdtw_torch/_build_info.py beside the extension
(the torch it was built against, CUDA, architectures), which softdtw_torch.info() and the import's
version-mismatch error read without loading the extension.
"""
import glob
import os
import re
import runpy
import struct
import subprocess
import sys

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
VERSION = runpy.run_path(os.path.join(ROOT, "softdtw_torch", "_version.py"))["__version__"]
CUDA_MACRO = ("SOFTDTW_TORCH_WITH_CUDA", None)


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
    sources = sorted(glob.glob(os.path.join("csrc", "**", "*.cpp"), recursive=True))
    define_macros = [("SOFTDTW_TORCH_PYTHON_MODULE", None), ("SOFTDTW_TORCH_VERSION", f'"{VERSION}"')]
    # No FMA contraction: the CPU kernels' vectorized (AVX2) and baseline code paths then compute
    # the same bits, so results do not depend on the machine's instruction set. No trapping math
    # (we never read FP exception flags): lets the compiler turn the cell math's selects into
    # vector blends. Neither flag changes any computed value.
    # -fopenmp: at::parallel_for is inlined from torch's headers and only runs in parallel when
    # the extension itself is compiled with OpenMP (torch's own libgomp serves it at run time).
    extra_compile_args = {"cxx": ["-O3", "-ffp-contract=off", "-fno-trapping-math", "-fopenmp"]}
    if want_cuda():
        check_arch_list()
        sources += sorted(glob.glob(os.path.join("csrc", "**", "*.cu"), recursive=True))
        define_macros.append(CUDA_MACRO)
        # --threads 0: nvcc compiles the architectures of TORCH_CUDA_ARCH_LIST at once, one thread
        # each up to the cores, so the longest kernel file does not hold the build's end alone.
        extra_compile_args["nvcc"] = ["-O3", "-lineinfo", "--threads", "0"]
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


def elf_needed_libraries(path: str) -> list:
    """The DT_NEEDED entries of a 64-bit little-endian ELF shared object (what the dynamic loader
    loads with it), read from its dynamic section without binutils."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    needed = []
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != 6:  # SHT_DYNAMIC; its sh_link is the string table of the names
            continue
        strings_offset = sections[link][4]
        for at in range(offset, offset + size, entsize):
            tag, value = struct.unpack_from("<qQ", data, at)
            if tag == 1:  # DT_NEEDED
                end = data.index(b"\0", strings_offset + value)
                needed.append(data[strings_offset + value:end].decode())
    return needed


def check_linked_runtime(path: str) -> None:
    """Refuse an extension that carries its own copy of libstdc++. One GPU image's compiler (CXX, a
    wrapper around the system g++) linked it statically, even with an explicit -lstdc++ after the
    objects. Such a copy binds its code locally (-Bsymbolic-functions) but torch's libstdc++ data
    (the locale's facet ids): the extension loaded, then crashed the process at the first error
    message that formats a number (docs/design/cuda_kernels.md, "On a GPU")."""
    if not sys.platform.startswith("linux"):
        return
    needed = elf_needed_libraries(path)
    if not any(name.startswith("libstdc++.so") for name in needed):
        compiler = os.environ.get("CXX", "the default C++ compiler")
        os.remove(path)  # never leave it where an in-place build would import it
        raise SystemExit(
            f"softdtw-torch: {path} was linked without the shared libstdc++ (its dynamic dependencies: "
            f"{', '.join(needed)}), so the C++ runtime was linked into it statically by {compiler}. Loaded "
            "beside torch's own libstdc++ it would crash; build with a compiler that links libstdc++ "
            "shared, e.g. the system's: CXX=g++ pip install --no-build-isolation -e ."
        )


def cuda_toolkit_version() -> str:
    """The release of the CUDA toolkit whose nvcc compiles the kernels."""
    nvcc = os.path.join(cpp_extension.CUDA_HOME, "bin", "nvcc")
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"release (\d+\.\d+)", out)
    return match.group(1) if match else f"unknown (nvcc --version said: {out.strip()!r})"


def cuda_arch_list() -> str:
    """TORCH_CUDA_ARCH_LIST as the build used it (check_arch_list sets it when no GPU is visible)."""
    arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if arch_list and arch_list != "native":
        return arch_list
    capabilities = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
    return "the visible GPUs': " + ";".join(f"{major}.{minor}" for major, minor in capabilities)


def build_info(with_cuda: bool) -> dict:
    """The facts softdtw_torch.info() reports about the build (softdtw_torch/_info.py reads them)."""
    return {
        "version": VERSION,
        "torch": torch.__version__,
        "cuda_kernels": with_cuda,
        "cuda": cuda_toolkit_version() if with_cuda else None,
        "cuda_arch_list": cuda_arch_list() if with_cuda else None,
    }


class BuildExtension(cpp_extension.BuildExtension):
    """cpp_extension's build, then the build record written beside the extension: in the source
    package for `build_ext --inplace` and editable installs, in build/lib for wheels (which then
    include it). Written even when the compilation was up to date, so it follows the running torch."""

    def build_info_path(self) -> str:
        return os.path.join(os.path.dirname(self.get_ext_fullpath("softdtw_torch._C")), "_build_info.py")

    def build_extension(self, ext) -> None:
        super().build_extension(ext)
        check_linked_runtime(self.get_ext_fullpath(ext.name))

    def run(self) -> None:
        super().run()
        if not self.extensions:  # SOFTDTW_TORCH_NO_EXTENSION=1: nothing built, nothing to record
            return
        with_cuda = CUDA_MACRO in self.extensions[0].define_macros
        with open(self.build_info_path(), "w", encoding="utf-8") as f:
            f.write("# Generated by setup.py when softdtw_torch._C was built (not in git); read by _info.py.\n")
            f.write(f"BUILD_INFO = {build_info(with_cuda)!r}\n")

    def get_outputs(self) -> list:
        return super().get_outputs() + [self.build_info_path()]


def main() -> None:
    setup(
        name="softdtw-torch",
        version=VERSION,
        description="SoftDTW and ROCKET as PyTorch C++/CUDA operators",
        long_description=open(os.path.join(ROOT, "README.md"), encoding="utf-8").read(),
        long_description_content_type="text/markdown",
        license="MIT",
        license_files=["LICENSE"],
        python_requires=">=3.9",
        packages=find_packages(include=["softdtw_torch", "softdtw_torch.*"]),
        package_data={"softdtw_torch": ["data/*.ts", "data/*.md"]},
        # scikit-learn: the estimators' base, mixins and input checks; 1.6 brought the tags API
        # (__sklearn_tags__) and check_array's ensure_all_finite / force_writeable.
        install_requires=["torch>=2.4", "numpy", "scikit-learn>=1.6"],
        # SOFTDTW_TORCH_NO_EXTENSION=1 (scripts/env.sh): an editable install that compiles nothing, the
        # extension being built in place by `setup.py build_ext --inplace` (incremental, unlike pip's).
        ext_modules=[] if os.environ.get("SOFTDTW_TORCH_NO_EXTENSION") == "1" else [extension()],
        cmdclass={"build_ext": BuildExtension},
        zip_safe=False,
    )


# setuptools runs this file as __main__; tests import it to check the build configuration.
if __name__ == "__main__":
    main()
