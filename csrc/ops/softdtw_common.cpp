#include "softdtw_common.h"

#include <cmath>

#ifdef SOFTDTW_TORCH_WITH_CUDA
#include <c10/cuda/CUDAGraphsC10Utils.h>
#endif

namespace softdtw_torch {

namespace {

bool is_supported_float(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

void check_float_tensor(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK(is_supported_float(t.scalar_type()), op, ": expected ", name,
              " to be a floating-point tensor (float16, bfloat16, float32 or float64), got ", t.scalar_type());
}

// True while the current CUDA stream is being captured into a graph: no host syncs then.
bool capturing_cuda_graph(const at::Device& device) {
#ifdef SOFTDTW_TORCH_WITH_CUDA
  if (device.is_cuda()) {
    return c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None;
  }
#endif
  (void)device;
  return false;
}

void check_gamma(const char* op, double gamma) {
  TORCH_CHECK_VALUE(std::isfinite(gamma) && gamma > 0, op, ": gamma must be a positive finite number, got ", gamma);
}

int64_t checked_band_radius(const char* op, std::optional<int64_t> bandwidth) {
  if (!bandwidth.has_value()) return -1;
  TORCH_CHECK_VALUE(*bandwidth >= 0, op, ": bandwidth must be >= 0 or None, got ", *bandwidth);
  return *bandwidth;
}

// Optional per-pair lengths: a 1-D integer tensor of `batch` values in [1, max_len], returned as
// int64 on `device`. The value range check reads the values on the host; it is skipped while a
// CUDA graph is captured (the kernels clamp lengths to [1, max_len] so they stay memory-safe).
at::Tensor checked_lengths(const char* op, const char* name, const std::optional<at::Tensor>& lengths,
                           int64_t batch, int64_t max_len, const at::Device& device) {
  if (!lengths.has_value() || !lengths->defined()) return at::Tensor();
  const at::Tensor& l = *lengths;
  TORCH_CHECK(at::isIntegralType(l.scalar_type(), /*includeBool=*/false), op, ": expected ", name,
              " to be an integer tensor, got ", l.scalar_type());
  TORCH_CHECK(l.dim() == 1 && l.size(0) == batch, op, ": expected ", name, " of shape (", batch,
              ",) (one length per pair), got shape ", l.sizes());
  TORCH_CHECK(l.device() == device || l.device().is_cpu(), op, ": expected ", name, " on ", device,
              " or the CPU, got ", l.device());
  at::Tensor out = l.to(device, at::kLong).contiguous();
  if (batch > 0 && !capturing_cuda_graph(device)) {
    const int64_t lo = out.min().item<int64_t>();
    const int64_t hi = out.max().item<int64_t>();
    TORCH_CHECK_VALUE(lo >= 1 && hi <= max_len, op, ": expected ", name, " values in [1, ", max_len, "], got min ",
                      lo, " and max ", hi);
  }
  return out;
}

}  // namespace

at::ScalarType compute_dtype(at::ScalarType input_dtype) {
  return input_dtype == at::kDouble ? at::kDouble : at::kFloat;
}

SoftDTWProblem prepare_from_cost(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                                 const std::optional<at::Tensor>& x_lengths,
                                 const std::optional<at::Tensor>& y_lengths, at::Tensor* D_out) {
  const char* op = kFromCostOp;
  TORCH_CHECK(D.dim() == 3, op, ": expected D to be a 3-D tensor (batch, n, m), got ", D.dim(), "-D");
  check_float_tensor(op, "D", D);
  TORCH_CHECK(D.size(1) > 0 && D.size(2) > 0, op, ": expected non-empty sequences, got D of shape ", D.sizes());
  check_gamma(op, gamma);
  SoftDTWProblem p;
  p.batch = D.size(0);
  p.n = D.size(1);
  p.m = D.size(2);
  p.gamma = gamma;
  p.band_radius = checked_band_radius(op, bandwidth);
  p.x_lengths = checked_lengths(op, "x_lengths", x_lengths, p.batch, p.n, D.device());
  p.y_lengths = checked_lengths(op, "y_lengths", y_lengths, p.batch, p.m, D.device());
  *D_out = D.to(compute_dtype(D.scalar_type())).contiguous();
  return p;
}

void check_sequence_pair(const char* op, const at::Tensor& x, const at::Tensor& y) {
  TORCH_CHECK(x.dim() == 3, op, ": expected x to be a 3-D tensor (batch, n, features), got ", x.dim(), "-D");
  TORCH_CHECK(y.dim() == 3, op, ": expected y to be a 3-D tensor (batch, m, features), got ", y.dim(), "-D");
  TORCH_CHECK(x.device() == y.device(), op, ": expected x and y on the same device, got ", x.device(), " and ",
              y.device());
  check_float_tensor(op, "x", x);
  check_float_tensor(op, "y", y);
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), op, ": expected x and y to have the same dtype, got ",
              x.scalar_type(), " and ", y.scalar_type());
  TORCH_CHECK(x.size(0) == y.size(0), op, ": expected x and y to have the same batch size, got ", x.size(0), " and ",
              y.size(0));
  TORCH_CHECK(x.size(2) == y.size(2), op, ": expected x and y to have the same number of features, got ", x.size(2),
              " and ", y.size(2));
  TORCH_CHECK(x.size(1) > 0 && y.size(1) > 0 && x.size(2) > 0, op,
              ": expected non-empty sequences and features, got x of shape ", x.sizes(), " and y of shape ",
              y.sizes());
}

SoftDTWProblem prepare_fused(const at::Tensor& x, const at::Tensor& y, double gamma,
                             std::optional<int64_t> bandwidth, const std::optional<at::Tensor>& x_lengths,
                             const std::optional<at::Tensor>& y_lengths, at::Tensor* x_out, at::Tensor* y_out) {
  const char* op = kFusedOp;
  check_sequence_pair(op, x, y);
  check_gamma(op, gamma);
  SoftDTWProblem p;
  p.batch = x.size(0);
  p.n = x.size(1);
  p.m = y.size(1);
  p.gamma = gamma;
  p.band_radius = checked_band_radius(op, bandwidth);
  p.x_lengths = checked_lengths(op, "x_lengths", x_lengths, p.batch, p.n, x.device());
  p.y_lengths = checked_lengths(op, "y_lengths", y_lengths, p.batch, p.m, x.device());
  const auto dtype = compute_dtype(x.scalar_type());
  *x_out = x.to(dtype).contiguous();
  *y_out = y.to(dtype).contiguous();
  return p;
}

at::Tensor new_dp_table(const SoftDTWProblem& p, const at::TensorOptions& options, bool keep_table) {
  if (!keep_table) return at::empty({0}, options);
  if (p.ragged()) return at::full({p.batch, p.n, p.m}, INFINITY, options);
  return at::empty({p.batch, p.n, p.m}, options);
}

SoftDTWProblem prepare_backward(const char* op, const at::Tensor& grad, const at::Tensor& R, double gamma,
                                std::optional<int64_t> bandwidth, const std::optional<at::Tensor>& x_lengths,
                                const std::optional<at::Tensor>& y_lengths, at::Tensor* grad_out) {
  TORCH_CHECK(R.dim() == 3 && R.size(1) > 0 && R.size(2) > 0, op, ": expected the forward's DP table R (batch, n, m), got shape ",
              R.sizes(), " (was the forward run with keep_table=False?)");
  TORCH_CHECK(grad.dim() == 1 && grad.size(0) == R.size(0), op, ": expected grad of shape (", R.size(0),
              ",), got ", grad.sizes());
  TORCH_CHECK(grad.device() == R.device(), op, ": expected grad on ", R.device(), ", got ", grad.device());
  check_gamma(op, gamma);
  SoftDTWProblem p;
  p.batch = R.size(0);
  p.n = R.size(1);
  p.m = R.size(2);
  p.gamma = gamma;
  p.band_radius = checked_band_radius(op, bandwidth);
  p.x_lengths = checked_lengths(op, "x_lengths", x_lengths, p.batch, p.n, R.device());
  p.y_lengths = checked_lengths(op, "y_lengths", y_lengths, p.batch, p.m, R.device());
  *grad_out = grad.to(R.scalar_type()).contiguous();
  return p;
}

void check_fused_backward_inputs(const SoftDTWProblem& p, const at::Tensor& x, const at::Tensor& y) {
  TORCH_CHECK(x.dim() == 3 && y.dim() == 3 && x.size(0) == p.batch && x.size(1) == p.n && y.size(0) == p.batch &&
                  y.size(1) == p.m && x.size(2) == y.size(2),
              kFusedOp, ": expected x (", p.batch, ", ", p.n, ", d) and y (", p.batch, ", ", p.m,
              ", d) matching the DP table, got ", x.sizes(), " and ", y.sizes());
}

void check_no_invalid_values(const char* op, const at::Tensor& invalid_flags, const char* what) {
  if (invalid_flags.numel() == 0 || capturing_cuda_graph(invalid_flags.device())) return;
  TORCH_CHECK_VALUE(!invalid_flags.any().item<bool>(), op, ": ", what);
}

}  // namespace softdtw_torch
