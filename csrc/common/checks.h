// Input checks that more than one family makes, with the same message everywhere.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace softdtw_torch {

// The floating-point dtypes the ops accept: float16 and bfloat16 compute in float32.
inline bool is_supported_float(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

inline void check_float_tensor(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK_TYPE(is_supported_float(t.scalar_type()), op, ": expected ", name,
                   " to be a floating-point tensor (float16, bfloat16, float32 or float64), got ", t.scalar_type());
}

}  // namespace softdtw_torch
