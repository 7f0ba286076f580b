// CPU kernels of the SoftDTW ops: forward DP and normalized-weight backward (design doc §1–3),
// on a precomputed cost tensor or with squared Euclidean costs computed per tile (fused), and
// their forward-mode and second-order versions (§3), all on the tiled wavefront engine of
// tiles.h; short fused pairs also run in packs (packs.h), a band's rows only.
//
// Pairs run in parallel when the batch has at least as many pairs as threads; otherwise the pairs
// run one after the other with the tiles of each anti-diagonal in parallel. Either way results
// are bitwise identical with one thread or many.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "../../common/macros.h"
#include "../bodies.h"
#include "../math.h"
#include "../ops.h"
#include "../problem.h"
#include "packs.h"
#include "tiles.h"

namespace softdtw_torch {
namespace {

#if SOFTDTW_TORCH_HAS_INTERLEAVED_VECTORS
// The soft cells' interleaved loops (interleaved_vectors.h), reported by info() from the start.
const bool kInterleavedPathsRegistered = register_path_rule(cpu::kInterleavedPaths);
#endif

using namespace cpu;  // the tiled wavefront engine (tiles.h) and the packs (packs.h)
using softdtw::CachedForward;
using softdtw::Finish;
using softdtw::TangentForward;

// The CPU's engine of the SoftDTW ops' bodies (../bodies.h, which lists what each method does):
// short fused pairs in packs (packs.h), other pairs on the tiled wavefront (tiles.h).
struct CpuEngine {
  // The forward of short pairs in packs keeps each pair's unit gradients; there are no tile
  // checkpoints ("borders" keeps nothing, and the backward recomputes the whole table).
  static constexpr bool kKeepsUnitGradients = true;
  static constexpr bool kKeepsBorders = false;

  ForwardOutputs forward(const ForwardInputs& in, bool fused, bool keep_table) const;
  at::Tensor from_cost_backward(const BackwardInputs& in) const;
  std::tuple<at::Tensor, at::Tensor> fused_backward(const BackwardInputs& in) const;
  CachedForward forward_with_unit_gradients(const ForwardInputs& in) const;
  std::pair<ForwardOutputs, at::Tensor> value_and_grad(const ForwardInputs& in, const at::Tensor& weights) const;
  std::tuple<at::Tensor, at::Tensor> backward_from_unit_gradients(const BackwardInputs& in, const at::Tensor& unit_x,
                                                                  const at::Tensor& unit_y) const;
  std::tuple<at::Tensor, at::Tensor, at::Tensor> dtw_path(const ForwardInputs& in, const Finish& finish) const;
  TangentForward tangent_forward(const TangentInputs& in, bool fused) const;
  std::tuple<at::Tensor, at::Tensor, at::Tensor> from_cost_hvp(const TangentInputs& in, bool with_grad,
                                                               const Finish& finish) const;
  std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_hvp(const TangentInputs& in,
                                                                                   bool with_grad,
                                                                                   const Finish& finish) const;
  at::Tensor itakura_rows(const at::Tensor& n, const at::Tensor& m, int64_t columns, double max_slope) const;
};

PairGeometry pair_geometry(const SoftDTWProblem& p, const int64_t* x_lengths, const int64_t* y_lengths, int64_t b) {
  const int64_t n = x_lengths ? x_lengths[b] : p.n, m = y_lengths ? y_lengths[b] : p.m;
  return {n, m, std::make_shared<const WindowRows>(p.window, n, m)};
}

const int64_t* lengths_ptr(const at::Tensor& lengths) {
  return lengths.defined() ? lengths.data_ptr<int64_t>() : nullptr;
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

// Tangents Ḋ_ij = 2 (x_i − y_j)·(u_i − v_j) of the squared Euclidean costs of one tile, for the
// tangents u of x and v of y (either nullable: a zero tangent), summed over features in order.
template <typename T>
struct SquaredEuclideanTangentTile {
  const T* x;
  const T* y;
  const T* u;  // nullable
  const T* v;  // nullable
  int64_t d;

  const T* operator()(const TileRange& t, T* out, int64_t* stride) const {
    for (int64_t r = 0; r < t.h; ++r) {
      const T* xi = x + (t.i0 + r) * d;
      const T* ui = u ? u + (t.i0 + r) * d : nullptr;
      for (int64_t c = 0; c < t.w; ++c) {
        const T* yj = y + (t.j0 + c) * d;
        const T* vj = v ? v + (t.j0 + c) * d : nullptr;
        T sum = T(0);
        for (int64_t k = 0; k < d; ++k) {
          const T du = (ui ? ui[k] : T(0)) - (vj ? vj[k] : T(0));
          sum += (xi[k] - yj[k]) * du;
        }
        out[r * t.w + c] = T(2) * sum;
      }
    }
    *stride = t.w;
    return out;
  }
};

// The costs of one pair read from a (B, N, M) tensor (D, or its tangent Ḋ), row stride ld.
template <typename T>
struct CostsFromTensor {
  const T* pair;
  int64_t ld;
  const T* operator()(const TileRange& t, T*, int64_t* stride) const {
    *stride = ld;
    return pair + t.i0 * ld + t.j0;
  }
};

// A tangent that is zero (an undefined tangent input).
template <typename T>
struct ZeroTangentTile {
  const T* operator()(const TileRange& t, T* out, int64_t* stride) const {
    std::fill_n(out, t.h * t.w, T(0));
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

// The from-cost forward of validated inputs: its outputs, errors left to finish_forward (by the op).
ForwardOutputs run_from_cost_forward(const ForwardInputs& in, bool keep_table) {
  const SoftDTWProblem& p = in.problem;
  const at::Tensor& D = in.D;
  const ForwardOutputs out = new_forward_outputs(p, D.options(), keep_table);
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(D.scalar_type(), "soft_dtw_from_cost_forward_cpu", [&] {
    const scalar_t* d_all = D.data_ptr<scalar_t>();
    RValue<scalar_t>* r_all = r_data<scalar_t>(out.R);
    scalar_t* v = out.values.data_ptr<scalar_t>();
    bool* bad = out.invalid.data_ptr<bool>();
    const int64_t pair_stride = p.n * p.m;
    for_each_pair(p.batch, [&](int64_t b, bool parallel) {
      const scalar_t* d_pair = d_all + b * pair_stride;
      const CostsFromTensor<scalar_t> costs{d_pair, p.m};
      const Tables<scalar_t> table{r_all ? r_all + b * pair_stride : nullptr, nullptr};
      v[b] = forward_pair<scalar_t>(pair_geometry(p, xl, yl, b), static_cast<scalar_t>(p.gamma), costs, table, parallel,
                                    &bad[b])
                 .value;
    });
  });
  return out;
}

// The fused forward of validated inputs: its outputs, errors left to finish_forward (by the op).
ForwardOutputs run_fused_forward(const ForwardInputs& in, bool keep_table) {
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
    RValue<scalar_t>* r_all = r_data<scalar_t>(out.R);
    scalar_t* v = out.values.data_ptr<scalar_t>();
    bool* bad = out.invalid.data_ptr<bool>();
    const std::vector<Pack> packs = make_packs(p, d, xl, yl);
    if (!packs.empty()) {
      for_each_pack(packs, [&](const Pack& pk) {
        if (pack_has_invalid(pk, x_all, y_all, p.n, p.m, d, bad)) return;  // the op raises
        const PackedSequences<scalar_t> s(pk, x_all, y_all, p.n * d, p.m * d, d);
        auto diagonals = pack_diagonals_of_values<scalar_t>(pk, /*keep_all=*/false);
        forward_pack<scalar_t>(pk, s, static_cast<scalar_t>(p.gamma), diagonals,
                               r_all ? r_all + pk.begin * p.n * p.m : nullptr, p.n * p.m, v + pk.begin);
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
      const Tables<scalar_t> table{r_all ? r_all + b * p.n * p.m : nullptr, nullptr};
      v[b] = forward_pair<scalar_t>(g, static_cast<scalar_t>(p.gamma), costs, table, parallel, &bad[b]).value;
    });
  });
  return out;
}

ForwardOutputs CpuEngine::forward(const ForwardInputs& in, bool fused, bool keep_table) const {
  return fused ? run_fused_forward(in, keep_table) : run_from_cost_forward(in, keep_table);
}

at::Tensor CpuEngine::from_cost_backward(const BackwardInputs& in) const {
  const SoftDTWProblem& p = in.problem;
  const at::Tensor& R = in.R;
  const at::Tensor& grad = in.grad;
  at::Tensor grad_D =
      p.ragged() ? at::zeros({p.batch, p.n, p.m}, R.options()) : at::empty({p.batch, p.n, p.m}, R.options());
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(R.scalar_type(), "soft_dtw_from_cost_backward_cpu", [&] {
    const RValue<scalar_t>* r_all = r_data<scalar_t>(R);
    const scalar_t* g = grad.data_ptr<scalar_t>();
    scalar_t* out_all = grad_D.data_ptr<scalar_t>();
    const int64_t pair_stride = p.n * p.m;
    for_each_pair(p.batch, [&](int64_t b, bool parallel) {
      scalar_t* out = out_all + b * pair_stride;
      const scalar_t scale = g[b];
      const ConstTables<scalar_t> table{r_all + b * pair_stride, nullptr};
      backward_pair<scalar_t>(pair_geometry(p, xl, yl, b), static_cast<scalar_t>(p.gamma), table, parallel,
                              [&](int64_t i, int64_t j, scalar_t E) { out[i * p.m + j] = scale * E; });
    });
  });
  return grad_D;
}

// Hard DTW's values and paths (design doc §10): the fused forward at γ = 0, then each pair's walk
// back from its end. Packs walk over the diagonals their forward kept (no (B, N, M) table written,
// and the walk reads a pack's own cache-resident diagonals); other batches keep the table (laid
// out by TableLayout) and walk over it, pairs in parallel.
std::tuple<at::Tensor, at::Tensor, at::Tensor> CpuEngine::dtw_path(const ForwardInputs& in,
                                                                   const Finish& finish) const {
  const SoftDTWProblem& p = in.problem;
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  const std::vector<Pack> packs = make_packs(p, in.x.size(2), xl, yl);
  if (!packs.empty()) check_table_memory(p, pairs_held_in_packs(p), in.x.scalar_type(), in.x.device());
  const ForwardOutputs out =
      packs.empty() ? run_fused_forward(in, /*keep_table=*/true) : new_forward_outputs(p, in.x.options(), false);
  const PathOutputs paths = new_path_outputs(p, in.x.device());
  AT_DISPATCH_FLOATING_TYPES(in.x.scalar_type(), "dtw_path_cpu", [&] {
    int64_t* cells = paths.paths.data_ptr<int64_t>();
    int64_t* lengths = paths.lengths.data_ptr<int64_t>();
    auto cells_of = [&](int64_t b) { return cells + b * 2 * (p.n + p.m - 1); };
    if (!packs.empty()) {
      const scalar_t* x_all = in.x.data_ptr<scalar_t>();
      const scalar_t* y_all = in.y.data_ptr<scalar_t>();
      const int64_t d = in.x.size(2);
      for_each_pack(packs, [&](const Pack& pk) {
        if (pack_has_invalid(pk, x_all, y_all, p.n, p.m, d, out.invalid.data_ptr<bool>())) return;  // the op raises
        const PackedSequences<scalar_t> s(pk, x_all, y_all, p.n * d, p.m * d, d);
        auto diagonals = pack_diagonals_of_values<scalar_t>(pk, /*keep_all=*/true);
        forward_pack<scalar_t>(pk, s, scalar_t(0), diagonals, nullptr, 0, out.values.data_ptr<scalar_t>() + pk.begin);
        const int64_t P = pk.lanes();
        for (int64_t lane = 0; lane < P; ++lane) {
          // Slot i + 1 of diagonal i + j holds R(i, j), the border (i or j = −1) included.
          auto r_at = [&](int64_t i, int64_t j) { return load(diagonals(i + j), (i + 1) * P + lane); };
          lengths[pk.begin + lane] = hard_path<scalar_t>(pk.n, pk.m, r_at, cells_of(pk.begin + lane));
        }
      });
      return;
    }
    const RValue<scalar_t>* r_all = r_data<scalar_t>(out.R);
    at::parallel_for(0, p.batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const PairGeometry g = pair_geometry(p, xl, yl, b);
        const TableLayout layout(g);
        const RValue<scalar_t>* table = r_all + b * p.n * p.m;
        auto r_at = [&](int64_t i, int64_t j) {
          if (i < 0 || j < 0) return exact_r((i < 0 && j < 0) ? scalar_t(0) : positive_infinity<scalar_t>());
          return table[layout.row_offset(i + j) + i];
        };
        lengths[b] = hard_path<scalar_t>(g.n, g.m, r_at, cells_of(b));
      }
    });
  });
  auto [values, unused] = finish(out);
  return {values, paths.paths, paths.lengths};
}

// The backward of validated inputs (R: the forward's table of them): each pair's ∂sdtw/∂x and
// ∂sdtw/∂y, 2·scale[b]·(the float64 sums) rounded once to Out, into zeroed (B, N, d) and (B, M, d)
// outputs (grad_y may be null: not stored). Out is the compute dtype for the backward op, float64 with scale 1 for the unit gradients
// of the forward with gradients (which its backward scales by g with these bits: 2 and g commute
// with the rounding of a float64 product).
template <typename T, typename Out>
void run_fused_backward(const SoftDTWProblem& p, const at::Tensor& R, const at::Tensor& x, const at::Tensor& y,
                        T gamma, const T* scale, Out* grad_x, Out* grad_y) {
  const int64_t d = x.size(2);
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  const RValue<T>* r_all = r_data<T>(R);
  const std::vector<Pack> packs = make_packs(p, d, xl, yl);
  if (!packs.empty()) {
    for_each_pack(packs, [&](const Pack& pk) {
      const PackedSequences<T> s(pk, x.data_ptr<T>(), y.data_ptr<T>(), p.n * d, p.m * d, d);
      GatheredDiagonals<T> table(pk, r_all + pk.begin * p.n * p.m, p.n * p.m);
      std::vector<double> acc_x(s.x.size(), 0.0), acc_y(s.y.size(), 0.0);  // laid out as s.x and s.y
      backward_pack<T>(pk, s, gamma, table, acc_x.data(), acc_y.data());
      store_pack_gradients(pk, s, acc_x, acc_y, scale, p.n, p.m, grad_x, grad_y);
    });
    return;
  }
  for_each_pair(p.batch, [&](int64_t b, bool parallel) {
    const PairGeometry geo = pair_geometry(p, xl, yl, b);
    const T* xb = x.data_ptr<T>() + b * p.n * d;
    const T* yb = y.data_ptr<T>() + b * p.m * d;
    // Σ_j E_ij (x_i − y_j) and Σ_i E_ij (y_j − x_i), accumulated in float64 in a fixed order
    // (tiles of one anti-diagonal never share a row or a column).
    std::vector<double> acc_x(geo.n * d, 0.0), acc_y(geo.m * d, 0.0);
    const ConstTables<T> table{r_all + b * p.n * p.m, nullptr};
    backward_pair<T>(geo, gamma, table, parallel, [&](int64_t i, int64_t j, T E) {
      if (E == T(0)) return;
      const T* xi = xb + i * d;
      const T* yj = yb + j * d;
      double* ax = acc_x.data() + i * d;
      double* ay = acc_y.data() + j * d;
      for (int64_t k = 0; k < d; ++k) {
        const double flow = static_cast<double>(E) * (xi[k] - yj[k]);
        ax[k] += flow;
        ay[k] -= flow;
      }
    });
    // ∂sdtw/∂x_i = 2 Σ_j E_ij (x_i − y_j), scaled by the upstream gradient.
    const double twice_scale = 2.0 * static_cast<double>(scale[b]);
    Out* gx = grad_x + b * p.n * d;
    for (int64_t k = 0; k < geo.n * d; ++k) gx[k] = static_cast<Out>(twice_scale * acc_x[k]);
    if (grad_y == nullptr) return;
    Out* gy = grad_y + b * p.m * d;
    for (int64_t k = 0; k < geo.m * d; ++k) gy[k] = static_cast<Out>(twice_scale * acc_y[k]);
  });
}

std::tuple<at::Tensor, at::Tensor> CpuEngine::fused_backward(const BackwardInputs& in) const {
  at::Tensor grad_x = at::zeros_like(in.x);
  at::Tensor grad_y = at::zeros_like(in.y);
  const at::Tensor& R = in.R;
  AT_DISPATCH_FLOATING_TYPES(R.scalar_type(), "soft_dtw_fused_backward_cpu", [&] {
    run_fused_backward<scalar_t, scalar_t>(in.problem, R, in.x, in.y, static_cast<scalar_t>(in.problem.gamma),
                                           in.grad.data_ptr<scalar_t>(), grad_x.data_ptr<scalar_t>(),
                                           grad_y.data_ptr<scalar_t>());
  });
  return {grad_x, grad_y};
}

// Values and gradients of packed pairs in one sweep: each pack's forward keeps every cell's weights
// and its backward reads them at once, so no (B, N, M) table is written or gathered, and the
// backward computes no exponential. Gradients as run_fused_backward's (grad_y may be null: not
// stored); pairs with non-finite values are flagged in out.invalid and left out.
template <typename T, typename Out>
void run_packed_value_and_grad(const std::vector<Pack>& packs, const SoftDTWProblem& p, const at::Tensor& x,
                               const at::Tensor& y, T gamma, const T* scale, const ForwardOutputs& out, Out* grad_x,
                               Out* grad_y) {
  const int64_t d = x.size(2);
  const T* x_all = x.data_ptr<T>();
  const T* y_all = y.data_ptr<T>();
  for_each_pack(packs, [&](const Pack& pk) {
    if (pack_has_invalid(pk, x_all, y_all, p.n, p.m, d, out.invalid.data_ptr<bool>())) return;  // the op raises
    const PackedSequences<T> s(pk, x_all, y_all, p.n * d, p.m * d, d);
    auto diagonals = pack_diagonals_of_values<T>(pk, /*keep_all=*/false);
    PackWeights<T> weights(pk.n, pk.m, pk.lanes());
    T* values = out.values.data_ptr<T>() + pk.begin;
    forward_pack<T>(pk, s, gamma, diagonals, nullptr, 0, values, nullptr, &weights);
    std::vector<double> acc_x(s.x.size(), 0.0), acc_y(s.y.size(), 0.0);  // laid out as s.x and s.y
    backward_pack_from_weights<T>(pk, s, weights, values, acc_x.data(), acc_y.data());
    store_pack_gradients(pk, s, acc_x, acc_y, scale, p.n, p.m, grad_x, grad_y);
  });
}

// Values and gradients in one call, as run_fused_backward gives them (grad_y may be null): packed
// pairs in one sweep (run_packed_value_and_grad, no (B, N, M) table), other batches (long series,
// fewer pairs than threads) through the forward's table. The outputs are zeroed where a pair is
// shorter than the batch; errors are left to finish_forward.
template <typename T, typename Out>
ForwardOutputs run_value_and_grad(const ForwardInputs& in, T gamma, const T* scale, Out* grad_x, Out* grad_y) {
  const SoftDTWProblem& p = in.problem;
  const std::vector<Pack> packs = make_packs(p, in.x.size(2), lengths_ptr(p.x_lengths), lengths_ptr(p.y_lengths));
  if (!packs.empty()) {
    const ForwardOutputs out = new_forward_outputs(p, in.x.options(), /*keep_table=*/false);
    run_packed_value_and_grad(packs, p, in.x, in.y, gamma, scale, out, grad_x, grad_y);
    return out;
  }
  const ForwardOutputs out = run_fused_forward(in, /*keep_table=*/true);
  if (!out.invalid.any().item<bool>()) run_fused_backward(p, out.R, in.x, in.y, gamma, scale, grad_x, grad_y);
  return out;
}

// weights[b]·∂value_b/∂x_b (weights in the compute dtype), no ∂/∂y stored.
std::pair<ForwardOutputs, at::Tensor> CpuEngine::value_and_grad(const ForwardInputs& in,
                                                                const at::Tensor& weights) const {
  at::Tensor grad_x = in.problem.ragged() ? at::zeros_like(in.x) : at::empty_like(in.x);
  ForwardOutputs out;
  AT_DISPATCH_FLOATING_TYPES(in.x.scalar_type(), "soft_dtw_fused_value_and_grad_cpu", [&] {
    out = run_value_and_grad<scalar_t, scalar_t>(in, static_cast<scalar_t>(in.problem.gamma),
                                                 weights.data_ptr<scalar_t>(), grad_x.data_ptr<scalar_t>(), nullptr);
  });
  return {out, grad_x};
}

// The values and each pair's unit gradients ∂value_b/∂x_b, ∂value_b/∂y_b in float64 (the backward
// op's float64 sums times 2, not rounded).
CachedForward CpuEngine::forward_with_unit_gradients(const ForwardInputs& in) const {
  const at::TensorOptions unit_options = in.x.options().dtype(at::kDouble);
  at::Tensor grad_x = at::zeros(in.x.sizes(), unit_options), grad_y = at::zeros(in.y.sizes(), unit_options);
  const at::Tensor ones = at::ones({in.problem.batch}, in.x.options());
  CachedForward f{{}, grad_x, grad_y};
  AT_DISPATCH_FLOATING_TYPES(in.x.scalar_type(), "soft_dtw_fused_forward_with_unit_gradients_cpu", [&] {
    f.out = run_value_and_grad<scalar_t, double>(in, static_cast<scalar_t>(in.problem.gamma), ones.data_ptr<scalar_t>(),
                                                 grad_x.data_ptr<double>(), grad_y.data_ptr<double>());
  });
  return f;
}

// The backward of the forward with gradients: g[b]·unit in float64, rounded once to the compute
// dtype (the bits of the backward from the table, see run_fused_backward); the rows past a pair's
// length stay +0, as that backward leaves them (g·(+0) would be −0 for g < 0).
std::tuple<at::Tensor, at::Tensor> CpuEngine::backward_from_unit_gradients(const BackwardInputs& in,
                                                                           const at::Tensor& unit_x,
                                                                           const at::Tensor& unit_y) const {
  const SoftDTWProblem& p = in.problem;
  const at::Tensor& grad = in.grad;
  at::Tensor grad_x = at::zeros_like(in.x), grad_y = at::zeros_like(in.y);
  const at::Tensor ux = unit_x.contiguous(), uy = unit_y.contiguous();
  const int64_t d = in.x.size(2);
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(in.x.scalar_type(), "soft_dtw_fused_backward_from_unit_gradients_cpu", [&] {
    const scalar_t* g = grad.data_ptr<scalar_t>();
    at::parallel_for(0, p.batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const double scale = static_cast<double>(g[b]);
        const int64_t n = xl ? xl[b] : p.n, m = yl ? yl[b] : p.m;
        const double* sx = ux.data_ptr<double>() + b * p.n * d;
        const double* sy = uy.data_ptr<double>() + b * p.m * d;
        scalar_t* gx = grad_x.data_ptr<scalar_t>() + b * p.n * d;
        scalar_t* gy = grad_y.data_ptr<scalar_t>() + b * p.m * d;
        for (int64_t k = 0; k < n * d; ++k) gx[k] = static_cast<scalar_t>(scale * sx[k]);
        for (int64_t k = 0; k < m * d; ++k) gy[k] = static_cast<scalar_t>(scale * sy[k]);
      }
    });
  });
  return {grad_x, grad_y};
}

// ---------------------------------------------------------------------------------------------
// Forward mode and second order (design doc §3): each pair's forward carries the tangent channel
// (Ṙ beside R); the second-order ops then run the reverse sweep with it (Ė beside E) over the
// pair's own tables, R and Ṙ, kept in per-pair scratch (n·m each, per pair in flight): no
// (B, N, M) buffer beyond the outputs.

template <typename T, typename Costs>
ForwardEnd<T> pair_tangent_forward(const PairGeometry& g, T gamma, const Costs& costs, const T* tangent_pair,
                                   int64_t ld, const Tables<T>& tables, bool parallel, bool* invalid) {
  if (tangent_pair == nullptr) return forward_pair<T>(g, gamma, costs, tables, parallel, invalid, ZeroTangentTile<T>{});
  return forward_pair<T>(g, gamma, costs, tables, parallel, invalid, CostsFromTensor<T>{tangent_pair, ld});
}

TangentForward from_cost_tangent_forward(const TangentInputs& in) {
  const SoftDTWProblem& p = in.problem;
  const at::Tensor& D_tangent = in.D_tangent;
  const ForwardOutputs out = new_forward_outputs(p, in.D.options(), /*keep_table=*/false);
  at::Tensor tangents = at::empty({p.batch}, in.D.options());
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(in.D.scalar_type(), "soft_dtw_from_cost_jvp_cpu", [&] {
    const int64_t pair_stride = p.n * p.m;
    const scalar_t* t_all = D_tangent.defined() ? D_tangent.data_ptr<scalar_t>() : nullptr;
    for_each_pair(p.batch, [&](int64_t b, bool parallel) {
      const CostsFromTensor<scalar_t> costs{in.D.data_ptr<scalar_t>() + b * pair_stride, p.m};
      const ForwardEnd<scalar_t> end = pair_tangent_forward<scalar_t>(
          pair_geometry(p, xl, yl, b), static_cast<scalar_t>(p.gamma), costs, t_all ? t_all + b * pair_stride : nullptr,
          p.m, Tables<scalar_t>{}, parallel, &out.invalid.data_ptr<bool>()[b]);
      out.values.data_ptr<scalar_t>()[b] = end.value;
      tangents.data_ptr<scalar_t>()[b] = end.tangent;
    });
  });
  return {out, tangents};
}

TangentForward fused_tangent_forward(const TangentInputs& in) {
  const SoftDTWProblem& p = in.problem;
  const at::Tensor &u = in.x_tangent, &v = in.y_tangent;
  const int64_t d = in.x.size(2);
  const ForwardOutputs out = new_forward_outputs(p, in.x.options(), /*keep_table=*/false);
  at::Tensor tangents = at::empty({p.batch}, in.x.options());
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  const std::vector<Pack> packs = make_packs(p, d, xl, yl);
  AT_DISPATCH_FLOATING_TYPES(in.x.scalar_type(), "soft_dtw_fused_jvp_cpu", [&] {
    const scalar_t* x_all = in.x.data_ptr<scalar_t>();
    const scalar_t* y_all = in.y.data_ptr<scalar_t>();
    if (!packs.empty()) {  // short pairs: the forward with the tangent in packs
      for_each_pack(packs, [&](const Pack& pk) {
        if (pack_has_invalid(pk, x_all, y_all, p.n, p.m, d, out.invalid.data_ptr<bool>())) return;  // the op raises
        const PackedSequences<scalar_t> s(pk, x_all, y_all, p.n * d, p.m * d, d);
        const PackedSequences<scalar_t> uv(pk, u.defined() ? u.data_ptr<scalar_t>() : nullptr,
                                           v.defined() ? v.data_ptr<scalar_t>() : nullptr, p.n * d, p.m * d, d);
        auto diagonals = pack_diagonals_of_values<scalar_t>(pk, /*keep_all=*/false);
        auto tangent_diagonals = pack_diagonals_of_tangents<scalar_t>(pk, /*keep_all=*/false);
        const PackTangent<scalar_t> tangent{uv, tangent_diagonals, tangents.data_ptr<scalar_t>() + pk.begin};
        forward_pack<scalar_t>(pk, s, static_cast<scalar_t>(p.gamma), diagonals, nullptr, 0,
                               out.values.data_ptr<scalar_t>() + pk.begin, &tangent);
      });
      return;
    }
    for_each_pair(p.batch, [&](int64_t b, bool parallel) {
      const PairGeometry g = pair_geometry(p, xl, yl, b);
      const SquaredEuclideanTile<scalar_t> costs{x_all + b * p.n * d, y_all + b * p.m * d, d};
      bool* bad = &out.invalid.data_ptr<bool>()[b];
      if (!all_finite(costs.x, g.n * d) || !all_finite(costs.y, g.m * d)) {
        *bad = true;
        return;
      }
      const SquaredEuclideanTangentTile<scalar_t> tangent_costs{
          costs.x, costs.y, u.defined() ? u.data_ptr<scalar_t>() + b * p.n * d : nullptr,
          v.defined() ? v.data_ptr<scalar_t>() + b * p.m * d : nullptr, d};
      const ForwardEnd<scalar_t> end = forward_pair<scalar_t>(g, static_cast<scalar_t>(p.gamma), costs,
                                                              Tables<scalar_t>{}, parallel, bad, tangent_costs);
      out.values.data_ptr<scalar_t>()[b] = end.value;
      tangents.data_ptr<scalar_t>()[b] = end.tangent;
    });
  });
  return {out, tangents};
}

TangentForward CpuEngine::tangent_forward(const TangentInputs& in, bool fused) const {
  return fused ? fused_tangent_forward(in) : from_cost_tangent_forward(in);
}

// One pair's tables for the reverse sweep of a second-order op, in scratch (row stride m).
template <typename T>
struct PairTables {
  std::vector<RValue<T>> R;
  std::vector<T> R_tangent;
  explicit PairTables(const PairGeometry& g) : R(g.n * g.m), R_tangent(g.n * g.m) {}
  Tables<T> to_write() { return {R.data(), R_tangent.data()}; }
  ConstTables<T> to_read() const { return {R.data(), R_tangent.data()}; }
};

std::tuple<at::Tensor, at::Tensor, at::Tensor> CpuEngine::from_cost_hvp(const TangentInputs& in, bool with_grad,
                                                                        const Finish& finish) const {
  const SoftDTWProblem& p = in.problem;
  const at::Tensor &D = in.D, &D_tangent = in.D_tangent, &grad = in.grad, &grad_tangent = in.grad_tangent;
  // R and Ṙ whole, for each pair a thread holds
  check_table_memory(p, std::min<int64_t>(p.batch, at::get_num_threads()), D.scalar_type(), D.device(),
                     /*tables=*/2);
  const ForwardOutputs out = new_forward_outputs(p, D.options(), /*keep_table=*/false);
  at::Tensor value_tangent = at::zeros({p.batch}, D.options());
  auto new_like_D = [&] { return p.ragged() ? at::zeros_like(D) : at::empty_like(D); };
  at::Tensor grad_D = with_grad ? new_like_D() : at::empty({0}, D.options());
  at::Tensor grad_D_tangent = new_like_D();
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  AT_DISPATCH_FLOATING_TYPES(D.scalar_type(), "soft_dtw_from_cost_hvp_cpu", [&] {
    const int64_t pair_stride = p.n * p.m;
    const scalar_t* t_all = D_tangent.defined() ? D_tangent.data_ptr<scalar_t>() : nullptr;
    for_each_pair(p.batch, [&](int64_t b, bool parallel) {
      const PairGeometry geo = pair_geometry(p, xl, yl, b);
      PairTables<scalar_t> tables(geo);
      const CostsFromTensor<scalar_t> costs{D.data_ptr<scalar_t>() + b * pair_stride, p.m};
      bool* bad = &out.invalid.data_ptr<bool>()[b];
      const ForwardEnd<scalar_t> end = pair_tangent_forward<scalar_t>(geo, static_cast<scalar_t>(p.gamma), costs,
                                                                      t_all ? t_all + b * pair_stride : nullptr, p.m,
                                                                      tables.to_write(), parallel, bad);
      if (*bad) return;  // the op raises
      value_tangent.data_ptr<scalar_t>()[b] = end.tangent;
      const scalar_t g = grad.data_ptr<scalar_t>()[b];
      const scalar_t gt = grad_tangent.defined() ? grad_tangent.data_ptr<scalar_t>()[b] : scalar_t(0);
      scalar_t* out_tangent = grad_D_tangent.data_ptr<scalar_t>() + b * pair_stride;
      scalar_t* out_grad = with_grad ? grad_D.data_ptr<scalar_t>() + b * pair_stride : nullptr;
      backward_pair<scalar_t, /*kTangent=*/true>(
          geo, static_cast<scalar_t>(p.gamma), tables.to_read(), parallel,
          [&](int64_t i, int64_t j, scalar_t E, scalar_t E_tangent) {
            // grad_tangent·E + grad·Ė; grad·E has the first-order backward's bits.
            out_tangent[i * p.m + j] = gt * E + g * E_tangent;
            if (out_grad != nullptr) out_grad[i * p.m + j] = g * E;
          });
    });
  });
  finish(out);
  return {value_tangent, grad_D, grad_D_tangent};
}

// The fused second order in packs (short pairs): each pack's forward keeps all
// its diagonals of R and Ṙ, and its reverse sweep reads them in the same call.
template <typename T>
void fused_hvp_packs(const std::vector<Pack>& packs, const SoftDTWProblem& p, const at::Tensor& x, const at::Tensor& y,
                     const at::Tensor& u, const at::Tensor& v, const at::Tensor& grad, const at::Tensor& grad_tangent,
                     bool with_grad, at::Tensor& value_tangent, at::Tensor& grad_x, at::Tensor& grad_y,
                     at::Tensor& grad_x_tangent, at::Tensor& grad_y_tangent, bool* bad) {
  const int64_t d = x.size(2);
  const T* x_all = x.data_ptr<T>();
  const T* y_all = y.data_ptr<T>();
  for_each_pack(packs, [&](const Pack& pk) {
    if (pack_has_invalid(pk, x_all, y_all, p.n, p.m, d, bad)) return;  // the op raises
    const int64_t P = pk.lanes();
    const PackedSequences<T> s(pk, x_all, y_all, p.n * d, p.m * d, d);
    const PackedSequences<T> uv(pk, u.defined() ? u.data_ptr<T>() : nullptr, v.defined() ? v.data_ptr<T>() : nullptr,
                                p.n * d, p.m * d, d);
    auto diagonals = pack_diagonals_of_values<T>(pk, /*keep_all=*/true);
    auto tangent_diagonals = pack_diagonals_of_tangents<T>(pk, /*keep_all=*/true);
    std::vector<T> values(P);
    const PackTangent<T> tangent{uv, tangent_diagonals, value_tangent.data_ptr<T>() + pk.begin};
    forward_pack<T>(pk, s, static_cast<T>(p.gamma), diagonals, nullptr, 0, values.data(), &tangent);
    std::vector<double> acc_x(s.x.size(), 0.0), acc_y(s.y.size(), 0.0), hess_x(s.x.size(), 0.0),
        hess_y(s.y.size(), 0.0);
    const PackSecondOrder<T> second{tangent_diagonals, uv, hess_x.data(), hess_y.data()};
    backward_pack<T>(pk, s, static_cast<T>(p.gamma), diagonals, acc_x.data(), acc_y.data(), &second);
    const T* g = grad.data_ptr<T>();
    const T* gt = grad_tangent.defined() ? grad_tangent.data_ptr<T>() : nullptr;
    // As the tile path: grad = 2·g·Σ, its tangent 2·(ġ·Σ + g·Σ_hess).
    if (with_grad) store_pack_gradients(pk, s, acc_x, acc_y, g, p.n, p.m, grad_x.data_ptr<T>(), grad_y.data_ptr<T>());
    store_pack_rows(pk, d, p.n, p.m, grad_x_tangent.data_ptr<T>(), grad_y_tangent.data_ptr<T>(),
                    [&](int64_t q, bool of_y, int64_t index) {
                      const double gq = static_cast<double>(g[pk.begin + q]);
                      const double gtq = gt != nullptr ? static_cast<double>(gt[pk.begin + q]) : 0.0;
                      const double sum = (of_y ? acc_y : acc_x)[index], hess = (of_y ? hess_y : hess_x)[index];
                      return 2.0 * (gtq * sum + gq * hess);
                    });
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> CpuEngine::fused_hvp(
    const TangentInputs& in, bool with_grad, const Finish& finish) const {
  const SoftDTWProblem& p = in.problem;
  const at::Tensor &x = in.x, &y = in.y, &u = in.x_tangent, &v = in.y_tangent;
  const at::Tensor &grad = in.grad, &grad_tangent = in.grad_tangent;
  const int64_t d = x.size(2);
  const ForwardOutputs out = new_forward_outputs(p, x.options(), /*keep_table=*/false);
  at::Tensor value_tangent = at::zeros({p.batch}, x.options());
  at::Tensor grad_x = with_grad ? at::zeros_like(x) : at::empty({0}, x.options());
  at::Tensor grad_y = with_grad ? at::zeros_like(y) : at::empty({0}, y.options());
  at::Tensor grad_x_tangent = at::zeros_like(x);
  at::Tensor grad_y_tangent = at::zeros_like(y);
  const int64_t* xl = lengths_ptr(p.x_lengths);
  const int64_t* yl = lengths_ptr(p.y_lengths);
  const std::vector<Pack> packs = make_packs(p, d, xl, yl);
  // R and Ṙ whole, for each pair a thread holds (packs keep all their diagonals)
  check_table_memory(p, packs.empty() ? std::min<int64_t>(p.batch, at::get_num_threads()) : pairs_held_in_packs(p),
                     x.scalar_type(), x.device(), /*tables=*/2);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "soft_dtw_fused_hvp_cpu", [&] {
    if (!packs.empty()) {
      fused_hvp_packs<scalar_t>(packs, p, x, y, u, v, grad, grad_tangent, with_grad, value_tangent, grad_x, grad_y,
                                grad_x_tangent, grad_y_tangent, out.invalid.data_ptr<bool>());
      return;
    }
    for_each_pair(p.batch, [&](int64_t b, bool parallel) {
      const PairGeometry geo = pair_geometry(p, xl, yl, b);
      const scalar_t* xb = x.data_ptr<scalar_t>() + b * p.n * d;
      const scalar_t* yb = y.data_ptr<scalar_t>() + b * p.m * d;
      const scalar_t* ub = u.defined() ? u.data_ptr<scalar_t>() + b * p.n * d : nullptr;
      const scalar_t* vb = v.defined() ? v.data_ptr<scalar_t>() + b * p.m * d : nullptr;
      bool* bad = &out.invalid.data_ptr<bool>()[b];
      if (!all_finite(xb, geo.n * d) || !all_finite(yb, geo.m * d)) {
        *bad = true;
        return;
      }
      PairTables<scalar_t> tables(geo);
      const ForwardEnd<scalar_t> end = forward_pair<scalar_t>(
          geo, static_cast<scalar_t>(p.gamma), SquaredEuclideanTile<scalar_t>{xb, yb, d}, tables.to_write(), parallel,
          bad, SquaredEuclideanTangentTile<scalar_t>{xb, yb, ub, vb, d});
      value_tangent.data_ptr<scalar_t>()[b] = end.tangent;
      // Per cell, in float64 and in the first-order backward's order: Σ_j E_ij (x_i − y_j) (its
      // sums, so grad has its bits) and Σ_j Ė_ij (x_i − y_j) + E_ij (u_i − v_j) (the Hessian
      // term), and their mirrors over i for y.
      std::vector<double> sum_x(geo.n * d, 0.0), sum_y(geo.m * d, 0.0);
      std::vector<double> hess_x(geo.n * d, 0.0), hess_y(geo.m * d, 0.0);
      backward_pair<scalar_t, /*kTangent=*/true>(
          geo, static_cast<scalar_t>(p.gamma), tables.to_read(), parallel,
          [&](int64_t i, int64_t j, scalar_t E, scalar_t E_tangent) {
            if (E == scalar_t(0) && E_tangent == scalar_t(0)) return;
            const scalar_t* xi = xb + i * d;
            const scalar_t* yj = yb + j * d;
            for (int64_t k = 0; k < d; ++k) {
              const double diff = static_cast<double>(xi[k] - yj[k]);
              const double du = static_cast<double>((ub ? ub[i * d + k] : scalar_t(0)) - (vb ? vb[j * d + k] : scalar_t(0)));
              if (E != scalar_t(0)) {
                const double flow = static_cast<double>(E) * (xi[k] - yj[k]);
                sum_x[i * d + k] += flow;
                sum_y[j * d + k] -= flow;
              }
              const double hess = static_cast<double>(E_tangent) * diff + static_cast<double>(E) * du;
              hess_x[i * d + k] += hess;
              hess_y[j * d + k] -= hess;
            }
          });
      // grad = 2·g·Σ (the first-order gradient); grad_tangent = 2·(ġ·Σ + g·Σ_hess).
      const double g = static_cast<double>(grad.data_ptr<scalar_t>()[b]);
      const double gt = grad_tangent.defined() ? static_cast<double>(grad_tangent.data_ptr<scalar_t>()[b]) : 0.0;
      auto store = [&](const std::vector<double>& sum, const std::vector<double>& hess, int64_t len, int64_t padded,
                       at::Tensor& grad_out, at::Tensor& tangent_out) {
        scalar_t* go = with_grad ? grad_out.data_ptr<scalar_t>() + b * padded * d : nullptr;
        scalar_t* to = tangent_out.data_ptr<scalar_t>() + b * padded * d;
        for (int64_t k = 0; k < len * d; ++k) {
          if (go != nullptr) go[k] = static_cast<scalar_t>(2.0 * g * sum[k]);
          to[k] = static_cast<scalar_t>(2.0 * (gt * sum[k] + g * hess[k]));
        }
      };
      store(sum_x, hess_x, geo.n, p.n, grad_x, grad_x_tangent);
      store(sum_y, hess_y, geo.m, p.m, grad_y, grad_y_tangent);
    });
  });
  finish(out);
  return {value_tangent, grad_x, grad_y, grad_x_tangent, grad_y_tangent};
}

// The parallelogram's rows per column (_itakura_rows), from ItakuraParallelogram.
at::Tensor CpuEngine::itakura_rows(const at::Tensor& n, const at::Tensor& m, int64_t columns, double max_slope) const {
  at::Tensor out = at::empty({n.size(0), columns, 2}, n.options());
  const int64_t* n_all = n.data_ptr<int64_t>();
  const int64_t* m_all = m.data_ptr<int64_t>();
  int64_t* rows = out.data_ptr<int64_t>();
  at::parallel_for(0, n.size(0), 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const ItakuraParallelogram parallelogram(n_all[b], m_all[b], max_slope);
      for (int64_t j = 0; j < columns; ++j) {
        int64_t* cell = rows + 2 * (b * columns + j);
        cell[0] = j < m_all[b] ? parallelogram.first_row(j) : n_all[b];
        cell[1] = j < m_all[b] ? parallelogram.end_row(j) : n_all[b];
      }
    }
  });
  return out;
}

// An op body (../bodies.h) on the CPU's engine.
template <auto body>
using OnCpu = softdtw::On<CpuEngine, body>;

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CPU, m) {
  using namespace softdtw;  // the signatures (ops.h): each body takes the bundle, the kernel the flat list
  m.impl("_soft_dtw_from_cost_forward", FromCostForward::kernel_of<OnCpu<&from_cost_forward<CpuEngine>>>);
  m.impl("_soft_dtw_from_cost_backward", FromCostBackward::kernel_of<OnCpu<&from_cost_backward<CpuEngine>>>);
  m.impl("_soft_dtw_fused_forward", FusedForward::kernel_of<OnCpu<&fused_forward<CpuEngine>>>);
  m.impl("_soft_dtw_fused_backward", FusedBackward::kernel_of<OnCpu<&fused_backward<CpuEngine>>>);
  m.impl("_soft_dtw_fused_value_and_grad", FusedValueAndGrad::kernel_of<OnCpu<&fused_value_and_grad<CpuEngine>>>);
  m.impl("_soft_dtw_from_cost_jvp", FromCostJvp::kernel_of<OnCpu<&from_cost_jvp<CpuEngine>>>);
  m.impl("_soft_dtw_fused_jvp", FusedJvp::kernel_of<OnCpu<&fused_jvp<CpuEngine>>>);
  m.impl("_soft_dtw_from_cost_hvp", FromCostHvp::kernel_of<OnCpu<&from_cost_hvp<CpuEngine>>>);
  m.impl("_soft_dtw_fused_hvp", FusedHvp::kernel_of<OnCpu<&fused_hvp<CpuEngine>>>);
  m.impl("_dtw_path", DtwPath::kernel_of<OnCpu<&dtw_path<CpuEngine>>>);
  m.impl("_itakura_rows", &KernelOf<ItakuraRows>::kernel<OnCpu<&itakura_rows<CpuEngine>>>);
}

}  // namespace softdtw_torch
