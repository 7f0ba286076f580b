// The CPU kernels' tiled wavefront engine (design doc §1–3): one pair's forward recursion, and its
// reverse (backward) recursion, over kTile × kTile tiles.
//
// Every pair's DP runs over tiles in anti-diagonal (wavefront) order: tile (I, J) needs the tiles
// above, left and above-left, so the tiles of one anti-diagonal are independent. The decomposition
// is fixed whatever the thread count, so every cell is computed by the same operations in the same
// order: results are bitwise identical with one thread or many.
//
// Both recursions optionally carry a tangent channel beside their values (forward mode and second
// order, design doc §3): the forward Ṙ(s) = Ḋ(s) + Σ_p w_s(p)·Ṙ(p) beside R, the reverse
// Ė(p) = Σ_s ẇ_s(p)·E(s) + w_s(p)·Ė(s) beside E. The value channel is computed by the same
// operations with or without it, so its bits do not depend on whether a tangent rides along.
//
// R is carried as RValue<T> (math.h): a double-float hi + lo in the float32 kernels, in
// structure-of-arrays runs inside the loops (WideRun), as pairs in tables and borders.
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "../../common/macros.h"
#include "../../common/parallel.h"
#include "../math.h"
#include "interleaved_vectors.h"

namespace softdtw_torch {
namespace cpu {

constexpr int64_t kTile = 64;

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// A pair's window as the CPU kernels read it (docs/design/softdtw.md §11): each row's admissible
// columns and each anti-diagonal's admissible rows, both intervals. The band by integer arithmetic
// (math.h); the parallelogram from its columns' rows, evaluated once per (n, m)
// (ItakuraParallelogram) and then searched by bisection: both bounds are non-decreasing.
class WindowRows {
 public:
  WindowRows(const Window& w, int64_t n, int64_t m) : n_(n), m_(m), radius_(w.radius) {
    if (!w.has_itakura()) return;
    const ItakuraParallelogram parallelogram(n, m, w.itakura_slope);
    first_.resize(m);
    end_.resize(m);
    for (int64_t j = 0; j < m; ++j) {
      first_[j] = parallelogram.first_row(j);
      end_[j] = parallelogram.end_row(j);
    }
  }
  // Row i's columns [*lo, *hi], clipped to [0, m − 1] (empty: lo > hi): with a parallelogram, from
  // the first column whose rows end after i to the last whose rows start at or before i.
  void columns(int64_t i, int64_t* lo, int64_t* hi) const {
    band_columns(i, n_, m_, radius_, lo, hi);
    if (first_.empty()) return;
    *lo = std::max<int64_t>(*lo, std::upper_bound(end_.begin(), end_.end(), i) - end_.begin());
    *hi = std::min<int64_t>(*hi, std::upper_bound(first_.begin(), first_.end(), i) - first_.begin() - 1);
  }
  // Anti-diagonal k's rows [*lo, *hi] (cells (i, k − i); empty: lo > hi; without a parallelogram,
  // not clipped to the matrix). Along the diagonal i grows and j = k − i shrinks, so "column j's
  // rows start at or before i" turns true once and "they end after i" turns false once.
  void rows_on_diagonal(int64_t k, int64_t* lo, int64_t* hi) const {
    band_rows_on_diagonal(k, n_, m_, radius_, lo, hi);
    if (first_.empty()) return;
    const int64_t top = std::max<int64_t>(0, k - m_ + 1), bottom = std::min(n_ - 1, k);
    *lo = std::max(*lo, first_row_where(top, bottom, [&](int64_t i) { return first_[k - i] <= i; }));
    *hi = std::min(*hi, first_row_where(top, bottom, [&](int64_t i) { return end_[k - i] <= i; }) - 1);
  }

 private:
  // The first i in [lo, hi] where `holds` (false, then true) is true; hi + 1 when none.
  template <typename Pred>
  static int64_t first_row_where(int64_t lo, int64_t hi, const Pred& holds) {
    ++hi;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (holds(mid)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }
  int64_t n_, m_, radius_;
  std::vector<int64_t> first_, end_;  // the parallelogram's rows [first_[j], end_[j]) of column j; empty: none
};

// One pair: its own lengths (ragged batches) and window (null: none, for borders and layouts).
struct PairGeometry {
  int64_t n, m;
  std::shared_ptr<const WindowRows> window;
  int64_t tile_rows() const { return ceil_div(n, kTile); }
  int64_t tile_cols() const { return ceil_div(m, kTile); }
};

// Where a pair's DP tables (R, Ṙ) keep cell (i, j): anti-diagonal by anti-diagonal (k = i + j), each
// diagonal's cells by row, in the pair's first n·m cells. Both recursions run along anti-diagonals,
// so what they write and read at a time (a tile's diagonal, a pack's) is one contiguous run: row
// stride writes along a diagonal would touch a cache line per cell. (The CUDA kernels keep their
// tables row by row: a table is read by the device that wrote it.)
struct TableLayout {
  int64_t n, m;
  explicit TableLayout(const PairGeometry& g) : n(g.n), m(g.m) {}
  // Cells before diagonal k: diagonals grow by one cell up to the shorter side a, keep a cells
  // up to the longer side b, then shrink by one.
  int64_t diagonal_start(int64_t k) const {
    const int64_t a = std::min(n, m), b = std::max(n, m);
    if (k <= a) return k * (k + 1) / 2;
    if (k <= b) return a * (a + 1) / 2 + (k - a) * a;
    const int64_t last = n + m - 1;  // len(q) = last − q beyond b
    return a * (a + 1) / 2 + (b - a) * a + (k - b) * last - (k - 1 + b) * (k - b) / 2;
  }
  // Cell (i, k − i) of diagonal k is at row_offset(k) + i.
  int64_t row_offset(int64_t k) const { return diagonal_start(k) - std::max<int64_t>(0, k - (m - 1)); }
};

// Cells [i0, i0 + h) × [j0, j0 + w) of tile (I, J).
struct TileRange {
  int64_t i0, h, j0, w;
};

inline TileRange tile_range(const PairGeometry& g, int64_t I, int64_t J) {
  const int64_t i0 = I * kTile, j0 = J * kTile;
  return {i0, std::min(kTile, g.n - i0), j0, std::min(kTile, g.m - j0)};
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

// Runs body(b, parallel_tiles) for every pair b: pairs in parallel when the batch has at least as
// many pairs as threads (shared out one at a time, common/parallel.h); otherwise the pairs one
// after the other with the tiles of each anti-diagonal in parallel.
template <typename PairFn>
void for_each_pair(int64_t batch, const PairFn& body) {
  if (batch >= at::get_num_threads()) {
    for_each_shared_item(batch, [&](int64_t b) { body(b, false); });
  } else {
    for (int64_t b = 0; b < batch; ++b) body(b, true);
  }
}

// Where a pair's tables are (laid out by TableLayout): R, and Ṙ when a tangent rides along (each
// nullable); ConstTables: the tables a reverse sweep reads.
template <typename T>
struct Tables {
  RValue<T>* R = nullptr;
  T* R_tangent = nullptr;
};
template <typename T>
struct ConstTables {
  const RValue<T>* R = nullptr;
  const T* R_tangent = nullptr;
};

// Runs of values (math.h: Run, load, store): `count` of them set to `value`, and their storage,
// RunStorage<V, N> for N of them, RunVector for a number fixed at run time.
template <typename V>
inline void fill(Run<V> run, int64_t count, V value) {
  for (int64_t i = 0; i < count; ++i) store(run, i, value);
}

template <typename V, int64_t N>
struct RunStorage {
  V values[N];
  Run<V> run() { return values; }
};
template <typename T, int64_t N>
struct RunStorage<WideR<T>, N> {
  T hi[N], lo[N];
  Run<WideR<T>> run() { return {hi, lo}; }
};

// assign: count values set to `value`; resize: to zero, for storage every read of which is
// written first. A wide R's his and los share one allocation: a pack's diagonals are allocated per
// pack, at sizes glibc returns to the system when freed, and two allocations doubled the page
// faults (they took 1.3 ms a call at workload A of benchmarks/bench_cpu.py).
template <typename V>
struct RunVector {
  std::vector<V> values;
  void assign(int64_t count, V value) { values.assign(count, value); }
  void resize(int64_t count) { values.resize(count); }
  Run<V> at(int64_t offset) { return values.data() + offset; }
};
template <typename T>
struct RunVector<WideR<T>> {
  std::vector<T> values;  // count his, then count los
  int64_t count = 0;
  void assign(int64_t n, WideR<T> value) {
    resize(n);
    std::fill_n(values.data(), n, value.hi);
    std::fill_n(values.data() + n, n, value.lo);
  }
  void resize(int64_t n) {
    count = n;
    values.resize(2 * n);
  }
  Run<WideR<T>> at(int64_t offset) { return {values.data() + offset, values.data() + count + offset}; }
};

// The input of the tangent channel: a functor like the costs (below) giving Ḋ of a tile, or
// NoTangent for a forward that carries none.
struct NoTangent {};
template <typename Tangent>
constexpr bool kHasTangent = !std::is_same_v<Tangent, NoTangent>;

// ---------------------------------------------------------------------------------------------
// Forward: R(i, j) = D(i, j) + softmin_γ(R(i−1, j−1), R(i−1, j), R(i, j−1)).
//
// Inside a tile the cells are computed anti-diagonal by anti-diagonal, k = r + c (tile-local
// row r and column c): the cells of one anti-diagonal are independent, so its loop vectorizes.
// A diagonal lives in an array indexed by slot r + 1; slot 0 (r = −1) and slot k + 2 (c = −1)
// carry the border cells of the row above and the column left of the tile.

// Values crossing tile borders: for each column the last row computed above it, for each row
// the last column computed left of it, and per tile row the corner (i0 − 1, j0 − 1) of its
// next tile (saved before the row above is overwritten). Tiles of one anti-diagonal touch
// disjoint parts of these arrays. V: RValue<T> for R, T for Ṙ. R's virtual border is
// R(−1, −1) = 0 and +inf elsewhere; Ṙ's is 0 everywhere (the border is a constant).
template <typename V>
struct ForwardBorders {
  std::vector<V> row, col, corner;
  ForwardBorders(const PairGeometry& g, V border, V origin)
      : row(g.m, border), col(g.n, border), corner(g.tile_rows(), border) {
    corner[0] = origin;
  }
};
template <typename T>
ForwardBorders<RValue<T>> borders_of_values(const PairGeometry& g) {
  return {g, exact_r(positive_infinity<T>()), exact_r(T(0))};
}
template <typename T>
ForwardBorders<T> borders_of_tangents(const PairGeometry& g) {
  return {g, T(0), T(0)};
}

// The loops below run with the cell functions of their γ: NaturalCellFunctions, or at γ = 0
// HardCellFunctions (hard DTW, math.h); `body(functions)` gets the one that applies.
template <typename T, typename Body>
inline void with_cell_functions(NaturalCellFunctions<T> f, const Body& body) {
  if (f.gamma == T(0)) {
    body(HardCellFunctions<T>{});
  } else {
    body(f);
  }
}

// GCC vectorizes the cell loops below with a vector epilogue of half a vector and a scalar one:
// a float32 run of 16k + 15 cells ends with 8 cells in one 256-bit vector and 7 cells of scalar
// exp and log1p. On workload C, whose one-pair packs run diagonals of 128-256 cells, a quarter of
// forward_cells_with_weights' time was in that scalar epilogue (benchmarks/README.md).
// in_whole_blocks<T> calls `cells(first, count)` (a loop over cells first, ..., first + count − 1)
// on a multiple of one 512-bit vector of T, then on the run's last vector, whose cells overlap
// cells already computed. Each cell is a function of its inputs only, and no output of these
// loops aliases an input (their callers write another diagonal's buffers than they read), so a
// cell computed twice is written twice with the same bits. Runs shorter than a vector, and runs
// whose remainder is a multiple of half a vector (the epilogue's one vector: a pack of 4 pairs'
// runs in float64 have remainders 0 or 4), run as they are.
template <typename T, typename Cells>
inline void in_whole_blocks(int64_t count, const Cells& cells) {
  constexpr int64_t kBlock = 64 / sizeof(T);  // cells in one 512-bit vector
  const int64_t rest = count % kBlock;
  if (count < kBlock || rest % (kBlock / 2) == 0) return cells(0, count);
  cells(0, count - rest);
  cells(count - kBlock, kBlock);
}

// The forward's soft cells on the avx512 path (interleaved_vectors.h): `blocks(n)` runs the
// interleaved loop on the run's first n cells, its whole blocks (of 64 float32 or 32 float64
// cells); returns where the caller's loop takes over: at the blocks' end, or one vector earlier
// than the run's end if fewer cells are left (cells computed twice get the same bits, as in
// in_whole_blocks), so that the rest is never shorter than a vector. 0 (the whole run for the
// caller) for hard DTW, other CPUs and runs shorter than a block. Other compilers and
// architectures have no interleaved loops: their callers start at 0.
#if SOFTDTW_TORCH_HAS_INTERLEAVED_VECTORS
template <typename T, typename Blocks>
inline int64_t interleaved_prefix(const NaturalCellFunctions<T>& f, int64_t count, const Blocks& blocks) {
  if (f.gamma == T(0) || !interleaved_vectors_apply<T>(count)) return 0;
  const int64_t whole = count - count % kInterleavedCells<T>;
  blocks(whole);
  constexpr int64_t kVector = 64 / sizeof(T);
  return whole == count ? count : std::min(whole, count - kVector);
}
#endif

// One anti-diagonal: out[t] = cost[t] + softmin(diag[t], up[t], left[t]). Compiled for AVX2 and
// for the baseline ISA, picked at run time; no FMA contraction (-ffp-contract=off) and the same
// per-lane operations either way, so both give the same bits.
template <typename T, typename Functions>
SOFTDTW_TORCH_CPU_CLONES void forward_cells(const T* __restrict cost, Run<RValue<T>> diag, Run<RValue<T>> up,
                                            Run<RValue<T>> left, Run<RValue<T>> out, int64_t count, Functions f) {
  SOFTDTW_TORCH_IVDEP
  for (int64_t t = 0; t < count; ++t) {
    store(out, t, cell_value(cost[t], load(diag, t), load(up, t), load(left, t), f));
  }
}
template <typename T>
void forward_diagonal(const T* cost, Run<RValue<T>> diag, Run<RValue<T>> up, Run<RValue<T>> left,
                      Run<RValue<T>> out, int64_t count, NaturalCellFunctions<T> f) {
#if SOFTDTW_TORCH_HAS_INTERLEAVED_VECTORS
  const int64_t done = interleaved_prefix(f, count, [&](int64_t blocks) {
    forward_cells_interleaved(cost, diag, up, left, out, blocks, f);
  });
#else
  const int64_t done = 0;
#endif
  with_cell_functions(f, [&](auto cell) {
    in_whole_blocks<T>(count - done, [&](int64_t first, int64_t cells) {
      first += done;
      forward_cells(cost + first, diag + first, up + first, left + first, out + first, cells, cell);
    });
  });
}

#if SOFTDTW_TORCH_HAS_INTERLEAVED_VECTORS
// kInterleavedPaths' probe (interleaved_vectors.h): the forward's soft cells of one run of 64
// blocks (4,096 float32 or 2,048 float64 cells), γ = 1, on the interleaved loops (avx512) or on
// GCC's clones of the plain loop (portable), as forward_diagonal runs them.
template <typename T>
void probe_forward_cells(VectorPath path) {
  constexpr int64_t n = 64 * kInterleavedCells<T>;
  RunVector<RValue<T>> r[3], out;
  for (int i = 0; i < 3; ++i) {
    r[i].resize(n);
    for (int64_t t = 0; t < n; ++t) store(r[i].at(0), t, exact_r(T(50) + static_cast<T>((t * 7 + i * 3) % 13)));
  }
  out.resize(n);
  const std::vector<T> cost(n, T(0.25));
  const auto f = NaturalCellFunctions<T>::for_gamma(1.0);
  if (path == VectorPath::kAvx512) {
    forward_cells_interleaved(cost.data(), r[0].at(0), r[1].at(0), r[2].at(0), out.at(0), n, f);
  } else {
    with_cell_functions(f, [&](auto cell) {
      forward_cells(cost.data(), r[0].at(0), r[1].at(0), r[2].at(0), out.at(0), n, cell);
    });
  }
}

inline void probe_interleaved(VectorPath path) {
  probe_forward_cells<float>(path);
  probe_forward_cells<double>(path);
}
#endif

// The same, also writing each cell's weights over its predecessors (exactly predecessor_weights',
// from the exponentials of its R): what a backward in the same call reads instead of R.
template <typename T, typename Functions>
SOFTDTW_TORCH_CPU_CLONES void forward_cells_with_weights(const T* __restrict cost, Run<RValue<T>> diag,
                                                         Run<RValue<T>> up, Run<RValue<T>> left, Run<RValue<T>> out,
                                                         T* __restrict w_diag, T* __restrict w_up,
                                                         T* __restrict w_left, int64_t count, Functions f) {
  SOFTDTW_TORCH_IVDEP
  for (int64_t t = 0; t < count; ++t) {
    const CellValueAndWeights<T> s = cell_value_and_weights(cost[t], load(diag, t), load(up, t), load(left, t), f);
    store(out, t, s.value);
    w_diag[t] = s.w.diag;
    w_up[t] = s.w.up;
    w_left[t] = s.w.left;
  }
}
template <typename T>
void forward_diagonal_with_weights(const T* cost, Run<RValue<T>> diag, Run<RValue<T>> up, Run<RValue<T>> left,
                                   Run<RValue<T>> out, T* w_diag, T* w_up, T* w_left, int64_t count,
                                   NaturalCellFunctions<T> f) {
#if SOFTDTW_TORCH_HAS_INTERLEAVED_VECTORS
  const int64_t done = interleaved_prefix(f, count, [&](int64_t blocks) {
    forward_cells_with_weights_interleaved(cost, diag, up, left, out, w_diag, w_up, w_left, blocks, f);
  });
#else
  const int64_t done = 0;
#endif
  with_cell_functions(f, [&](auto cell) {
    in_whole_blocks<T>(count - done, [&](int64_t first, int64_t cells) {
      first += done;
      forward_cells_with_weights(cost + first, diag + first, up + first, left + first, out + first, w_diag + first,
                                 w_up + first, w_left + first, cells, cell);
    });
  });
}

// The same with the tangent: tangent_out[t] = tangent_cost[t] + Σ_p w(p)·Ṙ(p), 0 where the cell is
// unreachable (its Ḋ is ignored there: a +inf cost, or outside the band).
template <typename T, typename Functions>
SOFTDTW_TORCH_CPU_CLONES void forward_tangent_cells(
    const T* __restrict cost, Run<RValue<T>> diag, Run<RValue<T>> up, Run<RValue<T>> left,
    const T* __restrict tangent_cost, const T* __restrict tangent_diag, const T* __restrict tangent_up,
    const T* __restrict tangent_left, Run<RValue<T>> out, T* __restrict tangent_out, int64_t count, Functions f) {
  SOFTDTW_TORCH_IVDEP
  for (int64_t t = 0; t < count; ++t) {
    const CellValueAndWeights<T> s = cell_value_and_weights(cost[t], load(diag, t), load(up, t), load(left, t), f);
    store(out, t, s.value);
    const T r_tangent = tangent_cost[t] + weighted_tangent(s.w, tangent_diag[t], tangent_up[t], tangent_left[t]);
    tangent_out[t] = is_reachable(s.value) ? r_tangent : T(0);
  }
}
template <typename T>
void forward_tangent_diagonal(const T* cost, Run<RValue<T>> diag, Run<RValue<T>> up, Run<RValue<T>> left,
                              const T* tangent_cost, const T* tangent_diag, const T* tangent_up, const T* tangent_left,
                              Run<RValue<T>> out, T* tangent_out, int64_t count, NaturalCellFunctions<T> f) {
  with_cell_functions(f, [&](auto cell) {
    in_whole_blocks<T>(count, [&](int64_t first, int64_t cells) {
      forward_tangent_cells(cost + first, diag + first, up + first, left + first, tangent_cost + first,
                            tangent_diag + first, tangent_up + first, tangent_left + first, out + first,
                            tangent_out + first, cells, cell);
    });
  });
}

// The tile's costs by anti-diagonal, out[k * kTile + r] = cost(i0 + r, j0 + k − r). Cells outside
// the band get `outside` (+inf for costs: the DP then needs no band test; 0 for tangents). When
// `check`, NaN or −inf inside the band is reported (returns true).
template <typename T, typename TileCosts>
bool costs_by_diagonal(const PairGeometry& g, const TileRange& t, const TileCosts& costs, T* out, T outside,
                       bool check) {
  T scratch[kTile * kTile];
  int64_t stride = 0;
  const T* tile_costs = costs(t, scratch, &stride);
  bool invalid = false;
  for (int64_t r = 0; r < t.h; ++r) {
    int64_t lo, hi;
    g.window->columns(t.i0 + r, &lo, &hi);
    for (int64_t c = 0; c < t.w; ++c) {
      const int64_t j = t.j0 + c;
      T d = tile_costs[r * stride + c];
      if (j < lo || j > hi) {
        d = outside;
      } else if (check) {
        invalid |= !is_valid_cost(d);
      }
      out[(r + c) * kTile + r] = d;
    }
  }
  return invalid;
}

// A tile's diagonals of one quantity the forward carries (V: RValue<T> for R, T for Ṙ): three
// rotating diagonals k − 2, k − 1, k, and the tile's last row and last column as they are computed.
template <typename V>
struct ForwardDiagonals {
  RunStorage<V, kTile + 2> buffers[3];
  Run<V> older = buffers[0].run();  // diagonal k − 2
  Run<V> prev = buffers[1].run();   // diagonal k − 1
  Run<V> cur = buffers[2].run();    // diagonal k
  V bottom[kTile], right[kTile];
  const V* top = nullptr;   // top[c] = value at (i0 − 1, j0 + c)
  const V* left = nullptr;  // left[r] = value at (i0 + r, j0 − 1)

  void begin(ForwardBorders<V>& borders, const TileRange& t, int64_t I) {
    top = &borders.row[t.j0];
    left = &borders.col[t.i0];
    store(older, 0, borders.corner[I]);  // diagonal −2: (−1, −1)
    store(prev, 0, top[0]);              // diagonal −1: (−1, 0) and (0, −1)
    store(prev, 1, left[0]);
    borders.corner[I] = top[t.w - 1];  // (i0 − 1, j0 + w − 1): the corner of tile (I, J + 1)
  }
  // After diagonal k (rows r_lo..r_hi): the border cells of diagonal k + 1, the last row and
  // column, the table, then the rotation.
  void end_diagonal(const TileRange& t, int64_t k, int64_t r_lo, int64_t r_hi, V* table, const TableLayout& layout) {
    if (k + 1 < t.w) store(cur, 0, top[k + 1]);       // (−1, k + 1)
    if (k + 1 < t.h) store(cur, k + 2, left[k + 1]);  // (k + 1, −1)
    if (k >= t.h - 1) bottom[k - (t.h - 1)] = load(cur, t.h);
    if (k >= t.w - 1) right[r_lo] = load(cur, r_lo + 1);
    if (table != nullptr) {
      V* run = table + layout.row_offset(t.i0 + t.j0 + k) + t.i0;  // cell (i0 + r, ·) at run[r]
      for (int64_t r = r_lo; r <= r_hi; ++r) run[r] = load(cur, r + 1);
    }
    const Run<V> recycled = older;
    older = prev;
    prev = cur;
    cur = recycled;
  }
  void finish(ForwardBorders<V>& borders, const TileRange& t) const {
    std::copy_n(bottom, t.w, &borders.row[t.j0]);
    std::copy_n(right, t.h, &borders.col[t.i0]);
  }
};

template <typename T, typename TileCosts, typename Tangent>
void forward_tile(const PairGeometry& g, const TileRange& t, int64_t I, NaturalCellFunctions<T> f,
                  const TileCosts& costs, const Tangent& tangent_costs, ForwardBorders<RValue<T>>& borders,
                  ForwardBorders<T>* tangent_borders, const Tables<T>& tables, uint8_t* invalid) {
  const TableLayout layout(g);
  constexpr bool kTangent = kHasTangent<Tangent>;
  T cost_diagonals[(2 * kTile - 1) * kTile];
  if (costs_by_diagonal(g, t, costs, cost_diagonals, positive_infinity<T>(), /*check=*/true)) *invalid = 1;
  ForwardDiagonals<RValue<T>> r;
  r.begin(borders, t, I);
  // The tangent channel's storage exists only when a tangent rides along (1 element otherwise).
  T tangent_diagonals[kTangent ? (2 * kTile - 1) * kTile : 1];
  std::conditional_t<kTangent, ForwardDiagonals<T>, char> rt{};
  if constexpr (kTangent) {
    costs_by_diagonal(g, t, tangent_costs, tangent_diagonals, T(0), /*check=*/false);
    rt.begin(*tangent_borders, t, I);
  }
  for (int64_t k = 0; k < t.h + t.w - 1; ++k) {
    const int64_t r_lo = std::max<int64_t>(0, k - t.w + 1), r_hi = std::min(t.h - 1, k);
    // Cell (r, k − r): up and diagonal neighbours at slot r, left neighbour at slot r + 1.
    const int64_t at = k * kTile + r_lo, count = r_hi - r_lo + 1;
    if constexpr (kTangent) {
      forward_tangent_diagonal(cost_diagonals + at, r.older + r_lo, r.prev + r_lo, r.prev + r_lo + 1,
                               tangent_diagonals + at, rt.older + r_lo, rt.prev + r_lo, rt.prev + r_lo + 1,
                               r.cur + r_lo + 1, rt.cur + r_lo + 1, count, f);
      rt.end_diagonal(t, k, r_lo, r_hi, tables.R_tangent, layout);
    } else {
      forward_diagonal(cost_diagonals + at, r.older + r_lo, r.prev + r_lo, r.prev + r_lo + 1, r.cur + r_lo + 1, count,
                       f);
    }
    r.end_diagonal(t, k, r_lo, r_hi, tables.R, layout);
  }
  r.finish(borders, t);
  if constexpr (kTangent) rt.finish(*tangent_borders, t);
}

// The forward's results at the pair's last cell: R(n − 1, m − 1) and, with a tangent, Ṙ there.
template <typename T>
struct ForwardEnd {
  T value, tangent;
};

// One pair's forward, with the tangent channel when `tangent_costs` is not NoTangent; writes the
// tables that `tables` names. `invalid` reports NaN or −inf costs.
template <typename T, typename TileCosts, typename Tangent = NoTangent>
ForwardEnd<T> forward_pair(const PairGeometry& g, T gamma, const TileCosts& costs, const Tables<T>& tables,
                           bool parallel, bool* invalid, const Tangent& tangent_costs = Tangent{}) {
  auto borders = borders_of_values<T>(g);
  auto tangent_borders = borders_of_tangents<T>(kHasTangent<Tangent> ? g : PairGeometry{1, 1, nullptr});
  std::vector<uint8_t> invalid_in_tile_row(g.tile_rows(), 0);
  const auto f = NaturalCellFunctions<T>::for_gamma(gamma);
  for_each_tile_in_wavefront(g, /*reverse=*/false, parallel, [&](int64_t I, int64_t J) {
    forward_tile(g, tile_range(g, I, J), I, f, costs, tangent_costs, borders, &tangent_borders, tables,
                 &invalid_in_tile_row[I]);
  });
  *invalid = std::any_of(invalid_in_tile_row.begin(), invalid_in_tile_row.end(), [](uint8_t v) { return v != 0; });
  return {rounded(borders.row[g.m - 1]), kHasTangent<Tangent> ? tangent_borders.row[g.m - 1] : T(0)};
}

// ---------------------------------------------------------------------------------------------
// Backward: E(n−1, m−1) = 1 and E(p) = Σ_{s ∈ succ(p)} w_s(p)·E(s), with w_s the normalized
// soft-argmin weights of successor s over its predecessors (design doc §2, form (c)), computed
// from the stored table. Tiles and their anti-diagonals run in reverse order; a flow diagonal is
// indexed by slot r (rows 0..h, row h being the first row of the tile below), a table diagonal
// by slot r + 1 (rows −1..h − 1). The tangent channel carries Ė and the weights' tangents ẇ in
// the same layout, from the stored tables of R and Ṙ.

// A computed cell as its predecessors see it: its E and the weight it gives each predecessor
// (in the tangent channel: Ė and ẇ).
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
template <typename T, typename Functions>
SOFTDTW_TORCH_CPU_CLONES void backward_cells(Run<RValue<T>> r_self, Run<RValue<T>> r_diag, Run<RValue<T>> r_up,
                                             Run<RValue<T>> r_left, const T* __restrict e_diag_succ,
                                             const T* __restrict w_diag_succ, const T* __restrict e_below,
                                             const T* __restrict w_below, const T* __restrict e_right,
                                             const T* __restrict w_right, T* __restrict e_out,
                                             T* __restrict w_diag_out, T* __restrict w_up_out,
                                             T* __restrict w_left_out, int64_t count, Functions f) {
  SOFTDTW_TORCH_IVDEP
  for (int64_t t = 0; t < count; ++t) {
    const T e = e_diag_succ[t] * w_diag_succ[t] + e_below[t] * w_below[t] + e_right[t] * w_right[t];
    e_out[t] = is_reachable(load(r_self, t)) ? e : T(0);
    const PredecessorWeights<T> w = predecessor_weights(load(r_diag, t), load(r_up, t), load(r_left, t), f);
    w_diag_out[t] = w.diag;
    w_up_out[t] = w.up;
    w_left_out[t] = w.left;
  }
}
template <typename T>
void backward_diagonal(Run<RValue<T>> r_self, Run<RValue<T>> r_diag, Run<RValue<T>> r_up, Run<RValue<T>> r_left,
                       const T* e_diag_succ, const T* w_diag_succ, const T* e_below, const T* w_below,
                       const T* e_right, const T* w_right, T* e_out, T* w_diag_out, T* w_up_out, T* w_left_out,
                       int64_t count, NaturalCellFunctions<T> f) {
  with_cell_functions(f, [&](auto cell) {
    in_whole_blocks<T>(count, [&](int64_t first, int64_t cells) {
      backward_cells(r_self + first, r_diag + first, r_up + first, r_left + first, e_diag_succ + first,
                     w_diag_succ + first, e_below + first, w_below + first, e_right + first, w_right + first,
                     e_out + first, w_diag_out + first, w_up_out + first, w_left_out + first, cells, cell);
    });
  });
}

// float32 arithmetic on values >= 0 carried in float64 with no floating-point operation on a
// subnormal float32 (on x86 each vector instruction that meets one, as an operand or as a result,
// takes a microcode assist; flow_cells' E decays through subnormal values away from the pairs'
// paths, and most of the vectors it computes near them meet one). Each function gives the bits
// float32 arithmetic gives, subnormal results included.
namespace float32_exact {
// A float32 >= 0 as a double: a subnormal from its integer multiple of 2^−149 (−0 gives +0).
inline double widen(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  const bool subnormal = (bits & 0x7f800000u) == 0;  // or zero
  const double tiny = static_cast<double>(static_cast<int32_t>(bits & 0x007fffffu)) * 0x1p-149;
  return subnormal ? tiny : static_cast<double>(subnormal ? 0.0f : v);
}
// p >= 0 rounded to float32 as float32 arithmetic rounds an exact p: below 2^−126 to a multiple
// of 2^−149 (adding 2^−97, whose binade's spacing is 2^−149, rounds to nearest even there, and
// subtracting it is exact), else through float. For a product of two float32 values p is exact;
// for a sum, rounding to 53 bits first changes nothing (53 >= 2·24 + 2: S. A. Figueroa, "When is
// double rounding innocuous?", 1995), and below 2^−126 the sum of two multiples of 2^−149 is exact.
inline double round(double p) {
  const bool tiny = p < 0x1p-126;
  const double on_grid = (p + 0x1p-97) - 0x1p-97;
  const double normal = static_cast<double>(static_cast<float>(tiny ? 0x1p-126 : p));
  return tiny ? on_grid : normal;
}
// A double >= 0 that is a float32 value, as that float32 (a subnormal from its multiple of 2^−149).
inline float narrow(double e) {
  const bool tiny = e < 0x1p-126;
  const uint32_t multiple = static_cast<uint32_t>(static_cast<int32_t>(tiny ? e * 0x1p149 : 0.0));
  const float normal = static_cast<float>(tiny ? 0x1p-126 : e);
  uint32_t bits;
  std::memcpy(&bits, &normal, sizeof(bits));
  bits = tiny ? multiple : bits;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}
}  // namespace float32_exact

// E of one anti-diagonal from its successors' E and the weights they give it, where the weights
// were kept by the forward: backward_cells without the cell's own weights and reachability. An
// unreachable cell needs no mask here: its successors give it weight 0 (exp(−inf)), or have all-zero
// weights themselves, so its E is +0, as backward_cells sets it. In float32 the same operations run
// in float32_exact's float64 (E and the weights are >= 0): the same bits, without the assists.
template <typename T>
SOFTDTW_TORCH_CPU_CLONES void flow_cells(const T* __restrict e_diag_succ, const T* __restrict w_diag_succ,
                                         const T* __restrict e_below, const T* __restrict w_below,
                                         const T* __restrict e_right, const T* __restrict w_right,
                                         T* __restrict e_out, int64_t count) {
  if constexpr (std::is_same_v<T, float>) {
    using namespace float32_exact;
    SOFTDTW_TORCH_IVDEP
    for (int64_t t = 0; t < count; ++t) {
      const double diag = round(widen(e_diag_succ[t]) * widen(w_diag_succ[t]));
      const double below = round(widen(e_below[t]) * widen(w_below[t]));
      const double right = round(widen(e_right[t]) * widen(w_right[t]));
      e_out[t] = narrow(round(round(diag + below) + right));
    }
  } else {
    SOFTDTW_TORCH_IVDEP
    for (int64_t t = 0; t < count; ++t) {
      e_out[t] = e_diag_succ[t] * w_diag_succ[t] + e_below[t] * w_below[t] + e_right[t] * w_right[t];
    }
  }
}
template <typename T>
void flow_diagonal(const T* e_diag_succ, const T* w_diag_succ, const T* e_below, const T* w_below, const T* e_right,
                   const T* w_right, T* e_out, int64_t count) {
  in_whole_blocks<T>(count, [&](int64_t first, int64_t cells) {
    flow_cells(e_diag_succ + first, w_diag_succ + first, e_below + first, w_below + first, e_right + first,
               w_right + first, e_out + first, cells);
  });
}

// The tangent channel of one anti-diagonal, after backward_diagonal has filled the value channel
// (whose successors' E and w, and this diagonal's weights w, it reads): Ė(p) = Σ_s ẇ_s(p)·E(s) +
// w_s(p)·Ė(s) from the successors' tangent flows, then the cell's weight tangents ẇ from its
// weights and Ṙ of its predecessors.
template <typename T, typename Functions>
SOFTDTW_TORCH_CPU_CLONES void backward_tangent_cells(
    Run<RValue<T>> r_self, const T* __restrict w_diag, const T* __restrict w_up, const T* __restrict w_left,
    const T* __restrict t_diag, const T* __restrict t_up, const T* __restrict t_left,
    const T* __restrict e_diag_succ, const T* __restrict w_diag_succ, const T* __restrict et_diag_succ,
    const T* __restrict wt_diag_succ, const T* __restrict e_below, const T* __restrict w_below,
    const T* __restrict et_below, const T* __restrict wt_below, const T* __restrict e_right,
    const T* __restrict w_right, const T* __restrict et_right, const T* __restrict wt_right, T* __restrict et_out,
    T* __restrict wt_diag_out, T* __restrict wt_up_out, T* __restrict wt_left_out, int64_t count, Functions f) {
  SOFTDTW_TORCH_IVDEP
  for (int64_t t = 0; t < count; ++t) {
    const T et = (wt_diag_succ[t] * e_diag_succ[t] + w_diag_succ[t] * et_diag_succ[t]) +
                 (wt_below[t] * e_below[t] + w_below[t] * et_below[t]) +
                 (wt_right[t] * e_right[t] + w_right[t] * et_right[t]);
    et_out[t] = is_reachable(load(r_self, t)) ? et : T(0);
    const PredecessorWeights<T> w{w_diag[t], w_up[t], w_left[t]};
    const PredecessorWeights<T> wt = weight_tangents(w, t_diag[t], t_up[t], t_left[t], f.inv_gamma);
    wt_diag_out[t] = wt.diag;
    wt_up_out[t] = wt.up;
    wt_left_out[t] = wt.left;
  }
}
template <typename T>
void backward_tangent_diagonal(Run<RValue<T>> r_self, const T* w_diag, const T* w_up, const T* w_left,
                               const T* t_diag, const T* t_up, const T* t_left, const T* e_diag_succ,
                               const T* w_diag_succ, const T* et_diag_succ, const T* wt_diag_succ, const T* e_below,
                               const T* w_below, const T* et_below, const T* wt_below, const T* e_right,
                               const T* w_right, const T* et_right, const T* wt_right, T* et_out, T* wt_diag_out,
                               T* wt_up_out, T* wt_left_out, int64_t count, NaturalCellFunctions<T> f) {
  with_cell_functions(f, [&](auto cell) {
    in_whole_blocks<T>(count, [&](int64_t first, int64_t cells) {
      const int64_t o = first;
      backward_tangent_cells(r_self + o, w_diag + o, w_up + o, w_left + o, t_diag + o, t_up + o, t_left + o,
                             e_diag_succ + o, w_diag_succ + o, et_diag_succ + o, wt_diag_succ + o, e_below + o,
                             w_below + o, et_below + o, wt_below + o, e_right + o, w_right + o, et_right + o,
                             wt_right + o, et_out + o, wt_diag_out + o, wt_up_out + o, wt_left_out + o, cells, cell);
    });
  });
}

// out[r + 1] = table(i0 + r, j0 + k − r) for the tile's cells on diagonal k and the border cells
// above and left of the tile, where the virtual border holds `origin` at (−1, −1) and `border`
// elsewhere (R: 0 and +inf; Ṙ: 0 and 0).
template <typename V>
void gather_table_diagonal(const TileRange& t, const V* table, const TableLayout& layout, int64_t k, Run<V> out,
                           V border, V origin) {
  const int64_t r_lo = std::max<int64_t>(-1, k - (t.w - 1)), r_hi = std::min(t.h - 1, k + 1);
  const int64_t diagonal = t.i0 + t.j0 + k;
  // Rows whose cell lies inside the matrix (i, j >= 0): one contiguous run of the table. The
  // others, at most one at each end, are the virtual border.
  const int64_t first = std::max(r_lo, -t.i0), last = std::min(r_hi, diagonal - t.i0);
  auto virtual_cell = [&](int64_t r) { return (t.i0 + r < 0 && diagonal - t.i0 - r < 0) ? origin : border; };
  for (int64_t r = r_lo; r <= std::min(r_hi, first - 1); ++r) store(out, r + 1, virtual_cell(r));
  if (first <= last) {
    const V* run = table + layout.row_offset(diagonal) + t.i0;  // cell (i0 + r, ·) at run[r]
    for (int64_t r = first; r <= last; ++r) store(out, r + 1, run[r]);
  }
  for (int64_t r = std::max(r_lo, last + 1); r <= r_hi; ++r) store(out, r + 1, virtual_cell(r));
}

// Three rotating table diagonals k, k − 1, k − 2 of one table (V: RValue<T> for R, T for Ṙ),
// gathered as the reverse sweep needs them.
template <typename V>
struct TableDiagonals {
  RunStorage<V, kTile + 2> buffers[3];
  Run<V> cur = buffers[0].run();    // diagonal k
  Run<V> prev = buffers[1].run();   // k − 1
  Run<V> older = buffers[2].run();  // k − 2
  const V* table;
  TableLayout layout;
  V border, origin;
  TableDiagonals(const TileRange& t, const V* table, const TableLayout& layout, int64_t last, V border, V origin)
      : table(table), layout(layout), border(border), origin(origin) {
    gather_table_diagonal(t, table, layout, last, cur, border, origin);
    gather_table_diagonal(t, table, layout, last - 1, prev, border, origin);
    gather_table_diagonal(t, table, layout, last - 2, older, border, origin);
  }
  // After diagonal k: k − 1 becomes current and k − 3 is gathered, and the run of diagonal
  // k − 3 − kPrefetchAhead is prefetched. A tile's diagonals lie a whole matrix diagonal apart in
  // the table (16 KiB at 2,048 steps), runs of at most 64 cells read last to first: a pattern the
  // hardware prefetchers do not follow, so the gather waited on most of its loads.
  static constexpr int64_t kPrefetchAhead = 4;
  void step(const TileRange& t, int64_t k) {
    const Run<V> recycled = cur;
    cur = prev;
    prev = older;
    older = recycled;
    if (k - 3 >= -2) gather_table_diagonal(t, table, layout, k - 3, older, border, origin);
    const int64_t ahead = k - 3 - kPrefetchAhead;
    if (ahead >= 0) {
      const int64_t first = std::max<int64_t>(0, ahead - (t.w - 1)), last = std::min(t.h - 1, ahead);
      const V* run = table + layout.row_offset(t.i0 + t.j0 + ahead) + t.i0;  // cell (i0 + r, ·) at run[r]
      constexpr int64_t kPerLine = 64 / static_cast<int64_t>(sizeof(V));
      for (int64_t r = first; r < last + kPerLine; r += kPerLine) __builtin_prefetch(run + std::min(r, last));
    }
  }
};

// One quantity the reverse sweep carries through a tile (E with the weights, or Ė with the weight
// tangents): three rotating flow diagonals k + 2, k + 1, k, the diagonals of the table it reads
// (R, V = RValue<T>; or Ṙ, V = T), and the tile's first row and column as they are computed.
template <typename T, typename V>
struct ReverseChannel {
  const TileRange& t;
  BackwardBorders<T>& borders;
  const CellFlow<T>* below;  // cells (h, c)
  const CellFlow<T>* right;  // cells (r, w)
  CellFlow<T> corner;        // cell (h, w)
  FlowDiagonal<T> flows[3];
  FlowDiagonal<T>* next2 = &flows[0];  // diagonal k + 2
  FlowDiagonal<T>* next1 = &flows[1];  // diagonal k + 1
  FlowDiagonal<T>* cur = &flows[2];    // diagonal k
  TableDiagonals<V> table;
  CellFlow<T> top[kTile], left[kTile];  // the tile's first row and first column

  ReverseChannel(const TileRange& t, int64_t I, BackwardBorders<T>& b, const V* table, const TableLayout& layout,
                 V border, V origin)
      : t(t), borders(b), below(&b.row[t.j0]), right(&b.col[t.i0]), corner(b.corner[I]),
        table(t, table, layout, t.h + t.w - 2, border, origin) {
    b.corner[I] = below[0];  // cell (h, 0): the corner of tile (I, J − 1)
    set_border_slots(t.h + t.w, *next2);
    set_border_slots(t.h + t.w - 1, *next1);
  }
  // Border cells of a flow diagonal k: (h, k − h) below the tile and (k − w, w) right of it.
  void set_border_slots(int64_t k, FlowDiagonal<T>& f) const {
    if (k - t.h >= 0 && k - t.h < t.w) f.set(t.h, below[k - t.h]);
    if (k - t.h == t.w) f.set(t.h, corner);
    if (k - t.w >= 0 && k - t.w < t.h) f.set(k - t.w, right[k - t.w]);
  }
  // After diagonal k (rows r_lo..r_hi) is computed: its border slots, the first row and column,
  // then the rotation.
  void end_diagonal(int64_t k, int64_t r_lo, int64_t r_hi) {
    set_border_slots(k, *cur);
    if (r_lo == 0) top[k] = cur->get(0);
    if (r_hi == k) left[k] = cur->get(k);
    FlowDiagonal<T>* recycled = next2;
    next2 = next1;
    next1 = cur;
    cur = recycled;
    table.step(t, k);
  }
  void finish() const {
    std::copy_n(top, t.w, &borders.row[t.j0]);
    std::copy_n(left, t.h, &borders.col[t.i0]);
  }
};

// emit(i, j, E) receives every cell's expected alignment; with a tangent (kTangent: tables.R_tangent
// and tangent_borders given), emit(i, j, E, Ė).
template <typename T, bool kTangent, typename Emit>
void backward_tile(const PairGeometry& g, const TileRange& t, int64_t I, NaturalCellFunctions<T> f,
                   const ConstTables<T>& tables, BackwardBorders<T>& borders, BackwardBorders<T>* tangent_borders,
                   const Emit& emit) {
  const TableLayout layout(g);
  ReverseChannel<T, RValue<T>> v(t, I, borders, tables.R, layout, exact_r(positive_infinity<T>()), exact_r(T(0)));
  std::optional<ReverseChannel<T, T>> tangent;
  if constexpr (kTangent) tangent.emplace(t, I, *tangent_borders, tables.R_tangent, layout, T(0), T(0));
  const int64_t last = t.h + t.w - 2;
  const bool holds_end = t.i0 + t.h == g.n && t.j0 + t.w == g.m;
  for (int64_t k = last; k >= 0; --k) {
    const int64_t r_lo = std::max<int64_t>(0, k - t.w + 1), r_hi = std::min(t.h - 1, k), count = r_hi - r_lo + 1;
    // Cell (r, c = k − r): successors (r+1, c+1) at slot r + 1 of k + 2, (r+1, c) at slot r + 1 and
    // (r, c+1) at slot r of k + 1; predecessors (r−1, c−1) at slot r of k − 2, (r−1, c) at slot r
    // and (r, c−1) at slot r + 1 of k − 1; the cell itself at slot r + 1 of k.
    const TableDiagonals<RValue<T>>& r = v.table;
    backward_diagonal(r.cur + r_lo + 1, r.older + r_lo, r.prev + r_lo, r.prev + r_lo + 1, v.next2->E + r_lo + 1,
                      v.next2->w_diag + r_lo + 1, v.next1->E + r_lo + 1, v.next1->w_up + r_lo + 1, v.next1->E + r_lo,
                      v.next1->w_left + r_lo, v.cur->E + r_lo, v.cur->w_diag + r_lo, v.cur->w_up + r_lo,
                      v.cur->w_left + r_lo, count, f);
    if (k == last && holds_end) v.cur->E[t.h - 1] = is_reachable(load(r.cur, t.h)) ? T(1) : T(0);  // E(n−1, m−1) = 1
    if constexpr (kTangent) {
      ReverseChannel<T, T>& d = *tangent;
      backward_tangent_diagonal(r.cur + r_lo + 1, v.cur->w_diag + r_lo, v.cur->w_up + r_lo, v.cur->w_left + r_lo,
                                d.table.older + r_lo, d.table.prev + r_lo, d.table.prev + r_lo + 1,
                                v.next2->E + r_lo + 1, v.next2->w_diag + r_lo + 1, d.next2->E + r_lo + 1,
                                d.next2->w_diag + r_lo + 1, v.next1->E + r_lo + 1, v.next1->w_up + r_lo + 1,
                                d.next1->E + r_lo + 1, d.next1->w_up + r_lo + 1, v.next1->E + r_lo,
                                v.next1->w_left + r_lo, d.next1->E + r_lo, d.next1->w_left + r_lo, d.cur->E + r_lo,
                                d.cur->w_diag + r_lo, d.cur->w_up + r_lo, d.cur->w_left + r_lo, count, f);
      if (k == last && holds_end) d.cur->E[t.h - 1] = T(0);  // Ė(n−1, m−1) = 0
      for (int64_t row = r_lo; row <= r_hi; ++row) emit(t.i0 + row, t.j0 + k - row, v.cur->E[row], d.cur->E[row]);
      d.end_diagonal(k, r_lo, r_hi);
    } else {
      for (int64_t row = r_lo; row <= r_hi; ++row) emit(t.i0 + row, t.j0 + k - row, v.cur->E[row]);
    }
    v.end_diagonal(k, r_lo, r_hi);
  }
  v.finish();
  if constexpr (kTangent) tangent->finish();
}

// One pair's reverse recursion from its tables (R; with kTangent also Ṙ), calling emit for every
// cell of the pair (see backward_tile).
template <typename T, bool kTangent = false, typename Emit>
void backward_pair(const PairGeometry& g, T gamma, const ConstTables<T>& tables, bool parallel, const Emit& emit) {
  BackwardBorders<T> borders(g);
  BackwardBorders<T> tangent_borders(kTangent ? g : PairGeometry{1, 1, nullptr});
  const auto f = NaturalCellFunctions<T>::for_gamma(gamma);
  for_each_tile_in_wavefront(g, /*reverse=*/true, parallel, [&](int64_t I, int64_t J) {
    backward_tile<T, kTangent>(g, tile_range(g, I, J), I, f, tables, borders, &tangent_borders, emit);
  });
}

}  // namespace cpu
}  // namespace softdtw_torch
