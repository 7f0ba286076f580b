// The CPU kernels' run-time CPU checks, in one place: which hand-picked path a loop takes.
#pragma once

#include "macros.h"

namespace softdtw_torch {

#if SOFTDTW_TORCH_X86_INTRINSICS
// AVX2 with FMA: Hydra's intrinsics loop.
inline bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

// Intel CPUs with AVX-512 (F and VL): where the 512-bit paths run (MiniRocket's
// count_greater_avx512, Rocket's groups of 16 cases). Not on AMD: Zen 4 splits 512-bit operations
// in two, and the one 512-bit version of such a loop measured there (GCC's clone of MiniRocket's
// counting loop) was slower; these paths have not been measured there.
inline bool cpu_prefers_avx512() {
  static const bool prefers =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_is("intel");
  return prefers;
}
#endif

}  // namespace softdtw_torch
