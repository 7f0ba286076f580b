// MultiRocket on the CPU (docs/design/rocket.md §8, aeon's _multirocket.py):
//   multirocket_fit        registered here, its body in ../fit.cpp;
//   multirocket_transform  PPV, LSPV, MPV and MIPV of both representations, bit-exact with aeon's
//                          float32 transform.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "../../common/macros.h"
#if SOFTDTW_TORCH_X86_INTRINSICS
#include <immintrin.h>
#endif
#include "../../common/cpu.h"
#include "../../common/parallel.h"
#include "../../common/table_memory.h"
#include "../../common/minirocket/rows.h"
#include "../problem.h"

namespace softdtw_torch {
namespace multirocket {

namespace {

// The avx512 path (common/cpu.h) of the pooling and the transposition: pool_block_pair_avx512 and
// transpose_16_positions_avx512; else their 256-bit loops. Measured by probe_pooling (below).
void probe_pooling(VectorPath path);
const PathRule kPoolingPaths{"multirocket", {VectorPath::kAvx512, VectorPath::kPortable}, &probe_pooling};
const bool kPoolingPathsRegistered = register_path_rule(kPoolingPaths);

bool avx512_path() { return path_of(kPoolingPaths) == VectorPath::kAvx512; }

// ---------------------------------------------------------------------------------------------
// Transform. Work items are (case, representation, dilation) triples. Per case: -x and 3x
// zero-padded for both representations, once per thread; per dilation C_alpha once per used
// channel; per kernel its output over the counted segment, pooled for each of its biases.

// Pooling runs on lanes: one lane per (kernel, bias) of a dilation, 8 lanes to a group. The
// kernels of a dilation whose counted segments are the same (every other kernel: aeon alternates
// the whole output and the trimmed one) are pooled together from `outputs`, their outputs
// position-major: outputs[j·kStride + q] is kernel q's output at segment position j. Most groups
// are 8 consecutive kernels with the same bias index, whose lanes read their columns with one
// load; the kernels left over (42 = 5·8 + 2) go with all their biases into groups whose lanes
// read kernels first .. first + 7 and pick theirs (one more permute per position: the pooling
// loop measured 2.9 ns per position with it, 2.1 ns without, in a microbenchmark on the Zen 3 VM).
// The segment runs in blocks of kPositionBlock positions: one block of every kernel is written
// position-major, then every group pools it from L1 (a whole segment, 1,460 positions of 50
// floats on ACSF1, is 292 KB).
using F32x8 = float __attribute__((vector_size(32)));
using I32x8 = int32_t __attribute__((vector_size(32)));
using F64x4 = double __attribute__((vector_size(32)));
using F64x8 = double __attribute__((vector_size(64)));
constexpr int kLanes = 8;
constexpr int64_t kHalf = kKernels / 2;  // kernels per half of a dilation (below)
constexpr int64_t kRowBlocks = (kHalf + kLanes - 1) / kLanes;  // blocks of 8 kernels of a half
constexpr int64_t kRows = kRowBlocks * kLanes;
// Floats a position of `outputs` (below): room for a group's 8-wide load past the last kernel.
constexpr int64_t kStride = kHalf + kLanes;
constexpr int64_t kPositionBlock = 128;  // 25.6 KB of outputs at 50 floats per position

struct LaneGroup {
  int64_t first = 0;          // the first kernel (column of outputs) the group reads
  bool picked = false;        // whether lanes pick their columns (else lane l reads first + l)
  int32_t pick[kLanes] = {};  // lane l reads column first + pick[l]
  float bias[kLanes] = {};    // lane l's bias (+inf past the last lane: pools nothing)
  int64_t feature[kLanes] = {};  // lane l's feature in its representation's blocks (-1: unused)
};

// A group's 8 lanes of Pooling between position blocks (plain arrays: std::vector need not align
// vector types).
struct LaneState {
  double sum[kLanes] = {};
  int32_t since[kLanes] = {}, longest[kLanes] = {};
  int64_t positives[kLanes] = {}, index_sum[kLanes] = {};
};

// Pooling::add for segment positions [start, start + n) of every lane of a group, `outputs` at
// position start: branch-free in GCC / Clang vector types (GCC does not vectorize the scalar
// form). The compares, counts, index sums and distances use 32-bit lanes within the block (index
// sums from running counts), 64-bit across blocks; each lane's float64 sum adds its terms in aeon's
// order, in two vectors of 4 doubles. One group per pass: two would need more than AVX2's 16
// registers, and GCC then spilled a sum, whose store-to-load chain bound the loop (AVX-512's 32
// take two: pool_block_pair_avx512).
template <bool kPicked>
SOFTDTW_TORCH_CPU_CLONES_NO_AVX512 void pool_block(const float* __restrict outputs, int64_t start, int64_t n,
                                                   const LaneGroup& group, LaneState& state) {
  F32x8 b;
  I32x8 pick, since, longest;
  F64x4 sum_low, sum_high;
  std::memcpy(&b, group.bias, sizeof(b));
  std::memcpy(&pick, group.pick, sizeof(pick));
  std::memcpy(&since, state.since, sizeof(since));
  std::memcpy(&longest, state.longest, sizeof(longest));
  std::memcpy(&sum_low, state.sum, sizeof(sum_low));
  std::memcpy(&sum_high, state.sum + 4, sizeof(sum_high));
  const float* column = outputs + group.first;
  // The block's positives (count) and the running sum of count after each position (cumulated):
  // sum over the block's positives of (position - start) = n·count - cumulated.
  I32x8 count = {}, cumulated = {};
  for (int64_t j = 0; j < n; ++j) {
    F32x8 loaded;
    std::memcpy(&loaded, column + j * kStride, sizeof(loaded));
    const F32x8 v = kPicked ? __builtin_shuffle(loaded, pick) : loaded;
    const I32x8 above = v > b, below = v < b;  // lanes of -1 (true) or 0
    count -= above;
    cumulated += count;
    // float32(C[j] + bias) as aeon rounds it, +0.0 where not above, added in float64. Widened
    // as one 8-lane vector, then split: GCC 12 compiles that to two vcvtps2pd, and the
    // conversion of each 4-lane half to twice as many instructions.
    const F32x8 term = reinterpret_cast<F32x8>(reinterpret_cast<I32x8>(v + b) & above);
    const F64x8 wide = __builtin_convertvector(term, F64x8);
    sum_low += __builtin_shufflevector(wide, wide, 0, 1, 2, 3);
    sum_high += __builtin_shufflevector(wide, wide, 4, 5, 6, 7);
    longest = since > longest ? since : longest;
    since = (since & ~below) + 1;  // 1 after a value below the bias, else one more
  }
  std::memcpy(state.since, &since, sizeof(since));
  std::memcpy(state.longest, &longest, sizeof(longest));
  std::memcpy(state.sum, &sum_low, sizeof(sum_low));
  std::memcpy(state.sum + 4, &sum_high, sizeof(sum_high));
  for (int l = 0; l < kLanes; ++l) {
    state.positives[l] += count[l];
    state.index_sum[l] += (n + start) * count[l] - cumulated[l];
  }
}

#if SOFTDTW_TORCH_X86_INTRINSICS
SOFTDTW_TORCH_AVX512_WARNINGS_OFF

// 32 bytes from `low` in the low half of a 512-bit vector, 32 from `high` in its high half (8
// floats or int32 of two lane groups).
SOFTDTW_TORCH_AVX512_HELPER __m512d pair(const void* low, const void* high) {
  return _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(static_cast<const double*>(low))),
                            _mm256_loadu_pd(static_cast<const double*>(high)), 1);
}

// pool_block for two lane groups at once on 512-bit vectors, for Intel CPUs with AVX-512
// (avx512_path): group a in lanes 0-7, group b in lanes 8-15, each lane's operations those
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

SOFTDTW_TORCH_AVX512_WARNINGS_ON
#endif

// kPoolingPaths' probe: two lane groups pooled over 128 blocks of kPositionBlock positions, as
// pool_block_pair_avx512 (avx512) or as pool_block on each (portable).
void probe_pooling(VectorPath path) {
  static const std::vector<float> outputs = [] {
    std::vector<float> v(kPositionBlock * kStride);
    uint32_t state = 6789;
    for (float& x : v) {
      state = state * 1664525u + 1013904223u;
      x = static_cast<float>(state >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
    return v;
  }();
  LaneGroup a, b;
  b.first = kLanes;
  for (int l = 0; l < kLanes; ++l) a.bias[l] = b.bias[l] = 0.05f * static_cast<float>(l - 4);
  LaneState state_a, state_b;
  for (int block = 0; block < 128; ++block) {  // the same outputs each time, at later positions
    const int64_t start = block * kPositionBlock;
#if SOFTDTW_TORCH_X86_INTRINSICS
    if (path == VectorPath::kAvx512) {
      pool_block_pair_avx512<false>(outputs.data(), start, kPositionBlock, a, b, state_a, state_b);
      continue;
    }
#endif
    pool_block<false>(outputs.data(), start, kPositionBlock, a, state_a);
    pool_block<false>(outputs.data(), start, kPositionBlock, b, state_b);
  }
}

// Pooling::write's four values (PPV, LSPV, MPV, MIPV) for a group's 8 lanes of segment length
// len, the same floats: its two float64 divisions per lane run 8 lanes at a time (as scalar
// divisions they were about a tenth of the transform's time on short series such as GunPoint).
// False if a lane's float64 sum is not finite.
SOFTDTW_TORCH_CPU_CLONES_NO_AVX512 bool pooled_values(const LaneState& state, int64_t len,
                                                     float (&values)[kPoolings][kLanes]) {
  F64x8 positives, index_sum, sum;
  I32x8 longest;
  for (int l = 0; l < kLanes; ++l) {  // exact: both are below 2^53
    positives[l] = static_cast<double>(state.positives[l]);
    index_sum[l] = static_cast<double>(state.index_sum[l]);
  }
  std::memcpy(&sum, state.sum, sizeof(sum));
  std::memcpy(&longest, state.longest, sizeof(longest));
  const I32x8 any = __builtin_convertvector(positives > 0.0, I32x8);
  const F64x8 inverse = 1.0 / positives;  // aeon's reciprocal; inf where no positives (not used)
  const F32x8 ppv = __builtin_convertvector(positives / static_cast<double>(len), F32x8);
  const F32x8 mpv = __builtin_convertvector(sum * inverse, F32x8);
  const F32x8 mipv = __builtin_convertvector(index_sum * inverse, F32x8);
  const F32x8 zero = {}, minus_one = zero - 1.0f;
  const F32x8 pooled[kPoolings] = {len > 0 ? ppv : zero, __builtin_convertvector(longest, F32x8),
                                   any ? mpv : zero, any ? mipv : minus_one};
  std::memcpy(values, pooled, sizeof(values));
  bool finite = true;
  for (int l = 0; l < kLanes; ++l) finite = finite && std::isfinite(state.sum[l]);
  return finite;
}

// Rows stored one after another (row b at rows + b·row_stride).
struct StoredRows {
  const float* rows;
  int64_t row_stride;
  __attribute__((always_inline)) void load(int b, int64_t t, F32x8& v) const {
    std::memcpy(&v, rows + b * row_stride + t, sizeof(v));
  }
  float at(int b, int64_t t) const { return rows[b * row_stride + t]; }
#if SOFTDTW_TORCH_X86_INTRINSICS
  SOFTDTW_TORCH_AVX512_HELPER __m512 load16(int b, int64_t t) const {
    return _mm512_loadu_ps(rows + b * row_stride + t);
  }
#endif
};

// The outputs of the 8 kernels of row block kBlock of half kFirstKernel (row b: kernel
// 2·(8·kBlock + b) + kFirstKernel; rows past the half's last kernel repeat it) over one channel,
// computed where they are read, never stored as rows: row b at t is ((alpha + ga) + gb) + gc, with
// ga = tap[a][t] for the kernel's taps (a, b, c). The taps are constants, so the compiler loads each
// of the 9 shifted copies once and shares the partial sums of kernels with the same first taps.
// combine_channel's first channel is 0 + that; the 0 + is left out here: it only turns -0 into
// +0, which pooling cannot tell apart (its compares treat them as equal, and a term C + bias is
// taken only where C > bias, so C = ±0 has bias < 0 and the term is bias either way).
template <int kBlock, int kFirstKernel>
struct OneChannelRows {
  const float* alpha;
  const float* tap[9];  // g shifted by each tap's (clamped) offset

  // Row b's taps, looked up at compile time (a kernel past the 84 would not compile).
  static constexpr std::array<std::array<int, 3>, kLanes> kRowTaps = [] {
    std::array<std::array<int, 3>, kLanes> taps{};
    for (int b = 0; b < kLanes; ++b) {
      taps[b] = minirocket::kTaps[2 * std::min<int64_t>(kLanes * kBlock + b, kHalf - 1) + kFirstKernel];
    }
    return taps;
  }();
  static constexpr const std::array<int, 3>& taps(int b) { return kRowTaps[b]; }
  __attribute__((always_inline)) void load(int b, int64_t t, F32x8& v) const {
    F32x8 a, ga, gb, gc;
    std::memcpy(&a, alpha + t, sizeof(a));
    std::memcpy(&ga, tap[taps(b)[0]] + t, sizeof(ga));
    std::memcpy(&gb, tap[taps(b)[1]] + t, sizeof(gb));
    std::memcpy(&gc, tap[taps(b)[2]] + t, sizeof(gc));
    v = ((a + ga) + gb) + gc;
  }
  float at(int b, int64_t t) const {
    return minirocket::combine_transform(alpha[t], tap[taps(b)[0]][t], tap[taps(b)[1]][t], tap[taps(b)[2]][t]);
  }
#if SOFTDTW_TORCH_X86_INTRINSICS
  SOFTDTW_TORCH_AVX512_HELPER __m512 load16(int b, int64_t t) const {
    __m512 v = _mm512_add_ps(_mm512_loadu_ps(alpha + t), _mm512_loadu_ps(tap[taps(b)[0]] + t));
    v = _mm512_add_ps(v, _mm512_loadu_ps(tap[taps(b)[1]] + t));
    return _mm512_add_ps(v, _mm512_loadu_ps(tap[taps(b)[2]] + t));
  }
#endif
};

// Rows 0..7 of `rows` (StoredRows or OneChannelRows) at positions [start, n) into `out`
// position-major: out[t·kStride + b] = row b at t, the row's value moved, not changed; 8×8
// blocks are transposed in registers (8 loads, 24 shuffles, 8 stores).
template <typename Rows8>
SOFTDTW_TORCH_CPU_CLONES_NO_AVX512 void transpose_8_rows(const Rows8& rows, int64_t start, int64_t n,
                                                         float* __restrict out) {
  // Written out, not as loops over arrays: GCC kept such arrays on the stack.
  const auto store = [&](int64_t t, const F32x8& v) { std::memcpy(out + t * kStride, &v, sizeof(v)); };
  // Rows b, b + 1 interleaved by 2 positions (`low` positions 0, 1, 4, 5; `high` 2, 3, 6, 7).
  const auto low = [](F32x8 a, F32x8 b) { return __builtin_shufflevector(a, b, 0, 8, 1, 9, 4, 12, 5, 13); };
  const auto high = [](F32x8 a, F32x8 b) { return __builtin_shufflevector(a, b, 2, 10, 3, 11, 6, 14, 7, 15); };
  // Four rows at positions e and e + 4, from two interleaved pairs: even e (`first`), odd e (`second`).
  const auto first = [](F32x8 a, F32x8 b) { return __builtin_shufflevector(a, b, 0, 1, 8, 9, 4, 5, 12, 13); };
  const auto second = [](F32x8 a, F32x8 b) { return __builtin_shufflevector(a, b, 2, 3, 10, 11, 6, 7, 14, 15); };
  // Rows 0-3 and rows 4-7 of one position pair (e, e + 4) into the rows of positions e and e + 4.
  const auto at_e = [](F32x8 a, F32x8 b) { return __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11); };
  const auto at_e4 = [](F32x8 a, F32x8 b) { return __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15); };
  int64_t t = start;
  for (; t + kLanes <= n; t += kLanes) {
    F32x8 r0, r1, r2, r3, r4, r5, r6, r7;
    rows.load(0, t, r0), rows.load(1, t, r1), rows.load(2, t, r2), rows.load(3, t, r3);
    rows.load(4, t, r4), rows.load(5, t, r5), rows.load(6, t, r6), rows.load(7, t, r7);
    const F32x8 l01 = low(r0, r1), h01 = high(r0, r1), l23 = low(r2, r3), h23 = high(r2, r3);
    const F32x8 l45 = low(r4, r5), h45 = high(r4, r5), l67 = low(r6, r7), h67 = high(r6, r7);
    const F32x8 q0 = first(l01, l23), q1 = second(l01, l23), q2 = first(h01, h23), q3 = second(h01, h23);
    const F32x8 q4 = first(l45, l67), q5 = second(l45, l67), q6 = first(h45, h67), q7 = second(h45, h67);
    store(t + 0, at_e(q0, q4));
    store(t + 1, at_e(q1, q5));
    store(t + 2, at_e(q2, q6));
    store(t + 3, at_e(q3, q7));
    store(t + 4, at_e4(q0, q4));
    store(t + 5, at_e4(q1, q5));
    store(t + 6, at_e4(q2, q6));
    store(t + 7, at_e4(q3, q7));
  }
  for (; t < n; ++t) {
    for (int b = 0; b < kLanes; ++b) out[t * kStride + b] = rows.at(b, t);
  }
}

#if SOFTDTW_TORCH_X86_INTRINSICS
SOFTDTW_TORCH_AVX512_WARNINGS_OFF

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
// (avx512_path): 8 rows of 16 positions become, after three exchange_bit stages, 8
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
#endif

// transpose_8_rows, 16 positions at a time on the avx512 path.
template <typename Rows8>
void transpose_rows(const Rows8& rows, int64_t n, float* __restrict out) {
  int64_t done = 0;
#if SOFTDTW_TORCH_X86_INTRINSICS
  if (avx512_path()) done = transpose_16_positions_avx512(rows, n, out);
#endif
  transpose_8_rows(rows, done, n, out);
}

// transpose_rows of one channel's row block kBlock of half kFirstKernel (OneChannelRows), picked
// at run time from kOneChannelTranspositions.
template <int kBlock, int kFirstKernel>
void transpose_one_channel(const float* alpha, const float* const (&tap)[9], int64_t n, float* out) {
  OneChannelRows<kBlock, kFirstKernel> rows{alpha, {}};
  std::copy(tap, tap + 9, rows.tap);
  transpose_rows(rows, n, out);
}
using OneChannelTransposition = void (*)(const float*, const float* const (&)[9], int64_t, float*);
template <int kFirstKernel, size_t... kBlock>
constexpr std::array<OneChannelTransposition, kRowBlocks> one_channel_transpositions(std::index_sequence<kBlock...>) {
  return {&transpose_one_channel<static_cast<int>(kBlock), kFirstKernel>...};
}
constexpr std::array<OneChannelTransposition, kRowBlocks> kOneChannelTranspositions[2] = {
    one_channel_transpositions<0>(std::make_index_sequence<kRowBlocks>()),
    one_channel_transpositions<1>(std::make_index_sequence<kRowBlocks>())};

// A dilation's work apart from the case, built once per transform and read by every thread:
// the channels it uses, and the lane groups of its two halves (the kernels k = 2q + first_kernel,
// q < kHalf).
struct DilationPlan {
  std::vector<int64_t> channels;
  std::vector<LaneGroup> groups[2];
};

// One representation of the prepared case: -x and 3x zero-padded, per channel.
struct Rows {
  int64_t T = 0, pad = 0, padded = 0;
  std::vector<float> neg, gpad;

  void resize(int64_t channels, int64_t length, int64_t max_dilation) {
    T = length;
    // Shifts beyond ±T only read zeros: clamped to ±T, so padding by min(4·max dilation, T) suffices.
    pad = std::min<int64_t>(4 * max_dilation, T);
    padded = T + 2 * pad;
    neg.resize(static_cast<size_t>(channels * T));
    gpad.assign(static_cast<size_t>(channels * padded), 0.0f);
  }
  void set(int64_t channel, int64_t t, float v) {
    neg[channel * T + t] = -v;
    gpad[channel * padded + pad + t] = minirocket::times3(v);
  }
};

// One thread's buffers, reused across its work items.
struct Workspace {
  int64_t prepared_case = -1;  // the case `rows` hold
  Rows rows[2];                // the series, its first difference
  std::vector<float> row, alpha, kernel_rows, outputs;
  std::vector<int64_t> alpha_row;  // channel -> row of `alpha` for the current dilation
  std::vector<LaneState> states;  // one per lane group
};

// Case i of length T (its own length with x_lengths): both representations from x converted to
// float32 (as numpy's astype), the difference np.diff of the converted values. False if a
// converted value is NaN or inf.
template <typename scalar_t>
bool prepare_case(const TransformProblem& p, int64_t i, int64_t T, Workspace& w) {
  const minirocket::TransformProblem& s = p.series;
  const int64_t C = s.n_channels;
  const scalar_t* x = s.x.data_ptr<scalar_t>() + i * C * s.n_timepoints;
  w.rows[0].resize(C, T, s.max_dilation);
  w.rows[1].resize(C, T - 1, p.difference.max_dilation);
  w.row.resize(static_cast<size_t>(T));
  bool finite = true;
  for (int64_t c = 0; c < C; ++c) {
    const scalar_t* row = x + c * s.n_timepoints;
    for (int64_t t = 0; t < T; ++t) {
      w.row[t] = static_cast<float>(row[t]);
      finite = finite && std::isfinite(w.row[t]);
      w.rows[0].set(c, t, w.row[t]);
      if (t > 0) w.rows[1].set(c, t - 1, w.row[t] - w.row[t - 1]);
    }
  }
  w.prepared_case = i;
  return finite;
}

// Features of dilation index di of representation r (0: series, 1: difference) for the case
// prepared in w, written to the case's row `out`. False if a mean of positive values overflowed.
bool transform_dilation(const TransformProblem& p, int r, const DilationPlan& plan, int64_t di, float* out,
                        Workspace& w) {
  const std::vector<int64_t>& used = plan.channels;
  const minirocket::TransformProblem& q = r == 0 ? p.series : p.difference;
  const Rows& rows = w.rows[r];
  const bool difference = r == 1;
  const int64_t T = rows.T, padded = rows.padded, pad = rows.pad;
  const int64_t d = q.combinations[di * kKernels].dilation;
  auto shift = [&](int tap) { return std::clamp<int64_t>(tap_shift(tap, d, difference), -T, T); };
  // C_alpha of every channel this dilation uses, in aeon's order of the 8 shifted copies of -x.
  w.alpha.resize(used.size() * static_cast<size_t>(T));
  w.alpha_row.assign(static_cast<size_t>(q.n_channels), -1);
  for (size_t u = 0; u < used.size(); ++u) {
    const float* neg = rows.neg.data() + used[u] * T;
    float* alpha = w.alpha.data() + u * T;
    std::copy(neg, neg + T, alpha);
    for (int g = 0; g < 9; ++g) {
      const int64_t s = shift(g);
      if (g == 4 || s <= -T || s >= T) continue;
      if (s < 0) {
        minirocket::add_to(alpha - s, neg, T + s);  // alpha[t] += -x[t + s], t >= -s
      } else {
        minirocket::add_to(alpha, neg + s, T - s);  // alpha[t] += -x[t + s], t < T - s
      }
    }
    w.alpha_row[used[u]] = static_cast<int64_t>(u);
  }
  const int64_t nf = q.combinations[di * kKernels].n_features;
  if (nf == 0) return true;
  float* block = out + r * kPoolings * p.n_features;  // this representation's 4 blocks of n_features
  bool finite = true;
  // The kernels k with (di + k) even count the whole output, the others the trimmed one (aeon):
  // each half is pooled together (DilationPlan).
  for (int64_t first_kernel = 0; first_kernel < 2; ++first_kernel) {
    int64_t lo, hi;
    minirocket::ppv_segment(T, d, di, first_kernel, &lo, &hi);
    const int64_t len = hi - lo;
    // Every kernel's output over the segment, row by row (kernel q at kernel_rows + q·len); then,
    // block by block, 8 rows at a time position-major into `outputs` and pooled. Rows past the
    // last kernel are never picked, so they hold whatever they held. With one channel, the rows
    // are not stored: transpose_rows computes them (OneChannelRows), which saves a store and a
    // load of every output.
    const bool one_channel = q.n_channels == 1;
    w.kernel_rows.resize(static_cast<size_t>(one_channel ? 0 : kRows * std::max<int64_t>(len, 1)));
    for (int64_t q_index = 0; q_index < kHalf && !one_channel; ++q_index) {
      const int64_t k = 2 * q_index + first_kernel;
      const minirocket::Combination& cb = q.combinations[di * kKernels + k];
      const int ta = minirocket::kTaps[k][0], tb = minirocket::kTaps[k][1], tc = minirocket::kTaps[k][2];
      const int64_t sa = shift(ta), sb = shift(tb), sc = shift(tc);
      for (int64_t j = 0; j < cb.n_channels; ++j) {
        const int64_t ch = q.channel_indices[cb.channel_start + j];
        const float* g = rows.gpad.data() + ch * padded + pad + lo;
        minirocket::combine_channel(w.kernel_rows.data() + q_index * len, w.alpha.data() + w.alpha_row[ch] * T + lo,
                                    g + sa, g + sb, g + sc, len, j == 0);
      }
    }
    const std::vector<LaneGroup>& groups = plan.groups[first_kernel];
    const int64_t n_groups = static_cast<int64_t>(groups.size());
    w.states.assign(static_cast<size_t>(n_groups), LaneState{});
    w.outputs.resize(static_cast<size_t>(kPositionBlock * kStride));
    for (int64_t start = 0; start < len; start += kPositionBlock) {
      const int64_t n = std::min(kPositionBlock, len - start);
      const float* tap[9];  // with one channel: its 3x shifted by each tap's offset, at the block
      for (int x = 0; x < 9 && one_channel; ++x) tap[x] = rows.gpad.data() + pad + lo + start + shift(x);
      for (int64_t q0 = 0; q0 < kHalf; q0 += kLanes) {
        if (one_channel) {
          kOneChannelTranspositions[first_kernel][q0 / kLanes](w.alpha.data() + lo + start, tap, n,
                                                               w.outputs.data() + q0);
        } else {
          transpose_rows(StoredRows{w.kernel_rows.data() + q0 * len + start, len}, n, w.outputs.data() + q0);
        }
      }
      for (int64_t g = 0; g < n_groups; ++g) {
        const LaneGroup& group = groups[g];
#if SOFTDTW_TORCH_X86_INTRINSICS
        if (g + 1 < n_groups && avx512_path()) {
          const LaneGroup& next = groups[g + 1];
          LaneState& state = w.states[g];
          LaneState& next_state = w.states[g + 1];
          if (group.picked || next.picked) {
            pool_block_pair_avx512<true>(w.outputs.data(), start, n, group, next, state, next_state);
          } else {
            pool_block_pair_avx512<false>(w.outputs.data(), start, n, group, next, state, next_state);
          }
          ++g;
          continue;
        }
#endif
        if (group.picked) {
          pool_block<true>(w.outputs.data(), start, n, group, w.states[g]);
        } else {
          pool_block<false>(w.outputs.data(), start, n, group, w.states[g]);
        }
      }
    }
    for (int64_t g = 0; g < n_groups; ++g) {
      const LaneGroup& group = groups[g];
      float values[kPoolings][kLanes];
      finite = pooled_values(w.states[g], len, values) && finite;
      for (int l = 0; l < kLanes && group.feature[l] >= 0; ++l) {
        float* feature = block + group.feature[l];
        for (int64_t pooling = 0; pooling < kPoolings; ++pooling) feature[pooling * p.n_features] = values[pooling][l];
      }
    }
  }
  return finite;
}

// Half first_kernel of dilation index di of q (its kernels k = 2q + first_kernel, q < kHalf) in
// lane groups: groups of 8 consecutive kernels with one bias index, then the rest (kernels
// q >= kWhole, all their biases, q-major) in picked groups.
std::vector<LaneGroup> lane_groups(const minirocket::TransformProblem& q, int64_t di, int64_t first_kernel) {
  constexpr int64_t kWhole = kHalf / kLanes * kLanes;  // kernels in unpicked groups
  const int64_t nf = q.combinations[di * kKernels].n_features;
  const auto feature_of = [&](int64_t q_index, int64_t f) {
    return q.combinations[di * kKernels + 2 * q_index + first_kernel].feature_start + f;
  };
  std::vector<LaneGroup> groups;
  for (int64_t f = 0; f < nf; ++f) {
    for (int64_t q0 = 0; q0 < kWhole; q0 += kLanes) {
      LaneGroup& group = groups.emplace_back();
      group.first = q0;
      for (int l = 0; l < kLanes; ++l) {
        group.feature[l] = feature_of(q0 + l, f);
        group.bias[l] = q.biases[group.feature[l]];
      }
    }
  }
  const int64_t rest = (kHalf - kWhole) * nf;
  for (int64_t lane = 0; lane < (rest + kLanes - 1) / kLanes * kLanes; ++lane) {
    const int l = static_cast<int>(lane % kLanes);
    if (l == 0) {
      groups.emplace_back().picked = true;
      groups.back().first = kWhole + std::min(lane, rest - 1) / nf;
    }
    LaneGroup& group = groups.back();
    const int64_t q_index = kWhole + lane / nf;
    if (lane < rest) {
      group.pick[l] = static_cast<int32_t>(q_index - group.first);
      group.feature[l] = feature_of(q_index, lane % nf);
      group.bias[l] = q.biases[group.feature[l]];
    } else {
      group.bias[l] = std::numeric_limits<float>::infinity();
      group.feature[l] = -1;
    }
  }
  return groups;
}

// Every dilation's plan for q, built once per transform.
std::vector<DilationPlan> dilation_plans(const minirocket::TransformProblem& q) {
  const int64_t n_dilations = static_cast<int64_t>(q.combinations.size()) / kKernels;
  std::vector<DilationPlan> plans(static_cast<size_t>(n_dilations));
  for (int64_t di = 0; di < n_dilations; ++di) {
    std::vector<char> used(static_cast<size_t>(q.n_channels), 0);
    for (int64_t k = 0; k < kKernels; ++k) {
      const minirocket::Combination& cb = q.combinations[di * kKernels + k];
      for (int64_t j = 0; j < cb.n_channels; ++j) used[q.channel_indices[cb.channel_start + j]] = 1;
    }
    for (int64_t c = 0; c < q.n_channels; ++c) {
      if (used[c]) plans[di].channels.push_back(c);
    }
    for (int64_t first_kernel = 0; first_kernel < 2; ++first_kernel) {
      plans[di].groups[first_kernel] = lane_groups(q, di, first_kernel);
    }
  }
  return plans;
}

at::Tensor transform_cpu(const at::Tensor& x, const at::Tensor& num_channels_per_combination,
                         const at::Tensor& channel_indices, const at::Tensor& dilations,
                         const at::Tensor& num_features_per_dilation, const at::Tensor& biases,
                         const at::Tensor& diff_dilations, const at::Tensor& diff_num_features_per_dilation,
                         const at::Tensor& diff_biases, const std::optional<at::Tensor>& x_lengths) {
  const TransformProblem p =
      prepare_transform(x, num_channels_per_combination, channel_indices, dilations, num_features_per_dilation, biases,
                        diff_dilations, diff_num_features_per_dilation, diff_biases, x_lengths, /*to_float32=*/false);
  const minirocket::TransformProblem& s = p.series;
  const int64_t row_size = 2 * kPoolings * p.n_features;
  // A big features matrix reuses the last freed one's block (common/table_memory.h): 1,000 cases of
  // the default 49,728 features are 200 MB, which would fault about 49,000 pages a call.
  at::Tensor out = table_memory::empty({s.n_cases, row_size}, s.x.options().dtype(at::kFloat));
  if (s.n_cases == 0 || p.n_features == 0) return out;
  const std::vector<DilationPlan> plans[2] = {dilation_plans(s), dilation_plans(p.difference)};
  const int64_t n_dilations[2] = {static_cast<int64_t>(plans[0].size()), static_cast<int64_t>(plans[1].size())};
  const int64_t per_case = n_dilations[0] + n_dilations[1];
  const int64_t* lengths = s.x_lengths.defined() ? s.x_lengths.data_ptr<int64_t>() : nullptr;
  float* op = out.data_ptr<float>();
  // (case, representation, dilation) items, case-major, shared out one at a time
  // (common/parallel.h). Each feature is computed by one thread in a fixed order.
  std::atomic<bool> not_finite{false}, overflow{false};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, s.x.scalar_type(), "multirocket_transform", [&] {
    for_each_shared_item<Workspace>(
        s.n_cases * per_case,
        [&](int64_t item, Workspace& w) {
          const int64_t i = item / per_case, rest = item % per_case;
          const int r = rest < n_dilations[0] ? 0 : 1;
          const int64_t di = r == 0 ? rest : rest - n_dilations[0];
          if (w.prepared_case != i && !prepare_case<scalar_t>(p, i, lengths ? lengths[i] : s.n_timepoints, w)) {
            not_finite = true;
          }
          if (!transform_dilation(p, r, plans[r][di], di, op + i * row_size, w)) overflow = true;
        },
        [&] { return not_finite.load() || overflow.load(); });
  });
  TORCH_CHECK_VALUE(!not_finite, kTransformOp, minirocket::kNotFiniteMessage);
  TORCH_CHECK_VALUE(!overflow, kTransformOp, kOverflowMessage);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CPU, m) {
  m.impl("multirocket_fit", &fit_cpu);
  m.impl("multirocket_transform", &transform_cpu);
}

}  // namespace multirocket
}  // namespace softdtw_torch
