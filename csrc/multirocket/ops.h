// The MultiRocket ops' C++ signatures (one per schema in library.cpp, written once here) and their
// dispatcher handles, for the C++ code that calls them (autograd.cpp).
#pragma once

#include <ATen/ATen.h>

#include <tuple>

#include "../common/op.h"

namespace softdtw_torch::multirocket {

using Tensor = at::Tensor;

// aeon's parameter and parameter1: MiniRocket's five arrays for the series, then for its first
// difference.
using Fit = std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor>(
    const Tensor& x, int64_t n_kernels, int64_t max_dilations_per_kernel, int64_t seed);
using Transform = Tensor(const Tensor& x, const Tensor& num_channels_per_combination, const Tensor& channel_indices,
                         const Tensor& dilations, const Tensor& num_features_per_dilation, const Tensor& biases,
                         const Tensor& diff_dilations, const Tensor& diff_num_features_per_dilation,
                         const Tensor& diff_biases, const OptTensor& x_lengths);

namespace ops {
inline const Op<Fit> multirocket_fit{"softdtw_torch::multirocket_fit"};
inline const Op<Transform> multirocket_transform{"softdtw_torch::multirocket_transform"};
}  // namespace ops

}  // namespace softdtw_torch::multirocket
