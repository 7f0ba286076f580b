// The CPU kernels' packed pairs (cpu/kernel.cpp's fused ops on short pairs): a pack of pairs with
// the same lengths runs its whole DP together, interleaved by lane, on the same cell loops as the
// tiles of tiles.h and with the same bits.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "../../common/macros.h"
#include "../constants.h"
#include "../math.h"
#include "../problem.h"
#include "tiles.h"

namespace softdtw_torch {
namespace cpu {

// Packed pairs (fused ops, batches of at least as many pairs as threads, pairs of up to
// kMaxPackedLength steps, or longer ones with few features, below): a pack of P consecutive pairs
// with the same lengths runs its whole DP together, one anti-diagonal of the full n × m matrix at a
// time, with the pairs interleaved: element (slot s, lane p) of every diagonal array is at s·P + p.
// A diagonal's cells of all P pairs are then one contiguous run of count·P independent cells, so
// the same forward_diagonal / backward_diagonal loops fill whole vectors even where a diagonal is
// short (corners, short series), and the costs and the gradient sums run vectorized along it. Each
// cell is computed by exactly the same operations as in the tile path, and every row (column) of
// the gradient is summed in the same order (j, resp. i, descending), so both paths give the same
// bits: which one runs may depend on the thread count without breaking determinism.
constexpr int64_t kMaxPackLanes = 4;
// Longer pairs run in tiles (64 × 64, working set in L1), as do batches with fewer pairs than
// threads, except pairs of up to kMaxPackedLongLength steps with at most kMaxLongPackFeatures
// features. Measured on the Xeon VM of 2026-11-27 (fwd + bwd, 2 threads unless said), packs
// against tiles: d = 1, 2.2-2.6x faster from 1,024 to 8,192 steps (the tiles spend more per cell
// on their short diagonals and borders than a pack's diagonals cost in L2), also on one thread,
// and the same time at 16,384 and 32,768; 8 pairs of 1,024 steps: 1.9x at d = 8, 1.3x at 16, but
// 0.93x at 32 and 0.34x at 128 (a pack's costs and gradient sums stream d planes of (n + m)·P
// values per diagonal, a tile reads its 64 rows of x and y from L1); 2 pairs of 4,096 steps:
// 1.25x at d = 16, 0.97x at 32. After the tiles' backward prefetch (TableDiagonals::step) packs
// still won at d = 16: 75-76 ms against 86-90, and 312-313 against 334-344.
using softdtw::kMaxPackedLength;  // constants.h: the memory planner reads it too
constexpr int64_t kMaxPackedLongLength = 16384;
constexpr int64_t kMaxLongPackFeatures = 16;

// A pack: pairs [begin, end), all n × m, and their window.
struct Pack {
  int64_t begin, end, n, m;
  std::shared_ptr<const WindowRows> window;  // shared by the packs of one (n, m)
  int64_t lanes() const { return end - begin; }
};

// The pairs whose packs run at once: a pack of kMaxPackLanes pairs per thread.
inline int64_t pairs_held_in_packs(const SoftDTWProblem& p) {
  return std::min<int64_t>(p.batch, at::get_num_threads() * kMaxPackLanes);
}

// Splits the batch into packs of at most kMaxPackLanes pairs, a multiple of the thread count of
// them in near-equal sizes (so that every thread gets the same work), cut where the lengths
// change. Empty when packing does not apply (long pairs with many features, fewer pairs than
// threads; see kMaxPackedLength).
inline std::vector<Pack> make_packs(const SoftDTWProblem& p, int64_t features, const int64_t* x_lengths,
                             const int64_t* y_lengths) {
  std::vector<Pack> packs;
  const int64_t longest = std::max(p.n, p.m);
  const bool packed_length =
      longest <= kMaxPackedLength || (longest <= kMaxPackedLongLength && features <= kMaxLongPackFeatures);
  if (!packed_length || p.batch < at::get_num_threads()) return packs;
  const int64_t threads = at::get_num_threads();
  const int64_t count = threads * ceil_div(p.batch, threads * kMaxPackLanes);
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<const WindowRows>> windows;  // one per (n, m)
  for (int64_t q = 0; q < count; ++q) {
    const int64_t begin = q * p.batch / count, end = (q + 1) * p.batch / count;
    for (int64_t b = begin; b < end; ++b) {
      const int64_t n = x_lengths ? x_lengths[b] : p.n, m = y_lengths ? y_lengths[b] : p.m;
      if (b == begin || packs.back().n != n || packs.back().m != m) {
        std::shared_ptr<const WindowRows>& window = windows[{n, m}];
        if (!window) window = std::make_shared<const WindowRows>(p.window, n, m);
        packs.push_back({b, b + 1, n, m, window});
      } else {
        packs.back().end = b + 1;
      }
    }
  }
  return packs;
}

// Packs are shared out one at a time, the largest first (n·m·lanes; ties in batch order), so that
// ragged packs leave no thread idle at the end. Each pack writes only its own pairs' outputs.
template <typename PackFn>
void for_each_pack(const std::vector<Pack>& packs, const PackFn& body) {
  std::vector<int64_t> order(packs.size());
  std::iota(order.begin(), order.end(), int64_t(0));
  auto cells = [&](int64_t q) { return packs[q].n * packs[q].m * packs[q].lanes(); };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cells(a) > cells(b); });
  for_each_shared_item(static_cast<int64_t>(packs.size()), [&](int64_t q) { body(packs[order[q]]); });
}

// The pack's sequences interleaved by lane, one plane per feature: x as [k][i][lane] and y with
// its time axis reversed, [k][m − 1 − j][lane], so that along an anti-diagonal (i up, j down)
// both advance one slot per cell.
template <typename T>
struct PackedSequences {
  std::vector<T> x, y;
  int64_t n, m, d, P;
  // A null x_all or y_all (a zero tangent) packs as zeros.
  PackedSequences(const Pack& pk, const T* x_all, const T* y_all, int64_t x_stride, int64_t y_stride, int64_t d)
      : x(pk.n * d * pk.lanes(), T(0)), y(pk.m * d * pk.lanes(), T(0)), n(pk.n), m(pk.m), d(d), P(pk.lanes()) {
    for (int64_t p = 0; p < P; ++p) {
      for (int64_t k = 0; k < d; ++k) {
        if (x_all != nullptr) {
          const T* xb = x_all + (pk.begin + p) * x_stride;
          for (int64_t i = 0; i < n; ++i) x[(k * n + i) * P + p] = xb[i * d + k];
        }
        if (y_all != nullptr) {
          const T* yb = y_all + (pk.begin + p) * y_stride;
          for (int64_t j = 0; j < m; ++j) y[(k * m + (m - 1 - j)) * P + p] = yb[j * d + k];
        }
      }
    }
  }
  // First element of cell (r, k − r) of diagonal k in feature plane 0 of x and of reversed y.
  const T* x_at(int64_t r) const { return x.data() + r * P; }
  const T* y_at(int64_t k, int64_t r) const { return y.data() + (r + m - 1 - k) * P; }
};

// out[t] = Σ_k (x[k·plane_x + t] − y[k·plane_y + t])², summed over k in order as in
// SquaredEuclideanTile.
template <typename T>
SOFTDTW_TORCH_CPU_CLONES void squared_euclidean_run(const T* __restrict x, const T* __restrict y, int64_t d, int64_t plane_x,
                                           int64_t plane_y, T* __restrict out, int64_t count) {
  for (int64_t t = 0; t < count; ++t) out[t] = T(0);
  for (int64_t k = 0; k < d; ++k) {
    const T* xk = x + k * plane_x;
    const T* yk = y + k * plane_y;
    for (int64_t t = 0; t < count; ++t) {
      const T diff = xk[t] - yk[t];
      out[t] += diff * diff;
    }
  }
}

// One diagonal run of a pack's reverse sweep, for the gradient sums: where its E values sit in
// a block's buffer, and where its cells start in x and acc_x (r_lo·P) and in reversed y and acc_y
// ((r_lo + m − 1 − k)·P, as PackedSequences::y_at), count values.
struct GradientRun {
  int64_t e_offset, x_offset, y_offset, count;
};

// out[t] = E[t] >= 0 as a double, with no floating-point operation on a subnormal float
// (float32_exact::widen, cpu/tiles.h): on x86 each vector instruction that meets one takes a
// microcode assist (a float32 multiply 7-16x slower on the Xeon VM), and a float32 E has subnormal
// values in a few percent of the cells.
template <typename T>
SOFTDTW_TORCH_CPU_CLONES void widen_run(const T* __restrict in, double* __restrict out, int64_t count) {
  if constexpr (std::is_same_v<T, float>) {
    SOFTDTW_TORCH_IVDEP
    for (int64_t t = 0; t < count; ++t) out[t] = cpu::float32_exact::widen(in[t]);
  } else {
    for (int64_t t = 0; t < count; ++t) out[t] = static_cast<double>(in[t]);
  }
}

// Σ_j E_ij (x_i − y_j) into acc_x and Σ_i E_ij (y_j − x_i) into acc_y for a block of diagonal runs,
// feature plane by feature plane (same operations as the tile path's emit; E = 0 adds nothing
// there, so it adds nothing here). Every sum gets the same terms in the same order (the runs'
// order, then the blocks') as adding each run over all planes before the next: the planes only
// change which sums are hot in cache (a plane of acc_x and acc_y stays in L1 across the block).
template <typename T>
SOFTDTW_TORCH_CPU_CLONES void gradient_block(const double* __restrict E, const GradientRun* runs, int64_t run_count,
                                             const T* __restrict x, const T* __restrict y, int64_t d,
                                             int64_t plane_x, int64_t plane_y, double* __restrict acc_x,
                                             double* __restrict acc_y) {
  for (int64_t k = 0; k < d; ++k) {
    for (int64_t q = 0; q < run_count; ++q) {
      const GradientRun& r = runs[q];
      const double* e = E + r.e_offset;  // E widened (widen_run)
      const T* xk = x + k * plane_x + r.x_offset;
      const T* yk = y + k * plane_y + r.y_offset;
      double* ax = acc_x + k * plane_x + r.x_offset;
      double* ay = acc_y + k * plane_y + r.y_offset;
      for (int64_t t = 0; t < r.count; ++t) {
        const double flow = e[t] == 0.0 ? 0.0 : e[t] * (xk[t] - yk[t]);
        ax[t] += flow;
        ay[t] -= flow;
      }
    }
  }
}

// The gradient sums of a pack's reverse sweep, added by blocks of kBlock diagonals (their E runs
// copied here, as the sweep's flow buffers rotate). Run by run, each diagonal would sweep all d
// planes of acc_x and acc_y ((n + m)·P·d doubles: 1 MiB at d = 64, beyond L2) once per diagonal.
template <typename T>
class DeferredGradients {
 public:
  static constexpr int64_t kBlock = 16;
  DeferredGradients(const PackedSequences<T>& s, double* acc_x, double* acc_y) : s_(s), acc_x_(acc_x), acc_y_(acc_y) {}
  // The run of diagonal k from row r_lo: count values of E (cells × lanes).
  void add(int64_t k, int64_t r_lo, const T* E, int64_t count) {
    const int64_t P = s_.P;
    const int64_t offset = static_cast<int64_t>(E_.size());
    runs_.push_back({offset, r_lo * P, (r_lo + s_.m - 1 - k) * P, count});
    E_.resize(offset + count);
    widen_run(E, E_.data() + offset, count);
    if (static_cast<int64_t>(runs_.size()) == kBlock) flush();
  }
  void flush() {
    if (runs_.empty()) return;
    gradient_block(E_.data(), runs_.data(), static_cast<int64_t>(runs_.size()), s_.x.data(), s_.y.data(), s_.d,
                   s_.n * s_.P, s_.m * s_.P, acc_x_, acc_y_);
    runs_.clear();
    E_.clear();
  }

 private:
  const PackedSequences<T>& s_;
  double* acc_x_;
  double* acc_y_;
  std::vector<GradientRun> runs_;
  std::vector<double> E_;  // the block's runs, widened once for all d planes
};

// out[t] = 2 Σ_k (x − y)(u − v) along one diagonal run: the tangents of the costs, as
// SquaredEuclideanTangentTile computes them (u, v: the packed tangents of x, y).
template <typename T>
SOFTDTW_TORCH_CPU_CLONES void squared_euclidean_tangent_run(const T* __restrict x, const T* __restrict y,
                                                   const T* __restrict u, const T* __restrict v, int64_t d,
                                                   int64_t plane_x, int64_t plane_y, T* __restrict out,
                                                   int64_t count) {
  for (int64_t t = 0; t < count; ++t) out[t] = T(0);
  for (int64_t k = 0; k < d; ++k) {
    const T* xk = x + k * plane_x;
    const T* yk = y + k * plane_y;
    const T* uk = u + k * plane_x;
    const T* vk = v + k * plane_y;
    for (int64_t t = 0; t < count; ++t) out[t] += (xk[t] - yk[t]) * (uk[t] - vk[t]);
  }
  for (int64_t t = 0; t < count; ++t) out[t] = T(2) * out[t];
}

// The Hessian term of the second-order sums along one diagonal run: Σ_j Ė_ij (x_i − y_j) +
// E_ij (u_i − v_j) into hess_x and its negative into hess_y, in float64 (as the tile path's emit).
template <typename T>
SOFTDTW_TORCH_CPU_CLONES void hessian_run(const T* __restrict E, const T* __restrict E_tangent, const T* __restrict x,
                                 const T* __restrict y, const T* __restrict u, const T* __restrict v, int64_t d,
                                 int64_t plane_x, int64_t plane_y, double* __restrict hess_x,
                                 double* __restrict hess_y, int64_t count) {
  for (int64_t k = 0; k < d; ++k) {
    const T *xk = x + k * plane_x, *yk = y + k * plane_y, *uk = u + k * plane_x, *vk = v + k * plane_y;
    double* hx = hess_x + k * plane_x;
    double* hy = hess_y + k * plane_y;
    for (int64_t t = 0; t < count; ++t) {
      const double h = static_cast<double>(E_tangent[t]) * static_cast<double>(xk[t] - yk[t]) +
                       static_cast<double>(E[t]) * static_cast<double>(uk[t] - vk[t]);
      hx[t] += h;
      hy[t] -= h;
    }
  }
}

// A pack's DP diagonals k = −2..n+m−2 of R (V = RValue<T>) or Ṙ (V = T), element (slot s, lane p)
// at diagonal(k)[s·P + p], slot r + 1 holding row r (slot 0: the border row −1). Either every
// diagonal is kept (compactly, only the slots [max(0, k − m + 2), min(n, k + 2)] that the forward
// writes and the backward reads), for a backward in the same call, or only the last three,
// starting as the DP's `border` value (R: +inf; Ṙ: 0), for the forward of the ops, which writes
// its table to R instead.
template <typename V>
class PackDiagonals {
 public:
  PackDiagonals(int64_t n, int64_t m, int64_t P, bool keep_all, V border)
      : n_(n), m_(m), P_(P), keep_all_(keep_all) {
    if (!keep_all) {
      data_.assign(3 * (n + 2) * P, border);
      return;
    }
    offsets_.resize(n + m + 1);
    int64_t size = 0;
    for (int64_t k = -2; k <= n + m - 2; ++k) {
      offsets_[k + 2] = size - first_slot(k) * P;  // >= 0: every diagonal before k holds a slot
      size += (std::min(n, k + 2) - first_slot(k) + 1) * P;
    }
    data_.resize(size);
  }
  Run<V> operator()(int64_t k) {
    return data_.at(keep_all_ ? offsets_[k + 2] : ((k + 2) % 3) * (n_ + 2) * P_);
  }

 private:
  int64_t first_slot(int64_t k) const { return std::max<int64_t>(0, k - m_ + 2); }
  int64_t n_, m_, P_;
  bool keep_all_;
  std::vector<int64_t> offsets_;
  RunVector<V> data_;
};

template <typename T>
PackDiagonals<RValue<T>> pack_diagonals_of_values(const Pack& pk, bool keep_all) {
  return {pk.n, pk.m, pk.lanes(), keep_all, exact_r(positive_infinity<T>())};
}
template <typename T>
PackDiagonals<T> pack_diagonals_of_tangents(const Pack& pk, bool keep_all) {
  return {pk.n, pk.m, pk.lanes(), keep_all, T(0)};
}

// The tangent channel of a pack (forward mode and second order): the packed tangents u, v of x, y
// (as the x and y of a PackedSequences), the pack's diagonals of Ṙ, and Ṙ(n − 1, m − 1) per lane.
template <typename T>
struct PackTangent {
  const PackedSequences<T>& uv;
  PackDiagonals<T>& diagonals;
  T* values;
};

// The weights each cell of a pack gives its predecessors, kept by the forward for a backward in the
// same call (backward_pack_from_weights), which then computes no exponential and reads no R.
// Diagonal k holds rows [max(0, k − m), min(n, k)] by slot r (row r at r·P): its cells and the
// zero-weight rows just outside the matrix (column m, row n) that the flows of diagonal k − 1 read.
// Zero where the forward computes no cell (outside the band). The storage is not zeroed when
// allocated (a pack of 16 pairs of 256 steps keeps 12.6 MB of weights): the forward writes every
// slot, its cells' weights and, through zero_outside, the zeros.
template <typename T>
class PackWeights {
 public:
  PackWeights(int64_t n, int64_t m, int64_t P) : n_(n), m_(m), P_(P), offsets_(n + m - 1) {
    for (int64_t k = 0; k <= n + m - 2; ++k) {
      offsets_[k] = plane_ - first_row(k) * P;  // >= 0: every diagonal before k holds a slot
      plane_ += (last_row(k) - first_row(k) + 1) * P;
    }
    data_.reset(new T[3 * plane_]);
  }
  T* diag(int64_t k) { return data_.get() + offsets_[k]; }
  T* up(int64_t k) { return data_.get() + plane_ + offsets_[k]; }
  T* left(int64_t k) { return data_.get() + 2 * plane_ + offsets_[k]; }
  // Zero weights in the rows of diagonal k outside the computed ones [r_lo, r_hi] (every row when
  // r_lo > r_hi), in the three planes.
  void zero_outside(int64_t k, int64_t r_lo, int64_t r_hi) {
    const int64_t lo = first_row(k), hi = last_row(k);
    for (T* plane : {diag(k), up(k), left(k)}) {
      if (r_lo > r_hi) {
        std::fill(plane + lo * P_, plane + (hi + 1) * P_, T(0));
      } else {  // lo <= r_lo and r_hi <= hi (pack_rows)
        std::fill(plane + lo * P_, plane + r_lo * P_, T(0));
        std::fill(plane + (r_hi + 1) * P_, plane + (hi + 1) * P_, T(0));
      }
    }
  }

 private:
  int64_t first_row(int64_t k) const { return std::max<int64_t>(0, k - m_); }
  int64_t last_row(int64_t k) const { return std::min(n_, k); }
  int64_t n_, m_, P_;
  std::vector<int64_t> offsets_;
  int64_t plane_ = 0;
  std::unique_ptr<T[]> data_;
};

// The rows of a pack's diagonal k: [first, last] inside the matrix, of which the loops compute
// [r_lo, r_hi], those inside the band (none on some diagonals of a narrow band). Outside the band
// the loops only store what the tile path computes there from its +inf costs: R = +inf (hi = +inf,
// lo = 0), Ṙ = 0, E = Ė = 0 and zero weights and weight tangents (which, E being 0 there, no
// message carries); gradient sums skip those cells, whose terms are E·(…) = 0. So both paths give
// the same bits.
struct PackRows {
  int64_t first, last, r_lo, r_hi;
  // Slots of the computed cells of P lanes (0 when none).
  int64_t run(int64_t P) const { return std::max<int64_t>(0, r_hi - r_lo + 1) * P; }
  // fill(from, to) for each non-empty run of rows outside the band.
  template <typename Fill>
  void for_each_outside(const Fill& fill) const {
    if (first <= std::min(last, r_lo - 1)) fill(first, std::min(last, r_lo - 1));
    if (std::max(first, r_hi + 1) <= last) fill(std::max(first, r_hi + 1), last);
  }
};
inline PackRows pack_rows(const Pack& pk, int64_t k) {
  int64_t band_lo, band_hi;
  pk.window->rows_on_diagonal(k, &band_lo, &band_hi);
  const int64_t first = std::max<int64_t>(0, k - pk.m + 1), last = std::min(pk.n - 1, k);
  return {first, last, std::max(first, band_lo), std::min(last, band_hi)};
}

// Forward of a pack into `diagonals`: R(n − 1, m − 1) of each lane to values[lane]; each lane's
// table (laid out by TableLayout, lane p's at tables + p·table_stride) filled too when `tables` is
// given. With a PackTangent, Ṙ beside R; with PackWeights (and no tangent), each cell's weights.
template <typename T>
void forward_pack(const Pack& pk, const PackedSequences<T>& s, T gamma, PackDiagonals<RValue<T>>& diagonals,
                  RValue<T>* tables, int64_t table_stride, T* values,
                  const PackTangent<T>* tangent = nullptr, PackWeights<T>* weights = nullptr) {
  const int64_t n = pk.n, m = pk.m, P = pk.lanes();
  const TableLayout layout({n, m, nullptr});
  const RValue<T> inf = exact_r(positive_infinity<T>());
  const auto f = NaturalCellFunctions<T>::for_gamma(gamma);
  std::vector<T> cost(n * P), tangent_cost(tangent != nullptr ? n * P : 0);
  fill(diagonals(-2), P, exact_r(T(0)));  // R(−1, −1) = 0
  fill(diagonals(-1), 2 * P, inf);        // R(−1, 0), R(0, −1)
  if (tangent != nullptr) {  // Ṙ's border is 0
    std::fill_n(tangent->diagonals(-2), P, T(0));
    std::fill_n(tangent->diagonals(-1), 2 * P, T(0));
  }
  for (int64_t k = 0; k < n + m - 1; ++k) {
    const PackRows rows = pack_rows(pk, k);
    const int64_t r_lo = rows.r_lo, run = rows.run(P);
    const Run<RValue<T>> older = diagonals(k - 2);
    const Run<RValue<T>> prev = diagonals(k - 1);
    const Run<RValue<T>> cur = diagonals(k);
    rows.for_each_outside([&](int64_t from, int64_t to) {  // slots r + 1: R = +inf, Ṙ = 0
      fill(cur + (from + 1) * P, (to - from + 1) * P, inf);
      if (tangent != nullptr) std::fill_n(tangent->diagonals(k) + (from + 1) * P, (to - from + 1) * P, T(0));
    });
    if (weights != nullptr) weights->zero_outside(k, r_lo, rows.r_hi);
    if (run > 0) {
      in_whole_blocks<T>(run, [&](int64_t first, int64_t cells) {
        squared_euclidean_run(s.x_at(r_lo) + first, s.y_at(k, r_lo) + first, s.d, n * P, m * P, cost.data() + first,
                              cells);
      });
      if (weights != nullptr) {
        forward_diagonal_with_weights(cost.data(), older + r_lo * P, prev + r_lo * P, prev + (r_lo + 1) * P,
                                      cur + (r_lo + 1) * P, weights->diag(k) + r_lo * P, weights->up(k) + r_lo * P,
                                      weights->left(k) + r_lo * P, run, f);
      } else if (tangent == nullptr) {
        forward_diagonal(cost.data(), older + r_lo * P, prev + r_lo * P, prev + (r_lo + 1) * P, cur + (r_lo + 1) * P,
                         run, f);
      } else {
        const PackedSequences<T>& uv = tangent->uv;
        squared_euclidean_tangent_run(s.x_at(r_lo), s.y_at(k, r_lo), uv.x_at(r_lo), uv.y_at(k, r_lo), s.d, n * P,
                                      m * P, tangent_cost.data(), run);
        const T* t_older = tangent->diagonals(k - 2);
        const T* t_prev = tangent->diagonals(k - 1);
        forward_tangent_diagonal(cost.data(), older + r_lo * P, prev + r_lo * P, prev + (r_lo + 1) * P,
                                 tangent_cost.data(), t_older + r_lo * P, t_prev + r_lo * P, t_prev + (r_lo + 1) * P,
                                 cur + (r_lo + 1) * P, tangent->diagonals(k) + (r_lo + 1) * P, run, f);
      }
    }
    if (tangent != nullptr) {
      T* t_cur = tangent->diagonals(k);
      if (k + 1 < m) std::fill_n(t_cur, P, T(0));
      if (k + 1 < n) std::fill_n(t_cur + (k + 2) * P, P, T(0));
    }
    if (k + 1 < m) fill(cur, P, inf);                // (−1, k + 1)
    if (k + 1 < n) fill(cur + (k + 2) * P, P, inf);  // (k + 1, −1)
    if (tables != nullptr) {
      const int64_t offset = layout.row_offset(k);  // cell (r, k − r) at offset + r
      for (int64_t p = 0; p < P; ++p) {
        RValue<T>* lane = tables + p * table_stride + offset;
        for (int64_t r = rows.first; r <= rows.last; ++r) lane[r] = load(cur, (r + 1) * P + p);
      }
    }
  }
  const Run<RValue<T>> end = diagonals(n + m - 2);
  for (int64_t p = 0; p < P; ++p) values[p] = rounded(load(end, n * P + p));
  if (tangent != nullptr) {
    const T* t_end = tangent->diagonals(n + m - 2);
    for (int64_t p = 0; p < P; ++p) tangent->values[p] = t_end[n * P + p];
  }
}

// Table diagonals of a pack gathered from its lanes' tables of R, as gather_table_diagonal does,
// into three rotating buffers: what backward_pack reads when the forward ran in another call.
template <typename T>
class GatheredDiagonals {
 public:
  GatheredDiagonals(const Pack& pk, const RValue<T>* tables, int64_t table_stride)
      : pk_(pk), tables_(tables), stride_(table_stride), layout_({pk.n, pk.m, nullptr}) {
    data_.assign(3 * (pk.n + 2) * pk.lanes(), exact_r(T(0)));
  }
  Run<RValue<T>> operator()(int64_t k) {
    const int64_t P = pk_.lanes();
    const Run<RValue<T>> out = data_.at(((k + 2) % 3) * (pk_.n + 2) * P);
    if (held_[(k + 2) % 3] == k) return out;
    held_[(k + 2) % 3] = k;
    const int64_t r_lo = std::max<int64_t>(-1, k - (pk_.m - 1)), r_hi = std::min(pk_.n - 1, k + 1);
    const RValue<T> origin = exact_r(T(0)), border = exact_r(positive_infinity<T>());
    const int64_t offset = k >= 0 ? layout_.row_offset(k) : 0;  // cell (i, k − i) at offset + i
    for (int64_t r = r_lo; r <= r_hi; ++r) {
      const int64_t i = r, j = k - r;
      for (int64_t p = 0; p < P; ++p) {
        store(out, (r + 1) * P + p,
              (i < 0 || j < 0) ? ((i < 0 && j < 0) ? origin : border) : tables_[p * stride_ + offset + i]);
      }
    }
    return out;
  }

 private:
  const Pack& pk_;
  const RValue<T>* tables_;
  int64_t stride_;
  TableLayout layout_;
  RunVector<RValue<T>> data_;
  int64_t held_[3] = {-3, -3, -3};
};

// The second order's part of a pack's reverse sweep: Ṙ's diagonals (from the forward with the
// tangent), the packed tangents u, v, and the Hessian sums it adds to (laid out as acc_x, acc_y).
template <typename T>
struct PackSecondOrder {
  PackDiagonals<T>& tangent_table;
  const PackedSequences<T>& uv;
  double* hess_x;
  double* hess_y;
};

// Rows [lo, hi] of a pack's flow diagonal outside which it holds only zeros (none when lo > hi).
struct FlowRows {
  int64_t lo = 1, hi = 0;
  bool empty() const { return lo > hi; }
  bool holds(int64_t r) const { return lo <= r && r <= hi; }
};

// The rows of E(r), r in `scan`, that hold a nonzero value in some lane (NaN counts as nonzero).
template <typename T>
FlowRows nonzero_rows(const T* E, int64_t P, FlowRows scan) {
  auto nonzero = [&](int64_t r) { return std::any_of(E + r * P, E + (r + 1) * P, [](T e) { return e != T(0); }); };
  while (!scan.empty() && !nonzero(scan.lo)) ++scan.lo;
  while (!scan.empty() && !nonzero(scan.hi)) --scan.hi;
  return scan;
}

// The rows of diagonal k (of `rows`' computed ones) whose E can be nonzero, from the nonzero rows
// of its successors on diagonals k + 1 and k + 2: cell (r, k − r)'s successors are rows r + 1 of
// k + 2, r + 1 and r of k + 1. Elsewhere E = 0·w + 0·w + 0·w = +0 (a weight is finite and >= 0),
// and the weights the cell gives its predecessors only ever multiply that 0.
inline FlowRows flow_candidates(const PackRows& rows, FlowRows next1, FlowRows next2) {
  FlowRows flow;
  if (!next2.empty()) flow = {next2.lo - 1, next2.hi - 1};
  if (!next1.empty()) {
    flow = flow.empty() ? FlowRows{next1.lo - 1, next1.hi}
                        : FlowRows{std::min(flow.lo, next1.lo - 1), std::max(flow.hi, next1.hi)};
  }
  if (flow.empty()) return flow;
  return {std::max(flow.lo, rows.r_lo), std::min(flow.hi, rows.r_hi)};
}

// The nonzero rows of a reverse sweep's three rotating E buffers: diagonals k + 2 and k + 1, and
// k + 3, whose values the buffer of diagonal k holds until clear_stale clears them.
struct SweepRows {
  FlowRows next2, next1, stale;
  // Zeros in the stale rows of diagonal k's buffer E (P values a row) that k does not compute.
  template <typename T>
  void clear_stale(T* E, int64_t P, FlowRows computed) const {
    for (int64_t r = stale.lo; r <= stale.hi; ++r) {
      if (!computed.holds(r)) std::fill_n(E + r * P, P, T(0));
    }
  }
  // After diagonal k, whose E is nonzero in rows `nonzero`: the buffers rotate.
  void rotate(FlowRows nonzero) {
    stale = next2;
    next2 = next1;
    next1 = nonzero;
  }
};

// Mirror of backward_tile over the whole matrix: flow diagonals by slot r (rows 0..n, row n and
// the column m right of the matrix being zero flow), table diagonals (from `table(k)`) by slot
// r + 1. Adds Σ_j E_ij (x_i − y_j) to acc_x ([k][i][lane]) and Σ_i E_ij (y_j − x_i) to acc_y
// ([k][m − 1 − j][lane]). With PackSecondOrder, Ė beside E and the Hessian sums (hessian_run).
// In first order each diagonal is computed only in flow_candidates' rows, next to its successors'
// nonzero E (about a quarter of bench_cpu's workload B's cells): elsewhere its E is +0, which its
// buffer holds (SweepRows), and its weights, which only ever multiply that 0, are left as the
// buffer held them (weights of an earlier diagonal: finite); the gradient sums skip rows whose E
// is 0, as backward_pack_from_weights'.
template <typename T, typename TableDiagonals>
void backward_pack(const Pack& pk, const PackedSequences<T>& s, T gamma, TableDiagonals& table, double* acc_x,
                   double* acc_y, const PackSecondOrder<T>* second = nullptr) {
  const int64_t n = pk.n, m = pk.m, P = pk.lanes(), slots = (n + 2) * P;
  const auto f = NaturalCellFunctions<T>::for_gamma(gamma);
  struct Flow {
    T *E, *w_diag, *w_up, *w_left;
  };
  const int channels = second != nullptr ? 2 : 1;  // E with its weights; Ė with their tangents
  std::vector<T> storage(channels * 3 * 4 * slots, T(0));
  Flow flows[2][3];
  for (int c = 0; c < channels; ++c) {
    for (int f = 0; f < 3; ++f) {
      T* base = storage.data() + (c * 3 + f) * 4 * slots;
      flows[c][f] = {base, base + slots, base + 2 * slots, base + 3 * slots};
    }
  }
  Flow* next2[2] = {&flows[0][0], &flows[1][0]};  // diagonal k + 2
  Flow* next1[2] = {&flows[0][1], &flows[1][1]};  // diagonal k + 1
  Flow* cur[2] = {&flows[0][2], &flows[1][2]};
  SweepRows sweep;  // first order
  DeferredGradients<T> gradients(s, acc_x, acc_y);
  const int64_t last = n + m - 2;
  for (int64_t k = last; k >= 0; --k) {
    const PackRows rows = pack_rows(pk, k);
    FlowRows computed{rows.r_lo, rows.r_hi};
    if (second == nullptr && k < last) {  // the last cell's weights are E = 1's
      computed = flow_candidates(rows, sweep.next1, sweep.next2);
      sweep.clear_stale(cur[0]->E, P, computed);
    }
    const int64_t r_lo = computed.lo, a = r_lo * P, run = computed.empty() ? 0 : (computed.hi - r_lo + 1) * P;
    const Run<RValue<T>> r_cur = table(k);
    const Run<RValue<T>> r_prev = table(k - 1);
    const Run<RValue<T>> r_older = table(k - 2);
    const Flow &n2 = *next2[0], &n1 = *next1[0], &c0 = *cur[0];
    rows.for_each_outside([&](int64_t from, int64_t to) {  // E, Ė, the weights and their tangents 0
      for (int c = 0; c < channels; ++c) {
        for (T* flow : {cur[c]->E, cur[c]->w_diag, cur[c]->w_up, cur[c]->w_left}) {
          std::fill_n(flow + from * P, (to - from + 1) * P, T(0));
        }
      }
    });
    if (run > 0) {  // (a narrow band leaves some diagonals without a cell)
      backward_diagonal(r_cur + a + P, r_older + a, r_prev + a, r_prev + a + P, n2.E + a + P, n2.w_diag + a + P,
                        n1.E + a + P, n1.w_up + a + P, n1.E + a, n1.w_left + a, c0.E + a, c0.w_diag + a, c0.w_up + a,
                        c0.w_left + a, run, f);
      if (second != nullptr) {
        const T* t_prev = second->tangent_table(k - 1);
        const T* t_older = second->tangent_table(k - 2);
        const Flow &t2 = *next2[1], &t1 = *next1[1], &c1 = *cur[1];
        backward_tangent_diagonal(r_cur + a + P, c0.w_diag + a, c0.w_up + a, c0.w_left + a, t_older + a, t_prev + a,
                                  t_prev + a + P, n2.E + a + P, n2.w_diag + a + P, t2.E + a + P, t2.w_diag + a + P,
                                  n1.E + a + P, n1.w_up + a + P, t1.E + a + P, t1.w_up + a + P, n1.E + a,
                                  n1.w_left + a, t1.E + a, t1.w_left + a, c1.E + a, c1.w_diag + a, c1.w_up + a,
                                  c1.w_left + a, run, f);
      }
    }
    if (k == last) {  // E(n−1, m−1) = 1 (and Ė = 0 there)
      for (int64_t p = 0; p < P; ++p) c0.E[(n - 1) * P + p] = is_reachable(load(r_cur, n * P + p)) ? T(1) : T(0);
      if (second != nullptr) std::fill_n(cur[1]->E + (n - 1) * P, P, T(0));
      computed = {n - 1, n - 1};
    }
    // Zero flow where later diagonals read outside the matrix: (n, k − n) below it, (k − m, m) right of it.
    for (int c = 0; c < channels; ++c) {
      for (T* f : {cur[c]->E, cur[c]->w_diag, cur[c]->w_up, cur[c]->w_left}) {
        std::fill_n(f + n * P, P, T(0));
        if (k - m >= 0) std::fill_n(f + (k - m) * P, P, T(0));
      }
    }
    if (second == nullptr) {
      const FlowRows nonzero = nonzero_rows(c0.E, P, computed);
      if (!nonzero.empty()) gradients.add(k, nonzero.lo, c0.E + nonzero.lo * P, (nonzero.hi - nonzero.lo + 1) * P);
      sweep.rotate(nonzero);
    } else if (run > 0) {
      gradients.add(k, r_lo, c0.E + a, run);
      hessian_run(c0.E + a, cur[1]->E + a, s.x_at(r_lo), s.y_at(k, r_lo), second->uv.x_at(r_lo),
                  second->uv.y_at(k, r_lo), s.d, n * P, m * P, second->hess_x + a,
                  second->hess_y + (r_lo + m - 1 - k) * P, run);
    }
    for (int c = 0; c < channels; ++c) {
      std::swap(next2[c], next1[c]);
      std::swap(next1[c], cur[c]);
    }
  }
  gradients.flush();
}

// backward_pack (first order) over the weights its forward kept: each diagonal's E from its
// successors' E and the weights they give it (flow_cells), with the same zeros and gradient sums,
// so the same bits, and no R read. end_values: each lane's value, whose reachability seeds E.
// E is zero in most cells away from the pairs' paths (about three quarters of them on bench_cpu's
// workload A), so each diagonal is computed only next to its successors' nonzero rows: elsewhere
// its E is 0·w + 0·w + 0·w = +0 (a weight is finite and >= 0), which the buffer holds already
// (each buffer is zero outside its diagonal's nonzero rows, SweepRows). The gradient sums skip the
// zero rows too: a term E·(x − y) with E = 0 is +0, which leaves a sum that is never −0 as it is.
template <typename T>
void backward_pack_from_weights(const Pack& pk, const PackedSequences<T>& s, PackWeights<T>& weights,
                                const T* end_values, double* acc_x, double* acc_y) {
  const int64_t n = pk.n, m = pk.m, P = pk.lanes(), slots = (n + 2) * P;
  std::vector<T> storage(4 * slots, T(0));  // E of diagonals k + 2, k + 1, k by slot r; zero weights
  T* next2 = storage.data();
  T* next1 = next2 + slots;
  T* cur = next1 + slots;
  const T* no_weights = cur + slots;  // for the diagonals past the last
  SweepRows sweep;
  DeferredGradients<T> gradients(s, acc_x, acc_y);
  const int64_t last = n + m - 2;
  for (int64_t k = last; k >= 0; --k) {
    // Rows outside the band, and those just outside the matrix that later diagonals read ((n, k − n)
    // below it, (k − m, m) right of it), are never computed: they hold zeros (SweepRows).
    const PackRows rows = pack_rows(pk, k);
    FlowRows flow = flow_candidates(rows, sweep.next1, sweep.next2);
    sweep.clear_stale(cur, P, flow);
    if (!flow.empty()) {
      const int64_t a = flow.lo * P, run = (flow.hi - flow.lo + 1) * P;
      const T* w_diag = k + 2 <= last ? weights.diag(k + 2) : no_weights;  // of the successors
      const T* w_up = k + 1 <= last ? weights.up(k + 1) : no_weights;
      const T* w_left = k + 1 <= last ? weights.left(k + 1) : no_weights;
      flow_diagonal(next2 + a + P, w_diag + a + P, next1 + a + P, w_up + a + P, next1 + a, w_left + a, cur + a, run);
    }
    if (k == last) {  // E(n−1, m−1) = 1
      for (int64_t p = 0; p < P; ++p) cur[(n - 1) * P + p] = is_reachable(end_values[p]) ? T(1) : T(0);
      flow = {n - 1, n - 1};
    }
    const FlowRows nonzero = nonzero_rows(cur, P, flow);
    if (!nonzero.empty()) gradients.add(k, nonzero.lo, cur + nonzero.lo * P, (nonzero.hi - nonzero.lo + 1) * P);
    sweep.rotate(nonzero);
    T* done = next2;
    next2 = next1;
    next1 = cur;
    cur = done;
  }
  gradients.flush();
}

// Per-lane results from a pack's sums into (B, N, d) and (B, M, d) outputs (out_y may be null):
// value(lane, of_y, index) reads the sums at `index` of their packed layout ([k][i][lane] for x,
// [k][m − 1 − j][lane] for y) and gives the output.
template <typename Out, typename Value>
void store_pack_rows(const Pack& pk, int64_t d, int64_t N, int64_t M, Out* out_x, Out* out_y, const Value& value) {
  const int64_t P = pk.lanes();
  for (int64_t q = 0; q < P; ++q) {
    const int64_t b = pk.begin + q;
    for (int64_t k = 0; k < d; ++k) {
      Out* ox = out_x + b * N * d;
      for (int64_t i = 0; i < pk.n; ++i) ox[i * d + k] = static_cast<Out>(value(q, false, (k * pk.n + i) * P + q));
      if (out_y == nullptr) continue;
      Out* oy = out_y + b * M * d;
      for (int64_t j = 0; j < pk.m; ++j) {
        oy[j * d + k] = static_cast<Out>(value(q, true, (k * pk.m + pk.m - 1 - j) * P + q));
      }
    }
  }
}

// ∂sdtw/∂x (and ∂sdtw/∂y) of each lane from backward_pack's sums, 2·scale[lane]·sum in float64
// rounded once to Out, into (B, N, d) (and (B, M, d)) outputs; grad_y may be null.
template <typename T, typename Out>
void store_pack_gradients(const Pack& pk, const PackedSequences<T>& s, const std::vector<double>& acc_x,
                          const std::vector<double>& acc_y, const T* scale, int64_t N, int64_t M, Out* grad_x,
                          Out* grad_y) {
  store_pack_rows(pk, s.d, N, M, grad_x, grad_y, [&](int64_t q, bool of_y, int64_t index) {
    return 2.0 * static_cast<double>(scale[pk.begin + q]) * (of_y ? acc_y : acc_x)[index];
  });
}

}  // namespace cpu
}  // namespace softdtw_torch
