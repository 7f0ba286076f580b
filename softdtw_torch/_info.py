"""What this installation is (``softdtw_torch.info()``, ``python -m softdtw_torch --info``), and the
loading of the compiled extension with a clear error when it cannot load.

The build facts (the torch compiled against, whether the CUDA kernels were compiled, for which
architectures) are written by setup.py into the generated module ``_build_info.py`` beside the
extension, not read from the extension: after a torch upgrade the extension may no longer load,
which is exactly when they are needed. This module therefore imports nothing of the extension.

A C++ extension is only guaranteed to work with the exact torch it was built against. When the
extension fails to load, importing softdtw_torch raises ``ExtensionLoadError`` (an ImportError)
naming both torch versions and how to rebuild. When it loads although the recorded torch differs
from the running one, the import warns (``TorchVersionMismatchWarning``) instead: loading proves
that the symbols it needs exist, so it may work, but nothing guarantees it; refusing a build
that loads would break set-ups that work. To make it an error, filter it before the import:
``warnings.filterwarnings("error", message="softdtw_torch: the extension")``.
"""
import argparse
import importlib
import importlib.machinery
import os
import platform
import sys
import warnings
from typing import Any, Dict, List, Optional

import torch

from ._version import __version__

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_EXTENSION = f"{__package__}._C"

REBUILD_HINT = (
    "Rebuild the extension against the running torch: in a source checkout run "
    "`pip install --no-build-isolation --no-deps -e .` (or `python setup.py build_ext --inplace`); "
    "for a wheel, reinstall a softdtw-torch wheel built against torch {running} "
    "(`pip wheel --no-build-isolation --no-deps .` in an environment with that torch). "
    "`python -m softdtw_torch --info` shows what was built against what."
)


class ExtensionLoadError(ImportError):
    """The compiled extension softdtw_torch._C could not be loaded (the original error is chained).

    An ImportError. Its message names the torch the extension was built against, the torch
    running, and how to rebuild.

    Examples
    --------
    >>> import softdtw_torch as st
    >>> issubclass(st.ExtensionLoadError, ImportError)
    True
    """

    __module__ = "softdtw_torch"  # where users catch it (shorter in tracebacks)


class TorchVersionMismatchWarning(UserWarning):
    """The extension loaded, but it was built against another torch than the one running.

    A UserWarning; ``warnings.filterwarnings("error", message="softdtw_torch: the extension")``
    before the import makes it an error.

    Examples
    --------
    >>> import softdtw_torch as st
    >>> issubclass(st.TorchVersionMismatchWarning, UserWarning)
    True
    """

    __module__ = "softdtw_torch"


# The error from the last failed load, for info(); None when it loaded or was not tried.
_load_error: Optional[BaseException] = None


def build_info() -> Optional[Dict[str, Any]]:
    """The facts setup.py recorded when it built the extension, or None when no record exists
    (built by a setup.py older than the record, or an incomplete package)."""
    try:
        from ._build_info import BUILD_INFO
    except ImportError:
        return None
    return dict(BUILD_INFO)


def extension_path() -> Optional[str]:
    """The compiled extension's file in the package directory, found without loading it."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(_PACKAGE_DIR, "_C" + suffix)
        if os.path.exists(path):
            return path
    return None


def _built_torch() -> Optional[str]:
    built = build_info()
    return None if built is None else built.get("torch")


def _load_failure_message(exc: BaseException) -> str:
    running, built, path = torch.__version__, _built_torch(), extension_path()
    if path is None:
        what = f"the compiled extension {_EXTENSION} is missing from {_PACKAGE_DIR} (not built?)"
    else:
        what = f"the compiled extension {path} failed to load ({type(exc).__name__}: {exc})"
    if built is None:
        versions = (f"No build record ({_PACKAGE_DIR}/_build_info.py) was found, so the torch it was built "
                    f"against is unknown; torch {running} is running.")
    elif built != running:
        versions = (f"It was built against torch {built}, but torch {running} is running: a C++ extension must "
                    "be built against the exact torch it runs with, and a torch upgrade or downgrade after "
                    "the build is the usual cause of this error.")
    else:
        versions = (f"It was built against torch {built}, the torch that is running, so this is not a torch "
                    "version mismatch: see the original error above.")
    return f"softdtw_torch: {what}.\n{versions}\n{REBUILD_HINT.format(running=running)}"


def _import_extension():
    return importlib.import_module(_EXTENSION)


def load_extension():
    """Imports softdtw_torch._C, whose import registers the operators with the dispatcher.

    Raises ExtensionLoadError (chaining the original ImportError/OSError, e.g. the "undefined
    symbol" of an extension built against another torch) with the versions and how to rebuild;
    warns with TorchVersionMismatchWarning when it loads but the recorded torch differs.
    """
    global _load_error
    try:
        module = _import_extension()
    except (ImportError, OSError) as exc:
        _load_error = exc
        raise ExtensionLoadError(_load_failure_message(exc)) from exc
    _load_error = None
    built, running = _built_torch(), torch.__version__
    if built is not None and built != running:
        warnings.warn(
            f"softdtw_torch: the extension {extension_path()} was built against torch {built}, but torch "
            f"{running} is running. It loaded, but an extension is only guaranteed to work with the torch it "
            f"was built against. {REBUILD_HINT.format(running=running)}",
            TorchVersionMismatchWarning,
            stacklevel=2,
        )
    return module


def _gpus() -> List[str]:
    return [
        f"cuda:{i} {torch.cuda.get_device_name(i)} (capability {'.'.join(map(str, torch.cuda.get_device_capability(i)))})"
        for i in range(torch.cuda.device_count())
    ] if torch.cuda.is_available() else []


def cpu_description() -> str:
    """This machine's CPU as the benchmarks name it: vendor, model name, family and model numbers
    (Linux's /proc/cpuinfo; elsewhere what the platform module reports)."""
    fields: Dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if not line.strip():
                    break  # the first processor's block
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    if "vendor_id" not in fields:
        return platform.processor() or platform.machine()
    return (f"{fields['vendor_id']} {fields.get('model name', '')} (family {fields.get('cpu family', '?')}, "
            f"model {fields.get('model', '?')})")


def cpu_paths() -> Optional[Dict[str, str]]:
    """Each CPU kernel's vector path and why it runs, as {kernel: "path (why)"}; None when the
    extension is not loaded. Decides the paths not yet decided (csrc/common/cpu.h: the widest this
    CPU runs, capped by ``SOFTDTW_TORCH_CPU_PATH``, measured where the kernel has a probe), which
    takes a few milliseconds the first time."""
    extension = sys.modules.get(_EXTENSION)
    if extension is None:
        return None
    return dict(line.split(": ", 1) for line in extension.cpu_paths())


def info() -> Dict[str, Any]:
    """Versions and build facts of this installation, as a dict (works when the extension fails to load).

    Build facts are None when no build record exists. ``python -m softdtw_torch --info`` prints
    them.

    Returns
    -------
    dict
        Keys: ``version`` (softdtw-torch), ``torch`` (running) and ``torch_cuda`` (the CUDA it was
        built with), ``built_with_torch`` (what the extension was compiled against),
        ``cuda_kernels`` (whether the CUDA kernels were compiled), ``built_with_cuda`` (the CUDA
        toolkit that compiled them), ``cuda_arch_list`` (TORCH_CUDA_ARCH_LIST of the build),
        ``gpus`` (visible GPUs, with name and compute capability), ``cpu`` (vendor, model name,
        family and model), ``cpu_paths`` (each CPU kernel family's vector path, ``portable``,
        ``avx2`` or ``avx512``, and why: measured, the widest this CPU runs, or capped by
        ``SOFTDTW_TORCH_CPU_PATH``; None when the extension is not loaded), ``extension`` (path),
        ``extension_loaded``, ``extension_error``, ``python``.

    Examples
    --------
    >>> import softdtw_torch as st
    >>> facts = st.info()
    >>> list(facts)  # doctest: +NORMALIZE_WHITESPACE
    ['version', 'torch', 'torch_cuda', 'built_with_torch', 'cuda_kernels', 'built_with_cuda',
     'cuda_arch_list', 'gpus', 'cpu', 'cpu_paths', 'extension', 'extension_loaded', 'extension_error', 'python']
    >>> facts["version"] == st.__version__, facts["extension_loaded"]
    (True, True)
    >>> facts["cpu_paths"]["minirocket"].split(" ")[0] in ("avx512", "avx2", "portable")
    True
    """
    built = build_info() or {}
    return {
        "version": __version__,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "built_with_torch": built.get("torch"),
        "cuda_kernels": built.get("cuda_kernels"),
        "built_with_cuda": built.get("cuda"),
        "cuda_arch_list": built.get("cuda_arch_list"),
        "gpus": _gpus(),
        "cpu": cpu_description(),
        "cpu_paths": cpu_paths(),
        "extension": extension_path(),
        "extension_loaded": _EXTENSION in sys.modules,
        "extension_error": None if _load_error is None else f"{type(_load_error).__name__}: {_load_error}",
        "python": platform.python_version(),
    }


def format_info(facts: Dict[str, Any]) -> str:
    """info() as `key: value` lines (what `python -m softdtw_torch --info` prints)."""
    lines = [f"{key}: {value}" for key, value in facts.items() if key not in ("gpus", "cpu_paths")]
    lines += [f"gpus: {gpu}" for gpu in facts["gpus"]] or ["gpus: none visible"]
    lines += [f"cpu_paths: {kernel}: {path}" for kernel, path in (facts["cpu_paths"] or {}).items()]
    return "\n".join(lines)


def invoked_as_info_cli() -> bool:
    """True while `python -m softdtw_torch ...` imports the package (Python >= 3.10 records the
    command line in sys.orig_argv), so that __init__ lets the CLI report a broken extension."""
    argv = getattr(sys, "orig_argv", [])
    return any(arg == "-m" and argv[i + 1:i + 2] == [__package__] for i, arg in enumerate(argv))


def main(argv: Optional[List[str]] = None) -> int:
    """`python -m softdtw_torch --info`: prints info(); exit status 1 when the extension does not load."""
    parser = argparse.ArgumentParser(prog="python -m softdtw_torch", description="softdtw-torch command line")
    parser.add_argument("--info", action="store_true",
                        help="print versions and build facts (torch built against and running, CUDA, GPUs)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not args.info:
        parser.print_help()
        return 2
    facts = info()
    print(format_info(facts))
    if not facts["extension_loaded"]:
        print(f"\n{_load_failure_message(_load_error) if _load_error else 'the extension is not loaded'}",
              file=sys.stderr)
        return 1
    return 0
