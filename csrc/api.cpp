// The public C++ API of csrc/softdtw_torch.h: thin calls of the operators through the dispatcher.
#include "softdtw_torch.h"

#include "minirocket/ops.h"
#include "hydra/ops.h"
#include "multirocket/ops.h"
#include "rocket/ops.h"
#include "softdtw/ops.h"
#include "common/table_memory.h"

#ifndef SOFTDTW_TORCH_VERSION
#error "SOFTDTW_TORCH_VERSION must be defined by the build (setup.py or CMakeLists.txt)"
#endif

namespace softdtw_torch {

namespace sdtw_ops = softdtw::ops;
namespace rocket_ops = rocket::ops;
namespace minirocket_ops = minirocket::ops;
namespace multirocket_ops = multirocket::ops;
namespace hydra_ops = hydra::ops;

at::Tensor soft_dtw(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                    bool normalize, std::optional<bool> fused, const OptionalTensor& x_lengths,
                    const OptionalTensor& y_lengths, const std::string& cost, bool checkpoint,
                    std::optional<double> itakura_max_slope) {
  return sdtw_ops::soft_dtw(x, y, gamma, bandwidth, normalize, fused, x_lengths, y_lengths, cost, checkpoint,
                            itakura_max_slope);
}

at::Tensor soft_dtw_fused(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                          const OptionalTensor& x_lengths, const OptionalTensor& y_lengths, bool checkpoint,
                          std::optional<double> itakura_max_slope) {
  return sdtw_ops::soft_dtw_fused(x, y, gamma, bandwidth, x_lengths, y_lengths, checkpoint, itakura_max_slope);
}

at::Tensor soft_dtw_from_cost(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                              const OptionalTensor& x_lengths, const OptionalTensor& y_lengths,
                              std::optional<double> itakura_max_slope) {
  return sdtw_ops::soft_dtw_from_cost(D, gamma, bandwidth, x_lengths, y_lengths, itakura_max_slope);
}

at::Tensor pairwise_cost(const at::Tensor& x, const at::Tensor& y, const std::string& cost) {
  return sdtw_ops::pairwise_cost(x, y, cost);
}

std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment(const at::Tensor& x, const at::Tensor& y, double gamma,
                                                      std::optional<int64_t> bandwidth, const OptionalTensor& x_lengths,
                                                      const OptionalTensor& y_lengths, const std::string& cost,
                                                      std::optional<double> itakura_max_slope) {
  return sdtw_ops::soft_dtw_alignment(x, y, gamma, bandwidth, x_lengths, y_lengths, cost, itakura_max_slope);
}

std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment_from_cost(const at::Tensor& D, double gamma,
                                                                std::optional<int64_t> bandwidth,
                                                                const OptionalTensor& x_lengths,
                                                                const OptionalTensor& y_lengths,
                                                                std::optional<double> itakura_max_slope) {
  return sdtw_ops::soft_dtw_alignment_from_cost(D, gamma, bandwidth, x_lengths, y_lengths, itakura_max_slope);
}

at::Tensor soft_dtw_sharp(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                          bool normalize, std::optional<bool> fused, const OptionalTensor& x_lengths,
                          const OptionalTensor& y_lengths, const std::string& cost,
                          std::optional<double> itakura_max_slope) {
  return sdtw_ops::soft_dtw_sharp(x, y, gamma, bandwidth, normalize, fused, x_lengths, y_lengths, cost,
                                  itakura_max_slope);
}

at::Tensor soft_dtw_sharp_from_cost(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                                    const OptionalTensor& x_lengths, const OptionalTensor& y_lengths,
                                    std::optional<double> itakura_max_slope) {
  return sdtw_ops::soft_dtw_sharp_from_cost(D, gamma, bandwidth, x_lengths, y_lengths, itakura_max_slope);
}

DilateTerms dilate(const at::Tensor& prediction, const at::Tensor& target, double alpha, double gamma,
                   std::optional<int64_t> bandwidth, const OptionalTensor& penalty,
                   const OptionalTensor& prediction_lengths, const OptionalTensor& target_lengths,
                   std::optional<double> itakura_max_slope) {
  auto [loss, shape, temporal] = sdtw_ops::dilate(prediction, target, alpha, gamma, bandwidth, penalty,
                                                  prediction_lengths, target_lengths, itakura_max_slope);
  return {loss, shape, temporal};
}

RocketKernels rocket_generate_kernels(int64_t n_timepoints, int64_t n_channels, int64_t n_kernels, int64_t seed) {
  auto [weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices] =
      rocket_ops::rocket_generate_kernels(n_timepoints, n_channels, n_kernels, seed);
  return {weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices};
}

at::Tensor rocket_normalise(const at::Tensor& x, const OptionalTensor& x_lengths) {
  return rocket_ops::rocket_normalise(x, x_lengths);
}

at::Tensor rocket_convolve(const at::Tensor& x, const RocketKernels& k, const std::string& accumulate,
                           const OptionalTensor& x_lengths, std::optional<double> ppv_temperature) {
  return rocket_ops::rocket_convolve(x, k.weights, k.lengths, k.biases, k.dilations, k.paddings, k.num_channel_indices,
                                     k.channel_indices, accumulate, x_lengths, ppv_temperature);
}

at::Tensor rocket_transform(const at::Tensor& x, const RocketKernels& k, bool normalise, const std::string& accumulate,
                            const OptionalTensor& x_lengths, std::optional<double> ppv_temperature) {
  return rocket_ops::rocket_transform(x, k.weights, k.lengths, k.biases, k.dilations, k.paddings,
                                      k.num_channel_indices, k.channel_indices, normalise, accumulate, x_lengths,
                                      ppv_temperature);
}

MiniRocketParameters minirocket_fit(const at::Tensor& x, int64_t n_features, int64_t max_dilations_per_kernel,
                                    int64_t seed) {
  auto [per_combination, channel_indices, dilations, per_dilation, biases] =
      minirocket_ops::minirocket_fit(x, n_features, max_dilations_per_kernel, seed);
  return {per_combination, channel_indices, dilations, per_dilation, biases};
}

at::Tensor minirocket_transform(const at::Tensor& x, const MiniRocketParameters& p, const OptionalTensor& x_lengths) {
  return minirocket_ops::minirocket_transform(x, p.num_channels_per_combination, p.channel_indices, p.dilations,
                                              p.num_features_per_dilation, p.biases, x_lengths);
}

MultiRocketParameters multirocket_fit(const at::Tensor& x, int64_t n_kernels, int64_t max_dilations_per_kernel,
                                      int64_t seed) {
  auto [a0, a1, a2, a3, a4, b0, b1, b2, b3, b4] =
      multirocket_ops::multirocket_fit(x, n_kernels, max_dilations_per_kernel, seed);
  return {{a0, a1, a2, a3, a4}, {b0, b1, b2, b3, b4}};
}

at::Tensor multirocket_transform(const at::Tensor& x, const MultiRocketParameters& p, const OptionalTensor& x_lengths) {
  const MiniRocketParameters &s = p.series, &d = p.difference;
  return multirocket_ops::multirocket_transform(x, s.num_channels_per_combination, s.channel_indices, s.dilations,
                                                s.num_features_per_dilation, s.biases, d.dilations,
                                                d.num_features_per_dilation, d.biases, x_lengths);
}

HydraParameters hydra_fit(const at::Tensor& x, int64_t n_kernels, int64_t n_groups, int64_t max_num_channels,
                          int64_t seed) {
  auto [weights, channels] = hydra_ops::hydra_fit(x, n_kernels, n_groups, max_num_channels, seed);
  return {weights, channels};
}

at::Tensor hydra_transform(const at::Tensor& x, const HydraParameters& p, const OptionalTensor& x_lengths) {
  return hydra_ops::hydra_transform(x, p.weights, p.channels, x_lengths);
}

std::string version() {
  return SOFTDTW_TORCH_VERSION;
}

int64_t release_table_memory() {
  return table_memory::release();
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
