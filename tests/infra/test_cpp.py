"""The Python-free C++ build (CMakeLists.txt): build the library, its C++ tests and the example with
CMake against the installed torch, run the C++ tests with ctest (against references written from
Python by tests/cpp/write_references.py), then install the package and build examples/cpp on its
own with find_package(softdtw_torch), as a LibTorch user would, and run it on the TorchScript
models of examples/export_torchscript.py.

The build folder is kept between runs (SOFTDTW_TORCH_CMAKE_BUILD, default build/cmake-tests) so a
rerun only recompiles what changed. The CMake build is CPU-only by default;
SOFTDTW_TORCH_CMAKE_CUDA=1 adds the CUDA kernels (TORCH_CUDA_ARCH_LIST picks the architectures).
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
CPP_TESTS = [
    "softdtw_values_and_gradients",
    "softdtw_finite_differences",
    "softdtw_second_order",
    "rocket",
    "minirocket",
    "errors",
    "torchscript_forecaster",
    "torchscript_classifier",
    # The CUDA kernels from C++: needs a GPU and the CMake build with SOFTDTW_TORCH_CMAKE_CUDA=1
    # (benchmarks/gpu_check.sh sets it); the C++ side skips it otherwise, which fails here.
    pytest.param("cuda", marks=pytest.mark.needs_cuda),
]


def run(cmd, **kwargs):
    """Runs cmd; on failure the assertion shows its output."""
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, cmd))} failed ({result.returncode}):\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
    return result.stdout


def cmake_configure(source: Path, build: Path, *options: str) -> None:
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run(["cmake", "-S", source, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release", *options])


def cmake_build(build: Path, *extra: str) -> None:
    run(["cmake", "--build", build, "--parallel", os.environ.get("MAX_JOBS", "2"), *extra])


@pytest.fixture(scope="module")
def cmake_build_dir() -> Path:
    if shutil.which("cmake") is None:
        pytest.fail("cmake is not installed (requirements-dev.txt installs it)")
    build = Path(os.environ.get("SOFTDTW_TORCH_CMAKE_BUILD", ROOT / "build" / "cmake-tests"))
    references = build / "cpp-references"
    run([sys.executable, ROOT / "tests" / "cpp" / "write_references.py", references])
    cuda = ["-DSOFTDTW_TORCH_WITH_CUDA=OFF"]
    if os.environ.get("SOFTDTW_TORCH_CMAKE_CUDA") == "1":
        # Passed explicitly: the build folder's cache would otherwise keep an earlier list.
        cuda = ["-DSOFTDTW_TORCH_WITH_CUDA=ON", "-DTORCH_CUDA_ARCH_LIST=" + os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0+PTX")]
    cmake_configure(
        ROOT, build,
        f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
        *cuda,
        "-DSOFTDTW_TORCH_BUILD_TESTS=ON",
        "-DSOFTDTW_TORCH_BUILD_EXAMPLES=ON",
        f"-DSOFTDTW_TORCH_TEST_DATA={references}",
        f"-DCMAKE_INSTALL_PREFIX={build / 'install'}",
    )
    cmake_build(build)
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


def test_installed_package_builds_the_example(cmake_build_dir, tmp_path):
    """cmake --install, then examples/cpp as its own project that finds the installed package."""
    install = cmake_build_dir / "install"
    run(["cmake", "--install", cmake_build_dir])
    assert (install / "include" / "softdtw_torch.h").is_file()
    example_build = tmp_path / "example"
    cmake_configure(ROOT / "examples" / "cpp", example_build,
                    f"-DCMAKE_PREFIX_PATH={install};{torch.utils.cmake_prefix_path}")
    cmake_build(example_build)
    models = cmake_build_dir / "cpp-references"
    out = run([example_build / "softdtw_torch_example", models / "softdtw_forecaster.pt",
               models / "rocket_classifier.pt"])
    assert "soft_dtw values" in out and "rocket features" in out
    for model in ("softdtw_forecaster.pt", "rocket_classifier.pt"):
        match = re.search(re.escape(model) + r": output \[[\d, ]+\], loss (\S+), \|grad\| (\S+)", out)
        assert match, out
        assert float(match.group(2)) > 0  # backward reached the parameters
