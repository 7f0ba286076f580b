// Device-agnostic kernels built from other ops:
// - soft_dtw (CompositeImplicitAutograd): picks the fused or unfused mode and forms the divergence;
//   autograd flows through the ops it calls.
// - sqeuclidean_cost (CompositeImplicitAutograd): the unfused mode's cost tensor.
// - soft_dtw_from_cost / soft_dtw_fused (CompositeExplicitAutograd): the value-only path taken
//   when autograd is not involved (inference mode); no DP table is kept.
#include <torch/library.h>

#include "../softdtw_common.h"
#include "../softdtw_dispatch.h"

namespace softdtw_torch {
namespace {

using dispatch::OptTensor;

// fused=None rule: the fused kernel computes ||x_i − y_j||² per cell at O(d) cost, which stays
// below the DP's own per-cell cost up to this many features; beyond it, the unfused mode's
// batched matrix product (x·yᵀ) is cheaper.
constexpr int64_t kMaxFusedFeatures = 128;

at::Tensor sqeuclidean_cost(const at::Tensor& x, const at::Tensor& y) {
  check_sequence_pair("sqeuclidean_cost", x, y);
  // ||x_i||² + ||y_j||² − 2 x_i·y_j, clamped at 0 against cancellation.
  const at::Tensor x_sq = x.pow(2).sum(-1).unsqueeze(2);
  const at::Tensor y_sq = y.pow(2).sum(-1).unsqueeze(1);
  return at::baddbmm(x_sq + y_sq, x, y.transpose(1, 2), /*beta=*/1, /*alpha=*/-2).clamp_min(0);
}

at::Tensor soft_dtw(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                    bool normalize, std::optional<bool> fused, const OptTensor& x_lengths, const OptTensor& y_lengths) {
  check_sequence_pair(kFusedOp, x, y);
  const bool use_fused = fused.value_or(x.size(2) <= kMaxFusedFeatures);
  auto value = [&](const at::Tensor& a, const at::Tensor& b, const OptTensor& a_lengths, const OptTensor& b_lengths) {
    if (use_fused) return dispatch::soft_dtw_fused(a, b, gamma, bandwidth, a_lengths, b_lengths);
    return dispatch::soft_dtw_from_cost(dispatch::sqeuclidean_cost(a, b), gamma, bandwidth, a_lengths, b_lengths);
  };
  const at::Tensor xy = value(x, y, x_lengths, y_lengths);
  if (!normalize) return xy;
  // Soft-DTW divergence (design doc §4): three DPs of sizes N×M, N×N and M×M, valid for N ≠ M.
  return xy - 0.5 * value(x, x, x_lengths, x_lengths) - 0.5 * value(y, y, y_lengths, y_lengths);
}

at::Tensor soft_dtw_from_cost_values(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                                     const OptTensor& x_lengths, const OptTensor& y_lengths) {
  return std::get<0>(dispatch::from_cost_forward(D, gamma, bandwidth, x_lengths, y_lengths, /*keep_table=*/false));
}

at::Tensor soft_dtw_fused_values(const at::Tensor& x, const at::Tensor& y, double gamma,
                                 std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                 const OptTensor& y_lengths) {
  return std::get<0>(dispatch::fused_forward(x, y, gamma, bandwidth, x_lengths, y_lengths, /*keep_table=*/false));
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CompositeImplicitAutograd, m) {
  m.impl("soft_dtw", &soft_dtw);
  m.impl("sqeuclidean_cost", &sqeuclidean_cost);
}

TORCH_LIBRARY_IMPL(softdtw_torch, CompositeExplicitAutograd, m) {
  m.impl("soft_dtw_from_cost", &soft_dtw_from_cost_values);
  m.impl("soft_dtw_fused", &soft_dtw_fused_values);
}

}  // namespace softdtw_torch
