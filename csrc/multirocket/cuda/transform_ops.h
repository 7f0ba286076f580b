// MultiRocket's transform on the GPU with the kernel of transform.cuh: validation (as on CPU), the
// first difference, the layout (make_layout, also the torch-free harness's input), its upload,
// allocation and the launch. Templated on how a kernel is
// launched (../../common/device.cuh), so the CUDA op (kernel.cu) and the CPU emulation tests
// (tests/cuda_emu) run the same code.
#pragma once

#include <ATen/ATen.h>

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
  const auto on_device = [&](auto values, at::ScalarType dtype) {
    return at::tensor(at::ArrayRef<typename decltype(values)::value_type>(values), at::TensorOptions().dtype(dtype))
        .to(x.device());
  };
  std::vector<minirocket::Combination> combinations = layout.combinations;
  at::Tensor combination_rows =
      at::from_blob(combinations.data(), {n_combinations, 7}, at::TensorOptions().dtype(at::kLong)).to(x.device());
  at::Tensor feature_rows = on_device(layout.feature_combination, at::kInt);
  at::Tensor channels = on_device(layout.channel_indices, at::kInt);
  at::Tensor bias_values = on_device(layout.biases, at::kFloat);
  at::Tensor overflow = at::zeros({1}, x.options().dtype(at::kInt));

  launch_transform(launch, s.x.data_ptr<float>(), difference.data_ptr<float>(),
                   s.x_lengths.defined() ? s.x_lengths.data_ptr<int64_t>() : nullptr,
                   reinterpret_cast<const DeviceCombination*>(combination_rows.data_ptr<int64_t>()),
                   feature_rows.data_ptr<int32_t>(), channels.data_ptr<int32_t>(), bias_values.data_ptr<float>(),
                   out.data_ptr<float>(), overflow.data_ptr<int>(), s.n_cases, s.n_channels, T, p.n_features);
  TORCH_CHECK_VALUE(overflow.item<int>() == 0, kTransformOp, kOverflowMessage);
  return out;
}

}  // namespace multirocket
}  // namespace softdtw_torch
