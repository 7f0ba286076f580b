// Cell math shared by the CPU and CUDA SoftDTW kernels (see docs/design/softdtw.md §1–2, §5).
//
// Indexing convention used by every kernel: cells are 0-based, (i, j) with 0 <= i < n, 0 <= j < m.
// R(i, j) is the DP value of the design doc's R[i+1, j+1]; the virtual border is
// R(-1, -1) = 0 and R(-1, j) = R(i, -1) = +inf.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../common/macros.h"
#include "../common/rounding.h"

namespace softdtw_torch {

template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T positive_infinity() {
  return static_cast<T>(INFINITY);
}

// `condition ? a : b` as a function, so that the soft cell math below is written once for one
// value and for the CPU's interleaved vectors (cpu/interleaved_vectors.h), which overload it for
// lane masks.
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T where(bool condition, T a, T b) {
  return condition ? a : b;
}

// exp and log1p for the cell math. On the GPU: the CUDA math library. On the CPU: the branch-free
// Cephes approximations below (measured against libm: expf 1.35 ulp, log1pf 2.1 ulp, exp 1.41 ulp,
// log1p 1.03 ulp), which the compiler vectorizes across the cells of an anti-diagonal; libm calls
// would keep those loops scalar. Integer/float conversions use bit tricks that need no AVX-512.
#if !SOFTDTW_TORCH_DEVICE_PATH
namespace cpu_math {

inline float bits_to_float(int32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline int32_t to_bits(float f) {
  int32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}
inline int32_t truncate_to_int(float f) { return static_cast<int32_t>(f); }
inline float int_to_float(int32_t i) { return static_cast<float>(i); }

// The float32 exp and log1p below, and the float64 ones further down, are templates over their
// values' type: float (double), or the CPU's interleaved vectors of them
// (cpu/interleaved_vectors.h), which run the same operations lane by lane.

// exp(x) = 2^n · exp(r), n = round(x / ln 2), |r| <= ln2 / 2. Arguments below −87.3 (−inf
// included) give 0: the kernels only use exp of non-positive differences, where such terms are
// negligible next to the exp(0) = 1 of the minimum.
template <typename Floats>
inline Floats expf(Floats x) {
  const float lowest = -87.3f;
  Floats xc = where(x < 88.3f, x, Floats(88.3f));  // NaN → 88.3 (its result is always discarded)
  xc = where(xc > lowest, xc, Floats(lowest));
  const Floats t = xc * 1.44269504088896341f;
  const Floats n = (t + 12582912.0f) - 12582912.0f;  // round to nearest (1.5·2^23 trick)
  Floats r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  Floats p(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const Floats y = p * bits_to_float((truncate_to_int(n) + 127) << 23);
  return where(x < lowest, Floats(0.0f), y);
}

// log1p(u) for u >= 0: log(v) of v = 1 + u by frexp and the Cephes polynomial, then the
// correction −((v − 1) − u)/v for the rounding of v, which keeps tiny u accurate.
template <typename Floats>
inline Floats log1pf(Floats u) {
  const Floats v = 1.0f + u;
  const auto bits = to_bits(v);
  Floats e = int_to_float(((bits >> 23) & 0xff) - 126);
  const Floats m = bits_to_float((bits & 0x007fffff) | 0x3f000000);  // v = m · 2^e, m in [0.5, 1)
  const auto small = m < 0.707106781186547524f;
  e = where(small, e - 1.0f, e);
  const Floats x = where(small, (m + m) - 1.0f, m - 1.0f);
  const Floats z = x * x;
  Floats y(7.0376836292e-2f);
  y = y * x - 1.1514610310e-1f;
  y = y * x + 1.1676998740e-1f;
  y = y * x - 1.2420140846e-1f;
  y = y * x + 1.4249322787e-1f;
  y = y * x - 1.6668057665e-1f;
  y = y * x + 2.0000714765e-1f;
  y = y * x - 2.4999993993e-1f;
  y = y * x + 3.3333331174e-1f;
  y = y * x * z;
  y = y + e * -2.12194440e-4f;
  y = y - 0.5f * z;
  const Floats log_v = (x + y) + e * 0.693359375f;
  return log_v - ((v - 1.0f) - u) / v;
}

inline double bits_to_double(int64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}
inline int64_t to_bits(double d) {
  int64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}

// exp(x) = 2^n · exp(r) with the Cephes Padé form exp(r) = 1 + 2r·P(r²)/(Q(r²) − r·P(r²)).
// Arguments below −708 (−inf included) give 0, as for expf.
template <typename Doubles>
inline Doubles exp(Doubles x) {
  const double lowest = -708.0;
  const double magic = 6755399441055744.0;  // 1.5·2^52: adding it rounds to an integer in the low bits
  Doubles xc = where(x < 708.0, x, Doubles(708.0));
  xc = where(xc > lowest, xc, Doubles(lowest));
  const Doubles shifted = xc * 1.4426950408889634073599 + magic;
  const Doubles n = shifted - magic;
  const auto n_int = to_bits(shifted) - to_bits(magic);
  Doubles r = xc - n * 6.93145751953125e-1;
  r = r - n * 1.42860682030941723212e-6;
  const Doubles rr = r * r;
  Doubles p(1.26177193074810590878e-4);
  p = p * rr + 3.02994407707441961300e-2;
  p = p * rr + 9.99999999999999999910e-1;
  p = p * r;
  Doubles q(3.00198505138664455042e-6);
  q = q * rr + 2.52448340349684104192e-3;
  q = q * rr + 2.27265548208155028766e-1;
  q = q * rr + 2.00000000000000000009e0;
  const Doubles y = (1.0 + 2.0 * (p / (q - p))) * bits_to_double((n_int + 1023) << 52);
  return where(x < lowest, Doubles(0.0), y);
}

// log1p(u) for u >= 0, as log1pf: frexp of v = 1 + u, the Cephes rational log, then the rounding
// correction −((v − 1) − u)/v.
template <typename Doubles>
inline Doubles log1p(Doubles u) {
  const double two52 = 4503599627370496.0;
  const Doubles v = 1.0 + u;
  const auto bits = to_bits(v);
  // The biased exponent as a double without an int64 → double conversion: 2^52 + e − 2^52.
  Doubles e = (bits_to_double(((bits >> 52) & 0x7ff) | to_bits(two52)) - two52) - 1022.0;
  const Doubles m = bits_to_double((bits & 0x000fffffffffffffLL) | 0x3fe0000000000000LL);  // [0.5, 1)
  const auto small = m < 0.70710678118654752440;
  e = where(small, e - 1.0, e);
  const Doubles x = where(small, (m + m) - 1.0, m - 1.0);
  const Doubles z = x * x;
  Doubles p(1.01875663804580931796e-4);
  p = p * x + 4.97494994976747001425e-1;
  p = p * x + 4.70579119878881725854e0;
  p = p * x + 1.44989225341610930846e1;
  p = p * x + 1.79368678507819816313e1;
  p = p * x + 7.70838733755885391666e0;
  Doubles q = x + 1.12873587189167450590e1;
  q = q * x + 4.52279145837532221105e1;
  q = q * x + 8.29875266912776603211e1;
  q = q * x + 7.11544750618563894466e1;
  q = q * x + 2.31251620126765340583e1;
  Doubles y = x * (z * p / q);
  y = y + e * -2.121944400546905827679e-4;
  y = y - 0.5 * z;
  const Doubles log_v = (x + y) + e * 0.693359375;
  return log_v - ((v - 1.0) - u) / v;
}

}  // namespace cpu_math
#endif

SOFTDTW_TORCH_HOST_DEVICE float exp_(float x) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return expf(x);
#else
  return cpu_math::expf(x);
#endif
}
SOFTDTW_TORCH_HOST_DEVICE double exp_(double x) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return exp(x);
#else
  return cpu_math::exp(x);
#endif
}
SOFTDTW_TORCH_HOST_DEVICE float log1p_(float x) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return log1pf(x);
#else
  return cpu_math::log1pf(x);
#endif
}
SOFTDTW_TORCH_HOST_DEVICE double log1p_(double x) {
#if SOFTDTW_TORCH_DEVICE_PATH
  return log1p(x);
#else
  return cpu_math::log1p(x);
#endif
}

template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T min_(T a, T b) { return where(b < a, b, a); }
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T max_(T a, T b) { return where(a < b, b, a); }

// A cell is unreachable when every path to it is blocked (band, +inf cost): R = +inf.
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE auto is_reachable(T r) {  // bool, or a lane mask
  return r < positive_infinity<T>();
}

// The three predecessor values in order, branch-free (min/max, so that it vectorizes).
template <typename T>
struct Sorted3 {
  T lo, mid, hi;
};

template <typename T>
SOFTDTW_TORCH_HOST_DEVICE Sorted3<T> sort3(T a, T b, T c) {
#if SOFTDTW_TORCH_DEVICE_PATH
  if constexpr (std::is_same_v<T, float>) {
    // fminf/fmaxf are one instruction each on the GPU (min_/max_: a comparison and a select);
    // they differ only for NaN, which R never holds (NaN costs are rejected).
    const float ab_lo = fminf(a, b), ab_hi = fmaxf(a, b);
    return {fminf(ab_lo, c), fmaxf(ab_lo, fminf(ab_hi, c)), fmaxf(ab_hi, c)};
  }
#endif
  return {min_(min_(a, b), c), max_(min_(a, b), min_(max_(a, b), c)), max_(max_(a, b), c)};
}

// The special functions of the cell math, as the cell math needs them:
//   term(Δ) = exp(Δ/γ) for Δ = lo − v <= 0 (0 for Δ = −inf), gamma_log1p(s) = γ·log1p(s) for
//   s in [0, 2], reciprocal(s) = 1/s for s in [1, 3]; kHardMin: the hard minimum of γ = 0
//   (HardCellFunctions, whose weights are the one-hot argmin, see weights_from_terms).
// This one uses the precise natural-base functions (the CPU kernels' vectorizable exp_/log1p_,
// CUDA's exp/log1p): the CPU kernels and the CUDA float64 kernels. The CUDA float32 kernels use
// base-2 special-function-unit versions (cuda/tiles.cuh, Base2CellFunctions).
template <typename T>
struct NaturalCellFunctions {
  T gamma, inv_gamma;
  static constexpr bool kHardMin = false;
  static NaturalCellFunctions for_gamma(double gamma) {
    const T g = static_cast<T>(gamma);
    return {g, T(1) / g};
  }
  SOFTDTW_TORCH_HOST_DEVICE T term(T delta) const { return exp_(delta * inv_gamma); }
  SOFTDTW_TORCH_HOST_DEVICE T gamma_log1p(T s) const { return gamma * log1p_(s); }
  SOFTDTW_TORCH_HOST_DEVICE T reciprocal(T s) const { return T(1) / s; }
};

// Hard DTW is γ = 0 (design doc §10): the same kernels with these cell functions, picked per call
// (CPU: the anti-diagonal loops' instance, cpu/tiles.h; CUDA: the tile kernels' kHard instance,
// cuda/tiles.cuh), the hard minimum
// as the γ → 0 limit of the soft one: softmin3 = lo exactly (γ·log1p = 0), the weights one-hot
// (weights_from_terms), their tangents −(1/γ)·w·(Ṙ(p) − Σ w·Ṙ) replaced by 0 (the argmin is
// locally constant). The exponentials and the logarithm of the soft cells are not evaluated.
template <typename T>
struct HardCellFunctions {
  T inv_gamma = T(0);  // the weights' tangents: 0
  static constexpr bool kHardMin = true;
  SOFTDTW_TORCH_HOST_DEVICE T term(T delta) const { return delta == T(0) ? T(1) : T(0); }
  SOFTDTW_TORCH_HOST_DEVICE T gamma_log1p(T) const { return T(0); }
  SOFTDTW_TORCH_HOST_DEVICE T reciprocal(T s) const { return T(1) / s; }
};

// softmin_γ(a, b, c) = lo − γ·log Σ exp(−(v − lo)/γ), lo = min(a, b, c). The minimum contributes
// exactly exp(0) = 1, so two exp and one log1p suffice; log1p keeps full precision when the
// other terms are tiny (small γ). Branch-free (min/max and selects) so that it vectorizes.
template <typename T, typename Functions>
SOFTDTW_TORCH_HOST_DEVICE T softmin3(T a, T b, T c, const Functions& f) {
  const Sorted3<T> v = sort3(a, b, c);
  const T rest = f.term(v.lo - v.mid) + f.term(v.lo - v.hi);
  const T value = v.lo - f.gamma_log1p(rest);
  return where(is_reachable(v.lo), value, positive_infinity<T>());  // all +inf: unreachable, never inf − inf
}

// Normalized soft-argmin weights of one cell over its three predecessors (form (c) of the
// design doc): w_q = exp(−(R_q − m)/γ) / Σ exp(−(R_p − m)/γ). They sum to 1 exactly as
// computed from the stored R, so float32 rounding stays additive instead of compounding.
// An unreachable cell (all predecessors +inf) gets all-zero weights, never NaN.
template <typename T>
struct PredecessorWeights {
  T diag;  // towards (i−1, j−1)
  T up;    // towards (i−1, j)
  T left;  // towards (i, j−1)
};

// The weights from the sorted predecessors and their two exponentials e_mid = exp((lo − mid)/γ),
// e_hi = exp((lo − hi)/γ). The minimum's term is exp(0) = 1 exactly, and a value tied with mid (or
// lo) has the same term, so picking by value gives the bits of three exp calls.
// Hard DTW (γ = 0): the weight 1 goes to the first minimum in the order diagonal, up, left
// (tslearn's dtw_path tie rule), 0 to the others, so the reverse recursion follows exactly one
// path, the one tslearn's backtracking from (n − 1, m − 1) takes.
template <typename T, typename Functions>
SOFTDTW_TORCH_HOST_DEVICE PredecessorWeights<T> weights_from_terms(T r_diag, T r_up, T r_left, const Sorted3<T>& v,
                                                                   T e_mid, T e_hi, const Functions& f) {
  if constexpr (Functions::kHardMin) {
    const bool diag_min = r_diag == v.lo, up_min = r_up == v.lo;
    const T w_diag = diag_min ? T(1) : T(0), w_up = !diag_min && up_min ? T(1) : T(0);
    const T w_left = !diag_min && !up_min ? T(1) : T(0);
    const bool reachable = is_reachable(v.lo);
    return {reachable ? w_diag : T(0), reachable ? w_up : T(0), reachable ? w_left : T(0)};
  } else {
    const T e_diag = where(r_diag == v.lo, T(1), where(r_diag == v.mid, e_mid, e_hi));
    const T e_up = where(r_up == v.lo, T(1), where(r_up == v.mid, e_mid, e_hi));
    const T e_left = where(r_left == v.lo, T(1), where(r_left == v.mid, e_mid, e_hi));
    const T norm = f.reciprocal(e_diag + e_up + e_left);
    const auto reachable = is_reachable(v.lo);
    return {where(reachable, e_diag * norm, T(0)), where(reachable, e_up * norm, T(0)),
            where(reachable, e_left * norm, T(0))};
  }
}

template <typename T, typename Functions>
SOFTDTW_TORCH_HOST_DEVICE PredecessorWeights<T> predecessor_weights(T r_diag, T r_up, T r_left, const Functions& f) {
  // Two exp per cell, as in softmin3.
  const Sorted3<T> v = sort3(r_diag, r_up, r_left);
  return weights_from_terms(r_diag, r_up, r_left, v, f.term(v.lo - v.mid), f.term(v.lo - v.hi), f);
}

// Forward mode and second order (design doc §3, "Forward mode and second order"). A cell s's value
// moves with its predecessors' through its weights: Ṙ(s) = Ḋ(s) + Σ_p w_s(p)·Ṙ(p), and the weights
// move as a softmax of −R/γ does: ẇ_s(p) = −(w_s(p)/γ)·(Ṙ(p) − Σ_q w_s(q)·Ṙ(q)).

// softmin3 and the weights of the same cell from the same two exponentials (the forward-mode
// recursion needs both): `value` has exactly softmin3's bits and `w` exactly predecessor_weights'.
template <typename T>
struct SoftminAndWeights {
  T value;
  PredecessorWeights<T> w;
};

template <typename T, typename Functions>
SOFTDTW_TORCH_HOST_DEVICE SoftminAndWeights<T> softmin3_and_weights(T r_diag, T r_up, T r_left, const Functions& f) {
  const Sorted3<T> v = sort3(r_diag, r_up, r_left);
  const T e_mid = f.term(v.lo - v.mid);
  const T e_hi = f.term(v.lo - v.hi);
  const T value = v.lo - f.gamma_log1p(e_mid + e_hi);
  return {where(is_reachable(v.lo), value, positive_infinity<T>()),
          weights_from_terms(r_diag, r_up, r_left, v, e_mid, e_hi, f)};
}

// Σ_p w(p)·Ṙ(p): the weighted tangent of the predecessors (0 when the cell is unreachable, its
// weights being 0; unreachable predecessors carry Ṙ = 0, so no inf·0 arises).
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T weighted_tangent(const PredecessorWeights<T>& w, T t_diag, T t_up, T t_left) {
  return w.diag * t_diag + w.up * t_up + w.left * t_left;
}

// ẇ(p) = −(w(p)/γ)·(Ṙ(p) − Σ_q w(q)·Ṙ(q)) for the three predecessors, computed as
// −(w(p)/γ)·Σ_{q≠p} w(q)·(Ṙ(p) − Ṙ(q)) (Σ_q w(q) = 1): at a near-tie, w(p) ≈ 1 and Ṙ(p) − Σ w·Ṙ
// is a tiny difference of two large, nearly equal numbers, whose rounding (an ulp of Ṙ, and
// Σ w − 1 times Ṙ) the 1/γ would blow up; the small weights times differences of neighbours'
// Ṙ keep float32's relative precision (Hessian-vector products at γ = 0.001 on unit-scale data,
// against float64: 2.8e-4 of the largest entry in float32 the first way, 6e-7 this way).
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE PredecessorWeights<T> weight_tangents(const PredecessorWeights<T>& w, T t_diag, T t_up,
                                                                T t_left, T inv_gamma) {
  const T diag_up = t_diag - t_up, diag_left = t_diag - t_left, up_left = t_up - t_left;
  const T spread_diag = w.up * diag_up + w.left * diag_left;    // Ṙ(diag) − Σ w·Ṙ
  const T spread_up = w.left * up_left - w.diag * diag_up;      // Ṙ(up) − Σ w·Ṙ
  const T spread_left = -(w.diag * diag_left) - w.up * up_left;  // Ṙ(left) − Σ w·Ṙ
  return {-inv_gamma * w.diag * spread_diag, -inv_gamma * w.up * spread_up, -inv_gamma * w.left * spread_left};
}

// ---------------------------------------------------------------------------------------------
// R's representation (design doc §9, "float32 fidelity"). R sums costs along paths, so on
// unnormalised series R ≫ γ: float32's spacing at R = 4e4 is 0.004, and weights made of
// differences (R_p − R_q)/γ of such values would be rounding noise at γ = 0.001. The float32
// kernels therefore carry each R as an unevaluated sum hi + lo of two floats, hi the sum rounded
// to float (about 48 bits), updated by exact TwoSum additions; exp and log stay float32, applied
// to differences of R exact to float32's relative precision. The float64 kernels carry a double.
template <typename T>
struct WideR {
  T hi, lo;
};
template <typename T>
struct RRepresentation {
  using type = T;
};
template <>
struct RRepresentation<float> {
  using type = WideR<float>;
};
template <typename T>
using RValue = typename RRepresentation<T>::type;
template <typename T>
constexpr bool kWideR = !std::is_same_v<RValue<T>, T>;

// Runs of values as the kernels' loops read and write them: a plain pointer, or for a wide R two
// arrays, hi and lo (structure of arrays: the CPU loops vectorize, the GPU's shared memory keeps
// 4-byte banks). load and store move one value.
template <typename T>
struct WideRun {
  T* hi;
  T* lo;
  SOFTDTW_TORCH_HOST_DEVICE WideRun operator+(int64_t offset) const { return {hi + offset, lo + offset}; }
};
template <typename V>
struct RunOf {
  using type = V*;
};
template <typename T>
struct RunOf<WideR<T>> {
  using type = WideRun<T>;
};
template <typename V>
using Run = typename RunOf<V>::type;

template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T load(const T* run, int64_t i) {
  return run[i];
}
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE WideR<T> load(const WideRun<T>& run, int64_t i) {
  return {run.hi[i], run.lo[i]};
}
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE void store(T* run, int64_t i, T value) {
  run[i] = value;
}
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE void store(const WideRun<T>& run, int64_t i, WideR<T> value) {
  run.hi[i] = value.hi;
  run.lo[i] = value.lo;
}

// The scalar of a value type (T for RValue<T>), how many arrays of it a run needs, the run over
// arrays hi and lo (lo unused for one array), and a run's first array (the values, or the his).
template <typename V>
struct ScalarOf {
  using type = V;
};
template <typename T>
struct ScalarOf<WideR<T>> {
  using type = T;
};
template <typename V>
constexpr int kPlanes = std::is_same_v<V, typename ScalarOf<V>::type> ? 1 : 2;

template <typename V, typename T = typename ScalarOf<V>::type>
SOFTDTW_TORCH_HOST_DEVICE Run<V> run_over(T* hi, T* lo) {
  if constexpr (kPlanes<V> == 2) {
    return {hi, lo};
  } else {
    return hi;
  }
}
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T* hi_values(T* run) {
  return run;
}
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T* hi_values(const WideRun<T>& run) {
  return run.hi;
}

// R holding a value exact in T (the virtual border's 0 and +inf).
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE RValue<T> exact_r(T value) {
  if constexpr (kWideR<T>) {
    return {value, T(0)};
  } else {
    return value;
  }
}

// R rounded to the compute dtype (the values the ops return).
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE T rounded(T r) {
  return r;
}
SOFTDTW_TORCH_HOST_DEVICE float rounded(WideR<float> r) { return r.hi; }

template <typename T>
SOFTDTW_TORCH_HOST_DEVICE auto is_reachable(WideR<T> r) {
  return is_reachable(r.hi);
}

// a + b = s + e exactly with s = fl(a + b) (Knuth's TwoSum: any magnitudes, no branch; exact as
// long as the compiler neither reassociates nor contracts, which no build flag of ours allows).
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE WideR<T> two_sum(T a, T b) {
  const T s = a + b;
  const T b_part = s - a;
  return {s, (a - (s - b_part)) + (b - b_part)};
}

// a + b = s + e with s = fl(a + b), exactly when |a| >= |b| (Dekker's Fast2Sum: three operations
// instead of six).
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE WideR<T> fast_two_sum(T a, T b) {
  const T s = a + b;
  return {s, b - (s - a)};
}

// Three wide predecessors as base + offset_p, base the smallest hi, a reference point near them:
// the offsets are small next to R and exact to a rounding or two of themselves (hi_p − base is
// exact for values within a factor 2 of each other), so the plain cell math, run on the offsets,
// sees their differences at float32's relative precision. Unreachable predecessors (hi = +inf,
// lo = 0) have offset +inf; when all three are, base is +inf and the offsets NaN, which the cell
// math reads as unreachable.
template <typename T>
struct WideOffsets {
  T base, diag, up, left;
};

template <typename T>
SOFTDTW_TORCH_HOST_DEVICE WideOffsets<T> offsets_from_min(WideR<T> r_diag, WideR<T> r_up, WideR<T> r_left) {
  const T base = min_(min_(r_diag.hi, r_up.hi), r_left.hi);
  return {base, (r_diag.hi - base) + r_diag.lo, (r_up.hi - base) + r_up.lo, (r_left.hi - base) + r_left.lo};
}

// base + cost + rest (rest: the softmin of the offsets) as a normalized hi + lo, +inf (lo 0)
// where that is +inf or NaN (an unreachable cell, a +inf cost). base + cost needs TwoSum (a cost
// can outweigh R); the small tail then goes in by Fast2Sum, inexact only where the tail outweighs
// R, i.e. where |R| is of the order of γ and float32 alone is precise enough.
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE WideR<T> wide_cell_sum(T base, T cost, T rest) {
  const WideR<T> head = two_sum(base, cost);
  const WideR<T> r = fast_two_sum(head.hi, head.lo + rest);
  const auto reachable = is_reachable(r.hi);
  return {where(reachable, r.hi, positive_infinity<T>()), where(reachable, r.lo, T(0))};
}

// R of a cell: its cost plus the softmin of its predecessors.
template <typename T, typename Functions>
SOFTDTW_TORCH_HOST_DEVICE T cell_value(T cost, T r_diag, T r_up, T r_left, const Functions& f) {
  return cost + softmin3(r_diag, r_up, r_left, f);
}
template <typename T, typename Functions>
SOFTDTW_TORCH_HOST_DEVICE WideR<T> cell_value(T cost, WideR<T> r_diag, WideR<T> r_up, WideR<T> r_left,
                                              const Functions& f) {
  const WideOffsets<T> o = offsets_from_min(r_diag, r_up, r_left);
  return wide_cell_sum(o.base, cost, softmin3(o.diag, o.up, o.left, f));
}

template <typename Functions>
SOFTDTW_TORCH_HOST_DEVICE PredecessorWeights<float> predecessor_weights(WideR<float> r_diag, WideR<float> r_up,
                                                                        WideR<float> r_left, const Functions& f) {
  const WideOffsets<float> o = offsets_from_min(r_diag, r_up, r_left);
  return predecessor_weights(o.diag, o.up, o.left, f);
}

// cell_value and predecessor_weights of one cell from the same two exponentials (the forward-mode
// recursion needs both), with exactly their bits.
template <typename T>
struct CellValueAndWeights {
  RValue<T> value;
  PredecessorWeights<T> w;
};

template <typename T, typename Functions>
SOFTDTW_TORCH_HOST_DEVICE CellValueAndWeights<T> cell_value_and_weights(T cost, T r_diag, T r_up, T r_left,
                                                                        const Functions& f) {
  const SoftminAndWeights<T> s = softmin3_and_weights(r_diag, r_up, r_left, f);
  return {cost + s.value, {s.w.diag, s.w.up, s.w.left}};  // member-wise: a struct copy would keep GCC from vectorizing
}
template <typename T, typename Functions>
SOFTDTW_TORCH_HOST_DEVICE CellValueAndWeights<T> cell_value_and_weights(T cost, WideR<T> r_diag, WideR<T> r_up,
                                                                        WideR<T> r_left, const Functions& f) {
  const WideOffsets<T> o = offsets_from_min(r_diag, r_up, r_left);
  const SoftminAndWeights<T> s = softmin3_and_weights(o.diag, o.up, o.left, f);
  return {wide_cell_sum(o.base, cost, s.value), {s.w.diag, s.w.up, s.w.left}};
}

// Hard DTW's optimal path (γ = 0) from a pair's DP table: from (n − 1, m − 1) back to (0, 0), each
// step to the predecessor whose one-hot weight is 1 (weights_from_terms' tie rule, tslearn's), so
// the path is exactly the cells where the reverse recursion gives E = 1. r_at(i, j) reads R, the
// virtual border included (R(−1, −1) = 0, +inf elsewhere). Writes the path in order as (i, j) pairs,
// path[2k] = i and path[2k + 1] = j (at most n + m − 1 of them), and returns its length: 0 when the
// end is unreachable (every path blocked), and then writes nothing.
template <typename T, typename TableAt>
SOFTDTW_TORCH_HOST_DEVICE int64_t hard_path(int64_t n, int64_t m, const TableAt& r_at, int64_t* path) {
  const HardCellFunctions<T> hard{};
  int64_t i = n - 1, j = m - 1, length = 0;
  while (true) {
    // A reachable cell has a reachable predecessor, so this holds all the way unless the end
    // itself is unreachable; checked at every step so that no table can make the walk leave it.
    if (i < 0 || j < 0 || !is_reachable(r_at(i, j))) return 0;
    path[2 * length] = i;
    path[2 * length + 1] = j;
    ++length;
    if (i == 0 && j == 0) break;
    const PredecessorWeights<T> w = predecessor_weights(r_at(i - 1, j - 1), r_at(i - 1, j), r_at(i, j - 1), hard);
    if (w.diag != T(0)) {
      --i;
      --j;
    } else if (w.up != T(0)) {
      --i;
    } else {
      --j;
    }
  }
  for (int64_t a = 0, b = length - 1; a < b; ++a, --b) {  // walked backwards: reverse
    for (int c = 0; c < 2; ++c) {
      const int64_t v = path[2 * a + c];
      path[2 * a + c] = path[2 * b + c];
      path[2 * b + c] = v;
    }
  }
  return length;
}

// ---------------------------------------------------------------------------------------------
// Windows: the cells a pair's warping paths may visit (docs/design/softdtw.md §11), a Sakoe–Chiba
// band, an Itakura parallelogram, both (their intersection) or neither. Every row's admissible
// columns form one interval, and so do every column's rows and every anti-diagonal's rows: the
// CPU kernels ask for a row's columns or a diagonal's rows (cpu/tiles.h, WindowRows), the CUDA
// kernels for a column's rows (cuda/tiles.cuh, column_window).

// Sakoe–Chiba band with tslearn's rule for n != m (sakoe_chiba_mask): the band is widened by
// |n − m| so that (0, 0) → (n−1, m−1) stays reachable. For n <= m, row i allows columns
// [i − r, i + (m − n) + r]; for n > m, column j allows rows [j − r, j + (n − m) + r], i.e.
// row i allows columns [i − (n − m) − r, i + r]. radius < 0 means no band.
// Writes the inclusive column range of row i, clipped to [0, m − 1] (may be empty: lo > hi).
SOFTDTW_TORCH_HOST_DEVICE void band_columns(int64_t i, int64_t n, int64_t m, int64_t radius, int64_t* lo, int64_t* hi) {
  int64_t first = 0, last = m - 1;
  if (radius >= 0) {
    if (n <= m) {
      first = i - radius;
      last = i + (m - n) + radius;
    } else {
      first = i - (n - m) - radius;
      last = i + radius;
    }
    first = first < 0 ? 0 : first;
    last = last > m - 1 ? m - 1 : last;
  }
  *lo = first;
  *hi = last;
}

// band_columns along anti-diagonal k (cells (i, k − i)): its rows inside the band, [*lo, *hi], not
// clipped to the matrix (may be empty: lo > hi). Row i allows column k − i when
//   n <= m: i − r <= k − i <= i + (m − n) + r, i.e. k − (m − n) − r <= 2i <= k + r;
//   n > m:  i − (n − m) − r <= k − i <= i + r, i.e. k − r <= 2i <= k + (n − m) + r.
SOFTDTW_TORCH_HOST_DEVICE void band_rows_on_diagonal(int64_t k, int64_t n, int64_t m, int64_t radius, int64_t* lo,
                                                     int64_t* hi) {
  if (radius < 0) {
    *lo = 0;
    *hi = n - 1;
    return;
  }
  const int64_t twice_lo = n <= m ? k - (m - n) - radius : k - radius;
  const int64_t twice_hi = n <= m ? k + radius : k + (n - m) + radius;
  auto floor_half = [](int64_t v) { return v >= 0 ? v / 2 : -((1 - v) / 2); };
  *lo = -floor_half(-twice_lo);  // ceil(twice_lo / 2)
  *hi = floor_half(twice_hi);
}

// The Itakura parallelogram of an n × m pair with maximum slope s >= 1, exactly tslearn's
// itakura_mask: with a = (1/s)·(n/m) and b = s·(n/m), column j admits the rows
// [ceil(max(r(a·j), r(n − 1 − b·(m − 1) + b·j))), floor(min(r(b·j), r(n − 1 − a·(m − 1) + a·j)) + 1)),
// r() numpy's rounding to two decimals (rint(v·100)/100, halves to even), in tslearn's order of
// operations, each rounded on its own (common/rounding.h: at some lengths one fused multiply-add
// moves a bound by a cell). Both bounds are non-decreasing in j, which makes every row's columns
// and every anti-diagonal's rows an interval.
struct ItakuraParallelogram {
  int64_t n;
  double low_slope, high_slope, low_start, high_start;

  SOFTDTW_TORCH_HOST_DEVICE ItakuraParallelogram(int64_t n_, int64_t m, double max_slope) : n(n_) {
    const double ratio = static_cast<double>(n) / static_cast<double>(m);
    low_slope = rounded_product(1.0 / max_slope, ratio);
    high_slope = rounded_product(max_slope, ratio);
    low_start = static_cast<double>(n - 1) - rounded_product(high_slope, static_cast<double>(m - 1));
    high_start = static_cast<double>(n - 1) - rounded_product(low_slope, static_cast<double>(m - 1));
  }
  static SOFTDTW_TORCH_HOST_DEVICE double hundredths(double v) { return rint(rounded_product(v, 100.0)) / 100.0; }
  // A bound as a row index clamped to [0, n] (slopes near the double range may overflow to ±inf).
  SOFTDTW_TORCH_HOST_DEVICE int64_t clamped_row(double v) const {
    return v >= static_cast<double>(n) ? n : (v > 0.0 ? static_cast<int64_t>(v) : 0);
  }
  // The first admitted row of column j (n when none).
  SOFTDTW_TORCH_HOST_DEVICE int64_t first_row(int64_t j) const {
    const double jd = static_cast<double>(j);
    const double a = hundredths(rounded_product(low_slope, jd));
    const double b = hundredths(rounded_sum(low_start, rounded_product(high_slope, jd)));
    return clamped_row(ceil(b > a ? b : a));
  }
  // One past the last admitted row of column j (in [0, n]).
  SOFTDTW_TORCH_HOST_DEVICE int64_t end_row(int64_t j) const {
    const double jd = static_cast<double>(j);
    const double a = hundredths(rounded_product(high_slope, jd));
    const double b = hundredths(rounded_sum(high_start, rounded_product(low_slope, jd)));
    return clamped_row(floor((b < a ? b : a) + 1.0));
  }
};

// A pair's window: band radius (−1: none) and Itakura maximum slope (0: none).
struct Window {
  int64_t radius = -1;
  double itakura_slope = 0.0;
  SOFTDTW_TORCH_HOST_DEVICE bool has_itakura() const { return itakura_slope > 0.0; }
};

// A cost the DP accepts: finite or +inf (a forbidden cell). NaN and −inf are rejected.
template <typename T>
SOFTDTW_TORCH_HOST_DEVICE bool is_valid_cost(T d) {
  return d == d && d > -positive_infinity<T>();
}

}  // namespace softdtw_torch
