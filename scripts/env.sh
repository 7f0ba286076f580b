# Sourced by the other scripts: creates (or reuses) the virtual environment, installs torch and
# the dev dependencies into it, and builds the extension in place. Re-running is cheap except for
# the extension build.
#   SOFTDTW_TORCH_VENV  where the environment lives (default: ~/.cache/softdtw-torch/venv)
#   PYTHON              interpreter used to create it (default: python3)
#   FORCE_CUDA=1, TORCH_CUDA_ARCH_LIST, MAX_JOBS  passed to the build (see setup.py)
#   SOFTDTW_TORCH_BUILD=0  skip the in-place build (scripts/wheel_check.sh builds its own)
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SOFTDTW_TORCH_VENV:-$HOME/.cache/softdtw-torch/venv}"
if [ ! -x "$venv/bin/python" ]; then
  echo "softdtw-torch: creating the virtual environment $venv"
  "${PYTHON:-python3}" -m venv "$venv"
fi
# shellcheck disable=SC1091
source "$venv/bin/activate"
python -m pip install --quiet --upgrade pip setuptools wheel
python -m pip install --quiet "torch>=2.4" -r "$repo_root/requirements-dev.txt"
if [ "${SOFTDTW_TORCH_BUILD:-1}" != 0 ]; then
  echo "softdtw-torch: building the extension (FORCE_CUDA=${FORCE_CUDA:-0}, TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-default})"
  MAX_JOBS="${MAX_JOBS:-2}" python -m pip install --quiet --no-build-isolation --no-deps -e "$repo_root"
fi
cd "$repo_root"
