// MiniRocket: the host-side validation of the operators' inputs (one message per mistake, the same
// on every device; softdtw_torch/_fake/minirocket.py repeats the shape-level ones) and the
// validated problem the CPU and CUDA kernels read.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "math.h"

namespace softdtw_torch {
namespace minirocket {

constexpr const char* kFitOp = "minirocket_fit";
constexpr const char* kTransformOp = "minirocket_transform";

// x (n_cases, n_channels, n_timepoints): floating point, at least one channel and 9 time points.
void check_series(const char* op, const at::Tensor& x);

// x32 (x converted to float32) finite within each case's first lengths[i] time points (lengths
// undefined: all of them).
void check_finite(const char* op, const at::Tensor& x32, const at::Tensor& lengths);

// The validated parameters of minirocket_transform, as host vectors, with the offsets the
// kernels read: one row per (dilation, kernel) combination, dilation-major like aeon.
struct Combination {
  int64_t dilation, dilation_index, kernel, channel_start, n_channels, feature_start, n_features;
};

struct TransformProblem {
  at::Tensor x;          // (n_cases, n_channels, n_timepoints) contiguous, on x's device, float32
                         // (x's own dtype from prepare_transform(..., to_float32 = false))
  at::Tensor x_lengths;  // int64 (n_cases,) on x's device, or undefined (every case has n_timepoints)
  std::vector<Combination> combinations;
  std::vector<int32_t> channel_indices;
  std::vector<float> biases;
  int64_t n_cases = 0, n_channels = 0, n_timepoints = 0, n_features = 0, max_dilation = 1;
};

// Checks every input of minirocket_transform (messages name the op, what was expected and what
// came; softdtw_torch/_fake/minirocket.py repeats the shape-level ones in the fake kernel).
// to_float32: converts x to float32 and checks that it is finite. The CPU kernel passes false and
// does both itself while it reads each case: whole-tensor passes are parallel regions of their
// own, whose thread wake-ups cost more than the passes on a busy machine.
TransformProblem prepare_transform(const at::Tensor& x, const at::Tensor& num_channels_per_combination,
                                   const at::Tensor& channel_indices, const at::Tensor& dilations,
                                   const at::Tensor& num_features_per_dilation, const at::Tensor& biases,
                                   const std::optional<at::Tensor>& x_lengths, bool to_float32 = true);

// The error for NaN or inf in x (checked after the conversion to float32, like aeon's astype).
constexpr const char* kNotFiniteMessage =
    ": expected x to contain only finite values (after conversion to float32), got NaN or inf";

// aeon's _static_fit on the CPU (x on any device is read on the CPU; the results are CPU tensors).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fit_cpu(const at::Tensor& x,
                                                                               int64_t n_features,
                                                                               int64_t max_dilations_per_kernel,
                                                                               int64_t seed);

}  // namespace minirocket
}  // namespace softdtw_torch
