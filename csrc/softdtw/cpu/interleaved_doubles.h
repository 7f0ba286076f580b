// The float64 soft cell loops on Intel CPUs with AVX-512: 32 cells at a time as four 512-bit
// vectors whose instructions are interleaved (docs/design/softdtw.md §8, "Interleaved vectors").
//
// GCC's vectorized cell loop issues one vector's two exp and log1p (about 220 instructions, 5 of
// them divisions) before the next vector's: the out-of-order window holds about two iterations,
// too few to hide the dependency chain through the divisions and the polynomials. An
// InterleavedDoubles holds 32 lanes as four vectors, and each of its operations is the same IEEE
// operation on each vector, issued one after the other: four chains run side by side. The cell
// math is math.h's own (its float64 exp, log1p and cell functions are templates, with `where` for
// `?:`), instantiated for this type, so every lane computes exactly the bits of the scalar code.
#pragma once

#include <cstdint>
#include <cstring>

#include "../../common/cpu.h"
#include "../../common/macros.h"
#include "../math.h"

#if SOFTDTW_TORCH_HAS_CPU_CLONES && SOFTDTW_TORCH_X86_INTRINSICS
#define SOFTDTW_TORCH_HAS_INTERLEAVED_DOUBLES 1

namespace softdtw_torch::cpu {

// Everything here is inlined into the AVX-512 loops at the end (the 512-bit vector types must not
// cross a call compiled for another instruction set).
#define SOFTDTW_TORCH_INTERLEAVED inline __attribute__((always_inline))

typedef double Doubles8 __attribute__((vector_size(64)));
typedef int64_t Int64s8 __attribute__((vector_size(64)));

constexpr int kInterleavedVectors = 4;  // measured best of 1, 2, 3, 4 and 8 (benchmarks/README.md)
constexpr int64_t kInterleavedCells = 8 * kInterleavedVectors;

struct InterleavedMask {  // a comparison's result, lane by lane: all ones (true) or zero
  Int64s8 v[kInterleavedVectors];
};
struct InterleavedInt64s {
  Int64s8 v[kInterleavedVectors];
};
struct InterleavedDoubles {
  Doubles8 v[kInterleavedVectors];
  InterleavedDoubles() = default;
  // Every lane x (−0 stays −0, which x + 0 would not keep).
  SOFTDTW_TORCH_INTERLEAVED InterleavedDoubles(double x) {
    for (Doubles8& vector : v) vector = Doubles8{x, x, x, x, x, x, x, x};
  }
};

// `result.v[k] = expression` for each vector k, in order: the interleaving.
#define SOFTDTW_TORCH_EACH_VECTOR(Result, expression) \
  Result result;                                      \
  for (int k = 0; k < kInterleavedVectors; ++k) result.v[k] = (expression);      \
  return result

SOFTDTW_TORCH_INTERLEAVED InterleavedDoubles load_interleaved(const double* p) {
  InterleavedDoubles x;
  std::memcpy(x.v, p, sizeof x.v);
  return x;
}
SOFTDTW_TORCH_INTERLEAVED void store_interleaved(double* p, const InterleavedDoubles& x) {
  std::memcpy(p, x.v, sizeof x.v);
}

// Arithmetic and comparisons, with another InterleavedDoubles or with a double (the formulas'
// constants).
#define SOFTDTW_TORCH_INTERLEAVED_OPERATOR(Result, op)                                                  \
  SOFTDTW_TORCH_INTERLEAVED Result operator op(const InterleavedDoubles& x, const InterleavedDoubles& y) { \
    SOFTDTW_TORCH_EACH_VECTOR(Result, x.v[k] op y.v[k]);                                                 \
  }                                                                                                      \
  SOFTDTW_TORCH_INTERLEAVED Result operator op(const InterleavedDoubles& x, double y) {                  \
    return x op InterleavedDoubles(y);                                                                   \
  }                                                                                                      \
  SOFTDTW_TORCH_INTERLEAVED Result operator op(double x, const InterleavedDoubles& y) {                  \
    return InterleavedDoubles(x) op y;                                                                   \
  }
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(InterleavedDoubles, +)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(InterleavedDoubles, -)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(InterleavedDoubles, *)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(InterleavedDoubles, /)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(InterleavedMask, <)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(InterleavedMask, >)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(InterleavedMask, ==)
#undef SOFTDTW_TORCH_INTERLEAVED_OPERATOR

// The integer operations of exp's and log1p's bit manipulations, with an int64 constant.
#define SOFTDTW_TORCH_INTERLEAVED_INTEGER(op)                                                  \
  SOFTDTW_TORCH_INTERLEAVED InterleavedInt64s operator op(const InterleavedInt64s& x, int64_t y) { \
    SOFTDTW_TORCH_EACH_VECTOR(InterleavedInt64s, x.v[k] op y);                                  \
  }
SOFTDTW_TORCH_INTERLEAVED_INTEGER(+)
SOFTDTW_TORCH_INTERLEAVED_INTEGER(-)
SOFTDTW_TORCH_INTERLEAVED_INTEGER(&)
SOFTDTW_TORCH_INTERLEAVED_INTEGER(|)
SOFTDTW_TORCH_INTERLEAVED_INTEGER(<<)
SOFTDTW_TORCH_INTERLEAVED_INTEGER(>>)
#undef SOFTDTW_TORCH_INTERLEAVED_INTEGER

SOFTDTW_TORCH_INTERLEAVED InterleavedDoubles where(const InterleavedMask& condition, const InterleavedDoubles& x,
                                                   const InterleavedDoubles& y) {
  SOFTDTW_TORCH_EACH_VECTOR(InterleavedDoubles, condition.v[k] ? x.v[k] : y.v[k]);
}
SOFTDTW_TORCH_INTERLEAVED InterleavedInt64s to_bits(const InterleavedDoubles& x) {
  SOFTDTW_TORCH_EACH_VECTOR(InterleavedInt64s, (Int64s8)x.v[k]);
}
SOFTDTW_TORCH_INTERLEAVED InterleavedDoubles bits_to_double(const InterleavedInt64s& x) {
  SOFTDTW_TORCH_EACH_VECTOR(InterleavedDoubles, (Doubles8)x.v[k]);
}
#undef SOFTDTW_TORCH_EACH_VECTOR
SOFTDTW_TORCH_INTERLEAVED InterleavedDoubles exp_(const InterleavedDoubles& x) { return cpu_math::exp(x); }
SOFTDTW_TORCH_INTERLEAVED InterleavedDoubles log1p_(const InterleavedDoubles& x) { return cpu_math::log1p(x); }
#undef SOFTDTW_TORCH_INTERLEAVED

// Whether a float64 soft cell run takes the loops below: Intel CPUs with AVX-512 (cpu.h; not
// measured elsewhere), runs of at least one block.
inline bool interleaved_doubles_apply(int64_t count) { return count >= kInterleavedCells && cpu_prefers_avx512(); }

// forward_cells' and forward_cells_with_weights' float64 soft cells (γ > 0; tiles.h), count >= 32,
// a block of 32 at a time; the last block overlaps cells already computed and writes them again
// with the same bits (as in_whole_blocks). Plain loops (a lambda would not be compiled for AVX-512),
// flattened: every call in them inlined, none compiled for another instruction set.
#define SOFTDTW_TORCH_INTERLEAVED_LOOP inline __attribute__((target("arch=x86-64-v4"), flatten))
SOFTDTW_TORCH_INTERLEAVED_LOOP void forward_cells_interleaved(const double* __restrict cost, const double* diag,
                                                              const double* up, const double* left,
                                                              double* __restrict out, int64_t count,
                                                              NaturalCellFunctions<double> f) {
  const NaturalCellFunctions<InterleavedDoubles> cell{f.gamma, f.inv_gamma};
  for (int64_t block = 0; block < count; block += kInterleavedCells) {
    const int64_t t = block + kInterleavedCells <= count ? block : count - kInterleavedCells;
    store_interleaved(out + t, cell_value(load_interleaved(cost + t), load_interleaved(diag + t),
                                          load_interleaved(up + t), load_interleaved(left + t), cell));
  }
}
SOFTDTW_TORCH_INTERLEAVED_LOOP void forward_cells_with_weights_interleaved(
    const double* __restrict cost, const double* diag, const double* up, const double* left, double* __restrict out,
    double* __restrict w_diag, double* __restrict w_up, double* __restrict w_left, int64_t count,
    NaturalCellFunctions<double> f) {
  const NaturalCellFunctions<InterleavedDoubles> cell{f.gamma, f.inv_gamma};
  for (int64_t block = 0; block < count; block += kInterleavedCells) {
    const int64_t t = block + kInterleavedCells <= count ? block : count - kInterleavedCells;
    const CellValueAndWeights<InterleavedDoubles> s = cell_value_and_weights(
        load_interleaved(cost + t), load_interleaved(diag + t), load_interleaved(up + t), load_interleaved(left + t),
        cell);
    store_interleaved(out + t, s.value);
    store_interleaved(w_diag + t, s.w.diag);
    store_interleaved(w_up + t, s.w.up);
    store_interleaved(w_left + t, s.w.left);
  }
}
#undef SOFTDTW_TORCH_INTERLEAVED_LOOP

}  // namespace softdtw_torch::cpu

#else
#define SOFTDTW_TORCH_HAS_INTERLEAVED_DOUBLES 0
#endif
