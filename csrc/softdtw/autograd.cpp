// Autograd for the SoftDTW ops, in C++ so it also works in TorchScript and LibTorch programs, and
// written as PyTorch's generated autograd kernels are (hand-written Nodes, ../common/autograd.h) so
// that torch.func transforms compose with it. Every derivative mode up to the second order is
// exact; a third derivative raises (docs/design/softdtw.md §3).
//
// Each op below is a mathematical function of its tensor inputs, and its derivatives are written
// with the next op of the chain, called through the dispatcher (so they are differentiable in turn,
// and torch.func's nested levels see them):
//   values     V(D) = sdtw(D)                 _soft_dtw_{from_cost,fused}_forward
//   gradient   G(g, D) = g·E(D), E = ∂V/∂D    _soft_dtw_{from_cost,fused}_backward
//   JVP        F(D, Ḋ) = (V(D), ⟨E(D), Ḋ⟩)     _soft_dtw_{from_cost,fused}_jvp
//   HVP        H(g, ġ, D, Ḋ) = (⟨E, Ḋ⟩, g·E, ġ·E + g·∇²V·Ḋ)   _soft_dtw_{from_cost,fused}_hvp
// V's backward is G, its tangent F's second output; G's backward and tangent are H; F's backward
// is H, its tangent F and H; H is not differentiated (a third derivative). The fused ops are the
// same functions of x and y (D = the squared Euclidean costs, computed in the kernels). Tables
// (R), checkpoints and unit gradients that a forward returns are caches its backward reads: not
// differentiated (the backward ops recompute a table given empty).
#include <torch/library.h>

#include <string>
#include <vector>

#include "../common/autograd.h"
#include "ops.h"
#include "problem.h"

namespace softdtw_torch {
namespace {

using namespace autograd;  // NOLINT: the Node helpers
namespace ops = softdtw::ops;
using softdtw::ProblemArgs;  // the bundle every node keeps: its lengths are never differentiated

std::string third_derivative_message(const char* op) {
  return std::string(op) +
         ": a third derivative (differentiating a second derivative) is not supported; first and second "
         "derivatives are, in reverse and forward mode";
}

// Reverse mode: the node of an op whose forward ran below autograd. Saved tensors are unpacked
// against this node (saved-tensor hooks and version checks as for PyTorch's own ops).
struct SoftDTWNode : Node {
  ProblemArgs args;
  explicit SoftDTWNode(ProblemArgs args) : args(std::move(args)) {}
  at::Tensor unpack(const SavedVariable& v) { return v.unpack(getptr()); }
};

at::Tensor cast_like(const at::Tensor& grad, const at::Tensor& like) {
  return grad.defined() ? grad.to(like.scalar_type()) : grad;
}

at::Tensor sum_products(const at::Tensor& a, const at::Tensor& b) {  // ⟨a_b, b_b⟩ per pair: (B,)
  return (a * b).flatten(1).sum(1);
}

// ---------------------------------------------------------------------------------------------
// From a cost tensor D.

// V(D): ∂/∂D = G(ū, D). The table is saved as a SavedVariable too, so that saved-tensor hooks
// (offloading, packing) see it as they see every tensor autograd keeps.
struct FromCostValueBackward : SoftDTWNode {
  SavedVariable D, table;  // table: the cache, maybe empty
  FromCostValueBackward(ProblemArgs args, const at::Tensor& D, const at::Tensor& table)
      : SoftDTWNode(std::move(args)), D(D, false), table(table, false) {}
  std::string name() const override { return "SoftDtwFromCostBackward"; }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    D.reset_data();
    table.reset_data();
  }
  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor()};
    const at::Tensor d = unpack(D);
    return {cast_like(ops::from_cost_backward(grads[0], d, unpack(table), args), d)};
  }
};

// G(g, D) = g·E: ∂/∂g = ⟨Ū, E⟩, ∂/∂D = g·∇²V·Ū (H with Ḋ = Ū).
struct FromCostGradientBackward : SoftDTWNode {
  SavedVariable grad, D;
  FromCostGradientBackward(ProblemArgs args, const at::Tensor& grad, const at::Tensor& D)
      : SoftDTWNode(std::move(args)), grad(grad, false), D(D, false) {}
  std::string name() const override { return "SoftDtwFromCostGradientBackward"; }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    grad.reset_data();
    D.reset_data();
  }
  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor(), at::Tensor()};
    const at::Tensor g = unpack(grad), d = unpack(D);
    auto [along, unused, hessian] = ops::from_cost_hvp(g, std::nullopt, d, grads[0], args, /*with_grad=*/false);
    return {cast_like(along, g), cast_like(hessian, d)};
  }
};

// F(D, Ḋ) = (V, ⟨E, Ḋ⟩): ∂/∂D = ū_v·E + ū_t·∇²V·Ḋ, ∂/∂Ḋ = ū_t·E (one H).
struct FromCostJvpBackward : SoftDTWNode {
  SavedVariable D, D_tangent;
  FromCostJvpBackward(ProblemArgs args, const at::Tensor& D, const at::Tensor& D_tangent)
      : SoftDTWNode(std::move(args)), D(D, false), D_tangent(D_tangent, false) {}
  std::string name() const override { return "SoftDtwFromCostJvpBackward"; }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    D.reset_data();
    D_tangent.reset_data();
  }
  variable_list apply(variable_list&& grads) override {
    const at::Tensor& g_value = grads[0];
    const at::Tensor& g_tangent = grads[1];
    const at::Tensor d = unpack(D), dt = unpack(D_tangent);
    if (!g_tangent.defined()) {
      if (!g_value.defined()) return {at::Tensor(), at::Tensor()};
      return {cast_like(ops::from_cost_backward(g_value, d, at::empty({0}, d.options()), args), d), at::Tensor()};
    }
    auto [along, grad_D, hessian] =
        ops::from_cost_hvp(g_tangent, as_optional(g_value), d, dt, args, /*with_grad=*/task_should_compute_output(1));
    return {cast_like(hessian, d), task_should_compute_output(1) ? cast_like(grad_D, dt) : at::Tensor()};
  }
};

std::tuple<at::Tensor, at::Tensor> from_cost_forward_autograd(const at::Tensor& D, const ProblemArgs& args,
                                                              bool keep_table) {
  at::Tensor values, table;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    std::tie(values, table) = ops::from_cost_forward(D, args, keep_table);
  }
  if (needs_node({D})) attach(make_node<FromCostValueBackward>(args, D, table), {D}, {values});
  if (has_tangent(D)) {
    set_tangent(values, std::get<1>(ops::from_cost_jvp(primal_of(D), tangent_of(D), args)));
  }
  return {values, table};
}

at::Tensor from_cost_backward_autograd(const at::Tensor& grad, const at::Tensor& D, const at::Tensor& R,
                                       const ProblemArgs& args) {
  at::Tensor grad_D;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    grad_D = ops::from_cost_backward(grad, D, R, args);
  }
  if (needs_node({grad, D})) attach(make_node<FromCostGradientBackward>(args, grad, D), {grad, D}, {grad_D});
  if (has_tangent(grad) || has_tangent(D)) {
    // ġ·E + g·∇²V·Ḋ
    const at::Tensor g = primal_of(grad), d = primal_of(D);
    at::Tensor tangent;
    if (!has_tangent(D)) {
      tangent = ops::from_cost_backward(tangent_of(grad), d, R, args);
    } else {
      tangent = std::get<2>(
          ops::from_cost_hvp(g, as_optional(tangent_of(grad)), d, tangent_of(D), args, /*with_grad=*/false));
    }
    set_tangent(grad_D, tangent);
  }
  return grad_D;
}

std::tuple<at::Tensor, at::Tensor> from_cost_jvp_autograd(const at::Tensor& D, const at::Tensor& D_tangent,
                                                          const ProblemArgs& args) {
  at::Tensor values, along;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    std::tie(values, along) = ops::from_cost_jvp(D, D_tangent, args);
  }
  if (needs_node({D, D_tangent})) {
    attach(make_node<FromCostJvpBackward>(args, D, D_tangent), {D, D_tangent}, {values, along});
  }
  if (has_tangent(D) || has_tangent(D_tangent)) {
    // Tangents of (V, ⟨E, Ḋ⟩) along (D', Ḋ'): (⟨E, D'⟩, ⟨∇²V·Ḋ, D'⟩ + ⟨E, Ḋ'⟩).
    const at::Tensor d = primal_of(D), dt = primal_of(D_tangent);
    at::Tensor values_tangent, along_tangent;
    if (has_tangent(D)) {
      values_tangent = std::get<1>(ops::from_cost_jvp(d, tangent_of(D), args));
      const at::Tensor ones = at::ones_symint({d.sym_size(0)}, d.options());
      const at::Tensor hessian_dt =
          std::get<2>(ops::from_cost_hvp(ones, std::nullopt, d, dt, args, /*with_grad=*/false));
      along_tangent = sum_products(hessian_dt, tangent_of(D)).to(along.scalar_type());
    }
    if (has_tangent(D_tangent)) {
      const at::Tensor part = std::get<1>(ops::from_cost_jvp(d, tangent_of(D_tangent), args));
      along_tangent = along_tangent.defined() ? along_tangent + part : part;
    }
    set_tangent(values, values_tangent);
    set_tangent(along, along_tangent);
  }
  return {values, along};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> from_cost_hvp_autograd(const at::Tensor& grad,
                                                                      const OptTensor& grad_tangent,
                                                                      const at::Tensor& D, const OptTensor& D_tangent,
                                                                      const ProblemArgs& args, bool with_grad) {
  at::Tensor along, grad_D, hessian;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    std::tie(along, grad_D, hessian) = ops::from_cost_hvp(grad, grad_tangent, D, D_tangent, args, with_grad);
  }
  refuse_derivatives(third_derivative_message(kFromCostOp), {grad, or_undefined(grad_tangent), D, or_undefined(D_tangent)},
                     {along, grad_D, hessian});
  return {along, grad_D, hessian};
}

// ---------------------------------------------------------------------------------------------
// Fused squared Euclidean costs of x and y: the same functions of (x, y).

// V(x, y): ∂/∂(x, y) = G(ū, x, y), from what the forward kept for the backward (`kept`, plan.h:
// the table, the tile borders, each pair's unit gradients, or nothing), saved as SavedVariables as
// in FromCostValueBackward.
struct FusedValueBackward : SoftDTWNode {
  SavedVariable x, y, first, second;  // the forward's cache tensors
  std::string kept;
  FusedValueBackward(ProblemArgs args, const at::Tensor& x, const at::Tensor& y, const at::Tensor& first,
                     const at::Tensor& second, c10::string_view kept)
      : SoftDTWNode(std::move(args)),
        x(x, false),
        y(y, false),
        first(first, false),
        second(second, false),
        kept(kept) {}
  std::string name() const override { return "SoftDtwFusedBackward"; }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (SavedVariable* v : {&x, &y, &first, &second}) v->reset_data();
  }
  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor(), at::Tensor()};
    const at::Tensor a = unpack(x), b = unpack(y);
    auto [grad_x, grad_y] = ops::fused_backward(grads[0], a, b, unpack(first), unpack(second), args, kept);
    return {cast_like(grad_x, a), cast_like(grad_y, b)};
  }
};

// G(g, x, y) = g·∇V: ∂/∂g = ⟨∇V, Ū⟩, ∂/∂(x, y) = g·∇²V·Ū.
struct FusedGradientBackward : SoftDTWNode {
  SavedVariable grad, x, y;
  FusedGradientBackward(ProblemArgs args, const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y)
      : SoftDTWNode(std::move(args)), grad(grad, false), x(x, false), y(y, false) {}
  std::string name() const override { return "SoftDtwFusedGradientBackward"; }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    grad.reset_data();
    x.reset_data();
    y.reset_data();
  }
  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined() && !grads[1].defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};
    const at::Tensor g = unpack(grad), a = unpack(x), b = unpack(y);
    auto [along, unused_x, unused_y, hessian_x, hessian_y] =
        ops::fused_hvp(g, std::nullopt, a, b, as_optional(grads[0]), as_optional(grads[1]), args, /*with_grad=*/false);
    return {cast_like(along, g), cast_like(hessian_x, a), cast_like(hessian_y, b)};
  }
};

// F(x, y, ẋ, ẏ) = (V, ⟨∇V, (ẋ, ẏ)⟩): ∂/∂(x, y) = ū_v·∇V + ū_t·∇²V·(ẋ, ẏ), ∂/∂(ẋ, ẏ) = ū_t·∇V.
struct FusedJvpBackward : SoftDTWNode {
  SavedVariable x, y, x_tangent, y_tangent;
  FusedJvpBackward(ProblemArgs args, const at::Tensor& x, const at::Tensor& y, const at::Tensor& x_tangent,
                   const at::Tensor& y_tangent)
      : SoftDTWNode(std::move(args)),
        x(x, false),
        y(y, false),
        x_tangent(x_tangent, false),
        y_tangent(y_tangent, false) {}
  std::string name() const override { return "SoftDtwFusedJvpBackward"; }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    x.reset_data();
    y.reset_data();
    x_tangent.reset_data();
    y_tangent.reset_data();
  }
  variable_list apply(variable_list&& grads) override {
    const at::Tensor& g_value = grads[0];
    const at::Tensor& g_tangent = grads[1];
    const at::Tensor a = unpack(x), b = unpack(y), u = unpack(x_tangent), v = unpack(y_tangent);
    if (!g_tangent.defined()) {
      if (!g_value.defined()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
      const at::Tensor none = at::empty({0}, a.options());
      auto [grad_x, grad_y] = ops::fused_backward(g_value, a, b, none, none, args, "nothing");
      return {cast_like(grad_x, a), cast_like(grad_y, b), at::Tensor(), at::Tensor()};
    }
    const bool tangents = task_should_compute_output(2) || task_should_compute_output(3);
    auto [along, grad_x, grad_y, hessian_x, hessian_y] = ops::fused_hvp(
        g_tangent, as_optional(g_value), a, b, as_optional(u), as_optional(v), args, /*with_grad=*/tangents);
    return {cast_like(hessian_x, a), cast_like(hessian_y, b), u.defined() && tangents ? cast_like(grad_x, u) : at::Tensor(),
            v.defined() && tangents ? cast_like(grad_y, v) : at::Tensor()};
  }
};

// V(x, y) with its node and its forward-mode tangent (F's second output, along (ẋ, ẏ)), whichever
// cache the forward keeps.
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_forward_autograd(const at::Tensor& x, const at::Tensor& y,
                                                                      const ProblemArgs& args, c10::string_view keep) {
  at::Tensor values, first, second;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    std::tie(values, first, second) = ops::fused_forward(x, y, args, keep);
  }
  if (needs_node({x, y})) {
    attach(make_node<FusedValueBackward>(args, x, y, first, second, keep), {x, y}, {values});
  }
  if (has_tangent(x) || has_tangent(y)) {
    set_tangent(values, std::get<1>(ops::fused_jvp(primal_of(x), primal_of(y), as_optional(tangent_of(x)),
                                                   as_optional(tangent_of(y)), args)));
  }
  return {values, first, second};
}

// G(g, x, y) = g·∇V with its node and tangents, whichever cache its forward kept.
std::tuple<at::Tensor, at::Tensor> fused_backward_autograd(const at::Tensor& grad, const at::Tensor& x,
                                                           const at::Tensor& y, const at::Tensor& first,
                                                           const at::Tensor& second, const ProblemArgs& args,
                                                           c10::string_view kept) {
  at::Tensor grad_x, grad_y;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    std::tie(grad_x, grad_y) = ops::fused_backward(grad, x, y, first, second, args, kept);
  }
  if (needs_node({grad, x, y})) {
    attach(make_node<FusedGradientBackward>(args, grad, x, y), {grad, x, y}, {grad_x, grad_y});
  }
  if (has_tangent(grad) || has_tangent(x) || has_tangent(y)) {
    // ġ·∇V + g·∇²V·(ẋ, ẏ)
    auto [along, unused_x, unused_y, tangent_x, tangent_y] =
        ops::fused_hvp(primal_of(grad), as_optional(tangent_of(grad)), primal_of(x), primal_of(y),
                       as_optional(tangent_of(x)), as_optional(tangent_of(y)), args, /*with_grad=*/false);
    set_tangent(grad_x, tangent_x);
    set_tangent(grad_y, tangent_y);
  }
  return {grad_x, grad_y};
}

std::tuple<at::Tensor, at::Tensor> fused_jvp_autograd(const at::Tensor& x, const at::Tensor& y,
                                                      const OptTensor& x_tangent, const OptTensor& y_tangent,
                                                      const ProblemArgs& args) {
  at::Tensor values, along;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    std::tie(values, along) = ops::fused_jvp(x, y, x_tangent, y_tangent, args);
  }
  const at::Tensor u = or_undefined(x_tangent), v = or_undefined(y_tangent);
  if (needs_node({x, y, u, v})) {
    attach(make_node<FusedJvpBackward>(args, x, y, u, v), {x, y, u, v}, {values, along});
  }
  if (has_tangent(x) || has_tangent(y) || has_tangent(u) || has_tangent(v)) {
    // Tangents along (x', y', ẋ', ẏ'): (⟨∇V, (x', y')⟩, ⟨∇²V·(ẋ, ẏ), (x', y')⟩ + ⟨∇V, (ẋ', ẏ')⟩).
    const at::Tensor a = primal_of(x), b = primal_of(y);
    at::Tensor values_tangent, along_tangent;
    if (has_tangent(x) || has_tangent(y)) {
      values_tangent = std::get<1>(ops::fused_jvp(a, b, as_optional(tangent_of(x)), as_optional(tangent_of(y)), args));
      if (u.defined() || v.defined()) {
        const at::Tensor ones = at::ones_symint({a.sym_size(0)}, a.options());
        auto [unused, ux, uy, hessian_x, hessian_y] = ops::fused_hvp(
            ones, std::nullopt, a, b, as_optional(primal_of(u)), as_optional(primal_of(v)), args, /*with_grad=*/false);
        at::Tensor part = at::zeros_symint({a.sym_size(0)}, along.options());
        if (has_tangent(x)) part = part + sum_products(hessian_x, tangent_of(x)).to(along.scalar_type());
        if (has_tangent(y)) part = part + sum_products(hessian_y, tangent_of(y)).to(along.scalar_type());
        along_tangent = part;
      }
    }
    if (has_tangent(u) || has_tangent(v)) {
      const at::Tensor part =
          std::get<1>(ops::fused_jvp(a, b, as_optional(tangent_of(u)), as_optional(tangent_of(v)), args));
      along_tangent = along_tangent.defined() ? along_tangent + part : part;
    }
    set_tangent(values, values_tangent);
    set_tangent(along, along_tangent);
  }
  return {values, along};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_hvp_autograd(
    const at::Tensor& grad, const OptTensor& grad_tangent, const at::Tensor& x, const at::Tensor& y,
    const OptTensor& x_tangent, const OptTensor& y_tangent, const ProblemArgs& args, bool with_grad) {
  std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> out;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    out = ops::fused_hvp(grad, grad_tangent, x, y, x_tangent, y_tangent, args, with_grad);
  }
  auto& [along, grad_x, grad_y, tangent_x, tangent_y] = out;
  refuse_derivatives(third_derivative_message(kFusedOp),
                     {grad, or_undefined(grad_tangent), x, y, or_undefined(x_tangent), or_undefined(y_tangent)},
                     {along, grad_x, grad_y, tangent_x, tangent_y});
  return out;
}

// The barycenters' objective and gradient in one call: not differentiable (it is a gradient).
std::tuple<at::Tensor, at::Tensor> fused_value_and_grad_autograd(const at::Tensor& x, const at::Tensor& y,
                                                                 const at::Tensor& weights, const ProblemArgs& args) {
  at::Tensor values, grad_x;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    std::tie(values, grad_x) = ops::fused_value_and_grad(x, y, weights, args);
  }
  refuse_derivatives(std::string(kFusedOp) +
                         ": _soft_dtw_fused_value_and_grad is not differentiable; differentiate soft_dtw instead",
                     {x, y, weights}, {values, grad_x});
  return {values, grad_x};
}

// Hard DTW's paths: not differentiable (the value is, through soft_dtw at gamma = 0).
std::tuple<at::Tensor, at::Tensor, at::Tensor> dtw_path_autograd(const at::Tensor& x, const at::Tensor& y,
                                                                 const ProblemArgs& args) {
  std::tuple<at::Tensor, at::Tensor, at::Tensor> out;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    out = ops::dtw_path(x, y, args);
  }
  refuse_derivatives(std::string(kDtwPathOp) +
                         ": _dtw_path is not differentiable; differentiate soft_dtw(x, y, gamma=0.0) (the squared "
                         "value) or soft_dtw_alignment(x, y, gamma=0.0) (the path as a matrix) instead",
                     {x, y}, {std::get<0>(out)});
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, Autograd, m) {
  m.impl("_soft_dtw_from_cost_forward", softdtw::FromCostForward::kernel<&from_cost_forward_autograd>);
  m.impl("_soft_dtw_from_cost_backward", softdtw::FromCostBackward::kernel<&from_cost_backward_autograd>);
  m.impl("_soft_dtw_from_cost_jvp", softdtw::FromCostJvp::kernel<&from_cost_jvp_autograd>);
  m.impl("_soft_dtw_from_cost_hvp", softdtw::FromCostHvp::kernel<&from_cost_hvp_autograd>);
  m.impl("_soft_dtw_fused_forward", softdtw::FusedForward::kernel<&fused_forward_autograd>);
  m.impl("_soft_dtw_fused_backward", softdtw::FusedBackward::kernel<&fused_backward_autograd>);
  m.impl("_soft_dtw_fused_jvp", softdtw::FusedJvp::kernel<&fused_jvp_autograd>);
  m.impl("_soft_dtw_fused_hvp", softdtw::FusedHvp::kernel<&fused_hvp_autograd>);
  m.impl("_soft_dtw_fused_value_and_grad", softdtw::FusedValueAndGrad::kernel<&fused_value_and_grad_autograd>);
  m.impl("_dtw_path", softdtw::DtwPath::kernel<&dtw_path_autograd>);
}

}  // namespace softdtw_torch
