// MiniRocket (aeon's _minirocket.py, docs/design/rocket.md §7): the per-position math shared by
// the CPU and CUDA kernels (no ATen: device code includes it).
//
// Each of the 84 kernels has 9 taps at offsets (g - 4)·d, g = 0..8, with weight -1 at six taps and
// +2 at the three taps (a, b, c), the k-th of combinations(range(9), 3). aeon writes its output as
//   C = C_alpha + C_gamma[a] + C_gamma[b] + C_gamma[c]
// with C_alpha = -(sum of the 9 shifted copies of x) and C_gamma[g] = 3x shifted by (g - 4)·d
// (zero where the shift leaves the series). Bit-exactness with aeon needs its float32 rounding
// order, found by comparing with aeon 1.6 / numba 0.63 on real data (tests/rocket/test_minirocket.py):
//   C_alpha: -x[t], then + -x[t + o·d] for o = -4, -3, -2, -1, 1, 2, 3, 4 (taps outside skipped);
//   transform: ((C_alpha + C_gamma[a]) + C_gamma[b]) + C_gamma[c]   (the literal order);
//   fit (numba fastmath reorders it there): ((C_gamma[a] + C_gamma[b]) + C_gamma[c]) + C_alpha
//     (MultiRocket's one-channel fit: see FitOrder);
//   several channels: 0 + C(channel 0) + C(channel 1) + ... in the combination's channel order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../macros.h"

namespace softdtw_torch {
namespace minirocket {

constexpr int64_t kKernels = 84;   // combinations(range(9), 3)
constexpr int64_t kMinLength = 9;  // one kernel span at dilation 1

// A combination's layout as the CUDA kernels read it, one row of 7 int64 (Combination in problem.h).
struct DeviceCombination {
  int64_t dilation, dilation_index, kernel, channel_start, n_channels, feature_start, n_features;
};

// Taps (a, b, c) of kernel k, in the lexicographic order of itertools.combinations(range(9), 3).
constexpr SOFTDTW_TORCH_HOST_DEVICE void kernel_taps(int64_t k, int* a, int* b, int* c) {
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

struct Taps {
  int a, b, c;
};
constexpr SOFTDTW_TORCH_HOST_DEVICE Taps taps_of(int64_t k) {
  Taps taps{0, 0, 0};
  kernel_taps(k, &taps.a, &taps.b, &taps.c);
  return taps;
}

// Calls f(std::integral_constant<int, K>{}) for k = K, K + 1, ..., 83: the kernel index is a
// compile-time constant in f, so that its taps (taps_of) index register arrays.
template <int K, typename F>
SOFTDTW_TORCH_HOST_DEVICE void for_each_kernel(F&& f) {
  if constexpr (K < kKernels) {
    f(std::integral_constant<int, K>{});
    for_each_kernel<K + 1>(f);
  }
}

// C_alpha[t] of one channel row x[0, T): aeon's accumulation order, taps outside [0, T) skipped.
SOFTDTW_TORCH_HOST_DEVICE float alpha_at(const float* x, int64_t T, int64_t t, int64_t d) {
  float s = -x[t];
  for (int o = -4; o <= 4; ++o) {
    if (o == 0) continue;
    const int64_t u = t + o * d;
    if (u >= 0 && u < T) s = s + -x[u];
  }
  return s;
}

// 3·x rounded to float32 on its own, as aeon stores it in C_gamma before any sum: on the GPU an
// explicit round-to-nearest multiply, which nvcc never contracts with the addition that follows
// (combine_transform) into an FMA; the CPU build disables contraction (-ffp-contract=off).
SOFTDTW_TORCH_HOST_DEVICE float times3(float x) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return __fmul_rn(3.0f, x);
#else
  return 3.0f * x;
#endif
}

// C_gamma[g][t] = 3·x[t + (g - 4)·d], 0 outside the series (aeon's zero-initialised arrays).
SOFTDTW_TORCH_HOST_DEVICE float gamma_at(const float* x, int64_t T, int64_t t, int64_t d, int g) {
  const int64_t u = t + (g - 4) * d;
  return (u >= 0 && u < T) ? times3(x[u]) : 0.0f;
}

SOFTDTW_TORCH_HOST_DEVICE float combine_transform(float alpha, float ga, float gb, float gc) {
  return ((alpha + ga) + gb) + gc;
}

// The fit's order. aeon's MultiRocket fits one-channel data with a function of its own, where
// numba's fastmath reorders the same source differently: ((C_gamma[a] + C_gamma[c]) + C_gamma[b]) +
// C_alpha (found on GunPoint; tests/rocket/test_multirocket.py).
enum class FitOrder { kMiniRocket, kMultiRocketUnivariate };

SOFTDTW_TORCH_HOST_DEVICE float combine_fit(float alpha, float ga, float gb, float gc,
                                            FitOrder order = FitOrder::kMiniRocket) {
  return order == FitOrder::kMiniRocket ? ((ga + gb) + gc) + alpha : ((ga + gc) + gb) + alpha;
}

// Positions that count towards kernel k's features at dilation index di: aeon alternates between
// the whole output ("padded") and the output without 4d positions at each end.
SOFTDTW_TORCH_HOST_DEVICE void ppv_segment(int64_t T, int64_t d, int64_t di, int64_t k, int64_t* lo, int64_t* hi) {
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
SOFTDTW_TORCH_HOST_DEVICE float ppv_ratio(double count, double len) {
  return static_cast<float>(count / len);
}

// An empty segment (a series no longer than 8d, only possible with x_lengths or foreign
// parameters) counts nothing: 0.
SOFTDTW_TORCH_HOST_DEVICE float ppv_value(int64_t count, int64_t len) {
  return len > 0 ? ppv_ratio(static_cast<double>(count), static_cast<double>(len)) : 0.0f;
}

}  // namespace minirocket
}  // namespace softdtw_torch
