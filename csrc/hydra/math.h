// Hydra (Dempster, Schmidt & Webb 2023; aeon's HydraTransformer, docs/design/rocket.md §11): the
// per-group arithmetic shared by the CPU kernels, the CUDA kernels and the CPU emulation of the
// latter (no ATen: device code includes it).
//
// The fitted kernels are weights (n_dilations, n_representations, n_groups, n_kernels, 9): at
// dilation index i (dilation d = 2^i, zero padding 4d on each side, so an output per input
// position) and representation r (0: the series, 1: its first difference), group g's kernels
// compete over one row s: the case's channel 0 for one channel (aeon's univariate branch), else
// the sum of the group's channels[i, r, g, :] of the representation (aeon sums the channels of
// the first difference, not the difference of the sum). At each position t, among the kernels'
// responses z_j(t) = sum over taps of w[j, tap] · s(t + (tap - 4)·d):
//   count_max[j] += z_j(t) where j is the first maximum, count_min[j] += 1 where j is the first
//   minimum (torch.max / torch.min over the kernels pick the first; scatter_add_ then adds the
//   positions in order, from 0).
// The response is one fused multiply-add per tap, taps in order from 0: the order oneDNN's
// float32 convolution uses for all but the last (T mod 8) positions on an AVX2 CPU (measured),
// so that the features are aeon's bits wherever its convolution's are ours (README, Hydra).
// count_max is the only feature with a derivative: z_j(t) at its first maximum; the backward
// (group_backward) follows the forward's choice of maximum, so the two agree at ties.
#pragma once

#include <cmath>
#include <cstdint>

#include "../common/macros.h"
#include "../common/rounding.h"

namespace softdtw_torch {
namespace hydra {

constexpr int kTaps = 9;
// The shortest series aeon's fit takes: its dilations are 2^0 .. 2^int(log2((T - 1) / 8)), none
// below T = 6 (int() truncates toward zero).
constexpr int64_t kMinLength = 6;
// At most 2^31 as a dilation: a tap's offset (up to 4 dilations) stays far from int64's range.
constexpr int64_t kMaxDilations = 32;
// Each (dilation, representation) gives two feature blocks: count_max, then count_min.
constexpr int64_t kBlocks = 2;

SOFTDTW_TORCH_HOST_DEVICE int64_t dilation_of(int64_t dilation_index) { return int64_t(1) << dilation_index; }

// One group's row: where it reads x and how. x_case points at the case's (n_channels, row_stride)
// series; channels[0 .. n_summed) are the channels it sums (multivariate), or none (channel 0).
template <typename scalar_t>
struct GroupRow {
  const scalar_t* x_case = nullptr;
  int64_t row_stride = 0;       // x's time points (the series' row length in memory)
  const int64_t* channels = nullptr;
  int64_t n_summed = 0;         // 0: univariate, channel 0 as it is
  bool difference = false;      // the first difference x[t + 1] - x[t]
  int64_t length = 0;           // the representation's length (the case's, minus 1 for the difference)

  // s(p) for p in [0, length): one subtraction per channel for the difference, then the channels
  // added in order from 0 (torch's sum over the gathered channels).
  SOFTDTW_TORCH_HOST_DEVICE scalar_t value(int64_t p) const {
    if (n_summed == 0) return at(0, p);
    scalar_t acc = scalar_t(0);
    for (int64_t c = 0; c < n_summed; ++c) acc = rounded_sum(acc, at(channels[c], p));
    return acc;
  }
  SOFTDTW_TORCH_HOST_DEVICE scalar_t at(int64_t channel, int64_t p) const {
    const scalar_t* row = x_case + channel * row_stride;
    return difference ? rounded_sum(row[p + 1], -row[p]) : row[p];
  }
  // The nine taps around t at dilation d, 0 in the padding.
  SOFTDTW_TORCH_HOST_DEVICE void taps(int64_t t, int64_t d, scalar_t* v) const {
    for (int tap = 0; tap < kTaps; ++tap) {
      const int64_t p = t + (tap - 4) * d;
      v[tap] = (p >= 0 && p < length) ? value(p) : scalar_t(0);
    }
  }
};

SOFTDTW_TORCH_HOST_DEVICE int64_t n_summed_channels(int64_t n_channels, int64_t channels_per_group) {
  return n_channels > 1 ? channels_per_group : 0;  // aeon: `if n_channels > 1` (multivariate)
}

// Kernel j's response to the taps v: fused multiply-adds in tap order, from 0.
template <typename scalar_t>
SOFTDTW_TORCH_HOST_DEVICE scalar_t response(const scalar_t* w_kernel, const scalar_t* v) {
  scalar_t z = scalar_t(0);
  for (int tap = 0; tap < kTaps; ++tap) z = fused_multiply_add(w_kernel[tap], v[tap], z);
  return z;
}

// One group's 2·k features: count_max[j] at out_max[j], count_min[j] at out_min[j]. The reference
// form (one position at a time), which the CUDA kernel runs and the CPU's vectorised loop
// reproduces bit for bit. w: the group's (k, 9) weights.
template <typename scalar_t>
SOFTDTW_TORCH_HOST_DEVICE void group_features(const GroupRow<scalar_t>& row, int64_t d, const scalar_t* w, int64_t k,
                                              scalar_t* out_max, scalar_t* out_min) {
  for (int64_t j = 0; j < k; ++j) out_max[j] = out_min[j] = scalar_t(0);
  scalar_t v[kTaps];
  for (int64_t t = 0; t < row.length; ++t) {
    row.taps(t, d, v);
    scalar_t best = response(w, v), worst = best;
    int64_t arg_best = 0, arg_worst = 0;
    for (int64_t j = 1; j < k; ++j) {
      const scalar_t z = response(w + j * kTaps, v);
      if (z > best) best = z, arg_best = j;
      if (z < worst) worst = z, arg_worst = j;
    }
    out_max[arg_best] = rounded_sum(out_max[arg_best], best);
    out_min[arg_worst] = rounded_sum(out_min[arg_worst], scalar_t(1));
  }
}

// The backward of one group's count_max features: grad_max[j] (the incoming gradient of
// count_max[j]) flows to z_j(t) wherever j is the first maximum at t. Adds, in position order then
// tap order, grad_max[j]·w[j, tap] into grad_row[p] (the row s, length row.length) and
// grad_max[j]·s(p) into grad_w[j·9 + tap], for p = t + (tap - 4)·d inside the row.
template <typename scalar_t>
SOFTDTW_TORCH_HOST_DEVICE void group_backward(const GroupRow<scalar_t>& row, int64_t d, const scalar_t* w, int64_t k,
                                              const scalar_t* grad_max, scalar_t* grad_row, scalar_t* grad_w) {
  scalar_t v[kTaps];
  for (int64_t t = 0; t < row.length; ++t) {
    row.taps(t, d, v);
    scalar_t best = response(w, v);
    int64_t arg_best = 0;
    for (int64_t j = 1; j < k; ++j) {
      const scalar_t z = response(w + j * kTaps, v);
      if (z > best) best = z, arg_best = j;
    }
    const scalar_t g = grad_max[arg_best];
    if (g == scalar_t(0)) continue;
    const scalar_t* w_best = w + arg_best * kTaps;
    scalar_t* grad_w_best = grad_w + arg_best * kTaps;
    for (int tap = 0; tap < kTaps; ++tap) {
      const int64_t p = t + (tap - 4) * d;
      if (p < 0 || p >= row.length) continue;
      grad_row[p] = rounded_sum(grad_row[p], rounded_product(g, w_best[tap]));
      grad_w_best[tap] = rounded_sum(grad_w_best[tap], rounded_product(g, v[tap]));
    }
  }
}

}  // namespace hydra
}  // namespace softdtw_torch
