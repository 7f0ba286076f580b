// MiniRocket's kernels on the GPU (shared by the minirocket and multirocket families): which
// combinations a one-channel dilation kernel takes, and its grid. Host code, on the combination
// layout prepare_transform makes (problem.h); no ATen, so the torch-free test harness splits its
// layout with the same function.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "../device.cuh"
#include "math.h"

namespace softdtw_torch {
namespace minirocket {

// A dilation whose 84 kernels read one channel: kernel k's biases (and features) are
// n_features consecutive ones from feature_start + k·n_features, as prepare_transform lays them out.
struct DeviceDilation {
  int64_t dilation, dilation_index, channel, feature_start, n_features;
};

// The dilations whose 84 kernels read one channel, and the other combinations. A series of 2^31
// positions or more, or a dilation of 2^31 features or more, stays with the other combinations:
// the dilation kernels count and index in int.
struct TransformLayout {
  std::vector<DeviceDilation> dilations;
  std::vector<DeviceCombination> combinations;
};

inline TransformLayout split_layout(const DeviceCombination* combinations, int64_t n_combinations,
                                    const int32_t* channel_indices, int64_t n_timepoints) {
  TransformLayout layout;
  for (int64_t first = 0; first < n_combinations; first += kKernels) {
    const DeviceCombination& c0 = combinations[first];
    bool one_channel =
        n_timepoints <= INT32_MAX && first + kKernels <= n_combinations && c0.n_features <= INT32_MAX / kKernels;
    for (int64_t k = 0; one_channel && k < kKernels; ++k) {
      const DeviceCombination& cb = combinations[first + k];
      one_channel = cb.kernel == k && cb.dilation == c0.dilation && cb.dilation_index == c0.dilation_index &&
                    cb.n_channels == 1 && channel_indices[cb.channel_start] == channel_indices[c0.channel_start] &&
                    cb.n_features == c0.n_features && cb.feature_start == c0.feature_start + k * c0.n_features;
    }
    if (one_channel) {
      layout.dilations.push_back(
          {c0.dilation, c0.dilation_index, channel_indices[c0.channel_start], c0.feature_start, c0.n_features});
    } else {
      const int64_t end = first + kKernels < n_combinations ? first + kKernels : n_combinations;
      layout.combinations.insert(layout.combinations.end(), combinations + first, combinations + end);
    }
  }
  return layout;
}

// The grid of a one-channel dilation kernel (MiniRocket's and MultiRocket's dilation_kernel, one
// block per (case, dilation), each axis grid-stride): dilations along y (at most 65,535 blocks),
// cases along x, together up to 32 blocks per multiprocessor (launch.grid_cap and
// launch.multiprocessors, ../device.cuh).
template <typename Launch>
Grid dilation_grid(const Launch& launch, int64_t n_cases, int64_t n_dilations) {
  const int64_t cap = launch.grid_cap(launch.multiprocessors() * 32);
  const int64_t blocks_y = launch.grid_cap(std::min(n_dilations, kMaxGridY));
  const int64_t blocks_x = launch.grid_cap(std::min(n_cases, std::max<int64_t>(1, cap / blocks_y)));
  return Grid(blocks_x, blocks_y);
}

}  // namespace minirocket
}  // namespace softdtw_torch
