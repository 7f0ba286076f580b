// Calls of the ROCKET ops through the dispatcher (so autograd, fake tensors and device kernels
// are all honoured), for the C++ code that composes them.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <tuple>

#include "rocket_common.h"
#include "softdtw_dispatch.h"  // op_handle, OptTensor

namespace softdtw_torch::dispatch {

inline at::Tensor rocket_normalise(const at::Tensor& x, const OptTensor& x_lengths) {
  static auto op = op_handle("softdtw_torch::rocket_normalise")
                       .typed<at::Tensor(const at::Tensor&, const OptTensor&)>();
  return op.call(x, x_lengths);
}

inline at::Tensor rocket_convolve(const at::Tensor& x, const RocketKernels& k, c10::string_view accumulate,
                                  const OptTensor& x_lengths, std::optional<double> ppv_temperature) {
  static auto op = op_handle("softdtw_torch::rocket_convolve")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         c10::string_view, const OptTensor&, std::optional<double>)>();
  return op.call(x, k.weights, k.lengths, k.biases, k.dilations, k.paddings, k.num_channel_indices, k.channel_indices,
                 accumulate, x_lengths, ppv_temperature);
}

// (features, argmax): argmax (n_cases, K) int64 is each MAX feature's position, -1 for none.
inline std::tuple<at::Tensor, at::Tensor> rocket_convolve_forward(const at::Tensor& x, const RocketKernels& k,
                                                                  c10::string_view accumulate,
                                                                  const OptTensor& x_lengths,
                                                                  std::optional<double> ppv_temperature) {
  static auto op = op_handle("softdtw_torch::_rocket_convolve_forward")
                       .typed<std::tuple<at::Tensor, at::Tensor>(
                           const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                           const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                           c10::string_view, const OptTensor&, std::optional<double>)>();
  return op.call(x, k.weights, k.lengths, k.biases, k.dilations, k.paddings, k.num_channel_indices, k.channel_indices,
                 accumulate, x_lengths, ppv_temperature);
}

// (grad_x, grad_weights, grad_biases).
inline std::tuple<at::Tensor, at::Tensor, at::Tensor> rocket_convolve_backward(
    const at::Tensor& grad, const at::Tensor& x, const RocketKernels& k, const at::Tensor& argmax,
    c10::string_view accumulate, const OptTensor& x_lengths, std::optional<double> ppv_temperature) {
  static auto op = op_handle("softdtw_torch::_rocket_convolve_backward")
                       .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
                           const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                           const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                           const at::Tensor&, const at::Tensor&, c10::string_view, const OptTensor&,
                           std::optional<double>)>();
  return op.call(grad, x, k.weights, k.lengths, k.biases, k.dilations, k.paddings, k.num_channel_indices,
                 k.channel_indices, argmax, accumulate, x_lengths, ppv_temperature);
}

}  // namespace softdtw_torch::dispatch
