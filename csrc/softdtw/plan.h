// The SoftDTW memory planner: what a fused forward keeps for its backward, chosen once per call from
// the problem, the device and the autograd context, in the device-agnostic layer (composite.cpp);
// the device kernels only carry out the plan.
#pragma once

#include <ATen/ATen.h>

namespace softdtw_torch::softdtw {

enum class FusedForwardPlan {
  kTable,         // the plain forward: keeps the table R when a gradient is needed (nothing otherwise)
  kWithGrad,      // each pair's gradient computed in the forward (the backward only scales it)
  kCheckpointed,  // the checkpointed forward (checkpoint=True): R recomputed in the backward
};

// gradient_needed: autograd will differentiate the call; checkpoint: the caller's option.
FusedForwardPlan plan_fused_forward(const at::Tensor& x, const at::Tensor& y, bool gradient_needed, bool checkpoint);

}  // namespace softdtw_torch::softdtw
