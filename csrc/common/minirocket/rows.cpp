// MiniRocket's row loops (rows.h), shared by the MiniRocket and MultiRocket CPU kernels.
#include "rows.h"

#include "../macros.h"

namespace softdtw_torch {
namespace minirocket {

// Hot loops (SOFTDTW_TORCH_CPU_CLONES) use only correctly rounded IEEE additions, comparisons and
// divisions (no FMA, -ffp-contract=off): every ISA version computes the same bits.
SOFTDTW_TORCH_CPU_CLONES void add_to(float* __restrict acc, const float* __restrict v, int64_t n) {
  for (int64_t t = 0; t < n; ++t) acc[t] = acc[t] + v[t];
}

SOFTDTW_TORCH_CPU_CLONES void combine_channel(float* __restrict out, const float* __restrict alpha,
                                              const float* __restrict ga, const float* __restrict gb,
                                              const float* __restrict gc, int64_t n, bool first) {
  if (first) {
    for (int64_t t = 0; t < n; ++t) out[t] = 0.0f + combine_transform(alpha[t], ga[t], gb[t], gc[t]);
  } else {
    for (int64_t t = 0; t < n; ++t) out[t] = out[t] + combine_transform(alpha[t], ga[t], gb[t], gc[t]);
  }
}

SOFTDTW_TORCH_CPU_CLONES void add_rows(float* __restrict out, const float* __restrict a, const float* __restrict b,
                                       int64_t n) {
  for (int64_t t = 0; t < n; ++t) out[t] = a[t] + b[t];
}

}  // namespace minirocket
}  // namespace softdtw_torch
