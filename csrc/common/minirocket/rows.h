// MiniRocket's row loops on the CPU (defined, multi-versioned, in kernel.cpp), shared with
// MultiRocket's CPU kernel, which convolves with the same kernels in the same rounding order.
#pragma once

#include <array>
#include <cstdint>

#include "math.h"

namespace softdtw_torch {
namespace minirocket {

// kernel_taps(k) for every kernel, computed at compile time (the search in kernel_taps walks the
// combinations: a few percent of MultiRocket's time on short series when called per kernel), so
// that loops written for given kernels can take their taps as constants.
inline constexpr std::array<std::array<int, 3>, kKernels> kTaps = [] {
  std::array<std::array<int, 3>, kKernels> taps{};
  for (int64_t k = 0; k < kKernels; ++k) kernel_taps(k, &taps[k][0], &taps[k][1], &taps[k][2]);
  return taps;
}();

// acc[t] = acc[t] + v[t], t < n.
void add_to(float* acc, const float* v, int64_t n);

// out[t] (+)= ((alpha[t] + ga[t]) + gb[t]) + gc[t] (math.h's combine_transform); the first channel
// (first = true) starts from 0 like aeon's np.sum over channels.
void combine_channel(float* out, const float* alpha, const float* ga, const float* gb, const float* gc, int64_t n,
                     bool first);

// out[t] = a[t] + b[t].
void add_rows(float* out, const float* a, const float* b, int64_t n);

}  // namespace minirocket
}  // namespace softdtw_torch
