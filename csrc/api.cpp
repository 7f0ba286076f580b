// The public C++ API of csrc/softdtw_torch.h: thin calls of the operators through the dispatcher.
#include "softdtw_torch.h"

#include "ops/rocket_dispatch.h"
#include "ops/softdtw_dispatch.h"

#ifndef SOFTDTW_TORCH_VERSION
#error "SOFTDTW_TORCH_VERSION must be defined by the build (setup.py or CMakeLists.txt)"
#endif

namespace softdtw_torch {

using dispatch::op_handle;

at::Tensor soft_dtw(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                    bool normalize, std::optional<bool> fused, const OptionalTensor& x_lengths,
                    const OptionalTensor& y_lengths, const std::string& cost, bool checkpoint) {
  static auto op = op_handle("softdtw_torch::soft_dtw")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double, std::optional<int64_t>, bool,
                                         std::optional<bool>, const OptionalTensor&, const OptionalTensor&,
                                         c10::string_view, bool)>();
  return op.call(x, y, gamma, bandwidth, normalize, fused, x_lengths, y_lengths, cost, checkpoint);
}

at::Tensor soft_dtw_fused(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                          const OptionalTensor& x_lengths, const OptionalTensor& y_lengths, bool checkpoint) {
  return dispatch::soft_dtw_fused(x, y, gamma, bandwidth, x_lengths, y_lengths, checkpoint);
}

at::Tensor soft_dtw_from_cost(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                              const OptionalTensor& x_lengths, const OptionalTensor& y_lengths) {
  return dispatch::soft_dtw_from_cost(D, gamma, bandwidth, x_lengths, y_lengths);
}

at::Tensor pairwise_cost(const at::Tensor& x, const at::Tensor& y, const std::string& cost) {
  return dispatch::pairwise_cost(x, y, cost);
}

std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment(const at::Tensor& x, const at::Tensor& y, double gamma,
                                                      std::optional<int64_t> bandwidth,
                                                      const OptionalTensor& x_lengths,
                                                      const OptionalTensor& y_lengths, const std::string& cost) {
  static auto op = op_handle("softdtw_torch::soft_dtw_alignment")
                       .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, double,
                                                                 std::optional<int64_t>, const OptionalTensor&,
                                                                 const OptionalTensor&, c10::string_view)>();
  return op.call(x, y, gamma, bandwidth, x_lengths, y_lengths, cost);
}

std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment_from_cost(const at::Tensor& D, double gamma,
                                                                std::optional<int64_t> bandwidth,
                                                                const OptionalTensor& x_lengths,
                                                                const OptionalTensor& y_lengths) {
  static auto op = op_handle("softdtw_torch::soft_dtw_alignment_from_cost")
                       .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, double, std::optional<int64_t>,
                                                                 const OptionalTensor&, const OptionalTensor&)>();
  return op.call(D, gamma, bandwidth, x_lengths, y_lengths);
}

RocketKernels rocket_generate_kernels(int64_t n_timepoints, int64_t n_channels, int64_t n_kernels, int64_t seed) {
  using Tensor = at::Tensor;
  static auto op = op_handle("softdtw_torch::rocket_generate_kernels")
                       .typed<std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor>(
                           int64_t, int64_t, int64_t, int64_t)>();
  auto [weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices] =
      op.call(n_timepoints, n_channels, n_kernels, seed);
  return {weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices};
}

at::Tensor rocket_normalise(const at::Tensor& x, const OptionalTensor& x_lengths) {
  return dispatch::rocket_normalise(x, x_lengths);
}

at::Tensor rocket_convolve(const at::Tensor& x, const RocketKernels& kernels, const std::string& accumulate,
                           const OptionalTensor& x_lengths, std::optional<double> ppv_temperature) {
  return dispatch::rocket_convolve(x, kernels, accumulate, x_lengths, ppv_temperature);
}

at::Tensor rocket_transform(const at::Tensor& x, const RocketKernels& k, bool normalise, const std::string& accumulate,
                            const OptionalTensor& x_lengths, std::optional<double> ppv_temperature) {
  static auto op = op_handle("softdtw_torch::rocket_transform")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         bool, c10::string_view, const OptionalTensor&, std::optional<double>)>();
  return op.call(x, k.weights, k.lengths, k.biases, k.dilations, k.paddings, k.num_channel_indices, k.channel_indices,
                 normalise, accumulate, x_lengths, ppv_temperature);
}

MiniRocketParameters minirocket_fit(const at::Tensor& x, int64_t n_features, int64_t max_dilations_per_kernel,
                                    int64_t seed) {
  using Tensor = at::Tensor;
  static auto op = op_handle("softdtw_torch::minirocket_fit")
                       .typed<std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>(const Tensor&, int64_t, int64_t,
                                                                                 int64_t)>();
  auto [per_combination, channel_indices, dilations, per_dilation, biases] =
      op.call(x, n_features, max_dilations_per_kernel, seed);
  return {per_combination, channel_indices, dilations, per_dilation, biases};
}

at::Tensor minirocket_transform(const at::Tensor& x, const MiniRocketParameters& p, const OptionalTensor& x_lengths) {
  static auto op = op_handle("softdtw_torch::minirocket_transform")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         const at::Tensor&, const at::Tensor&, const OptionalTensor&)>();
  return op.call(x, p.num_channels_per_combination, p.channel_indices, p.dilations, p.num_features_per_dilation,
                 p.biases, x_lengths);
}

std::string version() {
  return SOFTDTW_TORCH_VERSION;
}

bool cuda_compiled() {
#ifdef SOFTDTW_TORCH_WITH_CUDA
  return true;
#else
  return false;
#endif
}

namespace detail {
bool link_anchor() {
  return true;
}
}  // namespace detail

}  // namespace softdtw_torch
