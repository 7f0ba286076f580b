// Host-side code shared by the CPU and CUDA SoftDTW kernels: input validation (one message per
// mistake, the same on every device; the fake kernels in softdtw_torch/_fake/softdtw.py repeat the
// shape-level ones word for word) and the preparation of validated inputs and outputs.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>
#include <vector>

#include "args.h"
#include "math.h"

namespace softdtw_torch {

using softdtw::ProblemArgs;

// Op names used in every message: the public names users call.
constexpr const char* kFromCostOp = "soft_dtw_from_cost";
constexpr const char* kFusedOp = "soft_dtw";
constexpr const char* kSharpOp = "soft_dtw_sharp";
constexpr const char* kSharpFromCostOp = "soft_dtw_sharp_from_cost";
constexpr const char* kDilateOp = "dilate";
constexpr const char* kAlignmentOp = "soft_dtw_alignment";
constexpr const char* kAlignmentFromCostOp = "soft_dtw_alignment_from_cost";
constexpr const char* kDtwPathOp = "dtw_path";

// Validated inputs of one op call, converted to what the kernels read.
struct SoftDTWProblem {
  const char* op = kFromCostOp;     // the public op the errors name
  int64_t batch = 0, n = 0, m = 0;  // padded lengths
  double gamma = 1.0;
  Window window;                    // band and/or parallelogram (math.h), by default neither
  at::Tensor x_lengths, y_lengths;  // int64 on the kernel's device, or undefined (all pairs n × m)
  bool ragged() const { return x_lengths.defined() || y_lengths.defined(); }
};

// x (B, N, d) and y (B, M, d): same batch, features, device and dtype; N, M, d >= 1. The messages
// call them x_name and y_name.
void check_sequence_pair(const char* op, const at::Tensor& x, const at::Tensor& y, const char* x_name = "x",
                         const char* y_name = "y");

// gamma = 0 (hard DTW, math.h's HardCellFunctions), or gamma and 1/gamma normal numbers of the compute
// dtype (float32 for float32, float16 and bfloat16 input; float64 for float64), so that neither the
// kernels' 1/gamma nor gamma itself rounds to 0 or inf there: ValueError otherwise, naming the range.
void check_gamma(const char* op, double gamma, at::ScalarType dtype);

// The window of bandwidth (the Sakoe–Chiba radius, >= 0) and itakura_max_slope (the Itakura
// parallelogram's slope, finite and >= 1), either None for none; ValueError for other values.
Window checked_window(const char* op, std::optional<int64_t> bandwidth, std::optional<double> itakura_max_slope);

// _itakura_rows's lengths: n and m (B,) integer tensors on one device, n >= 1 and 1 <= m <= columns,
// returned as contiguous int64; the slope as checked_window checks it. Errors name itakura_mask.
std::pair<at::Tensor, at::Tensor> checked_itakura_lengths(const at::Tensor& n, const at::Tensor& m, int64_t columns,
                                                          double max_slope);

// Validated inputs of a forward op, converted to what the kernels read: D (B, N, M), or x
// (B, N, d) and y (B, M, d), contiguous in the compute dtype.
struct ForwardInputs {
  SoftDTWProblem problem;
  at::Tensor D, x, y;
};

ForwardInputs prepare_from_cost(const at::Tensor& D, const ProblemArgs& args);

// op: the name errors give (the fused op's by default).
ForwardInputs prepare_fused(const at::Tensor& x, const at::Tensor& y, const ProblemArgs& args,
                            const char* op = kFusedOp);

// Hard DTW's paths (_dtw_path): (B, N + M − 1, 2) int64 cells, −1 past each path's end, and the
// paths' lengths (B,), on the problem's device.
struct PathOutputs {
  at::Tensor paths, lengths;
};
PathOutputs new_path_outputs(const SoftDTWProblem& p, const at::Device& device);

// A forward's outputs: values (B,), the DP table R, and per-pair flags for invalid input values.
// R is kept as table_sizes says (+inf where ragged pairs pad it, so padding is defined), else an
// empty tensor: the no-grad path keeps O(B·(N+M)) extra memory only.
struct ForwardOutputs {
  at::Tensor values, R, invalid;
};

// The shape of a tensor of R values (the DP table, the CUDA kernels' border buffers) of the given
// cells: as is in float64; in float32 with a last dimension of 2, each R as the pair (hi, lo) whose
// sum it is (math.h, RValue).
std::vector<int64_t> r_tensor_sizes(std::vector<int64_t> cells, at::ScalarType dtype);

// The DP table's shape: r_tensor_sizes of (B, N, M).
std::vector<int64_t> table_sizes(const SoftDTWProblem& p, at::ScalarType dtype);

// A tensor of R values as the kernels read it; nullptr when empty (a table not kept).
template <typename T>
RValue<T>* r_data(const at::Tensor& values) {
  return values.numel() == 0 ? nullptr : reinterpret_cast<RValue<T>*>(values.data_ptr<T>());
}

ForwardOutputs new_forward_outputs(const SoftDTWProblem& p, const at::TensorOptions& options, bool keep_table);

// The memory preflight (common/memory.h) of `tables` DP tables (R; with a tangent, Ṙ too) for each
// of `pairs` pairs held at once, in table_sizes' layout: torch.OutOfMemoryError naming p.op and the
// remedies that fit it when the device cannot give them. new_forward_outputs checks the table it
// keeps; the CPU kernels that hold tables of their own (packs keeping all their diagonals, the
// second order's per-pair tables) check theirs.
void check_table_memory(const SoftDTWProblem& p, int64_t pairs, at::ScalarType dtype, const at::Device& device,
                        int64_t tables = 1);

// Raises when a pair was flagged (the message says `what` was wrong), else returns (values in
// the input dtype, R): the forward ops' results.
std::tuple<at::Tensor, at::Tensor> finish_forward(const char* op, const ForwardOutputs& out, at::ScalarType input_dtype,
                                                  const char* what);

// Validated inputs of a backward op: D, or x and y, validated as by the forward (they fix the
// problem) and converted to the compute dtype; R the forward's DP table of them (checked), or
// undefined when given empty (the forward kept none): the op body recomputes it with its own
// device's forward (with_table in bodies.h), not through the dispatcher; grad the upstream
// gradient (B,) in the compute dtype.
struct BackwardInputs {
  SoftDTWProblem problem;
  at::Tensor grad, R, D, x, y;
  ForwardInputs forward() const { return {problem, D, x, y}; }  // what recomputes R
};

// R of a forward run again for a backward whose forward kept none (`out`, of that device's forward
// on BackwardInputs::forward() with the table kept): invalid inputs raise as that forward raises
// them (fused: the sequences' message under kFusedOp; else D's under kFromCostOp).
at::Tensor recomputed_table(const ForwardOutputs& out, bool fused);

BackwardInputs prepare_from_cost_backward(const at::Tensor& grad, const at::Tensor& D, const at::Tensor& R,
                                          const ProblemArgs& args);

BackwardInputs prepare_fused_backward(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y,
                                      const at::Tensor& R, const ProblemArgs& args);

// The backward from the forward's unit gradients (_soft_dtw_fused_backward, kept="gradients"): x and y
// validated as by the forward, grad (B,) converted to the compute dtype; unit_x (B, N, d) and
// unit_y (B, M, d) float64 on x's device, checked; R stays undefined.
BackwardInputs prepare_fused_backward_from_unit_gradients(const at::Tensor& grad, const at::Tensor& x,
                                                          const at::Tensor& y, const at::Tensor& unit_x,
                                                          const at::Tensor& unit_y, const ProblemArgs& args);

// The checkpointed fused backward (kept="borders"): x and y validated as by the forward (they fix the problem),
// grad (B,) converted to the compute dtype; R stays undefined (it is recomputed).
BackwardInputs prepare_fused_checkpointed_backward(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y,
                                                   const ProblemArgs& args);

// Validated inputs of a forward-mode or second-order op (design doc §3): the forward's, the
// tangents of its primal inputs (Ḋ of D, or ẋ of x and ẏ of y) and, for the second order, the
// upstream gradient g and its tangent ġ (B,). A tangent must have its primal's shape and device and
// a floating dtype, g and ġ shape (B,) on the problem's device; each comes back contiguous in the
// compute dtype, and an absent one undefined (a zero tangent). Checked in that order, the same on
// every device.
struct TangentInputs : ForwardInputs {
  at::Tensor D_tangent, x_tangent, y_tangent, grad, grad_tangent;
};

TangentInputs prepare_from_cost_jvp(const at::Tensor& D, const OptTensor& D_tangent, const ProblemArgs& args);
TangentInputs prepare_fused_jvp(const at::Tensor& x, const at::Tensor& y, const OptTensor& x_tangent,
                                const OptTensor& y_tangent, const ProblemArgs& args);
TangentInputs prepare_from_cost_hvp(const at::Tensor& grad, const OptTensor& grad_tangent, const at::Tensor& D,
                                    const OptTensor& D_tangent, const ProblemArgs& args);
TangentInputs prepare_fused_hvp(const at::Tensor& grad, const OptTensor& grad_tangent, const at::Tensor& x,
                                const at::Tensor& y, const OptTensor& x_tangent, const OptTensor& y_tangent,
                                const ProblemArgs& args);

// weights (B,) of _soft_dtw_fused_value_and_grad for x (B, N, d): floating point, on x's device.
void check_pair_weights(const at::Tensor& x, const at::Tensor& weights);

// Precision the kernels compute in: float16/bfloat16 accumulate in float32.
at::ScalarType compute_dtype(at::ScalarType input_dtype);

constexpr const char* kInvalidCostMessage =
    "D contains NaN or -inf; only finite costs and +inf (a forbidden cell) are allowed";
constexpr const char* kInvalidSequenceMessage = "x and y must contain only finite values (found NaN or inf)";

}  // namespace softdtw_torch
