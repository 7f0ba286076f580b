#!/usr/bin/env bash
# End-to-end check of the wheel a user builds: `pip wheel --no-build-isolation --no-deps .` from a
# clean copy of the working tree (tracked and untracked-but-not-ignored files, so no stale build/,
# in-place .so or build record can leak in), a check of the wheel's contents, then an install into
# a fresh virtual environment holding the same torch, and scripts/wheel_smoke.py run there from a
# directory outside the source tree. Fails loudly on any step; prints how long each took.
#   FORCE_CUDA, TORCH_CUDA_ARCH_LIST, MAX_JOBS  passed to the wheel's build (see setup.py)
#   SOFTDTW_TORCH_VENV                          the development environment (see env.sh)
#   KEEP_WHEEL_DIR=1                            keep the temporary directory (wheel, venv) for a look
set -euo pipefail
SOFTDTW_TORCH_BUILD=0 source "$(dirname "$0")/env.sh"  # the dev environment; its in-place build is not needed
start=$SECONDS
step() { echo "softdtw-torch wheel check [$((SECONDS - start))s]: $*"; }
fail() { echo "softdtw-torch wheel check FAILED: $*" >&2; exit 1; }

work="$(mktemp -d)"
if [ "${KEEP_WHEEL_DIR:-0}" = 1 ]; then echo "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi

step "copying the working tree to $work/src"
git -C "$repo_root" rev-parse --git-dir >/dev/null 2>&1 || fail "$repo_root is not a git checkout: cannot tell source files from build outputs"
mkdir -p "$work/src"
(cd "$repo_root" && git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf - | tar -xf - -C "$work/src")

step "building the wheel (FORCE_CUDA=${FORCE_CUDA:-0}, TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-default}, MAX_JOBS=${MAX_JOBS:-2})"
# The copy's paths are hashed relative to it, as the checkout's are (env.sh): its unchanged sources
# hit the compiler cache of an earlier wheel build from any copy.
(cd "$work/src" && CCACHE_BASEDIR="$work/src" MAX_JOBS="${MAX_JOBS:-2}" \
  python -m pip wheel --quiet --no-build-isolation --no-deps --wheel-dir "$work/dist" .) \
  || fail "pip wheel failed"
wheels=("$work"/dist/softdtw_torch-*.whl)
[ ${#wheels[@]} = 1 ] && [ -f "${wheels[0]}" ] || fail "expected one softdtw_torch wheel in $work/dist, got: $(ls "$work/dist")"
wheel="${wheels[0]}"
step "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

step "checking the wheel's contents"
python - "$wheel" "${FORCE_CUDA:-0}" <<'PY' || fail "the wheel's contents are wrong (see above)"
import ast, fnmatch, sys, torch, zipfile

wheel, force_cuda = sys.argv[1], sys.argv[2] == "1"
names = zipfile.ZipFile(wheel).namelist()
problems = [f"missing {pattern}" for pattern in
            ["softdtw_torch/_C.*.so", "softdtw_torch/_build_info.py", "softdtw_torch/__main__.py",
             "softdtw_torch/rocket/__init__.py", "softdtw_torch/data/GunPoint_TRAIN.ts", "softdtw_torch/data/GunPoint_TEST.ts"]
            if not fnmatch.filter(names, pattern)]
problems += [f"unexpected {name}" for name in names
             if name.split("/")[0] not in ("softdtw_torch",) and ".dist-info/" not in name]
source = zipfile.ZipFile(wheel).read("softdtw_torch/_build_info.py").decode() if "softdtw_torch/_build_info.py" in names else ""
record = ast.literal_eval(source.split("BUILD_INFO = ", 1)[1]) if source else {}
if record and record["torch"] != torch.__version__:
    problems.append(f"build record says torch {record['torch']}, but the build ran with {torch.__version__}")
if record and force_cuda and not record["cuda_kernels"]:
    problems.append("FORCE_CUDA=1 but the build record says the CUDA kernels were not compiled")
for problem in problems:
    print(f"  {problem}", file=sys.stderr)
print(f"  {len(names)} files, build record {record}")
sys.exit(1 if problems else 0)
PY

step "creating a fresh virtual environment with the same torch"
# Downloading torch again costs gigabytes (CUDA libraries included) and pip's cache rarely holds
# it (env.sh finds torch installed and downloads nothing). So the fresh environment gets the dev
# environment's torch itself: a symlink for each top-level entry (packages and .dist-info) of torch
# and of the distributions it requires, by its metadata, and nothing else (not the dev
# environment's softdtw-torch, numpy or test tools). `pip check` then proves the set complete.
python -m venv --without-pip "$work/venv"
fresh_site="$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
python - "$fresh_site" <<'PY' || fail "could not link torch into the fresh environment"
import importlib.metadata as md, os, sys
from packaging.requirements import Requirement

target, todo, seen, entries = sys.argv[1], [("torch", ())], set(), set()
while todo:
    name, extras = todo.pop()
    dist = md.distribution(name)
    key = (dist.metadata["Name"].lower().replace("_", "-"), extras)
    if key in seen:
        continue
    seen.add(key)
    if dist.files is None:
        sys.exit(f"{name} has no RECORD of its files: cannot link it")
    entries |= {dist.locate_file(f.parts[0]) for f in dist.files if f.parts[0] not in ("..", "__pycache__")}
    for req in map(Requirement, dist.requires or []):
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("",) + extras):
            todo.append((req.name, tuple(sorted(req.extras))))
for entry in sorted(map(str, entries)):
    os.symlink(entry, os.path.join(target, os.path.basename(entry)))
print(f"  linked {len(entries)} entries of {len({k[0] for k in seen})} distributions: {sorted({k[0] for k in seen})}")
PY
fresh_pip=(python -m pip --python "$work/venv/bin/python")

step "installing the wheel (--no-deps), numpy and scikit-learn into the fresh environment"
"${fresh_pip[@]}" install --quiet "numpy==$(python -c 'import numpy; print(numpy.__version__)')" \
  "scikit-learn==$(python -c 'import sklearn; print(sklearn.__version__)')" || fail "installing numpy and scikit-learn failed"
"${fresh_pip[@]}" install --quiet --no-deps "$wheel" || fail "installing the wheel failed"
"${fresh_pip[@]}" check || fail "the fresh environment's requirements are not all met"

step "smoke test in the fresh environment, from $work (outside the source tree)"
cp "$repo_root/scripts/wheel_smoke.py" "$work/"
(cd "$work" && env -u PYTHONPATH "$work/venv/bin/python" wheel_smoke.py) || fail "the smoke test failed"
step "passed"
