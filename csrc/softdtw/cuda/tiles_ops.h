// The tile kernels' engine of the SoftDTW ops' bodies (../bodies.h): their work on validated
// inputs with the tiled kernels of tiles.cuh (output and workspace allocation, dtype dispatch and
// the launch sequences), TileEngine at the end. Templated on how a kernel is launched, so the CUDA
// ops (kernel.cu) and the CPU emulation tests (tests/cuda_emu/emulated_ops.cpp) run the same code.
//
// Memory beyond the outputs: the rolling border buffers, O(B·(N+M)); the fused backward adds its
// float64 running sums, B·(N+M)·d. No (B, N, M) tensor besides D, the kept table R and ∂/∂D, but
// for the fused backward of short pairs from the table, which writes E (B, N, M) before summing it;
// a checkpointed forward keeps B·N·M/32 border values of R instead of the table. In float32 each R
// is a pair (hi, lo): the table and the borders of R hold two floats per cell.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <limits>

#include "../../common/memory.h"
#include "../bodies.h"
#include "../problem.h"
#include "tiles.cuh"

namespace softdtw_torch {
namespace tiles {

using softdtw::CachedForward;
using softdtw::Finish;
using softdtw::TangentForward;

// The parallelogram's rows of every pair's columns (Geometry::itakura_rows), computed by
// itakura_rows_kernel; undefined when the problem has no parallelogram.
template <typename Launch>
at::Tensor itakura_rows_for(const Launch& launch, const SoftDTWProblem& p, const at::Device& device);

// The tile kernels' geometry of a problem; itakura_rows: itakura_rows_for's table (undefined: none).
inline Geometry geometry_of(const SoftDTWProblem& p, const at::Tensor& itakura_rows) {
  Geometry g;
  g.batch = p.batch;
  g.n = p.n;
  g.m = p.m;
  g.radius = p.window.radius;
  g.itakura_rows = itakura_rows.defined() ? itakura_rows.data_ptr<int64_t>() : nullptr;
  g.x_lengths = p.x_lengths.defined() ? p.x_lengths.data_ptr<int64_t>() : nullptr;
  g.y_lengths = p.y_lengths.defined() ? p.y_lengths.data_ptr<int64_t>() : nullptr;
  return g;
}

template <typename Launch>
at::Tensor itakura_rows_for(const Launch& launch, const SoftDTWProblem& p, const at::Device& device) {
  if (!p.window.has_itakura() || p.batch * p.m == 0) return at::Tensor();
  at::Tensor rows = at::empty({p.batch, p.m, 2}, at::TensorOptions(at::kLong).device(device));
  const int64_t blocks = (p.batch * p.m + kThreads - 1) / kThreads;
  launch(itakura_rows_kernel, blocks, kThreads, 0, geometry_of(p, at::Tensor()), p.window.itakura_slope,
         rows.data_ptr<int64_t>());
  return rows;
}

// A tiled forward's outputs: the op's (values, R when kept, invalid-input flags) and the border
// buffers of R: rolling (3 and 2 slots per pair) or, for a checkpointed forward, R on the last row
// of every row block (B, ⌈N/64⌉, M) and the last column of every column block (B, ⌈M/64⌉, N),
// each shaped as r_tensor_sizes says.
struct TiledForward {
  ForwardOutputs out;
  at::Tensor top_rows, left_cols;
  template <typename T>
  BorderBuffers<RValue<T>> borders() const {
    return {r_data<T>(top_rows), r_data<T>(left_cols), top_rows.size(1), left_cols.size(1)};
  }
};

// Border buffers of R (or, for the tangent channel, of Ṙ: `of_r` false) for `slots` row and column
// blocks per pair.
inline at::Tensor new_row_borders(const SoftDTWProblem& p, int64_t slots, const at::TensorOptions& options, bool of_r) {
  const std::vector<int64_t> cells{p.batch, slots, p.m};
  return at::empty(of_r ? r_tensor_sizes(cells, options.dtype().toScalarType()) : cells, options);
}
inline at::Tensor new_column_borders(const SoftDTWProblem& p, int64_t slots, const at::TensorOptions& options,
                                     bool of_r) {
  const std::vector<int64_t> cells{p.batch, slots, p.n};
  return at::empty(of_r ? r_tensor_sizes(cells, options.dtype().toScalarType()) : cells, options);
}

// soft_dtw_from_cost's forward (fused = false, costs from in.D) or soft_dtw's (fused = true,
// squared Euclidean costs of in.x, in.y). checkpoint: keep every tile border instead of the table.
// Short pairs run one warp per pair (pair_forward_kernel, no border buffers), the others the tiles.
template <typename Launch>
TiledForward run_forward(const Launch& launch, const ForwardInputs& in, bool fused, bool keep_table,
                         bool checkpoint = false) {
  const SoftDTWProblem& p = in.problem;
  const at::Tensor& like = fused ? in.x : in.D;
  const bool table = keep_table && !checkpoint;  // a checkpointed forward keeps borders instead
  const bool pairs = !checkpoint && pair_kernels_apply(launch, p.op, p.n, p.m, fused ? in.x.size(2) : 0);
  TiledForward f;
  f.out = new_forward_outputs(p, like.options(), table);
  const at::Tensor itakura_rows = itakura_rows_for(launch, p, like.device());
  const Geometry g = geometry_of(p, itakura_rows);
  const int64_t top_slots = pairs ? 0 : checkpoint ? g.row_blocks() : kForwardSlots;
  const int64_t left_slots = pairs ? 0 : checkpoint ? g.col_blocks() : kColumnSlots;
  f.top_rows = new_row_borders(p, top_slots, like.options(), /*of_r=*/true);
  f.left_cols = new_column_borders(p, left_slots, like.options(), /*of_r=*/true);
  if (p.batch == 0) return f;
  AT_DISPATCH_FLOATING_TYPES(like.scalar_type(), "soft_dtw_tiled_forward", [&] {
    const ForwardArgs<scalar_t> a{g,
                                  CellFunctions<scalar_t>::for_gamma(p.gamma),
                                  table ? r_data<scalar_t>(f.out.R) : nullptr,
                                  r_data<scalar_t>(f.top_rows),
                                  r_data<scalar_t>(f.left_cols),
                                  top_slots,
                                  left_slots,
                                  f.out.values.data_ptr<scalar_t>(),
                                  f.out.invalid.data_ptr<bool>(),
                                  /*hard_min=*/p.gamma == 0};
    const TangentForwardArgs<scalar_t> none{};
    auto run = [&](const auto& costs) {
      if (pairs) {
        launch_pair_forward(launch, a, costs);
      } else {
        launch_forward(launch, a, none, costs, NoTangents{});
      }
    };
    if (fused) {
      run(SquaredEuclideanCosts<scalar_t>{in.x.data_ptr<scalar_t>(), in.y.data_ptr<scalar_t>(), in.x.size(2)});
    } else {
      run(CostsFromTensor<scalar_t>{in.D.data_ptr<scalar_t>()});
    }
  });
  return f;
}

// The checkpoints a checkpointed forward returned, checked against the problem they must fit.
inline TiledForward checkpoints_of(const BackwardInputs& in, const at::Tensor& row_borders,
                                   const at::Tensor& column_borders) {
  const Geometry g = geometry_of(in.problem, at::Tensor());  // for its block counts only
  const auto& p = in.problem;
  const auto dtype = in.x.scalar_type();
  const std::vector<int64_t> rows = r_tensor_sizes({p.batch, g.row_blocks(), p.m}, dtype);
  const std::vector<int64_t> columns = r_tensor_sizes({p.batch, g.col_blocks(), p.n}, dtype);
  TORCH_CHECK(row_borders.sizes() == at::IntArrayRef(rows) && column_borders.sizes() == at::IntArrayRef(columns) &&
                  row_borders.scalar_type() == dtype && column_borders.scalar_type() == dtype &&
                  row_borders.device() == in.x.device() && column_borders.device() == in.x.device(),
              kFusedOp, ": expected the checkpointed forward's borders ", at::IntArrayRef(rows), " and ",
              at::IntArrayRef(columns), " of ", dtype, " on ", in.x.device(), ", got ", row_borders.sizes(), " and ",
              column_borders.sizes());
  TiledForward f;
  f.top_rows = row_borders.contiguous();
  f.left_cols = column_borders.contiguous();
  return f;
}

// Undefined message buffers: none (the pair kernels send messages by shuffles).
template <typename T>
BackwardArgs<T> backward_args(const BackwardInputs& in, const at::Tensor& itakura_rows,
                              const at::Tensor& row_msgs = at::Tensor(), const at::Tensor& col_msgs = at::Tensor()) {
  auto ptr = [](const at::Tensor& t) { return t.defined() ? t.data_ptr<T>() : nullptr; };
  return {geometry_of(in.problem, itakura_rows),
          CellFunctions<T>::for_gamma(in.problem.gamma),
          in.grad.data_ptr<T>(),
          ptr(row_msgs),
          ptr(col_msgs),
          /*hard_min=*/in.problem.gamma == 0};
}

// Message buffers of the backward sweep: (B, slots, 2, M) and (B, slots, 2, N).
inline std::pair<at::Tensor, at::Tensor> new_message_buffers(const SoftDTWProblem& p, const at::TensorOptions& options) {
  return {at::empty({p.batch, kBackwardSlots, 2, p.m}, options), at::empty({p.batch, kColumnSlots, 2, p.n}, options)};
}

// ∂/∂D of soft_dtw_from_cost: grad · E, (B, N, M), zero outside each pair. Short pairs run one warp
// per pair (pair_backward_kernel, which needs neither the window nor message buffers), the others
// the tiles.
template <typename Launch>
at::Tensor run_from_cost_backward(const Launch& launch, const BackwardInputs& in) {
  const SoftDTWProblem& p = in.problem;
  const std::vector<int64_t> shape{p.batch, p.n, p.m};
  at::Tensor grad_D = p.ragged() ? at::zeros(shape, in.R.options()) : at::empty(shape, in.R.options());
  if (p.batch == 0) return grad_D;
  if (pair_kernels_apply(launch, p.op, p.n, p.m, 0)) {
    AT_DISPATCH_FLOATING_TYPES(in.R.scalar_type(), "soft_dtw_from_cost_pair_backward", [&] {
      launch_pair_backward(launch, backward_args<scalar_t>(in, at::Tensor()), r_data<scalar_t>(in.R),  // no window
                           in.grad.data_ptr<scalar_t>(), grad_D.data_ptr<scalar_t>());
    });
    return grad_D;
  }
  const auto [row_msgs, col_msgs] = new_message_buffers(p, in.R.options());
  const at::Tensor itakura_rows = itakura_rows_for(launch, p, in.R.device());
  AT_DISPATCH_FLOATING_TYPES(in.R.scalar_type(), "soft_dtw_from_cost_tiled_backward", [&] {
    launch_backward(launch, backward_args<scalar_t>(in, itakura_rows, row_msgs, col_msgs),
                    TangentBackwardArgs<scalar_t>{}, RFromTable<scalar_t>{r_data<scalar_t>(in.R)},
                    WriteCostGradient<scalar_t>{grad_D.data_ptr<scalar_t>()});
  });
  return grad_D;
}

// The fused backward of short pairs from the kept table: E of every cell by pair_backward_kernel
// into a (B, N, M) buffer (preflighted: it is the one tensor of this size the tiles do without),
// then its sums into acc_x and acc_y.
template <typename Launch>
void run_pair_fused_backward(const Launch& launch, const BackwardInputs& in, const at::Tensor& acc_x,
                             const at::Tensor& acc_y) {
  const SoftDTWProblem& p = in.problem;
  const std::vector<int64_t> shape{p.batch, p.n, p.m};
  memory::check(p.op, c10::str("the reverse recursion's E of ", p.batch, " pairs of ", p.n, " x ", p.m, " cells"),
                memory::bytes_of(shape, in.x.scalar_type()), in.x.device(),
                "pass checkpoint=True (the backward then recomputes R tile by tile and keeps no E), or split the "
                "batch into smaller calls");
  const at::Tensor E = at::empty(shape, in.x.options());
  AT_DISPATCH_FLOATING_TYPES(in.x.scalar_type(), "soft_dtw_fused_pair_backward", [&] {
    const BackwardArgs<scalar_t> a = backward_args<scalar_t>(in, at::Tensor());  // the pair kernels read no window
    launch_pair_backward(launch, a, r_data<scalar_t>(in.R), static_cast<const scalar_t*>(nullptr),
                         E.data_ptr<scalar_t>());
    launch_pair_sequence_sums(launch, a.g, E.data_ptr<scalar_t>(), in.x.data_ptr<scalar_t>(), in.y.data_ptr<scalar_t>(),
                              in.x.size(2), acc_x.data_ptr<double>(), acc_y.data_ptr<double>());
  });
}

// ∂/∂x, ∂/∂y of soft_dtw (squared Euclidean): 2·grad·Σ_j E_ij (x_i − y_j) and its mirror, with
// R from the kept table (in.R) or, when `checkpoints` holds a checkpointed forward's border
// buffers, recomputed tile by tile from them.
template <typename Launch>
std::tuple<at::Tensor, at::Tensor> run_fused_backward(const Launch& launch, const BackwardInputs& in,
                                                      const TiledForward* checkpoints = nullptr) {
  const SoftDTWProblem& p = in.problem;
  const at::TensorOptions sums = in.x.options().dtype(at::kDouble);
  const at::Tensor acc_x = at::zeros(in.x.sizes(), sums);
  const at::Tensor acc_y = at::zeros(in.y.sizes(), sums);
  if (p.batch > 0 && checkpoints == nullptr && pair_kernels_apply(launch, p.op, p.n, p.m, in.x.size(2))) {
    run_pair_fused_backward(launch, in, acc_x, acc_y);
  } else if (p.batch > 0) {
    const auto [row_msgs, col_msgs] = new_message_buffers(p, in.x.options());
    const at::Tensor itakura_rows = itakura_rows_for(launch, p, in.x.device());
    AT_DISPATCH_FLOATING_TYPES(in.x.scalar_type(), "soft_dtw_fused_tiled_backward", [&] {
      const BackwardArgs<scalar_t> a = backward_args<scalar_t>(in, itakura_rows, row_msgs, col_msgs);
      const AccumulateSequenceGradients<scalar_t> epilogue{in.x.data_ptr<scalar_t>(), in.y.data_ptr<scalar_t>(),
                                                           in.x.size(2), acc_x.data_ptr<double>(),
                                                           acc_y.data_ptr<double>()};
      const TangentBackwardArgs<scalar_t> none{};
      if (checkpoints == nullptr) {
        launch_backward(launch, a, none, RFromTable<scalar_t>{r_data<scalar_t>(in.R)}, epilogue);
      } else {
        const SquaredEuclideanCosts<scalar_t> costs{in.x.data_ptr<scalar_t>(), in.y.data_ptr<scalar_t>(), in.x.size(2)};
        launch_backward(launch, a, none,
                        RFromCheckpoints<scalar_t, SquaredEuclideanCosts<scalar_t>>{costs, checkpoints->borders<scalar_t>()},
                        epilogue);
      }
    });
  }
  const at::Tensor scale = (2.0 * in.grad.to(at::kDouble)).view({p.batch, 1, 1});
  return {(acc_x * scale).to(in.x.scalar_type()), (acc_y * scale).to(in.y.scalar_type())};
}

// ---------------------------------------------------------------------------------------------
// Forward mode and second order (design doc §3; cuda_kernels.md, "Forward mode and second order").
// The forward carries the tangent channel (Ṙ beside R) through the same launches. The second-order
// ops keep no table: their forward keeps R and Ṙ on the tile borders only, as a checkpointed forward
// does, and each reverse tile recomputes R and Ṙ from them before its sweep with the tangent (Ė
// beside E). Memory beyond the outputs: borders and messages, O(B·N·M/32), no (B, N, M) tensor.

// A tiled forward carrying the tangent channel: the value channel as run_forward's, and the
// tangent channel's border buffers (same slots) and Ṙ at each pair's last cell.
struct TiledTangentForward {
  TiledForward values;
  at::Tensor tangent_top_rows, tangent_left_cols, tangents;
  template <typename T>
  BorderBuffers<T> tangent_borders() const {
    return {tangent_top_rows.data_ptr<T>(), tangent_left_cols.data_ptr<T>(), tangent_top_rows.size(1),
            tangent_left_cols.size(1)};
  }
};

// The forward with the tangent, Ḋ from in.D_tangent (from cost; undefined: 0) or from the tangents
// u, v of x, y (fused; each undefined: 0). checkpoint: one border slot per block (for a backward).
template <typename Launch>
TiledTangentForward run_tangent_forward(const Launch& launch, const ForwardInputs& in, bool fused,
                                        const at::Tensor& D_tangent, const at::Tensor& u, const at::Tensor& v,
                                        bool checkpoint) {
  const SoftDTWProblem& p = in.problem;
  const at::Tensor& like = fused ? in.x : in.D;
  const at::Tensor itakura_rows = itakura_rows_for(launch, p, like.device());
  const Geometry g = geometry_of(p, itakura_rows);
  const int64_t top_slots = checkpoint ? g.row_blocks() : kForwardSlots;
  const int64_t left_slots = checkpoint ? g.col_blocks() : kColumnSlots;
  TiledTangentForward f;
  f.values.out = new_forward_outputs(p, like.options(), /*keep_table=*/false);
  f.values.top_rows = new_row_borders(p, top_slots, like.options(), /*of_r=*/true);
  f.values.left_cols = new_column_borders(p, left_slots, like.options(), /*of_r=*/true);
  f.tangent_top_rows = new_row_borders(p, top_slots, like.options(), /*of_r=*/false);
  f.tangent_left_cols = new_column_borders(p, left_slots, like.options(), /*of_r=*/false);
  f.tangents = at::zeros({p.batch}, like.options());
  if (p.batch == 0) return f;
  AT_DISPATCH_FLOATING_TYPES(like.scalar_type(), "soft_dtw_tiled_tangent_forward", [&] {
    using T = scalar_t;
    const ForwardArgs<T> a{g, CellFunctions<T>::for_gamma(p.gamma), nullptr, r_data<T>(f.values.top_rows),
                           r_data<T>(f.values.left_cols), top_slots, left_slots, f.values.out.values.data_ptr<T>(),
                           f.values.out.invalid.data_ptr<bool>(), /*hard_min=*/p.gamma == 0};
    const TangentForwardArgs<T> ta{f.tangent_top_rows.data_ptr<T>(), f.tangent_left_cols.data_ptr<T>(),
                                   f.tangents.data_ptr<T>()};
    auto ptr = [](const at::Tensor& t) { return t.defined() ? t.data_ptr<T>() : nullptr; };
    if (fused) {
      const SquaredEuclideanCosts<T> costs{in.x.data_ptr<T>(), in.y.data_ptr<T>(), in.x.size(2)};
      launch_forward(launch, a, ta, costs,
                     SquaredEuclideanTangents<T>{costs.x, costs.y, ptr(u), ptr(v), in.x.size(2)});
    } else {
      launch_forward(launch, a, ta, CostsFromTensor<T>{in.D.data_ptr<T>()}, TangentsFromTensor<T>{ptr(D_tangent)});
    }
  });
  return f;
}

// The reverse recursion with the tangent over a checkpointed tangent forward, with `epilogue`.
template <typename T, typename Costs, typename Tangents, typename Epilogue, typename Launch>
void run_second_order_backward(const Launch& launch, const ForwardInputs& in, const TiledTangentForward& f,
                               const at::Tensor& grad, const at::Tensor& grad_tangent, const Costs& costs,
                               const Tangents& tangents, const Epilogue& epilogue) {
  const SoftDTWProblem& p = in.problem;
  const at::TensorOptions options = grad.options();
  const auto [row_msgs, col_msgs] = new_message_buffers(p, options);
  const auto [tangent_row_msgs, tangent_col_msgs] = new_message_buffers(p, options);
  const at::Tensor itakura_rows = itakura_rows_for(launch, p, grad.device());
  const BackwardArgs<T> a{geometry_of(p, itakura_rows), CellFunctions<T>::for_gamma(p.gamma),
                          grad.data_ptr<T>(),           row_msgs.data_ptr<T>(),
                          col_msgs.data_ptr<T>(),       /*hard_min=*/p.gamma == 0};
  const TangentBackwardArgs<T> ta{grad_tangent.defined() ? grad_tangent.data_ptr<T>() : nullptr,
                                  tangent_row_msgs.data_ptr<T>(), tangent_col_msgs.data_ptr<T>()};
  launch_backward(launch, a, ta,
                  RAndTangentFromCheckpoints<T, Costs, Tangents>{costs, tangents, f.values.borders<T>(),
                                                                 f.tangent_borders<T>()},
                  epilogue);
}

// ---------------------------------------------------------------------------------------------
// The tile kernels' engine of the SoftDTW ops' bodies (../bodies.h, which lists what each method
// does), launching with `launch`: CUDA's (kernel.cu) or the emulator's (the emulation tests).
template <typename Launch>
struct TileEngine {
  // The tile borders of R are checkpoints; each pair's unit gradients are the CPU's cache (its
  // forward of short pairs in packs).
  static constexpr bool kKeepsUnitGradients = false;
  static constexpr bool kKeepsBorders = true;

  Launch launch;

  ForwardOutputs forward(const ForwardInputs& in, bool fused, bool keep_table) const {
    return run_forward(launch, in, fused, keep_table).out;
  }

  at::Tensor from_cost_backward(const BackwardInputs& in) const { return run_from_cost_backward(launch, in); }

  std::tuple<at::Tensor, at::Tensor> fused_backward(const BackwardInputs& in) const {
    return run_fused_backward(launch, in);
  }

  CachedForward checkpointed_forward(const ForwardInputs& in) const {
    const TiledForward f = run_forward(launch, in, /*fused=*/true, /*keep_table=*/false, /*checkpoint=*/true);
    return {f.out, f.top_rows, f.left_cols};
  }

  std::tuple<at::Tensor, at::Tensor> backward_from_checkpoints(const BackwardInputs& in, const at::Tensor& rows,
                                                               const at::Tensor& columns) const {
    const TiledForward checkpoints = checkpoints_of(in, rows, columns);
    return run_fused_backward(launch, in, &checkpoints);
  }

  // Hard DTW's values and paths: the fused forward at γ = 0 keeping its table, then one launch of
  // hard_path_kernel (a thread per pair).
  std::tuple<at::Tensor, at::Tensor, at::Tensor> dtw_path(const ForwardInputs& in, const Finish& finish) const {
    const TiledForward f = run_forward(launch, in, /*fused=*/true, /*keep_table=*/true);
    auto [values, R] = finish(f.out);
    const PathOutputs paths = new_path_outputs(in.problem, in.x.device());
    if (in.problem.batch == 0) return {values, paths.paths, paths.lengths};
    AT_DISPATCH_FLOATING_TYPES(in.x.scalar_type(), "dtw_path_cuda", [&] {
      const int64_t blocks = (in.problem.batch + kThreads - 1) / kThreads;
      launch(hard_path_kernel<scalar_t>, blocks, kThreads, 0, geometry_of(in.problem, at::Tensor()),  // reads no window
             static_cast<const RValue<scalar_t>*>(r_data<scalar_t>(R)), paths.paths.data_ptr<int64_t>(),
             paths.lengths.data_ptr<int64_t>());
    });
    return {values, paths.paths, paths.lengths};
  }

  TangentForward tangent_forward(const TangentInputs& in, bool fused) const {
    const TiledTangentForward f =
        fused ? run_tangent_forward(launch, in, /*fused=*/true, {}, in.x_tangent, in.y_tangent, /*checkpoint=*/false)
              : run_tangent_forward(launch, in, /*fused=*/false, in.D_tangent, {}, {}, /*checkpoint=*/false);
    return {f.values.out, f.tangents};
  }

  std::tuple<at::Tensor, at::Tensor, at::Tensor> from_cost_hvp(const TangentInputs& in, bool with_grad,
                                                               const Finish& finish) const {
    const SoftDTWProblem& p = in.problem;
    const at::Tensor &t = in.D_tangent, &g = in.grad, &gt = in.grad_tangent;
    const TiledTangentForward f = run_tangent_forward(launch, in, /*fused=*/false, t, {}, {}, /*checkpoint=*/true);
    finish(f.values.out);
    auto new_like_D = [&] { return p.ragged() ? at::zeros_like(in.D) : at::empty_like(in.D); };
    at::Tensor grad_D = with_grad ? new_like_D() : at::empty({0}, in.D.options());
    at::Tensor grad_D_tangent = new_like_D();
    if (p.batch > 0) {
      AT_DISPATCH_FLOATING_TYPES(in.D.scalar_type(), "soft_dtw_from_cost_tiled_hvp", [&] {
        using T = scalar_t;
        run_second_order_backward<T>(
            launch, in, f, g, gt, CostsFromTensor<T>{in.D.data_ptr<T>()},
            TangentsFromTensor<T>{t.defined() ? t.data_ptr<T>() : nullptr},
            WriteCostGradientTangent<T>{grad_D_tangent.data_ptr<T>(), with_grad ? grad_D.data_ptr<T>() : nullptr});
      });
    }
    return {f.tangents, grad_D, grad_D_tangent};
  }

  std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_hvp(const TangentInputs& in,
                                                                                   bool with_grad,
                                                                                   const Finish& finish) const {
    const SoftDTWProblem& p = in.problem;
    const at::Tensor &u = in.x_tangent, &v = in.y_tangent, &g = in.grad, &gt = in.grad_tangent;
    const TiledTangentForward f = run_tangent_forward(launch, in, /*fused=*/true, {}, u, v, /*checkpoint=*/true);
    finish(f.values.out);
    const at::TensorOptions sums = in.x.options().dtype(at::kDouble);
    const at::Tensor acc_x = at::zeros(in.x.sizes(), sums), acc_y = at::zeros(in.y.sizes(), sums);
    const at::Tensor hess_x = at::zeros(in.x.sizes(), sums), hess_y = at::zeros(in.y.sizes(), sums);
    if (p.batch > 0) {
      AT_DISPATCH_FLOATING_TYPES(in.x.scalar_type(), "soft_dtw_fused_tiled_hvp", [&] {
        using T = scalar_t;
        auto ptr = [](const at::Tensor& t) { return t.defined() ? t.data_ptr<T>() : nullptr; };
        const int64_t d = in.x.size(2);
        const SquaredEuclideanCosts<T> costs{in.x.data_ptr<T>(), in.y.data_ptr<T>(), d};
        const SquaredEuclideanTangents<T> tangents{costs.x, costs.y, ptr(u), ptr(v), d};
        run_second_order_backward<T>(
            launch, in, f, g, gt, costs, tangents,
            AccumulateSequenceGradientTangents<T>{costs.x, costs.y, ptr(u), ptr(v), d, acc_x.data_ptr<double>(),
                                                  acc_y.data_ptr<double>(), hess_x.data_ptr<double>(),
                                                  hess_y.data_ptr<double>()});
      });
    }
    // grad = 2·g·Σ, its tangent 2·(ġ·Σ + g·Σ_hess), per pair.
    const at::Tensor g2 = (2.0 * g.to(at::kDouble)).view({p.batch, 1, 1});
    const at::Tensor gt2 = gt.defined() ? (2.0 * gt.to(at::kDouble)).view({p.batch, 1, 1}) : at::zeros_like(g2);
    const auto dtype = in.x.scalar_type();
    at::Tensor grad_x = with_grad ? (acc_x * g2).to(dtype) : at::empty({0}, in.x.options());
    at::Tensor grad_y = with_grad ? (acc_y * g2).to(dtype) : at::empty({0}, in.y.options());
    return {f.tangents, grad_x, grad_y, (acc_x * gt2 + hess_x * g2).to(dtype), (acc_y * gt2 + hess_y * g2).to(dtype)};
  }

  // _itakura_rows: the table of pairs of lengths (n[b], m[b]) itself, validated by the body.
  at::Tensor itakura_rows(const at::Tensor& n, const at::Tensor& m, int64_t columns, double max_slope) const {
    SoftDTWProblem p;
    p.batch = n.size(0);
    p.n = std::numeric_limits<int64_t>::max();  // lengths as given (pair_length clamps to the padded sizes)
    p.m = columns;
    p.window.itakura_slope = max_slope;
    p.x_lengths = n;
    p.y_lengths = m;
    const at::Tensor rows = itakura_rows_for(launch, p, n.device());
    return rows.defined() ? rows : at::empty({p.batch, columns, 2}, n.options());
  }
};

}  // namespace tiles
}  // namespace softdtw_torch
