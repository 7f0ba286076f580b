// CUDA kernels of the SoftDTW ops: the tiled wavefront kernels of softdtw_tiles.cuh, launched on
// the current stream of the inputs' device. Validation and error messages are the CPU ops'
// (softdtw_common.h); the work itself is softdtw_tiles_ops.h, shared with the CPU emulation tests.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <climits>

#include "../softdtw_common.h"
#include "softdtw_tiles_ops.h"

namespace softdtw_torch {
namespace {

constexpr int64_t kDefaultSmemBytes = 48 * 1024;  // beyond this a kernel must opt in

// One kernel launch on the current stream, checked. Kernels wanting more than 48 KiB of dynamic
// shared memory (the float64 tiles) opt in first; every supported GPU (sm_75+) allows 64 KiB.
struct CudaLaunch {
  cudaStream_t stream;
  template <typename... Params, typename... Args>
  void operator()(void (*kernel)(Params...), int64_t blocks, int threads, int64_t smem_bytes, Args... args) const {
    TORCH_CHECK(blocks <= INT_MAX, "softdtw_torch: too many SoftDTW tiles for one launch (", blocks, ")");
    if (smem_bytes > kDefaultSmemBytes) {
      C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smem_bytes)));
    }
    kernel<<<static_cast<unsigned>(blocks), threads, static_cast<size_t>(smem_bytes), stream>>>(args...);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
};

CudaLaunch current_stream_launch() { return {at::cuda::getCurrentCUDAStream()}; }

std::tuple<at::Tensor, at::Tensor> from_cost_forward_cuda(const at::Tensor& D, double gamma,
                                                          std::optional<int64_t> bandwidth,
                                                          const std::optional<at::Tensor>& x_lengths,
                                                          const std::optional<at::Tensor>& y_lengths, bool keep_table) {
  const c10::cuda::CUDAGuard guard(D.device());
  const ForwardInputs in = prepare_from_cost(D, gamma, bandwidth, x_lengths, y_lengths);
  const tiles::TiledForward f = tiles::run_forward(current_stream_launch(), in, /*fused=*/false, keep_table);
  return finish_forward(kFromCostOp, f.out, D.scalar_type(), kInvalidCostMessage);
}

at::Tensor from_cost_backward_cuda(const at::Tensor& grad, const at::Tensor& R, double gamma,
                                   std::optional<int64_t> bandwidth, const std::optional<at::Tensor>& x_lengths,
                                   const std::optional<at::Tensor>& y_lengths) {
  const c10::cuda::CUDAGuard guard(R.device());
  const BackwardInputs in = prepare_from_cost_backward(grad, R, gamma, bandwidth, x_lengths, y_lengths);
  return tiles::run_from_cost_backward(current_stream_launch(), in);
}

std::tuple<at::Tensor, at::Tensor> fused_forward_cuda(const at::Tensor& x, const at::Tensor& y, double gamma,
                                                      std::optional<int64_t> bandwidth,
                                                      const std::optional<at::Tensor>& x_lengths,
                                                      const std::optional<at::Tensor>& y_lengths, bool keep_table) {
  const c10::cuda::CUDAGuard guard(x.device());
  const ForwardInputs in = prepare_fused(x, y, gamma, bandwidth, x_lengths, y_lengths);
  const tiles::TiledForward f = tiles::run_forward(current_stream_launch(), in, /*fused=*/true, keep_table);
  return finish_forward(kFusedOp, f.out, x.scalar_type(), kInvalidSequenceMessage);
}

std::tuple<at::Tensor, at::Tensor> fused_backward_cuda(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y,
                                                       const at::Tensor& R, double gamma,
                                                       std::optional<int64_t> bandwidth,
                                                       const std::optional<at::Tensor>& x_lengths,
                                                       const std::optional<at::Tensor>& y_lengths) {
  const c10::cuda::CUDAGuard guard(R.device());
  const BackwardInputs in = prepare_fused_backward(grad, x, y, R, gamma, bandwidth, x_lengths, y_lengths);
  return tiles::run_fused_backward(current_stream_launch(), in);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_forward_checkpointed_cuda(
    const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
    const std::optional<at::Tensor>& x_lengths, const std::optional<at::Tensor>& y_lengths) {
  const c10::cuda::CUDAGuard guard(x.device());
  const ForwardInputs in = prepare_fused(x, y, gamma, bandwidth, x_lengths, y_lengths);
  const tiles::TiledForward f =
      tiles::run_forward(current_stream_launch(), in, /*fused=*/true, /*keep_table=*/false, /*checkpoint=*/true);
  auto [values, no_table] = finish_forward(kFusedOp, f.out, x.scalar_type(), kInvalidSequenceMessage);
  return {values, f.top_rows, f.left_cols};
}

std::tuple<at::Tensor, at::Tensor> fused_backward_checkpointed_cuda(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const at::Tensor& row_borders,
    const at::Tensor& column_borders, double gamma, std::optional<int64_t> bandwidth,
    const std::optional<at::Tensor>& x_lengths, const std::optional<at::Tensor>& y_lengths) {
  const c10::cuda::CUDAGuard guard(x.device());
  const BackwardInputs in = prepare_fused_checkpointed_backward(grad, x, y, gamma, bandwidth, x_lengths, y_lengths);
  const tiles::TiledForward checkpoints = tiles::checkpoints_of(in, row_borders, column_borders);
  return tiles::run_fused_backward(current_stream_launch(), in, &checkpoints);
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  m.impl("_soft_dtw_fused_forward_checkpointed", &fused_forward_checkpointed_cuda);
  m.impl("_soft_dtw_fused_backward_checkpointed", &fused_backward_checkpointed_cuda);
  m.impl("_soft_dtw_from_cost_forward", &from_cost_forward_cuda);
  m.impl("_soft_dtw_from_cost_backward", &from_cost_backward_cuda);
  m.impl("_soft_dtw_fused_forward", &fused_forward_cuda);
  m.impl("_soft_dtw_fused_backward", &fused_backward_cuda);
}

}  // namespace softdtw_torch
