// MultiRocket on CUDA (docs/design/rocket.md §8): multirocket_transform runs the body of
// transform_ops.h (shared with the CPU emulation tests) under a guard for the input's device,
// launched by ../../common/cuda_launch.h; multirocket_fit for CUDA tensors runs aeon's sequential
// random streams on the CPU.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "../../common/cuda_launch.h"
#include "../ops.h"
#include "transform_ops.h"

namespace softdtw_torch {
namespace multirocket {
namespace {

// The fit is sequential random streams and quantiles: it runs on the CPU (x is copied there) and
// the parameters come back on x's device, ready for transform.
Parameters fit_cuda(const at::Tensor& x, int64_t n_kernels, int64_t max_dilations_per_kernel, int64_t seed) {
  auto [a0, a1, a2, a3, a4, b0, b1, b2, b3, b4] = fit_cpu(x, n_kernels, max_dilations_per_kernel, seed);
  const at::Device device = x.device();
  return {a0.to(device), a1.to(device), a2.to(device), a3.to(device), a4.to(device),
          b0.to(device), b1.to(device), b2.to(device), b3.to(device), b4.to(device)};
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  m.impl("multirocket_fit", &fit_cuda);
  m.impl("multirocket_transform",
         &KernelOf<Transform>::kernel<OnSeriesDevice<&kTransformOp, 0, &transform_op<CudaLaunch>>>);
}

}  // namespace multirocket
}  // namespace softdtw_torch
