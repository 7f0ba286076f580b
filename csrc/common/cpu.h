// The CPU kernels' run-time choice of vector path, in one place (common/cpu.cpp); and the
// cache-line-aligned buffers their vector loops write.
//
// A kernel with loops written for several instruction sets (MiniRocket's counting, Rocket's
// groups, MultiRocket's pooling, SoftDTW's interleaved cells, Hydra's groups) asks path_of() which
// one runs. The answer is decided once per process, at the kernel's first call:
//   - the paths this CPU supports (avx512: x86-64-v4's AVX-512 F, CD, VL, BW and DQ; avx2: AVX2
//     with FMA; portable);
//   - capped by SOFTDTW_TORCH_CPU_PATH=portable|avx2|avx512 in the environment (benchmarks, and
//     the tests that run every path), or by set_path_cap();
//   - otherwise, where the kernel has a probe, by measurement: each supported path runs the probe
//     (a small workload of the kernel's own loops, under a millisecond), the paths interleaved,
//     best of several rounds, and the fastest is kept (the widest path within 5% of the fastest,
//     so that noise does not move a process off the paths written for speed). Without a probe, by a table: the widest
//     supported path, except AVX-512 on other CPUs than Intel's for the loops whose AVX-512
//     version was measured on Intel only (PathRule::avx512_measured_on_intel_only).
// Every path of a kernel computes the same bits (tests/infra/test_cpu_paths.py runs them all), so
// the choice changes speed only, never results. GCC's clones (SOFTDTW_TORCH_CPU_CLONES, macros.h)
// are picked by the loader from what the CPU supports and are not part of this choice.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
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

// The instruction sets of the hand-written loops, narrowest first (the order of the cap).
enum class VectorPath : int { kPortable = 0, kAvx2 = 1, kAvx512 = 2 };

const char* path_name(VectorPath path);  // "portable", "avx2", "avx512"

// The path of that name (path_name's inverse); nullopt for any other text.
std::optional<VectorPath> parse_path(const char* text);

// Whether this CPU and build run `path`: always portable; the others never without
// SOFTDTW_TORCH_X86_INTRINSICS (other CPUs and compilers, macros.h).
bool cpu_supports(VectorPath path);

// How one kernel picks its path: one static object per kernel. A probe runs a small fixed
// workload of the kernel's loops on the given path in the calling thread (the dispatcher times
// it); null for none.
struct PathRule {
  const char* kernel;                  // the name info() reports ("minirocket", ...)
  std::vector<VectorPath> candidates;  // the paths the kernel has; portable among them
  void (*probe)(VectorPath) = nullptr;
  bool avx512_measured_on_intel_only = false;  // the table's exception, for a kernel without a probe
  mutable std::atomic<int> decided{-1};        // the decision, once made (-1: not yet)
};

// The path `rule.kernel` runs (see the top of this file). Thread-safe, and one atomic load once
// decided; the first call decides (ops call it at their start, before their parallel region, so
// that a probe runs alone).
VectorPath path_of(const PathRule& rule);

// Caps every kernel's path from now on (nullopt: back to SOFTDTW_TORCH_CPU_PATH, else the
// measured choice). For the tests that compare the paths' bits in one process.
void set_path_cap(std::optional<VectorPath> cap);

// One line per kernel that has decided: "<kernel>: <path> (<why>)", e.g.
// "minirocket: avx512 (measured: avx512 0.41 ms, avx2 0.63 ms, portable 1.90 ms)".
std::vector<std::string> path_report();

// Decides every registered kernel's path (running the probes not yet run): for info().
void decide_all_paths();

// Registers a kernel's rule for decide_all_paths(); a kernel file does it at load time:
//   const bool registered = register_path_rule(kRule);
bool register_path_rule(const PathRule& rule);

}  // namespace softdtw_torch
