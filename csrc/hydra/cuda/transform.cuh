// Device code of Hydra's CUDA transform and its backward (docs/design/rocket.md §11). No ATen here:
// the op bodies (transform_ops.h) launch it on a GPU (kernel.cu) and under the CPU emulator in the
// tests (tests/cuda_emu).
//
// One thread per (case, dilation, representation, group): it walks its row position by position
// with math.h's group_features / group_backward, the CPU kernel's arithmetic in the same order, so
// the features (and the gradients) are the CPU's bits. Each thread writes only its own features
// (its own gradient row and weights), so there are no atomics, no shared memory and no barriers.
#pragma once

#include <cstdint>

#include "../../common/device.cuh"
#include "../math.h"

namespace softdtw_torch {
namespace hydra {

constexpr int kThreads = 128;

// The shape of a transform, as the kernels read it (TransformProblem's numbers).
struct Shape {
  int64_t n_cases, n_channels, n_timepoints, n_dilations, n_representations, n_groups, n_kernels, channels_per_group;
};

template <typename scalar_t>
__device__ GroupRow<scalar_t> device_group_row(const Shape& s, const scalar_t* x, const int64_t* channels,
                                               const int64_t* lengths, int64_t case_index, int64_t item) {
  const int64_t r = item / s.n_groups % s.n_representations;
  GroupRow<scalar_t> row;
  row.x_case = x + case_index * s.n_channels * s.n_timepoints;
  row.row_stride = s.n_timepoints;
  row.channels = channels + item * s.channels_per_group;
  row.n_summed = n_summed_channels(s.n_channels, s.channels_per_group);
  row.difference = r == 1;
  row.length = (lengths ? lengths[case_index] : s.n_timepoints) - r;
  return row;
}

// x (n_cases, n_channels, n_timepoints), weights (items, n_kernels, 9), channels (items,
// channels_per_group), items = n_dilations · n_representations · n_groups; out (n_cases,
// items · 2 · n_kernels) in aeon's order: per (dilation, representation), the count_max block of
// every group, then the count_min block.
template <typename scalar_t>
__global__ void __launch_bounds__(kThreads)
    transform_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ weights,
                     const int64_t* __restrict__ channels, const int64_t* __restrict__ lengths,
                     scalar_t* __restrict__ out, Shape s) {
  const int64_t items = s.n_dilations * s.n_representations * s.n_groups;
  const int64_t n_features = items * 2 * s.n_kernels;
  for (int64_t unit = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; unit < s.n_cases * items;
       unit += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t case_index = unit / items, item = unit % items;
    const int64_t i = item / (s.n_representations * s.n_groups), g = item % s.n_groups;
    const int64_t block = item / s.n_groups;  // (dilation, representation)
    scalar_t* out_max = out + case_index * n_features + (block * 2 * s.n_groups + g) * s.n_kernels;
    group_features(device_group_row(s, x, channels, lengths, case_index, item), dilation_of(i),
                   weights + item * s.n_kernels * kTaps, s.n_kernels, out_max, out_max + s.n_groups * s.n_kernels);
  }
}

// grad (n_cases, n_features) of the features; grad_rows (n_cases, items, n_timepoints) and grad_w
// (n_cases, items, n_kernels, 9), zero on entry.
template <typename scalar_t>
__global__ void __launch_bounds__(kThreads)
    backward_kernel(const scalar_t* __restrict__ grad, const scalar_t* __restrict__ x,
                    const scalar_t* __restrict__ weights, const int64_t* __restrict__ channels,
                    const int64_t* __restrict__ lengths, scalar_t* __restrict__ grad_rows,
                    scalar_t* __restrict__ grad_w, Shape s) {
  const int64_t items = s.n_dilations * s.n_representations * s.n_groups;
  const int64_t n_features = items * 2 * s.n_kernels;
  for (int64_t unit = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; unit < s.n_cases * items;
       unit += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t case_index = unit / items, item = unit % items;
    const int64_t i = item / (s.n_representations * s.n_groups), g = item % s.n_groups;
    const int64_t block = item / s.n_groups;
    group_backward(device_group_row(s, x, channels, lengths, case_index, item), dilation_of(i),
                   weights + item * s.n_kernels * kTaps, s.n_kernels,
                   grad + case_index * n_features + (block * 2 * s.n_groups + g) * s.n_kernels,
                   grad_rows + unit * s.n_timepoints, grad_w + unit * s.n_kernels * kTaps);
  }
}

// The launches, shared by the CUDA ops (transform_ops.h) and the emulation tests: one thread per
// (case, group) up to a grid of 32 blocks per multiprocessor, then grid-stride.
template <typename Launch>
Grid hydra_grid(const Launch& launch, const Shape& s) {
  const int64_t units = s.n_cases * s.n_dilations * s.n_representations * s.n_groups;
  const int64_t n_blocks = (units + kThreads - 1) / kThreads;
  const int64_t cap = launch.grid_cap(launch.multiprocessors() * 32);
  return Grid(n_blocks < cap ? n_blocks : cap);
}

template <typename Launch, typename scalar_t>
void launch_transform(const Launch& launch, const scalar_t* x, const scalar_t* weights, const int64_t* channels,
                      const int64_t* lengths, scalar_t* out, const Shape& s) {
  launch(transform_kernel<scalar_t>, hydra_grid(launch, s), kThreads, int64_t(0), x, weights, channels, lengths, out,
         s);
}

template <typename Launch, typename scalar_t>
void launch_backward(const Launch& launch, const scalar_t* grad, const scalar_t* x, const scalar_t* weights,
                     const int64_t* channels, const int64_t* lengths, scalar_t* grad_rows, scalar_t* grad_w,
                     const Shape& s) {
  launch(backward_kernel<scalar_t>, hydra_grid(launch, s), kThreads, int64_t(0), grad, x, weights, channels, lengths,
         grad_rows, grad_w, s);
}

}  // namespace hydra
}  // namespace softdtw_torch
