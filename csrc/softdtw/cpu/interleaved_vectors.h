// The soft cell loops of the forward on the avx512 path (common/cpu.h): four 512-bit vectors of cells at
// a time (32 float64 or 64 float32 cells), their instructions interleaved (docs/design/softdtw.md
// §8, "Interleaved vectors").
//
// GCC's vectorized cell loop issues one vector's two exp and log1p (float64: about 220
// instructions, 5 of them divisions) before the next vector's: the out-of-order window holds
// about two iterations, too few to hide the dependency chain through the divisions and the
// polynomials. An Interleaved<T> holds four vectors, and each of its operations is the same IEEE
// operation on each vector, issued one after the other: four chains run side by side. The cell
// math is math.h's own (its exp, log1p and cell functions are templates, with `where` for `?:`),
// instantiated for this type, so every lane computes exactly the bits of the scalar code.
#pragma once

#include <cstdint>
#include <cstring>

#include "../../common/cpu.h"
#include "../../common/macros.h"
#include "../math.h"

#if SOFTDTW_TORCH_HAS_CPU_CLONES && SOFTDTW_TORCH_X86_INTRINSICS
#define SOFTDTW_TORCH_HAS_INTERLEAVED_VECTORS 1

namespace softdtw_torch {
namespace cpu {

// Everything here is inlined into the AVX-512 loops at the end (the 512-bit vector types must not
// cross a call compiled for another instruction set).
#define SOFTDTW_TORCH_INTERLEAVED inline __attribute__((always_inline))

// One 512-bit vector of T, and of the integers of T's width (bit patterns, comparison masks).
template <typename T>
struct VectorOf;
template <>
struct VectorOf<double> {
  typedef double Values __attribute__((vector_size(64)));
  typedef int64_t Integers __attribute__((vector_size(64)));
  using Integer = int64_t;
};
template <>
struct VectorOf<float> {
  typedef float Values __attribute__((vector_size(64)));
  typedef int32_t Integers __attribute__((vector_size(64)));
  using Integer = int32_t;
};

constexpr int kInterleavedVectors = 4;  // measured best of 1, 2, 3, 4 and 8 (benchmarks/README.md)
template <typename T>
constexpr int64_t kInterleavedCells = kInterleavedVectors * 64 / sizeof(T);

// A comparison's result lane by lane (all ones: true, zero: false), and integers of T's width.
template <typename T>
struct InterleavedIntegers {
  typename VectorOf<T>::Integers v[kInterleavedVectors];
};
template <typename T>
struct Interleaved {
  using Values = typename VectorOf<T>::Values;
  Values v[kInterleavedVectors];
  Interleaved() = default;
  SOFTDTW_TORCH_INTERLEAVED Interleaved(T x) {  // every lane x (not x + 0, which turns −0 into +0)
    Values broadcast;
    for (int lane = 0; lane < int(64 / sizeof(T)); ++lane) broadcast[lane] = x;
    for (Values& vector : v) vector = broadcast;
  }
};

// `result.v[k] = expression` for each vector k, in order: the interleaving.
#define SOFTDTW_TORCH_EACH_VECTOR(Result, expression)                       \
  Result result;                                                            \
  for (int k = 0; k < kInterleavedVectors; ++k) result.v[k] = (expression); \
  return result

template <typename T>
SOFTDTW_TORCH_INTERLEAVED Interleaved<T> load_interleaved(const T* p) {
  Interleaved<T> x;
  std::memcpy(x.v, p, sizeof x.v);
  return x;
}
template <typename T>
SOFTDTW_TORCH_INTERLEAVED void store_interleaved(T* p, const Interleaved<T>& x) {
  std::memcpy(p, x.v, sizeof x.v);
}

// Arithmetic and comparisons, with another Interleaved<T> or with a T (the formulas' constants;
// Same<T>::type is not deduced, so that a literal of another type converts to T).
template <typename T>
struct Same {
  using type = T;
};
#define SOFTDTW_TORCH_INTERLEAVED_OPERATOR(Result, op)                                                              \
  template <typename T>                                                                                             \
  SOFTDTW_TORCH_INTERLEAVED Result operator op(const Interleaved<T>& x, const Interleaved<T>& y) {                 \
    SOFTDTW_TORCH_EACH_VECTOR(Result, x.v[k] op y.v[k]);                                                         \
  }                                                                                                                 \
  template <typename T>                                                                                             \
  SOFTDTW_TORCH_INTERLEAVED Result operator op(const Interleaved<T>& x, typename Same<T>::type y) {                \
    return x op Interleaved<T>(y);                                                                                  \
  }                                                                                                                 \
  template <typename T>                                                                                             \
  SOFTDTW_TORCH_INTERLEAVED Result operator op(typename Same<T>::type x, const Interleaved<T>& y) {                \
    return Interleaved<T>(x) op y;                                                                                  \
  }
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(Interleaved<T>, +)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(Interleaved<T>, -)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(Interleaved<T>, *)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(Interleaved<T>, /)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(InterleavedIntegers<T>, <)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(InterleavedIntegers<T>, >)
SOFTDTW_TORCH_INTERLEAVED_OPERATOR(InterleavedIntegers<T>, ==)
#undef SOFTDTW_TORCH_INTERLEAVED_OPERATOR

// The integer operations of exp's and log1p's bit manipulations, with a constant.
#define SOFTDTW_TORCH_INTERLEAVED_INTEGER(op)                                                                 \
  template <typename T>                                                                                       \
  SOFTDTW_TORCH_INTERLEAVED InterleavedIntegers<T> operator op(const InterleavedIntegers<T>& x,              \
                                                               typename VectorOf<T>::Integer y) {             \
    SOFTDTW_TORCH_EACH_VECTOR(InterleavedIntegers<T>, x.v[k] op y);                                          \
  }
SOFTDTW_TORCH_INTERLEAVED_INTEGER(+)
SOFTDTW_TORCH_INTERLEAVED_INTEGER(-)
SOFTDTW_TORCH_INTERLEAVED_INTEGER(&)
SOFTDTW_TORCH_INTERLEAVED_INTEGER(|)
SOFTDTW_TORCH_INTERLEAVED_INTEGER(<<)
SOFTDTW_TORCH_INTERLEAVED_INTEGER(>>)
#undef SOFTDTW_TORCH_INTERLEAVED_INTEGER

template <typename T>
SOFTDTW_TORCH_INTERLEAVED Interleaved<T> where(const InterleavedIntegers<T>& condition, const Interleaved<T>& x,
                                               const Interleaved<T>& y) {
  SOFTDTW_TORCH_EACH_VECTOR(Interleaved<T>, condition.v[k] ? x.v[k] : y.v[k]);
}
template <typename T>
SOFTDTW_TORCH_INTERLEAVED InterleavedIntegers<T> to_bits(const Interleaved<T>& x) {
  SOFTDTW_TORCH_EACH_VECTOR(InterleavedIntegers<T>, (typename VectorOf<T>::Integers)x.v[k]);
}
SOFTDTW_TORCH_INTERLEAVED Interleaved<double> bits_to_double(const InterleavedIntegers<double>& x) {
  SOFTDTW_TORCH_EACH_VECTOR(Interleaved<double>, (VectorOf<double>::Values)x.v[k]);
}
SOFTDTW_TORCH_INTERLEAVED Interleaved<float> bits_to_float(const InterleavedIntegers<float>& x) {
  SOFTDTW_TORCH_EACH_VECTOR(Interleaved<float>, (VectorOf<float>::Values)x.v[k]);
}
// float ↔ int32 conversions as static_cast does them (truncation; exact for expf's integers).
SOFTDTW_TORCH_INTERLEAVED InterleavedIntegers<float> truncate_to_int(const Interleaved<float>& x) {
  SOFTDTW_TORCH_EACH_VECTOR(InterleavedIntegers<float>, __builtin_convertvector(x.v[k], VectorOf<float>::Integers));
}
SOFTDTW_TORCH_INTERLEAVED Interleaved<float> int_to_float(const InterleavedIntegers<float>& x) {
  SOFTDTW_TORCH_EACH_VECTOR(Interleaved<float>, __builtin_convertvector(x.v[k], VectorOf<float>::Values));
}
#undef SOFTDTW_TORCH_EACH_VECTOR
SOFTDTW_TORCH_INTERLEAVED Interleaved<double> exp_(const Interleaved<double>& x) { return cpu_math::exp(x); }
SOFTDTW_TORCH_INTERLEAVED Interleaved<double> log1p_(const Interleaved<double>& x) { return cpu_math::log1p(x); }
SOFTDTW_TORCH_INTERLEAVED Interleaved<float> exp_(const Interleaved<float>& x) { return cpu_math::expf(x); }
SOFTDTW_TORCH_INTERLEAVED Interleaved<float> log1p_(const Interleaved<float>& x) { return cpu_math::log1pf(x); }

// Whether a soft cell run takes the loops below: on the avx512 path (common/cpu.h), measured by
// probe_interleaved (tiles.h) against GCC's clones of the plain loop, runs of at least one block.
inline void probe_interleaved(VectorPath path);
inline const PathRule kInterleavedPaths{"softdtw", {VectorPath::kAvx512, VectorPath::kPortable}, &probe_interleaved};

template <typename T>
inline bool interleaved_vectors_apply(int64_t count) {
  return count >= kInterleavedCells<T> && path_of(kInterleavedPaths) == VectorPath::kAvx512;
}

// The values of R that the loops read and write: float64 R as it is, float32 R as the double-float
// hi + lo of two arrays (math.h, WideR).
SOFTDTW_TORCH_INTERLEAVED Interleaved<double> load_r(const double* run, int64_t t) { return load_interleaved(run + t); }
SOFTDTW_TORCH_INTERLEAVED WideR<Interleaved<float>> load_r(const WideRun<float>& run, int64_t t) {
  return {load_interleaved(run.hi + t), load_interleaved(run.lo + t)};
}
SOFTDTW_TORCH_INTERLEAVED void store_r(double* run, int64_t t, const Interleaved<double>& r) {
  store_interleaved(run + t, r);
}
SOFTDTW_TORCH_INTERLEAVED void store_r(const WideRun<float>& run, int64_t t, const WideR<Interleaved<float>>& r) {
  store_interleaved(run.hi + t, r.hi);
  store_interleaved(run.lo + t, r.lo);
}
#undef SOFTDTW_TORCH_INTERLEAVED

}  // namespace cpu

// R of interleaved float32 cells is a double-float of them, as R of float32 cells.
template <>
struct RRepresentation<cpu::Interleaved<float>> {
  using type = WideR<cpu::Interleaved<float>>;
};

namespace cpu {

// forward_cells' and forward_cells_with_weights' soft cells (γ > 0; tiles.h), a block at a time,
// count a multiple of the block (tiles.h's interleaved_prefix runs the rest with the other loops).
// Plain loops (a lambda would not be compiled for AVX-512), flattened: every call in them inlined,
// none compiled for another instruction set.
#define SOFTDTW_TORCH_INTERLEAVED_LOOP inline __attribute__((target("arch=x86-64-v4"), flatten))
template <typename T>
SOFTDTW_TORCH_INTERLEAVED_LOOP void forward_cells_interleaved(const T* __restrict cost, Run<RValue<T>> diag,
                                                              Run<RValue<T>> up, Run<RValue<T>> left,
                                                              Run<RValue<T>> out, int64_t count,
                                                              NaturalCellFunctions<T> f) {
  const NaturalCellFunctions<Interleaved<T>> cell{f.gamma, f.inv_gamma};
  constexpr int64_t kBlock = kInterleavedCells<T>;
  for (int64_t t = 0; t < count; t += kBlock) {
    store_r(out, t, cell_value(load_interleaved(cost + t), load_r(diag, t), load_r(up, t), load_r(left, t), cell));
  }
}
template <typename T>
SOFTDTW_TORCH_INTERLEAVED_LOOP void forward_cells_with_weights_interleaved(
    const T* __restrict cost, Run<RValue<T>> diag, Run<RValue<T>> up, Run<RValue<T>> left, Run<RValue<T>> out,
    T* __restrict w_diag, T* __restrict w_up, T* __restrict w_left, int64_t count, NaturalCellFunctions<T> f) {
  const NaturalCellFunctions<Interleaved<T>> cell{f.gamma, f.inv_gamma};
  constexpr int64_t kBlock = kInterleavedCells<T>;
  for (int64_t t = 0; t < count; t += kBlock) {
    const CellValueAndWeights<Interleaved<T>> s =
        cell_value_and_weights(load_interleaved(cost + t), load_r(diag, t), load_r(up, t), load_r(left, t), cell);
    store_r(out, t, s.value);
    store_interleaved(w_diag + t, s.w.diag);
    store_interleaved(w_up + t, s.w.up);
    store_interleaved(w_left + t, s.w.left);
  }
}
#undef SOFTDTW_TORCH_INTERLEAVED_LOOP

}  // namespace cpu
}  // namespace softdtw_torch

#else
#define SOFTDTW_TORCH_HAS_INTERLEAVED_VECTORS 0
#endif
