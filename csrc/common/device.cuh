// Device-side pieces shared by the CUDA kernels of every op family (softdtw/cuda, rocket/cuda,
// minirocket/cuda). No ATen here: the same device code also runs on the CPU under the project's
// CUDA emulator (tests/cuda_emu/cuda_emu.h), which a translation unit includes first after
// defining SDTW_CUDA_EMULATION.
#pragma once

#include <cstdint>

namespace softdtw_torch {

// A launch's grid: blocks along x (up to 2^31 − 1) and y (up to 65,535). Op bodies hand it to a
// Launch functor, `launch(kernel, Grid, threads, dynamic_smem_bytes, args...)`: CudaLaunch
// (common/cuda_launch.h) on a GPU, the emulator's launch in the tests.
struct Grid {
  int64_t x = 1, y = 1;
  Grid(int64_t blocks) : x(blocks) {}  // NOLINT(google-explicit-constructor): a 1-D grid
  Grid(int64_t blocks_x, int64_t blocks_y) : x(blocks_x), y(blocks_y) {}
};
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridY = 65535;

// Lets `kernel` be launched with `bytes` of dynamic shared memory: up to 48 KiB it may as is;
// beyond, it must opt in (cudaFuncSetAttribute), up to the device's opt-in limit. Written against
// the CUDA runtime, which the emulator provides too, so the emulated launches opt in the same way.
struct SharedMemoryOptIn {
  cudaError_t error;     // of the runtime calls
  int64_t device_limit;  // the most this device allows a block
  bool fits;             // bytes <= device_limit (and the attribute set when needed)
};
constexpr int64_t kDefaultSharedMemoryBytes = 48 * 1024;
template <typename Kernel>
SharedMemoryOptIn opt_in_shared_memory(Kernel kernel, int64_t bytes) {
  if (bytes <= kDefaultSharedMemoryBytes) return {cudaSuccess, kDefaultSharedMemoryBytes, true};
  int device = 0, limit = 0;
  cudaError_t error = cudaGetDevice(&device);
  if (error == cudaSuccess) error = cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (error != cudaSuccess || bytes > limit) return {error, limit, false};
  error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  return {error, limit, error == cudaSuccess};
}

// The block's dynamic shared memory (every family's kernels use dynamic shared memory only, so
// that the emulator gives each block fresh NaN-filled memory and sees its size at launch).
#if defined(SDTW_CUDA_EMULATION)
inline unsigned char* dynamic_shared_memory() { return emu::dynamic_shared_memory(); }
#else
extern __shared__ __align__(16) unsigned char softdtw_torch_dynamic_smem[];
__device__ __forceinline__ unsigned char* dynamic_shared_memory() { return softdtw_torch_dynamic_smem; }
#endif

// A hint to bring the L1 line holding `address` in ahead of its load (PTX prefetch.global.L1), for
// kernels whose loads would otherwise stall a dependent chain; nothing under the emulator, which
// has no caches.
#if defined(SDTW_CUDA_EMULATION)
inline void prefetch_l1(const void*) {}
#else
__device__ __forceinline__ void prefetch_l1(const void* address) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(address));
}
#endif

// The sum of v over the 32 lanes of a warp, in every lane (all lanes must call it): one
// redux.sync on sm_80 and later, a butterfly of five shuffles before (sm_75, and the emulator).
// Integers, so the result does not depend on the order of the additions.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ __forceinline__ int warp_sum(int v) { return __reduce_add_sync(0xffffffffu, v); }
#else
__device__ __forceinline__ int warp_sum(int v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
#endif

}  // namespace softdtw_torch
