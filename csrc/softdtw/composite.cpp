// Device-agnostic kernels built from other ops:
// - soft_dtw_from_cost / soft_dtw_fused (CompositeImplicitAutograd): the forward op, which keeps
//   what its backward reads (the DP table; with checkpoint, the tile borders; the CPU's unit
//   gradients: the memory planner, plan.h) only when autograd will need it.
// - soft_dtw (CompositeImplicitAutograd): picks the cost and the fused or unfused mode and forms
//   the divergence; autograd flows through the ops it calls.
// - soft_dtw_sharp[_from_cost] and dilate (CompositeImplicitAutograd): the JVP op (a forward
//   recursion carrying a tangent), differentiable through its own derivatives.
// - pairwise_cost (CompositeImplicitAutograd): the named costs, written with ATen ops, so their
//   gradients come from autograd.
// - soft_dtw_alignment[_from_cost] (CompositeImplicitAutograd): values and expected alignments,
//   from the forward and backward ops, so both are differentiable (E through the backward op's
//   own derivatives).
// - _soft_dtw_fused_value_and_grad (CompositeExplicitAutograd): its kernel on devices without a
//   dedicated one (CUDA).
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <string>

#include "../common/autograd.h"
#include "../common/checks.h"
#include "../common/memory.h"
#include "constants.h"
#include "ops.h"
#include "plan.h"
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

// A power of two per pair, s = 2^floor(log2 max(|x_b|, |y_b|)) (1 for all-zero pairs), (B, 1, 1)
// and detached: dividing by it is exact, and rounding commutes with it, so a cost computed on x/s
// and y/s and multiplied back by s is bit for bit the unscaled one wherever neither over- nor
// underflows, and stays finite (or +inf) where ||x_i||² alone would overflow.
at::Tensor power_of_two_scale(const at::Tensor& x, const at::Tensor& y) {
  const at::Tensor largest = at::maximum(x.detach().abs().amax({1, 2}), y.detach().abs().amax({1, 2}));
  const at::Tensor scale = at::where(largest > 0, at::exp2(at::floor(at::log2(largest))), at::ones_like(largest));
  return scale.view({-1, 1, 1});
}

at::Tensor pairwise_cost(const at::Tensor& x, const at::Tensor& y, c10::string_view cost) {
  check_sequence_pair("pairwise_cost", x, y);
  check_cost("pairwise_cost", cost);
  // The cost tensor and one temporary of its size (baddbmm's or bmm's output before the clamp).
  // Under torch.compile and torch.export the sizes may be symbols: nothing is allocated then.
  const auto batch = x.sym_size(0).maybe_as_int(), n = x.sym_size(1).maybe_as_int(), m = y.sym_size(1).maybe_as_int();
  if (batch && n && m) {
    memory::check("pairwise_cost", c10::str("the cost tensor of ", *batch, " pairs of ", *n, " x ", *m, " cells and a "
                                            "temporary of its size"),
                  2.0 * x.element_size() * *batch * *n * static_cast<double>(*m), x.device(),
                  "use the fused mode (cost=\"sqeuclidean\", fused=None or True), which holds no cost tensor, or "
                  "split the batch into smaller calls");
  }
  if (is_sqeuclidean(cost)) {
    // ||x_i||² + ||y_j||² − 2 x_i·y_j on x/s and y/s (power_of_two_scale: no inf − inf where a
    // squared norm overflows), times s twice: +inf only where the distance itself is beyond the
    // dtype. The value is clamped at 0 against cancellation while its derivatives, of every
    // order, stay those of the polynomial ||x_i − y_j||² (a clamp's would be 0 where rounding made
    // the sum negative: at x_i ≈ y_j, e.g. on the divergence's self terms, the second derivative
    // would lose E_ij·2I there). expanded + (clamped − expanded) has the clamp's value exactly
    // (e + (−e) = 0), and no more (B, N, M) tensors alive than the clamp.
    const at::Tensor scale = power_of_two_scale(x, y);
    const at::Tensor xs = x / scale, ys = y / scale;
    const at::Tensor x_sq = xs.pow(2).sum(-1).unsqueeze(2);
    const at::Tensor y_sq = ys.pow(2).sum(-1).unsqueeze(1);
    const at::Tensor expanded = at::baddbmm(x_sq + y_sq, xs, ys.transpose(1, 2), /*beta=*/1, /*alpha=*/-2);
    const bool differentiated = (at::GradMode::is_enabled() && expanded.requires_grad()) ||
                                autograd::has_tangent(x) || autograd::has_tangent(y);
    if (!differentiated) return expanded.clamp_min(0).mul_(scale).mul_(scale);
    const at::Tensor correction = expanded.detach().clamp_min(0).sub_(expanded.detach());
    return (expanded + correction) * scale * scale;
  }
  if (cost == "l1") {
    // Σ_k |x_ik − y_jk|; the subgradient at 0 is 0. cdist has no float16 kernel on every device:
    // float16 and bfloat16 compute in float32, as the DP does.
    const auto dtype = compute_dtype(x.scalar_type());
    return at::cdist(x.to(dtype), y.to(dtype), /*p=*/1.0).to(x.scalar_type());
  }
  // cosine: 1 − cos(x_i, y_j), in [0, 2]; each vector is divided by max(||v||, kCosineNormEps).
  // The norm is taken of v/s (s = max|v_k|, detached), so it cannot overflow (1e20 in float32):
  // v / max(||v||, eps) = (v/s) / max(||v/s||, eps/s) for any s > 0.
  // float16 and bfloat16 compute in float32 (their squares overflow at 256).
  const auto dtype = compute_dtype(x.scalar_type());
  auto unit = [dtype](const at::Tensor& v) {
    const at::Tensor w = v.to(dtype);
    const at::Tensor s = w.detach().abs().amax(-1, /*keepdim=*/true).clamp_min(std::numeric_limits<float>::min());
    const at::Tensor scaled = w / s;
    return scaled / at::maximum(scaled.norm(2, -1, /*keepdim=*/true), s.reciprocal().mul_(kCosineNormEps));
  };
  return (1 - at::bmm(unit(x), unit(y).transpose(1, 2))).to(x.scalar_type());
}

// Both lengths' devices (check_lengths_device), under the name of the public op called.
void check_lengths_devices(const char* op, const at::Device& device, const OptTensor& x_lengths,
                           const OptTensor& y_lengths, const char* x_name = "x_lengths",
                           const char* y_name = "y_lengths") {
  check_lengths_device(op, x_name, x_lengths, device);
  check_lengths_device(op, y_name, y_lengths, device);
}

// Whether autograd will differentiate a function of these inputs (then the forward keeps its table).
bool gradient_needed(const at::Tensor& a, const at::Tensor& b = at::Tensor()) {
  return at::GradMode::is_enabled() && (a.requires_grad() || (b.defined() && b.requires_grad()));
}

at::Tensor soft_dtw_from_cost(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                              const OptTensor& x_lengths, const OptTensor& y_lengths,
                              std::optional<double> itakura_max_slope) {
  check_lengths_devices(kFromCostOp, D.device(), x_lengths, y_lengths);
  const ProblemArgs args{gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths};
  return std::get<0>(ops::from_cost_forward(D, args, gradient_needed(D)));
}

// checkpoint only changes what a differentiable call keeps for its backward; so does the CPU's
// forward with gradients (short pairs in packs: each pair's gradient instead of the table). The
// planner (plan.h) chooses.
at::Tensor soft_dtw_fused(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                          const OptTensor& x_lengths, const OptTensor& y_lengths, bool checkpoint,
                          std::optional<double> itakura_max_slope) {
  check_lengths_devices(kFusedOp, x.device(), x_lengths, y_lengths);
  const ProblemArgs args{gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths};
  const softdtw::FusedCache keep = softdtw::plan_fused_forward(x, y, gradient_needed(x, y), checkpoint);
  return std::get<0>(ops::fused_forward(x, y, args, softdtw::name_of(keep)));
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

// soft-DTW is positively homogeneous, sdtw_γ(c·D) = c·sdtw_{γ/c}(D), and so is its sharp value. A
// divergence at a large γ combines terms near −γ·log(#paths) that may overflow while the
// divergence does not (γ = 5e37 in float32: a self term below −3.4e38): above 2^32 its terms are
// computed at γ/c on D/c (x/√c for the fused cost) and the divergence multiplied by c, with
// c = 4^round(log4 γ): scalings by powers of two, exact where nothing underflows. 1: no scaling.
double divergence_scale(bool normalize, double gamma) {
  if (!normalize || gamma <= 4294967296.0) return 1.0;
  return std::ldexp(1.0, 2 * static_cast<int>(std::lround(std::log2(gamma) / 2)));
}

at::Tensor soft_dtw(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                    bool normalize, std::optional<bool> fused, const OptTensor& x_lengths, const OptTensor& y_lengths,
                    c10::string_view cost, bool checkpoint, std::optional<double> itakura_max_slope) {
  // Errors name the op called, whichever op runs below: checked here first, renamed after.
  check_sequence_pair(kFusedOp, x, y);
  check_gamma(kFusedOp, gamma, x.scalar_type());
  checked_window(kFusedOp, bandwidth, itakura_max_slope);
  check_lengths_devices(kFusedOp, x.device(), x_lengths, y_lengths);
  const bool use_fused = runs_fused(kFusedOp, x, fused, cost, checkpoint);
  const double scale = divergence_scale(normalize, gamma);
  auto value = [&](const at::Tensor& a, const at::Tensor& b, const OptTensor& a_lengths, const OptTensor& b_lengths) {
    if (use_fused) {
      if (scale == 1.0) {
        return ops::soft_dtw_fused(a, b, gamma, bandwidth, a_lengths, b_lengths, checkpoint, itakura_max_slope);
      }
      const double root = std::sqrt(scale);
      return ops::soft_dtw_fused(a / root, b / root, gamma / scale, bandwidth, a_lengths, b_lengths, checkpoint,
                                 itakura_max_slope);
    }
    const at::Tensor D = ops::pairwise_cost(a, b, cost);
    return ops::soft_dtw_from_cost(scale == 1.0 ? D : D / scale, gamma / scale, bandwidth, a_lengths, b_lengths,
                                   itakura_max_slope);
  };
  const at::Tensor result =
      with_public_name(kFusedOp, [&] { return value_or_divergence(value, x, y, normalize, x_lengths, y_lengths); });
  return scale == 1.0 ? result : result * scale;
}

// The sharp soft-DTW ⟨E, D⟩: the directional derivative of sdtw along D itself, one forward
// recursion carrying the tangent (no E, no backward pass).
at::Tensor soft_dtw_sharp_from_cost(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                                    const OptTensor& x_lengths, const OptTensor& y_lengths,
                                    std::optional<double> itakura_max_slope) {
  check_lengths_devices(kSharpFromCostOp, D.device(), x_lengths, y_lengths);
  return with_public_name(kSharpFromCostOp, [&] {
    return std::get<1>(ops::from_cost_jvp(D, D, {gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths}));
  });
}

at::Tensor soft_dtw_sharp(const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
                          bool normalize, std::optional<bool> fused, const OptTensor& x_lengths,
                          const OptTensor& y_lengths, c10::string_view cost, std::optional<double> itakura_max_slope) {
  check_sequence_pair(kSharpOp, x, y);
  check_gamma(kSharpOp, gamma, x.scalar_type());
  checked_window(kSharpOp, bandwidth, itakura_max_slope);
  check_lengths_devices(kSharpOp, x.device(), x_lengths, y_lengths);
  const bool use_fused = runs_fused(kSharpOp, x, fused, cost, /*checkpoint=*/false);
  const double scale = divergence_scale(normalize, gamma);
  auto value = [&](const at::Tensor& a_in, const at::Tensor& b_in, const OptTensor& a_lengths,
                   const OptTensor& b_lengths) {
    if (use_fused) {
      const double root = std::sqrt(scale);
      const at::Tensor a = scale == 1.0 ? a_in : a_in / root, b = scale == 1.0 ? b_in : b_in / root;
      // Along (ẋ, ẏ) = (x, y) the fused tangent cost is 2 (x_i − y_j)·(x_i − y_j) = 2·D exactly.
      const ProblemArgs args{gamma / scale, bandwidth, itakura_max_slope, a_lengths, b_lengths};
      return 0.5 * std::get<1>(ops::fused_jvp(a, b, a, b, args));
    }
    const at::Tensor D = ops::pairwise_cost(a_in, b_in, cost);
    return soft_dtw_sharp_from_cost(scale == 1.0 ? D : D / scale, gamma / scale, bandwidth, a_lengths, b_lengths,
                                    itakura_max_slope);
  };
  const at::Tensor result =
      with_public_name(kSharpOp, [&] { return value_or_divergence(value, x, y, normalize, x_lengths, y_lengths); });
  return scale == 1.0 ? result : result * scale;
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
  check_lengths_devices(kDilateOp, prediction.device(), prediction_lengths, target_lengths, "prediction_lengths",
                        "target_lengths");
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
    return ops::from_cost_jvp(D, omega, {gamma, bandwidth, itakura_max_slope, prediction_lengths, target_lengths});
  });
  return {alpha * shape + (1 - alpha) * temporal, shape, temporal};
}

std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment_from_cost(const at::Tensor& D, double gamma,
                                                                std::optional<int64_t> bandwidth,
                                                                const OptTensor& x_lengths, const OptTensor& y_lengths,
                                                                std::optional<double> itakura_max_slope) {
  // E = ∂ value / ∂D: the backward op with an upstream gradient of 1 per pair, differentiable
  // through the backward op's own derivatives (design doc §3).
  check_lengths_devices(kAlignmentFromCostOp, D.device(), x_lengths, y_lengths);
  const ProblemArgs args{gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths};
  auto [values, R] =
      with_public_name(kAlignmentFromCostOp, [&] { return ops::from_cost_forward(D, args, /*keep_table=*/true); });
  const at::Tensor ones = at::ones_symint({D.sym_size(0)}, R.options());
  const at::Tensor E = ops::from_cost_backward(ones, D, R, args);
  return {values, E.to(D.scalar_type())};
}

std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment(const at::Tensor& x, const at::Tensor& y, double gamma,
                                                      std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                                      const OptTensor& y_lengths, c10::string_view cost,
                                                      std::optional<double> itakura_max_slope) {
  check_sequence_pair(kAlignmentOp, x, y);
  check_gamma(kAlignmentOp, gamma, x.scalar_type());
  checked_window(kAlignmentOp, bandwidth, itakura_max_slope);
  check_lengths_devices(kAlignmentOp, x.device(), x_lengths, y_lengths);
  check_cost(kAlignmentOp, cost);
  return with_public_name(kAlignmentOp, [&] {
    return soft_dtw_alignment_from_cost(ops::pairwise_cost(x, y, cost), gamma, bandwidth, x_lengths, y_lengths,
                                        itakura_max_slope);
  });
}

// Forward keeping the table, then the backward op with the weights as upstream gradient.
std::tuple<at::Tensor, at::Tensor> soft_dtw_fused_value_and_grad(const at::Tensor& x, const at::Tensor& y,
                                                                 const at::Tensor& weights, const ProblemArgs& args) {
  check_sequence_pair(kFusedOp, x, y);
  check_pair_weights(x, weights);
  auto [values, R, unused] = ops::fused_forward(x, y, args, "table");
  auto grads = ops::fused_backward(weights, x, y, R, unused, args, "table");
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
  using namespace softdtw;  // the signatures (ops.h)
  m.impl("_soft_dtw_fused_value_and_grad", FusedValueAndGrad::kernel<&soft_dtw_fused_value_and_grad>);
}

}  // namespace softdtw_torch
