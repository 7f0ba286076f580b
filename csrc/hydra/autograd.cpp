// Autograd for the Hydra ops, in C++ so that it also works in TorchScript and LibTorch programs (the
// pattern of ../rocket/autograd.cpp). hydra_transform is differentiable w.r.t. x and weights
// through its count_max features (each the sum of a kernel's responses where it is the first
// maximum: an exact subgradient, following the forward's choice); count_min is piecewise constant
// (zero gradient). hydra_fit returns tensors that do not require grad. Double backward is refused.
#include <torch/autograd.h>
#include <torch/library.h>

#include "../common/autograd.h"
#include "ops.h"
#include "problem.h"

namespace softdtw_torch {
namespace hydra {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// d/dx of the rows the groups read: rows (n, D, R, G, T) of the series (r = 0) and of its first
// difference (r = 1, T - 1 used), each the sum of channels[i, r, g, :] (x's channel 0 for one
// channel). Plain ATen ops, deterministic on every device (a matrix product with the groups'
// channel counts, no scatter).
at::Tensor grad_of_x(const at::Tensor& grad_rows, const at::Tensor& x, const at::Tensor& channels) {
  // The batch n and the length T stay symbolic when torch.compile or torch.export traces the
  // backward (one graph for every batch and length); the channels and the parameters' sizes are
  // the layer's own.
  const c10::SymInt n = x.sym_size(0), T = x.sym_size(2);
  const int64_t C = x.sym_size(1).guard_int(__FILE__, __LINE__);
  const int64_t D = grad_rows.sym_size(1).guard_int(__FILE__, __LINE__);
  const int64_t R = grad_rows.sym_size(2).guard_int(__FILE__, __LINE__);
  const int64_t G = grad_rows.sym_size(3).guard_int(__FILE__, __LINE__);
  const at::Tensor by_representation =
      grad_rows.transpose(1, 2).reshape_symint({n, R, D * G, T});  // (n, R, D·G, T)
  std::vector<at::Tensor> per_representation;
  for (int64_t r = 0; r < R; ++r) {
    const at::Tensor rows = by_representation.select(1, r);  // (n, D·G, T)
    if (C == 1) {
      per_representation.push_back(rows.sum(1, /*keepdim=*/true));
    } else {
      // counts[(i, g), c]: how often group (i, g) of representation r sums channel c.
      const at::Tensor groups = channels.select(1, r).reshape({D * G, -1}).to(rows.device());
      const at::Tensor counts = at::one_hot(groups, C).sum(1).to(rows.scalar_type());  // (D·G, C)
      per_representation.push_back(at::einsum("ngt,gc->nct", {rows, counts}));
    }
  }
  at::Tensor grad_x = per_representation[0];
  if (R == 2) {  // s'(t) = x(t + 1) - x(t) for t < T - 1
    const at::Tensor g = per_representation[1].narrow_symint(2, 0, T - 1);
    grad_x = grad_x.clone();
    grad_x.narrow_symint(2, 1, T - 1).add_(g);
    grad_x.narrow_symint(2, 0, T - 1).sub_(g);
  }
  return grad_x;
}

class HydraTransformFunction : public torch::autograd::Function<HydraTransformFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weights,
                            const at::Tensor& channels, const std::optional<at::Tensor>& x_lengths) {
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x, weights, channels, or_undefined(x_lengths)});
    return ops::hydra_transform(x, weights, channels, x_lengths);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &weights = saved[1], &channels = saved[2];
    auto [grad_rows, grad_w] =
        ops::hydra_transform_backward(grad_outputs[0], x, weights, channels, as_optional(saved[3]));
    at::Tensor grad_x, grad_weights;
    if (x.requires_grad()) {
      grad_x = grad_of_x(grad_rows, x, channels).to(x.scalar_type());
    }
    if (weights.requires_grad()) grad_weights = grad_w.sum(0).to(weights.device(), weights.scalar_type());
    return {grad_x, grad_weights, at::Tensor(), at::Tensor()};
  }
};

at::Tensor transform_autograd(const Tensor& x, const Tensor& weights, const Tensor& channels,
                              const OptTensor& x_lengths) {
  return HydraTransformFunction::apply(x, weights, channels, x_lengths);
}

std::tuple<Tensor, Tensor> backward_autograd(const Tensor& grad, const Tensor& x, const Tensor& weights,
                                             const Tensor& channels, const OptTensor& x_lengths) {
  if (at::GradMode::is_enabled() && (grad.requires_grad() || x.requires_grad() || weights.requires_grad())) {
    fail_double_backward(kTransformOp);
  }
  at::AutoDispatchBelowADInplaceOrView guard;
  return ops::hydra_transform_backward(grad, x, weights, channels, x_lengths);
}

auto fit_autograd(const Tensor& x, int64_t n_kernels, int64_t n_groups, int64_t max_num_channels, int64_t seed) {
  at::AutoDispatchBelowADInplaceOrView guard;
  return ops::hydra_fit(x, n_kernels, n_groups, max_num_channels, seed);
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, Autograd, m) {
  m.impl("hydra_fit", &fit_autograd);
  m.impl("hydra_transform", &transform_autograd);
  m.impl("_hydra_transform_backward", &backward_autograd);
}

}  // namespace hydra
}  // namespace softdtw_torch
