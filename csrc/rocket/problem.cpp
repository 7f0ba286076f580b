#include "../common/memory.h"
#include "problem.h"

#include <cmath>

#include "../common/checks.h"

namespace softdtw_torch {
namespace {

void check_kernel_field(const char* op, const char* name, const at::Tensor& t, at::ScalarType dtype) {
  TORCH_CHECK_VALUE(t.dim() == 1, op, ": expected ", name, " (kernels tuple) to be 1-D, got ", t.dim(), "-D");
  TORCH_CHECK_TYPE(t.scalar_type() == dtype, op, ": expected ", name, " (kernels tuple) of dtype ", dtype, ", got ",
                   t.scalar_type());
}

}  // namespace

RocketPlan plan_rocket_kernels(const char* op, const rocket::Kernels& k, int64_t n_channels, const at::Device& device) {
  check_kernel_field(op, "weights", k.weights, at::kFloat);
  check_kernel_field(op, "lengths", k.lengths, at::kInt);
  check_kernel_field(op, "biases", k.biases, at::kFloat);
  check_kernel_field(op, "dilations", k.dilations, at::kInt);
  check_kernel_field(op, "paddings", k.paddings, at::kInt);
  check_kernel_field(op, "num_channel_indices", k.num_channel_indices, at::kInt);
  check_kernel_field(op, "channel_indices", k.channel_indices, at::kInt);
  const int64_t K = k.lengths.size(0);
  TORCH_CHECK_VALUE(K > 0, op, ": expected at least one kernel, got an empty kernels tuple");
  for (const auto& [name, t] : {std::pair<const char*, const at::Tensor&>{"biases", k.biases},
                                {"dilations", k.dilations},
                                {"paddings", k.paddings},
                                {"num_channel_indices", k.num_channel_indices}}) {
    TORCH_CHECK_VALUE(t.size(0) == K, op, ": expected ", name, " of length ", K, " (one per kernel, like lengths), got ",
                      t.size(0));
  }
  // Value checks on host copies: the tuple is small (7 values per kernel plus weights).
  const at::Tensor lengths = k.lengths.cpu(), dilations = k.dilations.cpu(), paddings = k.paddings.cpu();
  const at::Tensor num_channels = k.num_channel_indices.cpu(), channels = k.channel_indices.cpu();
  TORCH_CHECK_VALUE(lengths.min().item<int32_t>() >= 1, op, ": expected kernel lengths >= 1, got ",
                    lengths.min().item<int32_t>());
  TORCH_CHECK_VALUE(dilations.min().item<int32_t>() >= 0, op, ": expected dilations >= 0, got ",
                    dilations.min().item<int32_t>());
  TORCH_CHECK_VALUE(paddings.min().item<int32_t>() >= 0, op, ": expected paddings >= 0, got ",
                    paddings.min().item<int32_t>());
  const int32_t min_m = num_channels.min().item<int32_t>(), max_m = num_channels.max().item<int32_t>();
  TORCH_CHECK_VALUE(min_m >= 1 && max_m <= n_channels, op, ": expected num_channel_indices in [1, ", n_channels,
                    "] (the series has ", n_channels, " channels), got values in [", min_m, ", ", max_m, "]");
  const at::Tensor m64 = num_channels.to(at::kLong), taps = m64 * lengths.to(at::kLong);
  const int64_t total_channels = m64.sum().item<int64_t>(), total_weights = taps.sum().item<int64_t>();
  TORCH_CHECK_VALUE(channels.size(0) == total_channels, op, ": expected channel_indices of length sum(num_channel_indices) = ",
                    total_channels, ", got ", channels.size(0));
  TORCH_CHECK_VALUE(k.weights.size(0) == total_weights, op,
                    ": expected weights of length sum(num_channel_indices * lengths) = ", total_weights, ", got ",
                    k.weights.size(0));
  TORCH_CHECK_VALUE(channels.min().item<int32_t>() >= 0 && channels.max().item<int32_t>() < n_channels, op,
                    ": expected channel_indices in [0, ", n_channels, ") (the series has ", n_channels,
                    " channels), got values in [", channels.min().item<int32_t>(), ", ", channels.max().item<int32_t>(), "]");
  TORCH_CHECK_VALUE(at::isfinite(k.weights).all().item<bool>() && at::isfinite(k.biases).all().item<bool>(), op,
                    ": expected finite weights and biases (found NaN or inf)");

  RocketPlan plan;
  plan.n_kernels = K;
  plan.max_kernel_channels = max_m;
  plan.max_taps = taps.max().item<int64_t>();
  auto on_device = [&](const at::Tensor& t) { return t.to(device).contiguous(); };
  plan.kernels = {on_device(k.weights),  on_device(k.lengths),          on_device(k.biases),
                  on_device(k.dilations), on_device(k.paddings), on_device(k.num_channel_indices),
                  on_device(k.channel_indices)};
  // Exclusive prefix sums: where kernel i's weights and channel indices start.
  plan.weight_offsets = on_device(at::cumsum(taps, 0) - taps);
  plan.channel_offsets = on_device(at::cumsum(m64, 0) - m64);
  return plan;
}

void check_rocket_series(const char* op, const at::Tensor& x) {
  TORCH_CHECK_VALUE(x.dim() == 3, op, ": expected x to be a 3-D tensor (n_cases, n_channels, n_timepoints), got ", x.dim(),
                    "-D");
  TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble, op,
                   ": expected x to be float32 or float64, got ", x.scalar_type());
  TORCH_CHECK_VALUE(x.size(0) > 0 && x.size(1) > 0 && x.size(2) > 0, op,
                    ": expected a non-empty x (n_cases, n_channels, n_timepoints all >= 1), got shape ", x.sizes());
  TORCH_CHECK_VALUE(at::isfinite(x).all().item<bool>(), op, ": expected x to contain only finite values (found NaN or inf: x has missing values or infinities)");
}

at::Tensor checked_rocket_lengths(const char* op, const std::optional<at::Tensor>& x_lengths, const at::Tensor& x) {
  return checked_lengths(op, "x_lengths", x_lengths, x.size(0), "case", 1, x.size(2), x.device());
}

RocketAccumulate parse_rocket_accumulate(const char* op, const std::string& accumulate) {
  if (accumulate == "float32_fma") return RocketAccumulate::Float32Fma;
  if (accumulate == "float64") return RocketAccumulate::Float64;
  if (accumulate == "float32") return RocketAccumulate::Float32;
  TORCH_CHECK_VALUE(false, op, ": accumulate must be \"float32_fma\", \"float64\" or \"float32\", got \"", accumulate,
                    "\"");
}

void check_ppv_temperature(const char* op, const std::optional<double>& ppv_temperature) {
  if (!ppv_temperature.has_value()) return;
  TORCH_CHECK_VALUE(std::isfinite(*ppv_temperature) && *ppv_temperature > 0, op,
                    ": ppv_temperature must be a positive finite number or None, got ", *ppv_temperature);
}

at::ScalarType rocket_compute_dtype(RocketAccumulate mode) {
  return mode == RocketAccumulate::Float64 ? at::kDouble : at::kFloat;
}

ConvolveInputs prepare_convolve(const at::Tensor& x, const rocket::Kernels& kernels, c10::string_view accumulate,
                                const std::optional<at::Tensor>& x_lengths,
                                const std::optional<double>& ppv_temperature) {
  const char* op = kRocketConvolveOp;
  check_rocket_series(op, x);
  ConvolveInputs in;
  in.mode = parse_rocket_accumulate(op, std::string(accumulate));
  check_ppv_temperature(op, ppv_temperature);
  in.plan = plan_rocket_kernels(op, kernels, x.size(1), x.device());
  // The features (2 float32 per kernel) and the argmax kept for the backward (an int64 per kernel)
  memory::check(op, c10::str("the features of ", x.size(0), " cases and ", in.plan.n_kernels, " kernels"),
                16.0 * x.size(0) * in.plan.n_kernels, x.device(), "transform fewer cases per call");
  in.lengths = checked_rocket_lengths(op, x_lengths, x);
  in.x = x.to(rocket_compute_dtype(in.mode)).contiguous();
  return in;
}

ConvolveBackward prepare_convolve_backward(const at::Tensor& grad, const at::Tensor& x, const rocket::Kernels& kernels,
                                           const at::Tensor& argmax, c10::string_view accumulate,
                                           const std::optional<at::Tensor>& x_lengths,
                                           std::optional<double> ppv_temperature) {
  ConvolveBackward b{prepare_convolve(x, kernels, accumulate, x_lengths, ppv_temperature), {}, {}, {}, {}, {}};
  const int64_t n_cases = b.in.x.size(0), K = b.in.plan.n_kernels;
  TORCH_CHECK_VALUE(grad.dim() == 2 && grad.size(0) == n_cases && grad.size(1) == 2 * K, kRocketConvolveOp,
                    ": expected grad of shape (", n_cases, ", ", 2 * K, "), got ", grad.sizes());
  TORCH_CHECK(argmax.dim() == 2 && argmax.size(0) == n_cases && argmax.size(1) == K &&
                  argmax.scalar_type() == at::kLong && argmax.device() == b.in.x.device(),
              kRocketConvolveOp, ": expected the forward's argmax of shape (", n_cases, ", ", K,
              "), dtype int64 on ", b.in.x.device());
  b.grad = grad.to(at::kFloat).contiguous();
  b.argmax = argmax.contiguous();
  const auto acc64 = x.options().dtype(at::kDouble);
  b.x_grad = at::zeros(x.sizes(), acc64);
  b.w_grad = at::zeros(kernels.weights.sizes(), acc64);
  b.b_grad = at::zeros(kernels.biases.sizes(), acc64);
  return b;
}

}  // namespace softdtw_torch
