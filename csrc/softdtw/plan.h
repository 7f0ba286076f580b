// The SoftDTW memory planner: what a fused forward keeps for its backward, chosen once per call from
// the problem, the device and the autograd context, in the device-agnostic layer (composite.cpp);
// the device kernels only carry out the plan. The choice is the `keep` option of
// _soft_dtw_fused_forward and the `kept` option of _soft_dtw_fused_backward (library.cpp): one op
// pair, one option, whatever the strategy.
#pragma once

#include <ATen/ATen.h>

namespace softdtw_torch::softdtw {

// What a fused forward keeps, by its name in the ops' option; the forward returns the values and
// two cache tensors, (first, second), that the backward reads:
enum class FusedCache {
  kNothing,    // "nothing": (empty, empty); the backward recomputes the table
  kTable,      // "table": (R, empty), R the DP table (an empty R: recomputed by the backward)
  kBorders,    // "borders" (checkpoint=True): on CUDA, R on the tile borders (row borders, column
               // borders), each tile's R recomputed in the backward; on other devices (empty, empty),
               // the whole table recomputed
  kGradients,  // "gradients": each pair's unit gradients ∂v/∂x (B, N, d) and ∂v/∂y (B, M, d) in
               // float64, which the backward scales (the CPU's forward with gradients: short pairs in
               // packs); CPU only
};

// The strategy named `name`, for the op `op`'s option `option`: ValueError naming the choices.
FusedCache fused_cache_named(const char* op, const char* option, c10::string_view name);
const char* name_of(FusedCache cache);

// gradient_needed: autograd will differentiate the call; checkpoint: the caller's option.
FusedCache plan_fused_forward(const at::Tensor& x, const at::Tensor& y, bool gradient_needed, bool checkpoint);

}  // namespace softdtw_torch::softdtw
