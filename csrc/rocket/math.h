// Arithmetic shared by the CPU and CUDA ROCKET kernels, written so that both reproduce aeon's
// results bit for bit (see docs/design/rocket.md §4–5).
#pragma once

#include <cmath>
#include <cstdint>

#include "../common/macros.h"
#include "../common/rounding.h"

namespace softdtw_torch {

// How a kernel's response s = b + sum_j sum_c w[c,j] x[ch[c], t + j d] is accumulated: the term
// order is always aeon's (taps outer, selected channels inner); the modes differ in precision and
// in whether each step is one fused multiply-add.
//  - Float32Fma: float32, s = fma(w, x, s): aeon's numba code on float32 input (and aeon >= 1.6,
//    which casts every input to float32 before convolving).
//  - Float64: float64, s = fma(w, x, s): aeon's numba code run on float64 input (aeon <= 1.5).
//  - Float32: float32, s = s + w * x rounded twice (no FMA): aeon PR #3644's proposal.
enum class RocketAccumulate { Float64, Float32Fma, Float32 };

template <typename acc_t, bool kFma>
SOFTDTW_TORCH_HOST_DEVICE acc_t rocket_step(acc_t s, acc_t w, acc_t x) {
#if SOFTDTW_TORCH_DEVICE_PATH
  if constexpr (kFma) {
    return ::fma(w, x, s);  // float and double overloads map to __fmaf_rn / __fma_rn
  } else if constexpr (sizeof(acc_t) == 4) {
    return __fadd_rn(s, __fmul_rn(w, x));  // the _rn intrinsics are never contracted into an FMA
  } else {
    return __dadd_rn(s, __dmul_rn(w, x));
  }
#else
  if constexpr (kFma) {
    return std::fma(w, x, s);
  } else {
    return s + w * x;  // built with -ffp-contract=off: two roundings
  }
#endif
}


// numpy's pairwise summation of n contiguous values (numpy/_core/src/umath/loops_utils.h.src),
// as np.add.reduce uses it along a contiguous axis: blocks of up to 128 summed with 8
// accumulators, larger ranges split in two at a multiple of 8. np.sum/np.mean/np.std start from
// 0 and add this sum, so the result is 0 + pairwise_sum(values).
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T numpy_pairwise_sum(const T* a, int64_t n) {
  if (n < 8) {
    T res = T(-0.0);
    for (int64_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    T r[8];
    for (int k = 0; k < 8; ++k) r[k] = a[k];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int k = 0; k < 8; ++k) r[k] += a[i + k];
    }
    T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  int64_t half = n / 2;
  half -= half % 8;
  return numpy_pairwise_sum(a, half) + numpy_pairwise_sum(a + half, n - half);
}

// np.mean(row) and np.std(row) (population) in the row's own precision, as numpy computes them.
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T numpy_mean(const T* row, int64_t n) {
  return (T(0) + numpy_pairwise_sum(row, n)) / static_cast<T>(n);
}

// Squared deviations are written to `scratch` (n values) because numpy sums them as an array.
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T numpy_std(const T* row, int64_t n, T mean, T* scratch) {
  for (int64_t i = 0; i < n; ++i) {
    const T dev = row[i] - mean;
    scratch[i] = dev * dev;
  }
  return std::sqrt((T(0) + numpy_pairwise_sum(scratch, n)) / static_cast<T>(n));
}

// Number of output positions of a kernel of length L, dilation d and padding p on a series of
// length T (aeon's output_length); <= 0 means the kernel does not fit even with its padding.
SOFTDTW_TORCH_HOST_DEVICE int64_t rocket_output_length(int64_t T, int64_t L, int64_t d, int64_t p) {
  return T + 2 * p - (L - 1) * d;
}

}  // namespace softdtw_torch
