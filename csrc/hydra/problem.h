// Hydra: the host-side validation of the operators' inputs (one message per mistake, the same on
// every device; softdtw_torch/_fake/hydra.py repeats the shape-level ones) and the validated
// problem the CPU and CUDA kernels read.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>

#include "math.h"

namespace softdtw_torch {
namespace hydra {

constexpr const char* kFitOp = "hydra_fit";
constexpr const char* kTransformOp = "hydra_transform";
constexpr const char* kBackwardOp = "_hydra_transform_backward";

using Parameters = std::tuple<at::Tensor, at::Tensor>;

// The validated transform: x and weights contiguous, in the compute dtype (float64 for float64 x,
// float32 otherwise, as aeon's float32), on x's device; channels int64 there; x_lengths int64
// there or undefined (every case has n_timepoints).
struct TransformProblem {
  at::Tensor x, weights, channels, x_lengths;
  int64_t n_cases = 0, n_channels = 0, n_timepoints = 0;
  int64_t n_dilations = 0, n_representations = 0, n_groups = 0, n_kernels = 0, channels_per_group = 0;

  int64_t n_items() const { return n_dilations * n_representations * n_groups; }  // groups per case
  int64_t n_features() const { return n_dilations * n_representations * kBlocks * n_groups * n_kernels; }
  // Where group item (dilation i, representation r, group g) writes its count_max block; its
  // count_min block follows n_groups·n_kernels later.
  int64_t feature_offset(int64_t i, int64_t r, int64_t g) const {
    return ((i * n_representations + r) * kBlocks * n_groups + g) * n_kernels;
  }
};

// x (n_cases, n_channels, n_timepoints): floating point, at least one channel and kMinLength time
// points (the fit's and the transform's check, under op's name).
void check_series(const char* op, const at::Tensor& x);

// Checks every input of hydra_transform (and of its backward, op naming the caller).
TransformProblem prepare_transform(const char* op, const at::Tensor& x, const at::Tensor& weights,
                                   const at::Tensor& channels, const std::optional<at::Tensor>& x_lengths);

// The features overflow only for |x| near float32's largest values (the responses are bounded by
// max |x| · sum |w|, but a difference of two such values, or a sum over many positions, is not):
// refused, as MultiRocket refuses an overflowing mean, instead of returning inf or NaN.
void check_features_finite(const at::Tensor& features);

// aeon's _HydraInternal.__init__ after torch.manual_seed(seed), with torch's CPU generator: the
// same draws, normalised by the same ATen ops (x's shape is all that is read; CPU tensors out);
// hydra_fit's body (fit.cpp).
Parameters fit_cpu(const at::Tensor& x, int64_t n_kernels, int64_t n_groups, int64_t max_num_channels, int64_t seed);

}  // namespace hydra
}  // namespace softdtw_torch
