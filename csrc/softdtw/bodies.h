// The SoftDTW ops' bodies, written once for every device: from an op's arguments (the bundle as one
// ProblemArgs, args.h) to its results. A body validates (problem.h's prepare_*), carries out the
// memory plan (plan.h), recomputes the table a backward reads when its forward kept none, and raises
// for invalid input values (finish_forward); the device's engine only computes, on validated inputs.
//
// The engines: CpuEngine (cpu/kernel.cpp: packs of short pairs and the tiled wavefront, packs.h and
// tiles.h) and tiles::TileEngine<Launch> (cuda/tiles_ops.h: the tile kernels, launched by CUDA in
// cuda/kernel.cu or by the CUDA emulator in tests/cuda_emu/emulated_ops.cpp). An engine gives:
//
//   kKeepsUnitGradients, kKeepsBorders        which of plan.h's caches it can keep (below)
//   ForwardOutputs forward(in, fused, keep_table)
//                                             soft_dtw_from_cost's forward (fused false: costs in.D)
//                                             or soft_dtw's (squared Euclidean costs of in.x, in.y)
//   Tensor from_cost_backward(in)             ∂/∂D from in.R
//   Pair fused_backward(in)                   ∂/∂x, ∂/∂y from in.R
//   CachedForward forward_with_unit_gradients(in), Pair backward_from_unit_gradients(in, unit_x, unit_y)
//                                             "gradients" (when kKeepsUnitGradients)
//   pair<ForwardOutputs, Tensor> value_and_grad(in, weights)
//                                             _soft_dtw_fused_value_and_grad (the CPU's only)
//   CachedForward checkpointed_forward(in), Pair backward_from_checkpoints(in, rows, columns)
//                                             "borders" (when kKeepsBorders)
//   TangentForward tangent_forward(in, fused) the forward with the tangent channel
//   from_cost_hvp(in, with_grad, finish), fused_hvp(in, with_grad, finish), dtw_path(in, finish)
//                                             the ops' results; `finish` is called once the forward's
//                                             flags are known, before any work that reads its values
//   Tensor itakura_rows(n, m, columns, max_slope)
//
// A new derivative mode or memory strategy is then one body here and one engine method per device;
// a new option of the problem is a field of SoftDTWProblem the engines read (args.h says where).
#pragma once

#include <ATen/ATen.h>

#include <tuple>

#include "ops.h"  // Pair, Triple
#include "plan.h"
#include "problem.h"

namespace softdtw_torch::softdtw {

// The end of an op's forward: raises when a pair was flagged (naming the public op and what was
// wrong), else (values in the input dtype, R).
struct Finish {
  const char* op;
  at::ScalarType input_dtype;
  const char* what;
  Pair operator()(const ForwardOutputs& out) const { return finish_forward(op, out, input_dtype, what); }
};
inline Finish from_cost_finish(const at::Tensor& D) { return {kFromCostOp, D.scalar_type(), kInvalidCostMessage}; }
inline Finish fused_finish(const at::Tensor& x, const char* op = kFusedOp) {
  return {op, x.scalar_type(), kInvalidSequenceMessage};
}

// A forward that keeps a cache of two tensors (plan.h): the unit gradients, or the tile borders.
struct CachedForward {
  ForwardOutputs out;
  at::Tensor first, second;
};

// A forward with the tangent channel: its outputs, and each pair's tangent of the value (compute dtype).
struct TangentForward {
  ForwardOutputs out;
  at::Tensor tangents;
};

// The inputs of a backward with the table it reads: the forward's (in.R), or, when the forward kept
// none, recomputed by this device's forward, its invalid inputs refused as that forward refuses them.
template <typename Engine>
BackwardInputs with_table(const Engine& engine, BackwardInputs in, bool fused) {
  if (in.R.defined()) return in;
  in.R = recomputed_table(engine.forward(in.forward(), fused, /*keep_table=*/true), fused);
  return in;
}

// The cache `keep` (or `kept`) names, as this engine keeps it: "gradients" refused where the engine
// has no unit gradients (the CPU's forward of short pairs in packs keeps them); "borders" is
// "nothing" where it has no tile checkpoints (the whole table is then recomputed).
template <typename Engine>
FusedCache engine_cache(const char* option, c10::string_view name, const at::Device& device) {
  const FusedCache cache = fused_cache_named(kFusedOp, option, name);
  TORCH_CHECK_NOT_IMPLEMENTED(cache != FusedCache::kGradients || Engine::kKeepsUnitGradients, kFusedOp,
                              ": the \"gradients\" cache (each pair's unit gradients) is kept on the CPU only, got "
                              "tensors on ",
                              device);
  return cache == FusedCache::kBorders && !Engine::kKeepsBorders ? FusedCache::kNothing : cache;
}

template <typename Engine>
Pair from_cost_forward(const Engine& engine, const at::Tensor& D, const ProblemArgs& args, bool keep_table) {
  return from_cost_finish(D)(engine.forward(prepare_from_cost(D, args), /*fused=*/false, keep_table));
}

template <typename Engine>
at::Tensor from_cost_backward(const Engine& engine, const at::Tensor& grad, const at::Tensor& D, const at::Tensor& R,
                              const ProblemArgs& args) {
  return engine.from_cost_backward(with_table(engine, prepare_from_cost_backward(grad, D, R, args), /*fused=*/false));
}

// The fused pair: the forward keeps what `keep` names (plan.h), the backward reads it.
template <typename Engine>
Triple fused_forward(const Engine& engine, const at::Tensor& x, const at::Tensor& y, const ProblemArgs& args,
                     c10::string_view keep) {
  const FusedCache cache = engine_cache<Engine>("keep", keep, x.device());
  const ForwardInputs in = prepare_fused(x, y, args);
  auto with_cache = [&](const CachedForward& f) -> Triple {
    return {std::get<0>(fused_finish(x)(f.out)), f.first, f.second};
  };
  if constexpr (Engine::kKeepsUnitGradients) {
    if (cache == FusedCache::kGradients) return with_cache(engine.forward_with_unit_gradients(in));
  }
  if constexpr (Engine::kKeepsBorders) {
    if (cache == FusedCache::kBorders) return with_cache(engine.checkpointed_forward(in));
  }
  auto [values, R] = fused_finish(x)(engine.forward(in, /*fused=*/true, /*keep_table=*/cache == FusedCache::kTable));
  return {values, R, at::empty({0}, R.options())};
}

template <typename Engine>
Pair fused_backward(const Engine& engine, const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y,
                    const at::Tensor& first, const at::Tensor& second, const ProblemArgs& args, c10::string_view kept) {
  const FusedCache cache = engine_cache<Engine>("kept", kept, x.device());
  if constexpr (Engine::kKeepsUnitGradients) {
    if (cache == FusedCache::kGradients) {
      return engine.backward_from_unit_gradients(
          prepare_fused_backward_from_unit_gradients(grad, x, y, first, second, args), first, second);
    }
  }
  if constexpr (Engine::kKeepsBorders) {
    if (cache == FusedCache::kBorders) {
      return engine.backward_from_checkpoints(prepare_fused_checkpointed_backward(grad, x, y, args), first, second);
    }
  }
  const at::Tensor R = cache == FusedCache::kTable ? first : at::empty({0}, x.options());
  return engine.fused_backward(with_table(engine, prepare_fused_backward(grad, x, y, R, args), /*fused=*/true));
}

// _soft_dtw_fused_value_and_grad: the values and weights[b]·∂value_b/∂x_b in one call (the CPU's
// forward of short pairs in packs keeps every cell's weights for its backward; registered there only).
template <typename Engine>
Pair fused_value_and_grad(const Engine& engine, const at::Tensor& x, const at::Tensor& y, const at::Tensor& weights,
                          const ProblemArgs& args) {
  const ForwardInputs in = prepare_fused(x, y, args);
  check_pair_weights(x, weights);
  auto [out, grad_x] = engine.value_and_grad(in, weights.to(in.x.scalar_type()).contiguous());
  auto [values, unused] = fused_finish(x)(out);
  return {values, grad_x.to(x.scalar_type())};
}

// Hard DTW's values and paths; γ is 0 (_dtw_path's schema has no gamma: WithoutGamma, args.h).
template <typename Engine>
Triple dtw_path(const Engine& engine, const at::Tensor& x, const at::Tensor& y, const ProblemArgs& args) {
  return engine.dtw_path(prepare_fused(x, y, args, kDtwPathOp), fused_finish(x, kDtwPathOp));
}

// Forward mode (design doc §3): the values and their tangents, in the input dtype.
template <typename Engine>
Pair from_cost_jvp(const Engine& engine, const at::Tensor& D, const at::Tensor& D_tangent, const ProblemArgs& args) {
  const TangentForward f = engine.tangent_forward(prepare_from_cost_jvp(D, D_tangent, args), /*fused=*/false);
  auto [values, unused] = from_cost_finish(D)(f.out);
  return {values, f.tangents.to(D.scalar_type())};
}

template <typename Engine>
Pair fused_jvp(const Engine& engine, const at::Tensor& x, const at::Tensor& y, const OptTensor& x_tangent,
               const OptTensor& y_tangent, const ProblemArgs& args) {
  const TangentForward f = engine.tangent_forward(prepare_fused_jvp(x, y, x_tangent, y_tangent, args), /*fused=*/true);
  auto [values, unused] = fused_finish(x)(f.out);
  return {values, f.tangents.to(x.scalar_type())};
}

// Second order (design doc §3): the value's tangent, the gradient (when with_grad) and its tangent.
template <typename Engine>
Triple from_cost_hvp(const Engine& engine, const at::Tensor& grad, const OptTensor& grad_tangent, const at::Tensor& D,
                     const OptTensor& D_tangent, const ProblemArgs& args, bool with_grad) {
  return engine.from_cost_hvp(prepare_from_cost_hvp(grad, grad_tangent, D, D_tangent, args), with_grad,
                              from_cost_finish(D));
}

template <typename Engine>
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_hvp(
    const Engine& engine, const at::Tensor& grad, const OptTensor& grad_tangent, const at::Tensor& x,
    const at::Tensor& y, const OptTensor& x_tangent, const OptTensor& y_tangent, const ProblemArgs& args,
    bool with_grad) {
  return engine.fused_hvp(prepare_fused_hvp(grad, grad_tangent, x, y, x_tangent, y_tangent, args), with_grad,
                          fused_finish(x));
}

// _itakura_rows: the parallelogram's rows per column of pairs of lengths (n[b], m[b]).
template <typename Engine>
at::Tensor itakura_rows(const Engine& engine, const at::Tensor& n, const at::Tensor& m, int64_t columns,
                        double max_slope) {
  const auto [n_checked, m_checked] = checked_itakura_lengths(n, m, columns, max_slope);
  return engine.itakura_rows(n_checked, m_checked, columns, max_slope);
}

// The kernel the dispatcher calls for `body` on a default-made Engine: the CPU's, and the
// emulator's tile engine. CUDA wraps the body itself (OnCurrentStream in cuda/kernel.cu: the
// device guard and the stream).
template <typename Engine, auto body>
struct On {
  template <typename... Args>
  static auto run(const Args&... args) {
    return body(Engine{}, args...);
  }
};

}  // namespace softdtw_torch::softdtw
