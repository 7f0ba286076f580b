# Sourced by the other scripts: creates (or reuses) the virtual environment, installs torch and the
# dev dependencies into it, and builds the extension in place. Work already done is skipped: the
# installs when requirements-dev.txt and the torch choice are unchanged, the build when no source,
# build file, torch or build option changed (and otherwise only the changed sources recompile).
#   SOFTDTW_TORCH_VENV   where the environment lives (default: ~/.cache/softdtw-torch/venv, or
#                        ~/.cache/softdtw-torch/venv-cpu for a CPU build of torch)
#   SOFTDTW_TORCH_TORCH  cpu or cuda: which torch to install. Default: cuda when FORCE_CUDA=1 or a GPU
#                        is visible (nvidia-smi), else cpu (from the PyTorch CPU index, a few hundred MB
#                        instead of several GB; PyPI's CUDA build if that index cannot be reached)
#   PYTHON               interpreter used to create the environment (default: python3)
#   FORCE_CUDA=1, TORCH_CUDA_ARCH_LIST, MAX_JOBS  passed to the build (see setup.py)
#   SOFTDTW_TORCH_BUILD=0  skip the in-place build (scripts/wheel_check.sh builds its own)
#   SOFTDTW_TORCH_CCACHE=0 compile without the compiler cache (see "Compiler cache" below)
#   CCACHE_DIR           where the compiler cache lives (default: ~/.cache/softdtw-torch/ccache)
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

torch_kind="${SOFTDTW_TORCH_TORCH:-}"
if [ -z "$torch_kind" ]; then
  if [ "${FORCE_CUDA:-0}" = 1 ] || nvidia-smi -L >/dev/null 2>&1; then torch_kind=cuda; else torch_kind=cpu; fi
fi
case "$torch_kind" in
  cuda) default_venv="$HOME/.cache/softdtw-torch/venv" ;;
  cpu) default_venv="$HOME/.cache/softdtw-torch/venv-cpu" ;;
  *) echo "softdtw-torch: SOFTDTW_TORCH_TORCH must be cpu or cuda, got '$torch_kind'" >&2; exit 2 ;;
esac
venv="${SOFTDTW_TORCH_VENV:-$default_venv}"
if [ ! -x "$venv/bin/python" ]; then
  echo "softdtw-torch: creating the virtual environment $venv"
  "${PYTHON:-python3}" -m venv "$venv"
fi
# shellcheck disable=SC1091
source "$venv/bin/activate"

# Installs: skipped when this environment already holds what requirements-dev.txt and the torch
# choice ask for (a stamp of both), so a second run contacts no package index.
deps_stamp="$venv/.softdtw-torch-deps"
deps_key="$torch_kind $(sha256sum "$repo_root/requirements-dev.txt" | cut -d' ' -f1)"
if [ "$(cat "$deps_stamp" 2>/dev/null)" != "$deps_key" ]; then
  python -m pip install --quiet --upgrade pip setuptools wheel
  if ! python -c 'import torch' 2>/dev/null; then
    if [ "$torch_kind" = cpu ]; then
      echo "softdtw-torch: installing a CPU build of torch (SOFTDTW_TORCH_TORCH=cuda for the CUDA build)"
      python -m pip install --quiet --retries 1 --timeout 15 "torch>=2.4" --index-url https://download.pytorch.org/whl/cpu \
        || { echo "softdtw-torch: the PyTorch CPU index cannot be reached; installing torch from PyPI (its CUDA build)"
             python -m pip install --quiet "torch>=2.4"; }
    else
      python -m pip install --quiet "torch>=2.4"
    fi
  fi
  python -m pip install --quiet "torch>=2.4" -r "$repo_root/requirements-dev.txt"
  echo "$deps_key" > "$deps_stamp"
fi

# Compiler cache: ccache (requirements-dev.txt installs it into the environment) keeps every object
# compiled by g++ and nvcc, so a rebuild of unchanged sources (a fresh clone, CI, the wheel check,
# the CMake build, the emulator and harness builds of the tests) reads objects instead of compiling.
# Paths under the checkout are hashed relative to it (CCACHE_BASEDIR, which scripts/wheel_check.sh
# moves to its copy of the tree) and the working directory not at all (CCACHE_NOHASHDIR), so another
# clone of the same sources hits the same objects. Without ccache, or with SOFTDTW_TORCH_CCACHE=0,
# everything compiles as before: nothing here is needed for a build to work.
# torch's extension builder (setup.py, the tests' cpp_extension.load) puts ccache in front of g++ and
# nvcc by itself when ccache is on PATH (releases since early 2026; TORCH_NO_COMPILER_WRAPPER turns
# that off); PYTORCH_NVCC does it for nvcc on older torch, whose g++ compiles then go uncached.
# CMake takes it from CMAKE_<LANG>_COMPILER_LAUNCHER, the tests' own compiles (harness, kernels
# without their x86 paths) from SOFTDTW_TORCH_COMPILER_LAUNCHER (tests/cuda_emu/harness_cases.py).
if [ "${SOFTDTW_TORCH_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/softdtw-torch/ccache}"
  export CCACHE_BASEDIR="$repo_root" CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
  export SOFTDTW_TORCH_COMPILER_LAUNCHER=ccache
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
  nvcc_path="${CUDA_HOME:-${CUDA_PATH:-}}"  # where torch looks for nvcc: CUDA_HOME, PATH, /usr/local/cuda
  nvcc_path="${nvcc_path:+$nvcc_path/bin/nvcc}"
  [ -x "$nvcc_path" ] || nvcc_path="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  if [ -z "${PYTORCH_NVCC:-}" ] && [ -x "$nvcc_path" ]; then export PYTORCH_NVCC="ccache $nvcc_path"; fi
else
  export TORCH_NO_COMPILER_WRAPPER=1 SOFTDTW_TORCH_COMPILER_LAUNCHER=
fi

if [ "${SOFTDTW_TORCH_BUILD:-1}" != 0 ]; then
  # The extension is built in place (ninja keeps its objects in build/, so a rebuild recompiles only
  # what changed) and the source tree is put on the environment's path, as an editable install does.
  build_key="$(cd "$repo_root" && python - <<'PY'
import hashlib, os, sys, torch
h = hashlib.sha256()
files = ["setup.py", "pyproject.toml"] + sorted(
    os.path.join(d, f) for d, _, fs in os.walk("csrc") for f in fs)
for name in files:
    h.update(name.encode()); h.update(open(name, "rb").read())
for key in ("FORCE_CUDA", "TORCH_CUDA_ARCH_LIST", "CUDA_HOME"):
    h.update(f"{key}={os.environ.get(key, '')}".encode())
h.update(f"{sys.executable} {torch.__version__}".encode())
print(h.hexdigest())
PY
)"
  build_stamp="$repo_root/build/.softdtw-torch-build"
  if [ "$(cat "$build_stamp" 2>/dev/null)" = "$build_key" ] && compgen -G "$repo_root/softdtw_torch/_C*.so" >/dev/null \
     && [ -f "$repo_root/softdtw_torch/_build_info.py" ]; then
    echo "softdtw-torch: the extension is up to date (no source, torch or build option changed); not rebuilding"
  else
    echo "softdtw-torch: building the extension (FORCE_CUDA=${FORCE_CUDA:-0}, TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-default})"
    mkdir -p "$repo_root/build"
    build_log="$repo_root/build/build.log"  # every compiler command line: kept out of the terminal
    if ! (cd "$repo_root" && MAX_JOBS="${MAX_JOBS:-2}" python setup.py build_ext --inplace --force) >"$build_log" 2>&1; then
      tail -n 60 "$build_log" >&2
      echo "softdtw-torch: the build failed; its whole output is in $build_log" >&2
      exit 1
    fi
    echo "$build_key" > "$build_stamp"
  fi
  if ! python -m pip show --quiet softdtw-torch 2>/dev/null; then
    # Registers the package (metadata and the source tree on the path) without compiling anything.
    SOFTDTW_TORCH_NO_EXTENSION=1 python -m pip install --quiet --no-build-isolation --no-deps -e "$repo_root"
  fi
fi
cd "$repo_root"
