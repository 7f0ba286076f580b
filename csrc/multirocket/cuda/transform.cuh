// Device code of MultiRocket's CUDA transform (docs/design/rocket.md §8). No ATen here: the op
// bodies (transform_ops.h) launch it on a GPU (kernel.cu) and under the CPU emulator in the tests
// (tests/cuda_emu).
//
// One thread per (case, representation, feature); the grid loops over all of them (grid-stride,
// 64-bit indices). MPV's float64 sum must add its terms in aeon's order to give aeon's bits, so
// each thread walks its segment sequentially: it computes its combination's output at each
// position from x (or the first difference) with the same float32 additions, in the same order, as
// the CPU kernel and aeon (../math.h), and pools it (Pooling::add). The threads of a warp hold
// consecutive features, mostly of one combination, so they read the same x values. No shared
// memory, no barriers, no atomics but one flag.
#pragma once

#include <cstdint>

#include "../../common/device.cuh"
#include "../math.h"

namespace softdtw_torch {
namespace multirocket {

using minirocket::DeviceCombination;

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
// the row of combinations feature f of representation r belongs to; biases likewise (2·n_features).
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

// The launch, shared by the CUDA op (transform_ops.h) and the emulation tests: one thread per
// (case, representation, feature) up to a grid of 32 blocks per multiprocessor, then grid-stride.
template <typename Launch>
void launch_transform(const Launch& launch, const float* series, const float* difference, const int64_t* lengths,
                      const DeviceCombination* combinations, const int32_t* feature_combination,
                      const int32_t* channel_indices, const float* biases, float* out, int* overflow, int64_t n_cases,
                      int64_t n_channels, int64_t n_timepoints, int64_t n_features) {
  const int64_t n_blocks = (n_cases * 2 * n_features + kThreads - 1) / kThreads;
  const int64_t cap = launch.grid_cap(launch.multiprocessors() * 32);
  launch(transform_kernel, Grid(n_blocks < cap ? n_blocks : cap), kThreads, int64_t(0), series, difference, lengths,
         combinations, feature_combination, channel_indices, biases, out, overflow, n_cases, n_channels, n_timepoints,
         n_features);
}

}  // namespace multirocket
}  // namespace softdtw_torch
