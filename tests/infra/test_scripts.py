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


def source_env(extra_env, then='echo "python=$(command -v python)"'):
    """Sources env.sh in this test's environment (its venv, torch choice and build options), as the README
    commands do, runs `then` in that shell, and returns what they printed."""
    env = dict(os.environ, SOFTDTW_TORCH_VENV=sys.prefix, **extra_env)
    env.setdefault("SOFTDTW_TORCH_TORCH", DEPS_STAMP.read_text().split()[0])  # the choice this venv was made with
    done = subprocess.run(["bash", "-c", f"source scripts/env.sh && {then}"], cwd=REPO,
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


@pytest.mark.slow  # four interpreters import torch: 10-12 s
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


def compiler_cache_settings():
    """The compiler cache variables env.sh exports, read by sourcing it (no install, no build)."""
    names = ("CCACHE_DIR", "CCACHE_BASEDIR", "CCACHE_NOHASHDIR", "SOFTDTW_TORCH_COMPILER_LAUNCHER",
             "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_CUDA_COMPILER_LAUNCHER")
    out = source_env({"SOFTDTW_TORCH_BUILD": "0"}, then="; ".join(f'echo "{n}=${{{n}-unset}}"' for n in names))
    return dict(line.split("=", 1) for line in out.splitlines() if line.split("=", 1)[0] in names)


def test_compiler_cache_is_shared_by_another_copy_of_the_tree(tmp_path):
    """With env.sh's settings, a source compiled in one copy of the tree is a cache hit in another copy
    at another path (a fresh clone, CI's clone, the wheel check's copy): paths are hashed relative to
    the copy, the working directory not at all, debug information included (-g, as setup.py's flags
    have it). Compiled into a cache of this test's own."""
    settings = compiler_cache_settings()
    if settings["SOFTDTW_TORCH_COMPILER_LAUNCHER"] != "ccache":
        pytest.skip("ccache is not installed in this environment (requirements-dev.txt installs it)")
    assert settings["CCACHE_BASEDIR"] == str(REPO) and settings["CCACHE_NOHASHDIR"] == "1"
    assert settings["CCACHE_DIR"] != "unset" and settings["CMAKE_CXX_COMPILER_LAUNCHER"] == "ccache"
    assert settings["CMAKE_CUDA_COMPILER_LAUNCHER"] == "ccache"
    env = dict(os.environ, CCACHE_DIR=str(tmp_path / "cache"), CCACHE_NOHASHDIR="1")
    for copy in ("clone-a", "deeper/clone-b"):
        root = tmp_path / copy
        (root / "csrc" / "common").mkdir(parents=True)
        (root / "csrc" / "common" / "half.h").write_text("inline double half(double x) { return x / 2; }\n")
        (root / "csrc" / "kernel.cpp").write_text(
            '#include "common/half.h"\ndouble quarter(double x) { return half(half(x)); }\n')
        done = subprocess.run(["ccache", "g++", "-g", "-O2", f"-I{root / 'csrc'}", "-c",
                               str(root / "csrc" / "kernel.cpp"), "-o", str(root / "kernel.o")], cwd=root,
                              env=dict(env, CCACHE_BASEDIR=str(root)), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    stats = subprocess.run(["ccache", "--print-stats"], env=env, capture_output=True, text=True, check=True).stdout
    counts = dict(line.split("\t") for line in stats.splitlines() if "\t" in line)
    assert (int(counts["direct_cache_hit"]), int(counts["cache_miss"])) == (1, 1), stats
