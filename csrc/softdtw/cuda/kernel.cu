// CUDA kernels of the SoftDTW ops: the ops' bodies (../bodies.h, the same on every device) on the
// tile kernels' engine (tiles_ops.h: allocation and launch sequences of tiles.cuh, shared with the
// CPU emulation tests), launched on the current stream of the inputs' device. This file adds the
// device guard and the launcher (../../common/cuda_launch.h), and registers each body under its
// op's flat signature (../ops.h, ../args.h).
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

using CudaEngine = tiles::TileEngine<CudaLaunch>;

// The CUDA kernel of an op body (../bodies.h) on the tile kernels' engine: run under a guard for the
// device of the op's arguments, launching on that device's current stream.
template <auto body>
struct OnCurrentStream {
  template <typename... Args>
  static auto run(const Args&... args) {
    const c10::cuda::CUDAGuard guard(cuda_device_of(args...));
    return body(CudaEngine{}, args...);
  }
};

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  using namespace softdtw;  // the signatures (../ops.h) and the bodies (../bodies.h)
  m.impl("_soft_dtw_from_cost_forward", FromCostForward::kernel_of<OnCurrentStream<&from_cost_forward<CudaEngine>>>);
  m.impl("_soft_dtw_from_cost_backward",
         FromCostBackward::kernel_of<OnCurrentStream<&from_cost_backward<CudaEngine>>>);
  m.impl("_soft_dtw_fused_forward", FusedForward::kernel_of<OnCurrentStream<&fused_forward<CudaEngine>>>);
  m.impl("_soft_dtw_fused_backward", FusedBackward::kernel_of<OnCurrentStream<&fused_backward<CudaEngine>>>);
  m.impl("_soft_dtw_from_cost_jvp", FromCostJvp::kernel_of<OnCurrentStream<&from_cost_jvp<CudaEngine>>>);
  m.impl("_soft_dtw_fused_jvp", FusedJvp::kernel_of<OnCurrentStream<&fused_jvp<CudaEngine>>>);
  m.impl("_soft_dtw_from_cost_hvp", FromCostHvp::kernel_of<OnCurrentStream<&from_cost_hvp<CudaEngine>>>);
  m.impl("_soft_dtw_fused_hvp", FusedHvp::kernel_of<OnCurrentStream<&fused_hvp<CudaEngine>>>);
  m.impl("_dtw_path", DtwPath::kernel_of<OnCurrentStream<&dtw_path<CudaEngine>>>);
  m.impl("_itakura_rows", &KernelOf<ItakuraRows>::kernel<OnCurrentStream<&itakura_rows<CudaEngine>>>);
}

}  // namespace softdtw_torch
