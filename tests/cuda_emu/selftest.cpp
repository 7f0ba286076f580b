// Self-test of cuda_emu.h: CUDA-style kernels run under the emulator, checked against values
// computed on the host; errors the emulator must catch are run in child processes (re-exec of this
// program with --abort-case NAME) that must abort with the expected message.
// Build: g++ -std=c++20 -O1 -pthread selftest.cpp -o selftest; prints a summary line, exit 0 = pass.
#define SDTW_CUDA_EMULATION 1
#include "cuda_emu.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

int g_checks = 0;
int g_failures = 0;

void check(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok) {
    ++g_failures;
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  }
}

template <class T>
std::string str(T value) {
  return std::to_string(value);
}

// ---------------------------------------------------------------------------------------------
// Kernels.

__device__ inline unsigned linear_thread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

template <class T>
__device__ T shuffle_input(unsigned global_thread) {
  return static_cast<T>(global_thread) * static_cast<T>(1.5) + static_cast<T>(0.25);
}

// One output row per shuffle mode, each row indexed by global thread.
template <class T>
__global__ void shuffle_kernel(T* out, int width, int src_lane, unsigned delta, int lane_mask) {
  const unsigned total = blockDim.x * gridDim.x;
  const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  const T v = shuffle_input<T>(g);
  out[0 * total + g] = __shfl_sync(0xffffffffu, v, src_lane, width);
  out[1 * total + g] = __shfl_up_sync(0xffffffffu, v, delta, width);
  out[2 * total + g] = __shfl_down_sync(0xffffffffu, v, delta, width);
  out[3 * total + g] = __shfl_xor_sync(0xffffffffu, v, lane_mask, width);
}

template <class T>
void test_shuffles(const char* type_name) {
  const unsigned block = 64, grid = 3, total = block * grid;
  std::vector<T> out(4 * total);
  for (int width : {32, 16, 8, 4, 2, 1}) {
    for (int src_lane : {0, 5, 37, -1}) {
      const unsigned delta = static_cast<unsigned>(src_lane < 0 ? 3 : src_lane % 9);
      const int lane_mask = (src_lane & 31) | 1;
      std::fill(out.begin(), out.end(), T(-7));
      emu::launch(dim3(grid), dim3(block), 0, shuffle_kernel<T>, out.data(), width, src_lane, delta, lane_mask);
      bool ok = true;
      for (unsigned g = 0; g < total; ++g) {
        const unsigned warp_base = g - g % 32, lane = g % 32, in_segment = lane % width;
        const unsigned segment = lane - in_segment;
        const int src_mod = ((src_lane % width) + width) % width;
        const unsigned idx_src = segment + src_mod;
        const unsigned up_src = in_segment >= delta ? lane - delta : lane;
        const unsigned down_src = in_segment + delta < static_cast<unsigned>(width) ? lane + delta : lane;
        const unsigned x = lane ^ static_cast<unsigned>(lane_mask);
        const unsigned xor_src = x / width <= lane / width ? x : lane;  // later segments unreadable
        ok &= out[0 * total + g] == shuffle_input<T>(warp_base + idx_src);
        ok &= out[1 * total + g] == shuffle_input<T>(warp_base + up_src);
        ok &= out[2 * total + g] == shuffle_input<T>(warp_base + down_src);
        ok &= out[3 * total + g] == shuffle_input<T>(warp_base + xor_src);
      }
      check(ok, std::string("shuffles ") + type_name + " width " + str(width) + " src " + str(src_lane) + " delta " +
                    str(delta) + " xor " + str(lane_mask));
    }
  }
}

// 64-bit integers and bools go through the same path as the floating-point values.
__global__ void shuffle_other_types_kernel(long long* out_ll, int64_t* out_i64, unsigned long long* out_ull,
                                           int* out_bool, unsigned* out_u) {
  const unsigned t = threadIdx.x;
  const long long big = (1ll << 40) + t;
  out_ll[t] = __shfl_down_sync(0xffffffffu, big, 1);
  out_i64[t] = __shfl_xor_sync(0xffffffffu, static_cast<int64_t>(-big), 1);
  out_ull[t] = __shfl_sync(0xffffffffu, static_cast<unsigned long long>(big) << 20, 31);
  out_bool[t] = __shfl_up_sync(0xffffffffu, t % 3 == 0, 1);
  out_u[t] = __shfl_sync(0xffffffffu, t * 3u, (t + 1) % 32);
}

void test_shuffle_other_types() {
  std::vector<long long> ll(64);
  std::vector<int64_t> i64(64);
  std::vector<unsigned long long> ull(64);
  std::vector<int> b(64);
  std::vector<unsigned> u(64);
  emu::launch(dim3(1), dim3(64), 0, shuffle_other_types_kernel, ll.data(), i64.data(), ull.data(), b.data(), u.data());
  bool ok = true;
  for (unsigned t = 0; t < 64; ++t) {
    const unsigned lane = t % 32, base = t - lane;
    const auto big = [](unsigned s) { return (1ll << 40) + s; };
    ok &= ll[t] == big(lane == 31 ? t : t + 1);
    ok &= i64[t] == -big(base + (lane ^ 1));
    ok &= ull[t] == static_cast<unsigned long long>(big(base + 31)) << 20;
    ok &= b[t] == ((lane == 0 ? t : t - 1) % 3 == 0);
    ok &= u[t] == (base + (lane + 1) % 32) * 3u;
  }
  check(ok, "shuffles of long long, int64_t, unsigned long long, bool, unsigned");
}

// Inclusive warp prefix sum (Hillis-Steele by __shfl_up_sync), for int and float.
__global__ void warp_scan_kernel(const int* in, int* out_int, float* out_float) {
  const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x % warpSize;
  int s = in[g];
  float f = static_cast<float>(in[g]) * 0.5f;
  for (unsigned offset = 1; offset < 32; offset *= 2) {
    const int other = __shfl_up_sync(0xffffffffu, s, offset);
    const float other_f = __shfl_up_sync(0xffffffffu, f, offset);
    if (lane >= offset) {
      s += other;
      f += other_f;
    }
  }
  out_int[g] = s;
  out_float[g] = f;
}

void test_warp_scan() {
  const unsigned block = 128, grid = 5, total = block * grid;
  std::vector<int> in(total), out(total);
  std::vector<float> out_f(total);
  for (unsigned i = 0; i < total; ++i) in[i] = static_cast<int>((i * 7919u) % 23) - 11;
  emu::launch(dim3(grid), dim3(block), 0, warp_scan_kernel, in.data(), out.data(), out_f.data());
  bool ok = true;
  for (unsigned w = 0; w < total; w += 32) {
    int s = 0;
    for (unsigned l = 0; l < 32; ++l) {
      s += in[w + l];
      ok &= out[w + l] == s && out_f[w + l] == 0.5f * static_cast<float>(s);
    }
  }
  check(ok, "warp inclusive prefix sum by __shfl_up_sync");
}

// Block sum in dynamic shared memory; thread 0 also reports what the shared memory looked like.
__global__ void block_reduce_kernel(const double* in, double* sums, int* smem_report, std::size_t expected_size) {
  double* partial = reinterpret_cast<double*>(emu::dynamic_shared_memory());
  const unsigned t = threadIdx.x;
  if (t == 0) {
    const unsigned char* bytes = emu::dynamic_shared_memory();
    bool all_ff = true;
    for (std::size_t i = 0; i < emu::dynamic_shared_memory_size(); ++i) all_ff &= bytes[i] == 0xFF;
    smem_report[3 * blockIdx.x + 0] = all_ff && isnan(partial[blockDim.x - 1]);
    smem_report[3 * blockIdx.x + 1] = reinterpret_cast<std::uintptr_t>(bytes) % 16 == 0;
    smem_report[3 * blockIdx.x + 2] = emu::dynamic_shared_memory_size() == expected_size;
  }
  __syncthreads();  // the report read the garbage before anyone writes
  partial[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) sums[blockIdx.x] = partial[0];
}

void test_block_reduce(const char* label) {
  const unsigned block = 256, grid = 37;
  std::vector<double> in(block * grid), sums(grid, -1.0);
  std::vector<int> report(3 * grid, 0);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>(i % 101) * 0.25;  // exact in double
  const std::size_t smem = block * sizeof(double);
  emu::launch(dim3(grid), dim3(block), smem, block_reduce_kernel, in.data(), sums.data(), report.data(), smem);
  bool sums_ok = true, garbage_ok = true, aligned = true, sized = true;
  for (unsigned b = 0; b < grid; ++b) {
    double expected = 0;
    for (unsigned t = 0; t < block; ++t) expected += in[b * block + t];
    sums_ok &= sums[b] == expected;
    garbage_ok &= report[3 * b] == 1;
    aligned &= report[3 * b + 1] == 1;
    sized &= report[3 * b + 2] == 1;
  }
  check(sums_ok, std::string("block reduction with shared memory and __syncthreads ") + label);
  check(garbage_ok, std::string("dynamic shared memory filled with 0xFF (NaN) at block start ") + label);
  check(aligned, std::string("dynamic shared memory 16-byte aligned ") + label);
  check(sized, std::string("dynamic_shared_memory_size() ") + label);
}

__global__ void barrier_reductions_kernel(int* out) {
  const unsigned t = threadIdx.x;
  const unsigned b = blockIdx.x;
  const int only_one = __syncthreads_or(t == 77 && b == 1);
  const int none = __syncthreads_or(0);
  const int all = __syncthreads_and(1);
  const int not_all = __syncthreads_and(t != 100);
  const int count = __syncthreads_count(t % 7 == b);
  if (t == 0) {
    out[5 * b + 0] = only_one;
    out[5 * b + 1] = none;
    out[5 * b + 2] = all;
    out[5 * b + 3] = not_all;
    out[5 * b + 4] = count;
  }
}

// The threads past 64 return before the barrier: arrive-and-drop, the rest still meet.
__global__ void early_exit_barrier_kernel(int* out) {
  if (threadIdx.x >= 64) return;
  const int count = __syncthreads_count(1);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = count;
}

void test_barrier_reductions() {
  const unsigned grid = 3;
  std::vector<int> out(5 * grid, -1);
  emu::launch(dim3(grid), dim3(160), 0, barrier_reductions_kernel, out.data());
  bool ok = true;
  for (unsigned b = 0; b < grid; ++b) {
    int count = 0;
    for (unsigned t = 0; t < 160; ++t) count += t % 7 == b;
    ok &= out[5 * b + 0] == (b == 1) && out[5 * b + 1] == 0 && out[5 * b + 2] == 1 && out[5 * b + 3] == 0 &&
          out[5 * b + 4] == count;
  }
  check(ok, "__syncthreads_or/_and/_count");
  std::vector<int> counts(2, -1);
  emu::launch(dim3(2), dim3(256), 0, early_exit_barrier_kernel, counts.data());
  check(counts[0] == 64 && counts[1] == 64, "returned threads count as arrived at __syncthreads");
}

// Warps are 32 consecutive linear ids, x fastest: lane 0's linear id and threadIdx, seen by each lane.
__global__ void block_shape_kernel(unsigned* out) {
  const unsigned t = linear_thread();
  const unsigned n = blockDim.x * blockDim.y * blockDim.z;
  const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned* row = out + 6 * (b * n + t);
  row[0] = threadIdx.x;
  row[1] = threadIdx.y;
  row[2] = threadIdx.z;
  row[3] = __shfl_sync(0xffffffffu, t, 0);
  row[4] = __shfl_sync(0xffffffffu, threadIdx.y, 0);
  row[5] = blockIdx.x | blockIdx.y << 8 | blockIdx.z << 16;
}

void test_block_shapes() {
  const dim3 grid(2, 3, 2);
  const unsigned blocks = grid.x * grid.y * grid.z;
  for (dim3 block : {dim3(32, 4), dim3(16, 4), dim3(8, 4, 2), dim3(64)}) {
    const unsigned n = block.x * block.y * block.z;
    std::vector<unsigned> out(6 * blocks * n, 0xdeadbeef);
    emu::launch(grid, block, 0, block_shape_kernel, out.data());
    bool ok = true;
    for (unsigned b = 0; b < blocks; ++b) {
      const unsigned bx = b % grid.x, by = (b / grid.x) % grid.y, bz = b / (grid.x * grid.y);
      for (unsigned t = 0; t < n; ++t) {
        const unsigned* row = out.data() + 6 * (b * n + t);
        const unsigned lane0 = t - t % 32;
        ok &= row[0] == t % block.x && row[1] == (t / block.x) % block.y && row[2] == t / (block.x * block.y);
        ok &= row[3] == lane0 && row[4] == (lane0 / block.x) % block.y;
        ok &= row[5] == (bx | by << 8 | bz << 16);
      }
    }
    check(ok, "threadIdx/blockIdx and warp layout for block (" + str(block.x) + "," + str(block.y) + "," +
                  str(block.z) + ") grid (2,3,2)");
  }
}

__global__ void vote_kernel(unsigned* out) {
  const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
  // warp 0: odd lanes; warp 1: lane 3 only; warp 2: every lane; warp 3: no lane
  const bool p = warp == 0 ? lane % 2 == 1 : warp == 1 ? lane == 3 : warp == 2;
  const unsigned ballot = __ballot_sync(0xffffffffu, p);
  const int any = __any_sync(0xffffffffu, p);
  const int all = __all_sync(0xffffffffu, p);
  __syncwarp();
  if (lane == 7) {
    out[3 * warp + 0] = ballot;
    out[3 * warp + 1] = static_cast<unsigned>(any);
    out[3 * warp + 2] = static_cast<unsigned>(all);
  }
}

void test_votes() {
  std::vector<unsigned> out(12, 99);
  emu::launch(dim3(1), dim3(128), 0, vote_kernel, out.data());
  const std::vector<unsigned> expected = {0xaaaaaaaau, 1, 0, 0x8u, 1, 0, 0xffffffffu, 1, 1, 0, 0, 0};
  check(out == expected, "__ballot_sync/__any_sync/__all_sync");
}

__global__ void record_order_kernel(unsigned* counter, unsigned* position) {
  if (threadIdx.x == 0) position[blockIdx.x] = atomicAdd(counter, 1u);
}

std::vector<unsigned> block_execution_order(unsigned grid) {
  unsigned counter = 0;
  std::vector<unsigned> position(grid, ~0u);
  emu::launch(dim3(grid), dim3(32), 0, record_order_kernel, &counter, position.data());
  return position;
}

void test_block_order_and_launch_count() {
  emu::reset_launch_count();
  check(emu::launches() == 0, "reset_launch_count()");
  const std::vector<unsigned> first = block_execution_order(64);
  const std::vector<unsigned> again = block_execution_order(64);
  std::vector<unsigned> sorted = first, identity(64);
  std::sort(sorted.begin(), sorted.end());
  std::iota(identity.begin(), identity.end(), 0u);
  check(sorted == identity, "every block runs exactly once");
  check(first != identity, "blocks run in a scrambled order (CUDA_EMU_SEED=1)");
  check(first == again, "the block order is reproducible for a seed");
  setenv("CUDA_EMU_SEED", "0", 1);
  check(block_execution_order(64) == identity, "CUDA_EMU_SEED=0 runs blocks in order");
  setenv("CUDA_EMU_SEED", "7", 1);
  check(block_execution_order(64) != first, "another seed, another order");
  unsetenv("CUDA_EMU_SEED");
  check(emu::launches() == 4, "launches() counts launches (" + str(emu::launches()) + ")");
}

__global__ void overlap_kernel(std::atomic<int>* active, std::atomic<int>* max_active) {
  if (threadIdx.x == 0) {
    const int now = active->fetch_add(1) + 1;
    int seen = max_active->load();
    while (seen < now && !max_active->compare_exchange_weak(seen, now)) {
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) __nanosleep(20'000'000);  // 20 ms: blocks that can overlap will
  __syncthreads();
  if (threadIdx.x == 0) active->fetch_sub(1);
}

void test_concurrent_blocks() {
  setenv("CUDA_EMU_CONCURRENT_BLOCKS", "4", 1);
  test_block_reduce("(4 concurrent blocks)");
  std::atomic<int> active{0}, max_active{0};
  emu::launch(dim3(8), dim3(64), 0, overlap_kernel, &active, &max_active);
  check(max_active.load() > 1, "CUDA_EMU_CONCURRENT_BLOCKS=4 runs blocks at the same time");
  unsetenv("CUDA_EMU_CONCURRENT_BLOCKS");
  std::atomic<int> active1{0}, max_active1{0};
  emu::launch(dim3(4), dim3(64), 0, overlap_kernel, &active1, &max_active1);
  check(max_active1.load() == 1, "blocks run one at a time by default");
}

__global__ void atomics_kernel(float* f, double* d, int* i, unsigned long long* ull, int64_t* i64, int* imax) {
  atomicAdd(f, 0.5f);
  atomicAdd(d, 0.25);
  atomicAdd(i, -1);
  atomicAdd(ull, 3ull);
  atomicAdd(i64, static_cast<int64_t>(1) << 33);
  atomicMax(imax, static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x));
}

void test_atomics() {
  float f = 0;
  double d = 0;
  int i = 0, imax = -1;
  unsigned long long ull = 0;
  int64_t i64 = 0;
  emu::launch(dim3(4), dim3(256), 0, atomics_kernel, &f, &d, &i, &ull, &i64, &imax);
  check(f == 512.0f && d == 256.0 && i == -1024 && ull == 3072ull && i64 == (static_cast<int64_t>(1024) << 33) &&
            imax == 1023,
        "atomicAdd float/double/int/unsigned long long/int64_t, atomicMax");
}

// x and y are kernel arguments so that neither side is constant-folded (by MPFR, not libm).
__global__ void math_kernel(float* out_f, double* out_d, float x, double y) {
  if (threadIdx.x != 0) return;
  static_assert(std::is_same_v<decltype(exp(x)), float>, "exp(float) stays float, as in device code");
  static_assert(std::is_same_v<decltype(fmin(x, x)), float>, "fmin(float, float) stays float");
  out_f[0] = expf(x) + exp2f(x) + log1pf(x) + log2f(x) + logf(x) + sqrtf(x) + fabsf(-x);
  out_f[1] = fminf(x, 2.0f) + fmaxf(x, 2.0f) + exp(x) + log(x) + log1p(x) + exp2(x);
  out_f[2] = __expf(x) + __logf(x) + __fdividef(x, 3.0f) + __frcp_rn(x) + __saturatef(1.5f) + __saturatef(NAN) +
             __saturatef(-2.0f) + __saturatef(x);
  out_f[3] = static_cast<float>(isfinite(INFINITY)) + static_cast<float>(isnan(NAN)) +
             static_cast<float>(isinf(-INFINITY)) + static_cast<float>(isfinite(x));
  out_f[4] = static_cast<float>(__popc(0xf0f0u) + __ffs(8) + __clz(1) + __ffs(0));
  out_d[0] = exp(y) + log(y) + log1p(y) + log2(y) + exp2(y) + fmin(y, 2.0) + fmax(y, 2.0) + sqrt(y) + fabs(-y);
  out_d[1] = static_cast<double>(isfinite(y)) + min(y, 0.5) + max(3, 4) + __ldg(&y);
}

void test_math() {
  std::vector<float> f(5);
  std::vector<double> d(2);
  volatile float x_source = 0.75f;
  volatile double y_source = 0.75;
  const float x = x_source;
  const double y = y_source;
  emu::launch(dim3(1), dim3(32), 0, math_kernel, f.data(), d.data(), x, y);
  const float f0 = std::exp(x) + std::exp2(x) + std::log1p(x) + std::log2(x) + std::log(x) + std::sqrt(x) + x;
  const float f1 = x + 2.0f + std::exp(x) + std::log(x) + std::log1p(x) + std::exp2(x);
  const float f2 = std::exp(x) + std::log(x) + x / 3.0f + 1.0f / x + 1.0f + 0.0f + 0.0f + x;
  check(f[0] == f0 && f[1] == f1 && f[2] == f2, "float math functions and fast intrinsics resolve unqualified");
  check(f[3] == 3.0f && f[4] == 8.0f + 4.0f + 31.0f + 0.0f, "isfinite/isnan/isinf, __popc/__ffs/__clz");
  const double d0 = std::exp(y) + std::log(y) + std::log1p(y) + std::log2(y) + std::exp2(y) + y + 2.0 +
                    std::sqrt(y) + y;
  check(d[0] == d0 && d[1] == 1.0 + 0.5 + 4.0 + y, "double math functions resolve unqualified");
}

// The worst-case intrinsics sit exactly at CUDA's documented bounds, deterministically, and keep
// the exact special cases.
void test_worst_case_intrinsics() {
  bool at_bound = true, deterministic = true;
  bool saw_up_exp = false, saw_down_exp = false, saw_up_log = false, saw_down_log = false;
  for (int k = 0; k < 200; ++k) {
    const float x = -30.0f + 0.173f * static_cast<float>(k);
    const float e = emu::worst_case_exp2f(x), exact_e = std::exp2(x);
    const float two_up = std::nextafter(std::nextafter(exact_e, INFINITY), INFINITY);
    const float two_down = std::nextafter(std::nextafter(exact_e, -INFINITY), -INFINITY);
    at_bound &= e == two_up || e == two_down;
    saw_up_exp |= e == two_up;
    saw_down_exp |= e == two_down;
    const float s = 1.0f + 0.005f * static_cast<float>(k);  // [1, 2): absolute 2^-22
    const double l_err = static_cast<double>(emu::worst_case_log2f_intrinsic(s)) - static_cast<double>(std::log2(s));
    at_bound &= std::fabs(std::fabs(l_err) - 0x1p-22) < 1e-9;
    saw_up_log |= l_err > 0;
    saw_down_log |= l_err < 0;
    deterministic &= emu::worst_case_exp2f(x) == e && emu::worst_case_log2f_intrinsic(s) == emu::worst_case_log2f_intrinsic(s);
  }
  check(at_bound && deterministic && saw_up_exp && saw_down_exp && saw_up_log && saw_down_log,
        "worst_case_exp2f/log2f_intrinsic err by exactly the documented bound, both ways, deterministically");
  check(emu::worst_case_exp2f(-INFINITY) == 0.0f && std::isinf(emu::worst_case_exp2f(INFINITY)) &&
            std::isnan(emu::worst_case_log2f_intrinsic(NAN)),
        "worst_case intrinsics keep 2^-inf = 0, 2^inf = inf, NaN");
}

// Thread 37 of block 1 throws while the others wait at a barrier: launch() rethrows, nothing hangs.
// Lanes run in turn between primitives: reading a warp-mate's shared-memory write without
// __syncwarp sees the garbage fill for some lanes; with __syncwarp every lane sees the write.
template <bool kSyncwarp>
__global__ void neighbour_kernel(float* out) {
  float* slot = reinterpret_cast<float*>(emu::dynamic_shared_memory());
  const unsigned lane = threadIdx.x % 32;
  slot[threadIdx.x] = static_cast<float>(threadIdx.x);
  if (kSyncwarp) __syncwarp();
  out[threadIdx.x] = slot[threadIdx.x - lane + (lane + 1) % 32];
}

void test_missing_syncwarp_is_visible() {
  std::vector<float> out(64);
  emu::launch(dim3(1), dim3(64), 64 * sizeof(float), neighbour_kernel<true>, out.data());
  bool ok = true;
  for (unsigned t = 0; t < 64; ++t) ok &= out[t] == static_cast<float>(t - t % 32 + (t % 32 + 1) % 32);
  check(ok, "warp-mates' shared-memory writes are visible after __syncwarp");
  emu::launch(dim3(1), dim3(64), 64 * sizeof(float), neighbour_kernel<false>, out.data());
  check(std::any_of(out.begin(), out.end(), [](float v) { return std::isnan(v); }),
        "a missing __syncwarp shows as NaN (uninitialised shared memory) in some lanes");
}

// Warps run concurrently: warp 1 may spin on a flag that warp 0 sets, without a barrier.
__global__ void inter_warp_flag_kernel(int* flag, int* seen) {
  if (threadIdx.x / 32 == 0) {
    if (threadIdx.x == 0) std::atomic_ref<int>(*flag).store(42);
  } else {
    int value = 0;
    while ((value = std::atomic_ref<int>(*flag).load()) == 0) {
    }
    seen[threadIdx.x - 32] = value;
  }
}

void test_inter_warp_spin_wait() {
  int flag = 0;
  std::vector<int> seen(32);
  emu::launch(dim3(1), dim3(64), 0, inter_warp_flag_kernel, &flag, seen.data());
  check(std::all_of(seen.begin(), seen.end(), [](int v) { return v == 42; }),
        "a warp can spin-wait on a flag another warp sets");
}

// 1024-thread blocks (32 warps) and a lambda as the kernel.
void test_large_block_and_lambda() {
  const unsigned grid = 3;
  std::vector<int> sums(grid, -1);
  auto kernel = [](int* out) {
    int* partial = reinterpret_cast<int*>(emu::dynamic_shared_memory());
    int v = static_cast<int>(threadIdx.x);
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
      int w = partial[threadIdx.x];
      for (int offset = 16; offset > 0; offset /= 2) w += __shfl_down_sync(0xffffffffu, w, offset);
      if (threadIdx.x == 0) out[blockIdx.x] = w + static_cast<int>(blockIdx.x);
    }
  };
  emu::launch(dim3(grid), dim3(1024), 32 * sizeof(int), kernel, sums.data());
  check(sums[0] == 523776 && sums[1] == 523777 && sums[2] == 523778, "1024-thread blocks, lambda kernel");
}

__global__ void throwing_kernel(int* reached) {
  if (blockIdx.x == 1 && threadIdx.x == 37) throw std::runtime_error("kernel exception from thread 37");
  __syncthreads();
  const float v = __shfl_down_sync(0xffffffffu, 1.0f, 1);
  if (v == 1.0f && threadIdx.x == 0) atomicAdd(reached, 1);
}

__global__ void deadlock_kernel(float* out);

__global__ void wrong_mask_kernel(float* out) { out[threadIdx.x] = __shfl_sync(0x0000ffffu, 1.0f, 0); }

void test_errors_in_process() {
  int reached = 0;
  std::string message;
  const auto start = std::chrono::steady_clock::now();
  try {
    emu::launch(dim3(3), dim3(64), 0, throwing_kernel, &reached);
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  check(message == "kernel exception from thread 37", "launch() rethrows a kernel exception (got '" + message + "')");
  check(seconds < 5.0, "a kernel exception does not leave threads waiting for the timeout");

  setenv("CUDA_EMU_ON_ERROR", "throw", 1);
  std::vector<float> out(32);
  message.clear();
  try {
    emu::launch(dim3(1), dim3(32), 0, wrong_mask_kernel, out.data());
  } catch (const emu::EmulationError& e) {
    message = e.what();
  }
  check(message.find("__shfl_sync called with mask 0x0000ffff") != std::string::npos,
        "CUDA_EMU_ON_ERROR=throw turns an emulator error into emu::EmulationError (got '" + message + "')");
  message.clear();
  try {
    emu::launch(dim3(1), dim3(48), 0, wrong_mask_kernel, out.data());
  } catch (const emu::EmulationError& e) {
    message = e.what();
  }
  check(message.find("multiple of 32") != std::string::npos, "a block of 48 threads is refused");
  setenv("CUDA_EMU_TIMEOUT_S", "1", 1);
  message.clear();
  try {
    emu::launch(dim3(1), dim3(64), sizeof(int), deadlock_kernel, out.data());
  } catch (const emu::EmulationError& e) {
    message = e.what();
  }
  check(message.find("deadlock in __syncthreads") != std::string::npos,
        "CUDA_EMU_ON_ERROR=throw: a deadlock throws and the spinning warp unwinds (got '" + message + "')");
  unsetenv("CUDA_EMU_TIMEOUT_S");
  unsetenv("CUDA_EMU_ON_ERROR");
}

// ---------------------------------------------------------------------------------------------
// Errors that must abort the process, each run in a child.

__global__ void early_return_kernel(float* out) {
  if (threadIdx.x % 32 == 5) return;  // lane 5 leaves its warp-mates alone in the shuffle
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1.0f, 1);
}

__global__ void mixed_primitives_kernel(float* out) {
  if (threadIdx.x % 32 < 16) {
    out[threadIdx.x] = __shfl_up_sync(0xffffffffu, 1.0f, 1);
  } else {
    __syncwarp();
  }
}

__global__ void barrier_in_divergent_warp_kernel(float* out) {
  if (threadIdx.x == 0) {
    __syncthreads();
  } else {
    out[threadIdx.x] = __shfl_sync(0xffffffffu, 1.0f, 0);
  }
}

// Warp 0 waits at the barrier; warp 1 spins on warp primitives for a flag set after that barrier.
__global__ void deadlock_kernel(float* out) {
  volatile int* flag = reinterpret_cast<volatile int*>(emu::dynamic_shared_memory());
  if (threadIdx.x == 0) *flag = 0;
  __syncthreads();
  if (threadIdx.x < 32) {
    __syncthreads();
    if (threadIdx.x == 0) *flag = 1;
  } else {
    while (!__any_sync(0xffffffffu, *flag)) {
    }
  }
  out[threadIdx.x] = 1.0f;
}

// Lane 0 waits for lane 1, which only runs when lane 0 reaches a primitive: the watchdog's case.
__global__ void stuck_lane_kernel(float* out) {
  volatile float* flag = reinterpret_cast<volatile float*>(out);
  if (threadIdx.x == 0) {
    while (flag[1] != 1.0f) {
    }
  } else if (threadIdx.x == 1) {
    flag[1] = 1.0f;
  }
}

// Two halves of the block wait at two different __syncthreads: synccheck's case.
__global__ void barrier_call_sites_kernel(float* out) {
  if (threadIdx.x < 32) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1.0f;
}

__global__ void shared_memory_kernel(float* out) { out[threadIdx.x] = 1.0f; }

// Launch limits: cudaFuncSetAttribute refuses more than the architecture allows, and a launch
// above 48 KiB without opting in, or above the opt-in, is refused.
void test_launch_limits() {
  setenv("CUDA_EMU_ARCH", "75", 1);
  check(cudaFuncSetAttribute(shared_memory_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 65 * 1024) ==
            cudaErrorInvalidValue,
        "cudaFuncSetAttribute above sm_75's 64 KiB is refused");
  int limit = 0;
  check(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess &&
            limit == 64 * 1024,
        "sm_75's opt-in limit is 64 KiB");
  setenv("CUDA_EMU_ARCH", "90", 1);
  check(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess &&
            limit == 227 * 1024,
        "sm_90's opt-in limit is 227 KiB");
  unsetenv("CUDA_EMU_ARCH");
  std::vector<float> out(64);
  check(cudaFuncSetAttribute(shared_memory_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 60 * 1024) ==
            cudaSuccess,
        "cudaFuncSetAttribute within sm_75's limit");
  emu::launch(dim3(1), dim3(32), 60 * 1024, shared_memory_kernel, out.data());
  check(out[0] == 1.0f, "a launch with 60 KiB of shared memory after opting in runs");
}

int run_abort_case(const std::string& name) {
  std::vector<float> out(64);
  if (name == "wrong_mask") emu::launch(dim3(1), dim3(32), 0, wrong_mask_kernel, out.data());
  if (name == "early_return") emu::launch(dim3(2), dim3(64), 0, early_return_kernel, out.data());
  if (name == "mixed_primitives") emu::launch(dim3(1), dim3(32), 0, mixed_primitives_kernel, out.data());
  if (name == "barrier_in_divergent_warp") emu::launch(dim3(1), dim3(32), 0, barrier_in_divergent_warp_kernel, out.data());
  if (name == "deadlock") emu::launch(dim3(1), dim3(64), sizeof(int), deadlock_kernel, out.data());
  if (name == "stuck_lane") emu::launch(dim3(1), dim3(32), 0, stuck_lane_kernel, out.data());
  if (name == "block_not_whole_warps") emu::launch(dim3(1), dim3(48), 0, wrong_mask_kernel, out.data());
  if (name == "barrier_call_sites") emu::launch(dim3(1), dim3(64), 0, barrier_call_sites_kernel, out.data());
  if (name == "shared_memory_without_opt_in") {
    emu::launch(dim3(1), dim3(32), 49 * 1024, wrong_mask_kernel, out.data());
  }
  if (name == "shared_memory_above_architecture") {
    emu::launch(dim3(1), dim3(32), 65 * 1024, wrong_mask_kernel, out.data());
  }
  if (name == "grid_beyond_limits") {
    emu::launch(emu::LaunchShape{1, 65536, 1}, dim3(32), 0, wrong_mask_kernel, out.data());
  }
  if (name == "block_beyond_limits") emu::launch(dim3(1), dim3(1056), 0, wrong_mask_kernel, out.data());
  std::fprintf(stderr, "abort case %s did not abort\n", name.c_str());
  return 3;
}

struct ChildResult {
  bool aborted;
  std::string stderr_text;
  double seconds;
};

ChildResult run_child(const std::string& case_name, const char* timeout_s) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) std::abort();
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    setenv("CUDA_EMU_TIMEOUT_S", timeout_s, 1);
    execl("/proc/self/exe", "selftest", "--abort-case", case_name.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, text, seconds};
}

void expect_abort(const std::string& case_name, const std::string& expected_message, const char* timeout_s = "60",
                  double max_seconds = 10.0) {
  const ChildResult r = run_child(case_name, timeout_s);
  const bool ok = r.aborted && r.stderr_text.find(expected_message) != std::string::npos && r.seconds < max_seconds;
  check(ok, "abort case " + case_name + ": expected abort with '" + expected_message + "' within " + str(max_seconds) +
                " s, got aborted=" + str(r.aborted) + " after " + str(r.seconds) + " s, stderr: " + r.stderr_text);
  std::printf("  abort case %-26s %.2f s: %s", case_name.c_str(), r.seconds,
              r.stderr_text.empty() ? "(no message)\n" : r.stderr_text.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--abort-case") return run_abort_case(argv[2]);
  // The tests set these themselves: start from the defaults whatever the caller's environment.
  for (const char* name :
       {"CUDA_EMU_SEED", "CUDA_EMU_CONCURRENT_BLOCKS", "CUDA_EMU_ON_ERROR", "CUDA_EMU_TIMEOUT_S", "CUDA_EMU_ARCH"}) {
    unsetenv(name);
  }
  const auto start = std::chrono::steady_clock::now();

  test_shuffles<float>("float");
  test_shuffles<double>("double");
  test_shuffle_other_types();
  test_warp_scan();
  test_block_reduce("(sequential blocks)");
  test_barrier_reductions();
  test_block_shapes();
  test_votes();
  test_block_order_and_launch_count();
  test_concurrent_blocks();
  test_atomics();
  test_math();
  test_worst_case_intrinsics();
  test_missing_syncwarp_is_visible();
  test_inter_warp_spin_wait();
  test_large_block_and_lambda();
  test_errors_in_process();
  test_launch_limits();

  expect_abort("wrong_mask", "cuda_emu: __shfl_sync called with mask 0x0000ffff");
  expect_abort("early_return", "returned from the kernel");
  expect_abort("mixed_primitives", "cuda_emu: divergent warp");
  expect_abort("barrier_in_divergent_warp", "cuda_emu: deadlock in __s");
  expect_abort("block_not_whole_warps", "multiple of 32");
  expect_abort("deadlock", "cuda_emu: deadlock in __syncthreads, block (0,0,0) thread (", "2", 15.0);
  expect_abort("barrier_call_sites", "cuda_emu: divergent barrier: block (0,0,0) thread (");
  expect_abort("shared_memory_without_opt_in", "must opt in with cudaFuncSetAttribute");
  expect_abort("shared_memory_above_architecture", "sm_75 allows at most 65536");
  expect_abort("grid_beyond_limits", "invalid grid (1,65536,1)");
  expect_abort("block_beyond_limits", "invalid block (1056,1,1)");
  expect_abort("stuck_lane", "cuda_emu: stuck lane: block (0,0,0) thread (0,0,0)", "2", 15.0);

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (g_failures) {
    std::printf("cuda_emu selftest: %d of %d checks FAILED\n", g_failures, g_checks);
    return 1;
  }
  std::printf("cuda_emu selftest: all %d checks passed in %.1f s\n", g_checks, seconds);
  return 0;
}
