// Device-agnostic kernels built from other ops:
// - soft_dtw_from_cost / soft_dtw_fused (CompositeImplicitAutograd): the forward op, which keeps
//   the DP table (or, with checkpoint, the tile borders) only when autograd will need it.
// - soft_dtw (CompositeImplicitAutograd): picks the cost and the fused or unfused mode and forms
//   the divergence; autograd flows through the ops it calls.
// - soft_dtw_sharp[_from_cost] and dilate (CompositeImplicitAutograd): the JVP op (a forward
//   recursion carrying a tangent), differentiable through its own derivatives.
// - pairwise_cost (CompositeImplicitAutograd): the named costs, written with ATen ops, so their
//   gradients come from autograd.
// - soft_dtw_alignment[_from_cost] (CompositeImplicitAutograd): values and expected alignments,
//   from the forward and backward ops, so both are differentiable (E through the backward op's
//   own derivatives).
// - the checkpointed pair and _soft_dtw_fused_value_and_grad (CompositeExplicitAutograd): their
//   kernel on devices without a dedicated one (CPU).
#include <torch/library.h>

#include <string>

#include "../common/autograd.h"
#include "../common/checks.h"
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

// The named costs; every op that takes one checks it first, under its own name.
void check_cost(const char* op, c10::string_view cost) {
  TORCH_CHECK_VALUE(cost == "sqeuclidean" || cost == "l1" || cost == "cosine", op,
                    ": cost must be one of \"sqeuclidean\", \"l1\", \"cosine\", got \"", std::string(cost), "\"");
}

at::Tensor pairwise_cost(const at::Tensor& x, const at::Tensor& y, c10::string_view cost) {
  check_sequence_pair("pairwise_cost", x, y);
  check_cost("pairwise_cost", cost);
  if (is_sqeuclidean(cost)) {
    // ||x_i||² + ||y_j||² − 2 x_i·y_j, whose value is clamped at 0 against cancellation while its
    // derivatives, of every order, stay those of the polynomial ||x_i − y_j||² (a clamp's would be
    // 0 where rounding made the sum negative: at x_i ≈ y_j, e.g. on the divergence's self terms,
    // the second derivative would lose E_ij·2I there). expanded + (clamped − expanded) has the
    // clamp's value exactly (e + (−e) = 0), and no more (B, N, M) tensors alive than the clamp.
    const at::Tensor x_sq = x.pow(2).sum(-1).unsqueeze(2);
    const at::Tensor y_sq = y.pow(2).sum(-1).unsqueeze(1);
    const at::Tensor expanded = at::baddbmm(x_sq + y_sq, x, y.transpose(1, 2), /*beta=*/1, /*alpha=*/-2);
    const bool differentiated = (at::GradMode::is_enabled() && expanded.requires_grad()) ||
                                autograd::has_tangent(x) || autograd::has_tangent(y);
    if (!differentiated) return expanded.clamp_min(0);
    const at::Tensor correction = expanded.detach().clamp_min(0).sub_(expanded.detach());
    return expanded + correction;
  }
  if (cost == "l1") {
    // Σ_k |x_ik − y_jk|; the subgradient at 0 is 0.
    return at::cdist(x, y, /*p=*/1.0);
  }
  // cosine: 1 − cos(x_i, y_j), in [0, 2].
  const at::Tensor xn = x / x.norm(2, -1, /*keepdim=*/true).clamp_min(kCosineNormEps);
  const at::Tensor yn = y / y.norm(2, -1, /*keepdim=*/true).clamp_min(kCosineNormEps);
  return 1 - at::bmm(xn, yn.transpose(1, 2));
}


// Whether autograd will differentiate a function of these inputs (then the forward keeps its table).
bool gradient_needed(const at::Tensor& a, const at::Tensor& b = at::Tensor()) {
  return at::GradMode::is_enabled() && (a.requires_grad() || (b.defined() && b.requires_grad()));
}

at::Tensor soft_dtw_from_cost(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                              const OptTensor& x_lengths, const OptTensor& y_lengths,
                              std::optional<double> itakura_max_slope) {
  return std::get<0>(
      ops::from_cost_forward(D, gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths, gradient_needed(D)));
}

// checkpoint only changes what a differentiable call keeps for its backward; so does the CPU's
// forward with gradients (short pairs in packs: each pair's gradient instead of the table).
at::Tensor soft_dtw_fused(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                          const OptTensor& x_lengths, const OptTensor& y_lengths, bool checkpoint,
                          std::optional<double> itakura_max_slope) {
  const bool keep = gradient_needed(x, y);
  if (keep && checkpoint) {
    return std::get<0>(
        ops::fused_forward_checkpointed(x, y, gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths));
  }
  if (keep && cpu_forward_with_grad_pays(x, y)) {
    return std::get<0>(ops::fused_forward_with_grad(x, y, gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths));
  }
  return std::get<0>(ops::fused_forward(x, y, gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths, keep));
}

// The fused=None rule (kMaxFusedFeatures) and the checks of the fused and checkpoint options, for `op`.
bool runs_fused(const char* op, const at::Tensor& x, std::optional<bool> fused, c10::string_view cost,
                bool checkpoint) {
  check_cost(op, cost);
  TORCH_CHECK_VALUE(!(fused.value_or(false) && !is_sqeuclidean(cost)), op,
                    ": the fused mode computes the squared Euclidean cost only, got fused=True with cost=\"",
                    std::string(cost), "\"");
  // checkpoint=True implies the fused mode (the unfused mode holds a (B, N, M) cost tensor anyway).
  TORCH_CHECK_VALUE(!(checkpoint && (!is_sqeuclidean(cost) || fused == false)), op,
                    ": checkpoint=True needs the fused mode (cost=\"sqeuclidean\", fused=None or True), got cost=\"",
                    std::string(cost), "\" and fused=", fused.has_value() ? (*fused ? "True" : "False") : "None");
  if (!is_sqeuclidean(cost)) return false;
  if (checkpoint || fused.has_value()) return checkpoint || *fused;
  // Under torch.compile and torch.export the feature count is a symbol: guarded by the rule's
  // comparison, not fixed, so one graph serves every d on the same side of it.
  return x.sym_size(2).sym_le(kMaxFusedFeatures).guard_bool(__FILE__, __LINE__);
}

// value(x, y), or with normalize the divergence value(x, y) − ½ value(x, x) − ½ value(y, y) (design
// doc §4): three DPs of sizes N×M, N×N and M×M, each on the pair's own lengths, valid for N ≠ M.
template <typename Value>
at::Tensor value_or_divergence(const Value& value, const at::Tensor& x, const at::Tensor& y, bool normalize,
                               const OptTensor& x_lengths, const OptTensor& y_lengths) {
  const at::Tensor xy = value(x, y, x_lengths, y_lengths);
  if (!normalize) return xy;
  return xy - 0.5 * value(x, x, x_lengths, x_lengths) - 0.5 * value(y, y, y_lengths, y_lengths);
}

at::Tensor soft_dtw(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                    bool normalize, std::optional<bool> fused, const OptTensor& x_lengths, const OptTensor& y_lengths,
                    c10::string_view cost, bool checkpoint, std::optional<double> itakura_max_slope) {
  // Errors name the op called, whichever op runs below: checked here first, renamed after.
  check_sequence_pair(kFusedOp, x, y);
  check_gamma(kFusedOp, gamma, x.scalar_type());
  checked_window(kFusedOp, bandwidth, itakura_max_slope);
  const bool use_fused = runs_fused(kFusedOp, x, fused, cost, checkpoint);
  auto value = [&](const at::Tensor& a, const at::Tensor& b, const OptTensor& a_lengths, const OptTensor& b_lengths) {
    if (use_fused) {
      return ops::soft_dtw_fused(a, b, gamma, bandwidth, a_lengths, b_lengths, checkpoint, itakura_max_slope);
    }
    return ops::soft_dtw_from_cost(ops::pairwise_cost(a, b, cost), gamma, bandwidth, a_lengths, b_lengths,
                                   itakura_max_slope);
  };
  return with_public_name(kFusedOp, [&] { return value_or_divergence(value, x, y, normalize, x_lengths, y_lengths); });
}

// The sharp soft-DTW ⟨E, D⟩: the directional derivative of sdtw along D itself, one forward
// recursion carrying the tangent (no E, no backward pass).
at::Tensor soft_dtw_sharp_from_cost(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                                    const OptTensor& x_lengths, const OptTensor& y_lengths,
                                    std::optional<double> itakura_max_slope) {
  return with_public_name(kSharpFromCostOp, [&] {
    return std::get<1>(ops::from_cost_jvp(D, D, gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths));
  });
}

at::Tensor soft_dtw_sharp(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                          bool normalize, std::optional<bool> fused, const OptTensor& x_lengths,
                          const OptTensor& y_lengths, c10::string_view cost, std::optional<double> itakura_max_slope) {
  check_sequence_pair(kSharpOp, x, y);
  check_gamma(kSharpOp, gamma, x.scalar_type());
  checked_window(kSharpOp, bandwidth, itakura_max_slope);
  const bool use_fused = runs_fused(kSharpOp, x, fused, cost, /*checkpoint=*/false);
  auto value = [&](const at::Tensor& a, const at::Tensor& b, const OptTensor& a_lengths, const OptTensor& b_lengths) {
    if (use_fused) {
      // Along (ẋ, ẏ) = (x, y) the fused tangent cost is 2 (x_i − y_j)·(x_i − y_j) = 2·D exactly.
      return 0.5 * std::get<1>(ops::fused_jvp(a, b, a, b, gamma, bandwidth, itakura_max_slope, a_lengths, b_lengths));
    }
    const at::Tensor D = ops::pairwise_cost(a, b, cost);
    return soft_dtw_sharp_from_cost(D, gamma, bandwidth, a_lengths, b_lengths, itakura_max_slope);
  };
  return with_public_name(kSharpOp, [&] { return value_or_divergence(value, x, y, normalize, x_lengths, y_lengths); });
}

// DILATE's time penalty for each pair's own lengths: Ω_ij = ((i + 1)/n − (j + 1)/m)², (B, N, M).
at::Tensor dilate_time_penalty(const at::Tensor& D, const OptTensor& n_lengths, const OptTensor& m_lengths) {
  const auto options = D.options().dtype(compute_dtype(D.scalar_type()));
  // Sizes stay symbolic under torch.compile and torch.export: one graph for every batch and length.
  const c10::SymInt batch = D.sym_size(0), n = D.sym_size(1), m = D.sym_size(2);
  auto lengths = [&](const OptTensor& given, const c10::SymInt& full) {
    return given.has_value() ? given->to(options) : at::full_symint({batch}, c10::Scalar(full), options);
  };
  const at::Tensor rows = at::arange(1, c10::Scalar(n + 1), options).view({1, -1, 1}) /
                          lengths(n_lengths, n).view({-1, 1, 1});
  const at::Tensor cols = at::arange(1, c10::Scalar(m + 1), options).view({1, 1, -1}) /
                          lengths(m_lengths, m).view({-1, 1, 1});
  return (rows - cols).pow(2);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> dilate(const at::Tensor& prediction, const at::Tensor& target,
                                                      double alpha, double gamma, std::optional<int64_t> bandwidth,
                                                      const OptTensor& penalty, const OptTensor& prediction_lengths,
                                                      const OptTensor& target_lengths,
                                                      std::optional<double> itakura_max_slope) {
  check_sequence_pair(kDilateOp, prediction, target, "prediction", "target");
  check_gamma(kDilateOp, gamma, prediction.scalar_type());
  checked_window(kDilateOp, bandwidth, itakura_max_slope);
  TORCH_CHECK_VALUE(alpha >= 0 && alpha <= 1, kDilateOp, ": alpha must be in [0, 1], got ", alpha);
  const at::Tensor D = ops::pairwise_cost(prediction, target, "sqeuclidean");
  at::Tensor omega;
  if (penalty.has_value()) {
    const at::Tensor& p = *penalty;
    TORCH_CHECK_TYPE(p.is_floating_point(), kDilateOp, ": expected penalty to be a floating-point tensor, got ",
                     p.scalar_type());
    TORCH_CHECK_VALUE((p.dim() == 2 && p.sym_size(0) == D.sym_size(1) && p.sym_size(1) == D.sym_size(2)) ||
                          (p.dim() == 3 && p.sym_sizes() == D.sym_sizes()),
                      kDilateOp, ": expected penalty of shape (", D.sym_size(1), ", ", D.sym_size(2), ") or (",
                      D.sym_size(0), ", ", D.sym_size(1), ", ", D.sym_size(2),
                      ") (prediction length, target length), got ", p.sym_sizes());
    TORCH_CHECK_VALUE(p.device() == D.device(), kDilateOp, ": expected penalty on ", D.device(), ", got ", p.device());
    omega = p.expand_symint(D.sym_sizes());
  } else {
    omega = dilate_time_penalty(D, prediction_lengths, target_lengths);
  }
  auto [shape, temporal] = with_public_name(kDilateOp, [&] {
    return ops::from_cost_jvp(D, omega, gamma, bandwidth, itakura_max_slope, prediction_lengths, target_lengths);
  });
  return {alpha * shape + (1 - alpha) * temporal, shape, temporal};
}

std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment_from_cost(const at::Tensor& D, double gamma,
                                                                std::optional<int64_t> bandwidth,
                                                                const OptTensor& x_lengths, const OptTensor& y_lengths,
                                                                std::optional<double> itakura_max_slope) {
  // E = ∂ value / ∂D: the backward op with an upstream gradient of 1 per pair, differentiable
  // through the backward op's own derivatives (design doc §3).
  auto [values, R] = with_public_name(kAlignmentFromCostOp, [&] {
    return ops::from_cost_forward(D, gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths, /*keep_table=*/true);
  });
  const at::Tensor ones = at::ones_symint({D.sym_size(0)}, R.options());
  const at::Tensor E = ops::from_cost_backward(ones, D, R, gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths);
  return {values, E.to(D.scalar_type())};
}

std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment(const at::Tensor& x, const at::Tensor& y, double gamma,
                                                      std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                                      const OptTensor& y_lengths, c10::string_view cost,
                                                      std::optional<double> itakura_max_slope) {
  check_sequence_pair(kAlignmentOp, x, y);
  check_gamma(kAlignmentOp, gamma, x.scalar_type());
  checked_window(kAlignmentOp, bandwidth, itakura_max_slope);
  check_cost(kAlignmentOp, cost);
  return with_public_name(kAlignmentOp, [&] {
    return soft_dtw_alignment_from_cost(ops::pairwise_cost(x, y, cost), gamma, bandwidth, x_lengths, y_lengths,
                                        itakura_max_slope);
  });
}

// The checkpointed pair on devices without a kernel of their own (CPU): the forward keeps nothing,
// the backward reruns the forward with its table.
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_forward_checkpointed_by_recompute(
    const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
    std::optional<double> itakura_max_slope, const OptTensor& x_lengths, const OptTensor& y_lengths) {
  auto [values, no_table] =
      ops::fused_forward(x, y, gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths, /*keep_table=*/false);
  return {values, no_table, no_table.clone()};
}

std::tuple<at::Tensor, at::Tensor> fused_backward_checkpointed_by_recompute(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const at::Tensor& /*row_borders*/,
    const at::Tensor& /*column_borders*/, double gamma, std::optional<int64_t> bandwidth,
    std::optional<double> itakura_max_slope, const OptTensor& x_lengths, const OptTensor& y_lengths) {
  return ops::fused_backward(grad, x, y, at::empty({0}, x.options()), gamma, bandwidth, itakura_max_slope, x_lengths,
                             y_lengths);
}

// Forward keeping the table, then the backward op with the weights as upstream gradient.
std::tuple<at::Tensor, at::Tensor> soft_dtw_fused_value_and_grad(
    const at::Tensor& x, const at::Tensor& y, const at::Tensor& weights, double gamma, std::optional<int64_t> bandwidth,
    std::optional<double> itakura_max_slope, const OptTensor& x_lengths, const OptTensor& y_lengths) {
  check_sequence_pair(kFusedOp, x, y);
  check_pair_weights(x, weights);
  auto [values, R] =
      ops::fused_forward(x, y, gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths, /*keep_table=*/true);
  auto grads = ops::fused_backward(weights, x, y, R, gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths);
  return {values, std::get<0>(grads).to(x.scalar_type())};
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CompositeImplicitAutograd, m) {
  m.impl("soft_dtw_from_cost", &soft_dtw_from_cost);
  m.impl("soft_dtw_fused", &soft_dtw_fused);
  m.impl("soft_dtw", &soft_dtw);
  m.impl("soft_dtw_sharp", &soft_dtw_sharp);
  m.impl("soft_dtw_sharp_from_cost", &soft_dtw_sharp_from_cost);
  m.impl("dilate", &dilate);
  m.impl("pairwise_cost", &pairwise_cost);
  m.impl("soft_dtw_alignment_from_cost", &soft_dtw_alignment_from_cost);
  m.impl("soft_dtw_alignment", &soft_dtw_alignment);
}

TORCH_LIBRARY_IMPL(softdtw_torch, CompositeExplicitAutograd, m) {
  m.impl("_soft_dtw_fused_value_and_grad", &soft_dtw_fused_value_and_grad);
  m.impl("_soft_dtw_fused_forward_checkpointed", &fused_forward_checkpointed_by_recompute);
  m.impl("_soft_dtw_fused_backward_checkpointed", &fused_backward_checkpointed_by_recompute);
}

}  // namespace softdtw_torch
