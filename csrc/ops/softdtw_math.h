// Cell math shared by the CPU and CUDA SoftDTW kernels (see ../shared/design/softdtw.md §1–2, §5).
//
// Indexing convention used by every kernel: cells are 0-based, (i, j) with 0 <= i < n, 0 <= j < m.
// R(i, j) is the DP value of the design doc's R[i+1, j+1]; the virtual border is
// R(-1, -1) = 0 and R(-1, j) = R(i, -1) = +inf.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define SDTW_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define SDTW_HOST_DEVICE inline
#endif

namespace softdtw_torch {

template <typename T>
SDTW_HOST_DEVICE T positive_infinity() {
  return static_cast<T>(INFINITY);
}

// Overloads that pick the float or double function on host and device alike.
SDTW_HOST_DEVICE float exp_(float x) { return expf(x); }
SDTW_HOST_DEVICE double exp_(double x) { return exp(x); }
SDTW_HOST_DEVICE float log1p_(float x) { return log1pf(x); }
SDTW_HOST_DEVICE double log1p_(double x) { return log1p(x); }

// A cell is unreachable when every path to it is blocked (band, +inf cost): R = +inf.
template <typename T>
SDTW_HOST_DEVICE bool is_reachable(T r) {
  return r < positive_infinity<T>();
}

// softmin_γ(a, b, c) = m − γ·log Σ exp(−(v − m)/γ), m = min(a, b, c).
// The min term contributes exactly exp(0) = 1, so only two exp and one log1p are needed;
// log1p keeps full precision when the other two terms are tiny (small γ).
template <typename T>
SDTW_HOST_DEVICE T softmin3(T a, T b, T c, T gamma, T inv_gamma) {
  T lo, u, v;
  if (a <= b && a <= c) {
    lo = a; u = b; v = c;
  } else if (b <= c) {
    lo = b; u = a; v = c;
  } else {
    lo = c; u = a; v = b;
  }
  if (!is_reachable(lo)) return positive_infinity<T>();  // never form inf − inf
  const T rest = exp_((lo - u) * inv_gamma) + exp_((lo - v) * inv_gamma);
  return lo - gamma * log1p_(rest);
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

template <typename T>
SDTW_HOST_DEVICE PredecessorWeights<T> predecessor_weights(T r_diag, T r_up, T r_left, T inv_gamma) {
  T lo = r_diag < r_up ? r_diag : r_up;
  lo = r_left < lo ? r_left : lo;
  if (!is_reachable(lo)) return {T(0), T(0), T(0)};
  const T e_diag = exp_((lo - r_diag) * inv_gamma);  // exp(0) = 1 for the minimum, 0 for +inf
  const T e_up = exp_((lo - r_up) * inv_gamma);
  const T e_left = exp_((lo - r_left) * inv_gamma);
  const T norm = T(1) / (e_diag + e_up + e_left);
  return {e_diag * norm, e_up * norm, e_left * norm};
}

// Sakoe–Chiba band with tslearn's rule for n != m (sakoe_chiba_mask): the band is widened by
// |n − m| so that (0, 0) → (n−1, m−1) stays reachable. For n <= m, row i allows columns
// [i − r, i + (m − n) + r]; for n > m, column j allows rows [j − r, j + (n − m) + r], i.e.
// row i allows columns [i − (n − m) − r, i + r]. radius < 0 means no band.
// Writes the inclusive column range of row i, clipped to [0, m − 1] (may be empty: lo > hi).
SDTW_HOST_DEVICE void band_columns(int64_t i, int64_t n, int64_t m, int64_t radius, int64_t* lo, int64_t* hi) {
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

SDTW_HOST_DEVICE bool in_band(int64_t i, int64_t j, int64_t n, int64_t m, int64_t radius) {
  int64_t lo, hi;
  band_columns(i, n, m, radius, &lo, &hi);
  return lo <= j && j <= hi;
}

// A cost the DP accepts: finite or +inf (a forbidden cell). NaN and −inf are rejected.
template <typename T>
SDTW_HOST_DEVICE bool is_valid_cost(T d) {
  return d == d && d > -positive_infinity<T>();
}

}  // namespace softdtw_torch
