// CPU kernels of the ROCKET ops: aeon's per-(case, channel) normalisation and the convolution
// features (see docs/design/rocket.md §4–5 and rocket/math.h for the arithmetic).
//
// Forward (design doc §5, "How the CPU kernel evaluates it"): the responses s(t) of every output
// position t in [-p, T + p - (L-1)d) in aeon's term order, scanned in increasing t for the PPV
// count and the first maximum. Groups of 8 equal-length cases (16 on Intel CPUs with AVX-512; the
// last one possibly partial, or split over two lanes a case when at most half full) run one case
// per vector lane (features_of_case_lanes), kernels in parallel; the other cases alone
// (responses(), then scan_responses()), cases in parallel (kernels when there are fewer cases
// than threads). Every (case, kernel) gets the same
// operations either way, so results depend neither on the thread count nor on how the batch is
// split.
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "../../common/macros.h"
#include "../../common/cpu.h"
#include "../../common/parallel.h"
#include "../problem.h"

namespace softdtw_torch {
namespace {

// One kernel of the tuple, read from the plan's host tensors.
struct KernelView {
  int64_t length, dilation, padding, n_channels;
  const float* weights;    // (n_channels, length) row-major
  const int32_t* channels;  // n_channels channel indices
  float bias;
};

struct HostKernels {
  const float *weights, *biases;
  const int32_t *lengths, *dilations, *paddings, *num_channels, *channels;
  const int64_t *weight_offsets, *channel_offsets;

  explicit HostKernels(const RocketPlan& plan)
      : weights(plan.kernels.weights.data_ptr<float>()),
        biases(plan.kernels.biases.data_ptr<float>()),
        lengths(plan.kernels.lengths.data_ptr<int32_t>()),
        dilations(plan.kernels.dilations.data_ptr<int32_t>()),
        paddings(plan.kernels.paddings.data_ptr<int32_t>()),
        num_channels(plan.kernels.num_channel_indices.data_ptr<int32_t>()),
        channels(plan.kernels.channel_indices.data_ptr<int32_t>()),
        weight_offsets(plan.weight_offsets.data_ptr<int64_t>()),
        channel_offsets(plan.channel_offsets.data_ptr<int64_t>()) {}

  KernelView operator[](int64_t k) const {
    return {lengths[k], dilations[k], paddings[k], num_channels[k], weights + weight_offsets[k],
            channels + channel_offsets[k], biases[k]};
  }
};

// One case: its series (n_channels rows of `stride` values, the first `length` of them valid).
template <typename acc_t>
struct CaseView {
  const acc_t* series;
  int64_t stride, length;
  const acc_t* row(int32_t channel) const { return series + channel * stride; }
};

// GCC / Clang vectors of the accumulation type, for the register-blocked responses below.
template <typename T>
struct Vector;
template <>
struct Vector<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct Vector<double> {
  typedef double type __attribute__((vector_size(32)));
};

// The responses of kVectors vectors of consecutive positions starting at i, every tap of which
// falls inside the series, into out[i, ...): accumulated in registers across all taps and
// channels, in aeon's term order in every lane (the same rocket_step, lane by lane). 8 vectors
// are 8 independent chains, enough to hide the FMA latency at two FMAs per cycle.
template <typename acc_t, bool kFma, int kVectors>
[[gnu::always_inline]] inline void responses_in_registers(const acc_t* __restrict series, int64_t stride,
                                                          const KernelView& k, int64_t first, int64_t i,
                                                          acc_t* __restrict out) {
  using V = typename Vector<acc_t>::type;
  constexpr int kLanes = sizeof(V) / sizeof(acc_t);
  V acc[kVectors];
  for (int v = 0; v < kVectors; ++v) {
    for (int l = 0; l < kLanes; ++l) acc[v][l] = static_cast<acc_t>(k.bias);
  }
  for (int64_t j = 0; j < k.length; ++j) {
    for (int64_t c = 0; c < k.n_channels; ++c) {
      const acc_t w = static_cast<acc_t>(k.weights[c * k.length + j]);
      const acc_t* xs = series + k.channels[c] * stride + first + j * k.dilation + i;
#pragma GCC unroll 8  // GCC left the float block's 8 vectors in memory without it
      for (int v = 0; v < kVectors; ++v) {
        V x, sum;
        std::memcpy(&x, xs + v * kLanes, sizeof(V));
        for (int l = 0; l < kLanes; ++l) sum[l] = rocket_step<acc_t, kFma>(acc[v][l], w, x[l]);
        acc[v] = sum;
      }
    }
  }
  std::memcpy(out + i, acc, sizeof(acc));
}

// All responses s(t) of kernel k on case x, t = -p, ..., in position order, into `out` (size >=
// the output length). Returns the output length (<= 0: no position, nothing written).
// aeon's loop for one position: s = b, then taps j outer and selected channels c inner, skipping
// taps outside the series. Positions all of whose taps fall inside the series (every position of
// an unpadded kernel) run in register blocks (responses_in_registers). The others, at the padded
// edges, and the last few interior ones run tap by tap: for each (j, c), the positions whose tap j
// falls inside the series form one interval, updated in one vectorizable sweep, skipped taps never
// touched. Either way every position sees its terms in aeon's order.
template <typename acc_t, bool kFma>
SOFTDTW_TORCH_CPU_CLONES int64_t responses(const acc_t* __restrict series, int64_t stride, int64_t series_length,
                                           const KernelView& k, acc_t* __restrict out) {
  const int64_t out_len = rocket_output_length(series_length, k.length, k.dilation, k.padding);
  if (out_len <= 0) return out_len;
  const int64_t first = -k.padding;  // positions [first, first + out_len)
  constexpr int64_t kLanes = sizeof(typename Vector<acc_t>::type) / sizeof(acc_t);
  const int64_t interior_begin = std::min(out_len, -first);
  const int64_t interior_end =
      std::max(interior_begin, std::min(out_len, series_length - first - (k.length - 1) * k.dilation));
  int64_t i = interior_begin;
  for (; i + 8 * kLanes <= interior_end; i += 8 * kLanes) {
    responses_in_registers<acc_t, kFma, 8>(series, stride, k, first, i, out);
  }
  // The rest of the interior in at most one block of 4, 2 and 1 vectors: more chains per block
  // than one vector at a time (short series have most of their positions here).
  if (i + 4 * kLanes <= interior_end) {
    responses_in_registers<acc_t, kFma, 4>(series, stride, k, first, i, out);
    i += 4 * kLanes;
  }
  if (i + 2 * kLanes <= interior_end) {
    responses_in_registers<acc_t, kFma, 2>(series, stride, k, first, i, out);
    i += 2 * kLanes;
  }
  if (i + kLanes <= interior_end) {
    responses_in_registers<acc_t, kFma, 1>(series, stride, k, first, i, out);
    i += kLanes;
  }
  const int64_t edges[2][2] = {{0, interior_begin}, {i, out_len}};
  for (const auto& edge : edges) {
    for (int64_t t = edge[0]; t < edge[1]; ++t) out[t] = static_cast<acc_t>(k.bias);
    for (int64_t j = 0; j < k.length; ++j) {
      const int64_t shift = first + j * k.dilation;  // series index of tap j at output index i: i + shift
      const int64_t i_begin = std::max(edge[0], -shift);
      const int64_t i_end = std::min(edge[1], series_length - shift);
      for (int64_t c = 0; c < k.n_channels; ++c) {
        const acc_t w = static_cast<acc_t>(k.weights[c * k.length + j]);
        const acc_t* __restrict xs = series + k.channels[c] * stride + shift;
        for (int64_t t = i_begin; t < i_end; ++t) out[t] = rocket_step<acc_t, kFma>(out[t], w, xs[t]);
      }
    }
  }
  return out_len;
}

template <typename acc_t, bool kFma>
int64_t responses(const CaseView<acc_t>& x, const KernelView& k, acc_t* out) {
  return responses<acc_t, kFma>(x.series, x.stride, x.length, k, out);
}

template <typename acc_t>
struct KernelFeatures {
  float ppv, max;
  int64_t argmax;  // output position index of the first maximum, -1 when the kernel has no position
};

// The first maximum of s[0, n) (n >= 1) and the number of positive values, 8 (4) lanes at a
// time (GCC does not vectorize the scalar loop: a max reduction may reorder ±0). Each lane keeps
// its first strict maximum and where it was; the result is the first position holding a value
// equal to the largest, which is the one aeon's sequential strict `>` keeps.
template <typename acc_t>
SOFTDTW_TORCH_CPU_CLONES void first_max_and_positives(const acc_t* __restrict s, int64_t n, int64_t* argmax,
                                                      int64_t* positive) {
  using V = typename Vector<acc_t>::type;
  using Mask = decltype(V{} > V{});  // lanes of -1 (true) or 0, as wide as acc_t
  constexpr int64_t kLanes = sizeof(V) / sizeof(acc_t);
  acc_t largest = s[0];
  int64_t first = 0, count = 0, t = 0;
  if (n >= kLanes) {
    V lane_max;  // every lane starts from s[0], as the scalar loop does
    Mask lane_first = {}, lane_count = {}, position;
    for (int64_t l = 0; l < kLanes; ++l) {
      lane_max[l] = s[0];
      position[l] = l;
    }
    for (; t + kLanes <= n; t += kLanes) {
      V x;
      std::memcpy(&x, s + t, sizeof(V));
      const Mask above = x > lane_max;
      lane_max = above ? x : lane_max;
      lane_first = above ? position : lane_first;
      lane_count -= x > V{};
      position += kLanes;
    }
    for (int64_t l = 0; l < kLanes; ++l) {
      largest = lane_max[l] > largest ? lane_max[l] : largest;
      count += lane_count[l];
    }
    first = n;
    for (int64_t l = 0; l < kLanes; ++l) {
      if (lane_max[l] == largest) first = std::min<int64_t>(first, lane_first[l]);
    }
    if (first == n) first = 0;  // s[0] is NaN (an overflowed response): it stays, as in a scalar scan
  }
  for (; t < n; ++t) {
    if (s[t] > largest) {
      largest = s[t];
      first = t;
    }
    count += s[t] > 0;
  }
  *argmax = first;
  *positive = count;
}

// aeon: count of s > 0 over the output length, and the first strict maximum. A kernel longer than
// the (case's) series even with its padding has no position: both features are 0 (aeon would
// divide by zero). With a temperature, PPV is the soft mean(sigmoid(s / tau)).
template <typename acc_t>
KernelFeatures<acc_t> scan_responses(const acc_t* s, int64_t out_len, const std::optional<double>& temperature) {
  if (out_len <= 0) return {0.0f, 0.0f, -1};
  int64_t argmax, positive;
  first_max_and_positives(s, out_len, &argmax, &positive);
  float ppv;
  if (temperature.has_value()) {
    double sum = 0.0;
    for (int64_t t = 0; t < out_len; ++t) sum += 1.0 / (1.0 + std::exp(-static_cast<double>(s[t]) / *temperature));
    ppv = static_cast<float>(sum / static_cast<double>(out_len));
  } else {
    ppv = static_cast<float>(static_cast<double>(positive) / static_cast<double>(out_len));
  }
  return {ppv, static_cast<float>(s[argmax]), argmax};
}

int64_t case_length(const int64_t* lengths, int64_t n, int64_t padded) {
  return lengths != nullptr ? lengths[n] : padded;
}

int64_t max_output_length(const HostKernels& kernels, int64_t n_kernels, int64_t T) {
  int64_t longest = 1;
  for (int64_t k = 0; k < n_kernels; ++k) {
    longest = std::max(longest, rocket_output_length(T, kernels.lengths[k], kernels.dilations[k], kernels.paddings[k]));
  }
  return longest;
}

// Runs body(n, k) for every (case, kernel): over cases in parallel, or over kernels when there
// are fewer cases than threads. Each call owns its outputs, so the split never changes a result.
template <typename Body>
void for_each_case_kernel(int64_t n_cases, int64_t n_kernels, const Body& body) {
  if (n_cases >= at::get_num_threads()) {
    at::parallel_for(0, n_cases, 1, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) body(n, 0, n_kernels);
    });
  } else {
    for (int64_t n = 0; n < n_cases; ++n) {
      at::parallel_for(0, n_kernels, 16, [&](int64_t begin, int64_t end) { body(n, begin, end); });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Groups of kLanes cases at once (float32 modes, equal lengths, hard PPV): one vector lane per
// case. Every case of a group skips the same taps at the same positions, so the padded edges need
// no per-lane masks and each lane adds its terms in aeon's order, as one case alone would.
// kLanes is 8 (AVX2's vectors), or 16 on the avx512 path (wide_groups()): the same
// instructions per tap and position block, twice the cases, since those CPUs run two 512-bit
// FMAs per cycle.

constexpr int64_t kBlockPositions = 8;  // positions per block: 8 independent FMA chains
constexpr int64_t kMinGroupLanes = 2;   // a partial group of fewer cases costs more than they alone

template <int kLanes>
struct Lanes {
  typedef float vector __attribute__((vector_size(4 * kLanes)));
  typedef int32_t mask __attribute__((vector_size(4 * kLanes)));  // what a compare gives: -1 or 0
};

// Zeros whose product with a weight of the given sign is -0.0: adding such a term leaves every
// sum as it is, -0.0 included, which is what skipping the tap does.
constexpr float kNeutralTerm[2] = {-0.0f, 0.0f};  // for w with its sign bit clear, set

// Where a group's values lie (in floats from its start): a group holds kLanes series,
// time-major per channel (element (u, lane) of a row at u·kLanes + lane), each row with `margin`
// positions of a neutral zero on both sides, in two copies: copy s holds kNeutralTerm[s] in its
// margins. A tap whose weight has sign bit s reads copy s, so a tap outside the series adds -0.0
// with no per-position test (every block reads whole vectors). Rows start on 64-byte boundaries,
// so no vector load straddles two cache lines. Every group of a transform has the same layout.
template <int kLanes>
struct GroupLayout {
  static constexpr int64_t kAlign = 16;  // floats: 64 bytes
  int64_t n_channels, T, margin, row_size;
  GroupLayout(int64_t n_channels, int64_t T, int64_t margin)
      : n_channels(n_channels),
        T(T),
        margin(margin),
        row_size(((T + 2 * margin) * kLanes + kAlign - 1) / kAlign * kAlign) {}
  int64_t row(bool negative, int64_t c) const { return ((negative ? n_channels : 0) + c) * row_size; }
  // The kLanes values of series index u (-margin <= u < T + margin) of channel c, in the copy for
  // a weight whose sign bit is `negative`.
  int64_t offset(int64_t c, bool negative, int64_t u) const { return row(negative, c) + (u + margin) * kLanes; }
  int64_t size() const { return 2 * n_channels * row_size; }
};

template <int kLanes>
class CaseGroup {
 public:
  explicit CaseGroup(const GroupLayout<kLanes>& layout)
      : layout_(layout), storage_(static_cast<size_t>(layout.size())) {}
  // Cases [first_case, min(first_case + kLanes, end_case)) of x (n_channels × T each) into both
  // copies, margins included; the lanes past them (a partial group) hold neutral zeros, whose
  // features nobody reads. Split (at most kLanes / 2 cases): lane l < kLanes / 2 holds case l and
  // lane kLanes / 2 + l the same case moved shift() positions earlier, so that each block of
  // positions computes the case's responses at i (first half) and at shift() + i (second half):
  // half the blocks for a partial group, each lane still adding its terms in aeon's order (a tap
  // outside the series reads a neutral zero in both halves).
  void load(const float* x, int64_t first_case, int64_t end_case) {
    const int64_t C = layout_.n_channels, T = layout_.T, margin = layout_.margin;
    lanes_ = std::min<int64_t>(kLanes, end_case - first_case);
    for (int s = 0; s < 2; ++s) {
      for (int64_t c = 0; c < C; ++c) {
        float* row = storage_.data() + layout_.offset(c, s == 1, -margin);
        for (int64_t lane = 0; lane < kLanes; ++lane) {
          const bool second_half = split() && lane >= kLanes / 2;
          const int64_t case_lane = second_half ? lane - kLanes / 2 : lane;
          const int64_t moved = second_half ? shift() : 0;
          const float* series = case_lane < lanes_ ? x + ((first_case + case_lane) * C + c) * T : nullptr;
          for (int64_t u = -margin; u < T + margin; ++u) {
            const int64_t v = u + moved;
            row[(u + margin) * kLanes + lane] = series != nullptr && v >= 0 && v < T ? series[v] : kNeutralTerm[s];
          }
        }
      }
    }
  }
  int64_t length() const { return layout_.T; }  // of every series of the group
  int64_t lanes() const { return lanes_; }      // cases loaded
  bool split() const { return lanes_ <= kLanes / 2; }
  int64_t shift() const { return split() ? (layout_.T + 1) / 2 : 0; }  // of the second half's lanes
  const float* data() const { return storage_.data(); }  // where GroupLayout's offsets start

 private:
  GroupLayout<kLanes> layout_;
  int64_t lanes_ = 0;
  AlignedVector<float> storage_;  // rows on 64-byte boundaries (GroupLayout's row_size)
};

// One term of a kernel in aeon's order (taps j outer, channels c inner): its weight and where its
// series values for the output position at series index 0 start in a group (GroupLayout's offset,
// in the copy for the weight's sign bit), so that the block at series index u0 reads from
// data + offset + u0·kLanes.
struct LaneTap {
  int64_t offset;
  float weight;
};

// Every kernel's terms, built once per transform (every group has the same layout): kernel k's
// are [first[k], first[k + 1]). Listed by all threads, each kernel's where the counts place them
// (one thread listing them all took 8% of BasicMotions' transform at 1 thread, more at 2).
struct KernelTaps {
  std::unique_ptr<LaneTap[]> taps;  // not value-initialized: every entry is written
  std::vector<int64_t> first;
  template <int kLanes>
  KernelTaps(const GroupLayout<kLanes>& layout, const HostKernels& kernels, int64_t K) : first(K + 1, 0) {
    for (int64_t i = 0; i < K; ++i) first[i + 1] = first[i] + int64_t{kernels.lengths[i]} * kernels.num_channels[i];
    taps.reset(new LaneTap[static_cast<size_t>(first[K])]);
    at::parallel_for(0, K, 256, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const KernelView k = kernels[i];
        LaneTap* out = taps.get() + first[i];
        for (int64_t j = 0; j < k.length; ++j) {
          for (int64_t c = 0; c < k.n_channels; ++c) {
            const float w = k.weights[c * k.length + j];
            *out++ = {layout.offset(k.channels[c], std::signbit(w), j * k.dilation), w};
          }
        }
      }
    });
  }
  const LaneTap* of(int64_t k) const { return taps.get() + first[k]; }
  int64_t count(int64_t k) const { return first[k + 1] - first[k]; }
};

// Adds the terms of `taps` for 8 positions of kLanes cases to acc, the block's first position at
// series index u0 of the group at `data`: in the taps' order in every lane, as one case alone would.
template <bool kFma, int kLanes>
[[gnu::always_inline]] inline void accumulate_case_lanes(const float* data, const LaneTap* __restrict taps,
                                                         int64_t n_taps, int64_t u0,
                                                         typename Lanes<kLanes>::vector* acc) {
  using Vector = typename Lanes<kLanes>::vector;
  for (int64_t t = 0; t < n_taps; ++t) {
    const float w = taps[t].weight;
    const float* __restrict block = data + taps[t].offset + u0 * kLanes;
#pragma GCC unroll 8
    for (int64_t q = 0; q < kBlockPositions; ++q) {
      Vector x, sum;
      std::memcpy(&x, block + q * kLanes, sizeof(x));
      for (int64_t lane = 0; lane < kLanes; ++lane) sum[lane] = rocket_step<float, kFma>(acc[q][lane], w, x[lane]);
      acc[q] = sum;
    }
  }
}

// PPV, MAX and the first maximum's position of kernel k on the cases loaded in `group`,
// written to ppv[lane·stride], max[lane·stride], argmax[lane·argmax_stride]. Positions run in
// blocks of 8, one accumulator vector each (8 independent FMA chains); the last block may run past
// the output length into the margins (those positions are not scanned). The scan runs in position
// order on the block's registers: strict `>` from position 0, as aeon's. A split group (kSplit)
// scans positions [0, min(shift, out_len)) in its first half's lanes and [shift, out_len) in the
// second half's, which start from -inf rather than from their first response (a NaN there must
// not hide the later values); a case's two results are then joined as one scan would have ended:
// the second half's maximum only if strictly greater, the counts added.
template <bool kFma, int kLanes, bool kSplit>
SOFTDTW_TORCH_CPU_CLONES void features_of_case_lanes(const CaseGroup<kLanes>& group, const KernelView& k,
                                                     const LaneTap* taps, int64_t n_taps, float* ppv, float* max,
                                                     int64_t stride, int64_t* argmax, int64_t argmax_stride) {
  using Vector = typename Lanes<kLanes>::vector;
  using Mask = typename Lanes<kLanes>::mask;
  constexpr int64_t kHalf = kLanes / 2;
  const int64_t out_len = rocket_output_length(group.length(), k.length, k.dilation, k.padding);
  const int64_t lanes = group.lanes();
  if (out_len <= 0) {
    for (int64_t lane = 0; lane < lanes; ++lane) {
      ppv[lane * stride] = max[lane * stride] = 0.0f;
      argmax[lane * argmax_stride] = -1;
    }
    return;
  }
  const int64_t first = -k.padding;
  const int64_t shift = kSplit ? group.shift() : 0;
  const int64_t positions = kSplit ? std::min(shift, out_len) : out_len;  // the first half's
  // kSplit: the second half's lanes stop scanning here; their state is kept from that position on.
  const int64_t second_half_end = kSplit ? std::max<int64_t>(0, out_len - shift) : positions;
  Mask second_half = {};
  if constexpr (kSplit) {
    for (int64_t lane = kHalf; lane < kLanes; ++lane) second_half[lane] = -1;
  }
  Vector bias;
  for (int64_t lane = 0; lane < kLanes; ++lane) bias[lane] = k.bias;
  Vector lane_max = {}, kept_max = {};
  Mask lane_first = {}, count = {}, kept_first = {}, kept_count = {};
  for (int64_t i0 = 0; i0 < positions; i0 += kBlockPositions) {
    Vector acc[kBlockPositions];
    for (int64_t q = 0; q < kBlockPositions; ++q) acc[q] = bias;
    accumulate_case_lanes<kFma, kLanes>(group.data(), taps, n_taps, i0 + first, acc);
    if (i0 == 0) {
      lane_max = acc[0];
      if constexpr (kSplit) lane_max = second_half ? Vector{} - std::numeric_limits<float>::infinity() : lane_max;
    }
    // A constant trip count, so that acc stays in registers (an index known only at run time
    // kept it in memory, and the FMAs above with it).
#pragma GCC unroll 8
    for (int64_t q = 0; q < kBlockPositions; ++q) {
      if (i0 + q >= positions) break;
      if (kSplit && i0 + q == second_half_end) {
        kept_max = lane_max;
        kept_first = lane_first;
        kept_count = count;
      }
      const Mask above = acc[q] > lane_max;
      lane_max = above ? acc[q] : lane_max;
      lane_first = above ? Mask{} + static_cast<int32_t>(i0 + q) : lane_first;
      count -= acc[q] > Vector{};
    }
  }
  if (kSplit && second_half_end < positions) {
    lane_max = second_half ? kept_max : lane_max;
    lane_first = second_half ? kept_first : lane_first;
    count = second_half ? kept_count : count;
  }
  for (int64_t lane = 0; lane < lanes; ++lane) {
    float lane_value = lane_max[lane];
    int64_t position = lane_first[lane], positive = count[lane];
    if (kSplit && out_len > shift) {
      if (lane_max[kHalf + lane] > lane_value) {
        lane_value = lane_max[kHalf + lane];
        position = shift + lane_first[kHalf + lane];
      }
      positive += count[kHalf + lane];
    }
    ppv[lane * stride] = static_cast<float>(static_cast<double>(positive) / static_cast<double>(out_len));
    max[lane * stride] = lane_value;
    argmax[lane * argmax_stride] = position;
  }
}

// Whether groups are 16 cases wide: on the avx512 path (common/cpu.h; measured on Intel CPUs,
// whose server parts have two 512-bit FMA units; not on AMD), where the loops' x86-64-v4 clone
// runs. Not without the clones: 16-lane vectors on narrower instruction sets would spill their
// accumulators.
const PathRule kGroupPaths{"rocket", {VectorPath::kAvx512, VectorPath::kPortable}, nullptr,
                           /*avx512_measured_on_intel_only=*/true};
const bool kGroupPathsRegistered = register_path_rule(kGroupPaths);

bool wide_groups() { return SOFTDTW_TORCH_HAS_CPU_CLONES && path_of(kGroupPaths) == VectorPath::kAvx512; }

// The cases [0, n_grouped) of x in groups of kLanes (the last one partial when the count is not a
// multiple). Work items are (group, run of kernels) pairs, group-major, shared out one at a time:
// at least 16 per thread where the kernels allow (runs of 16 or more), so that no thread idles
// while another ends the last group (BasicMotions: 40 cases, 3 groups of 16 for 2 threads) and
// the last item is a small part of a thread's work (with 4 per thread, BasicMotions' 9 items
// split 5 and 4 between 2 threads).
template <bool kFma, int kLanes>
void features_of_groups(const float* x, int64_t n_grouped, int64_t C, int64_t T, const HostKernels& kernels,
                        int64_t K, float* out, int64_t* out_argmax) {
  // Series indices run from -p to T + p + 6 (the last block's overrun): margins of p + 8.
  int64_t max_padding = 0;
  for (int64_t k = 0; k < K; ++k) max_padding = std::max<int64_t>(max_padding, kernels.paddings[k]);
  const GroupLayout<kLanes> layout(C, T, max_padding + kBlockPositions);
  const KernelTaps taps(layout, kernels, K);
  const int64_t n_groups = (n_grouped + kLanes - 1) / kLanes;
  const int64_t runs = std::clamp<int64_t>((16 * at::get_num_threads() + n_groups - 1) / n_groups, 1,
                                           std::max<int64_t>(1, K / 16));
  const int64_t run_length = (K + runs - 1) / runs;
  struct GroupWork {
    std::optional<CaseGroup<kLanes>> group;  // built on the thread's first item
    int64_t loaded = -1;                     // the group it holds
  };
  for_each_shared_item<GroupWork>(n_groups * runs, [&](int64_t item, GroupWork& w) {
    const int64_t g = item / runs, k_begin = item % runs * run_length, k_end = std::min(K, k_begin + run_length);
    if (!w.group) w.group.emplace(layout);
    if (w.loaded != g) {
      w.group->load(x, g * kLanes, n_grouped);  // split when at most half a vector of cases is left
      w.loaded = g;
    }
    const int64_t first = g * kLanes;
    for (int64_t k = k_begin; k < k_end; ++k) {
      float* features = out + first * 2 * K + 2 * k;
      if (w.group->split()) {
        features_of_case_lanes<kFma, kLanes, true>(*w.group, kernels[k], taps.of(k), taps.count(k), features,
                                                   features + 1, 2 * K, out_argmax + first * K + k, K);
      } else {
        features_of_case_lanes<kFma, kLanes, false>(*w.group, kernels[k], taps.of(k), taps.count(k), features,
                                                    features + 1, 2 * K, out_argmax + first * K + k, K);
      }
    }
  });
}

template <typename acc_t, bool kFma>
void convolve_forward_impl(const ConvolveInputs& in, const std::optional<double>& temperature, at::Tensor& features,
                           at::Tensor& argmax) {
  const HostKernels kernels(in.plan);
  const int64_t n_cases = in.x.size(0), C = in.x.size(1), T = in.x.size(2), K = in.plan.n_kernels;
  const acc_t* x = in.x.data_ptr<acc_t>();
  const int64_t* lengths = in.lengths.defined() ? in.lengths.data_ptr<int64_t>() : nullptr;
  float* out = features.data_ptr<float>();
  int64_t* out_argmax = argmax.data_ptr<int64_t>();
  // Groups of equal-length cases, one lane each (the last group partial when at least
  // kMinGroupLanes cases are left: a group costs less than 2 cases alone); the other cases alone.
  int64_t n_grouped = 0;
  if constexpr (std::is_same_v<acc_t, float>) {
    if (lengths == nullptr && !temperature.has_value()) {
      const bool wide = wide_groups();
      const int64_t lanes = wide ? 16 : 8;
      n_grouped = n_cases % lanes >= kMinGroupLanes ? n_cases : n_cases - n_cases % lanes;
      if (n_grouped > 0 && wide) {
        features_of_groups<kFma, 16>(x, n_grouped, C, T, kernels, K, out, out_argmax);
      } else if (n_grouped > 0) {
        features_of_groups<kFma, 8>(x, n_grouped, C, T, kernels, K, out, out_argmax);
      }
    }
  }
  const int64_t buffer_size = max_output_length(kernels, K, T);
  for_each_case_kernel(n_cases - n_grouped, K, [&](int64_t rest, int64_t k_begin, int64_t k_end) {
    const int64_t n = n_grouped + rest;
    std::vector<acc_t> s(buffer_size);
    const CaseView<acc_t> view{x + n * C * T, T, case_length(lengths, n, T)};
    for (int64_t k = k_begin; k < k_end; ++k) {
      const int64_t out_len = responses<acc_t, kFma>(view, kernels[k], s.data());
      const KernelFeatures<acc_t> f = scan_responses(s.data(), out_len, temperature);
      out[n * 2 * K + 2 * k] = f.ppv;
      out[n * 2 * K + 2 * k + 1] = f.max;
      out_argmax[n * K + k] = f.argmax;
    }
  });
}

std::tuple<at::Tensor, at::Tensor> convolve_forward_cpu(
    const at::Tensor& x, const at::Tensor& weights, const at::Tensor& lengths, const at::Tensor& biases,
    const at::Tensor& dilations, const at::Tensor& paddings, const at::Tensor& num_channel_indices,
    const at::Tensor& channel_indices, c10::string_view accumulate, const std::optional<at::Tensor>& x_lengths,
    std::optional<double> ppv_temperature) {
  const ConvolveInputs in = prepare_convolve(
      x, {weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices}, accumulate, x_lengths,
      ppv_temperature);
  at::Tensor features = at::empty({x.size(0), 2 * in.plan.n_kernels}, x.options().dtype(at::kFloat));
  at::Tensor argmax = at::empty({x.size(0), in.plan.n_kernels}, x.options().dtype(at::kLong));
  dispatch_rocket_accumulate(in.mode, [&](auto mode) {
    using M = decltype(mode);
    convolve_forward_impl<typename M::acc, M::fma>(in, ppv_temperature, features, argmax);
  });
  return {features, argmax};
}

// d soft-PPV / d s(t) for one (case, kernel): g · sigmoid'(s/tau) / (tau · out_len).
template <typename acc_t>
double soft_ppv_slope(acc_t s, double grad, double temperature, int64_t out_len) {
  const double sig = 1.0 / (1.0 + std::exp(-static_cast<double>(s) / temperature));
  return grad * sig * (1.0 - sig) / (temperature * static_cast<double>(out_len));
}

// Adds slope · d s(t) / d inputs for one position t of kernel k on one case: to the series
// gradient (x_grad, same layout as the case) and/or the kernel's weight gradient and bias.
template <typename acc_t>
void add_position_gradient(const CaseView<acc_t>& x, const KernelView& k, int64_t t, double slope, double* x_grad,
                           double* w_grad, double* b_grad) {
  for (int64_t j = 0, u = t; j < k.length; ++j, u += k.dilation) {
    if (u < 0 || u >= x.length) continue;
    for (int64_t c = 0; c < k.n_channels; ++c) {
      if (x_grad != nullptr) x_grad[k.channels[c] * x.stride + u] += slope * k.weights[c * k.length + j];
      if (w_grad != nullptr) w_grad[c * k.length + j] += slope * static_cast<double>(x.row(k.channels[c])[u]);
    }
  }
  if (b_grad != nullptr) *b_grad += slope;
}

// The gradient of features[n, 2k:2k+2] for one (case, kernel), added into the given buffers:
// MAX through its saved argmax position, the soft PPV (when a temperature is set) through every
// position (responses recomputed); the hard PPV has zero gradient.
template <typename acc_t, bool kFma>
void add_kernel_gradient(const CaseView<acc_t>& x, const KernelView& k, int64_t argmax, double grad_ppv,
                         double grad_max, const std::optional<double>& temperature, std::vector<acc_t>& s,
                         double* x_grad, double* w_grad, double* b_grad) {
  if (argmax < 0) return;  // no output position: constant features
  if (grad_max != 0.0) add_position_gradient(x, k, argmax - k.padding, grad_max, x_grad, w_grad, b_grad);
  if (temperature.has_value() && grad_ppv != 0.0) {
    const int64_t out_len = responses<acc_t, kFma>(x, k, s.data());
    for (int64_t i = 0; i < out_len; ++i) {
      const double slope = soft_ppv_slope(s[i], grad_ppv, *temperature, out_len);
      add_position_gradient(x, k, i - k.padding, slope, x_grad, w_grad, b_grad);
    }
  }
}

template <typename acc_t, bool kFma>
void convolve_backward_impl(const ConvolveInputs& in, const at::Tensor& grad, const at::Tensor& argmax,
                            const std::optional<double>& temperature, at::Tensor& x_grad, at::Tensor& w_grad,
                            at::Tensor& b_grad) {
  const HostKernels kernels(in.plan);
  const int64_t n_cases = in.x.size(0), C = in.x.size(1), T = in.x.size(2), K = in.plan.n_kernels;
  const acc_t* x = in.x.data_ptr<acc_t>();
  const int64_t* lengths = in.lengths.defined() ? in.lengths.data_ptr<int64_t>() : nullptr;
  const float* g = grad.data_ptr<float>();
  const int64_t* arg = argmax.data_ptr<int64_t>();
  const int64_t buffer_size = max_output_length(kernels, K, T);
  auto case_view = [&](int64_t n) { return CaseView<acc_t>{x + n * C * T, T, case_length(lengths, n, T)}; };

  // Series gradient: cases in parallel, each summing its kernels in order.
  double* gx = x_grad.data_ptr<double>();
  at::parallel_for(0, n_cases, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> s(buffer_size);
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t k = 0; k < K; ++k) {
        add_kernel_gradient<acc_t, kFma>(case_view(n), kernels[k], arg[n * K + k], g[n * 2 * K + 2 * k],
                                         g[n * 2 * K + 2 * k + 1], temperature, s, gx + n * C * T, nullptr, nullptr);
      }
    }
  });
  // Weight and bias gradients: kernels in parallel, each summing the cases in order.
  double* gw = w_grad.data_ptr<double>();
  double* gb = b_grad.data_ptr<double>();
  at::parallel_for(0, K, 16, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> s(buffer_size);
    for (int64_t k = begin; k < end; ++k) {
      for (int64_t n = 0; n < n_cases; ++n) {
        add_kernel_gradient<acc_t, kFma>(case_view(n), kernels[k], arg[n * K + k], g[n * 2 * K + 2 * k],
                                         g[n * 2 * K + 2 * k + 1], temperature, s, nullptr,
                                         gw + in.plan.weight_offsets.data_ptr<int64_t>()[k], gb + k);
      }
    }
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolve_backward_cpu(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& weights, const at::Tensor& lengths,
    const at::Tensor& biases, const at::Tensor& dilations, const at::Tensor& paddings,
    const at::Tensor& num_channel_indices, const at::Tensor& channel_indices, const at::Tensor& argmax,
    c10::string_view accumulate, const std::optional<at::Tensor>& x_lengths, std::optional<double> ppv_temperature) {
  ConvolveBackward b = prepare_convolve_backward(
      grad, x, {weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices}, argmax,
      accumulate, x_lengths, ppv_temperature);
  dispatch_rocket_accumulate(b.in.mode, [&](auto mode) {
    using M = decltype(mode);
    convolve_backward_impl<typename M::acc, M::fma>(b.in, b.grad, b.argmax, ppv_temperature, b.x_grad, b.w_grad,
                                                    b.b_grad);
  });
  return b.results(x.scalar_type());
}

// aeon's Normalizer: per (case, channel), over the case's first length values, x' = (x - mean) / std
// with numpy's mean and population std in the input's precision, std == 0 replaced by 1. Values
// past a case's length are set to 0.
template <typename scalar_t>
void normalise_impl(const at::Tensor& x, const at::Tensor& lengths, at::Tensor& out) {
  const int64_t n_cases = x.size(0), C = x.size(1), T = x.size(2);
  const scalar_t* in = x.data_ptr<scalar_t>();
  scalar_t* res = out.data_ptr<scalar_t>();
  const int64_t* len = lengths.defined() ? lengths.data_ptr<int64_t>() : nullptr;
  at::parallel_for(0, n_cases * C, 1, [&](int64_t begin, int64_t end) {
    std::vector<scalar_t> scratch(T);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t valid = case_length(len, row / C, T);
      const scalar_t* r = in + row * T;
      const scalar_t mean = numpy_mean(r, valid);
      scalar_t sd = numpy_std(r, valid, mean, scratch.data());
      if (sd == scalar_t(0)) sd = scalar_t(1);
      for (int64_t t = 0; t < valid; ++t) res[row * T + t] = (r[t] - mean) / sd;
      for (int64_t t = valid; t < T; ++t) res[row * T + t] = scalar_t(0);
    }
  });
}

at::Tensor normalise_cpu(const at::Tensor& x, const std::optional<at::Tensor>& x_lengths) {
  check_rocket_series(kRocketNormaliseOp, x);
  const at::Tensor lengths = checked_rocket_lengths(kRocketNormaliseOp, x_lengths, x);
  const at::Tensor xc = x.contiguous();
  at::Tensor out = at::empty_like(xc);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "rocket_normalise", [&] { normalise_impl<scalar_t>(xc, lengths, out); });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CPU, m) {
  m.impl("rocket_normalise", &normalise_cpu);
  m.impl("_rocket_convolve_forward", &convolve_forward_cpu);
  m.impl("_rocket_convolve_backward", &convolve_backward_cpu);
}

}  // namespace softdtw_torch
