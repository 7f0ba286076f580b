// Tiled SoftDTW kernels for CUDA (device code and launch sequences; no ATen in this file, so the
// test suite can also run it on the CPU under tests/cuda_emu/cuda_emu.h).
//
// Decomposition (docs/design/softdtw.md §8): each pair's N × M matrix is cut into tiles of
// kTileRows × kTileCols cells. One thread block (kWarps warps) owns one (pair, tile):
//   1. stage: all warps fill a shared-memory tile — the costs (read from D, or computed from x and
//      y in d-chunks staged in shared memory: the fused mode never loops over d in global memory
//      per cell) in the forward; R (plus its top row and left column) in the backward, read from
//      the forward's table or, with checkpoint=True, recomputed from the forward's tile borders;
//   2. sweep: warp 0 runs the DP over the tile as a wavefront, lane l owning kColsPerLane columns
//      and lagging one row behind lane l − 1; the left neighbour's value moves by __shfl_up_sync
//      (forward) or its messages by __shfl_down_sync (backward), never through a block barrier;
//   3. epilogue: all warps write the tile's results with coalesced stores.
// Tiles of one anti-diagonal of tiles are independent, so a forward is one launch per tile
// anti-diagonal: ceil(N/64) + ceil(M/64) − 1 launches, one launch for N, M ≤ 64, with no
// length cap. Launch count and grid depend on shapes only (no host sync, CUDA-graph capturable).
//
// The forward of short pairs (M <= kPairMaxColumns) runs one warp per pair instead, in one launch
// (pair_forward_kernel, below the tile forward), and so does the backward from its table
// (pair_backward_kernel, below the tile backward).
//
// Tile borders travel between launches through small rolling buffers in global memory:
//   forward:  the bottom row of row block rb in top_rows[rb % 3] (3 slots: a tile also reads the
//             corner R(R0−1, C0−1), written two anti-diagonals earlier), the right column of
//             column block cb in left_cols[cb % 2];
//   backward: the messages a tile's first row sends upwards in row_msgs[rb % 3], those of its
//             first column sent leftwards in col_msgs[cb % 2].
// Slot counts were chosen so that no tile overwrites a value another tile of the same or a later
// anti-diagonal still has to read (docs/design/cuda_kernels.md gives the argument). Memory beyond
// the outputs: O(B·(N+M)). A checkpointed forward keeps one slot per block instead: R on every
// tile border, B·N·M·(1/64 + 1/64), from which its backward recomputes the tiles.
//
// Backward in normalized-weight form (design doc §2 (c)): E(p) = Σ_s w_s(p)·E(s) over the
// successors s of p, with w_s the soft-argmin weights of s over its predecessors, recomputed from
// the stored R. A cell s sends three messages, w_s(q)·E(s), to its predecessors q (up, left,
// diagonal); E of a cell is the sum of the messages it receives.
//
// R is carried as RValue<T> (math.h): in float32 a double-float hi + lo, in registers as a pair,
// in shared memory as two planes (hi, lo), in the table and the border buffers as pairs.
//
// Deterministic: every cell and every accumulation is computed by one thread in a fixed order.
// Tiles of one launch have distinct row blocks and distinct column blocks, so the fused backward
// adds its per-tile gradient rows/columns into float64 accumulators without atomics.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../../common/device.cuh"
#include "../constants.h"
#include "../math.h"

namespace softdtw_torch {
namespace tiles {

constexpr int kWarpSize = 32;
constexpr int kTileRows = softdtw::kCudaTileRows;
constexpr int kTileCols = softdtw::kCudaTileCols;
constexpr int kColsPerLane = kTileCols / kWarpSize;
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kTileStride = kTileCols + 1;  // padded row stride: the wavefront's lanes hit distinct banks
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kForwardSlots = 3;   // top_rows slots
constexpr int kBackwardSlots = 3;  // row_msgs slots
constexpr int kColumnSlots = 2;    // left_cols and col_msgs slots

// Features per staged chunk of x and y: 128 bytes of a row per chunk. The tangent channel's
// stages hold four sequences (x, y and their tangents) at once: 64 bytes of each, so that the
// second-order kernels fit 64 KiB of shared memory in float32 (sm_75) and 99 KiB in float64.
template <typename T>
constexpr int kChunkDims = static_cast<int>(128 / sizeof(T));
template <typename T>
constexpr int kTangentChunkDims = static_cast<int>(64 / sizeof(T));

// The float32 special functions of the cell math (below) with their
// worst-case errors from the CUDA C++ Programming Guide: exp2f ≤ 2 ulp; __log2f ≤ 2^-22 absolute
// on [0.5, 2], ≤ 2 ulp elsewhere. The emulator applies those errors too.
#if defined(SDTW_CUDA_EMULATION)
SOFTDTW_TORCH_HOST_DEVICE float device_exp2(float x) { return emu::worst_case_exp2f(x); }
SOFTDTW_TORCH_HOST_DEVICE float device_fast_log2(float x) { return emu::worst_case_log2f_intrinsic(x); }
#else
__device__ __forceinline__ float device_exp2(float x) { return exp2f(x); }
__device__ __forceinline__ float device_fast_log2(float x) { return __log2f(x); }
#endif

// Cell math of the float32 kernels, in base 2 (design doc §7): with k = log2(e)/γ,
//   exp(Δ/γ) = 2^(k·Δ),  γ·log1p(s) = γ·ln2 · log2(1 + s),
// on the special-function unit: half the forward sweep's instructions of expf/log1pf (the
// sweep loops' SASS, docs/design/cuda_kernels.md). Each cell's softmin is then off by at most
// ~3e-7·γ (log2(1 + s) rounds s to float32 before its 2^-22 error), the order of float32
// rounding of R itself. The weights' 1/Σ stays IEEE division: an approximate reciprocal errs the
// same way for the same sum (Σ = 1 exactly on a hard alignment), and E would drift by that much
// per cell along the path. The float64 kernels keep the CPU kernels' precise natural-base form
// (NaturalCellFunctions).
struct Base2CellFunctions {
  float log2e_over_gamma;  // k = log2(e)/γ
  float gamma_ln2;         // γ·ln 2
  float inv_gamma;         // 1/γ: the weights' tangents (design doc §3)
  static constexpr bool kHardMin = false;
  static Base2CellFunctions for_gamma(double gamma) {
    return {static_cast<float>(1.4426950408889634 / gamma), static_cast<float>(gamma * 0.6931471805599453),
            static_cast<float>(1.0 / gamma)};
  }
  __device__ __forceinline__ float term(float delta) const { return device_exp2(delta * log2e_over_gamma); }
  __device__ __forceinline__ float gamma_log1p(float s) const {
    // Exactly 0 for 1 + s = 1 (one reachable predecessor: the first row and column, hard
    // alignments at small γ), where the intrinsic's error would repeat at every such cell.
    const float one_plus_s = 1.0f + s;
    return one_plus_s == 1.0f ? 0.0f : gamma_ln2 * device_fast_log2(one_plus_s);
  }
  __device__ __forceinline__ float reciprocal(float s) const { return 1.0f / s; }
};

template <typename T>
struct CellFunctionsOf;
template <>
struct CellFunctionsOf<float> {
  using type = Base2CellFunctions;
};
template <>
struct CellFunctionsOf<double> {
  using type = NaturalCellFunctions<double>;
};
template <typename T>
using CellFunctions = typename CellFunctionsOf<T>::type;

// Hard DTW (γ = 0, design doc §10): the sweeps run with HardCellFunctions (math.h) instead. The
// kernels are compiled for both (kHard), the launch sequences pick one per call, so the soft
// kernels are exactly what they were; `sweep(cell)` gets the cell functions of the kernel.
template <typename T, bool kHard, typename Sweep>
__device__ __forceinline__ void with_cell_functions(const CellFunctions<T>& cell, const Sweep& sweep) {
  if constexpr (kHard) {
    sweep(HardCellFunctions<T>{});
  } else {
    sweep(cell);
  }
}

// Shapes of one op call (padded sizes; per-pair lengths are clamped to [1, padded]).
struct Geometry {
  int64_t batch = 0, n = 0, m = 0;
  int64_t radius = -1;                 // Sakoe–Chiba radius, -1: none
  // The Itakura parallelogram, nullable: column j of pair b admits the rows
  // [itakura_rows[2 (b·m + j)], itakura_rows[2 (b·m + j) + 1]) (itakura_rows_kernel).
  const int64_t* itakura_rows = nullptr;
  const int64_t* x_lengths = nullptr;  // nullable
  const int64_t* y_lengths = nullptr;  // nullable
  SOFTDTW_TORCH_HOST_DEVICE int64_t row_blocks() const { return (n + kTileRows - 1) / kTileRows; }
  SOFTDTW_TORCH_HOST_DEVICE int64_t col_blocks() const { return (m + kTileCols - 1) / kTileCols; }
  SOFTDTW_TORCH_HOST_DEVICE int64_t diagonals() const { return row_blocks() + col_blocks() - 1; }
  // Tiles (rb, cb) with rb + cb = k: rb runs over [first_row_block(k), first_row_block(k) + count).
  SOFTDTW_TORCH_HOST_DEVICE int64_t first_row_block(int64_t k) const {
    return k - (col_blocks() - 1) > 0 ? k - (col_blocks() - 1) : 0;
  }
  SOFTDTW_TORCH_HOST_DEVICE int64_t tiles_on_diagonal(int64_t k) const {
    const int64_t last = k < row_blocks() - 1 ? k : row_blocks() - 1;
    return last - first_row_block(k) + 1;
  }
};

// The (pair, tile) a thread block works on, and the pair's extent inside the tile.
struct Tile {
  int64_t b, rb, cb;
  int64_t r0, c0;  // first cell
  int64_t n, m;    // the pair's lengths
  int rows, cols;  // cells of the tile inside the pair (<= kTileRows, kTileCols); <= 0: none
  SOFTDTW_TORCH_HOST_DEVICE bool has_end_cell() const {
    return r0 <= n - 1 && n - 1 < r0 + kTileRows && c0 <= m - 1 && m - 1 < c0 + kTileCols;
  }
};

SOFTDTW_TORCH_HOST_DEVICE int64_t pair_length(const int64_t* lengths, int64_t b, int64_t padded) {
  if (lengths == nullptr) return padded;
  const int64_t l = lengths[b];
  return l < 1 ? 1 : (l > padded ? padded : l);
}

SOFTDTW_TORCH_HOST_DEVICE Tile tile_of_block(const Geometry& g, int64_t diagonal, int64_t block) {
  const int64_t count = g.tiles_on_diagonal(diagonal);
  Tile t;
  t.b = block / count;
  t.rb = g.first_row_block(diagonal) + block % count;
  t.cb = diagonal - t.rb;
  t.r0 = t.rb * kTileRows;
  t.c0 = t.cb * kTileCols;
  t.n = pair_length(g.x_lengths, t.b, g.n);
  t.m = pair_length(g.y_lengths, t.b, g.m);
  const int64_t rows = t.n - t.r0, cols = t.m - t.c0;
  t.rows = static_cast<int>(rows < kTileRows ? rows : kTileRows);
  t.cols = static_cast<int>(cols < kTileCols ? cols : kTileCols);
  return t;
}

// Steps of a wavefront sweep: rows plus the lag of the last lane holding a column of the pair.
SOFTDTW_TORCH_HOST_DEVICE int sweep_steps(const Tile& t) { return t.rows + (t.cols - 1) / kColsPerLane; }

// The window (docs/design/softdtw.md §11) as the tile kernels read it, a column at a time: the
// staging loops give each thread one column of the tile (kThreads is a multiple of kTileCols), so
// a thread reads its column's rows once per tile and tests each cell with two comparisons.
static_assert(kThreads % kTileCols == 0, "a staging thread keeps one column of the tile");

// The rows of column j (< m) of pair b (lengths n, m) inside the window, [*lo, *hi] (empty: lo >
// hi): the band's rows of the column (band_columns with rows and columns swapped: the band's rule
// is symmetric in them) and the parallelogram's, from the table itakura_rows_kernel wrote.
SOFTDTW_TORCH_HOST_DEVICE void window_rows(const Geometry& g, int64_t b, int64_t n, int64_t m, int64_t j, int64_t* lo,
                                           int64_t* hi) {
  band_columns(j, m, n, g.radius, lo, hi);
  if (g.itakura_rows != nullptr) {
    const int64_t* rows = g.itakura_rows + 2 * (b * g.m + j);
    *lo = rows[0] > *lo ? rows[0] : *lo;
    *hi = rows[1] - 1 < *hi ? rows[1] - 1 : *hi;
  }
}

// The rows of a column inside the window, [first, last] (empty: first > last).
struct ColumnWindow {
  int first, last;
  SOFTDTW_TORCH_HOST_DEVICE bool contains(int i) const { return first <= i && i <= last; }
  // Rows [lo, hi], or the empty window {0, −1} when lo > hi.
  static SOFTDTW_TORCH_HOST_DEVICE ColumnWindow of_rows(int64_t lo, int64_t hi) {
    return lo <= hi ? ColumnWindow{static_cast<int>(lo), static_cast<int>(hi)} : ColumnWindow{0, -1};
  }
};

// Column t.c0 + j's window rows in tile coordinates.
SOFTDTW_TORCH_HOST_DEVICE ColumnWindow column_window(const Geometry& g, const Tile& t, int j) {
  if (j >= t.cols) return {0, -1};
  int64_t lo, hi;
  window_rows(g, t.b, t.n, t.m, t.c0 + j, &lo, &hi);
  lo = lo - t.r0 > 0 ? lo - t.r0 : 0;
  hi = hi - t.r0 < t.rows - 1 ? hi - t.r0 : t.rows - 1;
  return ColumnWindow::of_rows(lo, hi);
}

// Whether any cell of the tile (inside the pair) lies in the window. A tile wholly outside it has
// R = +inf and E = 0 everywhere, whatever its borders: its block skips the sweeps (most tiles of a
// narrow band, or the corners of a parallelogram, on long series). Every thread computes the same
// answer, no barrier needed.
SOFTDTW_TORCH_HOST_DEVICE bool tile_touches_window(const Geometry& g, const Tile& t) {
  if (g.radius < 0 && g.itakura_rows == nullptr) return true;
  for (int j = 0; j < t.cols; ++j) {
    const ColumnWindow w = column_window(g, t, j);
    if (w.first <= w.last) return true;
  }
  return false;
}

// Each pair's parallelogram as its columns' rows (Geometry::itakura_rows, (B, m, 2); the columns
// past the pair's own m admit none), from ItakuraParallelogram (math.h), the CPU kernels' own: one
// thread per (pair, column).
__global__ void __launch_bounds__(kThreads) itakura_rows_kernel(Geometry g, double max_slope, int64_t* rows) {
  const int64_t cell = blockIdx.x * int64_t(kThreads) + threadIdx.x;
  if (cell >= g.batch * g.m) return;
  const int64_t b = cell / g.m, j = cell % g.m;
  const int64_t n = pair_length(g.x_lengths, b, g.n), m = pair_length(g.y_lengths, b, g.m);
  const ItakuraParallelogram parallelogram(n, m, max_slope);
  rows[2 * cell] = j < m ? parallelogram.first_row(j) : n;
  rows[2 * cell + 1] = j < m ? parallelogram.end_row(j) : n;
}

// ---------------------------------------------------------------------------------------------
// Cost staging: fill cost[i * kTileStride + j] for the tile's cells, +inf outside the pair or the
// window; return true when this thread saw an invalid input value (NaN/−inf cost; non-finite x, y).

template <typename T>
struct CostsFromTensor {
  const T* D;  // (B, N, M)
  static constexpr int64_t scratch_elements() { return 0; }
  __device__ bool stage(const Geometry& g, const Tile& t, T* cost, T* /*scratch*/) const {
    bool bad = false;
    const ColumnWindow window = column_window(g, t, threadIdx.x % kTileCols);
    for (int idx = threadIdx.x; idx < kTileRows * kTileCols; idx += kThreads) {
      const int i = idx / kTileCols, j = idx % kTileCols;
      T v = positive_infinity<T>();
      if (window.contains(i)) {
        v = D[(t.b * g.n + t.r0 + i) * g.m + t.c0 + j];
        bad |= !is_valid_cost(v);
      }
      cost[i * kTileStride + j] = v;
    }
    return bad;
  }
  // One pair's costs as pair_forward_kernel reads them: those of a step's cells (i0 − c, j0 + c)
  // that are `inside` the pair and the window (offsets inside a pair are 32-bit:
  // pair_kernels_apply), an L1 prefetch of the cells (i, j0 … j1), and the inputs it checks
  // besides the costs it reads (which the kernel checks): none.
  struct Pair {
    const T* D;  // the pair's (n_padded, m_padded)
    int m;       // padded row length
    template <int kCols>
    __device__ void step_costs(int i0, int j0, const bool (&inside)[kCols], T (&cost)[kCols]) const {
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        if (inside[c]) cost[c] = D[(i0 - c) * m + j0 + c];
      }
    }
    __device__ void prefetch(int i, int j0, int j1) const {
      prefetch_l1(D + (i * m + j0));
      prefetch_l1(D + (i * m + j1));
    }
    __device__ bool inputs_invalid(int /*n*/, int /*m*/, int /*lane*/) const { return false; }
  };
  __device__ Pair pair(const Geometry& g, int64_t b) const { return {D + b * g.n * g.m, static_cast<int>(g.m)}; }
};

// Loads chunk [k0, k0 + kChunk) of rows [first, first + count) of a (B, L, d) sequence into
// dst (row stride kChunk + 1); rows past `valid`, features past d and, when kNullable, a null
// sequence (a zero tangent) read as 0. Flags non-finite values of valid rows.
template <typename T, int kChunk = kChunkDims<T>, bool kNullable = false>
__device__ bool stage_feature_chunk(const T* seq, int64_t b, int64_t padded_len, int64_t d, int64_t first, int count,
                                    int valid, int64_t k0, T* dst) {
  bool bad = false;
  for (int idx = threadIdx.x; idx < count * kChunk; idx += kThreads) {
    const int r = idx / kChunk, k = idx % kChunk;
    T v = T(0);
    if ((!kNullable || seq != nullptr) && r < valid && k0 + k < d) {
      v = seq[((b * padded_len) + first + r) * d + k0 + k];
      bad |= !isfinite(v);
    }
    dst[r * (kChunk + 1) + k] = v;
  }
  return bad;
}

template <typename T>
struct SquaredEuclideanCosts {
  const T* x;  // (B, N, d)
  const T* y;  // (B, M, d)
  int64_t d;
  static constexpr int64_t scratch_elements() { return int64_t(kTileRows + kTileCols) * (kChunkDims<T> + 1); }

  // Thread (row group, column): column j = tid % kTileCols, rows j_group + 2q; the running sums
  // of its cells stay in registers across the d-chunks. Lanes of a warp share the row (x reads
  // broadcast) and differ by column (y reads on distinct banks thanks to the padded stride).
  __device__ bool stage(const Geometry& g, const Tile& t, T* cost, T* scratch) const {
    constexpr int kChunk = kChunkDims<T>;
    constexpr int kGroups = kThreads / kTileCols;
    constexpr int kRowsPerThread = kTileRows / kGroups;
    T* xs = scratch;
    T* ys = scratch + kTileRows * (kChunk + 1);
    const int j = threadIdx.x % kTileCols, group = threadIdx.x / kTileCols;
    T acc[kRowsPerThread];
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q) acc[q] = T(0);
    bool bad = false;
    for (int64_t k0 = 0; k0 < d; k0 += kChunk) {
      __syncthreads();  // the previous chunk is consumed
      bad |= stage_feature_chunk(x, t.b, g.n, d, t.r0, kTileRows, t.rows, k0, xs);
      bad |= stage_feature_chunk(y, t.b, g.m, d, t.c0, kTileCols, t.cols, k0, ys);
      __syncthreads();
      const int kc = d - k0 < kChunk ? static_cast<int>(d - k0) : kChunk;
      for (int k = 0; k < kc; ++k) {
        const T yk = ys[j * (kChunk + 1) + k];
#pragma unroll
        for (int q = 0; q < kRowsPerThread; ++q) {
          const T diff = xs[(group + kGroups * q) * (kChunk + 1) + k] - yk;
          acc[q] += diff * diff;
        }
      }
    }
    const ColumnWindow window = column_window(g, t, j);
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q) {
      const int i = group + kGroups * q;
      cost[i * kTileStride + j] = window.contains(i) ? acc[q] : positive_infinity<T>();
    }
    return bad;
  }

  // One pair's costs as pair_forward_kernel reads them: those of a step's cells (i0 − c, j0 + c)
  // that are `inside` the pair and the window, each cell's features summed in the order stage()
  // sums them (the same bits), the step's cells side by side (the others read row and column 0,
  // in bounds, and are dropped); an L1 prefetch of row i of x, which the cells (i, j0 … j1) read
  // (a lane reads the same rows of y every step: they stay in L1); whether any of the pair's rows
  // of x (n) and y (m) holds a non-finite value, the rows stage() checks, read by the warp's lanes
  // in turn (finite x and y make no NaN or −inf cost, so the kernel's check of the costs never
  // fires besides).
  struct Pair {
    const T* x;  // the pair's (n_padded, d)
    const T* y;  // (m_padded, d)
    int d;       // at most kPairMaxFusedDims
    template <int kCols>
    __device__ void step_costs(int i0, int j0, const bool (&inside)[kCols], T (&cost)[kCols]) const {
      int x_row[kCols], y_row[kCols];
      T acc[kCols];
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        x_row[c] = inside[c] ? (i0 - c) * d : 0;
        y_row[c] = inside[c] ? (j0 + c) * d : 0;
        acc[c] = T(0);
      }
      for (int k = 0; k < d; ++k) {
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          const T diff = x[x_row[c] + k] - y[y_row[c] + k];
          acc[c] += diff * diff;
        }
      }
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        if (inside[c]) cost[c] = acc[c];
      }
    }
    __device__ void prefetch(int i, int /*j0*/, int /*j1*/) const {
      prefetch_l1(x + i * d);
      prefetch_l1(x + (i * d + d - 1));
    }
    __device__ bool inputs_invalid(int n, int m, int lane) const {
      bool bad = false;
      for (int idx = lane; idx < n * d; idx += kWarpSize) bad |= !isfinite(x[idx]);
      for (int idx = lane; idx < m * d; idx += kWarpSize) bad |= !isfinite(y[idx]);
      return bad;
    }
  };
  __device__ Pair pair(const Geometry& g, int64_t b) const {
    return {x + b * g.n * d, y + b * g.m * d, static_cast<int>(d)};
  }
};

// Every cell of a tile (row stride kTileStride) set to `value` (V: RValue<T> or T).
template <typename V>
__device__ void fill_tile(Run<V> tile, V value) {
  for (int idx = threadIdx.x; idx < kTileRows * kTileCols; idx += kThreads) {
    store(tile, (idx / kTileCols) * kTileStride + idx % kTileCols, value);
  }
}

// The tangent channel's costs (forward mode and second order, design doc §3): Ḋ of the tile's
// cells, staged as the costs are, 0 outside the pair or the window (Ṙ is 0 there, as R is +inf).
// `NoTangents` stands for a kernel without the channel.
struct NoTangents {
  static constexpr int64_t scratch_elements() { return 0; }
};
template <typename Tangents>
constexpr bool kHasTangents = !std::is_same_v<Tangents, NoTangents>;

// Ḋ read from a (B, N, M) tensor; null: a zero tangent.
template <typename T>
struct TangentsFromTensor {
  const T* D_tangent;
  static constexpr int64_t scratch_elements() { return 0; }
  __device__ void stage(const Geometry& g, const Tile& t, T* tangent, T* /*scratch*/) const {
    const ColumnWindow window = column_window(g, t, threadIdx.x % kTileCols);
    for (int idx = threadIdx.x; idx < kTileRows * kTileCols; idx += kThreads) {
      const int i = idx / kTileCols, j = idx % kTileCols;
      T v = T(0);
      if (D_tangent != nullptr && window.contains(i)) {
        v = D_tangent[(t.b * g.n + t.r0 + i) * g.m + t.c0 + j];
      }
      tangent[i * kTileStride + j] = v;
    }
  }
};

// Ḋ_ij = 2 (x_i − y_j)·(u_i − v_j) of the squared Euclidean costs, for the tangents u of x and v
// of y (each null: zero), with x, y, u and v staged in chunks as SquaredEuclideanCosts does.
template <typename T>
struct SquaredEuclideanTangents {
  const T* x;  // (B, N, d)
  const T* y;  // (B, M, d)
  const T* u;  // (B, N, d) or null
  const T* v;  // (B, M, d) or null
  int64_t d;
  static constexpr int kChunk = kTangentChunkDims<T>;
  static constexpr int64_t scratch_elements() { return 2 * int64_t(kTileRows + kTileCols) * (kChunk + 1); }

  __device__ void stage(const Geometry& g, const Tile& t, T* tangent, T* scratch) const {
    constexpr int kGroups = kThreads / kTileCols;
    constexpr int kRowsPerThread = kTileRows / kGroups;
    T* xs = scratch;
    T* us = xs + kTileRows * (kChunk + 1);
    T* ys = us + kTileRows * (kChunk + 1);
    T* vs = ys + kTileCols * (kChunk + 1);
    const int j = threadIdx.x % kTileCols, group = threadIdx.x / kTileCols;
    T acc[kRowsPerThread];
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q) acc[q] = T(0);
    for (int64_t k0 = 0; k0 < d; k0 += kChunk) {
      __syncthreads();  // the previous chunk is consumed
      stage_feature_chunk<T, kChunk>(x, t.b, g.n, d, t.r0, kTileRows, t.rows, k0, xs);
      stage_feature_chunk<T, kChunk, true>(u, t.b, g.n, d, t.r0, kTileRows, t.rows, k0, us);
      stage_feature_chunk<T, kChunk>(y, t.b, g.m, d, t.c0, kTileCols, t.cols, k0, ys);
      stage_feature_chunk<T, kChunk, true>(v, t.b, g.m, d, t.c0, kTileCols, t.cols, k0, vs);
      __syncthreads();
      const int kc = d - k0 < kChunk ? static_cast<int>(d - k0) : kChunk;
      for (int k = 0; k < kc; ++k) {
        const T yk = ys[j * (kChunk + 1) + k], vk = vs[j * (kChunk + 1) + k];
#pragma unroll
        for (int q = 0; q < kRowsPerThread; ++q) {
          const int row = (group + kGroups * q) * (kChunk + 1) + k;
          acc[q] += (xs[row] - yk) * (us[row] - vk);
        }
      }
    }
    const ColumnWindow window = column_window(g, t, j);
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q) {
      const int i = group + kGroups * q;
      tangent[i * kTileStride + j] = window.contains(i) ? T(2) * acc[q] : T(0);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Forward.

template <typename T>
struct ForwardArgs {
  Geometry g;
  CellFunctions<T> cell;  // the cell math at this γ
  RValue<T>* table;      // (B, N, M) or nullptr (no-grad or checkpointed forward)
  RValue<T>* top_rows;   // (B, top_slots, M): bottom rows of finished row blocks, in slot rb % top_slots
  RValue<T>* left_cols;  // (B, left_slots, N): right columns of finished column blocks, in slot cb % left_slots
  int64_t top_slots, left_slots;  // rolling (kForwardSlots, kColumnSlots) or all blocks (checkpoints)
  T* values;     // (B,)
  bool* invalid; // (B,)
  bool hard_min = false;  // γ = 0: the kernels with kHard run (HardCellFunctions; `cell` unused)
};

// The tangent channel of a forward (Ṙ beside R): its border buffers, laid out and slotted as the
// value channel's, and Ṙ at each pair's last cell.
template <typename T>
struct TangentForwardArgs {
  T* top_rows = nullptr;   // (B, top_slots, M)
  T* left_cols = nullptr;  // (B, left_slots, N)
  T* values = nullptr;     // (B,)
};

// One channel's tile in shared memory (V: RValue<T> for R, T for Ṙ): the costs (Ḋ; the his of
// the tile), overwritten by R (Ṙ), and its borders, in a plane of kPlane scalars from `hi` (a wide
// R's los in a second plane from `lo`).
template <typename V>
struct ForwardTile {
  using T = typename ScalarOf<V>::type;
  Run<V> tile;  // kTileRows × kTileStride
  Run<V> top;   // kTileCols + 1: (r0 − 1, c0 − 1 + j)
  Run<V> left;  // kTileRows: (r0 + i, c0 − 1)
  static constexpr int64_t kPlane = int64_t(kTileRows) * kTileStride + (kTileCols + 1) + kTileRows;
  static __device__ ForwardTile at(T* hi, T* lo = nullptr) {
    const Run<V> r = run_over<V>(hi, lo);
    return {r, r + kTileRows * kTileStride, r + (kTileRows * kTileStride + kTileCols + 1)};
  }
};

// Planes in order: R (its his), Ṙ (kTangent only), then a region the costs' staging scratch and a
// wide R's los share: the forward stages every border only once the scratch is consumed, and the
// sweep writes the tile's los (so the fused kernels, whose scratch is as large as a plane, need
// no more shared memory than before R was wide).
template <typename T, bool kTangent = false>
struct ForwardSmem {
  ForwardTile<RValue<T>> r;  // R
  ForwardTile<T> rt;         // Ṙ (kTangent only)
  T* scratch;
  static constexpr int64_t kPlane = ForwardTile<T>::kPlane;
  static constexpr int64_t kFixed = (kTangent ? 2 : 1) * kPlane;
  static SOFTDTW_TORCH_HOST_DEVICE int64_t elements(int64_t scratch) {
    return kFixed + (kWideR<T> ? (scratch > kPlane ? scratch : kPlane) : scratch);
  }
  static __device__ ForwardSmem carve() {
    T* base = reinterpret_cast<T*>(dynamic_shared_memory());
    ForwardSmem s;
    s.scratch = base + kFixed;
    s.r = ForwardTile<RValue<T>>::at(base, s.scratch);
    s.rt = ForwardTile<T>::at(kTangent ? base + kPlane : base);
    return s;
  }
};

// Where a tile's borders come from: buffers of R (V = RValue<T>; Ṙ: V = T) on the last row of
// each row block and the last column of each column block, `slots` of each per pair (rolling, or
// one per block).
template <typename V>
struct BorderBuffers {
  const V* top_rows;   // (B, top_slots, M)
  const V* left_cols;  // (B, left_slots, N)
  int64_t top_slots, left_slots;
};

// R of the row above the tile (top[j] = R(r0 − 1, c0 − 1 + j), j = 0..kTileCols) and of the
// column left of it (left[i · left_stride] = R(r0 + i, c0 − 1)), from the border buffers or the
// DP's virtual border, `origin` at (−1, −1) and `border` elsewhere: for R r_origin and r_border
// (0 and +inf), for the tangent Ṙ 0 on all of it.
template <typename V>
__device__ void stage_borders(const Geometry& g, const Tile& t, const BorderBuffers<V>& from, Run<V> top,
                              Run<V> left, int left_stride, V border, V origin) {
  const V* above = t.rb > 0 ? from.top_rows + (t.b * from.top_slots + (t.rb - 1) % from.top_slots) * g.m : nullptr;
  for (int j = threadIdx.x; j <= kTileCols; j += kThreads) {
    const int64_t col = t.c0 - 1 + j;
    V v = border;
    if (t.rb == 0) {
      v = col == -1 ? origin : border;
    } else if (col >= 0 && col < t.m) {
      v = above[col];
    }
    store(top, j, v);
  }
  const V* before = t.cb > 0 ? from.left_cols + (t.b * from.left_slots + (t.cb - 1) % from.left_slots) * g.n : nullptr;
  for (int i = threadIdx.x; i < kTileRows; i += kThreads) {
    store(left, i * left_stride, (t.cb > 0 && i < t.rows) ? before[t.r0 + i] : border);
  }
}

// The virtual border of R: +inf, and 0 at (−1, −1).
template <typename T>
__device__ RValue<T> r_border() {
  return exact_r(positive_infinity<T>());
}
template <typename T>
__device__ RValue<T> r_origin() {
  return exact_r(T(0));
}

// R from lane − 1 (the left neighbour's value; a wide R as its two halves).
template <typename T>
__device__ T shuffle_up(T value) {
  return __shfl_up_sync(kFullMask, value, 1);
}
template <typename T>
__device__ WideR<T> shuffle_up(WideR<T> value) {
  return {__shfl_up_sync(kFullMask, value.hi, 1), __shfl_up_sync(kFullMask, value.lo, 1)};
}

// Where the tangent channel of a sweep lives: Ḋ in, Ṙ out (row stride kTileStride), its borders
// as staged by stage_borders. NoSweepTangent: a sweep without it.
template <typename T>
struct SweepTangent {
  T* tile;
  const T* top_row;
  const T* left_col;
};
struct NoSweepTangent {};

// Warp 0's wavefront over the tile: lane l computes row i = step − l of its columns
// [l·kColsPerLane, (l+1)·kColsPerLane), left to right, and overwrites each cost with R.
// tile: costs in (its his), R out (row stride kTileStride); top_row and left_col: as staged by
// stage_borders. With a SweepTangent the lane carries Ṙ beside R through the same steps and
// shuffles: Ṙ = Ḋ + Σ_p w(p)·Ṙ(p), 0 where R is +inf (design doc §3).
template <typename T, typename Cell, typename Tangent = NoSweepTangent>
__device__ void forward_sweep(const Cell& cell, const Tile& t, Run<RValue<T>> tile,
                              Run<RValue<T>> top_row, Run<RValue<T>> left_col, int left_stride,
                              const Tangent& tangent = Tangent{}) {
  constexpr bool kTangent = !std::is_same_v<Tangent, NoSweepTangent>;
  constexpr int kTangentCols = kTangent ? kColsPerLane : 1;
  const int lane = threadIdx.x;
  const RValue<T> inf = r_border<T>();
  RValue<T> up[kColsPerLane];  // R(i − 1, j) of the lane's columns; the top border before row 0
  T t_up[kTangentCols];        // Ṙ of the same cells
#pragma unroll
  for (int c = 0; c < kColsPerLane; ++c) up[c] = load(top_row, 1 + lane * kColsPerLane + c);
  // R left of the lane's first column at rows i and i − 1: lane − 1's last column, first its top
  // border (its "row −1"); for lane 0, the tile's left border column and R(r0 − 1, c0 − 1).
  RValue<T> from_left = shuffle_up(up[kColsPerLane - 1]), from_left_prev = inf;
  if (lane == 0) {
    from_left = t.rows > 0 ? load(left_col, 0) : inf;
    from_left_prev = load(top_row, 0);
  }
  T t_from_left = T(0), t_from_left_prev = T(0);
  if constexpr (kTangent) {
#pragma unroll
    for (int c = 0; c < kColsPerLane; ++c) t_up[c] = tangent.top_row[1 + lane * kColsPerLane + c];
    t_from_left = __shfl_up_sync(kFullMask, t_up[kColsPerLane - 1], 1);
    if (lane == 0) {
      t_from_left = t.rows > 0 ? tangent.left_col[0] : T(0);
      t_from_left_prev = tangent.top_row[0];
    }
  }
  const int steps = sweep_steps(t);
  for (int step = 0; step < steps; ++step) {
    const int i = step - lane;
    RValue<T> left = from_left, diag = from_left_prev;
    if (i >= 0 && i < t.rows) {
      const Run<RValue<T>> row = tile + (i * kTileStride + lane * kColsPerLane);
      const T* cost = hi_values(row);
      if constexpr (kTangent) {
        T t_left = t_from_left, t_diag = t_from_left_prev;
        T* t_row = tangent.tile + i * kTileStride + lane * kColsPerLane;
#pragma unroll
        for (int c = 0; c < kColsPerLane; ++c) {
          const CellValueAndWeights<T> sw = cell_value_and_weights(cost[c], diag, up[c], left, cell);
          const T r_tangent = t_row[c] + weighted_tangent(sw.w, t_diag, t_up[c], t_left);
          const T rt = is_reachable(sw.value) ? r_tangent : T(0);
          diag = up[c];
          up[c] = sw.value;
          left = sw.value;
          store(row, c, sw.value);
          t_diag = t_up[c];
          t_up[c] = rt;
          t_left = rt;
          t_row[c] = rt;
        }
      } else {
#pragma unroll
        for (int c = 0; c < kColsPerLane; ++c) {
          const RValue<T> r = cell_value(cost[c], diag, up[c], left, cell);
          diag = up[c];
          up[c] = r;
          left = r;
          store(row, c, r);
        }
      }
    }
    // Before row 0, up[] holds the top border: lane + 1 then gets its diagonal R(−1, c0 + j − 1).
    from_left_prev = from_left;
    from_left = shuffle_up(up[kColsPerLane - 1]);
    if (lane == 0) from_left = step + 1 < t.rows ? load(left_col, (step + 1) * left_stride) : inf;
    if constexpr (kTangent) {
      t_from_left_prev = t_from_left;
      t_from_left = __shfl_up_sync(kFullMask, t_up[kColsPerLane - 1], 1);
      if (lane == 0) t_from_left = step + 1 < t.rows ? tangent.left_col[(step + 1) * left_stride] : T(0);
    }
  }
}

// The tile's borders for later tiles (bottom row, right column) into one channel's buffers (V:
// RValue<T> or T), and its value at the pair's last cell (rounded to T).
template <typename V, typename T>
__device__ void store_tile_borders(const Geometry& g, const Tile& t, Run<V> tile, V* top_rows, V* left_cols,
                                   int64_t top_slots, int64_t left_slots, T* values) {
  if (t.r0 + kTileRows < t.n) {  // a row block below reads this tile's bottom row
    V* row = top_rows + (t.b * top_slots + t.rb % top_slots) * g.m + t.c0;
    for (int j = threadIdx.x; j < t.cols; j += kThreads) row[j] = load(tile, (kTileRows - 1) * kTileStride + j);
  }
  if (t.c0 + kTileCols < t.m) {  // a column block to the right reads this tile's right column
    V* col = left_cols + (t.b * left_slots + t.cb % left_slots) * g.n + t.r0;
    for (int i = threadIdx.x; i < t.rows; i += kThreads) col[i] = load(tile, i * kTileStride + kTileCols - 1);
  }
  if (threadIdx.x == 0 && t.has_end_cell()) {
    values[t.b] = rounded(load(tile, (t.n - 1 - t.r0) * kTileStride + (t.m - 1 - t.c0)));
  }
}

template <typename T, bool kTangent>
__device__ void forward_epilogue(const ForwardArgs<T>& a, const TangentForwardArgs<T>& ta, const Tile& t,
                                 const ForwardSmem<T, kTangent>& s) {
  if (a.table != nullptr) {
    for (int idx = threadIdx.x; idx < kTileRows * kTileCols; idx += kThreads) {
      const int i = idx / kTileCols, j = idx % kTileCols;
      // Cells past the pair inside the padded table stay +inf (R is +inf-filled when ragged).
      if (i < t.rows && j < t.cols) {
        a.table[(t.b * a.g.n + t.r0 + i) * a.g.m + t.c0 + j] = load(s.r.tile, i * kTileStride + j);
      }
    }
  }
  store_tile_borders(a.g, t, s.r.tile, a.top_rows, a.left_cols, a.top_slots, a.left_slots, a.values);
  if constexpr (kTangent) {
    store_tile_borders(a.g, t, s.rt.tile, ta.top_rows, ta.left_cols, a.top_slots, a.left_slots, ta.values);
  }
}

// A forward's tile: its costs (and with Tangents, its Ḋ), borders, the sweep, the epilogue.
template <typename T, bool kHard, typename Costs, typename Tangents>
__device__ void forward_tile(const ForwardArgs<T>& a, const TangentForwardArgs<T>& ta, int64_t diagonal,
                             const Costs& costs, const Tangents& tangents) {
  constexpr bool kTangent = kHasTangents<Tangents>;
  const Tile t = tile_of_block(a.g, diagonal, blockIdx.x);
  if (t.rows <= 0 || t.cols <= 0) return;  // the tile lies past this pair's end (block-uniform)
  const ForwardSmem<T, kTangent> s = ForwardSmem<T, kTangent>::carve();
  // Outside the window: R = +inf (its inputs are checked by the tiles of its rows/columns inside
  // it) and Ṙ = 0.
  const bool touches_window = tile_touches_window(a.g, t);
  bool bad = false;
  if (touches_window) {
    bad = costs.stage(a.g, t, hi_values(s.r.tile), s.scratch);
    if constexpr (kTangent) {
      __syncthreads();  // the costs' scratch is consumed
      tangents.stage(a.g, t, s.rt.tile, s.scratch);
    }
    if constexpr (kWideR<T>) __syncthreads();  // the scratch is consumed: R's los may overwrite it
    stage_borders(a.g, t, BorderBuffers<RValue<T>>{a.top_rows, a.left_cols, a.top_slots, a.left_slots}, s.r.top,
                  s.r.left, 1, r_border<T>(), r_origin<T>());
    if constexpr (kTangent) {
      stage_borders(a.g, t, BorderBuffers<T>{ta.top_rows, ta.left_cols, a.top_slots, a.left_slots}, s.rt.top,
                    s.rt.left, 1, T(0), T(0));
    }
  } else {
    fill_tile(s.r.tile, r_border<T>());
    if constexpr (kTangent) fill_tile(s.rt.tile, T(0));
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) a.invalid[t.b] = true;
  if (touches_window && threadIdx.x < kWarpSize) {
    with_cell_functions<T, kHard>(a.cell, [&](const auto& cell) {
      if constexpr (kTangent) {
        forward_sweep<T>(cell, t, s.r.tile, s.r.top, s.r.left, 1, SweepTangent<T>{s.rt.tile, s.rt.top, s.rt.left});
      } else {
        forward_sweep<T>(cell, t, s.r.tile, s.r.top, s.r.left, 1);
      }
    });
  }
  __syncthreads();
  forward_epilogue(a, ta, t, s);
}

template <typename T, bool kHard, typename Costs, typename Tangents>
__global__ void __launch_bounds__(kThreads)
    forward_tile_kernel(ForwardArgs<T> a, TangentForwardArgs<T> ta, int64_t diagonal, Costs costs, Tangents tangents) {
  forward_tile<T, kHard>(a, ta, diagonal, costs, tangents);
}

// The same with the tangent channel; one block per SM is enough to launch, so ptxas may use up to
// 255 registers for the two channels' sweep state (at its default bound it spilled 12 bytes on
// sm_90 in float32).
template <typename T, bool kHard, typename Costs, typename Tangents>
__global__ void __launch_bounds__(kThreads, 1)
    tangent_forward_tile_kernel(ForwardArgs<T> a, TangentForwardArgs<T> ta, int64_t diagonal, Costs costs,
                                Tangents tangents) {
  forward_tile<T, kHard>(a, ta, diagonal, costs, tangents);
}

// ---------------------------------------------------------------------------------------------
// Forward, one warp per pair (docs/design/cuda_kernels.md, "One warp per pair"): the forward of
// pairs with at most kPairMaxColumns columns, without the tangent channel or checkpoints.
//
// Lane l owns the columns [l·kCols, (l + 1)·kCols) of its pair, and step a computes the cells
// (a − j, j) of anti-diagonal a in all of them. A lane's kCols cells of one step are independent
// (each reads anti-diagonals a − 1 and a − 2 only), so the chain is one cell per step with kCols
// cells in flight, where the tile sweep chains a lane's cells along a row, and with no launch
// between tiles. R lives in registers, two anti-diagonals per column (two arrays whose roles swap
// every step, two steps a trip, so that they turn by renaming, not copying); the left neighbour's last
// column arrives by one shuffle per step, and the value it sent one step earlier is the diagonal.
// No shared memory, no barrier, one launch for the batch (a grid of ⌈B/kPairWarps⌉ blocks). The
// cell math, the costs' summation order and the window are the tile kernels', so R is the same
// bits (the emulation tests compare the two kernels' tables).
//
// A lane's costs are read where its cells are, a row further each step: the row its first column
// reaches kPairPrefetchSteps steps later is prefetched into L1 (its other columns reach that row
// on the steps after, and lane l + 1 kCols steps after), so that no step waits on L2 or DRAM.
constexpr int kPairWarps = 4;  // pairs per block
constexpr int kPairThreads = kPairWarps * kWarpSize;
constexpr int64_t kPairMaxColumns = softdtw::kCudaPairMaxColumns;
constexpr int kPairMaxColsPerLane = static_cast<int>(kPairMaxColumns / kWarpSize);
static_assert(kPairMaxColumns % kWarpSize == 0, "a lane owns whole columns");
// The fused costs are summed from global memory (L1): d loads of x and of y a cell, cheap for the
// short feature vectors this bounds, where the tiles stage feature chunks in shared memory.
constexpr int64_t kPairMaxFusedDims = softdtw::kCudaPairMaxFusedFeatures;
constexpr int kPairPrefetchSteps = 2;

// R of a table in global memory, read and written a cell at a time by the pair kernels: a float32
// double-float in one 8-byte access (the tables are 8-byte aligned; WideR<float> alone promises
// 4, and would take two).
template <typename V>  // RValue<T>
__device__ V load_table_r(const V* at) {
#if !defined(SDTW_CUDA_EMULATION)
  if constexpr (std::is_same_v<V, WideR<float>>) {
    const float2 both = *reinterpret_cast<const float2*>(at);
    return {both.x, both.y};
  }
#endif
  return *at;
}
template <typename V>
__device__ void store_table_r(V* at, V value) {
#if !defined(SDTW_CUDA_EMULATION)
  if constexpr (std::is_same_v<V, WideR<float>>) {
    *reinterpret_cast<float2*>(at) = make_float2(value.hi, value.lo);
    return;
  }
#endif
  *at = value;
}

template <typename T, bool kHard, int kCols, typename Costs>
__global__ void __launch_bounds__(kPairThreads) pair_forward_kernel(ForwardArgs<T> a, Costs costs) {
  const Geometry& g = a.g;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t b = blockIdx.x * int64_t(kPairWarps) + threadIdx.x / kWarpSize;
  if (b >= g.batch) return;  // the whole warp
  // Positions inside a pair fit 32 bits (pair_kernels_apply); j0: the lane's first column.
  const int n = static_cast<int>(pair_length(g.x_lengths, b, g.n));
  const int m = static_cast<int>(pair_length(g.y_lengths, b, g.m));
  const int j0 = lane * kCols;
  const typename Costs::Pair pair = costs.pair(g, b);
  RValue<T>* const table = a.table != nullptr ? a.table + b * g.n * g.m : nullptr;
  const bool keep_table = table != nullptr;
  const int row_length = static_cast<int>(g.m);
  ColumnWindow window[kCols];  // each column's window rows (within [0, n)); none for columns past the pair
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    int64_t lo = 0, hi = -1;
    if (j0 + c < m) window_rows(g, b, n, m, j0 + c, &lo, &hi);
    window[c] = ColumnWindow::of_rows(lo, hi);
  }
  bool bad = pair.inputs_invalid(n, m, lane);
  with_cell_functions<T, kHard>(a.cell, [&](const auto& cell) {
    const RValue<T> inf = r_border<T>();
    RValue<T> from_left = inf, from_left_diag = inf;  // R of lane − 1's last column on a − 1 and a − 2
    const int last_col = (j0 + kCols - 1 < m ? j0 + kCols : m) - 1;
    // Step `step` (anti-diagonal a = step): R of each column on a − 1 in `r1` and on a − 2 in `r2`,
    // which the step overwrites with a (a column outside the pair carries its R over).
    auto run_step = [&](int step, const RValue<T>(&r1)[kCols], RValue<T>(&r2)[kCols]) {
      if (lane == 0) {  // column −1: R(i, −1) = +inf, R(−1, −1) = 0
        from_left = inf;
        from_left_diag = step == 0 ? r_origin<T>() : inf;
      }
      const int ahead = step + kPairPrefetchSteps - j0;  // the first column's row then
      if (ahead >= 0 && ahead < n && j0 < m) pair.prefetch(ahead, j0, last_col);
      // The step's costs first, so that their loads are in flight together (+inf outside the
      // window); cell c is (step − j0 − c, j0 + c).
      T cost[kCols];
      bool inside[kCols];
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        inside[c] = window[c].contains(step - j0 - c);
        cost[c] = positive_infinity<T>();
      }
      pair.step_costs(step - j0, j0, inside, cost);
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        bad |= inside[c] && !is_valid_cost(cost[c]);
      }
      // Right to left: a column's cell reads its left neighbour's R before that one moves on.
#pragma unroll
      for (int c = kCols - 1; c >= 0; --c) {
        const int i = step - j0 - c;
        const RValue<T> left = c > 0 ? r1[c - 1] : from_left;
        const RValue<T> corner = c > 0 ? r2[c - 1] : from_left_diag;
        RValue<T> r = r1[c];
        if (i >= 0 && i < n && j0 + c < m) {
          r = cell_value(cost[c], corner, r1[c], left, cell);
          if (keep_table) store_table_r(table + (i * row_length + j0 + c), r);
        }
        r2[c] = r;
      }
      from_left_diag = from_left;
      from_left = shuffle_up(r2[kCols - 1]);
    };
    // R of each column on the last two anti-diagonals, a ring that turns by renaming: two steps a
    // trip, the second with the arrays' roles swapped.
    RValue<T> r[2][kCols];
#pragma unroll
    for (int c = 0; c < kCols; ++c) r[0][c] = r[1][c] = inf;
    const int steps = n + m - 1;
    for (int s = 0; s < steps; s += 2) {  // the bound is the same for the whole warp
      run_step(s, r[0], r[1]);
      if (s + 1 == steps) break;
      run_step(s + 1, r[1], r[0]);
    }
    // The last step left R(n − 1, m − 1) with the lane holding column m − 1, in r[steps % 2].
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      if (j0 + c == m - 1) a.values[b] = rounded(steps % 2 == 1 ? r[1][c] : r[0][c]);
    }
  });
  if (__any_sync(kFullMask, bad) && lane == 0) a.invalid[b] = true;
}

// ---------------------------------------------------------------------------------------------
// Backward.

template <typename T>
struct BackwardArgs {
  Geometry g;
  CellFunctions<T> cell;  // the cell math at this γ
  const T* grad;   // (B,): upstream gradient of each pair's value
  T* row_msgs;     // (B, kBackwardSlots, 2, M): [0] up message, [1] diagonal message of a first row's cells
  T* col_msgs;     // (B, kColumnSlots, 2, N): [0] left message, [1] diagonal message of a first column's cells
  bool hard_min = false;  // γ = 0: the kernels with kHard run (HardCellFunctions; `cell` unused)
};

// The tangent channel of a backward (Ė beside E, second order): the tangent of grad (null: 0) and
// the messages ẇ·E + w·Ė, in buffers laid out as the value channel's.
template <typename T>
struct TangentBackwardArgs {
  const T* grad_tangent = nullptr;  // (B,)
  T* row_msgs = nullptr;            // (B, kBackwardSlots, 2, M)
  T* col_msgs = nullptr;            // (B, kColumnSlots, 2, N)
};

// One channel's reverse state in shared memory: R (V = RValue<T>; Ṙ: V = T) of the tile with its
// top row and left column, the tile's part overwritten by E (Ė: in the his of a wide R); the
// messages the tiles below and to the right sent into the tile; those its first row and first
// column send out.
template <typename T, typename V = T>
struct ReverseTile {
  Run<V> rt;      // (kTileRows + 1) × kTileStride: R(r0 − 1 + a, c0 − 1 + b); the tile's part becomes E
  T* below_up;    // kTileCols: up message from (r0 + kTileRows, c0 + j)
  T* below_diag;  // kTileCols: diagonal message from (r0 + kTileRows, c0 + j + 1)
  T* right_left;  // kTileRows: left message from (r0 + i, c0 + kTileCols)
  T* right_diag;  // kTileRows: diagonal message from (r0 + i + 1, c0 + kTileCols), i + 1 < kTileRows
  T* first_row;   // 2 × kTileCols: messages of row r0 (up, then diagonal) for the tile above
  T* first_col;   // 2 × kTileRows: messages of column c0 (left, then diagonal) for the tile to the left
  static constexpr int64_t kPlane = int64_t(kTileRows + 1) * kTileStride;
  static constexpr int64_t kElements = kPlane + 4 * kTileCols + 4 * kTileRows;  // without a wide R's los
  static __device__ ReverseTile at(T* base, T* lo = nullptr) {
    ReverseTile s;
    s.rt = run_over<V>(base, lo);
    s.below_up = base + kPlane;
    s.below_diag = s.below_up + kTileCols;
    s.right_left = s.below_diag + kTileCols;
    s.right_diag = s.right_left + kTileRows;
    s.first_row = s.right_diag + kTileRows;
    s.first_col = s.first_row + 2 * kTileCols;
    return s;
  }
  // Tile cell (i, j), i, j >= −1: its R (Ṙ), the run from it, and its E (Ė; the hi of a wide R).
  __device__ V r_at(int i, int j) const { return load(rt, (i + 1) * kTileStride + (j + 1)); }
  __device__ Run<V> run_at(int i, int j) const { return rt + ((i + 1) * kTileStride + (j + 1)); }
  __device__ T& at(int i, int j) const { return hi_values(rt)[(i + 1) * kTileStride + (j + 1)]; }
};

// As ForwardSmem: R's tile (his) with its messages, Ṙ's (kTangent only), then a region the
// scratch (the staging of a recomputed tile's costs, then the epilogue's) and a wide R's los
// share: the sources stage R's borders once the costs are staged, and the epilogue runs after
// the sweep, the last reader of the los.
template <typename T, bool kTangent = false>
struct BackwardSmem {
  ReverseTile<T, RValue<T>> v;  // R, then E
  ReverseTile<T> d;             // Ṙ, then Ė (kTangent only)
  T* scratch;
  static constexpr int64_t kPlane = ReverseTile<T>::kPlane;
  static constexpr int64_t kFixed = (kTangent ? 2 : 1) * ReverseTile<T>::kElements;
  static SOFTDTW_TORCH_HOST_DEVICE int64_t elements(int64_t scratch) {
    return kFixed + (kWideR<T> ? (scratch > kPlane ? scratch : kPlane) : scratch);
  }
  static __device__ BackwardSmem carve() {
    T* base = reinterpret_cast<T*>(dynamic_shared_memory());
    BackwardSmem s;
    s.scratch = base + kFixed;
    s.v = ReverseTile<T, RValue<T>>::at(base, s.scratch);
    s.d = ReverseTile<T>::at(kTangent ? base + ReverseTile<T>::kElements : base);
    return s;
  }
  __device__ T& at(int i, int j) const { return v.at(i, j); }
};

// Where the backward gets R of a tile, its top row and its left column (into s.at(i, j), i, j >= −1):
// the table the forward kept ...
template <typename T>
struct RFromTable {
  const RValue<T>* table;  // (B, N, M)
  static constexpr bool kTangent = false;
  static constexpr int64_t scratch_elements() { return 0; }
  template <bool kHard>
  __device__ void stage(const BackwardArgs<T>& a, const Tile& t, const BackwardSmem<T>& s) const {
    const RValue<T>* R = table + t.b * a.g.n * a.g.m;
    const Run<RValue<T>> corner = s.v.run_at(-1, -1);
    for (int idx = threadIdx.x; idx < (kTileRows + 1) * (kTileCols + 1); idx += kThreads) {
      const int i = idx / (kTileCols + 1) - 1, j = idx % (kTileCols + 1) - 1;
      const int64_t gi = t.r0 + i, gj = t.c0 + j;
      RValue<T> v = r_border<T>();
      if (gi == -1 && gj == -1) {
        v = r_origin<T>();
      } else if (gi >= 0 && gj >= 0 && gi < t.n && gj < t.m) {
        v = R[gi * a.g.m + gj];
      }
      store(corner, (i + 1) * kTileStride + (j + 1), v);
    }
  }
};

// ... or the tile recomputed from the forward's checkpoints (R on the last row of every row block
// and the last column of every column block): its costs, then its forward sweep. Memory: B·N·M
// (1/64 + 1/64) instead of B·N·M, for one more forward sweep per tile.
template <typename T, typename Costs>
struct RFromCheckpoints {
  Costs costs;
  BorderBuffers<RValue<T>> checkpoints;
  static constexpr bool kTangent = false;
  static constexpr int64_t scratch_elements() { return Costs::scratch_elements(); }
  template <bool kHard>
  __device__ void stage(const BackwardArgs<T>& a, const Tile& t, const BackwardSmem<T>& s) const {
    costs.stage(a.g, t, &s.at(0, 0), s.scratch);  // inputs were validated by the forward
    if constexpr (kWideR<T>) __syncthreads();      // the scratch is consumed: R's los may overwrite it
    stage_borders(a.g, t, checkpoints, s.v.run_at(-1, -1), s.v.run_at(0, -1), kTileStride, r_border<T>(),
                  r_origin<T>());
    __syncthreads();
    if (threadIdx.x < kWarpSize) {
      with_cell_functions<T, kHard>(a.cell, [&](const auto& cell) {
        forward_sweep<T>(cell, t, s.v.run_at(0, 0), s.v.run_at(-1, -1), s.v.run_at(0, -1), kTileStride);
      });
    }
  }
};

// The second order's source: R and Ṙ of the tile recomputed from the checkpoints of a forward
// that carried the tangent (its costs and Ḋ, then its forward sweep with the tangent).
template <typename T, typename Costs, typename Tangents>
struct RAndTangentFromCheckpoints {
  Costs costs;
  Tangents tangents;
  BorderBuffers<RValue<T>> checkpoints;
  BorderBuffers<T> tangent_checkpoints;
  static constexpr bool kTangent = true;
  static constexpr int64_t scratch_elements() {
    return Costs::scratch_elements() > Tangents::scratch_elements() ? Costs::scratch_elements()
                                                                    : Tangents::scratch_elements();
  }
  template <bool kHard>
  __device__ void stage(const BackwardArgs<T>& a, const Tile& t, const BackwardSmem<T, true>& s) const {
    costs.stage(a.g, t, &s.v.at(0, 0), s.scratch);  // inputs were validated by the forward
    __syncthreads();  // the costs' scratch is consumed
    tangents.stage(a.g, t, &s.d.at(0, 0), s.scratch);
    if constexpr (kWideR<T>) __syncthreads();  // the scratch is consumed: R's los may overwrite it
    stage_borders(a.g, t, checkpoints, s.v.run_at(-1, -1), s.v.run_at(0, -1), kTileStride, r_border<T>(),
                  r_origin<T>());
    stage_borders(a.g, t, tangent_checkpoints, &s.d.at(-1, -1), &s.d.at(0, -1), kTileStride, T(0), T(0));
    __syncthreads();
    if (threadIdx.x < kWarpSize) {
      with_cell_functions<T, kHard>(a.cell, [&](const auto& cell) {
        forward_sweep<T>(cell, t, s.v.run_at(0, 0), s.v.run_at(-1, -1), s.v.run_at(0, -1), kTileStride,
                         SweepTangent<T>{&s.d.at(0, 0), &s.d.at(-1, -1), &s.d.at(0, -1)});
      });
    }
  }
};

// The messages the tile below and the tile to the right sent into this one (one channel).
template <typename T, typename V>
__device__ void stage_incoming_messages(const Geometry& g, const Tile& t, const T* row_msgs, const T* col_msgs,
                                        const ReverseTile<T, V>& s) {
  const bool has_below = t.r0 + kTileRows < t.n, has_right = t.c0 + kTileCols < t.m;
  const T* below = row_msgs + (t.b * kBackwardSlots + (t.rb + 1) % kBackwardSlots) * 2 * g.m;
  for (int j = threadIdx.x; j < kTileCols; j += kThreads) {
    const int64_t gj = t.c0 + j;
    s.below_up[j] = (has_below && gj < t.m) ? below[gj] : T(0);
    s.below_diag[j] = (has_below && gj + 1 < t.m) ? below[g.m + gj + 1] : T(0);
  }
  const T* right = col_msgs + (t.b * kColumnSlots + (t.cb + 1) % kColumnSlots) * 2 * g.n;
  for (int i = threadIdx.x; i < kTileRows; i += kThreads) {
    const int64_t gi = t.r0 + i;
    s.right_left[i] = (has_right && gi < t.n) ? right[gi] : T(0);
    s.right_diag[i] = (has_right && i + 1 < kTileRows && gi + 1 < t.n) ? right[g.n + gi + 1] : T(0);
  }
}

// One lane's messages in flight during the reverse sweep, for one channel: what it received from
// the row below (up and diagonal messages of its columns) and from lane + 1 (left and diagonal).
template <typename T>
struct LaneMessages {
  T from_below_up[kColsPerLane];    // up message from (i + 1, j)
  T from_below_diag[kColsPerLane];  // diagonal message from (i + 1, j + 1)
  T recv_left = T(0), recv_diag = T(0), recv_diag_prev = T(0);  // lane + 1's first column, rows i and i + 1
  template <typename V>
  __device__ void load(const ReverseTile<T, V>& s, int lane) {
#pragma unroll
    for (int c = 0; c < kColsPerLane; ++c) {
      from_below_up[c] = s.below_up[lane * kColsPerLane + c];
      from_below_diag[c] = s.below_diag[lane * kColsPerLane + c];
    }
  }
  // The left message into the lane's last column at row i, and the diagonal one from row i + 1.
  template <typename V>
  __device__ T begin_row(const ReverseTile<T, V>& s, const Tile& t, int i, bool last_lane) {
    if (i < t.rows - 1) from_below_diag[kColsPerLane - 1] = last_lane ? s.right_diag[i] : recv_diag_prev;
    return last_lane ? s.right_left[i] : recv_left;
  }
  // After the row: the messages the lane's cells sent up become those the next row receives, and
  // row 0's go to the tile above, column c0's to the tile to the left.
  template <typename V>
  __device__ void end_row(const ReverseTile<T, V>& s, int i, int lane, const T (&new_up)[kColsPerLane],
                          const T (&new_diag)[kColsPerLane], T left_msg) {
#pragma unroll
    for (int c = 0; c < kColsPerLane; ++c) from_below_up[c] = new_up[c];
#pragma unroll
    for (int c = 0; c + 1 < kColsPerLane; ++c) from_below_diag[c] = new_diag[c + 1];
    if (i == 0) {
#pragma unroll
      for (int c = 0; c < kColsPerLane; ++c) {
        s.first_row[lane * kColsPerLane + c] = new_up[c];
        s.first_row[kTileCols + lane * kColsPerLane + c] = new_diag[c];
      }
    }
    if (lane == 0) {
      s.first_col[i] = left_msg;
      s.first_col[kTileRows + i] = new_diag[0];
    }
  }
  // Between steps: lane + 1's first column messages move down to this lane.
  __device__ void exchange(T out_left, T out_diag) {
    recv_diag_prev = recv_diag;
    recv_left = __shfl_down_sync(kFullMask, out_left, 1);
    recv_diag = __shfl_down_sync(kFullMask, out_diag, 1);
  }
};

// Warp 0's reverse wavefront: lane l handles row i = (rows − 1) − (step − lag(l)) of its
// columns, right to left, where the lane holding the pair's last column in the tile leads. E of
// a cell is the sum of the messages from its successors; it then sends w·E to its predecessors
// and overwrites its R with E (no later cell needs that R: it is a predecessor only of cells
// already done). With kTangent the same for Ė, whose messages are ẇ·E + w·Ė (design doc §3),
// ẇ from Ṙ of the predecessors, which Ė overwrites likewise.
template <typename T, bool kTangent, typename Cell>
__device__ void backward_sweep(const Cell& cell, const Tile& t, const BackwardSmem<T, kTangent>& s) {
  const int lane = threadIdx.x;
  const int lead_lane = (t.cols - 1) / kColsPerLane;
  LaneMessages<T> m;
  m.load(s.v, lane);
  LaneMessages<T> mt;  // the tangent channel's (unused without it)
  if constexpr (kTangent) mt.load(s.d, lane);
  const bool end_here = t.has_end_cell();
  const int end_i = static_cast<int>(t.n - 1 - t.r0), end_j = static_cast<int>(t.m - 1 - t.c0);
  const int steps = sweep_steps(t);
  for (int step = 0; step < steps; ++step) {
    const int i = (t.rows - 1) - step + (lead_lane - lane);
    T out_left = T(0), out_diag = T(0), t_out_left = T(0), t_out_diag = T(0);
    if (i >= 0 && i < t.rows) {
      const bool last_lane = lane == kWarpSize - 1;
      T left_msg = m.begin_row(s.v, t, i, last_lane);
      T t_left_msg = T(0);
      if constexpr (kTangent) t_left_msg = mt.begin_row(s.d, t, i, last_lane);
      T new_up[kColsPerLane], new_diag[kColsPerLane];
      T t_new_up[kColsPerLane], t_new_diag[kColsPerLane];
#pragma unroll
      for (int c = kColsPerLane - 1; c >= 0; --c) {
        const int j = lane * kColsPerLane + c;
        T E = m.from_below_up[c] + left_msg + m.from_below_diag[c];
        const RValue<T> r = s.v.r_at(i, j);
        if (end_here && i == end_i && j == end_j) E = T(1);
        if (!is_reachable(r)) E = T(0);
        const PredecessorWeights<T> w =
            predecessor_weights(s.v.r_at(i - 1, j - 1), s.v.r_at(i - 1, j), s.v.r_at(i, j - 1), cell);
        s.v.at(i, j) = E;
        new_up[c] = w.up * E;
        new_diag[c] = w.diag * E;
        left_msg = w.left * E;
        if constexpr (kTangent) {
          T Et = mt.from_below_up[c] + t_left_msg + mt.from_below_diag[c];
          if ((end_here && i == end_i && j == end_j) || !is_reachable(r)) Et = T(0);
          const PredecessorWeights<T> wt =
              weight_tangents(w, s.d.at(i - 1, j - 1), s.d.at(i - 1, j), s.d.at(i, j - 1), cell.inv_gamma);
          s.d.at(i, j) = Et;
          t_new_up[c] = wt.up * E + w.up * Et;
          t_new_diag[c] = wt.diag * E + w.diag * Et;
          t_left_msg = wt.left * E + w.left * Et;
        }
      }
      out_left = left_msg;
      out_diag = new_diag[0];
      m.end_row(s.v, i, lane, new_up, new_diag, left_msg);
      if constexpr (kTangent) {
        t_out_left = t_left_msg;
        t_out_diag = t_new_diag[0];
        mt.end_row(s.d, i, lane, t_new_up, t_new_diag, t_left_msg);
      }
    }
    __syncwarp();  // this step's E stores are visible before neighbours read R around them
    m.exchange(out_left, out_diag);
    if constexpr (kTangent) mt.exchange(t_out_left, t_out_diag);
  }
}

// The messages the tile above and the tile to the left will read (one channel).
template <typename T, typename V>
__device__ void backward_store_messages(const Geometry& g, const Tile& t, T* row_msgs, T* col_msgs,
                                        const ReverseTile<T, V>& s) {
  if (t.rb > 0) {
    T* up = row_msgs + (t.b * kBackwardSlots + t.rb % kBackwardSlots) * 2 * g.m + t.c0;
    for (int j = threadIdx.x; j < t.cols; j += kThreads) {
      up[j] = s.first_row[j];
      up[g.m + j] = s.first_row[kTileCols + j];
    }
  }
  if (t.cb > 0) {
    T* left = col_msgs + (t.b * kColumnSlots + t.cb % kColumnSlots) * 2 * g.n + t.r0;
    for (int i = threadIdx.x; i < t.rows; i += kThreads) {
      left[i] = s.first_col[i];
      left[g.n + i] = s.first_col[kTileRows + i];
    }
  }
}

// Epilogue of soft_dtw_from_cost's backward: ∂/∂D = grad · E.
template <typename T>
struct WriteCostGradient {
  T* grad_D;  // (B, N, M)
  static constexpr bool kWritesZeros = true;  // ∂D is uninitialized memory: tiles outside the window write their 0s
  static constexpr int64_t scratch_elements() { return 0; }
  __device__ void operator()(const BackwardArgs<T>& a, const TangentBackwardArgs<T>&, const Tile& t,
                             const BackwardSmem<T>& s) const {
    const T scale = a.grad[t.b];
    for (int idx = threadIdx.x; idx < kTileRows * kTileCols; idx += kThreads) {
      const int i = idx / kTileCols, j = idx % kTileCols;
      if (i < t.rows && j < t.cols) grad_D[(t.b * a.g.n + t.r0 + i) * a.g.m + t.c0 + j] = scale * s.at(i, j);
    }
  }
};

// Epilogue of soft_dtw_from_cost's second order: grad_tangent·E + grad·Ė, and grad·E when grad_D
// is given.
template <typename T>
struct WriteCostGradientTangent {
  T* grad_D_tangent;  // (B, N, M)
  T* grad_D;          // (B, N, M) or null
  static constexpr bool kWritesZeros = true;
  static constexpr int64_t scratch_elements() { return 0; }
  __device__ void operator()(const BackwardArgs<T>& a, const TangentBackwardArgs<T>& ta, const Tile& t,
                             const BackwardSmem<T, true>& s) const {
    const T g = a.grad[t.b];
    const T gt = ta.grad_tangent != nullptr ? ta.grad_tangent[t.b] : T(0);
    for (int idx = threadIdx.x; idx < kTileRows * kTileCols; idx += kThreads) {
      const int i = idx / kTileCols, j = idx % kTileCols;
      if (i >= t.rows || j >= t.cols) continue;
      const int64_t at = (t.b * a.g.n + t.r0 + i) * a.g.m + t.c0 + j;
      const T E = s.v.at(i, j), Et = s.d.at(i, j);
      grad_D_tangent[at] = gt * E + g * Et;
      if (grad_D != nullptr) grad_D[at] = g * E;
    }
  }
};

// Epilogue of the fused backward: acc_x[i] += Σ_j E_ij (x_i − y_j), acc_y[j] += Σ_i E_ij (y_j − x_i)
// over the tile (float64 running sums; ∂/∂x = 2·grad·acc_x, applied once at the end), per chunk
// of features staged in shared memory: thread (group, k) handles feature k of rows group + q·G.
template <typename T>
struct AccumulateSequenceGradients {
  const T* x;  // (B, N, d)
  const T* y;  // (B, M, d)
  int64_t d;
  double* acc_x;  // (B, N, d)
  double* acc_y;  // (B, M, d)
  static constexpr bool kWritesZeros = false;  // adding 0 changes nothing: tiles outside the window skip it
  static constexpr int64_t scratch_elements() { return int64_t(kTileRows + kTileCols) * (kChunkDims<T> + 1); }

  __device__ void operator()(const BackwardArgs<T>& a, const TangentBackwardArgs<T>&, const Tile& t,
                             const BackwardSmem<T>& s) const {
    constexpr int kChunk = kChunkDims<T>;
    constexpr int kGroups = kThreads / kChunk;
    T* xs = s.scratch;
    T* ys = s.scratch + kTileRows * (kChunk + 1);
    const int k = threadIdx.x % kChunk, group = threadIdx.x / kChunk;
    for (int64_t k0 = 0; k0 < d; k0 += kChunk) {
      __syncthreads();
      stage_feature_chunk(x, t.b, a.g.n, d, t.r0, kTileRows, t.rows, k0, xs);
      stage_feature_chunk(y, t.b, a.g.m, d, t.c0, kTileCols, t.cols, k0, ys);
      __syncthreads();
      if (k0 + k >= d) continue;
      for (int i = group; i < t.rows; i += kGroups) {
        const T xi = xs[i * (kChunk + 1) + k];
        T sum = T(0);
        for (int j = 0; j < t.cols; ++j) sum += s.at(i, j) * (xi - ys[j * (kChunk + 1) + k]);
        acc_x[((t.b * a.g.n) + t.r0 + i) * d + k0 + k] += static_cast<double>(sum);
      }
      for (int j = group; j < t.cols; j += kGroups) {
        const T yj = ys[j * (kChunk + 1) + k];
        T sum = T(0);
        for (int i = 0; i < t.rows; ++i) sum += s.at(i, j) * (yj - xs[i * (kChunk + 1) + k]);
        acc_y[((t.b * a.g.m) + t.c0 + j) * d + k0 + k] += static_cast<double>(sum);
      }
    }
  }
};

// Epilogue of the fused second order: the first order's sums (acc_x, acc_y) and the Hessian
// term's, hess_x[i] += Σ_j Ė_ij (x_i − y_j) + E_ij (u_i − v_j) and its mirror hess_y, with u and v
// the tangents of x and y (null: 0). grad = 2·grad·acc, its tangent 2·(grad_tangent·acc +
// grad·hess), applied once at the end.
template <typename T>
struct AccumulateSequenceGradientTangents {
  const T* x;  // (B, N, d)
  const T* y;  // (B, M, d)
  const T* u;  // (B, N, d) or null
  const T* v;  // (B, M, d) or null
  int64_t d;
  double *acc_x, *acc_y, *hess_x, *hess_y;  // (B, N, d), (B, M, d)
  static constexpr bool kWritesZeros = false;
  static constexpr int kChunk = kTangentChunkDims<T>;
  static constexpr int64_t scratch_elements() { return 2 * int64_t(kTileRows + kTileCols) * (kChunk + 1); }

  __device__ void operator()(const BackwardArgs<T>& a, const TangentBackwardArgs<T>&, const Tile& t,
                             const BackwardSmem<T, true>& s) const {
    constexpr int kGroups = kThreads / kChunk;
    T* xs = s.scratch;
    T* us = xs + kTileRows * (kChunk + 1);
    T* ys = us + kTileRows * (kChunk + 1);
    T* vs = ys + kTileCols * (kChunk + 1);
    const int k = threadIdx.x % kChunk, group = threadIdx.x / kChunk;
    for (int64_t k0 = 0; k0 < d; k0 += kChunk) {
      __syncthreads();
      stage_feature_chunk<T, kChunk>(x, t.b, a.g.n, d, t.r0, kTileRows, t.rows, k0, xs);
      stage_feature_chunk<T, kChunk, true>(u, t.b, a.g.n, d, t.r0, kTileRows, t.rows, k0, us);
      stage_feature_chunk<T, kChunk>(y, t.b, a.g.m, d, t.c0, kTileCols, t.cols, k0, ys);
      stage_feature_chunk<T, kChunk, true>(v, t.b, a.g.m, d, t.c0, kTileCols, t.cols, k0, vs);
      __syncthreads();
      if (k0 + k >= d) continue;
      for (int i = group; i < t.rows; i += kGroups) {
        const T xi = xs[i * (kChunk + 1) + k], ui = us[i * (kChunk + 1) + k];
        T sum = T(0), hess = T(0);
        for (int j = 0; j < t.cols; ++j) {
          const T E = s.v.at(i, j), diff = xi - ys[j * (kChunk + 1) + k];
          sum += E * diff;
          hess += s.d.at(i, j) * diff + E * (ui - vs[j * (kChunk + 1) + k]);
        }
        const int64_t at = ((t.b * a.g.n) + t.r0 + i) * d + k0 + k;
        acc_x[at] += static_cast<double>(sum);
        hess_x[at] += static_cast<double>(hess);
      }
      for (int j = group; j < t.cols; j += kGroups) {
        const T yj = ys[j * (kChunk + 1) + k], vj = vs[j * (kChunk + 1) + k];
        T sum = T(0), hess = T(0);
        for (int i = 0; i < t.rows; ++i) {
          const T E = s.v.at(i, j), diff = yj - xs[i * (kChunk + 1) + k];
          sum += E * diff;
          hess += s.d.at(i, j) * diff + E * (vj - us[i * (kChunk + 1) + k]);
        }
        const int64_t at = ((t.b * a.g.m) + t.c0 + j) * d + k0 + k;
        acc_y[at] += static_cast<double>(sum);
        hess_y[at] += static_cast<double>(hess);
      }
    }
  }
};

// A tile outside the window: E = 0, and so are the messages it sends.
template <typename T, typename V>
__device__ void clear_tile(const ReverseTile<T, V>& s) {
  fill_tile(&s.at(0, 0), T(0));
  for (int k = threadIdx.x; k < 2 * kTileCols; k += kThreads) s.first_row[k] = T(0);
  for (int k = threadIdx.x; k < 2 * kTileRows; k += kThreads) s.first_col[k] = T(0);
}

// A backward's tile: R (and Ṙ) staged, the messages from below and the right, the reverse sweep,
// the messages for the tiles above and to the left, the epilogue.
template <typename T, bool kHard, typename RSource, typename Epilogue>
__device__ void backward_tile(const BackwardArgs<T>& a, const TangentBackwardArgs<T>& ta, int64_t diagonal,
                              const RSource& r_source, const Epilogue& epilogue) {
  constexpr bool kTangent = RSource::kTangent;
  const Tile t = tile_of_block(a.g, diagonal, blockIdx.x);
  if (t.rows <= 0 || t.cols <= 0) return;  // block-uniform
  const BackwardSmem<T, kTangent> s = BackwardSmem<T, kTangent>::carve();
  // Outside the window E = 0 (and Ė = 0), and so are the messages the tile sends (its R is +inf).
  const bool touches_window = tile_touches_window(a.g, t);
  if (touches_window) {
    r_source.template stage<kHard>(a, t, s);
    stage_incoming_messages(a.g, t, a.row_msgs, a.col_msgs, s.v);
    if constexpr (kTangent) stage_incoming_messages(a.g, t, ta.row_msgs, ta.col_msgs, s.d);
  } else {
    clear_tile(s.v);
    if constexpr (kTangent) clear_tile(s.d);
  }
  __syncthreads();
  if (touches_window && threadIdx.x < kWarpSize) {
    with_cell_functions<T, kHard>(a.cell, [&](const auto& cell) { backward_sweep(cell, t, s); });
  }
  __syncthreads();
  backward_store_messages(a.g, t, a.row_msgs, a.col_msgs, s.v);
  if constexpr (kTangent) backward_store_messages(a.g, t, ta.row_msgs, ta.col_msgs, s.d);
  if (touches_window || Epilogue::kWritesZeros) epilogue(a, ta, t, s);
}

template <typename T, bool kHard, typename RSource, typename Epilogue>
__global__ void __launch_bounds__(kThreads) backward_tile_kernel(BackwardArgs<T> a, TangentBackwardArgs<T> ta,
                                                                 int64_t diagonal, RSource r_source, Epilogue epilogue) {
  backward_tile<T, kHard>(a, ta, diagonal, r_source, epilogue);
}

// The same with the tangent channel: as tangent_forward_tile_kernel, one block per SM is enough
// (these tiles take 55 KiB of shared memory in float32, 94 KiB in float64, so few fit anyway).
template <typename T, bool kHard, typename RSource, typename Epilogue>
__global__ void __launch_bounds__(kThreads, 1)
    second_order_backward_tile_kernel(BackwardArgs<T> a, TangentBackwardArgs<T> ta, int64_t diagonal,
                                      RSource r_source, Epilogue epilogue) {
  backward_tile<T, kHard>(a, ta, diagonal, r_source, epilogue);
}

// ---------------------------------------------------------------------------------------------
// Backward, one warp per pair (docs/design/cuda_kernels.md, "One warp per pair"): the reverse
// recursion of the pairs whose forward pair_forward_kernel runs (pair_kernels_apply), from the
// table the forward kept.
//
// Lane l owns the columns [l·kCols, (l + 1)·kCols) of its pair, and step s computes the cells
// (a − j, j) of anti-diagonal a = n + m − 2 − s in all of them. A cell's E sums the messages of its
// successors, (i + 1, j) and (i, j + 1) sent one step earlier and (i + 1, j + 1) two steps
// earlier, in the order backward_sweep adds them; the chain is those two additions and one
// multiplication a step. The cell's weights over its predecessors lie off the chain: they need R
// of anti-diagonals a − 1 and a − 2 only, which the lane keeps in registers for its columns and
// the column left of them (R of column j0 − 1 read again from the table, where a shuffle would
// put two more exchanges on every step), loading the next anti-diagonal at the top of a step for
// the step after and prefetching the rows further ahead into L1. Those four anti-diagonals are a
// ring of register arrays that the loop, four steps a trip, turns by renaming, not copying.
// Messages into the lane's last column from lane + 1's first arrive by two shuffles a step. Each
// cell writes scale·E where the tiles' epilogue writes it: grad·E into ∂/∂D (soft_dtw_from_cost),
// or E (scale 1, exact) for the fused backward's sums (pair_sequence_sums_kernel). The arithmetic
// of every cell, its messages and their sums is backward_sweep's, so the outputs are the tiles'
// bits (the emulation tests compare the two).
template <typename T, bool kHard, int kCols>
__global__ void __launch_bounds__(kPairThreads)
    pair_backward_kernel(BackwardArgs<T> a, const RValue<T>* table, const T* scale, T* out) {
  const Geometry& g = a.g;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t b = blockIdx.x * int64_t(kPairWarps) + threadIdx.x / kWarpSize;
  if (b >= g.batch) return;  // the whole warp
  const int n = static_cast<int>(pair_length(g.x_lengths, b, g.n));
  const int m = static_cast<int>(pair_length(g.y_lengths, b, g.m));
  const int j0 = lane * kCols, row_length = static_cast<int>(g.m);
  const int last_col = (j0 + kCols - 1 < m ? j0 + kCols : m) - 1;
  const RValue<T>* const R = table + b * g.n * g.m;
  T* const cells = out + b * g.n * g.m;
  const T pair_scale = scale != nullptr ? scale[b] : T(1);
  const RValue<T> inf = r_border<T>();
  // R(level − j, j) of the lane's columns and the one left of them, j = j0 − 1 + k: the DP's
  // virtual border outside the pair (0 at (−1, −1)).
  auto r_column = [&](int level, int k) {
    const int j = j0 - 1 + k, i = level - j;
    if (i == -1 && j == -1) return r_origin<T>();
    return (i >= 0 && i < n && j >= 0 && j < m) ? load_table_r(R + (i * row_length + j)) : inf;
  };
  with_cell_functions<T, kHard>(a.cell, [&](const auto& cell) {
    using Column = RValue<T>[kCols + 1];
    using Messages = T[kCols];
    // The messages each column's cell sent one step earlier (up, left), and the diagonal ones of the
    // last two steps in turn: step s reads diag[s % 2], sent at s − 2, and overwrites it with its
    // own. The same of lane + 1's first column (none past the last lane).
    T up[kCols], left[kCols], diag[2][kCols];
#pragma unroll
    for (int c = 0; c < kCols; ++c) up[c] = left[c] = diag[0][c] = diag[1][c] = T(0);
    T right_left = T(0), right_diag = T(0), right_diag_prev = T(0);
    // Step `level`: its cells' R (here), R of anti-diagonals level − 1 and level − 2 (before, before2),
    // and R of level − 3 loaded into `next` for the step after (in flight during this one).
    auto step = [&](int level, const Column& here, const Column& before, const Column& before2, Column& next,
                    Messages& diag_sent) {
#pragma unroll
      for (int k = 0; k <= kCols; ++k) next[k] = r_column(level - 3, k);
      const int ahead = level - 3 - kPairPrefetchSteps - last_col;  // the row the last column then reaches
      if (ahead >= 0 && ahead < n && j0 < m) {
        prefetch_l1(R + (ahead * row_length + (j0 > 0 ? j0 - 1 : 0)));
        prefetch_l1(R + (ahead * row_length + last_col));
      }
      // Left to right: a column's cell reads the messages column c + 1 sent before it sends its own.
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int j = j0 + c, i = level - j;
        T new_up = T(0), new_diag = T(0), new_left = T(0);
        if (i >= 0 && i < n && j < m) {
          const T from_right = c + 1 < kCols ? left[c + 1] : right_left;
          const T from_diag = c + 1 < kCols ? diag_sent[c + 1] : right_diag_prev;
          T E = up[c] + from_right + from_diag;
          if (i == n - 1 && j == m - 1) E = T(1);
          if (!is_reachable(here[c + 1])) E = T(0);
          const PredecessorWeights<T> w = predecessor_weights(before2[c], before[c + 1], before[c], cell);
          cells[i * row_length + j] = pair_scale * E;
          new_up = w.up * E;
          new_diag = w.diag * E;
          new_left = w.left * E;
        }
        up[c] = new_up;
        left[c] = new_left;
        diag_sent[c] = new_diag;
      }
      right_diag_prev = right_diag;
      right_left = __shfl_down_sync(kFullMask, left[0], 1);
      right_diag = __shfl_down_sync(kFullMask, diag_sent[0], 1);
      if (lane == kWarpSize - 1) right_left = right_diag = T(0);
    };
    // R of four consecutive anti-diagonals, a ring that turns by renaming: four steps a trip.
    RValue<T> r[4][kCols + 1];
    const int first = n + m - 2;
#pragma unroll
    for (int k = 0; k <= kCols; ++k) {
      r[0][k] = r_column(first, k);
      r[1][k] = r_column(first - 1, k);
      r[2][k] = r_column(first - 2, k);
    }
    for (int level = first; level >= 0; level -= 4) {  // the bounds below are the same for the whole warp
      step(level, r[0], r[1], r[2], r[3], diag[0]);
      if (level < 1) break;
      step(level - 1, r[1], r[2], r[3], r[0], diag[1]);
      if (level < 2) break;
      step(level - 2, r[2], r[3], r[0], r[1], diag[0]);
      if (level < 3) break;
      step(level - 3, r[3], r[0], r[1], r[2], diag[1]);
    }
  });
}

// The fused backward's sums over the E that pair_backward_kernel wrote, in the order the tiles'
// AccumulateSequenceGradients adds them (the same bits): acc_x[b, i, k] = Σ over the pair's column
// blocks of kTileCols, last to first (the backward's tile order), of the block's Σ_j E_ij (x_ik −
// y_jk) in T, j ascending, each rounded into the float64 sum; acc_y (kRows false) the same over
// row blocks. One thread per (b, i, k), or (b, j, k); rows past a pair's length keep their 0. A
// block wholly outside the window adds +0 (its E is 0), as the tiles skipping it add nothing.
template <typename T, bool kRows>
__global__ void __launch_bounds__(kThreads)
    pair_sequence_sums_kernel(Geometry g, const T* E, const T* x, const T* y, int64_t d, double* acc) {
  const int64_t padded = kRows ? g.n : g.m, other_padded = kRows ? g.m : g.n;
  const int64_t idx = blockIdx.x * int64_t(kThreads) + threadIdx.x;
  if (idx >= g.batch * padded * d) return;
  const int64_t k = idx % d, p = idx / d % padded, b = idx / d / padded;
  const int64_t n = pair_length(g.x_lengths, b, g.n), m = pair_length(g.y_lengths, b, g.m);
  if (p >= (kRows ? n : m)) return;
  const int64_t others = kRows ? m : n;
  constexpr int64_t kBlock = kRows ? kTileCols : kTileRows;
  const T* const E_pair = E + b * g.n * g.m;
  const T* const other = (kRows ? y : x) + b * other_padded * d + k;
  const T v = (kRows ? x : y)[(b * padded + p) * d + k];
  double sum = 0;
  for (int64_t q0 = (others - 1) / kBlock * kBlock; q0 >= 0; q0 -= kBlock) {
    const int64_t q1 = q0 + kBlock < others ? q0 + kBlock : others;
    T part = T(0);
    for (int64_t q = q0; q < q1; ++q) part += E_pair[kRows ? p * g.m + q : q * g.m + p] * (v - other[q * d]);
    sum += static_cast<double>(part);
  }
  acc[idx] = sum;
}

// ---------------------------------------------------------------------------------------------
// Hard DTW's paths (γ = 0, design doc §10) from the forward's table (row by row): one thread per
// pair walks back from its end (math.h, hard_path), O(N + M) steps; paths (B, N + M − 1, 2).

template <typename T>
__global__ void __launch_bounds__(kThreads)
    hard_path_kernel(Geometry g, const RValue<T>* table, int64_t* paths, int64_t* lengths) {
  const int64_t b = blockIdx.x * int64_t(kThreads) + threadIdx.x;
  if (b >= g.batch) return;
  const RValue<T>* R = table + b * g.n * g.m;
  const int64_t stride = g.m;
  auto r_at = [R, stride](int64_t i, int64_t j) {
    if (i < 0 || j < 0) return exact_r((i < 0 && j < 0) ? T(0) : positive_infinity<T>());
    return R[i * stride + j];
  };
  lengths[b] = hard_path<T>(pair_length(g.x_lengths, b, g.n), pair_length(g.y_lengths, b, g.m), r_at,
                            paths + b * 2 * (g.n + g.m - 1));
}

// ---------------------------------------------------------------------------------------------
// Launch sequences, shared by the CUDA ops and the CPU emulation tests. `launch(kernel, blocks,
// threads, smem_bytes, args...)` runs one kernel launch on the caller's stream (../../common/device.cuh).

constexpr int64_t max_of(int64_t a, int64_t b) { return a > b ? a : b; }

template <typename T, typename Costs, typename Tangents = NoTangents>
int64_t forward_smem_bytes() {
  const int64_t scratch = max_of(Costs::scratch_elements(), Tangents::scratch_elements());
  return ForwardSmem<T, kHasTangents<Tangents>>::elements(scratch) * static_cast<int64_t>(sizeof(T));
}

template <typename T, typename RSource, typename Epilogue>
int64_t backward_smem_bytes() {
  const int64_t scratch = max_of(RSource::scratch_elements(), Epilogue::scratch_elements());
  return BackwardSmem<T, RSource::kTangent>::elements(scratch) * static_cast<int64_t>(sizeof(T));
}

template <typename T, typename Costs, typename Tangents, typename Launch>
void launch_forward(const Launch& launch, const ForwardArgs<T>& a, const TangentForwardArgs<T>& ta, const Costs& costs,
                    const Tangents& tangents) {
  const int64_t smem = forward_smem_bytes<T, Costs, Tangents>();
  auto kernel = [&](auto hard) {
    constexpr bool kHard = decltype(hard)::value;
    if constexpr (kHasTangents<Tangents>) return tangent_forward_tile_kernel<T, kHard, Costs, Tangents>;
    else return forward_tile_kernel<T, kHard, Costs, Tangents>;
  };
  const auto tile_kernel = a.hard_min ? kernel(std::true_type{}) : kernel(std::false_type{});
  for (int64_t k = 0; k < a.g.diagonals(); ++k) {
    const int64_t blocks = a.g.tiles_on_diagonal(k) * a.g.batch;
    launch(tile_kernel, blocks, kThreads, smem, a, ta, k, costs, tangents);
  }
}

// Whether the public op `op` runs its forward (no tangent, no checkpoints) and its backward from
// the kept table one warp per pair (pair_forward_kernel, pair_backward_kernel): n rows and m
// columns (padded) and, fused, d features within their regime. The launcher's `small_kernel_cap`
// can turn them off (the emulation tests and CUDA's benchmark switch), to run the tiles on the same
// inputs.
template <typename Launch>
bool pair_kernels_apply(const Launch& launch, const char* op, int64_t n, int64_t m, int64_t fused_dims) {
  // Their steps, positions and offsets inside a pair (of D, the table or E, n·m; of x, n·d) are 32-bit.
  const int64_t offsets = n * (m > fused_dims ? m : fused_dims) + kWarpSize;
  return m <= launch.small_kernel_cap(op, kPairMaxColumns) && fused_dims <= kPairMaxFusedDims &&
         offsets < (int64_t(1) << 31);
}

// The instance of a pair kernel for one call, the same rule for the forward and the backward:
// `instance(hard, cols)` with hard DTW's cell functions or not and the columns a lane owns for
// pairs of m (padded) columns, 2 (m <= 64), 4 (m <= 128) or 8 (m <= kPairMaxColumns).
template <typename Instance>
auto pair_kernel_for(bool hard_min, int64_t m, const Instance& instance) {
  static_assert(kPairMaxColsPerLane == 8, "the columns per lane below are 2, 4 or 8");
  auto with_columns = [&](auto hard) {
    if (m <= 2 * kWarpSize) return instance(hard, std::integral_constant<int, 2>{});
    return m <= 4 * kWarpSize ? instance(hard, std::integral_constant<int, 4>{})
                              : instance(hard, std::integral_constant<int, 8>{});
  };
  return hard_min ? with_columns(std::true_type{}) : with_columns(std::false_type{});
}

template <typename T, typename Costs, typename Launch>
void launch_pair_forward(const Launch& launch, const ForwardArgs<T>& a, const Costs& costs) {
  const auto kernel = pair_kernel_for(a.hard_min, a.g.m, [](auto hard, auto cols) {
    return pair_forward_kernel<T, decltype(hard)::value, decltype(cols)::value, Costs>;
  });
  launch(kernel, (a.g.batch + kPairWarps - 1) / kPairWarps, kPairThreads, 0, a, costs);
}

// pair_backward_kernel over the batch: scale·E of every cell of each pair into out (B, N, M), from
// the forward's table; scale: each pair's grad, or null for E itself.
template <typename T, typename Launch>
void launch_pair_backward(const Launch& launch, const BackwardArgs<T>& a, const RValue<T>* table, const T* scale,
                          T* out) {
  const auto kernel = pair_kernel_for(a.hard_min, a.g.m, [](auto hard, auto cols) {
    return pair_backward_kernel<T, decltype(hard)::value, decltype(cols)::value>;
  });
  launch(kernel, (a.g.batch + kPairWarps - 1) / kPairWarps, kPairThreads, 0, a, table, scale, out);
}

// The fused backward's float64 sums acc_x (B, N, d) and acc_y (B, M, d) from the E of
// launch_pair_backward: one launch for each.
template <typename T, typename Launch>
void launch_pair_sequence_sums(const Launch& launch, const Geometry& g, const T* E, const T* x, const T* y, int64_t d,
                               double* acc_x, double* acc_y) {
  launch(pair_sequence_sums_kernel<T, true>, (g.batch * g.n * d + kThreads - 1) / kThreads, kThreads, 0, g, E, x, y, d,
         acc_x);
  launch(pair_sequence_sums_kernel<T, false>, (g.batch * g.m * d + kThreads - 1) / kThreads, kThreads, 0, g, E, x, y, d,
         acc_y);
}

template <typename T, typename RSource, typename Epilogue, typename Launch>
void launch_backward(const Launch& launch, const BackwardArgs<T>& a, const TangentBackwardArgs<T>& ta,
                     const RSource& r_source, const Epilogue& epilogue) {
  const int64_t smem = backward_smem_bytes<T, RSource, Epilogue>();
  auto kernel = [&](auto hard) {
    constexpr bool kHard = decltype(hard)::value;
    if constexpr (RSource::kTangent) return second_order_backward_tile_kernel<T, kHard, RSource, Epilogue>;
    else return backward_tile_kernel<T, kHard, RSource, Epilogue>;
  };
  const auto tile_kernel = a.hard_min ? kernel(std::true_type{}) : kernel(std::false_type{});
  for (int64_t k = a.g.diagonals() - 1; k >= 0; --k) {
    const int64_t blocks = a.g.tiles_on_diagonal(k) * a.g.batch;
    launch(tile_kernel, blocks, kThreads, smem, a, ta, k, r_source, epilogue);
  }
}

}  // namespace tiles
}  // namespace softdtw_torch
