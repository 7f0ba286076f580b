// MultiRocket's transform on the GPU with the kernel of transform.cuh: validation (as on CPU), the
// first difference, the layout (make_layout, also the torch-free harness's input; then
// split_multirocket_layout, as the harness splits it), its upload,
// allocation and the launch. Templated on how a kernel is
// launched (../../common/device.cuh), so the CUDA op (kernel.cu) and the CPU emulation tests
// (tests/cuda_emu) run the same code.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <vector>

#include "../problem.h"
#include "transform.cuh"

namespace softdtw_torch {
namespace multirocket {

// What the kernel reads besides x, as host arrays (uploaded once per call): both representations'
// combinations, the series' then the difference's; each feature's row there; the channels (the
// difference's are a prefix of the series'); the biases, the series' then the difference's.
struct Layout {
  std::vector<minirocket::Combination> combinations;
  std::vector<int32_t> feature_combination, channel_indices;
  std::vector<float> biases;
};

inline Layout make_layout(const TransformProblem& p) {
  static_assert(sizeof(minirocket::Combination) == sizeof(DeviceCombination), "same layout on host and device");
  Layout layout;
  layout.combinations = p.series.combinations;
  layout.combinations.insert(layout.combinations.end(), p.difference.combinations.begin(),
                             p.difference.combinations.end());
  for (size_t c = 0; c < layout.combinations.size(); ++c) {
    layout.feature_combination.insert(layout.feature_combination.end(),
                                      static_cast<size_t>(layout.combinations[c].n_features), static_cast<int32_t>(c));
  }
  layout.channel_indices = p.series.channel_indices;
  layout.biases = p.series.biases;
  layout.biases.insert(layout.biases.end(), p.difference.biases.begin(), p.difference.biases.end());
  return layout;
}

template <typename Launch>
at::Tensor transform_op(const Launch& launch, const at::Tensor& x, const at::Tensor& num_channels_per_combination,
                        const at::Tensor& channel_indices, const at::Tensor& dilations,
                        const at::Tensor& num_features_per_dilation, const at::Tensor& biases,
                        const at::Tensor& diff_dilations, const at::Tensor& diff_num_features_per_dilation,
                        const at::Tensor& diff_biases, const std::optional<at::Tensor>& x_lengths) {
  const TransformProblem p =
      prepare_transform(x, num_channels_per_combination, channel_indices, dilations, num_features_per_dilation, biases,
                        diff_dilations, diff_num_features_per_dilation, diff_biases, x_lengths);
  const minirocket::TransformProblem& s = p.series;
  at::Tensor out = at::empty({s.n_cases, 2 * kPoolings * p.n_features}, s.x.options());
  if (s.n_cases == 0 || p.n_features == 0) return out;
  const int64_t T = s.n_timepoints;
  // np.diff of the float32 series: one IEEE subtraction per value, on the device.
  const at::Tensor difference = (s.x.narrow(2, 1, T - 1) - s.x.narrow(2, 0, T - 1)).contiguous();

  const Layout layout = make_layout(p);
  const int64_t n_combinations = static_cast<int64_t>(layout.combinations.size());
  const DilationLayout split =
      split_multirocket_layout(reinterpret_cast<const DeviceCombination*>(layout.combinations.data()),
                               layout.feature_combination.data(), layout.channel_indices.data(), T, p.n_features);
  const auto on_device = [&](auto values, at::ScalarType dtype) {
    return at::tensor(at::ArrayRef<typename decltype(values)::value_type>(values), at::TensorOptions().dtype(dtype))
        .to(x.device());
  };
  const auto rows_on_device = [&](const void* rows, int64_t n, int64_t width) {
    return at::from_blob(const_cast<void*>(rows), {n, width}, at::TensorOptions().dtype(at::kLong)).to(x.device());
  };
  at::Tensor combination_rows = rows_on_device(layout.combinations.data(), n_combinations, 7);
  at::Tensor dilation_rows[2];
  int64_t n_dilations[2];
  const DeviceDilation* dilations_on_device[2];
  for (int r = 0; r < 2; ++r) {
    n_dilations[r] = static_cast<int64_t>(split.dilations[r].size());
    dilation_rows[r] = rows_on_device(split.dilations[r].data(), n_dilations[r], sizeof(DeviceDilation) / 8);
    dilations_on_device[r] = reinterpret_cast<const DeviceDilation*>(dilation_rows[r].data_ptr<int64_t>());
  }
  const bool features_left =
      std::any_of(split.feature_combination.begin(), split.feature_combination.end(), [](int32_t c) { return c >= 0; });
  at::Tensor feature_rows = on_device(split.feature_combination, at::kInt);
  at::Tensor channels = on_device(layout.channel_indices, at::kInt);
  at::Tensor bias_values = on_device(layout.biases, at::kFloat);
  at::Tensor overflow = at::zeros({1}, x.options().dtype(at::kInt));

  launch_transform(launch, s.x.data_ptr<float>(), difference.data_ptr<float>(),
                   s.x_lengths.defined() ? s.x_lengths.data_ptr<int64_t>() : nullptr, dilations_on_device, n_dilations,
                   reinterpret_cast<const DeviceCombination*>(combination_rows.data_ptr<int64_t>()),
                   feature_rows.data_ptr<int32_t>(), features_left, channels.data_ptr<int32_t>(),
                   bias_values.data_ptr<float>(), out.data_ptr<float>(), overflow.data_ptr<int>(), s.n_cases,
                   s.n_channels, T, p.n_features);
  TORCH_CHECK_VALUE(overflow.item<int>() == 0, kTransformOp, kOverflowMessage);
  return out;
}

}  // namespace multirocket
}  // namespace softdtw_torch
