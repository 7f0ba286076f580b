// MultiRocket: validation of the ops' inputs, shared by the CPU and CUDA kernels.
#include "problem.h"

#include <limits>

namespace softdtw_torch {
namespace multirocket {

TransformProblem prepare_transform(const at::Tensor& x, const at::Tensor& num_channels_per_combination,
                                   const at::Tensor& channel_indices, const at::Tensor& dilations,
                                   const at::Tensor& num_features_per_dilation, const at::Tensor& biases,
                                   const at::Tensor& diff_dilations, const at::Tensor& diff_num_features_per_dilation,
                                   const at::Tensor& diff_biases, const std::optional<at::Tensor>& x_lengths,
                                   bool to_float32) {
  const char* op = kTransformOp;
  TransformProblem p;
  p.series =
      minirocket::prepare_transform(x, num_channels_per_combination, channel_indices, dilations,
                                    num_features_per_dilation, biases, x_lengths, to_float32, {op, kMinLength, "", 2 * kPoolings});
  // The CPU kernel counts positions in 32-bit lanes.
  TORCH_CHECK_VALUE(x.size(2) <= std::numeric_limits<int32_t>::max(), op,
                    ": expected at most 2**31 - 1 time points, got x of shape ", x.sizes());
  TORCH_CHECK_VALUE(diff_dilations.dim() == 1, op, ": expected diff_dilations to be a 1-D tensor, got ",
                    diff_dilations.dim(), "-D");
  const int64_t n_diff_combinations = kKernels * diff_dilations.size(0);
  TORCH_CHECK_VALUE(n_diff_combinations <= num_channels_per_combination.size(0), op,
                    ": expected diff_dilations to have at most as many entries as dilations (", dilations.size(0),
                    "; the first difference uses the series' channel combinations), got ", diff_dilations.size(0));
  const at::Tensor diff_channels_per_combination = num_channels_per_combination.narrow(0, 0, n_diff_combinations);
  const int64_t n_diff_channels = diff_channels_per_combination.sum().item<int64_t>();
  p.difference =
      minirocket::prepare_transform(x, diff_channels_per_combination, channel_indices.narrow(0, 0, n_diff_channels),
                                    diff_dilations, diff_num_features_per_dilation, diff_biases, x_lengths,
                                    /*to_float32=*/false, {op, kMinLength, "diff_", /*outputs_per_feature=*/0});
  p.difference.x = p.series.x;  // converted (and checked) once
  p.n_features = p.series.n_features;
  TORCH_CHECK_VALUE(p.difference.n_features == p.n_features, op,
                    ": expected as many features for the first difference as for the series (84 * "
                    "sum(num_features_per_dilation) = ",
                    p.n_features,
                    "; aeon's layout), got 84 * sum(diff_num_features_per_dilation) = ", p.difference.n_features);
  return p;
}

}  // namespace multirocket
}  // namespace softdtw_torch
