// Device-agnostic kernels built from other ops:
// - soft_dtw (CompositeImplicitAutograd): picks the cost and the fused or unfused mode and forms
//   the divergence; autograd flows through the ops it calls.
// - pairwise_cost (CompositeImplicitAutograd): the named costs, written with ATen ops, so their
//   gradients come from autograd.
// - soft_dtw_alignment[_from_cost] (CompositeImplicitAutograd): values and expected alignments,
//   from the forward and backward ops.
// - soft_dtw_from_cost / soft_dtw_fused (CompositeExplicitAutograd): the value-only path taken
//   when autograd is not involved (inference mode); no DP table is kept.
#include <torch/library.h>

#include <string>

#include "constants.h"
#include "ops.h"
#include "problem.h"

namespace softdtw_torch {
namespace {

namespace ops = softdtw::ops;

using softdtw::kMaxFusedFeatures;  // the fused=None rule

// Cosine cost guard: vectors shorter than this are treated as having this norm (as
// torch.nn.functional.cosine_similarity does), so a zero vector costs 1 instead of NaN.
constexpr double kCosineNormEps = 1e-8;

bool is_sqeuclidean(c10::string_view cost) {
  return cost == "sqeuclidean";
}

at::Tensor pairwise_cost(const at::Tensor& x, const at::Tensor& y, c10::string_view cost) {
  check_sequence_pair("pairwise_cost", x, y);
  if (is_sqeuclidean(cost)) {
    // ||x_i||² + ||y_j||² − 2 x_i·y_j, clamped at 0 against cancellation.
    const at::Tensor x_sq = x.pow(2).sum(-1).unsqueeze(2);
    const at::Tensor y_sq = y.pow(2).sum(-1).unsqueeze(1);
    return at::baddbmm(x_sq + y_sq, x, y.transpose(1, 2), /*beta=*/1, /*alpha=*/-2).clamp_min(0);
  }
  if (cost == "l1") {
    // Σ_k |x_ik − y_jk|; the subgradient at 0 is 0.
    return at::cdist(x, y, /*p=*/1.0);
  }
  if (cost == "cosine") {
    // 1 − cos(x_i, y_j), in [0, 2].
    const at::Tensor xn = x / x.norm(2, -1, /*keepdim=*/true).clamp_min(kCosineNormEps);
    const at::Tensor yn = y / y.norm(2, -1, /*keepdim=*/true).clamp_min(kCosineNormEps);
    return 1 - at::bmm(xn, yn.transpose(1, 2));
  }
  TORCH_CHECK_VALUE(false, "pairwise_cost: cost must be one of \"sqeuclidean\", \"l1\", \"cosine\", got \"",
                    std::string(cost), "\"");
}

at::Tensor soft_dtw(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                    bool normalize, std::optional<bool> fused, const OptTensor& x_lengths, const OptTensor& y_lengths,
                    c10::string_view cost, bool checkpoint) {
  check_sequence_pair(kFusedOp, x, y);
  TORCH_CHECK_VALUE(!(fused.value_or(false) && !is_sqeuclidean(cost)), kFusedOp,
                    ": the fused mode computes the squared Euclidean cost only, got fused=True with cost=\"",
                    std::string(cost), "\"");
  // checkpoint=True implies the fused mode (the unfused mode holds a (B, N, M) cost tensor anyway).
  TORCH_CHECK_VALUE(!(checkpoint && (!is_sqeuclidean(cost) || fused == false)), kFusedOp,
                    ": checkpoint=True needs the fused mode (cost=\"sqeuclidean\", fused=None or True), got cost=\"",
                    std::string(cost), "\" and fused=", fused.has_value() ? (*fused ? "True" : "False") : "None");
  const bool use_fused = is_sqeuclidean(cost) && (checkpoint || fused.value_or(x.size(2) <= kMaxFusedFeatures));
  auto value = [&](const at::Tensor& a, const at::Tensor& b, const OptTensor& a_lengths, const OptTensor& b_lengths) {
    if (use_fused) return ops::soft_dtw_fused(a, b, gamma, bandwidth, a_lengths, b_lengths, checkpoint);
    return ops::soft_dtw_from_cost(ops::pairwise_cost(a, b, cost), gamma, bandwidth, a_lengths, b_lengths);
  };
  const at::Tensor xy = value(x, y, x_lengths, y_lengths);
  if (!normalize) return xy;
  // Soft-DTW divergence (design doc §4): three DPs of sizes N×M, N×N and M×M, valid for N ≠ M.
  return xy - 0.5 * value(x, x, x_lengths, x_lengths) - 0.5 * value(y, y, y_lengths, y_lengths);
}

std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment_from_cost(const at::Tensor& D, double gamma,
                                                                std::optional<int64_t> bandwidth,
                                                                const OptTensor& x_lengths, const OptTensor& y_lengths) {
  // E = ∂ value / ∂D: the backward op with an upstream gradient of 1 per pair. Computed from
  // detached inputs: E itself is not differentiable (that would be double backward).
  auto [values, R] =
      ops::from_cost_forward(D.detach(), gamma, bandwidth, x_lengths, y_lengths, /*keep_table=*/true);
  const at::Tensor ones = at::ones({R.size(0)}, R.options());
  const at::Tensor E = ops::from_cost_backward(ones, R, gamma, bandwidth, x_lengths, y_lengths);
  return {values, E.to(D.scalar_type())};
}

std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment(const at::Tensor& x, const at::Tensor& y, double gamma,
                                                      std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                                      const OptTensor& y_lengths, c10::string_view cost) {
  check_sequence_pair(kFusedOp, x, y);
  return soft_dtw_alignment_from_cost(ops::pairwise_cost(x.detach(), y.detach(), cost), gamma, bandwidth,
                                      x_lengths, y_lengths);
}

at::Tensor soft_dtw_from_cost_values(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                                     const OptTensor& x_lengths, const OptTensor& y_lengths) {
  return std::get<0>(ops::from_cost_forward(D, gamma, bandwidth, x_lengths, y_lengths, /*keep_table=*/false));
}

// checkpoint only changes what a differentiable call keeps for its backward.
at::Tensor soft_dtw_fused_values(const at::Tensor& x, const at::Tensor& y, double gamma,
                                 std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                 const OptTensor& y_lengths, bool /*checkpoint*/) {
  return std::get<0>(ops::fused_forward(x, y, gamma, bandwidth, x_lengths, y_lengths, /*keep_table=*/false));
}

// The checkpointed pair on devices without a kernel of their own (CPU): the forward keeps nothing,
// the backward reruns the forward with its table.
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_forward_checkpointed_by_recompute(
    const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
    const OptTensor& x_lengths, const OptTensor& y_lengths) {
  auto [values, no_table] = ops::fused_forward(x, y, gamma, bandwidth, x_lengths, y_lengths, /*keep_table=*/false);
  return {values, no_table, no_table.clone()};
}

std::tuple<at::Tensor, at::Tensor> fused_backward_checkpointed_by_recompute(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const at::Tensor& /*row_borders*/,
    const at::Tensor& /*column_borders*/, double gamma, std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
    const OptTensor& y_lengths) {
  auto [values, R] = ops::fused_forward(x, y, gamma, bandwidth, x_lengths, y_lengths, /*keep_table=*/true);
  return ops::fused_backward(grad, x, y, R, gamma, bandwidth, x_lengths, y_lengths);
}

// Forward keeping the table, then the backward op with the weights as upstream gradient.
std::tuple<at::Tensor, at::Tensor> soft_dtw_fused_value_and_grad(const at::Tensor& x, const at::Tensor& y,
                                                                 const at::Tensor& weights, double gamma,
                                                                 std::optional<int64_t> bandwidth,
                                                                 const OptTensor& x_lengths,
                                                                 const OptTensor& y_lengths) {
  check_sequence_pair(kFusedOp, x, y);
  check_pair_weights(x, weights);
  auto [values, R] = ops::fused_forward(x, y, gamma, bandwidth, x_lengths, y_lengths, /*keep_table=*/true);
  auto grads = ops::fused_backward(weights, x, y, R, gamma, bandwidth, x_lengths, y_lengths);
  return {values, std::get<0>(grads).to(x.scalar_type())};
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CompositeImplicitAutograd, m) {
  m.impl("soft_dtw", &soft_dtw);
  m.impl("pairwise_cost", &pairwise_cost);
  m.impl("soft_dtw_alignment_from_cost", &soft_dtw_alignment_from_cost);
  m.impl("soft_dtw_alignment", &soft_dtw_alignment);
}

TORCH_LIBRARY_IMPL(softdtw_torch, CompositeExplicitAutograd, m) {
  m.impl("soft_dtw_from_cost", &soft_dtw_from_cost_values);
  m.impl("soft_dtw_fused", &soft_dtw_fused_values);
  m.impl("_soft_dtw_fused_value_and_grad", &soft_dtw_fused_value_and_grad);
  m.impl("_soft_dtw_fused_forward_checkpointed", &fused_forward_checkpointed_by_recompute);
  m.impl("_soft_dtw_fused_backward_checkpointed", &fused_backward_checkpointed_by_recompute);
}

}  // namespace softdtw_torch
