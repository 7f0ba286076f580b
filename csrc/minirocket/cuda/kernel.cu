// MiniRocket on CUDA (docs/design/rocket.md §7): minirocket_transform runs the body of
// transform_ops.h (shared with the CPU emulation tests) under a guard for the input's device,
// launched by ../../common/cuda_launch.h; minirocket_fit for CUDA tensors runs aeon's sequential
// random stream on the CPU.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "../../common/cuda_launch.h"
#include "../ops.h"
#include "transform_ops.h"

namespace softdtw_torch {
namespace minirocket {
namespace {

// aeon's fit is one sequential random stream and a few quantiles: it runs on the CPU (x is copied
// there) and the parameters come back on x's device, ready for transform.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fit_cuda(const at::Tensor& x,
                                                                                int64_t n_features,
                                                                                int64_t max_dilations_per_kernel,
                                                                                int64_t seed) {
  auto [ncpc, channels, dilations, per_dilation, biases] = fit_cpu(x, n_features, max_dilations_per_kernel, seed);
  const at::Device device = x.device();
  return {ncpc.to(device), channels.to(device), dilations.to(device), per_dilation.to(device), biases.to(device)};
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  m.impl("minirocket_fit", &fit_cuda);
  m.impl("minirocket_transform",
         &KernelOf<Transform>::kernel<OnSeriesDevice<&kTransformOp, 0, &transform_op<CudaLaunch>>>);
}

}  // namespace minirocket
}  // namespace softdtw_torch
