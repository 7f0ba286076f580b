// MiniRocket's kernels on the GPU (shared by the minirocket and multirocket families): which
// combinations a one-channel dilation kernel takes. Host code, on the combination layout
// prepare_transform makes (problem.h); no ATen, so the torch-free test harness splits its layout
// with the same function.
#pragma once

#include <climits>
#include <cstdint>
#include <vector>

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

}  // namespace minirocket
}  // namespace softdtw_torch
