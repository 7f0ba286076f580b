// Hydra's avx2 path on the CPU (common/cpu.h; kernel.cpp's transform chooses it for float32):
// group_features on 8 positions at a time. Empty where the x86 intrinsics are not compiled.
#pragma once

#include "../../common/macros.h"

#if SOFTDTW_TORCH_X86_INTRINSICS
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "../math.h"

namespace softdtw_torch {
namespace hydra {

// group_features (math.h) on 8 positions at a time: the same fused multiply-adds in tap order, the
// same first maximum and minimum (strict comparisons in kernel order), the maxima added to
// count_max in position order. s: the padded row at position 0.
__attribute__((target("avx2,fma"))) inline void group_features_avx2(const float* s, int64_t length, int64_t d,
                                                                    const float* w, int64_t k, float* out_max,
                                                                    float* out_min) {
  for (int64_t j = 0; j < k; ++j) out_max[j] = out_min[j] = 0.0f;
  alignas(32) float best_lanes[8];
  alignas(32) int32_t arg_best_lanes[8], arg_worst_lanes[8];
  for (int64_t t0 = 0; t0 < length; t0 += 8) {
    __m256 v[kTaps];
    for (int tap = 0; tap < kTaps; ++tap) v[tap] = _mm256_loadu_ps(s + t0 + (tap - 4) * d);
    __m256 best = _mm256_setzero_ps(), worst = best;
    __m256i arg_best = _mm256_setzero_si256(), arg_worst = arg_best;
    for (int64_t j = 0; j < k; ++j) {
      const float* wj = w + j * kTaps;
      __m256 z = _mm256_setzero_ps();
      for (int tap = 0; tap < kTaps; ++tap) z = _mm256_fmadd_ps(_mm256_set1_ps(wj[tap]), v[tap], z);
      if (j == 0) {
        best = worst = z;
        continue;
      }
      const __m256i index = _mm256_set1_epi32(static_cast<int32_t>(j));
      const __m256 above = _mm256_cmp_ps(z, best, _CMP_GT_OQ), below = _mm256_cmp_ps(z, worst, _CMP_LT_OQ);
      best = _mm256_blendv_ps(best, z, above);
      worst = _mm256_blendv_ps(worst, z, below);
      arg_best = _mm256_castps_si256(
          _mm256_blendv_ps(_mm256_castsi256_ps(arg_best), _mm256_castsi256_ps(index), above));
      arg_worst = _mm256_castps_si256(
          _mm256_blendv_ps(_mm256_castsi256_ps(arg_worst), _mm256_castsi256_ps(index), below));
    }
    _mm256_store_ps(best_lanes, best);
    _mm256_store_si256(reinterpret_cast<__m256i*>(arg_best_lanes), arg_best);
    _mm256_store_si256(reinterpret_cast<__m256i*>(arg_worst_lanes), arg_worst);
    const int lanes = static_cast<int>(std::min<int64_t>(8, length - t0));
    for (int l = 0; l < lanes; ++l) {
      out_max[arg_best_lanes[l]] += best_lanes[l];
      out_min[arg_worst_lanes[l]] += 1.0f;
    }
  }
}

}  // namespace hydra
}  // namespace softdtw_torch
#endif
