// MultiRocket's avx512 path on the CPU (common/cpu.h; kernel.cpp's pool_groups and transpose_rows
// choose it): the pooling of two lane groups at once and the transposition of 16 positions at a
// time, on 512-bit vectors. Empty where the x86 intrinsics are not compiled.
#pragma once

#include "../../common/macros.h"

#if SOFTDTW_TORCH_X86_INTRINSICS
#include <immintrin.h>

#include <cstdint>

#include "pooling.h"

namespace softdtw_torch {
namespace multirocket {

SOFTDTW_TORCH_AVX512_WARNINGS_OFF

// 32 bytes from `low` in the low half of a 512-bit vector, 32 from `high` in its high half (8
// floats or int32 of two lane groups).
SOFTDTW_TORCH_AVX512_HELPER __m512d pair(const void* low, const void* high) {
  return _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(static_cast<const double*>(low))),
                            _mm256_loadu_pd(static_cast<const double*>(high)), 1);
}

// pool_block for two lane groups at once on 512-bit vectors, for Intel CPUs with AVX-512
// (the avx512 path): group a in lanes 0-7, group b in lanes 8-15, each lane's operations those
// of pool_block in the same order (the same bits). The compares go to mask registers, which the
// count, the terms and the reset of the run take directly, and the two groups' float64 sums are
// two independent chains. (One group at a time with mask registers measured no faster than
// pool_block: benchmarks/README.md.) kPicked: either group picks its columns.
template <bool kPicked>
__attribute__((target("avx512f,avx512vl"))) void pool_block_pair_avx512(const float* __restrict outputs,
                                                                         int64_t start, int64_t n,
                                                                         const LaneGroup& a, const LaneGroup& b,
                                                                         LaneState& state_a, LaneState& state_b) {
  const __m512 bias = _mm512_castpd_ps(pair(a.bias, b.bias));
  int32_t columns[2 * kLanes];  // lanes 0-7 pick among a's 8 columns, lanes 8-15 among b's
  for (int l = 0; l < kLanes; ++l) {
    columns[l] = a.picked ? a.pick[l] : l;
    columns[kLanes + l] = kLanes + (b.picked ? b.pick[l] : l);
  }
  const __m512i pick = _mm512_loadu_si512(columns);
  // The run lengths less one (since_1 = since - 1, longest_1 = longest - 1): the reset is then a
  // zeroing, which the add's mask does without a copy of the constant.
  const __m512i one = _mm512_set1_epi32(1);
  __m512i since_1 = _mm512_sub_epi32(_mm512_castpd_si512(pair(state_a.since, state_b.since)), one);
  __m512i longest_1 = _mm512_sub_epi32(_mm512_castpd_si512(pair(state_a.longest, state_b.longest)), one);
  __m512d sum_a = _mm512_loadu_pd(state_a.sum), sum_b = _mm512_loadu_pd(state_b.sum);
  __m512i count = _mm512_setzero_si512(), cumulated = _mm512_setzero_si512();
  const float* column_a = outputs + a.first;
  const float* column_b = outputs + b.first;
  for (int64_t j = 0; j < n; ++j) {
    __m512 v = _mm512_castpd_ps(pair(column_a + j * kStride, column_b + j * kStride));
    if (kPicked) v = _mm512_permutexvar_ps(pick, v);
    // above: v > bias; not_below: !(v < bias)
    const __mmask16 above = _mm512_cmp_ps_mask(v, bias, _CMP_GT_OQ);
    const __mmask16 not_below = _mm512_cmp_ps_mask(v, bias, _CMP_NLT_UQ);
    count = _mm512_mask_add_epi32(count, above, count, one);
    cumulated = _mm512_add_epi32(cumulated, count);
    const __m512 term = _mm512_maskz_add_ps(above, v, bias);  // float32(C[j] + bias), +0.0 where not above
    sum_a = _mm512_add_pd(sum_a, _mm512_cvtps_pd(_mm512_castps512_ps256(term)));
    sum_b = _mm512_add_pd(sum_b, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(term), 1))));
    longest_1 = _mm512_max_epi32(since_1, longest_1);
    since_1 = _mm512_maskz_add_epi32(not_below, since_1, one);  // since: 1 after a value below, else one more
  }
  const __m512i since = _mm512_add_epi32(since_1, one), longest = _mm512_add_epi32(longest_1, one);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(state_a.since), _mm512_castsi512_si256(since));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(state_b.since), _mm512_extracti64x4_epi64(since, 1));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(state_a.longest), _mm512_castsi512_si256(longest));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(state_b.longest), _mm512_extracti64x4_epi64(longest, 1));
  _mm512_storeu_pd(state_a.sum, sum_a);
  _mm512_storeu_pd(state_b.sum, sum_b);
  int32_t counts[2 * kLanes], cumulateds[2 * kLanes];
  _mm512_storeu_si512(counts, count);
  _mm512_storeu_si512(cumulateds, cumulated);
  for (int l = 0; l < 2 * kLanes; ++l) {
    LaneState& state = l < kLanes ? state_a : state_b;
    state.positives[l % kLanes] += counts[l];
    state.index_sum[l % kLanes] += (n + start) * counts[l] - cumulateds[l];
  }
}

// One stage of transpose_16_positions_avx512: a holds row r, b row r + 2^kBit (r's bit kBit 0),
// each at the lanes' 16 positions (or what the earlier stages left there). Afterwards bit kBit of the
// lane holds the row's bit, and a (b) holds the lanes whose position had bit kBit 0 (1): lane L of
// a is a[L] where L's bit is 0, else b[L - 2^kBit]; lane L of b is a[L + 2^kBit] where L's bit is
// 0, else b[L]. Two shuffles (one 128-bit-lane vshufps each for bit 1).
template <int kBit>
SOFTDTW_TORCH_AVX512_HELPER void exchange_bit(__m512& a, __m512& b) {
  static_assert(kBit >= 0 && kBit <= 2);
  __m512 low, high;
  if constexpr (kBit == 1) {
    low = _mm512_shuffle_ps(a, b, 0x44);   // a0 a1 b0 b1 in each 128-bit lane
    high = _mm512_shuffle_ps(a, b, 0xee);  // a2 a3 b2 b3
  } else {
    // Index 16 + i is b's lane i.
    const __m512i low_index =
        kBit == 0 ? _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30)
                  : _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
    const __m512i high_index =
        kBit == 0 ? _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31)
                  : _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
    low = _mm512_permutex2var_ps(a, low_index, b);
    high = _mm512_permutex2var_ps(a, high_index, b);
  }
  a = low;
  b = high;
}

// The low half of v at `at`, the high half 8 positions further (at + 8·kStride).
SOFTDTW_TORCH_AVX512_HELPER void store_positions(__m512 v, float* at) {
  _mm256_storeu_ps(at, _mm512_castps512_ps256(v));
  _mm256_storeu_pd(reinterpret_cast<double*>(at + kLanes * kStride), _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// transpose_8_rows 16 positions at a time on 512-bit vectors, for Intel CPUs with AVX-512
// (the avx512 path): 8 rows of 16 positions become, after three exchange_bit stages, 8
// vectors of which vector k holds positions t + k (low half) and t + 8 + k (high half), 8 rows
// each. 24 shuffles per 128 values, against 24 per 64 with 256-bit vectors (all on one port, which
// bound the transposition); 8 rows of 16 fit in the 32 registers, where 16×16 blocks did not.
// Returns the positions done, a multiple of 16; the rest is transpose_8_rows'.
template <typename Rows8>
__attribute__((target("avx512f,avx512vl"))) int64_t transpose_16_positions_avx512(const Rows8& rows, int64_t n,
                                                                                 float* __restrict out) {
  int64_t t = 0;
  for (; t + 2 * kLanes <= n; t += 2 * kLanes) {
    __m512 r0 = rows.load16(0, t), r1 = rows.load16(1, t), r2 = rows.load16(2, t), r3 = rows.load16(3, t);
    __m512 r4 = rows.load16(4, t), r5 = rows.load16(5, t), r6 = rows.load16(6, t), r7 = rows.load16(7, t);
    exchange_bit<0>(r0, r1), exchange_bit<0>(r2, r3), exchange_bit<0>(r4, r5), exchange_bit<0>(r6, r7);
    exchange_bit<1>(r0, r2), exchange_bit<1>(r1, r3), exchange_bit<1>(r4, r6), exchange_bit<1>(r5, r7);
    exchange_bit<2>(r0, r4), exchange_bit<2>(r1, r5), exchange_bit<2>(r2, r6), exchange_bit<2>(r3, r7);
    float* at = out + t * kStride;
    store_positions(r0, at), store_positions(r1, at + kStride), store_positions(r2, at + 2 * kStride);
    store_positions(r3, at + 3 * kStride), store_positions(r4, at + 4 * kStride);
    store_positions(r5, at + 5 * kStride), store_positions(r6, at + 6 * kStride);
    store_positions(r7, at + 7 * kStride);
  }
  return t;
}

SOFTDTW_TORCH_AVX512_WARNINGS_ON

}  // namespace multirocket
}  // namespace softdtw_torch
#endif
