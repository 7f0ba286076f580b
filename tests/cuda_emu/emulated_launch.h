// The launcher of the emulated CUDA ops (emulated_ops.cpp) and of the torch-free harness
// (harness.cpp), in place of csrc/common/cuda_launch.h's CudaLaunch: the same shared-memory opt-in
// (csrc/common/device.cuh), then the emulator's launch, which checks the grid, the block and the
// shared memory against CUDA's limits itself. Include after cuda_emu.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/device.cuh"

struct EmulatedLaunch {
  // The most blocks a grid-stride kernel launches along one axis, and the multiprocessors the
  // emulated device claims: small, so that the grid-stride loops run on small inputs.
  int64_t grid_limit = 3;
  int64_t multiprocessor_count = 1;

  template <typename... Params, typename... Args>
  void operator()(void (*kernel)(Params...), softdtw_torch::Grid grid, int threads, int64_t smem_bytes,
                  Args... args) const {
    const softdtw_torch::SharedMemoryOptIn opt_in = softdtw_torch::opt_in_shared_memory(kernel, smem_bytes);
    if (opt_in.error != cudaSuccess || !opt_in.fits) {
      throw std::runtime_error("softdtw_torch: this CUDA kernel needs " + std::to_string(smem_bytes) +
                               " bytes of shared memory per block and the emulated GPU allows " +
                               std::to_string(opt_in.device_limit));
    }
    emu::launch(emu::LaunchShape{grid.x, grid.y, 1}, dim3(static_cast<unsigned>(threads)),
                static_cast<size_t>(smem_bytes), kernel, args...);
  }
  int64_t grid_cap(int64_t limit) const { return std::min(limit, grid_limit); }
  // CudaLaunch::small_kernel_cap: lowered by the tests (set_small_kernel_limit in emulated_ops.cpp)
  // to run the general kernels on inputs the small-problem kernels would take; negative: no cap.
  static inline int64_t small_kernel_limit = -1;
  int64_t small_kernel_cap(const char* /*op*/, int64_t limit) const {
    return small_kernel_limit < 0 ? limit : std::min(limit, small_kernel_limit);
  }
  int64_t multiprocessors() const { return multiprocessor_count; }
};
