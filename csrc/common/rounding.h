// float64 products and sums rounded once each, on every device: the host build disables FMA
// contraction (-ffp-contract=off, setup.py and CMakeLists.txt), and the device code uses the _rn
// intrinsics, which nvcc never contracts into an FMA (it would fuse a plain a·b + c). For results
// whose bits must be the CPU kernels' or a peer's: ROCKET's gradients (rocket/math.h), tslearn's
// Itakura parallelogram (softdtw/math.h).
#pragma once

#include "macros.h"

namespace softdtw_torch {

SOFTDTW_TORCH_HOST_DEVICE double rounded_product(double a, double b) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

SOFTDTW_TORCH_HOST_DEVICE double rounded_sum(double a, double b) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// acc + a·b with the product rounded on its own.
SOFTDTW_TORCH_HOST_DEVICE double add_product(double acc, double a, double b) {
  return rounded_sum(acc, rounded_product(a, b));
}

}  // namespace softdtw_torch
