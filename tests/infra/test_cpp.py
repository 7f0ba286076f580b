"""The Python-free C++ build (CMakeLists.txt): build the library, its C++ tests and the example with
CMake against the installed torch, run the C++ tests with ctest (against references written from
Python by tests/cpp/write_references.py), then install the package and build examples/cpp on its
own with find_package(softdtw_torch), as a LibTorch user would, and run it on the TorchScript
models of examples/export_torchscript.py and the AOTInductor packages of examples/export_aoti.py.
Also: which CUDA libraries a CPU program loads (docs/user_guide/cpp.md, docs/user_guide/deployment.md).

The build folder is kept between runs (SOFTDTW_TORCH_CMAKE_BUILD, default build/cmake-tests) so a
rerun only recompiles what changed. The CMake build is CPU-only by default;
SOFTDTW_TORCH_CMAKE_CUDA=1 adds the CUDA kernels, for the architectures of
SOFTDTW_TORCH_CMAKE_CUDA_ARCH_LIST, else of TORCH_CUDA_ARCH_LIST (.ci/run asks for one: the extension
build has compiled the device code for every architecture already; this build checks CMake's CUDA path).
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

# slow: the CMake build of the library, its C++ tests and examples (minutes from scratch)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# AOTInductor packaging as examples/export_aoti.py calls it (the exported program alone): torch >= 2.6.
TORCH_VERSION = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])
needs_aoti = pytest.mark.skipif(TORCH_VERSION < (2, 6), reason=f"AOTInductor packages need torch >= 2.6, "
                                f"this is torch {torch.__version__}")
CPP_TESTS = [
    "softdtw_values_and_gradients",
    "softdtw_finite_differences",
    "softdtw_second_order",
    "rocket",
    "minirocket",
    "multirocket",
    "hydra",
    "errors",
    "torchscript_forecaster",
    "torchscript_classifier",
    # The .pt2 packages of examples/export_aoti.py (tests/cpp/test_aoti.cpp).
    pytest.param("aoti_forecaster", marks=needs_aoti),
    pytest.param("aoti_classifier", marks=needs_aoti),
    pytest.param("aoti_needs_library", marks=needs_aoti),
    # The CUDA kernels from C++: needs a GPU and the CMake build with SOFTDTW_TORCH_CMAKE_CUDA=1
    # (benchmarks/gpu_check.sh sets it); the C++ side skips it otherwise, which fails here.
    pytest.param("cuda", marks=pytest.mark.needs_cuda),
]


def run(cmd, **kwargs):
    """Runs cmd; on failure the assertion shows its output."""
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, cmd))} failed ({result.returncode}):\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
    return result.stdout


def cmake_configure_command(source: Path, build: Path, *options: str) -> list:
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    return ["cmake", "-S", source, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release", *options]


def cmake_build_command(build: Path) -> list:
    return ["cmake", "--build", build, "--parallel", os.environ.get("MAX_JOBS", "2")]


def library_build_folder() -> Path:
    return Path(os.environ.get("SOFTDTW_TORCH_CMAKE_BUILD", ROOT / "build" / "cmake-tests"))


def library_configure_command(build: Path) -> list:
    """The library's configuration: its tests and examples, the CUDA kernels as asked."""
    cuda = ["-DSOFTDTW_TORCH_WITH_CUDA=OFF"]
    if os.environ.get("SOFTDTW_TORCH_CMAKE_CUDA") == "1":
        # Passed explicitly: the build folder's cache would otherwise keep an earlier list.
        arch_list = (os.environ.get("SOFTDTW_TORCH_CMAKE_CUDA_ARCH_LIST")
                     or os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0+PTX"))
        cuda = ["-DSOFTDTW_TORCH_WITH_CUDA=ON", "-DTORCH_CUDA_ARCH_LIST=" + arch_list]
    return cmake_configure_command(
        ROOT, build,
        f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
        *cuda,
        "-DSOFTDTW_TORCH_BUILD_TESTS=ON",
        "-DSOFTDTW_TORCH_BUILD_EXAMPLES=ON",
        f"-DSOFTDTW_TORCH_TEST_DATA={build / 'cpp-references'}",
        f"-DCMAKE_INSTALL_PREFIX={build / 'install'}",
    )


def library_build_steps(build: Path) -> list:
    """The commands that write the C++ tests' references, build the library, its C++ tests and
    examples, install the package, and build examples/cpp as its own project that finds the
    installed package (into build/installed-example)."""
    example = build / "installed-example"
    return [[sys.executable, ROOT / "tests" / "cpp" / "write_references.py", build / "cpp-references"],
            library_configure_command(build), cmake_build_command(build),
            ["cmake", "--install", build],
            cmake_configure_command(ROOT / "examples" / "cpp", example,
                                    f"-DCMAKE_PREFIX_PATH={build / 'install'};{torch.utils.cmake_prefix_path}"),
            cmake_build_command(example)]


# The steps above, started in the background when this module's tests are collected
# (tests/conftest.py): a cold build compiles for minutes, so it runs at the lowest CPU priority on
# the cores the other tests leave idle, and these tests run last. The fixture waits for it, and
# runs the steps itself when it failed (the error shown) or was not started.
_background_build = None


def start_background_build() -> None:
    global _background_build
    if _background_build is not None or shutil.which("cmake") is None:
        return
    build = library_build_folder()
    build.mkdir(parents=True, exist_ok=True)
    script = " && ".join(shlex.join(str(part) for part in step) for step in library_build_steps(build))
    with open(build / "background-build.log", "w") as log:
        _background_build = subprocess.Popen(["sh", "-c", script], stdout=log, stderr=subprocess.STDOUT,
                                             preexec_fn=lambda: os.nice(19), start_new_session=True)


def stop_background_build() -> None:
    """Ends a background build the session no longer waits for (its tests deselected or stopped)."""
    if _background_build is not None and _background_build.poll() is None:
        os.killpg(_background_build.pid, signal.SIGTERM)
        _background_build.wait()


@pytest.fixture(scope="module")
def cmake_build_dir() -> Path:
    if shutil.which("cmake") is None:
        pytest.fail("cmake is not installed (requirements-dev.txt installs it)")
    build = library_build_folder()
    if _background_build is None or _background_build.wait() != 0:
        for step in library_build_steps(build):
            run(step)
    return build


def test_library_needs_no_python(cmake_build_dir):
    library = next(cmake_build_dir.glob("libsoftdtw_torch.so*"))
    needed = [line for line in run(["readelf", "-d", library]).splitlines() if "(NEEDED)" in line]
    assert any("libtorch_cpu" in line for line in needed), needed
    assert not any("python" in line.lower() for line in needed), needed


@pytest.mark.parametrize("name", CPP_TESTS)
def test_cpp(cmake_build_dir, name):
    out = run(["ctest", "--test-dir", cmake_build_dir, "--output-on-failure", "-R", f"^{name}$"])
    assert "Skipped" not in out and "Not Run" not in out, out  # a skipped C++ test does not pass here
    # CMake 3.x prints "100% tests passed, 0 tests failed out of 1", CMake 4 "100% tests passed out of 1".
    assert re.search(r"100% tests passed(, 0 tests failed)? out of 1\b", out), out


def test_ctest_runs_every_cpp_test(cmake_build_dir):
    listed = run(["ctest", "--test-dir", cmake_build_dir, "-N"])
    names = [t if isinstance(t, str) else t.values[0] for t in CPP_TESTS]
    assert sorted(re.findall(r"Test\s+#\d+: (\w+)", listed)) == sorted(names)


@pytest.fixture(scope="module")
def installed_example(cmake_build_dir) -> Path:
    """examples/cpp built as its own project against the installed package (library_build_steps)."""
    assert (cmake_build_dir / "install" / "include" / "softdtw_torch.h").is_file()
    return cmake_build_dir / "installed-example"


def test_installed_package_builds_the_example(installed_example, cmake_build_dir):
    models = cmake_build_dir / "cpp-references"
    out = run([installed_example / "softdtw_torch_example", models / "softdtw_forecaster.pt",
               models / "rocket_classifier.pt"])
    assert "soft_dtw values" in out and "rocket features" in out
    for model in ("softdtw_forecaster.pt", "rocket_classifier.pt"):
        match = re.search(re.escape(model) + r": output \[[\d, ]+\], loss (\S+), \|grad\| (\S+)", out)
        assert match, out
        assert float(match.group(2)) > 0  # backward reached the parameters


@needs_aoti
def test_installed_package_runs_aoti_packages(installed_example, cmake_build_dir):
    """The AOTInductor example, built against the installed package, runs the .pt2 files (their
    values are checked against Python's by the aoti_* C++ tests)."""
    out = run([installed_example / "softdtw_torch_aoti_example", cmake_build_dir / "cpp-references"])
    assert "classifier.pt2, batch 1: logits [1, 2]" in out and "classifier.pt2, batch 5: logits [5, 2]" in out, out
    match = re.search(r"forecaster\.pt2: forecast \[8, 90, 1\], soft-DTW divergence (\S+)", out)
    assert match and float(match.group(1)) > 0, out  # a divergence of different series is positive


# The CUDA libraries (by file name) a program may load: torch's CUDA part and NVIDIA's libraries.
CUDA_LIBRARY = re.compile(r"lib(torch_cuda|c10_cuda|cuda|cudart|cublas|cublasLt|cudnn\w*|cufft|cufile|cupti|curand|"
                          r"cusolver|cusparse|cusparseLt|nccl|nvrtc|nvJitLink|nvshmem\w*|nvToolsExt)\.so")


def loaded_libraries(cmd) -> set:
    """The file names of the shared libraries a run of cmd initialised (the loader's LD_DEBUG=libs)."""
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                            env={**os.environ, "LD_DEBUG": "libs"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return {Path(p).name for p in re.findall(r"calling init: (\S+)", result.stderr)}


def test_cuda_libraries_a_cpu_program_loads(cmake_build_dir):
    """The CPU build links torch_cpu and c10, not torch_cuda: its example program loads none of
    torch_cuda's libraries, only the CUDA libraries libtorch_cpu itself needs (with torch
    2.15.0+cu132 from PyPI: libcudart and libcupti). A CUDA build links torch_cuda."""
    loaded = loaded_libraries([cmake_build_dir / "examples" / "cpp" / "softdtw_torch_example"])
    cuda_loaded = {name for name in loaded if CUDA_LIBRARY.match(name)}
    cache = (cmake_build_dir / "CMakeCache.txt").read_text()
    if re.search(r"^SOFTDTW_TORCH_WITH_CUDA:BOOL=ON$", cache, re.M):
        assert "libtorch_cuda.so" in cuda_loaded, sorted(loaded)
        return
    torch_cpu = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    # ldd lists libtorch_cpu's whole dependency closure, as the loader resolves it.
    needed = {m for m in re.findall(r"^\s*(\S+) =>", run(["ldd", torch_cpu]), re.M) if CUDA_LIBRARY.match(m)}
    assert "libtorch_cuda.so" not in cuda_loaded and "libc10_cuda.so" not in cuda_loaded, sorted(cuda_loaded)
    assert cuda_loaded == needed, (sorted(cuda_loaded), sorted(needed))
