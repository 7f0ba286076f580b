// Device code of MiniRocket's CUDA transform (docs/design/rocket.md §7). No ATen here: the op
// bodies (transform_ops.h) launch it on a GPU (kernel.cu) and under the CPU emulator in the tests
// (tests/cuda_emu).
//
// One thread block per (case, combination); the blocks loop over all of them (grid-stride, 64-bit
// indices). Threads take consecutive time points t of the counted segment; each computes the
// combination's output at t from x with the same float32 additions, in the same order, as the
// CPU kernel and aeon (../math.h). PPV counts are integers: per warp a ballot and a
// popcount per bias, summed over warps in a fixed order, so the result is deterministic and
// identical to the CPU's. No float atomics.
#pragma once

#include <cstdint>

#include "../../common/device.cuh"
#include "../../common/minirocket/math.h"

namespace softdtw_torch {
namespace minirocket {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBiasChunk = 64;  // biases counted per pass over the segment (shared counters)

// The block's shared memory (dynamic, of this size).
struct TransformShared {
  int warp_counts[kWarps][kBiasChunk];
  float bias_chunk[kBiasChunk];
};

__device__ float combination_output(const float* x_case, int64_t row_stride, const int32_t* channels,
                                    int64_t n_channels, int64_t T, int64_t t, int64_t d, int a, int b, int c) {
  float acc = 0.0f;  // np.sum over the channels starts from 0
  for (int64_t j = 0; j < n_channels; ++j) {
    const float* row = x_case + static_cast<int64_t>(channels[j]) * row_stride;
    acc = acc + combine_transform(alpha_at(row, T, t, d), gamma_at(row, T, t, d, a), gamma_at(row, T, t, d, b),
                                  gamma_at(row, T, t, d, c));
  }
  return acc;
}

__global__ void __launch_bounds__(kThreads)
    transform_kernel(const float* __restrict__ x, const int64_t* __restrict__ lengths,
                     const DeviceCombination* __restrict__ combinations, const int32_t* __restrict__ channel_indices,
                     const float* __restrict__ biases, float* __restrict__ out, int64_t n_cases, int64_t n_channels,
                     int64_t n_timepoints, int64_t n_combinations, int64_t n_features) {
  TransformShared& shared = *reinterpret_cast<TransformShared*>(dynamic_shared_memory());
  auto& warp_counts = shared.warp_counts;
  auto& bias_chunk = shared.bias_chunk;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t n_blocks = n_cases * n_combinations;
  for (int64_t block = blockIdx.x; block < n_blocks; block += gridDim.x) {
    const int64_t i = block / n_combinations;
    const DeviceCombination cb = combinations[block % n_combinations];
    const int64_t T = lengths ? lengths[i] : n_timepoints;
    const float* x_case = x + i * n_channels * n_timepoints;
    int a, b, c;
    kernel_taps(cb.kernel, &a, &b, &c);
    int64_t lo, hi;
    ppv_segment(T, cb.dilation, cb.dilation_index, cb.kernel, &lo, &hi);
    for (int64_t j0 = 0; j0 < cb.n_features; j0 += kBiasChunk) {
      const int nb = static_cast<int>(min(static_cast<int64_t>(kBiasChunk), cb.n_features - j0));
      for (int j = threadIdx.x; j < kWarps * kBiasChunk; j += kThreads) warp_counts[j / kBiasChunk][j % kBiasChunk] = 0;
      for (int j = threadIdx.x; j < nb; j += kThreads) bias_chunk[j] = biases[cb.feature_start + j0 + j];
      __syncthreads();
      // Every lane of a warp runs the same iterations (the loop bound is block-uniform), so the
      // ballots see all 32 lanes; lanes past the segment vote false.
      for (int64_t base = lo; base < hi; base += kThreads) {
        const int64_t t = base + threadIdx.x;
        const bool inside = t < hi;
        const float v = inside ? combination_output(x_case, n_timepoints, channel_indices + cb.channel_start,
                                                    cb.n_channels, T, t, cb.dilation, a, b, c)
                               : 0.0f;
        for (int j = 0; j < nb; ++j) {
          const unsigned votes = __ballot_sync(0xffffffffu, inside && v > bias_chunk[j]);
          if (lane == 0) warp_counts[warp][j] += __popc(votes);
        }
      }
      __syncthreads();
      for (int j = threadIdx.x; j < nb; j += kThreads) {
        int64_t count = 0;
        for (int w = 0; w < kWarps; ++w) count += warp_counts[w][j];
        out[i * n_features + cb.feature_start + j0 + j] = ppv_value(count, hi - lo);
      }
      __syncthreads();  // the counters and biases are reset for the next chunk or block
    }
  }
}

// The launch, shared by the CUDA op (transform_ops.h) and the torch-free test harness
// (tests/cuda_emu/harness.cpp): one block per (case, combination) up to a grid of 32 blocks per
// multiprocessor (launch.grid_cap and launch.multiprocessors, ../../common/device.cuh), then
// grid-stride. out is (n_cases, n_features).
template <typename Launch>
void launch_transform(const Launch& launch, const float* x, const int64_t* lengths,
                      const DeviceCombination* combinations, const int32_t* channel_indices, const float* biases,
                      float* out, int64_t n_cases, int64_t n_channels, int64_t n_timepoints, int64_t n_combinations,
                      int64_t n_features) {
  const int64_t n_blocks = n_cases * n_combinations;
  const int64_t cap = launch.grid_cap(launch.multiprocessors() * 32);
  launch(transform_kernel, Grid(n_blocks < cap ? n_blocks : cap), kThreads,
         static_cast<int64_t>(sizeof(TransformShared)), x, lengths, combinations, channel_indices, biases, out, n_cases,
         n_channels, n_timepoints, n_combinations, n_features);
}

}  // namespace minirocket
}  // namespace softdtw_torch
