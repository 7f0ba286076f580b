// Autograd for the ROCKET ops, in C++ so it also works in TorchScript and LibTorch programs
// (same pattern as softdtw/autograd.cpp). rocket_convolve is differentiable w.r.t. x, weights
// and biases: MAX through the argmax position saved by the forward (an exact subgradient), PPV
// only in its soft form (ppv_temperature set); the hard PPV is piecewise constant (zero gradient).
// rocket_normalise is differentiable w.r.t. x.
#include <torch/autograd.h>
#include <torch/library.h>

#include "../common/autograd.h"
#include "ops.h"
#include "problem.h"

namespace softdtw_torch {
namespace {

namespace ops = rocket::ops;

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class RocketConvolveFunction : public torch::autograd::Function<RocketConvolveFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weights,
                            const at::Tensor& lengths, const at::Tensor& biases, const at::Tensor& dilations,
                            const at::Tensor& paddings, const at::Tensor& num_channel_indices,
                            const at::Tensor& channel_indices, c10::string_view accumulate,
                            const std::optional<at::Tensor>& x_lengths, std::optional<double> ppv_temperature) {
    at::AutoDispatchBelowADInplaceOrView guard;
    const rocket::Kernels kernels{weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices};
    auto [features, argmax] =
        ops::convolve_forward_with(x, kernels, accumulate, x_lengths, ppv_temperature);
    ctx->save_for_backward({x, weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices,
                            argmax, or_undefined(x_lengths)});
    ctx->saved_data["accumulate"] = std::string(accumulate);
    ctx->saved_data["ppv_temperature"] = ppv_temperature.has_value() ? *ppv_temperature : -1.0;
    return features;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const rocket::Kernels kernels{saved[1], saved[2], saved[3], saved[4], saved[5], saved[6], saved[7]};
    const double temperature = ctx->saved_data["ppv_temperature"].toDouble();
    auto [x_grad, w_grad, b_grad] = ops::convolve_backward_with(
        grad_outputs[0], saved[0], kernels, saved[8], ctx->saved_data["accumulate"].toStringRef(),
        as_optional(saved[9]), temperature > 0 ? std::optional<double>(temperature) : std::nullopt);
    return {x_grad, w_grad, at::Tensor(), b_grad, at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor rocket_convolve_autograd(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& lengths,
                                    const at::Tensor& biases, const at::Tensor& dilations, const at::Tensor& paddings,
                                    const at::Tensor& num_channel_indices, const at::Tensor& channel_indices,
                                    c10::string_view accumulate, const std::optional<at::Tensor>& x_lengths,
                                    std::optional<double> ppv_temperature) {
  return RocketConvolveFunction::apply(x, weights, lengths, biases, dilations, paddings, num_channel_indices,
                                       channel_indices, accumulate, x_lengths, ppv_temperature);
}

// z = (x - mean) / sd per (case, channel) over the valid prefix:
// dx = (g - mean(g) - z · mean(g · z)) / sd, with the op's sd (1 where the std is 0, where z = 0
// and the formula reduces to the derivative of x - mean). Means over the valid prefix only;
// padding positions get no gradient.
class RocketNormaliseFunction : public torch::autograd::Function<RocketNormaliseFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const std::optional<at::Tensor>& x_lengths) {
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor z = ops::rocket_normalise(x, x_lengths);
    ctx->save_for_backward({x, z, or_undefined(x_lengths)});
    return z;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &z = saved[1], &lengths = saved[2];
    // Sizes stay symbolic when torch.compile or torch.export traces the backward: one graph for
    // every batch and length.
    const c10::SymInt T = x.sym_size(2);
    at::Tensor valid = at::ones_like(x, x.options().dtype(at::kBool));
    at::Tensor count = at::full_symint({x.sym_size(0), 1, 1}, c10::Scalar(T), x.options());
    if (lengths.defined()) {
      const at::Tensor l = lengths.to(x.device(), at::kLong);
      valid = (at::arange(c10::Scalar(T), x.options().dtype(at::kLong)).view({1, 1, -1}) < l.view({-1, 1, 1}))
                  .expand_as(x);
      count = l.to(x.scalar_type()).view({-1, 1, 1});
    }
    const at::Tensor g = grad_outputs[0].masked_fill(valid.logical_not(), 0);
    const at::Tensor mean = (x.masked_fill(valid.logical_not(), 0).sum(-1, true) / count);
    const at::Tensor centred = (x - mean).masked_fill(valid.logical_not(), 0);
    at::Tensor sd = (centred * centred).sum(-1, true).div(count).sqrt();
    sd = at::where(sd == 0, at::ones_like(sd), sd);
    const at::Tensor g_mean = g.sum(-1, true) / count, gz_mean = (g * z).sum(-1, true) / count;
    const at::Tensor dx = ((g - g_mean - z * gz_mean) / sd).masked_fill(valid.logical_not(), 0);
    return {dx, at::Tensor()};
  }
};

at::Tensor rocket_normalise_autograd(const at::Tensor& x, const std::optional<at::Tensor>& x_lengths) {
  return RocketNormaliseFunction::apply(x, x_lengths);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolve_backward_autograd(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& weights, const at::Tensor& lengths,
    const at::Tensor& biases, const at::Tensor& dilations, const at::Tensor& paddings,
    const at::Tensor& num_channel_indices, const at::Tensor& channel_indices, const at::Tensor& argmax,
    c10::string_view accumulate, const std::optional<at::Tensor>& x_lengths, std::optional<double> ppv_temperature) {
  if (at::GradMode::is_enabled() && (grad.requires_grad() || x.requires_grad() || weights.requires_grad())) {
    fail_double_backward(kRocketConvolveOp);
  }
  at::AutoDispatchBelowADInplaceOrView guard;
  const rocket::Kernels kernels{weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices};
  return ops::convolve_backward_with(grad, x, kernels, argmax, accumulate, x_lengths, ppv_temperature);
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, Autograd, m) {
  m.impl("rocket_convolve", &rocket_convolve_autograd);
  m.impl("rocket_normalise", &rocket_normalise_autograd);
  m.impl("_rocket_convolve_backward", &convolve_backward_autograd);
}

}  // namespace softdtw_torch
