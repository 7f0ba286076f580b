// Calls of our operators through the dispatcher (so autograd, fake tensors and device kernels are
// all honoured), for the C++ code that composes them: composite kernels, autograd kernels and the
// public C++ API. Each op's C++ signature is written once, as the `Signature` of its Op in the
// family's ops.h; kernels registered with m.impl are checked against the schema at load time.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <mutex>
#include <optional>

namespace softdtw_torch {

using OptTensor = std::optional<at::Tensor>;

template <typename Signature>
class Op;

// A typed handle of the op `name` ("softdtw_torch::..."), looked up on the first call.
template <typename Ret, typename... Args>
class Op<Ret(Args...)> {
 public:
  using Signature = Ret(Args...);
  explicit constexpr Op(const char* name) : name_(name) {}

  Ret operator()(Args... args) const { return handle().call(args...); }

  const c10::TypedOperatorHandle<Signature>& handle() const {
    std::call_once(found_, [this] {
      handle_.emplace(c10::Dispatcher::singleton().findSchemaOrThrow(name_, "").template typed<Signature>());
    });
    return *handle_;
  }

 private:
  const char* name_;
  mutable std::once_flag found_;
  mutable std::optional<c10::TypedOperatorHandle<Signature>> handle_;
};

// The flat kernel of an op (for m.impl, or a test binding) whose body is wrapped with what its
// device needs (a type with a static run(args...): a device guard, a launcher), under the op's
// signature from ops.h, so that the argument list is not written again.
template <typename Signature>
struct KernelOf;

template <typename Ret, typename... Args>
struct KernelOf<Ret(Args...)> {
  template <typename Wrapped>
  static Ret kernel(Args... args) {
    return Wrapped::run(args...);
  }
};

}  // namespace softdtw_torch
