// MultiRocket: the host-side validation of the operators' inputs (MiniRocket's checks, under
// MultiRocket's names; softdtw_torch/_fake/multirocket.py repeats the shape-level ones) and the
// validated problem the CPU and CUDA kernels read.
#pragma once

#include <ATen/ATen.h>

#include <optional>

#include "../common/minirocket/problem.h"
#include "math.h"

namespace softdtw_torch {
namespace multirocket {

constexpr const char* kFitOp = "multirocket_fit";
constexpr const char* kTransformOp = "multirocket_transform";

// aeon's MultiRocket.parameter and .parameter1, MiniRocket's five arrays each: the series' and
// its first difference's.
using Parameters = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
                              at::Tensor, at::Tensor, at::Tensor>;

// The two representations' MiniRocket problems, over the same x. aeon's transform reads the
// first difference with the series' channel combinations (its own, drawn by the fit, are not
// used), the first 84 per dilation of the difference: `difference` holds those.
struct TransformProblem {
  minirocket::TransformProblem series, difference;
  int64_t n_features = 0;  // features per pooling operator and representation (84 * sum(n_features_per_dilation))
};

TransformProblem prepare_transform(const at::Tensor& x, const at::Tensor& num_channels_per_combination,
                                   const at::Tensor& channel_indices, const at::Tensor& dilations,
                                   const at::Tensor& num_features_per_dilation, const at::Tensor& biases,
                                   const at::Tensor& diff_dilations, const at::Tensor& diff_num_features_per_dilation,
                                   const at::Tensor& diff_biases, const std::optional<at::Tensor>& x_lengths,
                                   bool to_float32 = true);

// The error for a mean of positive values beyond float32's range (|x| near 1e37).
constexpr const char* kOverflowMessage =
    ": expected the convolution outputs to fit in float32, got inf or NaN (|x| is too large; rescale x)";

// aeon's MultiRocket fit on the CPU, multirocket_fit's body (fit.cpp; x on any device is read on the
// CPU; CPU tensors out).
Parameters fit_cpu(const at::Tensor& x, int64_t n_kernels, int64_t max_dilations_per_kernel, int64_t seed);

}  // namespace multirocket
}  // namespace softdtw_torch
