"""scripts/env.sh, which both README commands source, skips the work already done: no install when
requirements-dev.txt and the torch choice are unchanged, no build when no source, build file, torch
or build option changed; and a changed build option is noticed."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD_STAMP = REPO / "build" / ".softdtw-torch-build"
DEPS_STAMP = Path(sys.prefix) / ".softdtw-torch-deps"
EXTENSIONS = sorted((REPO / "softdtw_torch").glob("_C*.so"))

pytestmark = pytest.mark.skipif(
    not (BUILD_STAMP.exists() and DEPS_STAMP.exists() and EXTENSIONS),
    reason="the environment was not made by scripts/env.sh (its stamps are missing): sourcing it here would "
    "install and build; scripts/test.sh and CI make it",
)


def source_env(extra_env):
    """Sources env.sh in this test's environment (its venv, torch choice and build options), as the README
    commands do, and returns what it printed."""
    env = dict(os.environ, SOFTDTW_TORCH_VENV=sys.prefix, **extra_env)
    env.setdefault("SOFTDTW_TORCH_TORCH", DEPS_STAMP.read_text().split()[0])  # the choice this venv was made with
    done = subprocess.run(["bash", "-c", 'source scripts/env.sh && echo "python=$(command -v python)"'], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_second_run_installs_and_builds_nothing():
    before = [p.stat().st_mtime_ns for p in EXTENSIONS]
    out = source_env({})
    assert "the extension is up to date" in out and "not rebuilding" in out
    assert "installing" not in out.lower() and "building the extension" not in out
    assert [p.stat().st_mtime_ns for p in EXTENSIONS] == before  # the extension was not relinked
    assert f"python={sys.prefix}/bin/python" in out  # and the environment is active for the calling script


def test_a_changed_build_option_is_a_rebuild(tmp_path):
    """The decision alone: env.sh's build key differs when an option differs (the rebuild itself is not run)."""
    script = (REPO / "scripts" / "env.sh").read_text()
    opening = "build_key=\"$(cd \"$repo_root\" && python - <<'PY'"
    start = script.index(opening) + len(opening)
    program = script[start:script.index("PY\n)\"", start)]

    def key(**env):
        return subprocess.run([sys.executable, "-c", program], cwd=REPO, env=dict(os.environ, **env),
                              capture_output=True, text=True, check=True).stdout.strip()

    base = dict(FORCE_CUDA=os.environ.get("FORCE_CUDA", ""),
                TORCH_CUDA_ARCH_LIST=os.environ.get("TORCH_CUDA_ARCH_LIST", ""))
    assert key(**base) == BUILD_STAMP.read_text().strip()  # what the last build recorded: the key of this build
    assert key(**dict(base, FORCE_CUDA="0" if base["FORCE_CUDA"] == "1" else "1")) != key(**base)
    assert key(**dict(base, TORCH_CUDA_ARCH_LIST="8.0")) != key(**base)
