// Device code of MultiRocket's CUDA transform (docs/design/rocket.md §8). No ATen here: the op
// bodies (transform_ops.h) launch it on a GPU (kernel.cu) and under the CPU emulator in the tests
// (tests/cuda_emu).
//
// MPV's float64 sum must add its terms in aeon's order to give aeon's bits, so each feature's
// values are pooled one position after the other (Pooling::add), by one thread. Each output is
// computed from x (or the first difference) with the same float32 additions, in the same order, as
// the CPU kernel and aeon (../math.h). Two kernels (split_multirocket_layout decides which takes
// what):
//   - dilation_kernel: a dilation whose 84 kernels read one channel (every dilation of a
//     univariate series), one block per (case, dilation) of one representation. The block computes
//     the 84 kernels' outputs at 128 positions into shared memory (a thread a position, the 84
//     kernels unrolled), then each thread pools one (kernel, bias) feature over those positions
//     from shared memory; 128 features at a time.
//   - transform_kernel: one thread per (case, representation, feature) of the other combinations,
//     walking its segment and computing each output from x. The threads of a warp hold consecutive
//     features, mostly of one combination, so they read the same x values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../../common/device.cuh"
#include "../../common/minirocket/layout.h"
#include "../math.h"

namespace softdtw_torch {
namespace multirocket {

using minirocket::DeviceCombination;
using minirocket::DeviceDilation;

constexpr int kThreads = 256;

// The output at t of a combination over representation rows (row_stride apart) of length T.
__device__ float combination_output(const float* rows, int64_t row_stride, const int32_t* channels, int64_t n_channels,
                                    int64_t T, int64_t t, int64_t d, int a, int b, int c, bool difference) {
  float acc = 0.0f;  // np.sum over the channels starts from 0
  for (int64_t j = 0; j < n_channels; ++j) {
    const float* row = rows + static_cast<int64_t>(channels[j]) * row_stride;
    acc = acc + minirocket::combine_transform(alpha_at(row, T, t, d, difference), gamma_at(row, T, t, d, a, difference),
                                              gamma_at(row, T, t, d, b, difference),
                                              gamma_at(row, T, t, d, c, difference));
  }
  return acc;
}

// series (n_cases, n_channels, n_timepoints) and difference (n_cases, n_channels, n_timepoints - 1)
// float32; combinations: the series' then the difference's; feature_combination[r·n_features + f]:
// the row of combinations feature f of representation r belongs to, or -1 for a feature
// dilation_kernel pools; biases likewise (2·n_features).
// out (n_cases, 8·n_features): per representation PPV, LSPV, MPV, MIPV blocks of n_features.
// overflow: set to 1 when a mean of positive values is not finite.
__global__ void __launch_bounds__(kThreads)
    transform_kernel(const float* __restrict__ series, const float* __restrict__ difference,
                     const int64_t* __restrict__ lengths, const DeviceCombination* __restrict__ combinations,
                     const int32_t* __restrict__ feature_combination, const int32_t* __restrict__ channel_indices,
                     const float* __restrict__ biases, float* __restrict__ out, int* __restrict__ overflow,
                     int64_t n_cases, int64_t n_channels, int64_t n_timepoints, int64_t n_features) {
  const int64_t per_case = 2 * n_features;
  const int64_t n_items = n_cases * per_case;
  for (int64_t item = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; item < n_items;
       item += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = item / per_case, rf = item % per_case;
    const int r = rf < n_features ? 0 : 1;
    const int64_t f = rf - r * n_features;
    if (feature_combination[rf] < 0) continue;  // pooled by dilation_kernel
    const DeviceCombination cb = combinations[feature_combination[rf]];
    const float bias = biases[rf];
    const int64_t length = (lengths ? lengths[i] : n_timepoints) - r;  // this representation's
    const int64_t row_stride = n_timepoints - r;
    const float* rows = (r == 0 ? series : difference) + i * n_channels * row_stride;
    int a, b, c;
    minirocket::kernel_taps(cb.kernel, &a, &b, &c);
    int64_t lo, hi;
    minirocket::ppv_segment(length, cb.dilation, cb.dilation_index, cb.kernel, &lo, &hi);
    Pooling pooling;
    for (int64_t t = lo; t < hi; ++t) {
      const float v = combination_output(rows, row_stride, channel_indices + cb.channel_start, cb.n_channels, length, t,
                                         cb.dilation, a, b, c, r == 1);
      pooling.add(v, bias, t - lo);
    }
    if (!isfinite(pooling.sum)) atomicExch(overflow, 1);
    pooling.write(hi - lo, out + i * 2 * kPoolings * n_features + r * kPoolings * n_features + f, n_features);
  }
}

constexpr int kDilationThreads = 128;                // positions a chunk, and features pooled at a time
constexpr int kOutputStride = kDilationThreads + 1;  // odd: a warp's 32 kernels at one position, 32 banks

// The block's shared memory (dynamic, of this size): the 84 kernels' outputs at a chunk's positions.
struct DilationShared {
  float outputs[minirocket::kKernels][kOutputStride];
};

// One representation (0: the series, rows of n_timepoints; 1: its first difference, rows of
// n_timepoints - 1) of one-channel dilations; biases and out from that representation's first
// feature (out's PPV, LSPV, MPV, MIPV blocks n_features apart, a case every 2·kPoolings·n_features).
__global__ void __launch_bounds__(kDilationThreads)
    dilation_kernel(const float* __restrict__ rows, const int64_t* __restrict__ lengths,
                    const DeviceDilation* __restrict__ dilations, const float* __restrict__ biases,
                    float* __restrict__ out, int* __restrict__ overflow, int64_t n_cases, int64_t n_channels,
                    int64_t n_timepoints, int64_t n_dilations, int64_t n_features, int representation) {
  DilationShared& shared = *reinterpret_cast<DilationShared*>(dynamic_shared_memory());
  const bool difference = representation == 1;
  const int64_t row_stride = n_timepoints - representation;
  // Cases along x and dilations along y, each grid-stride (no 64-bit division).
  for (int64_t i = blockIdx.x; i < n_cases; i += gridDim.x) {
    for (int64_t di = blockIdx.y; di < n_dilations; di += gridDim.y) {
      const DeviceDilation dl = dilations[di];
      const int64_t length = (lengths ? lengths[i] : n_timepoints) - representation, d = dl.dilation;
      const float* row = rows + (i * n_channels + dl.channel) * row_stride;
      const int per_kernel = static_cast<int>(dl.n_features);  // < 2^31 / 84 (split_layout)
      const int n_pooled = minirocket::kKernels * per_kernel;
      for (int first = 0; first < n_pooled; first += kDilationThreads) {
        // This thread's feature: kernel k, bias j, pooled over k's segment.
        const int feature = first + threadIdx.x;
        const bool pools = feature < n_pooled;
        const int k = pools ? feature / per_kernel : 0;
        const float bias = pools ? biases[dl.feature_start + feature] : 0.0f;
        int64_t lo, hi;
        minirocket::ppv_segment(length, d, dl.dilation_index, k, &lo, &hi);
        Pooling pooling;
        // Every thread runs the same chunks (length is the block's): the barriers see them all.
        for (int64_t base = 0; base < length; base += kDilationThreads) {
          __syncthreads();  // the previous chunk's outputs are pooled
          const int64_t t = base + threadIdx.x;
          const int64_t at = t < length ? t : 0;  // past the series: any position, pooled by none
          const float alpha = alpha_at(row, length, at, d, difference);
          float gamma[9];
#pragma unroll
          for (int g = 0; g < 9; ++g) gamma[g] = gamma_at(row, length, at, d, g, difference);
          minirocket::for_each_kernel<0>([&](auto kernel) {
            constexpr int kk = decltype(kernel)::value;
            constexpr minirocket::Taps taps = minirocket::taps_of(kk);
            shared.outputs[kk][threadIdx.x] =
                minirocket::combine_transform(alpha, gamma[taps.a], gamma[taps.b], gamma[taps.c]);
          });
          __syncthreads();  // the chunk's outputs are written
          if (pools) {
            const int64_t from = base > lo ? base : lo;
            const int64_t to = base + kDilationThreads < hi ? base + kDilationThreads : hi;
            for (int64_t u = from; u < to; ++u) pooling.add(shared.outputs[k][u - base], bias, u - lo);
          }
        }
        if (pools) {
          if (!isfinite(pooling.sum)) atomicExch(overflow, 1);
          pooling.write(hi - lo, out + i * 2 * kPoolings * n_features + dl.feature_start + feature, n_features);
        }
      }
    }
  }
}

// What each kernel takes, from make_layout's arrays (host code, shared by the op and the harness):
// the one-channel dilations of each representation, and feature_combination with -1 for the
// features they pool (the others stay with transform_kernel). The series' combinations come first
// in `combinations`, then the difference's; feature_combination has 2·n_features rows.
struct DilationLayout {
  std::vector<DeviceDilation> dilations[2];
  std::vector<int32_t> feature_combination;
};

inline DilationLayout split_multirocket_layout(const DeviceCombination* combinations,
                                               const int32_t* feature_combination, const int32_t* channel_indices,
                                               int64_t n_timepoints, int64_t n_features) {
  DilationLayout layout;
  layout.feature_combination.assign(feature_combination, feature_combination + 2 * n_features);
  if (n_features == 0) return layout;
  const int64_t starts[3] = {0, feature_combination[n_features - 1] + 1, feature_combination[2 * n_features - 1] + 1};
  for (int r = 0; r < 2; ++r) {
    layout.dilations[r] =
        minirocket::split_layout(combinations + starts[r], starts[r + 1] - starts[r], channel_indices, n_timepoints - r)
            .dilations;
    for (const DeviceDilation& dl : layout.dilations[r]) {
      const int64_t begin = r * n_features + dl.feature_start;
      std::fill(layout.feature_combination.begin() + begin,
                layout.feature_combination.begin() + begin + minirocket::kKernels * dl.n_features, -1);
    }
  }
  return layout;
}

// The launches, shared by the CUDA op (transform_ops.h) and the emulation tests, on the arrays
// split_multirocket_layout makes: dilation_kernel for each representation that has one-channel
// dilations (one block per (case, dilation) up to a grid of 32 blocks per multiprocessor, then
// grid-stride), then transform_kernel when a feature is left (one thread per (case,
// representation, feature) up to the same grid). dilations[r] holds n_dilations[r] rows.
template <typename Launch>
void launch_transform(const Launch& launch, const float* series, const float* difference, const int64_t* lengths,
                      const DeviceDilation* const dilations[2], const int64_t n_dilations[2],
                      const DeviceCombination* combinations, const int32_t* feature_combination, bool features_left,
                      const int32_t* channel_indices, const float* biases, float* out, int* overflow, int64_t n_cases,
                      int64_t n_channels, int64_t n_timepoints, int64_t n_features) {
  const int64_t cap = launch.grid_cap(launch.multiprocessors() * 32);
  for (int r = 0; r < 2; ++r) {
    if (n_dilations[r] == 0) continue;
    launch(dilation_kernel, minirocket::dilation_grid(launch, n_cases, n_dilations[r]), kDilationThreads,
           static_cast<int64_t>(sizeof(DilationShared)), r == 0 ? series : difference, lengths, dilations[r],
           biases + r * n_features, out + r * kPoolings * n_features, overflow, n_cases, n_channels, n_timepoints,
           n_dilations[r], n_features, r);
  }
  if (!features_left) return;
  const int64_t n_blocks = (n_cases * 2 * n_features + kThreads - 1) / kThreads;
  launch(transform_kernel, Grid(n_blocks < cap ? n_blocks : cap), kThreads, int64_t(0), series, difference, lengths,
         combinations, feature_combination, channel_indices, biases, out, overflow, n_cases, n_channels, n_timepoints,
         n_features);
}

}  // namespace multirocket
}  // namespace softdtw_torch
