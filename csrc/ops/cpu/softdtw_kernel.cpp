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

#include "../softdtw_common.h"
#include "../softdtw_math.h"

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

// costs(tile, scratch, &stride) returns the tile's costs: cost(i0 + r, j0 + c) at [r * stride + c].
template <typename T, typename TileCosts>
void forward_tile(const PairGeometry& g, const TileRange& t, int64_t I, T gamma, T inv_gamma,
                  const TileCosts& costs, ForwardBorders<T>& borders, T* table, int64_t table_ld,
                  uint8_t* invalid) {
  T scratch[kTile * kTile];
  int64_t stride = 0;
  const T* tile_costs = costs(t, scratch, &stride);

  T buf_a[kTile + 1], buf_b[kTile + 1];
  T* prev = buf_a;  // prev[c] = R(i − 1, j0 + c − 1), prev[0] the left border
  T* cur = buf_b;
  prev[0] = borders.corner[I];
  std::copy_n(&borders.row[t.j0], t.w, prev + 1);
  borders.corner[I] = prev[t.w];  // R(i0 − 1, j0 + w − 1): the corner of tile (I, J + 1)

  bool bad = false;
  for (int64_t r = 0; r < t.h; ++r) {
    const int64_t i = t.i0 + r;
    int64_t lo, hi;
    band_columns(i, g.n, g.m, g.radius, &lo, &hi);
    const T* cost_row = tile_costs + r * stride;
    cur[0] = borders.col[i];
    for (int64_t c = 1; c <= t.w; ++c) {
      const int64_t j = t.j0 + c - 1;
      if (j < lo || j > hi) {
        cur[c] = positive_infinity<T>();
        continue;
      }
      const T d = cost_row[c - 1];
      bad |= !is_valid_cost(d);
      cur[c] = d + softmin3(prev[c - 1], prev[c], cur[c - 1], gamma, inv_gamma);
    }
    if (table != nullptr) std::copy_n(cur + 1, t.w, table + i * table_ld + t.j0);
    borders.col[i] = cur[t.w];
    std::swap(prev, cur);
  }
  std::copy_n(prev + 1, t.w, &borders.row[t.j0]);
  if (bad) *invalid = 1;
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
// soft-argmin weights of successor s over its predecessors (design doc §2, form (c)).

// A computed cell as its predecessors see it: its E and the weight it gives each predecessor.
template <typename T>
struct CellFlow {
  T E, w_diag, w_up, w_left;
};

// Mirror of ForwardBorders for the reverse sweep: first row below each column, first column
// right of each row, and per tile row the corner (i0 + h, j0 + w) of its next tile.
template <typename T>
struct BackwardBorders {
  std::vector<CellFlow<T>> row, col, corner;
  explicit BackwardBorders(const PairGeometry& g) : row(g.m), col(g.n), corner(g.tile_rows()) {}
};

// emit(i, j, E) receives every cell's expected alignment, row by row from the bottom right.
template <typename T, typename Emit>
void backward_tile(const PairGeometry& g, const TileRange& t, int64_t I, T inv_gamma, const T* table,
                   int64_t table_ld, BackwardBorders<T>& borders, const Emit& emit) {
  auto r_at = [&](int64_t i, int64_t j) -> T {
    if (i < 0 || j < 0) return (i < 0 && j < 0) ? T(0) : positive_infinity<T>();
    return table[i * table_ld + j];
  };
  CellFlow<T> buf_a[kTile + 1], buf_b[kTile + 1];
  CellFlow<T>* below = buf_a;  // below[c] = cell (i + 1, j0 + c); below[w] its right neighbour's
  CellFlow<T>* cur = buf_b;
  std::copy_n(&borders.row[t.j0], t.w, below);
  below[t.w] = borders.corner[I];
  borders.corner[I] = below[0];  // cell (i0 + h, j0): the corner of tile (I, J − 1)

  for (int64_t r = t.h - 1; r >= 0; --r) {
    const int64_t i = t.i0 + r;
    cur[t.w] = borders.col[i];
    for (int64_t c = t.w - 1; c >= 0; --c) {
      const int64_t j = t.j0 + c;
      CellFlow<T> f{T(0), T(0), T(0), T(0)};
      if (is_reachable(table[i * table_ld + j])) {
        f.E = (i == g.n - 1 && j == g.m - 1)
                  ? T(1)
                  : below[c + 1].E * below[c + 1].w_diag + below[c].E * below[c].w_up + cur[c + 1].E * cur[c + 1].w_left;
        const PredecessorWeights<T> w = predecessor_weights(r_at(i - 1, j - 1), r_at(i - 1, j), r_at(i, j - 1), inv_gamma);
        f.w_diag = w.diag;
        f.w_up = w.up;
        f.w_left = w.left;
      }
      cur[c] = f;
      emit(i, j, f.E);
    }
    borders.col[i] = cur[0];
    std::swap(below, cur);
  }
  std::copy_n(below, t.w, &borders.row[t.j0]);
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
// Op implementations.

std::tuple<at::Tensor, at::Tensor> from_cost_forward_cpu(const at::Tensor& D_in, double gamma,
                                                         std::optional<int64_t> bandwidth,
                                                         const std::optional<at::Tensor>& x_lengths,
                                                         const std::optional<at::Tensor>& y_lengths, bool keep_table) {
  at::Tensor D;
  const SoftDTWProblem p = prepare_from_cost(D_in, gamma, bandwidth, x_lengths, y_lengths, &D);
  at::Tensor values = at::empty({p.batch}, D.options());
  at::Tensor R = new_dp_table(p, D.options(), keep_table);
  at::Tensor invalid = at::zeros({p.batch}, D.options().dtype(at::kBool));
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(D.scalar_type(), "soft_dtw_from_cost_forward_cpu", [&] {
    const scalar_t* d_all = D.data_ptr<scalar_t>();
    scalar_t* r_all = keep_table ? R.data_ptr<scalar_t>() : nullptr;
    scalar_t* v = values.data_ptr<scalar_t>();
    bool* bad = invalid.data_ptr<bool>();
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
  check_no_invalid_values(kFromCostOp, invalid, kInvalidCostMessage);
  return {values.to(D_in.scalar_type()), R};
}

at::Tensor from_cost_backward_cpu(const at::Tensor& grad_in, const at::Tensor& R_in, double gamma,
                                  std::optional<int64_t> bandwidth, const std::optional<at::Tensor>& x_lengths,
                                  const std::optional<at::Tensor>& y_lengths) {
  at::Tensor grad;
  const SoftDTWProblem p =
      prepare_backward(kFromCostOp, grad_in, R_in, gamma, bandwidth, x_lengths, y_lengths, &grad);
  const at::Tensor R = R_in.contiguous();
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
  at::Tensor x, y;
  const SoftDTWProblem p = prepare_fused(x_in, y_in, gamma, bandwidth, x_lengths, y_lengths, &x, &y);
  const int64_t d = x.size(2);
  at::Tensor values = at::empty({p.batch}, x.options());
  at::Tensor R = new_dp_table(p, x.options(), keep_table);
  at::Tensor invalid = at::zeros({p.batch}, x.options().dtype(at::kBool));
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "soft_dtw_fused_forward_cpu", [&] {
    const scalar_t* x_all = x.data_ptr<scalar_t>();
    const scalar_t* y_all = y.data_ptr<scalar_t>();
    scalar_t* r_all = keep_table ? R.data_ptr<scalar_t>() : nullptr;
    scalar_t* v = values.data_ptr<scalar_t>();
    bool* bad = invalid.data_ptr<bool>();
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
  check_no_invalid_values(kFusedOp, invalid, kInvalidSequenceMessage);
  return {values.to(x_in.scalar_type()), R};
}

std::tuple<at::Tensor, at::Tensor> fused_backward_cpu(const at::Tensor& grad_in, const at::Tensor& x_in,
                                                      const at::Tensor& y_in, const at::Tensor& R_in, double gamma,
                                                      std::optional<int64_t> bandwidth,
                                                      const std::optional<at::Tensor>& x_lengths,
                                                      const std::optional<at::Tensor>& y_lengths) {
  at::Tensor grad;
  const SoftDTWProblem p = prepare_backward(kFusedOp, grad_in, R_in, gamma, bandwidth, x_lengths, y_lengths, &grad);
  check_fused_backward_inputs(p, x_in, y_in);
  const at::Tensor R = R_in.contiguous();
  const at::Tensor x = x_in.to(R.scalar_type()).contiguous();
  const at::Tensor y = y_in.to(R.scalar_type()).contiguous();
  const int64_t d = x.size(2);
  at::Tensor grad_x = at::zeros_like(x);
  at::Tensor grad_y = at::zeros_like(y);
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(R.scalar_type(), "soft_dtw_fused_backward_cpu", [&] {
    const scalar_t* r_all = R.data_ptr<scalar_t>();
    const scalar_t* g = grad.data_ptr<scalar_t>();
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

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CPU, m) {
  m.impl("_soft_dtw_from_cost_forward", &from_cost_forward_cpu);
  m.impl("_soft_dtw_from_cost_backward", &from_cost_backward_cpu);
  m.impl("_soft_dtw_fused_forward", &fused_forward_cpu);
  m.impl("_soft_dtw_fused_backward", &fused_backward_cpu);
}

}  // namespace softdtw_torch
