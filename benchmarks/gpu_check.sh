#!/usr/bin/env bash
# Everything that needs a GPU, in one run on the GPU machine (torch preinstalled, no network):
# build the extension against the machine's torch, run the CUDA tests, compute-sanitizer
# (memcheck, racecheck, synccheck, initcheck) on a small torch workload and on the torch-free harness,
# the GPU benchmarks, and the side-by-side benchmark against the CUDA peers. Writes logs and tables
# to the folder given as $1 (default: $OUT, else out/gpu).
#   bash benchmarks/gpu_check.sh "$OUT"
#   GPU_CHECK_STEPS="build peers" bash benchmarks/gpu_check.sh "$OUT"   # some steps only
#   GPU_CHECK_PYTEST_ARGS='-k "not test_gpu_runs_what_ci_runs"' ...      # extra pytest arguments
# Steps: build tests sanitizer harness bench rocket profile peers (default: all, in that order). The
# device tool stops a command after 10 minutes: the peers step gets what is left of GPU_CHECK_BUDGET_S
# (default 570 s from this script's start, at least 60 s) and skips, row by row, what does not fit.
# Python packages the machine lacks (pysdtw, tslearn, aeon) and the GitHub peers travel in .whl/
# and benchmarks/peers/ (scripts/prepare_gpu_peers.sh, benchmarks/README.md); missing ones only
# skip the tests that import them, or give the benchmark a row saying so.
set -uo pipefail
out="${1:-${OUT:-out/gpu}}"
mkdir -p "$out"
cd "$(dirname "$0")/.."
status=0
export PYTHONUNBUFFERED=1
steps=" ${GPU_CHECK_STEPS:-build tests sanitizer harness bench rocket profile peers} "
want() { [[ "$steps" == *" $1 "* ]]; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())"
  nvcc --version | tail -1
} > "$out/device.txt" 2>&1
cat "$out/device.txt"

if [ -d .whl ] && compgen -G ".whl/*.whl" > /dev/null; then
  echo "== carried wheels"
  # --no-deps: their needs are on the machine already (KINDS.md), and aeon 1.6 pins numpy < 2.5,
  # which the machine's newer numpy fails, so pip's resolver would refuse every wheel at once
  python3 -m pip install --no-index --no-deps .whl/*.whl > "$out/wheels.log" 2>&1 || tail -20 "$out/wheels.log"
fi

if want harness; then
  # The torch-free harness (tests/cuda_emu/harness.cpp) for the harness step: nvcc on one core, in the
  # background while the steps before it run; the same nvcc command as the tests' (harness_cases.py).
  python3 -c "
import sys, torch
sys.path.insert(0, 'tests/cuda_emu')
import harness_cases
harness_cases.build_with_nvcc(sys.argv[1], ['{}.{}'.format(*torch.cuda.get_device_capability())])" \
    "$out/harness" > "$out/harness_build.log" 2>&1 &
  harness_build=$!
fi

if want build; then
  echo "== build"
  # setup.py refuses an extension holding its own static libstdc++ (check_linked_runtime: beside
  # torch's it crashed on the first error message formatting a number). One GPU image's CXX, a
  # wrapper around the system g++, linked that way: try CXX on a one-line library first, else g++.
  if [ -n "${CXX:-}" ] && command -v readelf > /dev/null && command -v g++ > /dev/null; then
    probe=$(mktemp -d)
    printf '#include <sstream>\nstd::string f(double d) { std::ostringstream s; s << d; return s.str(); }\n' > "$probe/t.cpp"
    if "$CXX" -shared -fPIC "$probe/t.cpp" -o "$probe/t.so" > /dev/null 2>&1 && ! readelf -d "$probe/t.so" | grep -q 'libstdc++'; then
      echo "CXX=$CXX links libstdc++ statically: building with CXX=g++" | tee "$out/compiler.txt"
      export CXX=g++
    fi
  fi
  MAX_JOBS="${MAX_JOBS:-16}" FORCE_CUDA=1 TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0+PTX}" \
    python3 -m pip install --no-build-isolation --no-deps -e . > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
fi

if want tests; then
echo "== tests (the needs_cuda ones: the CPU ones run in CI; 12 workers when pytest-xdist is there)"
# The C++ tests (tests/infra/test_cpp.py) build with CMake (>= 4 for CUDA with recent torch, with
# SOFTDTW_TORCH_CMAKE_CUDA=1 their CUDA case runs); a machine without cmake leaves them out, loudly.
cpp_tests=()
if ! command -v cmake > /dev/null; then
  echo "no cmake on this machine: tests/infra/test_cpp.py is left out of this run" | tee "$out/cpp_tests_left_out.txt"
  cpp_tests=(--ignore=tests/infra/test_cpp.py)
fi
workers=()
python3 -c "import xdist" 2> /dev/null && workers=(-n "${GPU_CHECK_TEST_WORKERS:-12}")
# GPU_CHECK_PYTEST_ARGS: shell words, as typed (e.g. -k "not test_gpu_runs_what_ci_runs", the
# longest test, which the harness step covers under the sanitizers)
eval "extra=(${GPU_CHECK_PYTEST_ARGS:-})"
SOFTDTW_TORCH_CMAKE_CUDA=1 TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0+PTX}" \
  python3 -m pytest tests -m needs_cuda -ra -q "${workers[@]}" "${cpp_tests[@]}" "${extra[@]}" \
  --junitxml="$out/junit.xml" 2>&1 \
  | tee "$out/tests.log" | tail -30
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if want sanitizer; then
echo "== compute-sanitizer"
sanitize_case='
import torch, softdtw_torch as st
# several 64 x 64 tiles (borders and messages between launches), float64 (opt-in shared memory),
# band, ragged lengths, no-grad forward
for dtype in (torch.float32, torch.float64):
    for fused in (True, False):
        for bw, xl in ((None, None), (3, torch.tensor([130, 17, 1]))):
            x = torch.randn(3, 130, 3, device="cuda", dtype=dtype, requires_grad=True)
            y = torch.randn(3, 70, 3, device="cuda", dtype=dtype, requires_grad=True)
            st.soft_dtw(x, y, gamma=0.1, bandwidth=bw, fused=fused, x_lengths=xl).sum().backward()
            with torch.no_grad():
                st.soft_dtw(x, y, gamma=0.1, bandwidth=bw, fused=fused, x_lengths=xl)
    # second order (double backward), forward mode (the tangent kernels), the checkpointed backward,
    # hard DTW and its paths, the Itakura window, a given cost matrix, alignments, the all-pairs matrix
    x = torch.randn(2, 70, 2, device="cuda", dtype=dtype, requires_grad=True)
    y = torch.randn(2, 66, 2, device="cuda", dtype=dtype, requires_grad=True)
    for fused in (True, False):
        g, = torch.autograd.grad(st.soft_dtw(x, y, gamma=0.5, fused=fused).sum(), x, create_graph=True)
        g.square().sum().backward()
        torch.func.jvp(lambda a: st.soft_dtw(a, y.detach(), gamma=0.5, fused=fused), (x.detach(),),
                       (torch.ones_like(x),))
    st.soft_dtw(x, y, gamma=0.5, checkpoint=True).sum().backward()
    st.soft_dtw(x, y, gamma=0.0).sum().backward()
    st.dtw_path(x.detach(), y.detach(), x_lengths=torch.tensor([70, 41]))
    st.soft_dtw(x, y, gamma=0.5, itakura_max_slope=2.0).sum().backward()
    D = st.pairwise_cost(x, y).detach().requires_grad_()
    st.soft_dtw_from_cost(D, gamma=0.5).sum().backward()
    st.soft_dtw_alignment(x, y, gamma=0.5)
    st.cdist_soft_dtw(x.detach(), y.detach(), gamma=0.5)
from softdtw_torch.rocket import RocketLayer, MiniRocket
layer = RocketLayer(c_in=2, seq_len=50, n_kernels=64, learnable=True, seed=0, ppv_temperature=0.5).cuda()
xr = torch.randn(5, 2, 50, device="cuda", requires_grad=True)
layer(xr, torch.tensor([50, 30, 12, 50, 9], device="cuda")).sum().backward()
MiniRocket(n_kernels=168, random_state=0).fit(torch.randn(6, 2, 40)).transform(torch.randn(6, 2, 40, device="cuda"))
from softdtw_torch.rocket import MultiRocket, HydraLayer
lengths = torch.tensor([40, 25, 12, 40, 30, 10], device="cuda")
MultiRocket(n_kernels=84, random_state=0).fit(torch.randn(6, 2, 40)).transform(torch.randn(6, 2, 40, device="cuda"), lengths)
hydra = HydraLayer(c_in=2, seq_len=40, n_kernels=8, n_groups=4, learnable=True, seed=0).cuda()
xh = torch.randn(6, 2, 40, device="cuda", requires_grad=True)
hydra(xh, lengths).sum().backward()
torch.cuda.synchronize()
print("sanitizer workload done")
'
for tool in memcheck racecheck synccheck initcheck; do
  compute-sanitizer --tool "$tool" --error-exitcode 99 python3 -c "$sanitize_case" > "$out/sanitizer_$tool.log" 2>&1
  code=$?
  echo "$tool exit code $code"; tail -3 "$out/sanitizer_$tool.log"
  [ "$code" -eq 0 ] || status=1
done
fi

if want harness; then
# The torch-free harness, on the cases CI runs under the emulator with its own memcheck and racecheck
# (tests/cuda_emu/test_harness.py).
echo "== compute-sanitizer on the torch-free harness"
wait "$harness_build" || { tail -20 "$out/harness_build.log"; status=1; }
# The cases: written here (which first compiles the emulated ops), or taken
# from GPU_CHECK_HARNESS_CASES, a folder written elsewhere by
# `python tests/cuda_emu/harness_cases.py DIR > DIR/cases.txt` and carried to this machine.
if [ -n "${GPU_CHECK_HARNESS_CASES:-}" ]; then
  rm -rf "$out/harness_cases"; cp -r "$GPU_CHECK_HARNESS_CASES" "$out/harness_cases"
  cp "$out/harness_cases/cases.txt" "$out/harness_cases.txt"
else
  python3 tests/cuda_emu/harness_cases.py "$out/harness_cases" > "$out/harness_cases.txt" 2>&1 || status=1
fi
while read -r name family; do
  for tool in memcheck racecheck synccheck initcheck; do
    mkdir -p "$out/harness_cases/$name/out_$tool"
    compute-sanitizer --tool "$tool" --error-exitcode 99 "$out/harness" "$family" "$out/harness_cases/$name/in" \
      "$out/harness_cases/$name/out_$tool" > "$out/harness_${name}_$tool.log" 2>&1
    code=$?
    echo "harness $name $tool exit code $code"
    [ "$code" -eq 0 ] || { tail -5 "$out/harness_${name}_$tool.log"; status=1; }
  done
done < <(grep -E '^[a-z_0-9]+ [a-z_0-9]+$' "$out/harness_cases.txt")
fi

if want bench; then
  echo "== benchmark"
  python3 benchmarks/bench_gpu.py --markdown "$out/bench_gpu.md" 2>&1 | tee "$out/bench_gpu.log" | tail -40
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if want rocket; then
  # ROCKET / MiniRocket next to aeon (needs aeon's wheel in .whl/ on a machine without network)
  python3 benchmarks/bench_rocket.py --markdown "$out/bench_rocket.md" 2>&1 | tee "$out/bench_rocket.log" | tail -20
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if want profile && command -v ncu > /dev/null; then
  # Nsight Compute on the fused SoftDTW kernels of W1 (d = 64) and W2 (N = M = 4096): the three
  # launches around the middle anti-diagonal of 64 x 64 tiles (the widest), forward and backward:
  # throughput, occupancy, launch shape, scheduler and warp stalls. The first H200 profile (W1's forward)
  # is in docs/design/cuda_kernels.md, "On a GPU".
  echo "== Nsight Compute"
  for shape in "32 512 64" "8 4096 1"; do
    set -- $shape
    for kernel in forward_tile_kernel backward_tile_kernel; do
      log="$out/ncu_${kernel}_B$1_N$2_d$3.log"
      timeout 150 ncu --kernel-name "regex:^$kernel" --launch-skip $(( ($2 + 63) / 64 - 2 )) --launch-count 3 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats python3 -c "
import torch, softdtw_torch as st
x = torch.randn($1, $2, $3, device='cuda', requires_grad=True); y = torch.randn($1, $2, $3, device='cuda', requires_grad=True)
st.soft_dtw(x, y, fused=True).sum().backward()
torch.cuda.synchronize()" > "$log" 2>&1
      echo "ncu $kernel B=$1 N=M=$2 d=$3 exit code $?"
      grep -E "Duration|Compute \(SM\) Throughput|Achieved Occupancy|Waves Per SM|Grid Size" "$log" | head -16
    done
  done
  # W3 (B = 1024, N = M = 128, d = 3) one warp per pair: the forward's and the backward's single
  # launches. The model of docs/design/cuda_kernels.md ("One warp per pair") predicts both
  # issue-bound at 2 warps per scheduler, about 143 us and 113 us.
  log="$out/ncu_pair_kernels_W3.log"
  timeout 150 ncu --kernel-name "regex:^pair_(forward|backward)_kernel" --launch-count 2 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats python3 -c "
import torch, softdtw_torch as st
x = torch.randn(1024, 128, 3, device='cuda', requires_grad=True); y = torch.randn(1024, 128, 3, device='cuda', requires_grad=True)
st.soft_dtw(x, y, fused=True).sum().backward()
torch.cuda.synchronize()" > "$log" 2>&1
  echo "ncu pair_forward_kernel, pair_backward_kernel W3 exit code $?"
  grep -E "Duration|Compute \(SM\) Throughput|Achieved Occupancy|Issued Warp|Waves Per SM|Grid Size" "$log" | head -32
  # MiniRocket's and MultiRocket's one-channel kernels on the synthetic 1,000 x 1,000 set: one launch
  # of MiniRocket's (10,000 features), then MultiRocket's two (series, difference; 6,250 kernels).
  # The models of docs/design/rocket.md ("On the GPU", sections 7 and 8) predict 1.42-2.4 ms for
  # MiniRocket's launch and 10.9-18 ms for MultiRocket's two together.
  log="$out/ncu_rocket_dilation_kernels.log"
  timeout 200 ncu --kernel-name "regex:dilation_kernel" --launch-count 3 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats python3 -c "
import torch, softdtw_torch
ops = torch.ops.softdtw_torch
x = torch.randn(1000, 1, 1000, generator=torch.Generator().manual_seed(0)).cuda()
ops.minirocket_transform(x, *ops.minirocket_fit(x, 10000, 32, 0), None)
p = ops.multirocket_fit(x, 6250, 32, 0)
ops.multirocket_transform(x, *p[:5], *p[7:], None)
torch.cuda.synchronize()" > "$log" 2>&1
  echo "ncu MiniRocket and MultiRocket dilation_kernel exit code $?"
  grep -E "Duration|Compute \(SM\) Throughput|Achieved Occupancy|Issued Warp|Waves Per SM|Grid Size" "$log" | head -24
fi

if want peers; then
  echo "== side by side with the peers (BGU sdtw-cuda-torch, pysdtw, Maghoumi)"
  # no workload starts after this; 30 s stay for the one in flight and the report
  left=$(( ${GPU_CHECK_BUDGET_S:-570} - SECONDS - 30 ))
  [ "$left" -ge 60 ] || left=60
  # exit status 1 only when one of our own rows fails or disagrees; a failing peer is a row
  python3 benchmarks/bench_gpu_peers.py --deadline-s "$left" --markdown "$out/bench_gpu_peers.md" \
    --plot "$out/bench_gpu_peers.png" 2>&1 | tee "$out/bench_gpu_peers.log" | tail -40
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
exit "$status"
