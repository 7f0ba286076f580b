// Autograd for the MiniRocket ops: both run below autograd and return results that do not
// require grad, so a requires_grad x gives features detached from the graph (documented; PPV is
// piecewise constant, its gradient zero almost everywhere, and no backward exists).
#include <torch/library.h>

#include "ops.h"

namespace softdtw_torch {
namespace minirocket {
namespace {

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> fit_autograd(const Tensor& x, int64_t n_features,
                                                                int64_t max_dilations_per_kernel, int64_t seed) {
  at::AutoDispatchBelowADInplaceOrView guard;
  return ops::minirocket_fit(x, n_features, max_dilations_per_kernel, seed);
}

Tensor transform_autograd(const Tensor& x, const Tensor& num_channels_per_combination, const Tensor& channel_indices,
                          const Tensor& dilations, const Tensor& num_features_per_dilation, const Tensor& biases,
                          const OptTensor& x_lengths) {
  at::AutoDispatchBelowADInplaceOrView guard;
  return ops::minirocket_transform(x, num_channels_per_combination, channel_indices, dilations,
                                   num_features_per_dilation, biases, x_lengths);
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, Autograd, m) {
  m.impl("minirocket_fit", &fit_autograd);
  m.impl("minirocket_transform", &transform_autograd);
}

}  // namespace minirocket
}  // namespace softdtw_torch
