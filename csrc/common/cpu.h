// The CPU kernels' run-time CPU checks, in one place: which hand-picked path a loop takes; and
// the cache-line-aligned buffers their vector loops write.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

#include "macros.h"

namespace softdtw_torch {

// std::vector's storage on 64-byte boundaries (a cache line, one 512-bit vector): a row written
// from its start with whole vectors then never splits a store across two lines. malloc only
// promises 16 bytes.
template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, kAlignment); }
  bool operator==(const CacheLineAllocator&) const { return true; }
};

template <typename T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

#if SOFTDTW_TORCH_X86_INTRINSICS
// AVX2 with FMA: Hydra's intrinsics loop.
inline bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

// Intel CPUs with AVX-512 (F and VL): where the 512-bit paths run (MiniRocket's
// count_greater_avx512, Rocket's groups of 16 cases, MultiRocket's pool_block_pair_avx512). Not
// on AMD: Zen 4 splits 512-bit operations in two, and the one 512-bit version of such a loop
// measured there (GCC's clone of MiniRocket's counting loop) was slower; these paths have not
// been measured there.
inline bool cpu_prefers_avx512() {
  static const bool prefers =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_is("intel");
  return prefers;
}
#endif

}  // namespace softdtw_torch
