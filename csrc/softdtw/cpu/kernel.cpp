// CPU kernels of the SoftDTW ops: forward DP and normalized-weight backward (design doc §1–3),
// on a precomputed cost tensor or with squared Euclidean costs computed per tile (fused).
//
// Every pair's DP runs over kTile × kTile tiles in anti-diagonal (wavefront) order: tile (I, J)
// needs the tiles above, left and above-left, so the tiles of one anti-diagonal are independent.
// The decomposition is fixed whatever the thread count, so every cell is computed by the same
// operations in the same order: results are bitwise identical with one thread or many. Pairs run
// in parallel when the batch has at least as many pairs as threads; otherwise the pairs run one
// after the other with the tiles of each anti-diagonal in parallel.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "../problem.h"
#include "../../common/macros.h"
#include "../math.h"

namespace softdtw_torch {
namespace {

constexpr int64_t kTile = 64;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// One pair: its own lengths (ragged batches) and band radius (-1: none).
struct PairGeometry {
  int64_t n, m, radius;
  int64_t tile_rows() const { return ceil_div(n, kTile); }
  int64_t tile_cols() const { return ceil_div(m, kTile); }
};

// Cells [i0, i0 + h) × [j0, j0 + w) of tile (I, J).
struct TileRange {
  int64_t i0, h, j0, w;
};

TileRange tile_range(const PairGeometry& g, int64_t I, int64_t J) {
  const int64_t i0 = I * kTile, j0 = J * kTile;
  return {i0, std::min(kTile, g.n - i0), j0, std::min(kTile, g.m - j0)};
}

PairGeometry pair_geometry(const SoftDTWProblem& p, const int64_t* x_lengths, const int64_t* y_lengths, int64_t b) {
  return {x_lengths ? x_lengths[b] : p.n, y_lengths ? y_lengths[b] : p.m, p.band_radius};
}

const int64_t* lengths_ptr(const at::Tensor& lengths) {
  return lengths.defined() ? lengths.data_ptr<int64_t>() : nullptr;
}

// Calls tile(I, J) for every tile, anti-diagonal by anti-diagonal (last to first when reverse).
template <typename TileFn>
void for_each_tile_in_wavefront(const PairGeometry& g, bool reverse, bool parallel, const TileFn& tile) {
  const int64_t rows = g.tile_rows(), cols = g.tile_cols();
  const int64_t diagonals = rows + cols - 1;
  for (int64_t k = 0; k < diagonals; ++k) {
    const int64_t diag = reverse ? diagonals - 1 - k : k;
    const int64_t first_row = std::max<int64_t>(0, diag - (cols - 1));
    const int64_t count = std::min(rows - 1, diag) - first_row + 1;
    auto run = [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) tile(first_row + t, diag - first_row - t);
    };
    if (parallel && count > 1) {
      at::parallel_for(0, count, 1, run);
    } else {
      run(0, count);
    }
  }
}

// Runs body(b, parallel_tiles) for every pair b (see the file comment).
template <typename PairFn>
void for_each_pair(int64_t batch, const PairFn& body) {
  if (batch >= at::get_num_threads()) {
    at::parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) body(b, false);
    });
  } else {
    for (int64_t b = 0; b < batch; ++b) body(b, true);
  }
}

// ---------------------------------------------------------------------------------------------
// Forward: R(i, j) = D(i, j) + softmin_γ(R(i−1, j−1), R(i−1, j), R(i, j−1)).
//
// Inside a tile the cells are computed anti-diagonal by anti-diagonal, k = r + c (tile-local
// row r and column c): the cells of one anti-diagonal are independent, so its loop vectorizes.
// A diagonal lives in an array indexed by slot r + 1; slot 0 (r = −1) and slot k + 2 (c = −1)
// carry the border cells of the row above and the column left of the tile.

// R values crossing tile borders: for each column the last row computed above it, for each row
// the last column computed left of it, and per tile row the corner R(i0 − 1, j0 − 1) of its
// next tile (saved before the row above is overwritten). Tiles of one anti-diagonal touch
// disjoint parts of these arrays.
template <typename T>
struct ForwardBorders {
  std::vector<T> row, col, corner;
  explicit ForwardBorders(const PairGeometry& g)
      : row(g.m, positive_infinity<T>()), col(g.n, positive_infinity<T>()),
        corner(g.tile_rows(), positive_infinity<T>()) {
    corner[0] = T(0);  // R(−1, −1) = 0
  }
};

// One anti-diagonal: out[t] = cost[t] + softmin(diag[t], up[t], left[t]). Compiled for AVX2 and
// for the baseline ISA, picked at run time; no FMA contraction (-ffp-contract=off) and the same
// per-lane operations either way, so both give the same bits.
template <typename T>
SOFTDTW_TORCH_CPU_CLONES void forward_diagonal(const T* __restrict cost, const T* __restrict diag, const T* __restrict up,
                                      const T* __restrict left, T* __restrict out, int64_t count, T gamma,
                                      T inv_gamma) {
  for (int64_t t = 0; t < count; ++t) out[t] = cost[t] + softmin3(diag[t], up[t], left[t], gamma, inv_gamma);
}

// The tile's costs by anti-diagonal, out[k * kTile + r] = cost(i0 + r, j0 + k − r). Cells outside
// the band get +inf, so the DP needs no band test; NaN or −inf inside the band is reported.
template <typename T, typename TileCosts>
bool costs_by_diagonal(const PairGeometry& g, const TileRange& t, const TileCosts& costs, T* out) {
  T scratch[kTile * kTile];
  int64_t stride = 0;
  const T* tile_costs = costs(t, scratch, &stride);
  bool invalid = false;
  for (int64_t r = 0; r < t.h; ++r) {
    int64_t lo, hi;
    band_columns(t.i0 + r, g.n, g.m, g.radius, &lo, &hi);
    for (int64_t c = 0; c < t.w; ++c) {
      const int64_t j = t.j0 + c;
      T d = tile_costs[r * stride + c];
      if (j < lo || j > hi) {
        d = positive_infinity<T>();
      } else {
        invalid |= !is_valid_cost(d);
      }
      out[(r + c) * kTile + r] = d;
    }
  }
  return invalid;
}

template <typename T, typename TileCosts>
void forward_tile(const PairGeometry& g, const TileRange& t, int64_t I, T gamma, T inv_gamma,
                  const TileCosts& costs, ForwardBorders<T>& borders, T* table, int64_t table_ld,
                  uint8_t* invalid) {
  T cost_diagonals[(2 * kTile - 1) * kTile];
  if (costs_by_diagonal(g, t, costs, cost_diagonals)) *invalid = 1;
  const T* top = &borders.row[t.j0];   // top[c] = R(i0 − 1, j0 + c)
  const T* left = &borders.col[t.i0];  // left[r] = R(i0 + r, j0 − 1)

  T buffers[3][kTile + 2];
  T* older = buffers[0];  // diagonal k − 2
  T* prev = buffers[1];   // diagonal k − 1
  T* cur = buffers[2];    // diagonal k
  older[0] = borders.corner[I];  // diagonal −2: (−1, −1)
  prev[0] = top[0];              // diagonal −1: (−1, 0) and (0, −1)
  prev[1] = left[0];
  borders.corner[I] = top[t.w - 1];  // R(i0 − 1, j0 + w − 1): the corner of tile (I, J + 1)

  T bottom[kTile], right[kTile];  // the tile's last row and last column
  for (int64_t k = 0; k < t.h + t.w - 1; ++k) {
    const int64_t r_lo = std::max<int64_t>(0, k - t.w + 1), r_hi = std::min(t.h - 1, k);
    // Cell (r, k − r): up and diagonal neighbours at slot r, left neighbour at slot r + 1.
    forward_diagonal(cost_diagonals + k * kTile + r_lo, older + r_lo, prev + r_lo, prev + r_lo + 1, cur + r_lo + 1,
                     r_hi - r_lo + 1, gamma, inv_gamma);
    if (k + 1 < t.w) cur[0] = top[k + 1];       // (−1, k + 1)
    if (k + 1 < t.h) cur[k + 2] = left[k + 1];  // (k + 1, −1)
    if (k >= t.h - 1) bottom[k - (t.h - 1)] = cur[t.h];
    if (k >= t.w - 1) right[r_lo] = cur[r_lo + 1];
    if (table != nullptr) {
      for (int64_t r = r_lo; r <= r_hi; ++r) table[(t.i0 + r) * table_ld + t.j0 + k - r] = cur[r + 1];
    }
    T* recycled = older;
    older = prev;
    prev = cur;
    cur = recycled;
  }
  std::copy_n(bottom, t.w, &borders.row[t.j0]);
  std::copy_n(right, t.h, &borders.col[t.i0]);
}

// Returns R(n − 1, m − 1); writes the pair's table when `table` is given.
template <typename T, typename TileCosts>
T forward_pair(const PairGeometry& g, T gamma, const TileCosts& costs, T* table, int64_t table_ld, bool parallel,
               bool* invalid) {
  ForwardBorders<T> borders(g);
  std::vector<uint8_t> invalid_in_tile_row(g.tile_rows(), 0);
  const T inv_gamma = T(1) / gamma;
  for_each_tile_in_wavefront(g, /*reverse=*/false, parallel, [&](int64_t I, int64_t J) {
    forward_tile(g, tile_range(g, I, J), I, gamma, inv_gamma, costs, borders, table, table_ld,
                 &invalid_in_tile_row[I]);
  });
  *invalid = std::any_of(invalid_in_tile_row.begin(), invalid_in_tile_row.end(), [](uint8_t v) { return v != 0; });
  return borders.row[g.m - 1];
}

// ---------------------------------------------------------------------------------------------
// Backward: E(n−1, m−1) = 1 and E(p) = Σ_{s ∈ succ(p)} w_s(p)·E(s), with w_s the normalized
// soft-argmin weights of successor s over its predecessors (design doc §2, form (c)), computed
// from the stored table. Tiles and their anti-diagonals run in reverse order; a flow diagonal is
// indexed by slot r (rows 0..h, row h being the first row of the tile below), a table diagonal
// by slot r + 1 (rows −1..h − 1).

// A computed cell as its predecessors see it: its E and the weight it gives each predecessor.
template <typename T>
struct CellFlow {
  T E, w_diag, w_up, w_left;
};

// Mirror of ForwardBorders: first row below each column, first column right of each row, and per
// tile row the corner (i0 + h, j0 + w) of its next tile.
template <typename T>
struct BackwardBorders {
  std::vector<CellFlow<T>> row, col, corner;
  explicit BackwardBorders(const PairGeometry& g) : row(g.m), col(g.n), corner(g.tile_rows()) {}
};

template <typename T>
struct FlowDiagonal {
  T E[kTile + 1], w_diag[kTile + 1], w_up[kTile + 1], w_left[kTile + 1];
  void set(int64_t slot, const CellFlow<T>& f) {
    E[slot] = f.E;
    w_diag[slot] = f.w_diag;
    w_up[slot] = f.w_up;
    w_left[slot] = f.w_left;
  }
  CellFlow<T> get(int64_t slot) const { return {E[slot], w_diag[slot], w_up[slot], w_left[slot]}; }
};

// One anti-diagonal of cells t: E from the successors (diagonal, below, right), zero where the
// cell is unreachable, then the cell's own weights over its predecessors.
template <typename T>
SOFTDTW_TORCH_CPU_CLONES void backward_diagonal(const T* __restrict r_self, const T* __restrict r_diag,
                                       const T* __restrict r_up, const T* __restrict r_left,
                                       const T* __restrict e_diag_succ, const T* __restrict w_diag_succ,
                                       const T* __restrict e_below, const T* __restrict w_below,
                                       const T* __restrict e_right, const T* __restrict w_right, T* __restrict e_out,
                                       T* __restrict w_diag_out, T* __restrict w_up_out, T* __restrict w_left_out,
                                       int64_t count, T inv_gamma) {
  for (int64_t t = 0; t < count; ++t) {
    const T e = e_diag_succ[t] * w_diag_succ[t] + e_below[t] * w_below[t] + e_right[t] * w_right[t];
    e_out[t] = is_reachable(r_self[t]) ? e : T(0);
    const PredecessorWeights<T> w = predecessor_weights(r_diag[t], r_up[t], r_left[t], inv_gamma);
    w_diag_out[t] = w.diag;
    w_up_out[t] = w.up;
    w_left_out[t] = w.left;
  }
}

// out[r + 1] = R(i0 + r, j0 + k − r) for the tile's cells on diagonal k and the border cells above
// and left of the tile (virtual border: R(−1, −1) = 0, R(−1, j) = R(i, −1) = +inf).
template <typename T>
void gather_table_diagonal(const TileRange& t, const T* table, int64_t table_ld, int64_t k, T* out) {
  const int64_t r_lo = std::max<int64_t>(-1, k - (t.w - 1)), r_hi = std::min(t.h - 1, k + 1);
  for (int64_t r = r_lo; r <= r_hi; ++r) {
    const int64_t i = t.i0 + r, j = t.j0 + k - r;
    out[r + 1] = (i < 0 || j < 0) ? ((i < 0 && j < 0) ? T(0) : positive_infinity<T>()) : table[i * table_ld + j];
  }
}

// emit(i, j, E) receives every cell's expected alignment.
template <typename T, typename Emit>
void backward_tile(const PairGeometry& g, const TileRange& t, int64_t I, T inv_gamma, const T* table,
                   int64_t table_ld, BackwardBorders<T>& borders, const Emit& emit) {
  const CellFlow<T>* below = &borders.row[t.j0];  // cells (h, c)
  const CellFlow<T>* right = &borders.col[t.i0];  // cells (r, w)
  const CellFlow<T> corner = borders.corner[I];   // cell (h, w)
  borders.corner[I] = below[0];                   // cell (h, 0): the corner of tile (I, J − 1)

  // Border cells of a flow diagonal k: (h, k − h) below the tile and (k − w, w) right of it.
  auto set_border_slots = [&](int64_t k, FlowDiagonal<T>& f) {
    if (k - t.h >= 0 && k - t.h < t.w) f.set(t.h, below[k - t.h]);
    if (k - t.h == t.w) f.set(t.h, corner);
    if (k - t.w >= 0 && k - t.w < t.h) f.set(k - t.w, right[k - t.w]);
  };
  FlowDiagonal<T> flows[3];
  FlowDiagonal<T>* next2 = &flows[0];  // diagonal k + 2
  FlowDiagonal<T>* next1 = &flows[1];  // diagonal k + 1
  FlowDiagonal<T>* cur = &flows[2];
  const int64_t last = t.h + t.w - 2;
  set_border_slots(last + 2, *next2);
  set_border_slots(last + 1, *next1);

  T r_buffers[3][kTile + 2];
  T* r_cur = r_buffers[0];    // table diagonal k
  T* r_prev = r_buffers[1];   // k − 1
  T* r_older = r_buffers[2];  // k − 2
  gather_table_diagonal(t, table, table_ld, last, r_cur);
  gather_table_diagonal(t, table, table_ld, last - 1, r_prev);
  gather_table_diagonal(t, table, table_ld, last - 2, r_older);
  const bool holds_end = t.i0 + t.h == g.n && t.j0 + t.w == g.m;

  CellFlow<T> top[kTile], left[kTile];  // the tile's first row and first column
  for (int64_t k = last; k >= 0; --k) {
    const int64_t r_lo = std::max<int64_t>(0, k - t.w + 1), r_hi = std::min(t.h - 1, k);
    // Cell (r, c = k − r): successors (r+1, c+1) at slot r + 1 of k + 2, (r+1, c) at slot r + 1 and
    // (r, c+1) at slot r of k + 1; predecessors (r−1, c−1) at slot r of k − 2, (r−1, c) at slot r
    // and (r, c−1) at slot r + 1 of k − 1; the cell itself at slot r + 1 of k.
    backward_diagonal(r_cur + r_lo + 1, r_older + r_lo, r_prev + r_lo, r_prev + r_lo + 1, next2->E + r_lo + 1,
                      next2->w_diag + r_lo + 1, next1->E + r_lo + 1, next1->w_up + r_lo + 1, next1->E + r_lo,
                      next1->w_left + r_lo, cur->E + r_lo, cur->w_diag + r_lo, cur->w_up + r_lo, cur->w_left + r_lo,
                      r_hi - r_lo + 1, inv_gamma);
    if (k == last && holds_end) cur->E[t.h - 1] = is_reachable(r_cur[t.h]) ? T(1) : T(0);  // E(n−1, m−1) = 1
    set_border_slots(k, *cur);
    for (int64_t r = r_lo; r <= r_hi; ++r) emit(t.i0 + r, t.j0 + k - r, cur->E[r]);
    if (r_lo == 0) top[k] = cur->get(0);
    if (r_hi == k) left[k] = cur->get(k);

    FlowDiagonal<T>* recycled = next2;
    next2 = next1;
    next1 = cur;
    cur = recycled;
    T* r_recycled = r_cur;
    r_cur = r_prev;
    r_prev = r_older;
    r_older = r_recycled;
    if (k - 3 >= -2) gather_table_diagonal(t, table, table_ld, k - 3, r_older);
  }
  std::copy_n(top, t.w, &borders.row[t.j0]);
  std::copy_n(left, t.h, &borders.col[t.i0]);
}

template <typename T, typename Emit>
void backward_pair(const PairGeometry& g, T gamma, const T* table, int64_t table_ld, bool parallel, const Emit& emit) {
  BackwardBorders<T> borders(g);
  const T inv_gamma = T(1) / gamma;
  for_each_tile_in_wavefront(g, /*reverse=*/true, parallel, [&](int64_t I, int64_t J) {
    backward_tile(g, tile_range(g, I, J), I, inv_gamma, table, table_ld, borders, emit);
  });
}

// ---------------------------------------------------------------------------------------------
// Squared Euclidean costs of one tile, computed from x (n, d) and y (m, d) rows.
template <typename T>
struct SquaredEuclideanTile {
  const T* x;
  const T* y;
  int64_t d;

  const T* operator()(const TileRange& t, T* out, int64_t* stride) const {
    // y's tile transposed to (d, w) so the inner loop runs over contiguous columns.
    std::vector<T> y_t(t.w * d);
    for (int64_t c = 0; c < t.w; ++c) {
      for (int64_t k = 0; k < d; ++k) y_t[k * t.w + c] = y[(t.j0 + c) * d + k];
    }
    for (int64_t r = 0; r < t.h; ++r) {
      const T* xi = x + (t.i0 + r) * d;
      T* row = out + r * t.w;
      std::fill_n(row, t.w, T(0));
      for (int64_t k = 0; k < d; ++k) {
        const T xik = xi[k];
        const T* yk = y_t.data() + k * t.w;
        for (int64_t c = 0; c < t.w; ++c) {
          const T diff = xik - yk[c];
          row[c] += diff * diff;
        }
      }
    }
    *stride = t.w;
    return out;
  }
};

template <typename T>
bool all_finite(const T* values, int64_t count) {
  for (int64_t k = 0; k < count; ++k) {
    if (!std::isfinite(values[k])) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Packed pairs (fused ops, short series, no band): a pack of P consecutive pairs with the same
// lengths runs its whole DP together, one anti-diagonal of the full n × m matrix at a time, with
// the pairs interleaved: element (slot s, lane p) of every diagonal array is at s·P + p. A
// diagonal's cells of all P pairs are then one contiguous run of count·P independent cells, so
// the same forward_diagonal / backward_diagonal loops fill whole vectors even where a diagonal is
// short (corners, short series), and the costs and the gradient sums run vectorized along it.
// Each cell is computed by exactly the same operations as in the tile path, and every row (column)
// of the gradient is summed in the same order (j, resp. i, descending), so both paths give the
// same bits: which one runs may depend on the thread count without breaking determinism.
constexpr int64_t kMaxPackLanes = 4;
// Longer pairs run in tiles, whose working set stays in L1; a pack's diagonals have n·P slots.
constexpr int64_t kMaxPackedLength = 512;

// A pack: pairs [begin, end), all n × m.
struct Pack {
  int64_t begin, end, n, m;
  int64_t lanes() const { return end - begin; }
};

// Splits the batch into packs of at most kMaxPackLanes pairs, a multiple of the thread count of
// them in near-equal sizes (so that at::parallel_for hands every thread the same work), cut
// where the lengths change. Empty when packing does not apply (band, long series).
std::vector<Pack> make_packs(const SoftDTWProblem& p, const int64_t* x_lengths, const int64_t* y_lengths) {
  std::vector<Pack> packs;
  if (p.band_radius >= 0 || std::max(p.n, p.m) > kMaxPackedLength || p.batch < at::get_num_threads()) return packs;
  const int64_t threads = at::get_num_threads();
  const int64_t count = threads * ceil_div(p.batch, threads * kMaxPackLanes);
  for (int64_t q = 0; q < count; ++q) {
    const int64_t begin = q * p.batch / count, end = (q + 1) * p.batch / count;
    for (int64_t b = begin; b < end; ++b) {
      const PairGeometry g = pair_geometry(p, x_lengths, y_lengths, b);
      if (b == begin || packs.back().n != g.n || packs.back().m != g.m) {
        packs.push_back({b, b + 1, g.n, g.m});
      } else {
        packs.back().end = b + 1;
      }
    }
  }
  return packs;
}

template <typename PackFn>
void for_each_pack(const std::vector<Pack>& packs, const PackFn& body) {
  at::parallel_for(0, static_cast<int64_t>(packs.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) body(packs[q]);
  });
}

// The pack's sequences interleaved by lane, one plane per feature: x as [k][i][lane] and y with
// its time axis reversed, [k][m − 1 − j][lane], so that along an anti-diagonal (i up, j down)
// both advance one slot per cell.
template <typename T>
struct PackedSequences {
  std::vector<T> x, y;
  int64_t n, m, d, P;
  PackedSequences(const Pack& pk, const T* x_all, const T* y_all, int64_t x_stride, int64_t y_stride, int64_t d)
      : x(pk.n * d * pk.lanes()), y(pk.m * d * pk.lanes()), n(pk.n), m(pk.m), d(d), P(pk.lanes()) {
    for (int64_t p = 0; p < P; ++p) {
      const T* xb = x_all + (pk.begin + p) * x_stride;
      const T* yb = y_all + (pk.begin + p) * y_stride;
      for (int64_t k = 0; k < d; ++k) {
        for (int64_t i = 0; i < n; ++i) x[(k * n + i) * P + p] = xb[i * d + k];
        for (int64_t j = 0; j < m; ++j) y[(k * m + (m - 1 - j)) * P + p] = yb[j * d + k];
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

// Σ_j E_ij (x_i − y_j) into acc_x and Σ_i E_ij (y_j − x_i) into acc_y along one diagonal run
// (same operations as the tile path's emit; E = 0 adds nothing there, so it adds nothing here).
template <typename T>
SOFTDTW_TORCH_CPU_CLONES void gradient_run(const T* __restrict E, const T* __restrict x, const T* __restrict y, int64_t d,
                                  int64_t plane_x, int64_t plane_y, double* __restrict acc_x,
                                  double* __restrict acc_y, int64_t count) {
  for (int64_t k = 0; k < d; ++k) {
    const T* xk = x + k * plane_x;
    const T* yk = y + k * plane_y;
    double* ax = acc_x + k * plane_x;
    double* ay = acc_y + k * plane_y;
    for (int64_t t = 0; t < count; ++t) {
      const double flow = E[t] == T(0) ? 0.0 : static_cast<double>(E[t]) * (xk[t] - yk[t]);
      ax[t] += flow;
      ay[t] -= flow;
    }
  }
}

// A pack's DP diagonals k = −2..n+m−2, element (slot s, lane p) at diagonal(k)[s·P + p], slot
// r + 1 holding row r (slot 0: the border row −1). Either every diagonal is kept (compactly, only
// the slots [max(0, k − m + 2), min(n, k + 2)] that the forward writes and the backward reads), for
// a backward in the same call, or only the last three (the forward of the ops, which writes its
// table to R instead).
template <typename T>
class PackDiagonals {
 public:
  PackDiagonals(int64_t n, int64_t m, int64_t P, bool keep_all) : n_(n), m_(m), P_(P), keep_all_(keep_all) {
    if (!keep_all) {
      data_.assign(3 * (n + 2) * P, positive_infinity<T>());
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
  T* operator()(int64_t k) {
    return keep_all_ ? data_.data() + offsets_[k + 2] : data_.data() + ((k + 2) % 3) * (n_ + 2) * P_;
  }

 private:
  int64_t first_slot(int64_t k) const { return std::max<int64_t>(0, k - m_ + 2); }
  int64_t n_, m_, P_;
  bool keep_all_;
  std::vector<int64_t> offsets_;
  std::vector<T> data_;
};

// Forward of a pack into `diagonals`: R(n − 1, m − 1) of each lane to values[lane]; each lane's
// table (B, N, M) layout) filled too when `tables` is given.
template <typename T>
void forward_pack(const Pack& pk, const PackedSequences<T>& s, T gamma, PackDiagonals<T>& diagonals, T* tables,
                  int64_t table_stride, int64_t table_ld, T* values) {
  const int64_t n = pk.n, m = pk.m, P = pk.lanes();
  const T inf = positive_infinity<T>(), inv_gamma = T(1) / gamma;
  std::vector<T> cost(n * P);
  std::fill_n(diagonals(-2), P, T(0));  // R(−1, −1) = 0
  std::fill_n(diagonals(-1), 2 * P, inf);  // R(−1, 0), R(0, −1)
  for (int64_t k = 0; k < n + m - 1; ++k) {
    const int64_t r_lo = std::max<int64_t>(0, k - m + 1), r_hi = std::min(n - 1, k);
    const int64_t run = (r_hi - r_lo + 1) * P;
    const T* older = diagonals(k - 2);
    const T* prev = diagonals(k - 1);
    T* cur = diagonals(k);
    squared_euclidean_run(s.x_at(r_lo), s.y_at(k, r_lo), s.d, n * P, m * P, cost.data(), run);
    forward_diagonal(cost.data(), older + r_lo * P, prev + r_lo * P, prev + (r_lo + 1) * P, cur + (r_lo + 1) * P, run,
                     gamma, inv_gamma);
    if (k + 1 < m) std::fill_n(cur, P, inf);                   // (−1, k + 1)
    if (k + 1 < n) std::fill_n(cur + (k + 2) * P, P, inf);     // (k + 1, −1)
    if (tables != nullptr) {
      for (int64_t r = r_lo; r <= r_hi; ++r) {
        for (int64_t p = 0; p < P; ++p) tables[p * table_stride + r * table_ld + k - r] = cur[(r + 1) * P + p];
      }
    }
  }
  const T* end = diagonals(n + m - 2);
  for (int64_t p = 0; p < P; ++p) values[p] = end[n * P + p];
}

// Table diagonals of a pack gathered from its lanes' tables (B, N, M), as gather_table_diagonal
// does, into three rotating buffers: what backward_pack reads when the forward ran in another call.
template <typename T>
class GatheredDiagonals {
 public:
  GatheredDiagonals(const Pack& pk, const T* tables, int64_t table_stride, int64_t table_ld)
      : pk_(pk), tables_(tables), stride_(table_stride), ld_(table_ld), data_(3 * (pk.n + 2) * pk.lanes()) {}
  const T* operator()(int64_t k) {
    const int64_t P = pk_.lanes();
    T* out = data_.data() + ((k + 2) % 3) * (pk_.n + 2) * P;
    if (held_[(k + 2) % 3] == k) return out;
    held_[(k + 2) % 3] = k;
    const int64_t r_lo = std::max<int64_t>(-1, k - (pk_.m - 1)), r_hi = std::min(pk_.n - 1, k + 1);
    for (int64_t r = r_lo; r <= r_hi; ++r) {
      const int64_t i = r, j = k - r;
      for (int64_t p = 0; p < P; ++p) {
        out[(r + 1) * P + p] = (i < 0 || j < 0) ? ((i < 0 && j < 0) ? T(0) : positive_infinity<T>())
                                                : tables_[p * stride_ + i * ld_ + j];
      }
    }
    return out;
  }

 private:
  const Pack& pk_;
  const T* tables_;
  int64_t stride_, ld_;
  std::vector<T> data_;
  int64_t held_[3] = {-3, -3, -3};
};

// Mirror of backward_tile over the whole matrix: flow diagonals by slot r (rows 0..n, row n and
// the column m right of the matrix being zero flow), table diagonals (from `table(k)`) by slot
// r + 1. Adds Σ_j E_ij (x_i − y_j) to acc_x ([k][i][lane]) and Σ_i E_ij (y_j − x_i) to acc_y
// ([k][m − 1 − j][lane]).
template <typename T, typename TableDiagonals>
void backward_pack(const Pack& pk, const PackedSequences<T>& s, T gamma, TableDiagonals& table, double* acc_x,
                   double* acc_y) {
  const int64_t n = pk.n, m = pk.m, P = pk.lanes(), slots = (n + 2) * P;
  const T inv_gamma = T(1) / gamma;
  struct Flow {
    T *E, *w_diag, *w_up, *w_left;
  };
  std::vector<T> storage(3 * 4 * slots, T(0));
  Flow flows[3];
  for (int f = 0; f < 3; ++f) {
    T* base = storage.data() + f * 4 * slots;
    flows[f] = {base, base + slots, base + 2 * slots, base + 3 * slots};
  }
  Flow* next2 = &flows[0];  // diagonal k + 2
  Flow* next1 = &flows[1];  // diagonal k + 1
  Flow* cur = &flows[2];
  const int64_t last = n + m - 2;
  for (int64_t k = last; k >= 0; --k) {
    const int64_t r_lo = std::max<int64_t>(0, k - m + 1), r_hi = std::min(n - 1, k);
    const int64_t a = r_lo * P, run = (r_hi - r_lo + 1) * P;
    const T* r_cur = table(k);
    const T* r_prev = table(k - 1);
    const T* r_older = table(k - 2);
    backward_diagonal(r_cur + a + P, r_older + a, r_prev + a, r_prev + a + P, next2->E + a + P, next2->w_diag + a + P,
                      next1->E + a + P, next1->w_up + a + P, next1->E + a, next1->w_left + a, cur->E + a,
                      cur->w_diag + a, cur->w_up + a, cur->w_left + a, run, inv_gamma);
    if (k == last) {  // E(n−1, m−1) = 1
      for (int64_t p = 0; p < P; ++p) cur->E[(n - 1) * P + p] = is_reachable(r_cur[n * P + p]) ? T(1) : T(0);
    }
    // Zero flow where later diagonals read outside the matrix: (n, k − n) below it, (k − m, m) right of it.
    for (T* f : {cur->E, cur->w_diag, cur->w_up, cur->w_left}) {
      std::fill_n(f + n * P, P, T(0));
      if (k - m >= 0) std::fill_n(f + (k - m) * P, P, T(0));
    }
    gradient_run(cur->E + a, s.x_at(r_lo), s.y_at(k, r_lo), s.d, n * P, m * P, acc_x + a,
                 acc_y + (r_lo + m - 1 - k) * P, run);
    std::swap(next2, next1);
    std::swap(next1, cur);
  }
}

// ∂sdtw/∂x (and ∂sdtw/∂y) of each lane from backward_pack's sums, scaled by 2·scale[lane], into
// (B, N, d) (and (B, M, d)) outputs; grad_y may be null.
template <typename T>
void store_pack_gradients(const Pack& pk, const PackedSequences<T>& s, const std::vector<double>& acc_x,
                          const std::vector<double>& acc_y, const T* scale, int64_t N, int64_t M, T* grad_x,
                          T* grad_y) {
  const int64_t P = pk.lanes(), d = s.d;
  for (int64_t q = 0; q < P; ++q) {
    const int64_t b = pk.begin + q;
    const double factor = 2.0 * static_cast<double>(scale[b]);
    for (int64_t k = 0; k < d; ++k) {
      T* gx = grad_x + b * N * d;
      for (int64_t i = 0; i < pk.n; ++i) gx[i * d + k] = static_cast<T>(factor * acc_x[(k * pk.n + i) * P + q]);
      if (grad_y == nullptr) continue;
      T* gy = grad_y + b * M * d;
      for (int64_t j = 0; j < pk.m; ++j) gy[j * d + k] = static_cast<T>(factor * acc_y[(k * pk.m + pk.m - 1 - j) * P + q]);
    }
  }
}

// Whether any pair of the pack holds a non-finite value (flagged in `bad`).
template <typename T>
bool pack_has_invalid(const Pack& pk, const T* x_all, const T* y_all, int64_t N, int64_t M, int64_t d, bool* bad) {
  bool any = false;
  for (int64_t b = pk.begin; b < pk.end; ++b) {
    bad[b] = !all_finite(x_all + b * N * d, pk.n * d) || !all_finite(y_all + b * M * d, pk.m * d);
    any = any || bad[b];
  }
  return any;
}

// ---------------------------------------------------------------------------------------------
// Op implementations.

std::tuple<at::Tensor, at::Tensor> from_cost_forward_cpu(const at::Tensor& D_in, double gamma,
                                                         std::optional<int64_t> bandwidth,
                                                         const std::optional<at::Tensor>& x_lengths,
                                                         const std::optional<at::Tensor>& y_lengths, bool keep_table) {
  const ForwardInputs in = prepare_from_cost(D_in, gamma, bandwidth, x_lengths, y_lengths);
  const SoftDTWProblem& p = in.problem;
  const at::Tensor& D = in.D;
  const ForwardOutputs out = new_forward_outputs(p, D.options(), keep_table);
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(D.scalar_type(), "soft_dtw_from_cost_forward_cpu", [&] {
    const scalar_t* d_all = D.data_ptr<scalar_t>();
    scalar_t* r_all = keep_table ? out.R.data_ptr<scalar_t>() : nullptr;
    scalar_t* v = out.values.data_ptr<scalar_t>();
    bool* bad = out.invalid.data_ptr<bool>();
    const int64_t pair_stride = p.n * p.m;
    for_each_pair(p.batch, [&](int64_t b, bool parallel) {
      const scalar_t* d_pair = d_all + b * pair_stride;
      auto costs = [&](const TileRange& t, scalar_t*, int64_t* stride) {
        *stride = p.m;
        return d_pair + t.i0 * p.m + t.j0;
      };
      v[b] = forward_pair<scalar_t>(pair_geometry(p, xl, yl, b), static_cast<scalar_t>(gamma), costs,
                                    r_all ? r_all + b * pair_stride : nullptr, p.m, parallel, &bad[b]);
    });
  });
  return finish_forward(kFromCostOp, out, D_in.scalar_type(), kInvalidCostMessage);
}

at::Tensor from_cost_backward_cpu(const at::Tensor& grad_in, const at::Tensor& R_in, double gamma,
                                  std::optional<int64_t> bandwidth, const std::optional<at::Tensor>& x_lengths,
                                  const std::optional<at::Tensor>& y_lengths) {
  const BackwardInputs in = prepare_from_cost_backward(grad_in, R_in, gamma, bandwidth, x_lengths, y_lengths);
  const SoftDTWProblem& p = in.problem;
  const at::Tensor& R = in.R;
  const at::Tensor& grad = in.grad;
  at::Tensor grad_D = p.ragged() ? at::zeros_like(R) : at::empty_like(R);
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(R.scalar_type(), "soft_dtw_from_cost_backward_cpu", [&] {
    const scalar_t* r_all = R.data_ptr<scalar_t>();
    const scalar_t* g = grad.data_ptr<scalar_t>();
    scalar_t* out_all = grad_D.data_ptr<scalar_t>();
    const int64_t pair_stride = p.n * p.m;
    for_each_pair(p.batch, [&](int64_t b, bool parallel) {
      scalar_t* out = out_all + b * pair_stride;
      const scalar_t scale = g[b];
      backward_pair<scalar_t>(pair_geometry(p, xl, yl, b), static_cast<scalar_t>(gamma), r_all + b * pair_stride,
                              p.m, parallel, [&](int64_t i, int64_t j, scalar_t E) { out[i * p.m + j] = scale * E; });
    });
  });
  return grad_D;
}

std::tuple<at::Tensor, at::Tensor> fused_forward_cpu(const at::Tensor& x_in, const at::Tensor& y_in, double gamma,
                                                     std::optional<int64_t> bandwidth,
                                                     const std::optional<at::Tensor>& x_lengths,
                                                     const std::optional<at::Tensor>& y_lengths, bool keep_table) {
  const ForwardInputs in = prepare_fused(x_in, y_in, gamma, bandwidth, x_lengths, y_lengths);
  const SoftDTWProblem& p = in.problem;
  const at::Tensor& x = in.x;
  const at::Tensor& y = in.y;
  const int64_t d = x.size(2);
  const ForwardOutputs out = new_forward_outputs(p, x.options(), keep_table);
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "soft_dtw_fused_forward_cpu", [&] {
    const scalar_t* x_all = x.data_ptr<scalar_t>();
    const scalar_t* y_all = y.data_ptr<scalar_t>();
    scalar_t* r_all = keep_table ? out.R.data_ptr<scalar_t>() : nullptr;
    scalar_t* v = out.values.data_ptr<scalar_t>();
    bool* bad = out.invalid.data_ptr<bool>();
    const std::vector<Pack> packs = make_packs(p, xl, yl);
    if (!packs.empty()) {
      for_each_pack(packs, [&](const Pack& pk) {
        if (pack_has_invalid(pk, x_all, y_all, p.n, p.m, d, bad)) return;  // the op raises
        const PackedSequences<scalar_t> s(pk, x_all, y_all, p.n * d, p.m * d, d);
        PackDiagonals<scalar_t> diagonals(pk.n, pk.m, pk.lanes(), /*keep_all=*/false);
        forward_pack<scalar_t>(pk, s, static_cast<scalar_t>(gamma), diagonals,
                               r_all ? r_all + pk.begin * p.n * p.m : nullptr, p.n * p.m, p.m, v + pk.begin);
      });
      return;
    }
    for_each_pair(p.batch, [&](int64_t b, bool parallel) {
      const PairGeometry g = pair_geometry(p, xl, yl, b);
      const SquaredEuclideanTile<scalar_t> costs{x_all + b * p.n * d, y_all + b * p.m * d, d};
      if (!all_finite(costs.x, g.n * d) || !all_finite(costs.y, g.m * d)) {
        bad[b] = true;
        return;
      }
      v[b] = forward_pair<scalar_t>(g, static_cast<scalar_t>(gamma), costs,
                                    r_all ? r_all + b * p.n * p.m : nullptr, p.m, parallel, &bad[b]);
    });
  });
  return finish_forward(kFusedOp, out, x_in.scalar_type(), kInvalidSequenceMessage);
}

std::tuple<at::Tensor, at::Tensor> fused_backward_cpu(const at::Tensor& grad_in, const at::Tensor& x_in,
                                                      const at::Tensor& y_in, const at::Tensor& R_in, double gamma,
                                                      std::optional<int64_t> bandwidth,
                                                      const std::optional<at::Tensor>& x_lengths,
                                                      const std::optional<at::Tensor>& y_lengths) {
  const BackwardInputs in = prepare_fused_backward(grad_in, x_in, y_in, R_in, gamma, bandwidth, x_lengths, y_lengths);
  const SoftDTWProblem& p = in.problem;
  const at::Tensor& R = in.R;
  const at::Tensor& grad = in.grad;
  const at::Tensor& x = in.x;
  const at::Tensor& y = in.y;
  const int64_t d = x.size(2);
  at::Tensor grad_x = at::zeros_like(x);
  at::Tensor grad_y = at::zeros_like(y);
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(R.scalar_type(), "soft_dtw_fused_backward_cpu", [&] {
    const scalar_t* r_all = R.data_ptr<scalar_t>();
    const scalar_t* g = grad.data_ptr<scalar_t>();
    const std::vector<Pack> packs = make_packs(p, xl, yl);
    if (!packs.empty()) {
      for_each_pack(packs, [&](const Pack& pk) {
        const PackedSequences<scalar_t> s(pk, x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), p.n * d, p.m * d, d);
        GatheredDiagonals<scalar_t> table(pk, r_all + pk.begin * p.n * p.m, p.n * p.m, p.m);
        std::vector<double> acc_x(s.x.size(), 0.0), acc_y(s.y.size(), 0.0);  // laid out as s.x and s.y
        backward_pack<scalar_t>(pk, s, static_cast<scalar_t>(gamma), table, acc_x.data(), acc_y.data());
        store_pack_gradients(pk, s, acc_x, acc_y, g, p.n, p.m, grad_x.data_ptr<scalar_t>(),
                             grad_y.data_ptr<scalar_t>());
      });
      return;
    }
    for_each_pair(p.batch, [&](int64_t b, bool parallel) {
      const PairGeometry geo = pair_geometry(p, xl, yl, b);
      const scalar_t* xb = x.data_ptr<scalar_t>() + b * p.n * d;
      const scalar_t* yb = y.data_ptr<scalar_t>() + b * p.m * d;
      // Σ_j E_ij (x_i − y_j) and Σ_i E_ij (y_j − x_i), accumulated in float64 in a fixed order
      // (tiles of one anti-diagonal never share a row or a column).
      std::vector<double> acc_x(geo.n * d, 0.0), acc_y(geo.m * d, 0.0);
      backward_pair<scalar_t>(geo, static_cast<scalar_t>(gamma), r_all + b * p.n * p.m, p.m, parallel,
                              [&](int64_t i, int64_t j, scalar_t E) {
                                if (E == scalar_t(0)) return;
                                const scalar_t* xi = xb + i * d;
                                const scalar_t* yj = yb + j * d;
                                double* ax = acc_x.data() + i * d;
                                double* ay = acc_y.data() + j * d;
                                for (int64_t k = 0; k < d; ++k) {
                                  const double flow = static_cast<double>(E) * (xi[k] - yj[k]);
                                  ax[k] += flow;
                                  ay[k] -= flow;
                                }
                              });
      // ∂sdtw/∂x_i = 2 Σ_j E_ij (x_i − y_j), scaled by the upstream gradient.
      const double scale = 2.0 * static_cast<double>(g[b]);
      scalar_t* gx = grad_x.data_ptr<scalar_t>() + b * p.n * d;
      scalar_t* gy = grad_y.data_ptr<scalar_t>() + b * p.m * d;
      for (int64_t k = 0; k < geo.n * d; ++k) gx[k] = static_cast<scalar_t>(scale * acc_x[k]);
      for (int64_t k = 0; k < geo.m * d; ++k) gy[k] = static_cast<scalar_t>(scale * acc_y[k]);
    });
  });
  return {grad_x, grad_y};
}

// Packs: the forward keeps every diagonal of the pack and the backward reads them in the same
// call, so no (B, N, M) table is written or gathered, and no ∂/∂y is formed. Other batches (band,
// long series): the forward and backward ops, as the composite kernel does.
std::tuple<at::Tensor, at::Tensor> fused_value_and_grad_cpu(const at::Tensor& x_in, const at::Tensor& y_in,
                                                            const at::Tensor& weights, double gamma,
                                                            std::optional<int64_t> bandwidth,
                                                            const std::optional<at::Tensor>& x_lengths,
                                                            const std::optional<at::Tensor>& y_lengths) {
  const ForwardInputs in = prepare_fused(x_in, y_in, gamma, bandwidth, x_lengths, y_lengths);
  check_pair_weights(x_in, weights);
  const SoftDTWProblem& p = in.problem;
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  const std::vector<Pack> packs = make_packs(p, xl, yl);
  if (packs.empty()) {
    auto [values, R] = fused_forward_cpu(x_in, y_in, gamma, bandwidth, x_lengths, y_lengths, /*keep_table=*/true);
    auto grads = fused_backward_cpu(weights, x_in, y_in, R, gamma, bandwidth, x_lengths, y_lengths);
    return {values, std::get<0>(grads).to(x_in.scalar_type())};
  }
  const at::Tensor& x = in.x;
  const at::Tensor& y = in.y;
  const int64_t d = x.size(2);
  const ForwardOutputs out = new_forward_outputs(p, x.options(), /*keep_table=*/false);
  at::Tensor grad_x = p.ragged() ? at::zeros_like(x) : at::empty_like(x);
  const at::Tensor w = weights.to(x.scalar_type()).contiguous();
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "soft_dtw_fused_value_and_grad_cpu", [&] {
    const scalar_t* x_all = x.data_ptr<scalar_t>();
    const scalar_t* y_all = y.data_ptr<scalar_t>();
    for_each_pack(packs, [&](const Pack& pk) {
      if (pack_has_invalid(pk, x_all, y_all, p.n, p.m, d, out.invalid.data_ptr<bool>())) return;  // the op raises
      const PackedSequences<scalar_t> s(pk, x_all, y_all, p.n * d, p.m * d, d);
      PackDiagonals<scalar_t> diagonals(pk.n, pk.m, pk.lanes(), /*keep_all=*/true);
      forward_pack<scalar_t>(pk, s, static_cast<scalar_t>(gamma), diagonals, nullptr, 0, 0,
                             out.values.data_ptr<scalar_t>() + pk.begin);
      std::vector<double> acc_x(s.x.size(), 0.0), acc_y(s.y.size(), 0.0);  // laid out as s.x and s.y
      backward_pack<scalar_t>(pk, s, static_cast<scalar_t>(gamma), diagonals, acc_x.data(), acc_y.data());
      store_pack_gradients<scalar_t>(pk, s, acc_x, acc_y, w.data_ptr<scalar_t>(), p.n, p.m,
                                     grad_x.data_ptr<scalar_t>(), nullptr);
    });
  });
  auto [values, unused] = finish_forward(kFusedOp, out, x_in.scalar_type(), kInvalidSequenceMessage);
  return {values, grad_x.to(x_in.scalar_type())};
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CPU, m) {
  m.impl("_soft_dtw_from_cost_forward", &from_cost_forward_cpu);
  m.impl("_soft_dtw_from_cost_backward", &from_cost_backward_cpu);
  m.impl("_soft_dtw_fused_forward", &fused_forward_cpu);
  m.impl("_soft_dtw_fused_backward", &fused_backward_cpu);
  m.impl("_soft_dtw_fused_value_and_grad", &fused_value_and_grad_cpu);
}

}  // namespace softdtw_torch
