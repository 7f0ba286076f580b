// Host-side code shared by the CPU and CUDA ROCKET kernels: validation of the series and of
// aeon's kernels tuple (one message per mistake, the same on every device; the fake kernels in
// softdtw_torch/_fake/rocket.py repeat the shape-level ones), and the per-kernel offsets.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "math.h"
#include "ops.h"

namespace softdtw_torch {

constexpr const char* kRocketTransformOp = "rocket_transform";
constexpr const char* kRocketConvolveOp = "rocket_convolve";
constexpr const char* kRocketNormaliseOp = "rocket_normalise";

// The kernels tuple, validated against a series with n_channels channels and laid out for the
// kernels: int32 fields and float32 weights/biases contiguous on the series' device, plus the
// start of each kernel's weights and channel indices (int64, K each).
struct RocketPlan {
  rocket::Kernels kernels;
  at::Tensor weight_offsets, channel_offsets;
  int64_t n_kernels = 0;
  int64_t max_kernel_channels = 0;  // max_i m_i
  int64_t max_taps = 0;             // max_i m_i * L_i
};

RocketPlan plan_rocket_kernels(const char* op, const rocket::Kernels& kernels, int64_t n_channels,
                               const at::Device& device);

// x (n_cases, n_channels, n_timepoints): floating point, non-empty, finite.
void check_rocket_series(const char* op, const at::Tensor& x);

// Optional lengths (n_cases,) with values in [1, n_timepoints], returned as int64 on `device`
// (undefined when absent: every case has the full length).
at::Tensor checked_rocket_lengths(const char* op, const std::optional<at::Tensor>& x_lengths, const at::Tensor& x);

RocketAccumulate parse_rocket_accumulate(const char* op, const std::string& accumulate);

// ppv_temperature: None (hard PPV, aeon's) or a positive finite temperature of the soft PPV.
void check_ppv_temperature(const char* op, const std::optional<double>& ppv_temperature);

// The accumulation mode as types, for the kernels' templates: Mode::acc (float or double), Mode::fma.
template <typename acc_t, bool kFma>
struct RocketMode {
  using acc = acc_t;
  static constexpr bool fma = kFma;
};

// Calls body(RocketMode<...>{}) for the accumulation mode.
template <typename Body>
void dispatch_rocket_accumulate(RocketAccumulate mode, const Body& body) {
  switch (mode) {
    case RocketAccumulate::Float64: return body(RocketMode<double, true>{});
    case RocketAccumulate::Float32Fma: return body(RocketMode<float, true>{});
    case RocketAccumulate::Float32: return body(RocketMode<float, false>{});
  }
}

// The dtype the series is convolved in: float64 for Float64, else float32.
at::ScalarType rocket_compute_dtype(RocketAccumulate mode);

// Validated inputs of a convolve op (forward or backward), converted to what the kernels read.
struct ConvolveInputs {
  RocketPlan plan;
  at::Tensor x;        // (n_cases, n_channels, T) contiguous in the compute dtype
  at::Tensor lengths;  // int64 (n_cases,) on x's device, or undefined
  RocketAccumulate mode;
};

ConvolveInputs prepare_convolve(const at::Tensor& x, const rocket::Kernels& kernels, c10::string_view accumulate,
                                const std::optional<at::Tensor>& x_lengths,
                                const std::optional<double>& ppv_temperature);

// _rocket_convolve_backward's validated inputs, for every device: the convolution's inputs, the
// upstream gradient (n_cases, 2K) as contiguous float32, the forward's argmax (n_cases, K) int64,
// and the zeroed float64 sums the kernels add into (x's, the weights', the biases' shapes).
struct ConvolveBackward {
  ConvolveInputs in;
  at::Tensor grad, argmax;
  at::Tensor x_grad, w_grad, b_grad;
  // The op's results: the sums in x's dtype and float32.
  std::tuple<at::Tensor, at::Tensor, at::Tensor> results(at::ScalarType x_dtype) const {
    return {x_grad.to(x_dtype), w_grad.to(at::kFloat), b_grad.to(at::kFloat)};
  }
};
ConvolveBackward prepare_convolve_backward(const at::Tensor& grad, const at::Tensor& x, const rocket::Kernels& kernels,
                                           const at::Tensor& argmax, c10::string_view accumulate,
                                           const std::optional<at::Tensor>& x_lengths,
                                           std::optional<double> ppv_temperature);

}  // namespace softdtw_torch
