// MiniRocket on the CPU (docs/design/rocket.md §7, aeon's _minirocket.py):
//   minirocket_fit        aeon's _static_fit (its body, fit_cpu, is common/minirocket/fit.cpp's:
//                         MultiRocket's fit shares it);
//   minirocket_transform  PPV features, bit-exact with aeon's float32 transform.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "../../common/macros.h"
#if SOFTDTW_TORCH_X86_INTRINSICS
#include <immintrin.h>
#endif
#include "../../common/cpu.h"
#include "../../common/parallel.h"
#include "../../common/table_memory.h"
#include "../../common/minirocket/problem.h"
#include "../../common/minirocket/rows.h"

namespace softdtw_torch {
namespace minirocket {

// Hot loops (SOFTDTW_TORCH_CPU_CLONES) use only correctly rounded IEEE additions, comparisons and
// divisions (no FMA, -ffp-contract=off): every ISA version computes the same bits.
namespace {

// ---------------------------------------------------------------------------------------------
// Transform. Work items are (case, dilation) pairs. Per case: -x and G = 3x zero-padded, once per
// thread; per dilation C_alpha once per used channel; per kernel its output over the counted
// segment, compared with each of the kernel's biases.

// features[j] = ppv_ratio(count, n), count the number of t < n with v(t) > bias[j], j < NB, where
// v(t) = c[t] (stored outputs) or, fused for one-channel combinations, c[t] + gc[t] with
// c = (alpha + ga) + gb (aeon adds the output to np.sum's 0, which only turns -0 into +0: no
// comparison changes). NB biases per pass keep their counters in registers; int32 lanes
// vectorize best, blocks keep them from overflow. Most of the transform's time is spent here.
// AVX2 and SSE2 turn a compare into a 0/-1 lane that one subtraction counts; with AVX-512 GCC
// compares into a mask register and needs one more instruction per compare to count it, which
// measured 20-30% slower on the 2-core Zen 4 VM (benchmarks/README.md): so no AVX-512 clone of
// this loop. The portable path's loop: the avx2 and avx512 paths take count_greater_avx2 and
// count_greater_avx512 below.
template <int NB, bool kFused>
SOFTDTW_TORCH_CPU_CLONES_NO_AVX512 void count_greater(const float* __restrict c, const float* __restrict gc, int64_t n,
                                                      const float* bias, float* features) {
  float b[NB];
  int64_t total[NB];
  for (int j = 0; j < NB; ++j) {
    b[j] = bias[j];
    total[j] = 0;
  }
  constexpr int64_t kBlock = int64_t(1) << 30;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t stop = std::min(n, start + kBlock);
    int32_t k[NB] = {};
    for (int64_t t = start; t < stop; ++t) {
      const float v = kFused ? c[t] + gc[t] : c[t];
      for (int j = 0; j < NB; ++j) k[j] += v > b[j];
    }
    for (int j = 0; j < NB; ++j) total[j] += k[j];
  }
  for (int j = 0; j < NB; ++j) features[j] = ppv_ratio(static_cast<double>(total[j]), static_cast<double>(n));
}

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
// Intel Xeon VM (AVX-512) against the loop above and against the first version of this one
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

// Features for nb biases (any number): on the vector paths (float32 ratios: segments under 2^24)
// count_all_passes, else passes of 8, then 4, then the remainder.
template <bool kFused>
void count_all(VectorPath path, const float* c, const float* gc, int64_t n, const float* bias, int64_t nb,
               float* features) {
#if SOFTDTW_TORCH_X86_INTRINSICS
  if (n < (int64_t(1) << 24) && path == VectorPath::kAvx512) {
    return count_all_passes<Avx512Passes, kFused>(c, gc, n, bias, nb, features);
  }
  if (n < (int64_t(1) << 24) && path == VectorPath::kAvx2) {
    return count_all_passes<Avx2Passes, kFused>(c, gc, n, bias, nb, features);
  }
#endif
  int64_t j = 0;
  for (; j + 8 <= nb; j += 8) count_greater<8, kFused>(c, gc, n, bias + j, features + j);
  if (j + 4 <= nb) {
    count_greater<4, kFused>(c, gc, n, bias + j, features + j);
    j += 4;
  }
  switch (nb - j) {
    case 3: count_greater<3, kFused>(c, gc, n, bias + j, features + j); break;
    case 2: count_greater<2, kFused>(c, gc, n, bias + j, features + j); break;
    case 1: count_greater<1, kFused>(c, gc, n, bias + j, features + j); break;
    default: break;
  }
}

// Features of K one-channel kernels with nb biases each on a segment of n positions: kernel i's
// values rows[i][t] + gcs[i][t], its biases bias[i·stride + j], its features
// features[i·stride + j]. In one pass where kernels_per_pass allows it (K > 1), else one kernel
// after the other.
void count_kernels(VectorPath path, int64_t K, int64_t nb, const float* const* rows, const float* const* gcs,
                   int64_t n, const float* bias, float* features, int64_t stride) {
#if SOFTDTW_TORCH_X86_INTRINSICS
  if (K > 1) {
    const auto& table = path == VectorPath::kAvx512 ? kCountKernels<Avx512Passes> : kCountKernels<Avx2Passes>;
    return table[(K - 1) * kMaxBiasesPerKernel + (nb - 1)](rows, gcs, n, bias, features, stride);
  }
#endif
  for (int64_t i = 0; i < K; ++i) {
    count_all<true>(path, rows[i], gcs[i], n, bias + i * stride, nb, features + i * stride);
  }
}

// One-channel kernels of one dilation are counted up to this many at a time (count_kernels' K):
// on the vector paths, as many as the pass's counters hold (on AVX-512 32 for series shorter than
// kMaxPackedSegment, else 16; on AVX2 24, else 12) and as keep the rows of a window of 2K kernels
// (below) within kWindowFloats, 32 KiB, so that they stay in the L1 cache with the series:
// grouped on 1460-point series with 8 rows of 5.7 KiB, the ACSF1 set ran 5% slower than one
// kernel a pass (benchmarks/README.md). A pass's fixed cost matters on short series only.
constexpr int64_t kWindowFloats = 8192;
constexpr int64_t kRowSlots = 2 * kMaxKernelsPerPass;
static_assert((kRowSlots & (kRowSlots - 1)) == 0, "slots are taken modulo a power of two by a mask");

int64_t kernels_per_pass(VectorPath path, int64_t nb, int64_t T) {
  if (path == VectorPath::kPortable) return 1;
  const int vectors = counter_vectors(path);
  return std::max<int64_t>(1, std::min<int64_t>({kMaxKernelsPerPass, counters_per_pass(vectors, T) / nb,
                                                  kWindowFloats / (2 * T)}));
}

// The counting passes' path (common/cpu.h), measured on first use by a probe of the passes the
// transform runs: 84 kernels of 4 biases (several kernels a pass) and of 24 (one kernel, packed
// counters), each on 150 and 1,000 positions (GunPoint's length and a long series), grouped as
// transform_dilation groups them: about 0.1-0.3 ms a path on a 2-core Xeon VM.
void probe_counting(VectorPath path);

const PathRule kCountingPaths{"minirocket", {VectorPath::kAvx512, VectorPath::kAvx2, VectorPath::kPortable},
                              &probe_counting};
const bool kCountingPathsRegistered = register_path_rule(kCountingPaths);

void probe_counting(VectorPath path) {
  constexpr int64_t kMostBiases = 24, kLong = 1000;
  static const std::vector<float> values = [] {
    std::vector<float> v(2 * kLong + kKernels * kMostBiases);
    uint32_t state = 12345;
    for (float& x : v) {
      state = state * 1664525u + 1013904223u;
      x = static_cast<float>(state >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
    return v;
  }();
  std::vector<float> features(kKernels * kMostBiases);
  const float* row = values.data();
  const float* gc = values.data() + kLong;
  const float* biases = values.data() + 2 * kLong;
  for (int64_t nb : {int64_t(4), kMostBiases}) {
    for (int64_t n : {int64_t(150), kLong}) {
      const int64_t K = kernels_per_pass(path, nb, n);
      const float* rows[kMaxKernelsPerPass];
      const float* gcs[kMaxKernelsPerPass];
      for (int64_t i = 0; i < K; ++i) {
        rows[i] = row + i;
        gcs[i] = gc + i;
      }
      for (int64_t k = 0; k + K <= kKernels; k += K) {
        count_kernels(path, K, nb, rows, gcs, n - K, biases + k * nb, features.data() + k * nb, nb);
      }
    }
  }
}

// kTapPair[k]: the index of kernel k's first two taps (a, b) among the 28 pairs, in the order the
// kernels (combinations(range(9), 3)) meet them: non-decreasing in k.
inline constexpr std::array<int, kKernels> kTapPair = [] {
  std::array<int, kKernels> pair{};
  for (int64_t k = 1; k < kKernels; ++k) {
    const bool same = kTaps[k][0] == kTaps[k - 1][0] && kTaps[k][1] == kTaps[k - 1][1];
    pair[k] = pair[k - 1] + (same ? 0 : 1);
  }
  return pair;
}();

// One thread's buffers, reused across its work items.
struct Workspace {
  int64_t prepared_case = -1;  // the case `neg` and `gpad` hold
  int64_t T = 0, pad = 0, padded = 0;
  int64_t row_stride = 0;  // T rounded up to 16 floats: with_ab's rows start on cache lines
  AlignedVector<float> neg, gpad, alpha, conv, with_a, with_ab;
  std::vector<int64_t> alpha_row;  // channel -> row of `alpha` for the current dilation
  // One-channel partial sums of the current dilation over the whole series: with_a = alpha + G[a]
  // for with_a_key = 9·channel + a, and with_ab = with_a + G[b] in slots (rows of row_stride
  // floats), tap pair index p's in slot p mod the dilation's slot count (a power of two, at least
  // 2 · kernels_per_pass, at most kRowSlots), with_ab_key[slot] = 64·channel + p (-1: none yet).
  // Kernels go in windows of 2 · kernels_per_pass consecutive ones, whose tap pair indices are as
  // many consecutive numbers at most: a window's rows never share a slot, and each is computed
  // once per dilation and channel.
  int64_t with_a_key = -1;
  std::array<int64_t, kRowSlots> with_ab_key{};
};

// Case i of length T (its own length with x_lengths): -x and G = 3x with zero padding, from x
// converted to float32 (as torch's .to(float32) and numpy's astype round). False if a converted
// value is NaN or inf.
template <typename scalar_t>
bool prepare_case(const TransformProblem& p, int64_t i, int64_t T, Workspace& w) {
  const int64_t C = p.n_channels;
  const scalar_t* x = p.x.data_ptr<scalar_t>() + i * C * p.n_timepoints;
  // Shifts beyond ±T only read zeros: clamp them to ±T, so padding by min(4·max dilation, T) suffices.
  w.T = T;
  w.pad = std::min<int64_t>(4 * p.max_dilation, T);
  w.padded = T + 2 * w.pad;
  w.neg.resize(static_cast<size_t>(C * T));
  w.gpad.assign(static_cast<size_t>(C * w.padded), 0.0f);
  bool finite = true;
  for (int64_t c = 0; c < C; ++c) {
    const scalar_t* row = x + c * p.n_timepoints;
    float* neg = w.neg.data() + c * T;
    float* g = w.gpad.data() + c * w.padded + w.pad;
    for (int64_t t = 0; t < T; ++t) {
      const float v = static_cast<float>(row[t]);
      finite = finite && std::isfinite(v);
      neg[t] = -v;
      g[t] = 3.0f * v;
    }
  }
  w.conv.resize(static_cast<size_t>(T));
  w.with_a.resize(static_cast<size_t>(T));
  w.row_stride = (T + 15) / 16 * 16;
  w.alpha_row.assign(static_cast<size_t>(C), -1);
  w.prepared_case = i;
  return finite;
}

// Features of dilation index di for the case prepared in w, written to the case's row `out`.
// used: the channels the dilation's kernels read; shared_channel: the channel of all its kernels
// when each reads one and the same (univariate series), else -1; path: the counting passes'.
void transform_dilation(const TransformProblem& p, const std::vector<int64_t>& used, int64_t shared_channel,
                        int64_t di, VectorPath path, float* out, Workspace& w) {
  const int64_t T = w.T, padded = w.padded, pad = w.pad;
  const int64_t d = p.combinations[di * kKernels].dilation;
  // C_alpha of every channel this dilation uses, in aeon's order of the 8 shifted copies of -x.
  w.alpha.resize(used.size() * static_cast<size_t>(T));
  for (size_t r = 0; r < used.size(); ++r) {
    const float* neg = w.neg.data() + used[r] * T;
    float* alpha = w.alpha.data() + r * T;
    std::copy(neg, neg + T, alpha);
    for (int64_t o : {-4, -3, -2, -1, 1, 2, 3, 4}) {
      const int64_t s = o * d;
      if (s <= -T || s >= T) continue;
      if (s < 0) {
        add_to(alpha - s, neg, T + s);  // alpha[t] += -x[t + s], t >= -s
      } else {
        add_to(alpha, neg + s, T - s);  // alpha[t] += -x[t + s], t < T - s
      }
    }
    w.alpha_row[used[r]] = static_cast<int64_t>(r);
  }
  const int64_t nf = p.combinations[di * kKernels].n_features;
  if (nf == 0) return;
  // Kernel k's biases and features start at base + k·nf (problem.cpp's layout).
  const int64_t base = p.combinations[di * kKernels].feature_start;
  const float* biases = p.biases.data() + base;
  float* features = out + base;
  const int64_t group = shared_channel >= 0 ? kernels_per_pass(path, nf, T) : 1;
  int64_t slots = 2;  // a power of two, at least a window's 2 · group kernels
  while (slots < 2 * group) slots *= 2;
  w.with_ab.resize(static_cast<size_t>(slots * w.row_stride));
  w.with_a_key = -1;
  w.with_ab_key.fill(-1);
  auto shift = [&](int tap) { return std::clamp<int64_t>((tap - 4) * d, -T, T); };
  auto gamma_row = [&](int64_t ch) { return w.gpad.data() + ch * padded + pad; };  // G[t] of channel ch
  // ((alpha + G[a]) + G[b]) of one-channel kernel k on channel ch, over the whole series: shared by
  // the kernels with the same a, b (and alpha + G[a] by those with the same a).
  auto with_ab_row = [&](int64_t k, int64_t ch) -> const float* {
    const int64_t pair = kTapPair[k], slot = pair & (slots - 1), key = 64 * ch + pair;
    float* row = w.with_ab.data() + slot * w.row_stride;
    if (w.with_ab_key[slot] != key) {
      const int ta = kTaps[k][0], tb = kTaps[k][1];
      if (w.with_a_key != 9 * ch + ta) {
        add_rows(w.with_a.data(), w.alpha.data() + w.alpha_row[ch] * T, gamma_row(ch) + shift(ta), T);
        w.with_a_key = 9 * ch + ta;
      }
      add_rows(row, w.with_a.data(), gamma_row(ch) + shift(tb), T);
      w.with_ab_key[slot] = key;
    }
    return row;
  };
  if (shared_channel >= 0) {
    // Every kernel on one channel (univariate series): windows of 2 · group kernels, the rows of
    // a window first, then its kernels of each segment (the parity of di + k) in one pass.
    const int64_t ch = shared_channel;
    const float* g = gamma_row(ch);
    for (int64_t first = 0; first < kKernels; first += 2 * group) {
      const int64_t last = std::min(kKernels, first + 2 * group);
      const float* window_rows[kRowSlots];
      for (int64_t k = first; k < last; ++k) window_rows[k - first] = with_ab_row(k, ch);
      for (int64_t k0 = first; k0 < first + 2 && k0 < last; ++k0) {
        int64_t lo, hi;
        ppv_segment(T, d, di, k0, &lo, &hi);
        const float* rows[kMaxKernelsPerPass];
        const float* gcs[kMaxKernelsPerPass];
        int64_t K = 0;
        for (int64_t k = k0; k < last; k += 2, ++K) {
          rows[K] = window_rows[k - first] + lo;
          gcs[K] = g + lo + shift(kTaps[k][2]);
          if (hi == lo) std::fill(features + k * nf, features + (k + 1) * nf, 0.0f);  // ppv_value(0, 0) = 0
        }
        if (hi > lo) count_kernels(path, K, nf, rows, gcs, hi - lo, biases + k0 * nf, features + k0 * nf, 2 * nf);
      }
    }
    return;
  }
  for (int64_t k = 0; k < kKernels; ++k) {
    const Combination& cb = p.combinations[di * kKernels + k];
    int64_t lo, hi;
    ppv_segment(T, d, di, k, &lo, &hi);
    if (hi == lo) {  // an empty segment counts nothing: ppv_value(0, 0) = 0
      std::fill(features + k * nf, features + (k + 1) * nf, 0.0f);
      continue;
    }
    if (cb.n_channels == 1) {  // the output is never stored: each pass over the biases adds G[c]
      const int64_t ch = p.channel_indices[cb.channel_start];
      count_all<true>(path, with_ab_row(k, ch) + lo, gamma_row(ch) + lo + shift(kTaps[k][2]), hi - lo, biases + k * nf, nf,
                      features + k * nf);
      continue;
    }
    for (int64_t j = 0; j < cb.n_channels; ++j) {  // several channels: the summed output, stored
      const int64_t c = p.channel_indices[cb.channel_start + j];
      const float* g = gamma_row(c) + lo;
      combine_channel(w.conv.data(), w.alpha.data() + w.alpha_row[c] * T + lo, g + shift(kTaps[k][0]),
                      g + shift(kTaps[k][1]), g + shift(kTaps[k][2]), hi - lo, j == 0);
    }
    count_all<false>(path, w.conv.data(), nullptr, hi - lo, biases + k * nf, nf, features + k * nf);
  }
}

at::Tensor transform_cpu(const at::Tensor& x, const at::Tensor& num_channels_per_combination,
                         const at::Tensor& channel_indices, const at::Tensor& dilations,
                         const at::Tensor& num_features_per_dilation, const at::Tensor& biases,
                         const std::optional<at::Tensor>& x_lengths) {
  const TransformProblem p = prepare_transform(x, num_channels_per_combination, channel_indices, dilations,
                                               num_features_per_dilation, biases, x_lengths, /*to_float32=*/false);
  // A big features matrix reuses the last freed one's block (common/table_memory.h).
  at::Tensor out = table_memory::empty({p.n_cases, p.n_features}, p.x.options().dtype(at::kFloat));
  if (p.n_cases == 0 || p.n_features == 0) return out;
  const int64_t n_dilations = static_cast<int64_t>(p.combinations.size()) / kKernels;
  std::vector<std::vector<int64_t>> channels_of_dilation(static_cast<size_t>(n_dilations));
  std::vector<int64_t> shared_channel(static_cast<size_t>(n_dilations), -1);
  for (int64_t di = 0; di < n_dilations; ++di) {
    std::vector<char> used(static_cast<size_t>(p.n_channels), 0);
    bool one_channel = true;
    for (int64_t k = 0; k < kKernels; ++k) {
      const Combination& cb = p.combinations[di * kKernels + k];
      for (int64_t j = 0; j < cb.n_channels; ++j) used[p.channel_indices[cb.channel_start + j]] = 1;
      one_channel = one_channel && cb.n_channels == 1;
    }
    for (int64_t c = 0; c < p.n_channels; ++c) {
      if (used[c]) channels_of_dilation[di].push_back(c);
    }
    if (one_channel && channels_of_dilation[di].size() == 1) shared_channel[di] = channels_of_dilation[di][0];
  }
  const int64_t* lengths = p.x_lengths.defined() ? p.x_lengths.data_ptr<int64_t>() : nullptr;
  float* op = out.data_ptr<float>();
  const VectorPath path = path_of(kCountingPaths);  // decided before the threads start
  // (case, dilation) items, case-major, shared out one at a time (common/parallel.h): all threads
  // stay busy with few cases. Each feature is computed by one thread in a fixed order.
  std::atomic<bool> not_finite{false};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, p.x.scalar_type(), "minirocket_transform", [&] {
    for_each_shared_item<Workspace>(
        p.n_cases * n_dilations,
        [&](int64_t item, Workspace& w) {
          const int64_t i = item / n_dilations, di = item % n_dilations;
          if (w.prepared_case != i && !prepare_case<scalar_t>(p, i, lengths ? lengths[i] : p.n_timepoints, w)) {
            not_finite = true;
          }
          transform_dilation(p, channels_of_dilation[di], shared_channel[di], di, path, op + i * p.n_features, w);
        },
        [&] { return not_finite.load(); });
  });
  TORCH_CHECK_VALUE(!not_finite, kTransformOp, kNotFiniteMessage);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CPU, m) {
  m.impl("minirocket_fit", &fit_cpu);
  m.impl("minirocket_transform", &transform_cpu);
}

}  // namespace minirocket
}  // namespace softdtw_torch
