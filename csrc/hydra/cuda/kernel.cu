// Hydra on CUDA (docs/design/rocket.md §11): hydra_transform and its backward run the bodies of
// transform_ops.h (shared with the CPU emulation tests) under a guard for the input's device,
// launched by ../../common/cuda_launch.h; hydra_fit for CUDA tensors draws on the CPU (torch's CPU
// generator, as aeon's torch.manual_seed seeds it) and returns the parameters on x's device.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "../../common/cuda_launch.h"
#include "../ops.h"
#include "transform_ops.h"

namespace softdtw_torch {
namespace hydra {
namespace {

Parameters fit_cuda(const at::Tensor& x, int64_t n_kernels, int64_t n_groups, int64_t max_num_channels, int64_t seed) {
  auto [weights, channels] = fit_cpu(x, n_kernels, n_groups, max_num_channels, seed);
  return {weights.to(x.device()), channels.to(x.device())};
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  m.impl("hydra_fit", &fit_cuda);
  m.impl("hydra_transform",
         &KernelOf<Transform>::kernel<OnSeriesDevice<&kTransformOp, 0, &transform_op<CudaLaunch>>>);
  m.impl("_hydra_transform_backward",  // (grad, x, ...)
         &KernelOf<Backward>::kernel<OnSeriesDevice<&kBackwardOp, 1, &backward_op<CudaLaunch>>>);
}

}  // namespace hydra
}  // namespace softdtw_torch
