// Autograd for the MultiRocket ops: as MiniRocket's (../minirocket/autograd.cpp), both run below
// autograd and return results that do not require grad (the pooled features are piecewise
// constant in x, or, for MPV, not differentiable where a value crosses a bias; no backward).
#include <torch/library.h>

#include "ops.h"

namespace softdtw_torch {
namespace multirocket {
namespace {

auto fit_autograd(const Tensor& x, int64_t n_kernels, int64_t max_dilations_per_kernel, int64_t seed) {
  at::AutoDispatchBelowADInplaceOrView guard;
  return ops::multirocket_fit(x, n_kernels, max_dilations_per_kernel, seed);
}

Tensor transform_autograd(const Tensor& x, const Tensor& num_channels_per_combination, const Tensor& channel_indices,
                          const Tensor& dilations, const Tensor& num_features_per_dilation, const Tensor& biases,
                          const Tensor& diff_dilations, const Tensor& diff_num_features_per_dilation,
                          const Tensor& diff_biases, const OptTensor& x_lengths) {
  at::AutoDispatchBelowADInplaceOrView guard;
  return ops::multirocket_transform(x, num_channels_per_combination, channel_indices, dilations,
                                    num_features_per_dilation, biases, diff_dilations, diff_num_features_per_dilation,
                                    diff_biases, x_lengths);
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, Autograd, m) {
  m.impl("multirocket_fit", &fit_autograd);
  m.impl("multirocket_transform", &transform_autograd);
}

}  // namespace multirocket
}  // namespace softdtw_torch
