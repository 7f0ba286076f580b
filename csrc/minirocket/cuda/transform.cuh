// Device code of MiniRocket's CUDA transform (docs/design/rocket.md §7). No ATen here: the op
// bodies (transform_ops.h) launch it on a GPU (kernel.cu) and under the CPU emulator in the tests
// (tests/cuda_emu).
//
// Two kernels, each computing a combination's output at t from x with the same float32 additions,
// in the same order, as the CPU kernel and aeon (../../common/minirocket/math.h), and counting it
// against the biases in integers, so the features are the CPU's bits whatever the order of blocks,
// warps and lanes. No float atomics. split_layout (../../common/minirocket/layout.h) decides
// which kernel takes which combinations.
//   - dilation_kernel: one block per (case, dilation) whose 84 kernels read one and the same
//     channel (every dilation of a univariate series). A thread holds Cα and the nine Cγ of P
//     positions in registers, the 84 kernels are unrolled at compile time (their taps are register
//     indices, and the sums they share, (Cα + Cγ[a]) + Cγ[b], are computed once), and each
//     (kernel, bias) is counted in registers over the thread's positions, then summed over the
//     warp (one reduction) and added to a shared counter by one lane.
//   - transform_kernel: one block per (case, combination), for the other combinations (several
//     channels, or kernels of a dilation on different channels): threads take consecutive t, and a
//     ballot and a popcount per bias count them per warp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "../../common/device.cuh"
#include "../../common/minirocket/layout.h"
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

constexpr int kDilationThreads = 128;
constexpr int kDilationWarps = kDilationThreads / 32;
constexpr int kDilationBiasSlots = 16;  // biases of each kernel counted per pass over the series

// The block's shared memory (dynamic, of this size): a pass's biases per kernel, and each warp's
// counters (written by its lane 0 alone: no atomics, summed over the warps at the end).
struct DilationShared {
  int counts[kDilationWarps][kKernels][kDilationBiasSlots];
  float biases[kKernels][kDilationBiasSlots];
};

// How many of a thread's P values are above bias (P <= 8: exact in float32). One compare to 1.0f
// or 0.0f a value (FSET), added as a tree: P - 1 additions that do not all wait on each other,
// where an integer count takes a compare, an add and a select a value.
template <int P>
__device__ __forceinline__ int count_above(const float (&v)[P], float bias) {
  static_assert(P >= 1 && P <= 8 && (P & (P - 1)) == 0, "1, 2, 4 or 8 values");
  float ones[P];
#pragma unroll
  for (int p = 0; p < P; ++p) ones[p] = v[p] > bias ? 1.0f : 0.0f;
#pragma unroll
  for (int width = P / 2; width >= 1; width /= 2) {
#pragma unroll
    for (int p = 0; p < width; ++p) ones[p] = ones[2 * p] + ones[2 * p + 1];
  }
  return static_cast<int>(ones[0]);
}

// P: positions a thread holds (a pass covers P·kDilationThreads of them, then the next ones).
template <int P>
__global__ void __launch_bounds__(kDilationThreads)
    dilation_kernel(const float* __restrict__ x, const int64_t* __restrict__ lengths,
                    const DeviceDilation* __restrict__ dilations, const float* __restrict__ biases,
                    float* __restrict__ out, int64_t n_cases, int64_t n_channels, int64_t n_timepoints,
                    int64_t n_dilations, int64_t n_features) {
  DilationShared& shared = *reinterpret_cast<DilationShared*>(dynamic_shared_memory());
  const int lane = threadIdx.x % 32;
  auto& warp_counts = shared.counts[threadIdx.x / 32];
  // Cases along x and dilations along y, each grid-stride: no 64-bit division (a call, whose stack
  // frame would be the kernel's only local memory).
  for (int64_t i = blockIdx.x; i < n_cases; i += gridDim.x) {
    for (int64_t di = blockIdx.y; di < n_dilations; di += gridDim.y) {
      const DeviceDilation dl = dilations[di];
      const int64_t T = lengths ? lengths[i] : n_timepoints, d = dl.dilation;
      const float* row = x + (i * n_channels + dl.channel) * n_timepoints;
      // The segments of the kernels k even and k odd (ppv_segment: by the parity of di + k), as
      // scalars (an array indexed by a run-time k would live in local memory).
      int64_t even_lo, even_hi, odd_lo, odd_hi;
      ppv_segment(T, d, dl.dilation_index, 0, &even_lo, &even_hi);
      ppv_segment(T, d, dl.dilation_index, 1, &odd_lo, &odd_hi);
      for (int64_t j0 = 0; j0 < dl.n_features; j0 += kDilationBiasSlots) {
        const int nb = static_cast<int>(min(static_cast<int64_t>(kDilationBiasSlots), dl.n_features - j0));
#pragma unroll 1  // unrolled, its hoisted offsets spill where the counting loops need the registers
        for (int s = threadIdx.x; s < kKernels * kDilationBiasSlots; s += kDilationThreads) {
          const int k = s / kDilationBiasSlots, j = s % kDilationBiasSlots;
#pragma unroll
          for (int w = 0; w < kDilationWarps; ++w) shared.counts[w][k][j] = 0;
          if (j < nb) shared.biases[k][j] = biases[dl.feature_start + k * dl.n_features + j0 + j];
        }
        __syncthreads();
        // Every thread runs the same passes (T is the block's), so the warp sums see all 32 lanes.
        for (int64_t base = 0; base < T; base += P * kDilationThreads) {
          // Cα of the even and of the odd kernels: -inf outside their segment (and past the series),
          // where the output ((Cα + Cγ[a]) + Cγ[b]) + Cγ[c] is then -inf, or NaN where 3x overflowed
          // to inf: above no bias either way, so those positions count nothing.
          float alpha_even[P], alpha_odd[P], gamma[9][P];
#pragma unroll
          for (int p = 0; p < P; ++p) {
            const int64_t t = base + p * kDilationThreads + threadIdx.x;
            const int64_t at = t < T ? t : 0;  // past the series: any position, masked below
            const float alpha = alpha_at(row, T, at, d);
            alpha_even[p] = t >= even_lo && t < even_hi ? alpha : -INFINITY;
            alpha_odd[p] = t >= odd_lo && t < odd_hi ? alpha : -INFINITY;
#pragma unroll
            for (int g = 0; g < 9; ++g) gamma[g][p] = gamma_at(row, T, at, d, g);
          }
          for_each_kernel<0>([&](auto kernel) {
            constexpr int k = decltype(kernel)::value;
            constexpr Taps taps = taps_of(k);
            float v[P];
#pragma unroll
            for (int p = 0; p < P; ++p) {
              v[p] = combine_transform(k % 2 == 0 ? alpha_even[p] : alpha_odd[p], gamma[taps.a][p], gamma[taps.b][p],
                                       gamma[taps.c][p]);
            }
#pragma unroll 1  // 84 copies of this loop: unrolled, the kernel's code would outgrow the instruction cache
            for (int j = 0; j < nb; ++j) {
              const int count = warp_sum(count_above(v, shared.biases[k][j]));
              if (lane == 0) warp_counts[k][j] += count;
            }
          });
        }
        __syncthreads();
        for (int s = threadIdx.x; s < kKernels * nb; s += kDilationThreads) {
          const int k = s / nb, j = s % nb;
          int64_t count = 0;
#pragma unroll
          for (int w = 0; w < kDilationWarps; ++w) count += shared.counts[w][k][j];
          out[i * n_features + dl.feature_start + k * dl.n_features + j0 + j] =
              ppv_value(count, k % 2 == 0 ? even_hi - even_lo : odd_hi - odd_lo);
        }
        __syncthreads();  // the counters and biases are set again for the next pass or block
      }
    }
  }
}

// The launches, shared by the CUDA op (transform_ops.h) and the torch-free test harness
// (tests/cuda_emu/harness.cpp), of the two kernels on their parts of split_layout's layout: one
// block per (case, dilation) or (case, combination) up to a grid of 32 blocks per multiprocessor
// (launch.grid_cap and launch.multiprocessors, ../../common/device.cuh), then grid-stride.
// dilation_kernel holds as few positions a thread as cover the longest series in one pass, at most
// 8 (then several passes). out is (n_cases, n_features).
template <typename Launch>
void launch_transform(const Launch& launch, const float* x, const int64_t* lengths, const DeviceDilation* dilations,
                      int64_t n_dilations, const DeviceCombination* combinations, int64_t n_combinations,
                      const int32_t* channel_indices, const float* biases, float* out, int64_t n_cases,
                      int64_t n_channels, int64_t n_timepoints, int64_t n_features) {
  if (n_dilations > 0) {
    const int64_t positions = (n_timepoints + kDilationThreads - 1) / kDilationThreads;
    const auto kernel = positions <= 1   ? dilation_kernel<1>
                        : positions <= 2 ? dilation_kernel<2>
                        : positions <= 4 ? dilation_kernel<4>
                                         : dilation_kernel<8>;
    launch(kernel, dilation_grid(launch, n_cases, n_dilations), kDilationThreads,
           static_cast<int64_t>(sizeof(DilationShared)), x, lengths, dilations, biases, out, n_cases, n_channels,
           n_timepoints, n_dilations, n_features);
  }
  if (n_combinations > 0) {
    const int64_t cap = launch.grid_cap(launch.multiprocessors() * 32);
    launch(transform_kernel, Grid(std::min(n_cases * n_combinations, cap)), kThreads,
           static_cast<int64_t>(sizeof(TransformShared)), x, lengths, combinations, channel_indices, biases, out,
           n_cases, n_channels, n_timepoints, n_combinations, n_features);
  }
}

}  // namespace minirocket
}  // namespace softdtw_torch
