// The MiniRocket ops' C++ signatures (one per schema in library.cpp, written once here) and their
// dispatcher handles, for the C++ code that calls them (autograd.cpp, api.cpp).
#pragma once

#include <ATen/ATen.h>

#include <tuple>

#include "../common/op.h"

namespace softdtw_torch::minirocket {

using Tensor = at::Tensor;

// aeon's five fitted arrays: num_channels_per_combination, channel_indices, dilations,
// num_features_per_dilation (int32), biases (float32).
using Fit = std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>(const Tensor& x, int64_t n_features,
                                                               int64_t max_dilations_per_kernel, int64_t seed);
using Transform = Tensor(const Tensor& x, const Tensor& num_channels_per_combination, const Tensor& channel_indices,
                         const Tensor& dilations, const Tensor& num_features_per_dilation, const Tensor& biases,
                         const OptTensor& x_lengths);

namespace ops {
inline const Op<Fit> minirocket_fit{"softdtw_torch::minirocket_fit"};
inline const Op<Transform> minirocket_transform{"softdtw_torch::minirocket_transform"};
}  // namespace ops

}  // namespace softdtw_torch::minirocket
