// ROCKET ops composed of other ops: rocket_transform (aeon's Rocket.transform) and the
// value-only path of rocket_convolve (below autograd, or with no input requiring grad).
#include <torch/library.h>

#include "../rocket_dispatch.h"

namespace softdtw_torch {
namespace {

at::Tensor normalise_then_convolve(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& lengths,
                                   const at::Tensor& biases, const at::Tensor& dilations, const at::Tensor& paddings,
                                   const at::Tensor& num_channel_indices, const at::Tensor& channel_indices,
                                   bool normalise, c10::string_view accumulate,
                                   const std::optional<at::Tensor>& x_lengths, std::optional<double> ppv_temperature) {
  const RocketKernels kernels{weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices};
  // aeon normalises in the input's precision and only then converts to the convolution's.
  const at::Tensor series = normalise ? dispatch::rocket_normalise(x, x_lengths) : x;
  return dispatch::rocket_convolve(series, kernels, accumulate, x_lengths, ppv_temperature);
}

at::Tensor rocket_convolve_values(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& lengths,
                                  const at::Tensor& biases, const at::Tensor& dilations, const at::Tensor& paddings,
                                  const at::Tensor& num_channel_indices, const at::Tensor& channel_indices,
                                  c10::string_view accumulate, const std::optional<at::Tensor>& x_lengths,
                                  std::optional<double> ppv_temperature) {
  const RocketKernels kernels{weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices};
  return std::get<0>(dispatch::rocket_convolve_forward(x, kernels, accumulate, x_lengths, ppv_temperature));
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CompositeImplicitAutograd, m) {
  m.impl("rocket_transform", &normalise_then_convolve);
}

TORCH_LIBRARY_IMPL(softdtw_torch, CompositeExplicitAutograd, m) {
  m.impl("rocket_convolve", &rocket_convolve_values);
}

}  // namespace softdtw_torch
