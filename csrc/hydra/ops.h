// The Hydra ops' C++ signatures (one per schema in library.cpp, written once here) and their
// dispatcher handles, for the C++ code that calls them (autograd.cpp, api.cpp).
#pragma once

#include <ATen/ATen.h>

#include <tuple>

#include "../common/op.h"

namespace softdtw_torch::hydra {

using Tensor = at::Tensor;

// aeon's _HydraInternal.W, as (n_dilations, n_representations, n_groups, n_kernels, 9) float32, and
// its idx, stacked: (n_dilations, n_representations, n_groups, channels_per_group) int64.
using Fit = std::tuple<Tensor, Tensor>(const Tensor& x, int64_t n_kernels, int64_t n_groups, int64_t max_num_channels,
                                       int64_t seed);
using Transform = Tensor(const Tensor& x, const Tensor& weights, const Tensor& channels, const OptTensor& x_lengths);
// The gradient of the count_max features w.r.t. the groups' rows, (n_cases, n_dilations,
// n_representations, n_groups, n_timepoints) (the difference's rows use n_timepoints - 1), and
// w.r.t. the weights, per case: (n_cases, n_dilations, n_representations, n_groups, n_kernels, 9).
using Backward = std::tuple<Tensor, Tensor>(const Tensor& grad, const Tensor& x, const Tensor& weights,
                                            const Tensor& channels, const OptTensor& x_lengths);

namespace ops {
inline const Op<Fit> hydra_fit{"softdtw_torch::hydra_fit"};
inline const Op<Transform> hydra_transform{"softdtw_torch::hydra_transform"};
inline const Op<Backward> hydra_transform_backward{"softdtw_torch::_hydra_transform_backward"};
}  // namespace ops

}  // namespace softdtw_torch::hydra
