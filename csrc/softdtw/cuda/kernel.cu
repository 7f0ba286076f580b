// CUDA kernels of the SoftDTW ops: the tiled wavefront kernels of tiles.cuh, launched on
// the current stream of the inputs' device. The ops' bodies (validation and error messages as on
// CPU, allocation, launch sequences) are tiles_ops.h, shared with the CPU emulation tests;
// this file adds the device guard and the launcher (../../common/cuda_launch.h), and registers each body
// under its op's signature (../ops.h).
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <type_traits>

#include "../../common/cuda_launch.h"
#include "../ops.h"
#include "tiles_ops.h"

namespace softdtw_torch {
namespace {

// The device of the first CUDA tensor among an op's arguments, optional ones included: the
// dispatcher picked the CUDA kernel, so there is one. When only a length tensor is on CUDA and the
// series are on the CPU, the op body's checks refuse it by name (checked_lengths: lengths on the
// series' device or the CPU), before any launch.
inline at::Device cuda_device_of() {
  TORCH_CHECK(false, "softdtw_torch: a CUDA SoftDTW op was called without a CUDA tensor");
}
template <typename First, typename... Rest>
at::Device cuda_device_of(const First& first, const Rest&... rest) {
  if constexpr (std::is_same_v<First, at::Tensor>) {
    if (first.is_cuda()) return first.device();
  } else if constexpr (std::is_same_v<First, std::optional<at::Tensor>>) {
    if (first.has_value() && first->is_cuda()) return first->device();
  }
  return cuda_device_of(rest...);
}

// The CUDA kernel of an op whose body is tiles::*_op (shared with the emulation tests): the op's
// arguments as the schema gives them (Signature, from ../ops.h), run under a guard for their
// device, launching on that device's current stream.
template <typename Signature, auto body>
struct OnCurrentStream;
template <typename Ret, typename... Args, auto body>
struct OnCurrentStream<Ret(Args...), body> {
  static Ret run(Args... args) {
    const c10::cuda::CUDAGuard guard(cuda_device_of(args...));
    return body(CudaLaunch{}, args...);
  }
};

template <typename Signature, auto body>
constexpr auto cuda_kernel = &OnCurrentStream<Signature, body>::run;

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  using namespace softdtw;  // the signatures
  m.impl("_soft_dtw_from_cost_forward", cuda_kernel<FromCostForward, &tiles::from_cost_forward_op<CudaLaunch>>);
  m.impl("_soft_dtw_from_cost_backward", cuda_kernel<FromCostBackward, &tiles::from_cost_backward_op<CudaLaunch>>);
  m.impl("_soft_dtw_fused_forward", cuda_kernel<FusedForward, &tiles::fused_forward_op<CudaLaunch>>);
  m.impl("_soft_dtw_fused_backward", cuda_kernel<FusedBackward, &tiles::fused_backward_op<CudaLaunch>>);
  m.impl("_soft_dtw_fused_forward_checkpointed",
         cuda_kernel<FusedForwardCheckpointed, &tiles::fused_forward_checkpointed_op<CudaLaunch>>);
  m.impl("_soft_dtw_fused_backward_checkpointed",
         cuda_kernel<FusedBackwardCheckpointed, &tiles::fused_backward_checkpointed_op<CudaLaunch>>);
  m.impl("_soft_dtw_from_cost_jvp", cuda_kernel<FromCostJvp, &tiles::from_cost_jvp_op<CudaLaunch>>);
  m.impl("_soft_dtw_fused_jvp", cuda_kernel<FusedJvp, &tiles::fused_jvp_op<CudaLaunch>>);
  m.impl("_soft_dtw_from_cost_hvp", cuda_kernel<FromCostHvp, &tiles::from_cost_hvp_op<CudaLaunch>>);
  m.impl("_soft_dtw_fused_hvp", cuda_kernel<FusedHvp, &tiles::fused_hvp_op<CudaLaunch>>);
  m.impl("_dtw_path", cuda_kernel<DtwPath, &tiles::dtw_path_op<CudaLaunch>>);
  m.impl("_itakura_rows", cuda_kernel<ItakuraRows, &tiles::itakura_rows_op<CudaLaunch>>);
}

}  // namespace softdtw_torch
