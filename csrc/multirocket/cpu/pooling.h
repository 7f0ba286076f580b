// MultiRocket's pooling on the CPU: the lane groups of a dilation's (kernel, bias) pairs, their state
// between position blocks, and pool_block, the portable loop that pools one group (its avx512
// path, two groups at a time, is in avx512.h; kernel.cpp chooses).
#pragma once

#include <cstdint>
#include <cstring>

#include "../../common/macros.h"
#include "../math.h"

namespace softdtw_torch {
namespace multirocket {

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

}  // namespace multirocket
}  // namespace softdtw_torch
