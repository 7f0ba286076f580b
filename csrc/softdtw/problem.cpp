#include "problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "../common/checks.h"
#include "../common/memory.h"
#include "../common/table_memory.h"

#ifdef SOFTDTW_TORCH_WITH_CUDA
#include <c10/cuda/CUDAGraphsC10Utils.h>
#endif

namespace softdtw_torch {

namespace {

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

// ln of the number of warping paths through an n × m table, the Delannoy number
// D(n − 1, m − 1) = Σ_k C(n − 1, k)·C(m − 1, k)·2^k, summed in logs (O(min(n, m)); asked only
// when the quick bound (n + m − 2)·ln 3 is not small enough).
double log_path_count(int64_t n, int64_t m) {
  const double a = static_cast<double>(n - 1), b = static_cast<double>(m - 1);
  const auto log_term = [&](double k) {
    return std::lgamma(a + 1) - std::lgamma(k + 1) - std::lgamma(a - k + 1) + std::lgamma(b + 1) -
           std::lgamma(k + 1) - std::lgamma(b - k + 1) + k * std::log(2.0);
  };
  double largest = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k <= std::min(n, m) - 1; ++k) largest = std::max(largest, log_term(static_cast<double>(k)));
  double sum = 0;
  for (int64_t k = 0; k <= std::min(n, m) - 1; ++k) sum += std::exp(log_term(static_cast<double>(k)) - largest);
  return largest + std::log(sum);
}

// Refuses a problem whose DP could leave the compute dtype's range: a cell's R lies between the
// cheapest path sum to it and that minus γ·ln(paths) (a soft minimum falls at most that far below
// a minimum). With costs of magnitude at most `largest_cost`, path sums lie in ±cost_reach,
// cost_reach = (n + m − 1)·largest_cost, and every R, and every difference of two that the cell
// math and the backward take, is finite when cost_reach + γ·ln(paths) + cost_reach is. Beyond it a
// sum could overflow to ±inf, and +inf reads as "no admissible path", losing the sign: the call is
// refused rather than answered with the wrong infinity.
void check_dp_range(const char* op, const SoftDTWProblem& p, at::ScalarType dtype, double largest_cost) {
  const bool is_double = compute_dtype(dtype) == at::kDouble;
  const double cost_reach = static_cast<double>(p.n + p.m - 1) * largest_cost;  // may be inf: compared only
  const double largest = is_double ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max();
  const double soft_reach_bound = p.gamma * static_cast<double>(p.n + p.m - 2) * std::log(3.0);
  if (2 * cost_reach + soft_reach_bound <= largest) return;  // the quick bound (paths <= 3^(n+m−2))
  const double soft_reach = p.gamma * log_path_count(p.n, p.m);
  const double reach = 2 * cost_reach + soft_reach;
  if (reach <= largest) return;
  const char* name = is_double ? "float64" : "float32";
  TORCH_CHECK_VALUE(cost_reach > 0, op, ": gamma = ", p.gamma, " is too large for sequences of lengths ", p.n,
                    " and ", p.m, " in ", name, ": a soft minimum over their warping paths falls up to gamma·ln(paths) = ",
                    soft_reach, " below the cheapest one, beyond ", name, "'s largest value ", largest,
                    is_double ? "; use a smaller gamma" : "; compute in float64 or use a smaller gamma");
  TORCH_CHECK_VALUE(false, op, ": D's finite costs reach ", largest_cost,
                    " in magnitude; summed along a warping path of up to n + m - 1 = ", p.n + p.m - 1,
                    " cells, the DP's values and the differences the kernels take of them could reach ", reach,
                    ", beyond ", name, "'s largest value ", largest,
                    " (a sum that overflows turns into an infinity of the wrong sign); ",
                    is_double ? "scale D down" : "pass D as float64 (D.double()) or scale it down");
}

// The largest magnitude of D's finite costs (+inf is a forbidden cell, NaN and −inf are refused by
// the kernels, which flag them). One reduction pass over D; when D holds +inf, a second over
// slices of it (bounded scratch) for the largest finite cost.
double largest_finite_cost(const at::Tensor& D) {
  const auto [lowest_t, highest_t] = at::aminmax(D);
  const at::Tensor extremes = at::stack({lowest_t, highest_t}).to(at::kCPU, at::kDouble);  // one host sync
  const double lowest = extremes[0].item<double>(), highest = extremes[1].item<double>();
  if (!(lowest > -std::numeric_limits<double>::infinity())) return 0;  // NaN or −inf: the kernel refuses D
  if (lowest == std::numeric_limits<double>::infinity()) return 0;     // every cell forbidden
  double finite_highest = highest;
  if (highest == std::numeric_limits<double>::infinity()) {
    const at::Tensor flat = D.reshape(-1);
    constexpr int64_t kSlice = int64_t{1} << 22;
    finite_highest = lowest;
    for (int64_t first = 0; first < flat.numel(); first += kSlice) {
      const at::Tensor slice = flat.slice(0, first, std::min(flat.numel(), first + kSlice));
      const at::Tensor finite = at::where(at::isinf(slice), lowest_t, slice);
      finite_highest = std::max(finite_highest, finite.max().item<double>());
    }
  }
  return std::max(std::abs(lowest), std::abs(finite_highest));
}

// The shared part of every op's validation: options and lengths of a (batch, n, m) problem.
SoftDTWProblem make_problem(const char* op, int64_t batch, int64_t n, int64_t m, const ProblemArgs& args,
                            const at::Device& device, at::ScalarType dtype) {
  check_gamma(op, args.gamma, dtype);
  SoftDTWProblem p;
  p.op = op;
  p.batch = batch;
  p.n = n;
  p.m = m;
  p.gamma = args.gamma;
  p.window = checked_window(op, args.bandwidth, args.itakura_max_slope);
  // A radius of max(n, m) already admits every cell; a larger one (up to 2**63 − 1) would
  // overflow the band's int64 bounds (i + (m − n) + radius), so it is that radius.
  p.window.radius = std::min(p.window.radius, std::max(n, m));
  // No host read of the values while a CUDA graph is captured (the kernels clamp lengths into range).
  const bool read_values = !capturing_cuda_graph(device);
  p.x_lengths = checked_lengths(op, "x_lengths", args.x_lengths, batch, "pair", 1, n, device, read_values);
  p.y_lengths = checked_lengths(op, "y_lengths", args.y_lengths, batch, "pair", 1, m, device, read_values);
  check_dp_range(op, p, dtype, /*largest_cost=*/0.0);
  return p;
}

}  // namespace

void check_gamma(const char* op, double gamma, at::ScalarType dtype) {
  TORCH_CHECK_VALUE(std::isfinite(gamma) && gamma >= 0, op,
                    ": gamma must be 0 (hard DTW) or a positive finite number, got ", gamma);
  if (gamma == 0) return;
  const bool is_double = dtype == at::kDouble;
  const double smallest = is_double ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  TORCH_CHECK_VALUE(gamma >= smallest && gamma <= 1.0 / smallest, op, ": gamma must be in [", smallest, ", ",
                    1.0 / smallest, "] or 0 for ", dtype, " input (gamma and 1/gamma normal ",
                    is_double ? "float64" : "float32", " numbers), got ", gamma);
}

Window checked_window(const char* op, std::optional<int64_t> bandwidth, std::optional<double> itakura_max_slope) {
  Window w;
  if (bandwidth.has_value()) {
    TORCH_CHECK_VALUE(*bandwidth >= 0, op, ": bandwidth must be >= 0 or None, got ", *bandwidth);
    w.radius = *bandwidth;
  }
  if (itakura_max_slope.has_value()) {
    // Slopes below 1 would make the parallelogram's two slopes (s and 1/s) swap sides.
    TORCH_CHECK_VALUE(std::isfinite(*itakura_max_slope) && *itakura_max_slope >= 1, op,
                      ": itakura_max_slope must be a finite number >= 1 or None, got ", *itakura_max_slope);
    w.itakura_slope = *itakura_max_slope;
  }
  return w;
}

std::pair<at::Tensor, at::Tensor> checked_itakura_lengths(const at::Tensor& n, const at::Tensor& m, int64_t columns,
                                                          double max_slope) {
  const char* op = "itakura_mask";
  checked_window(op, std::nullopt, max_slope);
  TORCH_CHECK_VALUE(columns >= 0, op, ": expected columns >= 0, got ", columns);
  for (const at::Tensor* t : {&n, &m}) {
    TORCH_CHECK_TYPE(at::isIntegralType(t->scalar_type(), /*includeBool=*/false), op,
                     ": expected integer lengths, got ", t->scalar_type());
  }
  TORCH_CHECK_VALUE(n.dim() == 1 && m.sizes() == n.sizes() && n.device() == m.device(), op,
                    ": expected lengths n and m of one shape (B,) on one device, got ", n.sizes(), " on ", n.device(),
                    " and ", m.sizes(), " on ", m.device());
  const at::Tensor n64 = n.to(at::kLong).contiguous(), m64 = m.to(at::kLong).contiguous();
  if (n.numel() > 0) {
    TORCH_CHECK_VALUE(
        n64.min().item<int64_t>() >= 1 && m64.min().item<int64_t>() >= 1 && m64.max().item<int64_t>() <= columns, op,
        ": expected lengths n >= 1 and 1 <= m <= ", columns, ", got n in [", n64.min().item<int64_t>(), ", ",
        n64.max().item<int64_t>(), "] and m in [", m64.min().item<int64_t>(), ", ", m64.max().item<int64_t>(), "]");
  }
  return {n64, m64};
}

at::ScalarType compute_dtype(at::ScalarType input_dtype) {
  return input_dtype == at::kDouble ? at::kDouble : at::kFloat;
}

ForwardInputs prepare_from_cost(const at::Tensor& D, const ProblemArgs& args) {
  const char* op = kFromCostOp;
  TORCH_CHECK_VALUE(D.dim() == 3, op, ": expected D to be a 3-D tensor (batch, n, m), got ", D.dim(), "-D");
  check_float_tensor(op, "D", D);
  TORCH_CHECK_VALUE(D.size(1) > 0 && D.size(2) > 0, op, ": expected non-empty sequences, got D of shape ", D.sizes());
  ForwardInputs in;
  in.problem = make_problem(op, D.size(0), D.size(1), D.size(2), args, D.device(), D.scalar_type());
  in.D = D.to(compute_dtype(D.scalar_type())).contiguous();
  // Negative costs can take a path sum below the dtype's range (and positive ones above it, then
  // back): checked on D's values, except while a CUDA graph is captured (no host reads then).
  if (in.D.numel() > 0 && !capturing_cuda_graph(D.device())) {
    check_dp_range(op, in.problem, D.scalar_type(), largest_finite_cost(in.D));
  }
  return in;
}

void check_sequence_pair(const char* op, const at::Tensor& x, const at::Tensor& y, const char* x_name,
                         const char* y_name) {
  TORCH_CHECK_VALUE(x.dim() == 3, op, ": expected ", x_name, " to be a 3-D tensor (batch, n, features), got ", x.dim(), "-D");
  TORCH_CHECK_VALUE(y.dim() == 3, op, ": expected ", y_name, " to be a 3-D tensor (batch, m, features), got ", y.dim(), "-D");
  TORCH_CHECK_VALUE(x.device() == y.device(), op, ": expected ", x_name, " and ", y_name, " on the same device, got ",
                    x.device(), " and ", y.device());
  check_float_tensor(op, x_name, x);
  check_float_tensor(op, y_name, y);
  TORCH_CHECK_TYPE(x.scalar_type() == y.scalar_type(), op, ": expected ", x_name, " and ", y_name,
                   " to have the same dtype, got ", x.scalar_type(), " and ", y.scalar_type());
  // Symbolic sizes (SymInt): under torch.export and torch.compile the composite ops run on tensors
  // whose sizes are symbols, and comparing plain sizes would fix them (a dynamic batch refused).
  // expect_true keeps the check as a runtime assertion of the traced program instead.
  const auto same = [](const c10::SymInt& a, const c10::SymInt& b) { return a.sym_eq(b).expect_true(__FILE__, __LINE__); };
  const auto positive = [](const c10::SymInt& a) { return a.sym_gt(0).expect_true(__FILE__, __LINE__); };
  TORCH_CHECK_VALUE(same(x.sym_size(0), y.sym_size(0)), op, ": expected ", x_name, " and ", y_name,
                    " to have the same batch size, got ", x.sym_size(0), " and ", y.sym_size(0));
  TORCH_CHECK_VALUE(same(x.sym_size(2), y.sym_size(2)), op, ": expected ", x_name, " and ", y_name,
                    " to have the same number of features, got ", x.sym_size(2), " and ", y.sym_size(2));
  TORCH_CHECK_VALUE(positive(x.sym_size(1)) && positive(y.sym_size(1)) && positive(x.sym_size(2)), op,
                    ": expected non-empty sequences and features, got ", x_name, " of shape ", x.sym_sizes(), " and ",
                    y_name, " of shape ", y.sym_sizes());
}

ForwardInputs prepare_fused(const at::Tensor& x, const at::Tensor& y, const ProblemArgs& args, const char* op) {
  check_sequence_pair(op, x, y);
  ForwardInputs in;
  in.problem = make_problem(op, x.size(0), x.size(1), y.size(1), args, x.device(), x.scalar_type());
  const auto dtype = compute_dtype(x.scalar_type());
  in.x = x.to(dtype).contiguous();
  in.y = y.to(dtype).contiguous();
  return in;
}

// The remedies a refused DP table names: what keeps no (B, N, M) table for that op on that device.
static std::string table_remedies(const char* op, const at::Device& device) {
  if (std::string(op) == kDtwPathOp) {  // it traces its paths back through the whole table
    return "pass fewer or shorter pairs per call (dtw_path keeps the whole table; a band does not shrink it)";
  }
  return c10::str("call it under torch.no_grad() (then no table is kept)",
                  device.is_cuda() ? ", pass checkpoint=True (the CUDA backward recomputes from tile borders)" : "",
                  ", or split the batch into smaller calls (a band does not shrink the table)");
}

PathOutputs new_path_outputs(const SoftDTWProblem& p, const at::Device& device) {
  const std::vector<int64_t> sizes = {p.batch, p.n + p.m - 1, 2};
  memory::check(p.op, "the paths", memory::bytes_of(sizes, at::kLong), device, "split the batch into smaller calls");
  const auto options = at::TensorOptions().dtype(at::kLong).device(device);
  return {at::full(sizes, -1, options), at::zeros({p.batch}, options)};
}

std::vector<int64_t> r_tensor_sizes(std::vector<int64_t> cells, at::ScalarType dtype) {
  if (dtype == at::kFloat) cells.push_back(2);
  return cells;
}

std::vector<int64_t> table_sizes(const SoftDTWProblem& p, at::ScalarType dtype) {
  return r_tensor_sizes({p.batch, p.n, p.m}, dtype);
}

void check_table_memory(const SoftDTWProblem& p, int64_t pairs, at::ScalarType dtype, const at::Device& device,
                        int64_t tables) {
  std::vector<int64_t> sizes = table_sizes(p, dtype);
  sizes[0] = pairs;
  memory::check(p.op,
                c10::str(tables == 1 ? "the DP table of " : "the DP tables (R and its tangent) of ", pairs,
                         " pairs of ", p.n, " x ", p.m, " cells"),
                static_cast<double>(tables) * memory::bytes_of(sizes, dtype), device, table_remedies(p.op, device));
}

ForwardOutputs new_forward_outputs(const SoftDTWProblem& p, const at::TensorOptions& options, bool keep_table) {
  ForwardOutputs out;
  out.values = at::empty({p.batch}, options);
  if (!keep_table) {
    out.R = at::empty({0}, options);
  } else {
    const at::ScalarType dtype = options.dtype().toScalarType();
    check_table_memory(p, p.batch, dtype, options.device());
    out.R = table_memory::empty(table_sizes(p, dtype), options);
    if (p.ragged()) {  // padding: R = +inf (hi = +inf, lo = 0)
      out.R.fill_(0);
      (out.R.dim() == 4 ? out.R.select(3, 0) : out.R).fill_(INFINITY);
    }
  }
  out.invalid = at::zeros({p.batch}, options.dtype(at::kBool));
  return out;
}

std::tuple<at::Tensor, at::Tensor> finish_forward(const char* op, const ForwardOutputs& out, at::ScalarType input_dtype,
                                                  const char* what) {
  // Reading the flags is a host sync on CUDA: skipped while a CUDA graph is captured.
  if (out.invalid.numel() > 0 && !capturing_cuda_graph(out.invalid.device())) {
    TORCH_CHECK_VALUE(!out.invalid.any().item<bool>(), op, ": ", what);
  }
  return {out.values.to(input_dtype), out.R};
}

namespace {

void check_grad(const char* op, const at::Tensor& grad, int64_t batch, const at::Device& device) {
  TORCH_CHECK_VALUE(grad.dim() == 1 && grad.size(0) == batch, op, ": expected grad of shape (", batch, ",), got ",
                    grad.sizes());
  TORCH_CHECK_VALUE(grad.device() == device, op, ": expected grad on ", device, ", got ", grad.device());
}

// The DP table a backward reads: R as the forward returned it, checked against the problem, or
// undefined when R is empty (a forward run with keep_table=False: the op body recomputes it).
at::Tensor checked_table(const char* op, const at::Tensor& R, const SoftDTWProblem& p,
                         const at::TensorOptions& options) {
  if (R.numel() == 0) return at::Tensor();
  const std::vector<int64_t> sizes = table_sizes(p, options.dtype().toScalarType());
  std::string shape = "(";
  for (size_t k = 0; k < sizes.size(); ++k) shape += (k ? ", " : "") + std::to_string(sizes[k]);
  TORCH_CHECK(R.sizes() == at::IntArrayRef(sizes) && R.scalar_type() == options.dtype().toScalarType() &&
                  R.device() == options.device(),
              op, ": expected R, the forward's DP table, of shape ", shape, "), dtype ",
              options.dtype(), " on ", options.device(), ", or an empty tensor (then recomputed), got shape ",
              R.sizes(), ", dtype ", R.scalar_type(), " on ", R.device());
  return R.contiguous();
}

}  // namespace

at::Tensor recomputed_table(const ForwardOutputs& out, bool fused) {
  const at::ScalarType dtype = out.values.scalar_type();  // the values are not returned: no cast
  return std::get<1>(fused ? finish_forward(kFusedOp, out, dtype, kInvalidSequenceMessage)
                           : finish_forward(kFromCostOp, out, dtype, kInvalidCostMessage));
}

BackwardInputs prepare_from_cost_backward(const at::Tensor& grad, const at::Tensor& D, const at::Tensor& R,
                                          const ProblemArgs& args) {
  const ForwardInputs fwd = prepare_from_cost(D, args);
  check_grad(kFromCostOp, grad, fwd.problem.batch, D.device());
  BackwardInputs in;
  in.problem = fwd.problem;
  in.R = checked_table(kFromCostOp, R, fwd.problem, fwd.D.options());
  in.D = fwd.D;
  in.grad = grad.to(fwd.D.scalar_type()).contiguous();
  return in;
}

BackwardInputs prepare_fused_backward(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y,
                                      const at::Tensor& R, const ProblemArgs& args) {
  const ForwardInputs fwd = prepare_fused(x, y, args);
  check_grad(kFusedOp, grad, fwd.problem.batch, x.device());
  BackwardInputs in;
  in.problem = fwd.problem;
  in.R = checked_table(kFusedOp, R, fwd.problem, fwd.x.options());
  in.grad = grad.to(fwd.x.scalar_type()).contiguous();
  in.x = fwd.x;
  in.y = fwd.y;
  return in;
}

BackwardInputs prepare_fused_checkpointed_backward(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y,
                                                   const ProblemArgs& args) {
  const ForwardInputs fwd = prepare_fused(x, y, args);
  check_grad(kFusedOp, grad, fwd.problem.batch, x.device());
  BackwardInputs in;
  in.problem = fwd.problem;
  in.x = fwd.x;
  in.y = fwd.y;
  in.grad = grad.to(fwd.x.scalar_type()).contiguous();
  return in;
}

BackwardInputs prepare_fused_backward_from_unit_gradients(const at::Tensor& grad, const at::Tensor& x,
                                                          const at::Tensor& y, const at::Tensor& unit_x,
                                                          const at::Tensor& unit_y, const ProblemArgs& args) {
  // x, y and grad as for the checkpointed backward (no R either)
  BackwardInputs in = prepare_fused_checkpointed_backward(grad, x, y, args);
  auto check_unit = [&](const char* name, const at::Tensor& unit, const at::Tensor& like) {
    TORCH_CHECK_VALUE(unit.sizes() == like.sizes(), kFusedOp, ": expected ", name, " of shape ", like.sizes(),
                      ", got ", unit.sizes());
    TORCH_CHECK_TYPE(unit.scalar_type() == at::kDouble, kFusedOp, ": expected ", name, " of dtype float64, got ",
                     unit.scalar_type());
    TORCH_CHECK_VALUE(unit.device() == x.device(), kFusedOp, ": expected ", name, " on ", x.device(), ", got ",
                      unit.device());
  };
  check_unit("first (the unit gradients of x)", unit_x, x);
  check_unit("second (the unit gradients of y)", unit_y, y);
  return in;
}

namespace {

// A tangent of a primal input: undefined stays undefined (a zero tangent); otherwise it must have
// the primal's shape and device and a floating dtype, and comes back contiguous in `primal`'s
// (compute) dtype.
at::Tensor prepare_tangent(const char* op, const char* name, const std::optional<at::Tensor>& tangent,
                           const char* primal_name, const at::Tensor& primal) {
  if (!tangent.has_value() || !tangent->defined()) return at::Tensor();
  const at::Tensor& t = *tangent;
  check_float_tensor(op, name, t);
  TORCH_CHECK_VALUE(t.sizes() == primal.sizes(), op, ": expected ", name, " of the shape of ", primal_name, " ",
                    primal.sizes(), ", got ", t.sizes());
  TORCH_CHECK_VALUE(t.device() == primal.device(), op, ": expected ", name, " on ", primal.device(), ", got ", t.device());
  return t.to(primal.scalar_type()).contiguous();
}

// One number per pair (an upstream gradient grad, or its tangent): a (B,) floating tensor on the
// problem's device, returned contiguous in `like`'s dtype; undefined stays undefined.
at::Tensor prepare_pair_scalars(const char* op, const char* name, const std::optional<at::Tensor>& values,
                                int64_t batch, const at::Tensor& like) {
  if (!values.has_value() || !values->defined()) return at::Tensor();
  const at::Tensor& v = *values;
  check_float_tensor(op, name, v);
  TORCH_CHECK_VALUE(v.dim() == 1 && v.size(0) == batch, op, ": expected ", name, " of shape (", batch, ",), got ",
                    v.sizes());
  TORCH_CHECK_VALUE(v.device() == like.device(), op, ": expected ", name, " on ", like.device(), ", got ", v.device());
  return v.to(like.scalar_type()).contiguous();
}

}  // namespace

TangentInputs prepare_from_cost_jvp(const at::Tensor& D, const OptTensor& D_tangent, const ProblemArgs& args) {
  TangentInputs in;
  static_cast<ForwardInputs&>(in) = prepare_from_cost(D, args);
  in.D_tangent = prepare_tangent(kFromCostOp, "D_tangent", D_tangent, "D", in.D);
  return in;
}

TangentInputs prepare_fused_jvp(const at::Tensor& x, const at::Tensor& y, const OptTensor& x_tangent,
                                const OptTensor& y_tangent, const ProblemArgs& args) {
  TangentInputs in;
  static_cast<ForwardInputs&>(in) = prepare_fused(x, y, args);
  in.x_tangent = prepare_tangent(kFusedOp, "x_tangent", x_tangent, "x", in.x);
  in.y_tangent = prepare_tangent(kFusedOp, "y_tangent", y_tangent, "y", in.y);
  return in;
}

namespace {

// A second-order op's inputs: its forward mode's, then g and ġ in `like`'s (the compute) dtype.
void add_upstream_gradients(TangentInputs& in, const char* op, const at::Tensor& grad, const OptTensor& grad_tangent,
                            const at::Tensor& like) {
  in.grad = prepare_pair_scalars(op, "grad", grad, in.problem.batch, like);
  in.grad_tangent = prepare_pair_scalars(op, "grad_tangent", grad_tangent, in.problem.batch, like);
}

}  // namespace

TangentInputs prepare_from_cost_hvp(const at::Tensor& grad, const OptTensor& grad_tangent, const at::Tensor& D,
                                    const OptTensor& D_tangent, const ProblemArgs& args) {
  TangentInputs in = prepare_from_cost_jvp(D, D_tangent, args);
  add_upstream_gradients(in, kFromCostOp, grad, grad_tangent, in.D);
  return in;
}

TangentInputs prepare_fused_hvp(const at::Tensor& grad, const OptTensor& grad_tangent, const at::Tensor& x,
                                const at::Tensor& y, const OptTensor& x_tangent, const OptTensor& y_tangent,
                                const ProblemArgs& args) {
  TangentInputs in = prepare_fused_jvp(x, y, x_tangent, y_tangent, args);
  add_upstream_gradients(in, kFusedOp, grad, grad_tangent, in.x);
  return in;
}

void check_pair_weights(const at::Tensor& x, const at::Tensor& weights) {
  TORCH_CHECK_VALUE(weights.dim() == 1 && weights.size(0) == x.size(0), kFusedOp, ": expected weights of shape (",
                    x.size(0), ",), got ", weights.sizes());
  TORCH_CHECK_TYPE(weights.is_floating_point(), kFusedOp, ": expected floating-point weights, got ",
                   weights.scalar_type());
  TORCH_CHECK_VALUE(weights.device() == x.device(), kFusedOp, ": expected weights on ", x.device(), ", got ",
                    weights.device());
}

}  // namespace softdtw_torch
