// Helpers shared by the families' C++ autograd kernels (*/autograd.cpp).
//
// Two ways to write an autograd kernel live in this library:
// - torch::autograd::Function (ROCKET): the short way, but torch.func transforms (grad, vjp, jvp,
//   vmap, jacrev, hessian, ...) refuse it, and it has no forward mode;
// - a Node written as PyTorch's generated autograd kernels are (SoftDTW): the kernel computes its
//   outputs below autograd, attaches a Node holding what the backward needs (SavedVariable), and
//   sets the outputs' forward-mode tangents itself. torch.func accepts these, at any nesting depth,
//   provided that what the Node and the tangents compute goes through differentiable ops.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/edge.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace softdtw_torch {

// Optional tensors (lengths) travel through autograd's saved variables as possibly undefined tensors.
inline at::Tensor or_undefined(const std::optional<at::Tensor>& t) {
  return t.has_value() ? *t : at::Tensor();
}
inline std::optional<at::Tensor> as_optional(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
}

[[noreturn]] inline void fail_double_backward(const char* op) {
  TORCH_CHECK(false, op, ": double backward (differentiating the gradient) is not supported");
}

namespace autograd {

using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

// What a Node is held by: std::shared_ptr up to torch 2.9, c10::intrusive_ptr since.
using NodePtr = decltype(std::declval<torch::autograd::Edge>().function);

template <typename N, typename... Args>
NodePtr make_node(Args&&... args) {
  if constexpr (std::is_same_v<NodePtr, std::shared_ptr<Node>>) {
    return std::make_shared<N>(std::forward<Args>(args)...);
  } else {
    return c10::make_intrusive<N>(std::forward<Args>(args)...);
  }
}

// Forward mode (torch.autograd.forward_ad, torch.func.jvp): the tangent a tensor carries, and the
// tensor without it, at level 0 as PyTorch's generated kernels read them (torch.func maps its
// levels onto level 0 of each wrapper).
inline bool has_tangent(const at::Tensor& t) {
  return t.defined() && t._fw_grad(/*level=*/0).defined();
}
inline at::Tensor tangent_of(const at::Tensor& t) {
  return has_tangent(t) ? t._fw_grad(/*level=*/0) : at::Tensor();
}
inline at::Tensor primal_of(const at::Tensor& t) {
  return has_tangent(t) ? t._fw_primal(/*level=*/0) : t;
}
inline void set_tangent(const at::Tensor& output, const at::Tensor& tangent) {
  if (tangent.defined()) output._set_fw_grad(tangent, /*level=*/0, /*is_inplace_op=*/false);
}

// Whether reverse mode needs a Node for these inputs (grad mode on and one of them requires grad).
inline bool needs_node(const std::vector<at::Tensor>& inputs) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

// Makes `outputs` the results of `node`, whose inputs (the gradients its apply returns, in this
// order) are `inputs`; undefined inputs get no edge.
inline void attach(const NodePtr& node, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) {
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  for (const at::Tensor& out : outputs) torch::autograd::set_history(out, node);
}

// A Node whose backward refuses: attached to what cannot be differentiated (yet), so that asking
// for that derivative raises `message` instead of returning a silent zero.
struct NotDifferentiable : Node {
  std::string message;
  explicit NotDifferentiable(std::string message) : message(std::move(message)) {}
  variable_list apply(variable_list&&) override { TORCH_CHECK(false, message); }
  std::string name() const override { return "softdtw_torch::NotDifferentiable"; }
};

// Attaches NotDifferentiable to the outputs when any input requires grad, and raises at once when
// any input carries a forward-mode tangent (a tangent cannot be refused later).
inline void refuse_derivatives(const std::string& message, const std::vector<at::Tensor>& inputs,
                               const std::vector<at::Tensor>& outputs) {
  for (const at::Tensor& t : inputs) TORCH_CHECK(!has_tangent(t), message);
  if (needs_node(inputs)) attach(make_node<NotDifferentiable>(message), inputs, outputs);
}

}  // namespace autograd
}  // namespace softdtw_torch
