"""The build registered every op for every dispatch key it promises (CUDA kernels included when
the extension was built with FORCE_CUDA=1, as CI does, even on a machine without a GPU)."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
CSRC = REPO / "csrc"
sys.path.insert(0, str(REPO / "tests" / "cuda_emu"))
from harness_cases import compiler_launcher  # noqa: E402

# The contract, written out: every op of the library and the dispatch keys it has a kernel for,
# and whether a fake (meta) kernel is registered in Python. CompositeImplicitAutograd ops need no
# fake (they decompose into ops that have one). "CUDA" kernels exist when the build compiled them.
CPU, CUDA, AUTOGRAD = "CPU", "CUDA", "Autograd"
IMPLICIT, EXPLICIT = "CompositeImplicitAutograd", "CompositeExplicitAutograd"
REGISTRATIONS = {
    # family softdtw: every op with a backend kernel also has an Autograd kernel (docs/design/softdtw.md §3)
    "soft_dtw": ({IMPLICIT}, False),
    "soft_dtw_fused": ({IMPLICIT}, False),
    "soft_dtw_from_cost": ({IMPLICIT}, False),
    "pairwise_cost": ({IMPLICIT}, False),
    "soft_dtw_alignment": ({IMPLICIT}, False),
    "soft_dtw_alignment_from_cost": ({IMPLICIT}, False),
    "soft_dtw_sharp": ({IMPLICIT}, False),
    "soft_dtw_sharp_from_cost": ({IMPLICIT}, False),
    "dilate": ({IMPLICIT}, False),
    "_soft_dtw_from_cost_forward": ({CPU, CUDA, AUTOGRAD}, True),
    "_soft_dtw_from_cost_backward": ({CPU, CUDA, AUTOGRAD}, True),
    "_soft_dtw_from_cost_jvp": ({CPU, CUDA, AUTOGRAD}, True),
    "_soft_dtw_from_cost_hvp": ({CPU, CUDA, AUTOGRAD}, True),
    "_soft_dtw_fused_forward": ({CPU, CUDA, AUTOGRAD}, True),
    "_soft_dtw_fused_backward": ({CPU, CUDA, AUTOGRAD}, True),
    "_soft_dtw_fused_jvp": ({CPU, CUDA, AUTOGRAD}, True),
    "_soft_dtw_fused_hvp": ({CPU, CUDA, AUTOGRAD}, True),
    "_soft_dtw_fused_value_and_grad": ({CPU, EXPLICIT, AUTOGRAD}, True),
    "_dtw_path": ({CPU, CUDA, AUTOGRAD}, True),
    "_itakura_rows": ({CPU, CUDA}, True),  # integers in and out: nothing to differentiate
    # family rocket
    "rocket_generate_kernels": ({EXPLICIT}, True),
    "rocket_normalise": ({CPU, CUDA, AUTOGRAD}, True),
    "rocket_convolve": ({AUTOGRAD, EXPLICIT}, True),
    "rocket_transform": ({IMPLICIT}, False),
    "_rocket_convolve_forward": ({CPU, CUDA}, True),
    "_rocket_convolve_backward": ({CPU, CUDA, AUTOGRAD}, True),
    # family minirocket
    "minirocket_fit": ({CPU, CUDA, AUTOGRAD}, True),
    "minirocket_transform": ({CPU, CUDA, AUTOGRAD}, True),
    # family multirocket
    "multirocket_fit": ({CPU, CUDA, AUTOGRAD}, True),
    "multirocket_transform": ({CPU, CUDA, AUTOGRAD}, True),
    # family hydra
    "hydra_fit": ({CPU, CUDA, AUTOGRAD}, True),
    "hydra_transform": ({CPU, CUDA, AUTOGRAD}, True),
    "_hydra_transform_backward": ({CPU, CUDA, AUTOGRAD}, True),
}
ALL_KEYS = (CPU, CUDA, AUTOGRAD, IMPLICIT, EXPLICIT)
CUDA_BUILT = any(torch._C._dispatch_has_kernel_for_dispatch_key(f"softdtw_torch::{op}", CUDA) for op in REGISTRATIONS)


def has_kernel(op, key):
    return torch._C._dispatch_has_kernel_for_dispatch_key(f"softdtw_torch::{op}", key)


def fake_kernel(op):
    """The registered fake kernel of op (torch._library.utils.Kernel), or None."""
    from torch._library.simple_registry import singleton

    entry = singleton.find(f"softdtw_torch::{op}")
    holder = entry.fake_impl if hasattr(entry, "fake_impl") else entry.abstract_impl  # torch 2.4: abstract_impl
    return holder.kernel


def has_fake(op):
    return fake_kernel(op) is not None


def test_every_registered_op_is_in_the_contract():
    registered = {name.split("::", 1)[1] for name in torch._C._dispatch_get_all_op_names()
                  if name.startswith("softdtw_torch::")}
    assert registered == set(REGISTRATIONS)


@pytest.mark.parametrize("op", sorted(REGISTRATIONS))
def test_kernels_registered_for_exactly_the_promised_keys(op):
    keys, fake = REGISTRATIONS[op]
    if not CUDA_BUILT:
        keys = keys - {CUDA}
    assert {key for key in ALL_KEYS if has_kernel(op, key)} == keys
    assert has_fake(op) == fake


# torch.autocast (csrc/autocast.cpp): every public op reading floating-point tensors computes in
# float32 under autocast, on the CPU and CUDA (registered whether or not CUDA kernels were built).
AUTOCAST = {"soft_dtw", "soft_dtw_fused", "soft_dtw_from_cost", "pairwise_cost", "soft_dtw_alignment",
            "soft_dtw_alignment_from_cost", "soft_dtw_sharp", "soft_dtw_sharp_from_cost", "dilate", "_dtw_path",
            "rocket_normalise", "rocket_convolve", "rocket_transform", "minirocket_fit", "minirocket_transform",
            "multirocket_fit", "multirocket_transform", "hydra_fit", "hydra_transform"}


@pytest.mark.parametrize("op", sorted(REGISTRATIONS))
def test_autocast_kernels_for_the_public_float_ops(op):
    for key in ("AutocastCPU", "AutocastCUDA"):
        assert has_kernel(op, key) == (op in AUTOCAST), (op, key)


@pytest.mark.parametrize("op", sorted(REGISTRATIONS))
def test_softdtw_ops_have_batching_rules(op):
    # torch.vmap runs every SoftDTW op once on the whole vmapped batch (softdtw_torch/_vmap.py);
    # the ROCKET families have none (vmap falls back to a loop there).
    softdtw = op.startswith(FAMILIES["softdtw"])
    assert has_kernel(op, "FuncTorchBatched") == softdtw


def test_cuda_kernels_compiled_when_asked():
    # CI builds with FORCE_CUDA=1 and runs the tests in the same environment: the CUDA kernels
    # must be there, compiled and registered, although the machine has no GPU.
    if os.environ.get("FORCE_CUDA") == "1" or torch.cuda.is_available():
        assert CUDA_BUILT


# --- The layout rule (csrc/library.cpp, CONTRIBUTING.md): any op's parts are found by path alone ---
FAMILIES = {"softdtw": ("soft_dtw", "_soft_dtw", "pairwise_cost", "dilate", "_dtw", "_itakura"),
            "rocket": ("rocket_", "_rocket_"), "minirocket": ("minirocket_",), "multirocket": ("multirocket_",),
            "hydra": ("hydra_", "_hydra_")}
FILE_OF_KEY = {CPU: "cpu/kernel.cpp", CUDA: "cuda/kernel.cu", AUTOGRAD: "autograd.cpp", IMPLICIT: "composite.cpp",
               EXPLICIT: "composite.cpp"}


def registrations_in_sources():
    """(family folder, file inside it, dispatch key, op) for every m.impl in csrc/."""
    found = []
    for path in sorted(CSRC.rglob("*")):
        if path.suffix not in (".cpp", ".cu", ".h", ".cuh"):
            continue
        text = path.read_text()
        for block in re.finditer(r"TORCH_LIBRARY_IMPL\(softdtw_torch, (\w+), m\) \{(.*?)\n\}", text, re.S):
            for op in re.findall(r'm\.impl\(\s*"(\w+)"', block.group(2)):
                rel = path.relative_to(CSRC)
                found.append((rel.parts[0], "/".join(rel.parts[1:]), block.group(1), op))
    return found


def test_schemas_only_in_library_cpp():
    defining = [p.relative_to(CSRC).as_posix() for p in CSRC.rglob("*") if p.is_file() and "TORCH_LIBRARY(" in p.read_text()]
    assert defining == ["library.cpp"]


def test_each_kernel_lives_in_its_familys_file_for_its_key():
    found = registrations_in_sources()
    for family, file, key, op in found:
        assert family in FAMILIES, (family, file, op)
        owner = [f for f, prefixes in FAMILIES.items() if op.startswith(prefixes)]
        # "minirocket_" ops also start with no other family's prefix; "rocket_" is not a prefix of them.
        assert owner == [family], f"{op} is registered in csrc/{family}/{file}, not in its family's folder"
        assert file == FILE_OF_KEY[key], f"{op}'s {key} kernel is in csrc/{family}/{file}, not {FILE_OF_KEY[key]}"
    # and the sources register exactly the kernels the contract lists (CUDA ones included)
    assert {(op, key) for _, _, key, op in found} == {(op, key) for op, (keys, _) in REGISTRATIONS.items()
                                                        for key in keys}


def test_every_fake_lives_in_its_familys_fake_module():
    for op, (_, fake) in REGISTRATIONS.items():
        if fake:
            family = next(f for f, prefixes in FAMILIES.items() if op.startswith(prefixes))
            source = fake_kernel(op).source  # "path:line"
            assert Path(source.rsplit(":", 1)[0]).resolve() == REPO / "softdtw_torch" / "_fake" / f"{family}.py", op


# --- setup.py's build configuration (imported, not run: setuptools runs it as __main__) ---
import importlib.util  # noqa: E402


@pytest.fixture
def setup_module():
    spec = importlib.util.spec_from_file_location("softdtw_setup", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_force_cuda_with_cpu_only_torch_fails_early(setup_module, monkeypatch):
    monkeypatch.setenv("FORCE_CUDA", "1")
    monkeypatch.setattr(setup_module.torch.version, "cuda", None)
    with pytest.raises(SystemExit, match="FORCE_CUDA=1 but the installed torch .* is a CPU-only build"):
        setup_module.want_cuda()


def test_empty_arch_list_fails_early(setup_module, monkeypatch):
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", " ")
    with pytest.raises(SystemExit, match="TORCH_CUDA_ARCH_LIST is set but empty"):
        setup_module.check_arch_list()


def test_default_arch_list_without_gpu(setup_module, monkeypatch):
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "placeholder")  # so monkeypatch restores the variable afterwards
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST")
    monkeypatch.setattr(setup_module.torch.cuda, "is_available", lambda: False)
    setup_module.check_arch_list()
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == "9.0+PTX"


def test_cpu_only_build_by_default_without_gpu(setup_module, monkeypatch):
    monkeypatch.delenv("FORCE_CUDA", raising=False)
    monkeypatch.setattr(setup_module.torch.cuda, "is_available", lambda: False)
    assert setup_module.want_cuda() is False


# --- the C++ runtime: shared, never a static copy beside torch's (setup.py, check_linked_runtime) ---
NEEDS_LINUX_GXX = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("g++") is None, reason="needs Linux and g++")
FORMATS_A_NUMBER = '#include <sstream>\nstd::string f(double d) { std::ostringstream s; s << d; return s.str(); }\n'


def _tiny_library(tmp_path, *flags) -> Path:
    """A one-function shared library that formats a number, linked with g++ and ``flags``."""
    source = tmp_path / "t.cpp"
    source.write_text(FORMATS_A_NUMBER)
    library = tmp_path / "t.so"
    subprocess.run(["g++", "-shared", "-fPIC", str(source), "-o", str(library), *flags], check=True)
    return library


@NEEDS_LINUX_GXX
def test_extension_links_the_shared_libstdcxx(setup_module):
    import softdtw_torch
    needed = setup_module.elf_needed_libraries(softdtw_torch._ops._C.__file__)
    assert "libstdc++.so.6" in needed and "libc10.so" in needed
    if shutil.which("readelf"):  # the same list as binutils reads it
        dynamic = subprocess.run(["readelf", "-d", softdtw_torch._ops._C.__file__], capture_output=True,
                                 text=True, check=True).stdout
        assert needed == re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic)
    setup_module.check_linked_runtime(softdtw_torch._ops._C.__file__)  # passes: nothing raised


@NEEDS_LINUX_GXX
def test_static_libstdcxx_is_refused_and_removed(setup_module, tmp_path, monkeypatch):
    setup_module.check_linked_runtime(str(_tiny_library(tmp_path)))  # the default link passes
    library = _tiny_library(tmp_path, "-static-libstdc++")
    assert not any(name.startswith("libstdc++") for name in setup_module.elf_needed_libraries(str(library)))
    monkeypatch.setenv("CXX", "/opt/wrapped/g++")
    with pytest.raises(SystemExit, match=r"t\.so was linked without the shared libstdc\+\+ .* statically by "
                                         r"/opt/wrapped/g\+\+.*CXX=g\+\+"):
        setup_module.check_linked_runtime(str(library))
    assert not library.exists()


@NEEDS_LINUX_GXX
@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("objdump") is None, reason="needs cmake and objdump")
def test_cmake_build_refuses_static_libstdcxx_too(tmp_path):
    # The CMake build's own check (cmake/check_linked_runtime.cmake, run after linking the library).
    script = Path(__file__).resolve().parents[2] / "cmake" / "check_linked_runtime.cmake"

    def check(library):
        return subprocess.run(["cmake", f"-DLIBRARY={library}", "-DCOMPILER=/opt/wrapped/g++", "-P", str(script)],
                              capture_output=True, text=True, timeout=60)
    shared = _tiny_library(tmp_path)
    assert check(shared).returncode == 0 and shared.exists()
    static = _tiny_library(tmp_path, "-static-libstdc++")
    refused = check(static)
    assert refused.returncode != 0
    assert re.search(r"t\.so was linked without the shared libstdc\+\+ .*statically by\s+/opt/wrapped/g\+\+.*"
                     r"CMAKE_CXX_COMPILER=g\+\+", " ".join(refused.stderr.split()))
    assert not static.exists()


def test_elf_reader_refuses_other_files(setup_module, tmp_path):
    other = tmp_path / "not_elf.so"
    other.write_bytes(b"#!/bin/sh\n")
    with pytest.raises(ValueError, match="not a 64-bit little-endian ELF file"):
        setup_module.elf_needed_libraries(str(other))


# --- the code other CPUs compile: each CPU kernel without its x86 paths (common/macros.h) ---
@pytest.mark.slow  # a whole kernel file compiled: 8-18 s each without the compiler cache
@NEEDS_LINUX_GXX
@pytest.mark.parametrize("source", sorted(path.relative_to(CSRC).as_posix() for path in CSRC.glob("*/cpu/*.cpp")))
def test_cpu_kernels_compile_without_their_x86_paths(source, tmp_path):
    # aarch64, clang and MSVC builds get neither GCC's clones nor the intrinsics loops: a name
    # declared only inside those blocks and used outside them breaks their build, never this one's.
    # Compiled to an object at -O0 (not -fsyntax-only, which no compiler cache can keep), through
    # the compiler cache: an unchanged kernel is not compiled again.
    from torch.utils.cpp_extension import include_paths

    flags = ["-std=c++20", "-O0", "-fopenmp", "-DSOFTDTW_TORCH_PORTABLE_ONLY", f"-I{CSRC}"]
    flags += [f"-I{path}" for path in include_paths()]
    result = subprocess.run([*compiler_launcher(), "g++", *flags, "-c", str(CSRC / source),
                             "-o", str(tmp_path / "kernel.o")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
