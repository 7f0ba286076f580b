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
#include "../../common/cpu.h"
#include "../../common/parallel.h"
#include "../../common/table_memory.h"
#include "../../common/minirocket/rows.h"
#include "../problem.h"
#include "avx512.h"
#include "pooling.h"

namespace softdtw_torch {
namespace multirocket {

namespace {

// The avx512 path (common/cpu.h) of the pooling and the transposition: pool_block_pair_avx512 and
// transpose_16_positions_avx512; else their 256-bit loops. Measured by probe_pooling (below).
void probe_pooling(VectorPath path);
const PathRule kPoolingPaths{"multirocket", {VectorPath::kAvx512, VectorPath::kPortable}, &probe_pooling};
const bool kPoolingPathsRegistered = register_path_rule(kPoolingPaths);

// ---------------------------------------------------------------------------------------------
// Transform. Work items are (case, representation, dilation) triples. Per case: -x and 3x
// zero-padded for both representations, once per thread; per dilation C_alpha once per used
// channel; per kernel its output over the counted segment, pooled for each of its biases. The
// pooling's lane groups and portable loop are in pooling.h, its avx512 path in avx512.h.

// Positions [start, start + n) of `outputs` pooled into the lanes of groups[0, count), states[g]
// holding group g's: two groups at a time on the avx512 path (pool_block_pair_avx512, the last one
// alone when count is odd), else one at a time (pool_block); the same bits either way.
void pool_groups(VectorPath path, const float* outputs, int64_t start, int64_t n, const LaneGroup* groups,
                 LaneState* states, int64_t count) {
  for (int64_t g = 0; g < count; ++g) {
#if SOFTDTW_TORCH_X86_INTRINSICS
    if (path == VectorPath::kAvx512 && g + 1 < count) {
      if (groups[g].picked || groups[g + 1].picked) {
        pool_block_pair_avx512<true>(outputs, start, n, groups[g], groups[g + 1], states[g], states[g + 1]);
      } else {
        pool_block_pair_avx512<false>(outputs, start, n, groups[g], groups[g + 1], states[g], states[g + 1]);
      }
      ++g;
      continue;
    }
#endif
    if (groups[g].picked) {
      pool_block<true>(outputs, start, n, groups[g], states[g]);
    } else {
      pool_block<false>(outputs, start, n, groups[g], states[g]);
    }
  }
}

// kPoolingPaths' probe: two lane groups pooled over 128 blocks of kPositionBlock positions on
// `path` (pool_groups).
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
  LaneGroup groups[2];
  groups[1].first = kLanes;
  for (int l = 0; l < kLanes; ++l) groups[0].bias[l] = groups[1].bias[l] = 0.05f * static_cast<float>(l - 4);
  LaneState states[2];
  for (int block = 0; block < 128; ++block) {  // the same outputs each time, at later positions
    pool_groups(path, outputs.data(), block * kPositionBlock, kPositionBlock, groups, states, 2);
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


// transpose_8_rows, 16 positions at a time on the avx512 path.
template <typename Rows8>
void transpose_rows(VectorPath path, const Rows8& rows, int64_t n, float* __restrict out) {
  int64_t done = 0;
#if SOFTDTW_TORCH_X86_INTRINSICS
  if (path == VectorPath::kAvx512) done = transpose_16_positions_avx512(rows, n, out);
#endif
  transpose_8_rows(rows, done, n, out);
}

// transpose_rows of one channel's row block kBlock of half kFirstKernel (OneChannelRows), picked
// at run time from kOneChannelTranspositions.
template <int kBlock, int kFirstKernel>
void transpose_one_channel(VectorPath path, const float* alpha, const float* const (&tap)[9], int64_t n, float* out) {
  OneChannelRows<kBlock, kFirstKernel> rows{alpha, {}};
  std::copy(tap, tap + 9, rows.tap);
  transpose_rows(path, rows, n, out);
}
using OneChannelTransposition = void (*)(VectorPath, const float*, const float* const (&)[9], int64_t, float*);
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
  const VectorPath path = path_of(kPoolingPaths);
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
          kOneChannelTranspositions[first_kernel][q0 / kLanes](path, w.alpha.data() + lo + start, tap, n,
                                                               w.outputs.data() + q0);
        } else {
          transpose_rows(path, StoredRows{w.kernel_rows.data() + q0 * len + start, len}, n, w.outputs.data() + q0);
        }
      }
      pool_groups(path, w.outputs.data(), start, n, groups.data(), w.states.data(), n_groups);
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
