// How the CUDA ops launch a kernel: on the current stream, checked, with the shared-memory opt-in.
// Op bodies are templated on the launcher (SoftDTW's tile engine in softdtw/cuda/tiles_ops.h,
// rocket/cuda/convolve_ops.h, minirocket/cuda/transform_ops.h, ...), so the emulation tests run the
// same bodies with the emulator's.
#pragma once

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstddef>
#include <cstdlib>
#include <string_view>
#include <tuple>

#include "device.cuh"

namespace softdtw_torch {

// The device a ROCKET-family CUDA op runs on: its series x's. The dispatcher runs an op's CUDA
// kernel when any tensor argument is on a CUDA device, so x on the CPU with CUDA parameters or
// lengths comes here too, and is refused by name (a CUDA guard would fail an internal assert).
inline at::Device series_cuda_device(const char* op, const at::Tensor& x) {
  TORCH_CHECK_VALUE(x.is_cuda(), op, ": expected x on the CUDA device of the other tensor arguments, got x on ",
                    x.device(), " (the parameters must be on x's device; x_lengths on x's device or the CPU)");
  return x.device();
}

struct CudaLaunch {
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();

  // kernel<<<grid, threads, smem_bytes, stream>>>(args...). Kernels wanting more than 48 KiB of
  // dynamic shared memory (the float64 SoftDTW tiles, the second-order tiles) opt in first. Every
  // supported GPU (sm_75+) allows 64 KiB, which every kernel fits except the float64 SoftDTW
  // forward-mode and second-order ones (up to 94 KiB): GPUs with less than they need get a clear
  // error instead of a failed launch.
  template <typename... Params, typename... Args>
  void operator()(void (*kernel)(Params...), Grid grid, int threads, int64_t smem_bytes, Args... args) const {
    TORCH_CHECK(grid.x >= 1 && grid.x <= kMaxGridX && grid.y >= 1 && grid.y <= kMaxGridY,
                "softdtw_torch: a CUDA launch needs a grid of (", grid.x, ", ", grid.y,
                ") blocks, beyond CUDA's limits (2^31 - 1, 65535)");
    const SharedMemoryOptIn opt_in = opt_in_shared_memory(kernel, smem_bytes);
    C10_CUDA_CHECK(opt_in.error);
    TORCH_CHECK(opt_in.fits, "softdtw_torch: this CUDA kernel needs ", smem_bytes / 1024,
                " KiB of shared memory per block and this GPU allows ", opt_in.device_limit / 1024,
                " KiB; float64 SoftDTW forward-mode and second-order derivatives need more than the 64 KiB of "
                "sm_75 GPUs: use float32 (or the CPU) there");
    const dim3 blocks(static_cast<unsigned>(grid.x), static_cast<unsigned>(grid.y));
    kernel<<<blocks, threads, static_cast<size_t>(smem_bytes), stream>>>(args...);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }

  // The blocks a grid-stride kernel launches along an axis whose hardware limit is `limit`: all of
  // them (the emulation tests lower this to reach the grid-stride loops with small inputs).
  int64_t grid_cap(int64_t limit) const { return limit; }

  // The largest problem a kernel specialised for small problems takes, whose own regime ends at
  // `limit` (SoftDTW's one warp per pair): all of them, or none with the environment variable
  // SOFTDTW_TORCH_CUDA_SMALL_KERNELS=0, read at each call, so that a benchmark times the general
  // kernels on the same inputs in the same process (the emulation tests lower it their own way).
  // Any other value than 0 or 1 (or empty) is refused, naming the public op `op`.
  int64_t small_kernel_cap(const char* op, int64_t limit) const {
    const char* setting = std::getenv("SOFTDTW_TORCH_CUDA_SMALL_KERNELS");
    if (setting == nullptr || *setting == '\0') return limit;
    const std::string_view value(setting);
    TORCH_CHECK_VALUE(value == "0" || value == "1", op,
                      ": expected the environment variable SOFTDTW_TORCH_CUDA_SMALL_KERNELS to be 0 or 1, got '",
                      setting, "'");
    return value == "0" ? 0 : limit;
  }

  // Streaming multiprocessors of the current device: grid-stride kernels size their grid by it.
  int64_t multiprocessors() const { return at::cuda::getCurrentDeviceProperties()->multiProcessorCount; }
};

// The CUDA kernel of a ROCKET-family op whose body is *_op(launch, args...) (shared with the
// emulation tests): run under a guard for the device of its series x, the argument at `series`
// (0, or 1 after an upstream gradient), refused under the name *op as series_cuda_device says.
// Registered as KernelOf<Signature>::kernel<OnSeriesDevice<...>> (op.h), so that its argument list
// is the op's signature in the family's ops.h, not written again.
template <const char* const* op, std::size_t series, auto body>
struct OnSeriesDevice {
  template <typename... Args>
  static auto run(const Args&... args) {
    const at::Tensor& x = std::get<series>(std::forward_as_tuple(args...));
    const c10::cuda::CUDAGuard guard(series_cuda_device(*op, x));
    return body(CudaLaunch{}, args...);
  }
};

}  // namespace softdtw_torch
