// MiniRocket's transform on the GPU with the kernel of transform.cuh: validation (as on CPU), the
// layout's upload, allocation and the launch. Templated on how a kernel is launched
// (../../common/device.cuh), so the CUDA op (kernel.cu) and the CPU emulation tests (tests/cuda_emu)
// run the same code; the launch itself is in transform.cuh.
#pragma once

#include <ATen/ATen.h>

#include "../../common/minirocket/problem.h"
#include "transform.cuh"

namespace softdtw_torch {
namespace minirocket {

template <typename Launch>
at::Tensor transform_op(const Launch& launch, const at::Tensor& x, const at::Tensor& num_channels_per_combination,
                        const at::Tensor& channel_indices, const at::Tensor& dilations,
                        const at::Tensor& num_features_per_dilation, const at::Tensor& biases,
                        const std::optional<at::Tensor>& x_lengths) {
  const TransformProblem p = prepare_transform(x, num_channels_per_combination, channel_indices, dilations,
                                               num_features_per_dilation, biases, x_lengths);
  at::Tensor out = at::empty({p.n_cases, p.n_features}, p.x.options());
  if (p.n_cases == 0 || p.n_features == 0) return out;

  // The layout, split between the two kernels (split_layout), travels to the device once: the
  // dilations and the other combinations (as int64 rows), channels, biases.
  static_assert(sizeof(Combination) == sizeof(DeviceCombination), "same layout on host and device");
  const TransformLayout layout =
      split_layout(reinterpret_cast<const DeviceCombination*>(p.combinations.data()),
                   static_cast<int64_t>(p.combinations.size()), p.channel_indices.data(), p.n_timepoints);
  const int64_t n_dilations = static_cast<int64_t>(layout.dilations.size());
  const int64_t n_combinations = static_cast<int64_t>(layout.combinations.size());
  const auto long_options = at::TensorOptions().dtype(at::kLong);
  const auto upload_rows = [&](const void* rows, int64_t n, int64_t width) {
    return at::from_blob(const_cast<void*>(rows), {n, width}, long_options).to(x.device());
  };
  at::Tensor dilation_rows =
      upload_rows(layout.dilations.data(), n_dilations, sizeof(DeviceDilation) / sizeof(int64_t));
  at::Tensor combination_rows =
      upload_rows(layout.combinations.data(), n_combinations, sizeof(DeviceCombination) / sizeof(int64_t));
  at::Tensor channels =
      at::tensor(at::ArrayRef<int32_t>(p.channel_indices), at::TensorOptions().dtype(at::kInt)).to(x.device());
  at::Tensor bias = at::tensor(at::ArrayRef<float>(p.biases), at::TensorOptions().dtype(at::kFloat)).to(x.device());

  launch_transform(launch, p.x.data_ptr<float>(), p.x_lengths.defined() ? p.x_lengths.data_ptr<int64_t>() : nullptr,
                   reinterpret_cast<const DeviceDilation*>(dilation_rows.data_ptr<int64_t>()), n_dilations,
                   reinterpret_cast<const DeviceCombination*>(combination_rows.data_ptr<int64_t>()), n_combinations,
                   channels.data_ptr<int32_t>(), bias.data_ptr<float>(), out.data_ptr<float>(), p.n_cases, p.n_channels,
                   p.n_timepoints, p.n_features);
  return out;
}

}  // namespace minirocket
}  // namespace softdtw_torch
