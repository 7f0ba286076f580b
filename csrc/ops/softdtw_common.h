// Host-side code shared by the CPU and CUDA SoftDTW kernels: input validation (one message per
// mistake, the same on every device; the fake kernels in softdtw_torch/_ops.py repeat the
// shape-level ones word for word) and the preparation of validated inputs and outputs.
#pragma once

#include <ATen/ATen.h>

#include <optional>

namespace softdtw_torch {

// Op names used in every message: the public names users call.
constexpr const char* kFromCostOp = "soft_dtw_from_cost";
constexpr const char* kFusedOp = "soft_dtw";

// Validated inputs of one op call, converted to what the kernels read.
struct SoftDTWProblem {
  int64_t batch = 0, n = 0, m = 0;  // padded lengths
  double gamma = 1.0;
  int64_t band_radius = -1;         // -1: no band
  at::Tensor x_lengths, y_lengths;  // int64 on the kernel's device, or undefined (all pairs n × m)
  bool ragged() const { return x_lengths.defined() || y_lengths.defined(); }
};

// x (B, N, d) and y (B, M, d): same batch, features, device and dtype; N, M, d >= 1.
void check_sequence_pair(const char* op, const at::Tensor& x, const at::Tensor& y);

// D (B, N, M) → problem; `D_out` receives D contiguous in the compute dtype.
SoftDTWProblem prepare_from_cost(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                                 const std::optional<at::Tensor>& x_lengths,
                                 const std::optional<at::Tensor>& y_lengths, at::Tensor* D_out);

// x (B, N, d), y (B, M, d) → problem; x_out / y_out receive contiguous compute-dtype copies.
SoftDTWProblem prepare_fused(const at::Tensor& x, const at::Tensor& y, double gamma,
                             std::optional<int64_t> bandwidth, const std::optional<at::Tensor>& x_lengths,
                             const std::optional<at::Tensor>& y_lengths, at::Tensor* x_out, at::Tensor* y_out);

// The forward's DP table: (B, N, M) when kept (+inf-filled when ragged, so padding is defined),
// else an empty tensor: the no-grad path keeps O(B·(N+M)) extra memory only.
at::Tensor new_dp_table(const SoftDTWProblem& p, const at::TensorOptions& options, bool keep_table);

// Backward inputs: the saved table R (B, N, M) fixes the problem's shape; `grad_out` receives the
// upstream gradient (B,) in R's dtype.
SoftDTWProblem prepare_backward(const char* op, const at::Tensor& grad, const at::Tensor& R, double gamma,
                                std::optional<int64_t> bandwidth, const std::optional<at::Tensor>& x_lengths,
                                const std::optional<at::Tensor>& y_lengths, at::Tensor* grad_out);

// The fused backward's x and y must match the table R of the problem.
void check_fused_backward_inputs(const SoftDTWProblem& p, const at::Tensor& x, const at::Tensor& y);

// Raises when any pair's kernel flagged invalid input values; `what` describes them.
void check_no_invalid_values(const char* op, const at::Tensor& invalid_flags, const char* what);

// Precision the kernels compute in: float16/bfloat16 accumulate in float32.
at::ScalarType compute_dtype(at::ScalarType input_dtype);

constexpr const char* kInvalidCostMessage =
    "D contains NaN or -inf; only finite costs and +inf (a forbidden cell) are allowed";
constexpr const char* kInvalidSequenceMessage = "x and y must contain only finite values (found NaN or inf)";

}  // namespace softdtw_torch
