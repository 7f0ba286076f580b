// Autograd for the SoftDTW ops, in C++ so it also works in TorchScript and LibTorch programs.
// Each public op's Autograd kernel runs the forward op below autograd (through the dispatcher,
// so CPU, CUDA and fake kernels are all reached), saves the DP table (with checkpoint=True only
// the tile borders of R) and, in backward, calls the
// backward op. When no input needs a gradient, no table is kept. The backward ops are themselves
// wrapped so that differentiating them a second time fails with a clear message.
#include <torch/autograd.h>
#include <torch/library.h>

#include "../common/autograd.h"
#include "ops.h"
#include "problem.h"

namespace softdtw_torch {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
namespace ops = softdtw::ops;

void save_options(AutogradContext* ctx, double gamma, std::optional<int64_t> bandwidth) {
  ctx->saved_data["gamma"] = gamma;
  ctx->saved_data["bandwidth"] = bandwidth.has_value() ? *bandwidth : int64_t(-1);
}
double saved_gamma(AutogradContext* ctx) {
  return ctx->saved_data["gamma"].toDouble();
}
std::optional<int64_t> saved_bandwidth(AutogradContext* ctx) {
  const int64_t b = ctx->saved_data["bandwidth"].toInt();
  return b < 0 ? std::nullopt : std::optional<int64_t>(b);
}

class FromCostBackwardFunction : public torch::autograd::Function<FromCostBackwardFunction> {
 public:
  static at::Tensor forward(AutogradContext*, const at::Tensor& grad, const at::Tensor& R, double gamma,
                            std::optional<int64_t> bandwidth, const OptTensor& x_lengths, const OptTensor& y_lengths) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return ops::from_cost_backward(grad, R, gamma, bandwidth, x_lengths, y_lengths);
  }
  static variable_list backward(AutogradContext*, variable_list) { fail_double_backward(kFromCostOp); }
};

class FromCostFunction : public torch::autograd::Function<FromCostFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                            const OptTensor& x_lengths, const OptTensor& y_lengths) {
    at::AutoDispatchBelowADInplaceOrView guard;
    auto [values, R] = ops::from_cost_forward(D, gamma, bandwidth, x_lengths,
                                                   y_lengths, /*keep_table=*/true);
    ctx->save_for_backward({R, or_undefined(x_lengths), or_undefined(y_lengths)});
    save_options(ctx, gamma, bandwidth);
    ctx->saved_data["dtype"] = D.scalar_type();
    return values;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    at::Tensor grad_D = FromCostBackwardFunction::apply(grads[0], saved[0], saved_gamma(ctx), saved_bandwidth(ctx),
                                                        as_optional(saved[1]), as_optional(saved[2]));
    grad_D = grad_D.to(ctx->saved_data["dtype"].toScalarType());
    return {grad_D, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// The fused backward, from what its forward kept: the DP table R (no column_borders) or,
// with checkpoint=True, the forward's tile borders of R (row_borders, column_borders; empty
// tensors on devices that recompute everything).
class FusedBackwardFunction : public torch::autograd::Function<FusedBackwardFunction> {
 public:
  static variable_list forward(AutogradContext*, const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y,
                               const at::Tensor& R_or_row_borders, const OptTensor& column_borders, double gamma,
                               std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                               const OptTensor& y_lengths) {
    at::AutoDispatchBelowADInplaceOrView guard;
    auto [grad_x, grad_y] =
        column_borders.has_value()
            ? ops::fused_backward_checkpointed(grad, x, y, R_or_row_borders, *column_borders, gamma, bandwidth,
                                                    x_lengths, y_lengths)
            : ops::fused_backward(grad, x, y, R_or_row_borders, gamma, bandwidth, x_lengths, y_lengths);
    return {grad_x, grad_y};
  }
  static variable_list backward(AutogradContext*, variable_list) { fail_double_backward(kFusedOp); }
};

class FusedFunction : public torch::autograd::Function<FusedFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, double gamma,
                            std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                            const OptTensor& y_lengths, bool checkpoint) {
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor values, R_or_row_borders, column_borders;
    if (checkpoint) {
      std::tie(values, R_or_row_borders, column_borders) =
          ops::fused_forward_checkpointed(x, y, gamma, bandwidth, x_lengths, y_lengths);
    } else {
      std::tie(values, R_or_row_borders) =
          ops::fused_forward(x, y, gamma, bandwidth, x_lengths, y_lengths, /*keep_table=*/true);
    }
    ctx->save_for_backward({x, y, R_or_row_borders, column_borders, or_undefined(x_lengths), or_undefined(y_lengths)});
    save_options(ctx, gamma, bandwidth);
    return values;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& y = saved[1];
    variable_list g = FusedBackwardFunction::apply(grads[0], x, y, saved[2], as_optional(saved[3]), saved_gamma(ctx),
                                                   saved_bandwidth(ctx), as_optional(saved[4]),
                                                   as_optional(saved[5]));
    return {g[0].to(x.scalar_type()), g[1].to(y.scalar_type()), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor()};
  }
};

at::Tensor soft_dtw_from_cost_autograd(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                                       const OptTensor& x_lengths, const OptTensor& y_lengths) {
  if (!(at::GradMode::is_enabled() && D.requires_grad())) {
    at::AutoDispatchBelowADInplaceOrView guard;  // value-only path: no DP table kept
    return ops::soft_dtw_from_cost(D, gamma, bandwidth, x_lengths, y_lengths);
  }
  return FromCostFunction::apply(D, gamma, bandwidth, x_lengths, y_lengths);
}

at::Tensor soft_dtw_fused_autograd(const at::Tensor& x, const at::Tensor& y, double gamma,
                                   std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                   const OptTensor& y_lengths, bool checkpoint) {
  if (!(at::GradMode::is_enabled() && (x.requires_grad() || y.requires_grad()))) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return ops::soft_dtw_fused(x, y, gamma, bandwidth, x_lengths, y_lengths, checkpoint);
  }
  return FusedFunction::apply(x, y, gamma, bandwidth, x_lengths, y_lengths, checkpoint);
}

at::Tensor from_cost_backward_autograd(const at::Tensor& grad, const at::Tensor& R, double gamma,
                                       std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                       const OptTensor& y_lengths) {
  return FromCostBackwardFunction::apply(grad, R, gamma, bandwidth, x_lengths, y_lengths);
}

std::tuple<at::Tensor, at::Tensor> fused_backward_autograd(const at::Tensor& grad, const at::Tensor& x,
                                                           const at::Tensor& y, const at::Tensor& R, double gamma,
                                                           std::optional<int64_t> bandwidth,
                                                           const OptTensor& x_lengths, const OptTensor& y_lengths) {
  variable_list g = FusedBackwardFunction::apply(grad, x, y, R, /*column_borders=*/std::nullopt, gamma, bandwidth,
                                                 x_lengths, y_lengths);
  return {g[0], g[1]};
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, Autograd, m) {
  m.impl("soft_dtw_from_cost", &soft_dtw_from_cost_autograd);
  m.impl("soft_dtw_fused", &soft_dtw_fused_autograd);
  m.impl("_soft_dtw_from_cost_backward", &from_cost_backward_autograd);
  m.impl("_soft_dtw_fused_backward", &fused_backward_autograd);
}

}  // namespace softdtw_torch
