// Small helpers shared by the families' C++ autograd kernels (*/autograd.cpp).
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <optional>

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

}  // namespace softdtw_torch
