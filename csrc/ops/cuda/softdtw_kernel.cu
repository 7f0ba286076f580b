// CUDA kernels of the SoftDTW ops: the tiled wavefront kernels of softdtw_tiles.cuh, launched on
// the current stream of the inputs' device. The ops' bodies (validation and error messages as on
// CPU, allocation, launch sequences) are softdtw_tiles_ops.h, shared with the CPU emulation tests;
// this file adds the device guard, the stream and the launch checks.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <climits>

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

// An op body run under a guard for `device`, launching on that device's current stream.
template <typename Body>
auto on_device(const at::Device& device, Body body) {
  const c10::cuda::CUDAGuard guard(device);
  return body(CudaLaunch{at::cuda::getCurrentCUDAStream()});
}

using OptTensor = std::optional<at::Tensor>;

std::tuple<at::Tensor, at::Tensor> from_cost_forward_cuda(const at::Tensor& D, double gamma,
                                                          std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                                          const OptTensor& y_lengths, bool keep_table) {
  return on_device(D.device(), [&](const CudaLaunch& launch) {
    return tiles::from_cost_forward_op(launch, D, gamma, bandwidth, x_lengths, y_lengths, keep_table);
  });
}

at::Tensor from_cost_backward_cuda(const at::Tensor& grad, const at::Tensor& R, double gamma,
                                   std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                   const OptTensor& y_lengths) {
  return on_device(R.device(), [&](const CudaLaunch& launch) {
    return tiles::from_cost_backward_op(launch, grad, R, gamma, bandwidth, x_lengths, y_lengths);
  });
}

std::tuple<at::Tensor, at::Tensor> fused_forward_cuda(const at::Tensor& x, const at::Tensor& y, double gamma,
                                                      std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                                      const OptTensor& y_lengths, bool keep_table) {
  return on_device(x.device(), [&](const CudaLaunch& launch) {
    return tiles::fused_forward_op(launch, x, y, gamma, bandwidth, x_lengths, y_lengths, keep_table);
  });
}

std::tuple<at::Tensor, at::Tensor> fused_backward_cuda(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y,
                                                       const at::Tensor& R, double gamma,
                                                       std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                                       const OptTensor& y_lengths) {
  return on_device(R.device(), [&](const CudaLaunch& launch) {
    return tiles::fused_backward_op(launch, grad, x, y, R, gamma, bandwidth, x_lengths, y_lengths);
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_forward_checkpointed_cuda(
    const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
    const OptTensor& x_lengths, const OptTensor& y_lengths) {
  return on_device(x.device(), [&](const CudaLaunch& launch) {
    return tiles::fused_forward_checkpointed_op(launch, x, y, gamma, bandwidth, x_lengths, y_lengths);
  });
}

std::tuple<at::Tensor, at::Tensor> fused_backward_checkpointed_cuda(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const at::Tensor& row_borders,
    const at::Tensor& column_borders, double gamma, std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
    const OptTensor& y_lengths) {
  return on_device(x.device(), [&](const CudaLaunch& launch) {
    return tiles::fused_backward_checkpointed_op(launch, grad, x, y, row_borders, column_borders, gamma, bandwidth,
                                                 x_lengths, y_lengths);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  m.impl("_soft_dtw_from_cost_forward", &from_cost_forward_cuda);
  m.impl("_soft_dtw_from_cost_backward", &from_cost_backward_cuda);
  m.impl("_soft_dtw_fused_forward", &fused_forward_cuda);
  m.impl("_soft_dtw_fused_backward", &fused_backward_cuda);
  m.impl("_soft_dtw_fused_forward_checkpointed", &fused_forward_checkpointed_cuda);
  m.impl("_soft_dtw_fused_backward_checkpointed", &fused_backward_checkpointed_cuda);
}

}  // namespace softdtw_torch
