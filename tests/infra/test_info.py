"""softdtw_torch.info(), `python -m softdtw_torch --info`, and the import's behaviour when the
extension does not match the running torch.

The mismatch tests run `import softdtw_torch` in a subprocess on a temporary copy of the package
whose build record (_build_info.py) says the extension was built against another torch: once with
the real extension (it loads: a warning), once with the extension replaced by a shared library
that fails to load with a real "undefined symbol" error, the way an extension built against
another torch fails (an error naming both versions and how to rebuild).
"""
import importlib.machinery
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch

import softdtw_torch
from softdtw_torch import _info

OTHER_TORCH = "2.4.1"  # what the doctored build records claim
REBUILD = "pip install --no-build-isolation --no-deps -e ."
# A C++-mangled name like the ones a torch upgrade removes (this one never existed).
MISSING_SYMBOL = "_ZN3c106detail23torch_check_fail_removedEPKcS2_jRKSs"


def has_cuda_kernels() -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key("softdtw_torch::_soft_dtw_fused_forward", "CUDA")


def run_python(args, cwd, pythonpath=None):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def parse_info(stdout: str) -> dict:
    return dict(line.split(": ", 1) for line in stdout.splitlines() if ": " in line)


# --- the working installation -----------------------------------------------------------------


def test_info_describes_this_installation():
    facts = softdtw_torch.info()
    assert facts["version"] == softdtw_torch.__version__
    assert facts["torch"] == torch.__version__
    assert facts["torch_cuda"] == torch.version.cuda
    # The tests run against an extension built for the torch running them.
    assert facts["built_with_torch"] == torch.__version__
    assert facts["extension"] == softdtw_torch._C.__file__
    assert facts["extension_loaded"] is True and facts["extension_error"] is None
    # The build record agrees with what the extension registered.
    assert facts["cuda_kernels"] is has_cuda_kernels()
    if facts["cuda_kernels"]:
        assert facts["built_with_cuda"].split(".")[0].isdigit()
        if os.environ.get("TORCH_CUDA_ARCH_LIST"):  # CI: the arch list it built with
            assert facts["cuda_arch_list"] == os.environ["TORCH_CUDA_ARCH_LIST"]
    else:
        assert facts["built_with_cuda"] is None and facts["cuda_arch_list"] is None
    assert len(facts["gpus"]) == (torch.cuda.device_count() if torch.cuda.is_available() else 0)


def test_info_cli_prints_the_same_facts(tmp_path):
    package_parent = os.path.dirname(os.path.dirname(softdtw_torch.__file__))
    result = run_python(["-m", "softdtw_torch", "--info"], cwd=tmp_path, pythonpath=package_parent)
    assert result.returncode == 0, result.stderr
    printed = parse_info(result.stdout)
    facts = softdtw_torch.info()
    for key in ("version", "torch", "torch_cuda", "built_with_torch", "cuda_kernels", "built_with_cuda",
                "cuda_arch_list", "extension", "extension_loaded", "python"):
        assert printed[key] == str(facts[key]), key
    assert printed["torch"] == torch.__version__
    assert printed["gpus"] == (facts["gpus"][0] if facts["gpus"] else "none visible")


def test_cli_without_info_prints_usage(tmp_path):
    package_parent = os.path.dirname(os.path.dirname(softdtw_torch.__file__))
    result = run_python(["-m", "softdtw_torch"], cwd=tmp_path, pythonpath=package_parent)
    assert result.returncode == 2
    assert "--info" in result.stdout


# --- a load failure, simulated in-process -----------------------------------------------------


def test_load_failure_raises_with_versions_and_rebuild_command(monkeypatch):
    original = OSError(f"{softdtw_torch._C.__file__}: undefined symbol: {MISSING_SYMBOL}")

    def failing_import():
        raise original

    monkeypatch.setattr(_info, "_import_extension", failing_import)
    monkeypatch.setattr(_info, "build_info", lambda: {"torch": OTHER_TORCH})
    monkeypatch.setattr(_info, "_load_error", None)
    with pytest.raises(softdtw_torch.ExtensionLoadError) as caught:
        _info.load_extension()
    message = str(caught.value)
    assert f"built against torch {OTHER_TORCH}, but torch {torch.__version__} is running" in message
    assert REBUILD in message and f"built against torch {torch.__version__}" in message  # the wheel advice
    assert MISSING_SYMBOL in message
    assert caught.value.__cause__ is original and isinstance(caught.value, ImportError)
    # info() still works, and reports the failure.
    facts = _info.info()
    assert facts["built_with_torch"] == OTHER_TORCH
    assert facts["extension_error"] == f"OSError: {original}"


def test_load_failure_with_matching_versions_says_it_is_not_a_mismatch(monkeypatch):
    def failing_import():
        raise ImportError("libcudart.so.13: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(_info, "_import_extension", failing_import)
    monkeypatch.setattr(_info, "build_info", lambda: {"torch": torch.__version__})
    monkeypatch.setattr(_info, "_load_error", None)
    with pytest.raises(softdtw_torch.ExtensionLoadError, match="libcudart.so.13") as caught:
        _info.load_extension()
    assert "so this is not a torch version mismatch" in str(caught.value)


# --- a doctored copy of the package, imported in a subprocess ----------------------------------


@pytest.fixture
def package_copy(tmp_path):
    """A copy of the installed package under tmp_path/site; returns (site, package_dir)."""
    source = os.path.dirname(softdtw_torch.__file__)
    target = tmp_path / "site" / "softdtw_torch"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    # A development install (`pip install -e .`, what scripts/env.sh does) adds an import hook that
    # serves softdtw_torch's submodules from the source tree when the copy lacks them (a removed
    # _C would then load from there); sitecustomize runs after that hook is installed and drops it.
    (tmp_path / "site" / "sitecustomize.py").write_text(
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, '__module__', '').startswith('__editable__')]\n")
    return tmp_path / "site", target


def write_build_record(package_dir, torch_version):
    (package_dir / "_build_info.py").write_text(
        f"BUILD_INFO = {{'version': '0.1.0', 'torch': {torch_version!r}, 'cuda_kernels': False, "
        "'cuda': None, 'cuda_arch_list': None}\n")


def replace_extension_with_unloadable_library(package_dir, tmp_path):
    """A shared library needing a symbol no loaded library has: importing it fails at dlopen with
    the real `undefined symbol` ImportError of an extension built against another torch."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler to make the unloadable library")
    for name in os.listdir(package_dir):
        if name.startswith("_C") and name.endswith(".so"):
            os.remove(package_dir / name)
    source = tmp_path / "stub.c"
    source.write_text(f"void {MISSING_SYMBOL}(void);\nvoid softdtw_stub(void) {{ {MISSING_SYMBOL}(); }}\n")
    library = package_dir / ("_C" + importlib.machinery.EXTENSION_SUFFIXES[0])
    subprocess.run([compiler, "-shared", "-fPIC", str(source), "-o", str(library)], check=True)


def test_mismatched_build_that_loads_warns(package_copy, tmp_path):
    site, package_dir = package_copy
    write_build_record(package_dir, OTHER_TORCH)
    result = run_python(["-c", "import softdtw_torch; print('imported from', softdtw_torch.__file__)"],
                        cwd=tmp_path, pythonpath=str(site))
    assert result.returncode == 0, result.stderr
    assert f"imported from {package_dir}" in result.stdout
    assert "TorchVersionMismatchWarning" in result.stderr
    assert f"was built against torch {OTHER_TORCH}, but torch {torch.__version__} is running" in result.stderr
    assert REBUILD in result.stderr


def test_mismatch_warning_can_be_made_an_error(package_copy, tmp_path):
    site, package_dir = package_copy
    write_build_record(package_dir, OTHER_TORCH)
    code = textwrap.dedent("""
        import warnings
        warnings.filterwarnings("error", message="softdtw_torch: the extension")
        import softdtw_torch
    """)
    result = run_python(["-c", code], cwd=tmp_path, pythonpath=str(site))
    assert result.returncode == 1
    assert f"TorchVersionMismatchWarning: softdtw_torch: the extension" in result.stderr


def test_unloadable_extension_raises_clear_import_error(package_copy, tmp_path):
    site, package_dir = package_copy
    write_build_record(package_dir, OTHER_TORCH)
    replace_extension_with_unloadable_library(package_dir, tmp_path)
    code = textwrap.dedent("""
        try:
            import softdtw_torch
        except ImportError as exc:
            print("RAISED", type(exc).__name__)
            print("CAUSE", type(exc.__cause__).__name__, exc.__cause__)
            print("MESSAGE", exc)
    """)
    result = run_python(["-c", code], cwd=tmp_path, pythonpath=str(site))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "RAISED ExtensionLoadError" in out
    assert f"CAUSE ImportError" in out and f"undefined symbol: {MISSING_SYMBOL}" in out  # the real loader error
    assert f"It was built against torch {OTHER_TORCH}, but torch {torch.__version__} is running" in out
    assert REBUILD in out
    assert f"reinstall a softdtw-torch wheel built against torch {torch.__version__}" in out


def test_info_cli_reports_an_unloadable_extension(package_copy, tmp_path):
    site, package_dir = package_copy
    write_build_record(package_dir, OTHER_TORCH)
    replace_extension_with_unloadable_library(package_dir, tmp_path)
    result = run_python(["-m", "softdtw_torch", "--info"], cwd=tmp_path, pythonpath=str(site))
    assert result.returncode == 1
    printed = parse_info(result.stdout)
    assert printed["built_with_torch"] == OTHER_TORCH
    assert printed["torch"] == torch.__version__
    assert printed["extension_loaded"] == "False"
    assert printed["extension"].startswith(str(package_dir))
    assert MISSING_SYMBOL in printed["extension_error"]
    assert REBUILD in result.stderr


def test_missing_extension_and_build_record(package_copy, tmp_path):
    site, package_dir = package_copy
    for name in os.listdir(package_dir):
        if name == "_build_info.py" or (name.startswith("_C") and name.endswith(".so")):
            os.remove(package_dir / name)
    result = run_python(["-c", "import softdtw_torch"], cwd=tmp_path, pythonpath=str(site))
    assert result.returncode == 1
    assert "softdtw_torch._C is missing from" in result.stderr and "(not built?)" in result.stderr
    assert "No build record" in result.stderr and REBUILD in result.stderr
