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

  // The layout travels to the device once: combinations (as int64 rows), channels, biases.
  const int64_t n_combinations = static_cast<int64_t>(p.combinations.size());
  static_assert(sizeof(Combination) == sizeof(DeviceCombination), "same layout on host and device");
  const auto long_options = at::TensorOptions().dtype(at::kLong);
  at::Tensor combinations =
      at::from_blob(const_cast<Combination*>(p.combinations.data()), {n_combinations, 7}, long_options)
          .to(x.device());
  at::Tensor channels =
      at::tensor(at::ArrayRef<int32_t>(p.channel_indices), at::TensorOptions().dtype(at::kInt)).to(x.device());
  at::Tensor bias = at::tensor(at::ArrayRef<float>(p.biases), at::TensorOptions().dtype(at::kFloat)).to(x.device());

  launch_transform(launch, p.x.data_ptr<float>(), p.x_lengths.defined() ? p.x_lengths.data_ptr<int64_t>() : nullptr,
                   reinterpret_cast<const DeviceCombination*>(combinations.data_ptr<int64_t>()),
                   channels.data_ptr<int32_t>(), bias.data_ptr<float>(), out.data_ptr<float>(), p.n_cases,
                   p.n_channels, p.n_timepoints, n_combinations, p.n_features);
  return out;
}

}  // namespace minirocket
}  // namespace softdtw_torch
