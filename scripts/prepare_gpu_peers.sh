#!/usr/bin/env bash
# Run here, with network, before a GPU session (and before benchmarks/bench_second_order.py on any
# machine): puts into git-ignored folders everything the GPU machine (no network) needs for
# benchmarks/bench_gpu_peers.py, the second-order peers of benchmarks/bench_second_order.py, and
# the tests that import PyPI packages it lacks:
#   benchmarks/peers/<name>/   the GitHub peers' sources at pinned commits (never committed)
#   benchmarks/peers/VERSIONS.txt  what was fetched, from where, at which commit / version
#   .whl/                      wheels for Python 3.12 x86-64 (gpu_check.sh installs them there)
# Then name both in the device tool's carry: [".whl", "benchmarks/peers"] (benchmarks/README.md).
#   bash scripts/prepare_gpu_peers.sh
# Environment: PYTHON (default python3), PEER_MIRRORS (the fetch tool's mirrors, default
# /work/.mirror: tried first, since GitHub may be unreachable from this machine).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
peers=benchmarks/peers
mirrors="${PEER_MIRRORS:-/work/.mirror}"

# GitHub peers, pinned so that a rerun benchmarks the same code: folder, owner/repo, commit.
github_peers=(
  "sdtw-cuda-torch BGU-CS-VIL/sdtw-cuda-torch 97fe99c3f4ba90679ccdcffaa3fc6d956c9c811c"
  "pytorch-softdtw-cuda Maghoumi/pytorch-softdtw-cuda fbedc3b655bb7a60c0b111621ddef910e9b6e5ef"
  # DILATE's authors' loss (Le Guen & Thome 2019) and the soft-DTW divergences' reference code
  # (Blondel, Mensch & Vert 2021): numpy + numba, nothing to compile.
  "DILATE vincent-leguen/DILATE 5f114b587fd7abb7b79726ed68d8e4a91049cc0e"
  "sdtw-div google-research/soft-dtw-divergences dcf1ae8653cb4dcfcea903470f8a58319027e9cb"
)
# PyPI packages the GPU machine lacks (its list: /work/.library/device/KINDS.md), at the versions
# of the dev environment: pysdtw (a peer), tslearn (tests), aeon + its Deprecated (tests, ROCKET).
wheels=(pysdtw==0.0.5 tslearn==0.10.0 aeon==1.6.0 Deprecated==1.3.1)

mkdir -p "$peers" .whl
versions="$peers/VERSIONS.txt"
{
  echo "# Peers for benchmarks/bench_gpu_peers.py, written by scripts/prepare_gpu_peers.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# name | source | commit or version | obtained from"
} > "$versions"

for entry in "${github_peers[@]}"; do
  read -r name repo commit <<< "$entry"
  dest="$peers/$name"
  rm -rf "$dest"
  mkdir -p "$dest"
  mirror="$mirrors/${repo/\//+}/repo"
  [ -d "$mirror/.git" ] && mirror="$mirror/.git"  # a mirror may be a checkout rather than a bare repository
  if [ -d "$mirror" ] && git --git-dir="$mirror" cat-file -e "$commit^{commit}" 2> /dev/null; then
    git --git-dir="$mirror" archive "$commit" | tar -x -C "$dest"
    origin="fetch-tool mirror $mirror"
  elif curl -fsSL "https://codeload.github.com/$repo/tar.gz/$commit" | tar -xz --strip-components=1 -C "$dest"; then
    origin="codeload.github.com tarball"
  else
    echo "error: cannot get $repo at $commit (no mirror under $mirrors, GitHub unreachable)" >&2
    exit 1
  fi
  # plots, figures, papers and the peer's own git/CI files: the benchmarks need none of them
  find "$dest" \( -name '*.png' -o -name '*.pdf' \) -delete
  rm -rf "$dest/.github" "$dest/.gitignore"
  echo "$name | https://github.com/$repo | $commit | $origin (PNG, PDF, .github, .gitignore dropped)" >> "$versions"
  echo "peer $name: $repo @ ${commit:0:12} from $origin"
done

for spec in "${wheels[@]}"; do
  name="${spec%%==*}"
  version="${spec##*==}"
  norm="$(echo "$name" | tr 'A-Z-' 'a-z_')"  # wheel file names: lower case, '-' -> '_'
  # one version of each package: two would stop the whole install on the GPU machine
  find .whl -maxdepth 1 -iname "${norm}-*.whl" ! -iname "${norm}-${version}-*" -print -delete
  "$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "$spec"
  file="$(find .whl -maxdepth 1 -iname "${norm}-${version}-*.whl" | head -1)"
  [ -n "$file" ] || { echo "error: no wheel for $spec in .whl" >&2; exit 1; }
  echo "$name | PyPI | $version | $(basename "$file"), sha256 $(sha256sum "$file" | cut -c1-16)..." >> "$versions"
  echo "wheel $(basename "$file")"
done

# Both folders must be ignored (they travel only through carry) and the whole call must stay
# well under the device tool's 64 MiB (tracked files + carried paths).
for path in .whl "$peers"; do
  git check-ignore -q "$path/" || { echo "error: $path is not ignored by git" >&2; exit 1; }
done
if [ -n "$(git status --porcelain --untracked-files=all -- .whl "$peers")" ]; then
  echo "error: git status shows files under .whl or $peers" >&2
  exit 1
fi
carry_bytes=$(du -sb .whl "$peers" | awk '{s += $1} END {print s}')
tracked_bytes=$(git ls-files -z | du -cb --files0-from=- 2> /dev/null | tail -1 | cut -f1)
total=$((carry_bytes + tracked_bytes))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "carry: .whl $(mib "$(du -sb .whl | cut -f1)"), $peers $(mib "$(du -sb "$peers" | cut -f1)");" \
  "with the tracked tree $(mib "$tracked_bytes"): $(mib "$total") of the 64 MiB a call may send"
if [ "$total" -gt $((48 * 1048576)) ]; then
  echo "error: over 48 MiB, too close to the device tool's 64 MiB limit" >&2
  exit 1
fi
echo "carry list for the device tool: [\".whl\", \"$peers\"]"
