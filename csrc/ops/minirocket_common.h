// MiniRocket (aeon's _minirocket.py, ../shared/design/rocket.md §7): the per-position math shared
// by the CPU and CUDA kernels, and the host-side validation of the operators' inputs.
//
// Each of the 84 kernels has 9 taps at offsets (g - 4)·d, g = 0..8, with weight -1 at six taps and
// +2 at the three taps (a, b, c), the k-th of combinations(range(9), 3). aeon writes its output as
//   C = C_alpha + C_gamma[a] + C_gamma[b] + C_gamma[c]
// with C_alpha = -(sum of the 9 shifted copies of x) and C_gamma[g] = 3x shifted by (g - 4)·d
// (zero where the shift leaves the series). Bit-exactness with aeon needs its float32 rounding
// order, found by comparing with aeon 1.6 / numba 0.63 on real data (tests/test_minirocket.py):
//   C_alpha: -x[t], then + -x[t + o·d] for o = -4, -3, -2, -1, 1, 2, 3, 4 (taps outside skipped);
//   transform: ((C_alpha + C_gamma[a]) + C_gamma[b]) + C_gamma[c]   (the literal order);
//   fit (numba fastmath reorders it there): ((C_gamma[a] + C_gamma[b]) + C_gamma[c]) + C_alpha;
//   several channels: 0 + C(channel 0) + C(channel 1) + ... in the combination's channel order.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#if defined(__CUDACC__)
#define MINIROCKET_HD __host__ __device__ __forceinline__
#else
#define MINIROCKET_HD inline
#endif

namespace softdtw_torch {
namespace minirocket {

constexpr int64_t kKernels = 84;   // combinations(range(9), 3)
constexpr int64_t kMinLength = 9;  // one kernel span at dilation 1

constexpr const char* kFitOp = "minirocket_fit";
constexpr const char* kTransformOp = "minirocket_transform";

// Taps (a, b, c) of kernel k, in the lexicographic order of itertools.combinations(range(9), 3).
MINIROCKET_HD void kernel_taps(int64_t k, int* a, int* b, int* c) {
  int64_t index = 0;
  for (int i = 0; i < 7; ++i) {
    for (int j = i + 1; j < 8; ++j) {
      for (int l = j + 1; l < 9; ++l) {
        if (index == k) {
          *a = i;
          *b = j;
          *c = l;
          return;
        }
        ++index;
      }
    }
  }
  *a = *b = *c = 0;  // unreachable for k in [0, 84)
}

// C_alpha[t] of one channel row x[0, T): aeon's accumulation order, taps outside [0, T) skipped.
MINIROCKET_HD float alpha_at(const float* x, int64_t T, int64_t t, int64_t d) {
  float s = -x[t];
  for (int o = -4; o <= 4; ++o) {
    if (o == 0) continue;
    const int64_t u = t + o * d;
    if (u >= 0 && u < T) s = s + -x[u];
  }
  return s;
}

// C_gamma[g][t] = 3·x[t + (g - 4)·d], 0 outside the series (aeon's zero-initialised arrays).
MINIROCKET_HD float gamma_at(const float* x, int64_t T, int64_t t, int64_t d, int g) {
  const int64_t u = t + (g - 4) * d;
  return (u >= 0 && u < T) ? 3.0f * x[u] : 0.0f;
}

MINIROCKET_HD float combine_transform(float alpha, float ga, float gb, float gc) {
  return ((alpha + ga) + gb) + gc;
}

MINIROCKET_HD float combine_fit(float alpha, float ga, float gb, float gc) {
  return ((ga + gb) + gc) + alpha;
}

// Positions that count towards kernel k's features at dilation index di: aeon alternates between
// the whole output ("padded") and the output without 4d positions at each end.
MINIROCKET_HD void ppv_segment(int64_t T, int64_t d, int64_t di, int64_t k, int64_t* lo, int64_t* hi) {
  if ((di + k) % 2 == 0) {
    *lo = 0;
    *hi = T;
  } else {
    *lo = 4 * d < T ? 4 * d : T;
    *hi = T - 4 * d > *lo ? T - 4 * d : *lo;
  }
}

// aeon: float32(mean(C[seg] > bias)) = float32(count / len) in float64 (count and len exact in
// float64), for len > 0.
MINIROCKET_HD float ppv_ratio(double count, double len) {
  return static_cast<float>(count / len);
}

// An empty segment (a series no longer than 8d, only possible with x_lengths or foreign
// parameters) counts nothing: 0.
MINIROCKET_HD float ppv_value(int64_t count, int64_t len) {
  return len > 0 ? ppv_ratio(static_cast<double>(count), static_cast<double>(len)) : 0.0f;
}

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
// came; softdtw_torch/rocket/_minirocket.py repeats the shape-level ones in the fake kernel).
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
