// MultiRocket (aeon's _multirocket.py, docs/design/rocket.md §8): the per-position math shared by
// the CPU and CUDA kernels (no ATen: device code includes it).
//
// MultiRocket runs MiniRocket's 84 kernels (../minirocket/math.h: taps, the float32 rounding order
// of C = ((C_alpha + C_gamma[a]) + C_gamma[b]) + C_gamma[c]) over two representations of each
// case: the series itself and its first difference (np.diff of the float32 series). Each
// (kernel, bias) gives four pooled features over the counted segment of C (MiniRocket's
// ppv_segment), aeon's loop for feature index j = 0, 1, ... over the segment:
//   C[j] > bias:  ppv += 1, mean_index += j, mean += float64(float32(C[j] + bias))
//   C[j] < bias:  stretch = j - last; max_stretch = max(max_stretch, stretch); last = j
// and at the end stretch = len - 1 - last once more (last starts at 0, not at a negative value).
// PPV = ppv / len, LSPV = max_stretch, MPV = mean / ppv (0 without positives), MIPV =
// mean_index / ppv (-1 without positives), in float64 rounded to float32, MPV and MIPV as
// mean · (1 / ppv) (Pooling::write). Found to match aeon 1.6 / numba 0.63 bit for bit: the
// float64 sum `mean` in this sequential order (no reassociation), the literal order of C.
//
// aeon's transform of the first difference shifts its four left taps by one: it computes the
// taps of a series of length L - 1 with the slice ends of length L (`end = n_timepoints -
// padding`), so tap g < 4 reads x'[t + (g - 4)·d + 1] instead of x'[t + (g - 4)·d] (with d = 1,
// tap 3 reads x'[t] itself). The fit computes the difference's biases with the true taps. Both
// are reproduced as aeon runs them (tap_shift).
#pragma once

#include <cstdint>

#include "../common/macros.h"
#include "../common/minirocket/math.h"

namespace softdtw_torch {
namespace multirocket {

using minirocket::kKernels;
constexpr int64_t kMinLength = 10;  // MiniRocket's 9 for the first difference
constexpr int64_t kPoolings = 4;    // PPV, LSPV, MPV, MIPV: the feature blocks' order in aeon's output

// Where tap g (0..8) of a kernel at dilation d reads, relative to t, in aeon's transform of the
// series (difference = false) or of its first difference (true; see the file comment).
SOFTDTW_TORCH_HOST_DEVICE int64_t tap_shift(int g, int64_t d, bool difference) {
  return (g - 4) * d + (difference && g < 4 ? 1 : 0);
}

// C_alpha[t] of one channel row x[0, T): -x[t], then + -x[t + shift] for taps 0..3, 5..8 (aeon's
// order), taps outside [0, T) skipped.
SOFTDTW_TORCH_HOST_DEVICE float alpha_at(const float* x, int64_t T, int64_t t, int64_t d, bool difference) {
  float s = -x[t];
  for (int g = 0; g < 9; ++g) {
    if (g == 4) continue;
    const int64_t u = t + tap_shift(g, d, difference);
    if (u >= 0 && u < T) s = s + -x[u];
  }
  return s;
}

// C_gamma[g][t] = 3·x[t + shift], 0 outside the series.
SOFTDTW_TORCH_HOST_DEVICE float gamma_at(const float* x, int64_t T, int64_t t, int64_t d, int g, bool difference) {
  const int64_t u = t + tap_shift(g, d, difference);
  return (u >= 0 && u < T) ? minirocket::times3(x[u]) : 0.0f;
}

// The four pooled values of one (kernel, bias) over a segment, fed value by value in order.
// LSPV is kept as the largest distance `since` reached by any position to the last value below
// the bias (or to the segment's start): aeon's stretches are those distances at the values below
// it, and its final stretch the distance at the last position; every other distance is smaller
// than one of those (it grows by one per position until a value below resets it).
struct Pooling {
  int64_t positives = 0, index_sum = 0, since = 0, longest = 0;
  double sum = 0.0;

  SOFTDTW_TORCH_HOST_DEVICE void add(float value, float bias, int64_t j) {
    longest = since > longest ? since : longest;
    since = value < bias ? 1 : since + 1;
    if (value > bias) {
      ++positives;
      index_sum += j;
      sum += static_cast<double>(value + bias);
    }
  }

  // The CPU kernel computes the same values 8 lanes at a time (pooled_values in cpu/kernel.cpp):
  // a change here goes there too.
  // out[0 .. 3 * stride] step stride: PPV, LSPV, MPV, MIPV of a segment of length len. An empty
  // segment (a series no longer than 8d, only with x_lengths or foreign parameters; aeon divides
  // by zero there) gives PPV 0, LSPV 0, MPV 0 and MIPV -1, the values of a segment without
  // positives.
  SOFTDTW_TORCH_HOST_DEVICE void write(int64_t len, float* out, int64_t stride) const {
    out[0] = minirocket::ppv_value(positives, len);
    out[stride] = static_cast<float>(longest);
    // aeon's compiled loop divides by ppv once and multiplies (fastmath's reciprocal of a divisor
    // used twice): MPV differs from mean / ppv in the last bit for a few features in 10^5.
    const double inverse = positives > 0 ? 1.0 / static_cast<double>(positives) : 0.0;
    out[2 * stride] = positives > 0 ? static_cast<float>(sum * inverse) : 0.0f;
    out[3 * stride] = positives > 0 ? static_cast<float>(static_cast<double>(index_sum) * inverse) : -1.0f;
  }
};

}  // namespace multirocket
}  // namespace softdtw_torch
