// CUDA kernels of the SoftDTW ops: the tiled wavefront kernels of tiles.cuh, launched on
// the current stream of the inputs' device. The ops' bodies (validation and error messages as on
// CPU, allocation, launch sequences) are tiles_ops.h, shared with the CPU emulation tests;
// this file adds the device guard and the launcher (../../common/cuda_launch.h), and registers each body
// under its op's flat signature (../ops.h, ../args.h).
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <optional>

#include "../../common/cuda_launch.h"
#include "../ops.h"
#include "tiles_ops.h"

namespace softdtw_torch {
namespace {

// The device of the first CUDA tensor among an op's arguments, optional ones and the bundle's
// lengths included: the dispatcher picked the CUDA kernel, so there is one. When only a length
// tensor is on CUDA and the series are on the CPU, the op body's checks refuse it by name
// (checked_lengths: lengths on the series' device or the CPU), before any launch.
inline std::optional<at::Device> cuda_device_in(const at::Tensor& t) {
  return t.is_cuda() ? std::optional<at::Device>(t.device()) : std::nullopt;
}
inline std::optional<at::Device> cuda_device_in(const std::optional<at::Tensor>& t) {
  return t.has_value() ? cuda_device_in(*t) : std::nullopt;
}
inline std::optional<at::Device> cuda_device_in(const ProblemArgs& args) {
  const auto x = cuda_device_in(args.x_lengths);
  return x ? x : cuda_device_in(args.y_lengths);
}
template <typename T>
std::optional<at::Device> cuda_device_in(const T&) {  // options: no device
  return std::nullopt;
}
template <typename... Args>
at::Device cuda_device_of(const Args&... args) {
  std::optional<at::Device> device;
  ((device = device ? device : cuda_device_in(args)), ...);
  TORCH_CHECK(device.has_value(), "softdtw_torch: a CUDA SoftDTW op was called without a CUDA tensor");
  return *device;
}

// The CUDA kernel of an op whose body is tiles::*_op (shared with the emulation tests): run under a
// guard for the device of the op's arguments, launching on that device's current stream.
template <auto body>
struct OnCurrentStream {
  template <typename... Args>
  static auto run(const Args&... args) {
    const c10::cuda::CUDAGuard guard(cuda_device_of(args...));
    return body(CudaLaunch{}, args...);
  }
};

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  using namespace softdtw;  // the signatures (../ops.h): each body takes the bundle, the kernel the flat list
  using tiles::dtw_path_op, tiles::from_cost_backward_op, tiles::from_cost_forward_op, tiles::from_cost_hvp_op,
      tiles::from_cost_jvp_op, tiles::fused_backward_op, tiles::fused_forward_op, tiles::fused_hvp_op,
      tiles::fused_jvp_op;
  m.impl("_soft_dtw_from_cost_forward",
         FromCostForward::kernel_of<OnCurrentStream<&from_cost_forward_op<CudaLaunch>>>);
  m.impl("_soft_dtw_from_cost_backward",
         FromCostBackward::kernel_of<OnCurrentStream<&from_cost_backward_op<CudaLaunch>>>);
  m.impl("_soft_dtw_fused_forward", FusedForward::kernel_of<OnCurrentStream<&fused_forward_op<CudaLaunch>>>);
  m.impl("_soft_dtw_fused_backward", FusedBackward::kernel_of<OnCurrentStream<&fused_backward_op<CudaLaunch>>>);
  m.impl("_soft_dtw_from_cost_jvp", FromCostJvp::kernel_of<OnCurrentStream<&from_cost_jvp_op<CudaLaunch>>>);
  m.impl("_soft_dtw_fused_jvp", FusedJvp::kernel_of<OnCurrentStream<&fused_jvp_op<CudaLaunch>>>);
  m.impl("_soft_dtw_from_cost_hvp", FromCostHvp::kernel_of<OnCurrentStream<&from_cost_hvp_op<CudaLaunch>>>);
  m.impl("_soft_dtw_fused_hvp", FusedHvp::kernel_of<OnCurrentStream<&fused_hvp_op<CudaLaunch>>>);
  m.impl("_dtw_path", DtwPath::kernel_of<OnCurrentStream<&dtw_path_op<CudaLaunch>>>);
  m.impl("_itakura_rows", &KernelOf<ItakuraRows>::kernel<OnCurrentStream<&tiles::itakura_rows_op<CudaLaunch>>>);
}

}  // namespace softdtw_torch
