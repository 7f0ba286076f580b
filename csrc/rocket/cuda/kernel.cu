// CUDA kernels of the ROCKET ops: the bodies of convolve_ops.h (shared with the CPU emulation
// tests) under a guard for the input's device, launched by ../../common/cuda_launch.h.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/cuda_launch.h"
#include "convolve_ops.h"

namespace softdtw_torch {
namespace {

std::tuple<at::Tensor, at::Tensor> convolve_forward_cuda(
    const at::Tensor& x, const at::Tensor& weights, const at::Tensor& lengths, const at::Tensor& biases,
    const at::Tensor& dilations, const at::Tensor& paddings, const at::Tensor& num_channel_indices,
    const at::Tensor& channel_indices, c10::string_view accumulate, const std::optional<at::Tensor>& x_lengths,
    std::optional<double> ppv_temperature) {
  const c10::cuda::CUDAGuard guard(series_cuda_device(kRocketConvolveOp, x));
  return rocket_cuda::convolve_forward_op(CudaLaunch{}, x, weights, lengths, biases, dilations, paddings,
                                          num_channel_indices, channel_indices, accumulate, x_lengths,
                                          ppv_temperature);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolve_backward_cuda(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& weights, const at::Tensor& lengths,
    const at::Tensor& biases, const at::Tensor& dilations, const at::Tensor& paddings,
    const at::Tensor& num_channel_indices, const at::Tensor& channel_indices, const at::Tensor& argmax,
    c10::string_view accumulate, const std::optional<at::Tensor>& x_lengths, std::optional<double> ppv_temperature) {
  const c10::cuda::CUDAGuard guard(series_cuda_device(kRocketConvolveOp, x));
  return rocket_cuda::convolve_backward_op(CudaLaunch{}, grad, x, weights, lengths, biases, dilations, paddings,
                                           num_channel_indices, channel_indices, argmax, accumulate, x_lengths,
                                           ppv_temperature);
}

at::Tensor normalise_cuda(const at::Tensor& x, const std::optional<at::Tensor>& x_lengths) {
  const c10::cuda::CUDAGuard guard(series_cuda_device(kRocketNormaliseOp, x));
  return rocket_cuda::normalise_op(CudaLaunch{}, x, x_lengths);
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  m.impl("rocket_normalise", &normalise_cuda);
  m.impl("_rocket_convolve_forward", &convolve_forward_cuda);
  m.impl("_rocket_convolve_backward", &convolve_backward_cuda);
}

}  // namespace softdtw_torch
