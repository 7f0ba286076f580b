"""What a benchmark report says about the code it measured: package versions and the git revision."""
import os
import subprocess


def module_version(module_name: str) -> str:
    try:
        module = __import__(module_name)
        return getattr(module, "__version__", "installed (no __version__)")
    except Exception as exc:  # noqa: BLE001 - report whatever went wrong
        return f"not available ({type(exc).__name__}: {exc})"


def git_revision() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
