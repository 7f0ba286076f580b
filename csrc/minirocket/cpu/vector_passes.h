// MiniRocket's counting passes on the x86 vector paths (common/cpu.h): count_greater_avx512 and
// count_greater_avx2, several kernels and biases a pass, and their tables by pass size, for
// kernel.cpp's count_all and count_kernels; the counters a pass may keep are declared for every
// CPU (the transform's workspace is sized by them).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "../../common/cpu.h"
#include "../../common/macros.h"
#include "../../common/minirocket/math.h"
#if SOFTDTW_TORCH_X86_INTRINSICS
#include <immintrin.h>
#endif

namespace softdtw_torch {
namespace minirocket {

// A pass of the vector paths (count_greater_avx512, count_greater_avx2) counts up to
// 2 · CounterVectors (kernel, bias) pairs: several one-channel kernels (up to kMaxKernelsPerPass,
// of up to kMaxBiasesPerKernel biases each) or one kernel's biases. Up to CounterVectors counters
// fill as many vectors, those a pass may keep in registers beside the values and the biases (16 of
// AVX-512's 32 registers, 12 of AVX2's 16); twice as many share them as the low and high 16-bit
// halves of each lane, which holds a segment shorter than kMaxPackedSegment. Declared for every
// CPU: the workspace's row slots are sized by them (kRowSlots).
constexpr int counter_vectors(VectorPath path) {
  return path == VectorPath::kAvx512 ? 16 : path == VectorPath::kAvx2 ? 12 : 0;  // 0: the portable loop
}
constexpr int kAvx512CounterVectors = counter_vectors(VectorPath::kAvx512);
constexpr int kAvx2CounterVectors = counter_vectors(VectorPath::kAvx2);
constexpr int kMaxCountersPerPass = 2 * kAvx512CounterVectors;
constexpr int64_t kMaxPackedSegment = int64_t(1) << 16;
constexpr int kMaxKernelsPerPass = 8;
constexpr int kMaxBiasesPerKernel = kMaxCountersPerPass / 2;

// The counters a pass of a vector path with `vectors` counter vectors may keep on a segment of n
// positions (or on segments of a series of n points).
constexpr int64_t counters_per_pass(int vectors, int64_t n) { return n < kMaxPackedSegment ? 2 * vectors : vectors; }

// A pass's features of K kernels of P biases: kernel i's from ratios[i·P + j] to
// features[i·stride + j], j < P, one copy of P floats per kernel (vector moves of a constant
// size, not K·P scalar moves, which cost as much as the loop on the shortest segments).
template <int K, int P>
inline void copy_features(const float* ratios, float* features, int64_t stride) {
  for (int i = 0; i < K; ++i) std::memcpy(features + i * stride, ratios + i * P, P * sizeof(float));
}

#if SOFTDTW_TORCH_X86_INTRINSICS
SOFTDTW_TORCH_AVX512_WARNINGS_OFF

// Halves of a pair of vectors added, per 128-bit block: [a's 0+2, 1+3 | b's 0+2, 1+3].
SOFTDTW_TORCH_AVX512_HELPER __m512i add_halves(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_shuffle_i64x2(a, b, 0x44), _mm512_shuffle_i64x2(a, b, 0xEE));
}

// Quarters of two add_halves results added: [v_a | v_b | v_c | v_d], each block four lanes whose
// sum is that vector's sum.
SOFTDTW_TORCH_AVX512_HELPER __m512i add_quarters(__m512i ab, __m512i cd) {
  return _mm512_add_epi32(_mm512_shuffle_i64x2(ab, cd, 0x88), _mm512_shuffle_i64x2(ab, cd, 0xDD));
}

// The sums of the 16 int32 lanes of v0, ..., v7, in this order: a transposing tree, about 20
// instructions for all eight sums instead of about 9 per sum. Taken by value, not as an array:
// GCC keeps an array of vectors in memory, in the loop that fills it as well.
SOFTDTW_TORCH_AVX512_HELPER __m256i lane_sums(__m512i v0, __m512i v1, __m512i v2, __m512i v3, __m512i v4, __m512i v5,
                                              __m512i v6, __m512i v7) {
  const __m512i low = add_quarters(add_halves(v0, v1), add_halves(v2, v3));
  const __m512i high = add_quarters(add_halves(v4, v5), add_halves(v6, v7));
  // Per block b: lanes [low 0+2, low 1+3, high 0+2, high 1+3], then neighbours added: lane 0 is
  // v_b's sum, lane 2 is v_(4+b)'s.
  __m512i w = _mm512_add_epi32(_mm512_unpacklo_epi64(low, high), _mm512_unpackhi_epi64(low, high));
  w = _mm512_add_epi32(w, _mm512_shuffle_epi32(w, _MM_PERM_CDAB));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, w));
}

// counter += increment in the lanes of `mask`, in the counter's register.
SOFTDTW_TORCH_AVX512_HELPER void masked_add_in_place(__m512i& counter, __mmask16 mask, __m512i increment) {
  asm("vpaddd %2, %0, %0%{%1%}" : "+v"(counter) : "Yk"(mask), "v"(increment));
}

// k[j] for j < NB, zero beyond.
template <int NB, int J>
SOFTDTW_TORCH_AVX512_HELPER __m512i lane_or_zero(const __m512i (&k)[NB]) {
  if constexpr (J < NB) return k[J];
  return _mm512_setzero_si512();
}

// count_greater on 512-bit vectors, the avx512 path: 16 positions per compare into a
// mask register, counted by one masked add (GCC reloads the biases from the stack as compare
// operands when they do not fit in registers). A pass counts K kernels of P biases each: kernel
// i's values are rows[i][t] (+ gcs[i][t] when kFused), its biases bias[i·stride + j], its
// features features[i·stride + j] (biases and features share their layout). Up to 16 counters,
// counter q = i·P + j is vector q (int32 lanes); up to 32 (kPacked, for n < kMaxPackedSegment),
// it is vector q / 2's low 16-bit half for even q (adds 1), its high half for odd q (adds 2^16):
// a lane counts at most n / 16 positions and a lane sum at most n, so no half carries into the
// other.
// The kernels of a pass share its fixed cost (set-up, lane sums, the division, the loop's exit),
// most of a pass on short series (benchmarks/README.md), and a kernel's biases share the loads and
// the addition of its values. The last n mod 16 positions go first, as one masked vector that
// starts the counters (then the loop needs no mask, and GCC keeps the counters in registers,
// which it does not with a masked step after the loop); lane_sums adds the lanes up.
// The counts are the same integers, and the features the same floats: for n < 2^24 a count and n
// are exact in float32, and float32(count / n computed in float64) = count / n computed in
// float32, because rounding a quotient first to 53 bits and then to 24 gives the correctly
// rounded 24-bit quotient (53 >= 2 * 24 + 2: S. A. Figueroa, "When is double rounding
// innocuous?", 1995; tests/rocket/test_minirocket.py checks the identity). Measured on a 2-core
// Intel Xeon VM (AVX-512) against kernel.cpp's count_greater and against the first version of this one
// (benchmarks/README.md).
template <int K, int P, bool kFused>
__attribute__((target("avx512f,avx512vl"))) void count_greater_avx512(const float* const* rows,
                                                                       const float* const* gcs, int64_t n,
                                                                       const float* bias, float* features,
                                                                       int64_t stride) {
  constexpr int NB = K * P;
  constexpr bool kPacked = NB > kAvx512CounterVectors;
  constexpr int NV = kPacked ? (NB + 1) / 2 : NB;  // counter vectors
  static_assert(K >= 1 && P >= 1 && NB <= 2 * kAvx512CounterVectors, "16 vectors of two 16-bit halves");
  static_assert(K == 1 || kFused, "several kernels a pass only for fused one-channel outputs");
  constexpr auto vector_of = [](int q) { return kPacked ? q / 2 : q; };
  constexpr auto in_high_half = [](int q) { return kPacked && q % 2 == 1; };
  const __m512i one = _mm512_set1_epi32(1), one_high = _mm512_set1_epi32(1 << 16);
  const int64_t whole = n & ~int64_t(15);
  const __mmask16 last = static_cast<__mmask16>((1u << (n - whole)) - 1u);
  const float* row[K];
  const float* gc[K];
  __m512 b[NB];
  __m512i k[NV];
  // Unrolled in full (GCC stops short of 32 compares): the counters must stay in registers.
#pragma GCC unroll 32
  for (int i = 0; i < K; ++i) {
    row[i] = rows[i];
    gc[i] = kFused ? gcs[i] : nullptr;
    __m512 v = _mm512_maskz_loadu_ps(last, row[i] + whole);
    if (kFused) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(last, gc[i] + whole));
#pragma GCC unroll 32
    for (int j = 0; j < P; ++j) {
      const int q = i * P + j, c = vector_of(q);
      b[q] = _mm512_set1_ps(bias[i * stride + j]);
      const __mmask16 greater = _mm512_mask_cmp_ps_mask(last, v, b[q], _CMP_GT_OQ);
      if (in_high_half(q)) {
        k[c] = _mm512_mask_add_epi32(k[c], greater, k[c], one_high);
      } else {
        k[c] = _mm512_maskz_mov_epi32(greater, one);
      }
    }
  }
  for (int64_t t = 0; t < whole; t += 16) {
#pragma GCC unroll 32
    for (int i = 0; i < K; ++i) {
      __m512 v = _mm512_loadu_ps(row[i] + t);
      if (kFused) v = _mm512_add_ps(v, _mm512_loadu_ps(gc[i] + t));
#pragma GCC unroll 32
      for (int j = 0; j < P; ++j) {
        const int q = i * P + j, c = vector_of(q);
        const __mmask16 greater = _mm512_cmp_ps_mask(v, b[q], _CMP_GT_OQ);
        if constexpr (!kPacked) {
          k[c] = _mm512_mask_add_epi32(k[c], greater, k[c], one);
        } else {  // GCC copies a counter it updates twice an iteration, twice: asm keeps it in place
          masked_add_in_place(k[c], greater, in_high_half(q) ? one_high : one);
        }
      }
    }
  }
  const __m512 count_n = _mm512_set1_ps(static_cast<float>(n));
  const __m256i low = lane_sums(lane_or_zero<NV, 0>(k), lane_or_zero<NV, 1>(k), lane_or_zero<NV, 2>(k),
                                lane_or_zero<NV, 3>(k), lane_or_zero<NV, 4>(k), lane_or_zero<NV, 5>(k),
                                lane_or_zero<NV, 6>(k), lane_or_zero<NV, 7>(k));
  // One kernel's features are stored straight from the vector, several kernels' through `ratios`.
  alignas(64) float ratios[kMaxCountersPerPass];
  if constexpr (NB <= 8) {
    const __m256 r = _mm256_div_ps(_mm256_cvtepi32_ps(low), _mm512_castps512_ps256(count_n));
    if constexpr (K == 1) {
      _mm256_mask_storeu_ps(features, static_cast<__mmask8>((1u << NB) - 1u), r);
      return;
    }
    _mm256_store_ps(ratios, r);
  } else {
    const __m256i high = lane_sums(lane_or_zero<NV, 8>(k), lane_or_zero<NV, 9>(k), lane_or_zero<NV, 10>(k),
                                   lane_or_zero<NV, 11>(k), lane_or_zero<NV, 12>(k), lane_or_zero<NV, 13>(k),
                                   lane_or_zero<NV, 14>(k), lane_or_zero<NV, 15>(k));
    const __m512i sums = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    if constexpr (!kPacked) {
      const __m512 r = _mm512_div_ps(_mm512_cvtepi32_ps(sums), count_n);
      if constexpr (K == 1) {
        _mm512_mask_storeu_ps(features, static_cast<__mmask16>((1u << NB) - 1u), r);
        return;
      }
      _mm512_store_ps(ratios, r);
    } else {  // counts of q = 2c and 2c + 1 from lane c's halves, interleaved into q's order
      const __m512i even = _mm512_and_si512(sums, _mm512_set1_epi32(0xFFFF)), odd = _mm512_srli_epi32(sums, 16);
      const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const __m512i second = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      const __m512 r0 = _mm512_div_ps(_mm512_cvtepi32_ps(_mm512_permutex2var_epi32(even, first, odd)), count_n);
      const __m512 r1 = _mm512_div_ps(_mm512_cvtepi32_ps(_mm512_permutex2var_epi32(even, second, odd)), count_n);
      if constexpr (K == 1) {  // not through `ratios`: a copy of it reloads across two stores, which stalls
        _mm512_storeu_ps(features, r0);
        _mm512_mask_storeu_ps(features + 16, static_cast<__mmask16>((1u << (NB - 16)) - 1u), r1);
        return;
      }
      _mm512_store_ps(ratios, r0);
      _mm512_store_ps(ratios + 16, r1);
    }
  }
  copy_features<K, P>(ratios, features, stride);
}

// The avx512 path's passes, as a template argument of the tables below.
struct Avx512Passes {
  static constexpr int kCounterVectors = kAvx512CounterVectors;
  template <int K, int P, bool kFused>
  static constexpr auto pass = &count_greater_avx512<K, P, kFused>;
};

SOFTDTW_TORCH_AVX512_WARNINGS_ON

// A small helper of the AVX2 pass, inlined into it.
#define SOFTDTW_TORCH_AVX2_HELPER __attribute__((target("avx2,fma"), always_inline)) inline

// The sums of the 8 int32 lanes of v0, ..., v7, in this order.
SOFTDTW_TORCH_AVX2_HELPER __m256i lane_sums_avx2(__m256i v0, __m256i v1, __m256i v2, __m256i v3, __m256i v4,
                                                 __m256i v5, __m256i v6, __m256i v7) {
  // Per 128-bit half: [v0's, v1's, v2's, v3's sums of that half's four lanes], and the same of v4-v7.
  const __m256i low = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
  const __m256i high = _mm256_hadd_epi32(_mm256_hadd_epi32(v4, v5), _mm256_hadd_epi32(v6, v7));
  return _mm256_add_epi32(_mm256_permute2x128_si256(low, high, 0x20), _mm256_permute2x128_si256(low, high, 0x31));
}

// Counter q's int32 lanes from the counter vectors k: vector q itself, or one 16-bit half of
// vector q / 2 (kPacked); zero for q >= NB.
template <int NV, int NB, bool kPacked, int Q>
SOFTDTW_TORCH_AVX2_HELPER __m256i counter_lanes(const __m256i (&k)[NV]) {
  if constexpr (Q >= NB) return _mm256_setzero_si256();
  else if constexpr (!kPacked) return k[Q];
  else if constexpr (Q % 2 == 0) return _mm256_and_si256(k[Q / 2], _mm256_set1_epi32(0xFFFF));
  else return _mm256_srli_epi32(k[Q / 2], 16);
}

// The features of counters 8G, ..., 8G + 7 (those below NB): their lane sums over n.
template <int NV, int NB, bool kPacked, int G>
SOFTDTW_TORCH_AVX2_HELPER __m256 ratios_avx2(const __m256i (&k)[NV], __m256 count_n) {
  const __m256i sums = lane_sums_avx2(
      counter_lanes<NV, NB, kPacked, 8 * G>(k), counter_lanes<NV, NB, kPacked, 8 * G + 1>(k),
      counter_lanes<NV, NB, kPacked, 8 * G + 2>(k), counter_lanes<NV, NB, kPacked, 8 * G + 3>(k),
      counter_lanes<NV, NB, kPacked, 8 * G + 4>(k), counter_lanes<NV, NB, kPacked, 8 * G + 5>(k),
      counter_lanes<NV, NB, kPacked, 8 * G + 6>(k), counter_lanes<NV, NB, kPacked, 8 * G + 7>(k));
  return _mm256_div_ps(_mm256_cvtepi32_ps(sums), count_n);
}

// One step of count_greater_avx2: positions t, ..., t + 7 of every kernel of the pass compared
// with its biases and counted; kTail: only the lanes of `tail` (the last n mod 8 positions, read
// with a masked load that reads nothing beyond them).
template <int K, int P, bool kFused, bool kPacked, bool kTail, int NV>
SOFTDTW_TORCH_AVX2_HELPER void count_step_avx2(const float* const (&row)[K], const float* const (&gc)[K], int64_t t,
                                               __m256i tail, const __m256 (&b)[K * P], __m256i (&k)[NV]) {
  constexpr int NB = K * P;
  __m256i even = _mm256_setzero_si256();  // a packed pair's first mask, until its second comes
#pragma GCC unroll 32
  for (int i = 0; i < K; ++i) {
    __m256 v = kTail ? _mm256_maskload_ps(row[i] + t, tail) : _mm256_loadu_ps(row[i] + t);
    if (kFused) v = _mm256_add_ps(v, kTail ? _mm256_maskload_ps(gc[i] + t, tail) : _mm256_loadu_ps(gc[i] + t));
#pragma GCC unroll 32
    for (int j = 0; j < P; ++j) {
      const int q = i * P + j;
      __m256i greater = _mm256_castps_si256(_mm256_cmp_ps(v, b[q], _CMP_GT_OQ));  // -1 where v > bias
      if (kTail) greater = _mm256_and_si256(greater, tail);
      if (!kPacked) {
        k[q] = _mm256_sub_epi32(k[q], greater);
      } else if (q % 2 == 0 && q + 1 < NB) {
        even = greater;
      } else {  // low halves count q - 1 (or q itself, the last and even), high halves q
        const __m256i pair = q % 2 == 0 ? _mm256_blend_epi16(greater, _mm256_setzero_si256(), 0xAA)
                                        : _mm256_blend_epi16(even, greater, 0xAA);
        k[q / 2] = _mm256_sub_epi16(k[q / 2], pair);
      }
    }
  }
}

// count_greater on 256-bit AVX2 vectors, the avx2 path (x86 CPUs without AVX-512, and those where
// AVX-512 measured slower: common/cpu.h): the passes of count_greater_avx512, 8 positions per
// compare. A compare gives -1 in the lanes where the value is above the bias, which one
// subtraction counts: up to 12 counters, counter q = i·P + j is vector q (int32 lanes); up to 24
// (kPacked, for n < kMaxPackedSegment), counters 2c and 2c + 1 share vector c, the first in the
// low 16-bit half of each lane, the second in the high half (a blend of the two masks, counted by
// one 16-bit subtraction: a half counts at most n / 8 positions). 12 counter vectors leave four
// of the 16 registers to the values, the masks and the biases, which the compares read from
// memory (the stack) when the registers run out. The same integers as count_greater, and the same
// float32 features as count_greater_avx512 (its comment says why float32 division is exact here).
template <int K, int P, bool kFused>
__attribute__((target("avx2,fma"))) void count_greater_avx2(const float* const* rows, const float* const* gcs,
                                                            int64_t n, const float* bias, float* features,
                                                            int64_t stride) {
  constexpr int NB = K * P;
  constexpr bool kPacked = NB > kAvx2CounterVectors;
  constexpr int NV = kPacked ? (NB + 1) / 2 : NB;
  static_assert(K >= 1 && P >= 1 && NB <= 2 * kAvx2CounterVectors, "12 vectors of two 16-bit halves");
  static_assert(K == 1 || kFused, "several kernels a pass only for fused one-channel outputs");
  const int64_t whole = n & ~int64_t(7);
  const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - whole)),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const float* row[K];
  const float* gc[K];
  __m256 b[NB];
  __m256i k[NV];
#pragma GCC unroll 32
  for (int i = 0; i < K; ++i) {
    row[i] = rows[i];
    gc[i] = kFused ? gcs[i] : nullptr;
#pragma GCC unroll 32
    for (int j = 0; j < P; ++j) b[i * P + j] = _mm256_set1_ps(bias[i * stride + j]);
  }
#pragma GCC unroll 32
  for (int c = 0; c < NV; ++c) k[c] = _mm256_setzero_si256();
  // The last n mod 8 positions first, as for count_greater_avx512: the loop then needs no mask.
  count_step_avx2<K, P, kFused, kPacked, true>(row, gc, whole, tail, b, k);
  for (int64_t t = 0; t < whole; t += 8) count_step_avx2<K, P, kFused, kPacked, false>(row, gc, t, tail, b, k);
  const __m256 count_n = _mm256_set1_ps(static_cast<float>(n));
  alignas(32) float ratios[2 * kAvx2CounterVectors];
  _mm256_store_ps(ratios, ratios_avx2<NV, NB, kPacked, 0>(k, count_n));
  if constexpr (NB > 8) _mm256_store_ps(ratios + 8, ratios_avx2<NV, NB, kPacked, 1>(k, count_n));
  if constexpr (NB > 16) _mm256_store_ps(ratios + 16, ratios_avx2<NV, NB, kPacked, 2>(k, count_n));
  copy_features<K, P>(ratios, features, stride);
}

// The avx2 path's passes, as a template argument of the tables below.
struct Avx2Passes {
  static constexpr int kCounterVectors = kAvx2CounterVectors;
  template <int K, int P, bool kFused>
  static constexpr auto pass = &count_greater_avx2<K, P, kFused>;
};

// A pass: count_greater_avx512 or count_greater_avx2 <K, P, kFused> (the arguments' layout is there).
using CountPassFn = void (*)(const float* const*, const float* const*, int64_t, const float*, float*, int64_t);

template <typename Passes, int K, int P, bool kFused>
constexpr CountPassFn count_pass_entry() {
  if constexpr (K * P <= 2 * Passes::kCounterVectors) return Passes::template pass<K, P, kFused>;
  return nullptr;
}

// Entry (K - 1)·kMaxBiasesPerKernel + P - 1: the pass of K kernels of P biases (null beyond the
// path's counters).
template <typename Passes, int... I>
constexpr std::array<CountPassFn, sizeof...(I)> count_kernels_table(std::integer_sequence<int, I...>) {
  return {count_pass_entry<Passes, I / kMaxBiasesPerKernel + 1, I % kMaxBiasesPerKernel + 1, true>()...};
}

template <typename Passes>
constexpr auto kCountKernels =
    count_kernels_table<Passes>(std::make_integer_sequence<int, kMaxKernelsPerPass * kMaxBiasesPerKernel>());

// Entry P - 1: the pass of one kernel's P biases.
template <typename Passes, bool kFused, int... I>
constexpr std::array<CountPassFn, sizeof...(I)> count_biases_table(std::integer_sequence<int, I...>) {
  return {count_pass_entry<Passes, 1, I + 1, kFused>()...};
}

template <typename Passes, bool kFused>
constexpr auto kCountBiases =
    count_biases_table<Passes, kFused>(std::make_integer_sequence<int, 2 * Passes::kCounterVectors>());

// Features for nb biases (any number) of one kernel on a vector path: as few passes as its
// counters allow, of equal size (40 biases as 20 + 20 on AVX-512, not 32 + 8: a pass of few
// biases spends most of its time loading and adding the series, not comparing).
template <typename Passes, bool kFused>
__attribute__((noinline)) void count_all_passes(const float* c, const float* gc, int64_t n, const float* bias,
                                                int64_t nb, float* features) {
  const int64_t per_pass = counters_per_pass(Passes::kCounterVectors, n);
  const int64_t passes = (nb + per_pass - 1) / per_pass;
  for (int64_t pass = 0, j = 0; pass < passes; ++pass) {
    const int64_t size = nb / passes + (pass < nb % passes ? 1 : 0);
    kCountBiases<Passes, kFused>[size - 1](&c, &gc, n, bias + j, features + j, 0);
    j += size;
  }
}
#endif

}  // namespace minirocket
}  // namespace softdtw_torch
