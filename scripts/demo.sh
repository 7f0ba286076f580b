#!/usr/bin/env bash
# The main job on a fresh or existing machine: environment, build, then the GunPoint demo
# (SoftDTW loss vs MSE), on the GPU when there is one, else the CPU. Writes its plot to out/.
set -euo pipefail
source "$(dirname "$0")/env.sh"
python examples/train_softdtw_loss.py --out out "$@"
