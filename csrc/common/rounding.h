// Products and sums (float and double) rounded once each, and a·b + c fused, on every device:
// the host build disables FMA contraction (-ffp-contract=off, setup.py and CMakeLists.txt), and
// the device code uses the _rn intrinsics, which nvcc never contracts into an FMA (it would fuse
// a plain a·b + c). For results whose bits must be the CPU kernels' or a peer's: ROCKET's
// gradients (rocket/math.h), Hydra (hydra/math.h), tslearn's Itakura parallelogram
// (softdtw/math.h).
#pragma once

#include <cmath>

#include "macros.h"

namespace softdtw_torch {

SOFTDTW_TORCH_HOST_DEVICE float rounded_product(float a, float b) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
SOFTDTW_TORCH_HOST_DEVICE double rounded_product(double a, double b) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

SOFTDTW_TORCH_HOST_DEVICE float rounded_sum(float a, float b) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
SOFTDTW_TORCH_HOST_DEVICE double rounded_sum(double a, double b) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// a·b + c rounded once, on every device (libm's fma is correctly rounded, as the instruction).
SOFTDTW_TORCH_HOST_DEVICE float fused_multiply_add(float a, float b, float c) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
SOFTDTW_TORCH_HOST_DEVICE double fused_multiply_add(double a, double b, double c) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// acc + a·b with the product rounded on its own.
SOFTDTW_TORCH_HOST_DEVICE double add_product(double acc, double a, double b) {
  return rounded_sum(acc, rounded_product(a, b));
}

}  // namespace softdtw_torch
