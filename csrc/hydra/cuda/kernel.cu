// Hydra on CUDA (docs/design/rocket.md §11): hydra_transform and its backward run the bodies of
// transform_ops.h (shared with the CPU emulation tests) under a guard for the input's device,
// launched by ../../common/cuda_launch.h; hydra_fit for CUDA tensors draws on the CPU (torch's CPU
// generator, as aeon's torch.manual_seed seeds it) and returns the parameters on x's device.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/cuda_launch.h"
#include "transform_ops.h"

namespace softdtw_torch {
namespace hydra {
namespace {

at::Tensor transform_cuda(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& channels,
                          const std::optional<at::Tensor>& x_lengths) {
  const c10::cuda::CUDAGuard guard(series_cuda_device(kTransformOp, x));
  return transform_op(CudaLaunch{}, x, weights, channels, x_lengths);
}

std::tuple<at::Tensor, at::Tensor> backward_cuda(const at::Tensor& grad, const at::Tensor& x,
                                                 const at::Tensor& weights, const at::Tensor& channels,
                                                 const std::optional<at::Tensor>& x_lengths) {
  const c10::cuda::CUDAGuard guard(series_cuda_device(kBackwardOp, x));
  return backward_op(CudaLaunch{}, grad, x, weights, channels, x_lengths);
}

Parameters fit_cuda(const at::Tensor& x, int64_t n_kernels, int64_t n_groups, int64_t max_num_channels, int64_t seed) {
  auto [weights, channels] = fit_cpu(x, n_kernels, n_groups, max_num_channels, seed);
  return {weights.to(x.device()), channels.to(x.device())};
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  m.impl("hydra_fit", &fit_cuda);
  m.impl("hydra_transform", &transform_cuda);
  m.impl("_hydra_transform_backward", &backward_cuda);
}

}  // namespace hydra
}  // namespace softdtw_torch
