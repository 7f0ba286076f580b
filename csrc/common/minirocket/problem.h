// MiniRocket's kernels (shared by the minirocket and multirocket families): the host-side
// validation of the operators' inputs (one message per mistake, the same on every device;
// softdtw_torch/_fake/minirocket.py repeats the shape-level ones), the validated problem the CPU
// and CUDA kernels read, and the fit (fit.cpp).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "../numpy_random.h"
#include "math.h"

namespace softdtw_torch {
namespace minirocket {

constexpr const char* kFitOp = "minirocket_fit";
constexpr const char* kTransformOp = "minirocket_transform";

// x (n_cases, n_channels, n_timepoints): floating point, at least one channel and min_length time
// points (MiniRocket 9; MultiRocket 10, as its first difference needs 9).
void check_series(const char* op, const at::Tensor& x, int64_t min_length = kMinLength);

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
// Who is checking: the op named in the messages, its shortest series (check_series) and a prefix
// for the parameters' names (MultiRocket's "diff_" parameters of the first difference).
struct TransformNames {
  const char* op = kTransformOp;
  int64_t min_length = kMinLength;
  const char* parameter_prefix = "";
  int64_t outputs_per_feature = 1;  // float32 outputs per fitted feature (memory preflight; 0: none)
};

TransformProblem prepare_transform(const at::Tensor& x, const at::Tensor& num_channels_per_combination,
                                   const at::Tensor& channel_indices, const at::Tensor& dilations,
                                   const at::Tensor& num_features_per_dilation, const at::Tensor& biases,
                                   const std::optional<at::Tensor>& x_lengths, bool to_float32 = true,
                                   const TransformNames& names = {});

// The error for NaN or inf in x (checked after the conversion to float32, like aeon's astype); it
// ends with aeon's words for NaN ("has missing values"), so code that matches aeon's error matches.
constexpr const char* kNotFiniteMessage =
    ": expected x to contain only finite values (after conversion to float32), got NaN or inf (x has missing "
    "values or infinities)";

using Parameters = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

// aeon's _static_fit on the CPU, minirocket_fit's body (fit.cpp; x on any device is read on the CPU;
// the results are CPU tensors).
Parameters fit_cpu(const at::Tensor& x, int64_t n_features, int64_t max_dilations_per_kernel, int64_t seed);

// The fit's body, for x already float32, finite, contiguous and on the CPU (x's checks are the
// caller's, under its op's name): the channel combinations come from numpy_rng (numpy's global
// stream, which MultiRocket carries on from its base series to its first difference), the
// examples from numba's stream re-seeded with seed; order: how each output is summed (math.h).
Parameters fit_parameters(const char* op, const at::Tensor& x, int64_t n_features, int64_t max_dilations, int64_t seed,
                          NumpyLegacyRandom& numpy_rng, FitOrder order);

}  // namespace minirocket
}  // namespace softdtw_torch
