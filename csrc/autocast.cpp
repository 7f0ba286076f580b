// Autocast (torch.autocast, mixed precision) for every public op, on the CPU and CUDA.
//
// The policy is torch's for its losses and reductions (its "float32" list, e.g. mse_loss,
// cdist): floating-point inputs of lower precision (float16, bfloat16) on the autocast device
// are cast to float32, the op runs in float32 and returns float32; float32 and float64 inputs
// are left alone. So `SoftDTW()(model_output_bf16, target_fp32)` works inside
// `torch.autocast(...)`, and its gradient flows back to the bfloat16 output through the cast.
// Outside autocast nothing changes: float16/bfloat16 inputs still return their own dtype.
//
// One boxed kernel serves every op: it casts the tensor arguments on the stack, then calls the
// op again with the autocast key excluded (autograd and the device kernels run as usual).
// The internal ops (a leading underscore, except _dtw_path behind dtw_path) are only called from
// these ops' kernels, where autocast is already excluded.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

namespace softdtw_torch {
namespace {

// A lower-precision floating-point tensor on the autocast device, as float32; else unchanged.
bool casts_to_float32(const at::Tensor& t, c10::DeviceType device) {
  return t.defined() && t.device().type() == device &&
         (t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16);
}

template <c10::DispatchKey autocast_key, c10::DeviceType device>
void autocast_to_float32(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t n_arguments = op.schema().arguments().size();
  for (size_t i = stack->size() - n_arguments; i < stack->size(); ++i) {
    c10::IValue& argument = (*stack)[i];
    if (argument.isTensor() && casts_to_float32(argument.toTensor(), device)) {
      argument = argument.toTensor().to(at::kFloat);
    }
  }
  c10::impl::ExcludeDispatchKeyGuard no_autocast(autocast_key);
  op.callBoxed(stack);
}

// Every public op that reads floating-point tensors (the schemas are in library.cpp).
constexpr const char* kAutocastOps[] = {
    "soft_dtw",          "soft_dtw_fused",        "soft_dtw_from_cost",          "pairwise_cost",
    "soft_dtw_alignment", "soft_dtw_alignment_from_cost", "soft_dtw_sharp",      "soft_dtw_sharp_from_cost",
    "dilate",            "_dtw_path",             "rocket_normalise",            "rocket_convolve",
    "rocket_transform",  "minirocket_fit",        "minirocket_transform",        "multirocket_fit",
    "multirocket_transform", "hydra_fit",         "hydra_transform",
};

template <c10::DispatchKey autocast_key, c10::DeviceType device>
void register_autocast(torch::Library& m) {
  for (const char* name : kAutocastOps) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&autocast_to_float32<autocast_key, device>>());
  }
}

}  // namespace
}  // namespace softdtw_torch

TORCH_LIBRARY_IMPL(softdtw_torch, AutocastCPU, m) {
  softdtw_torch::register_autocast<c10::DispatchKey::AutocastCPU, c10::DeviceType::CPU>(m);
}

TORCH_LIBRARY_IMPL(softdtw_torch, AutocastCUDA, m) {
  softdtw_torch::register_autocast<c10::DispatchKey::AutocastCUDA, c10::DeviceType::CUDA>(m);
}
