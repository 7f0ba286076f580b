// MiniRocket: validation of the ops' inputs, shared by the CPU and CUDA kernels of MiniRocket and
// MultiRocket.
#include "../memory.h"
#include "problem.h"

#include "../checks.h"

#include <algorithm>
#include <vector>

namespace softdtw_torch {
namespace minirocket {

namespace {

// A 1-D parameter tensor read on the host as int64 (any integer dtype, on any device).
std::vector<int64_t> integer_parameter(const char* op, const char* prefix, const char* name, const at::Tensor& t,
                                       const at::Device& device) {
  TORCH_CHECK_VALUE(t.dim() == 1, op, ": expected ", prefix, name, " to be a 1-D tensor, got ", t.dim(), "-D");
  TORCH_CHECK_TYPE(at::isIntegralType(t.scalar_type(), /*includeBool=*/false), op, ": expected ", prefix, name,
                   " to be an integer tensor (aeon: int32), got ", t.scalar_type());
  TORCH_CHECK_VALUE(t.device() == device || t.device().is_cpu(), op, ": expected ", prefix, name, " on ", device,
                    " or the CPU, got ", t.device());
  const at::Tensor h = t.to(at::kCPU, at::kLong).contiguous();
  return std::vector<int64_t>(h.data_ptr<int64_t>(), h.data_ptr<int64_t>() + h.numel());
}

int64_t min_of(const std::vector<int64_t>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}
int64_t max_of(const std::vector<int64_t>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}
int64_t sum_of(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t e : v) s += e;
  return s;
}

}  // namespace

void check_series(const char* op, const at::Tensor& x, int64_t min_length) {
  TORCH_CHECK_VALUE(x.dim() == 3, op, ": expected x to be a 3-D tensor (n_cases, n_channels, n_timepoints), got ", x.dim(),
                    "-D");
  check_float_tensor(op, "x", x);
  TORCH_CHECK_VALUE(x.size(1) >= 1, op, ": expected x to have at least one channel, got x of shape ", x.sizes());
  // The message carries aeon's own words too ("n_timepoints must be >= 9, but found 5"), so that
  // code matching aeon's error matches ours.
  TORCH_CHECK_VALUE(x.size(2) >= min_length, op, ": expected at least ", min_length,
                    " time points (zero-pad shorter series), got x of shape ", x.sizes(), "; n_timepoints must be >= ",
                    min_length, ", but found ", x.size(2));
}

// aeon converts x to float32 first (X.astype(np.float32)); a float64 value beyond float32's range
// becomes inf there, so finiteness is checked after the conversion. Only the first lengths[i]
// time points of case i are read, so only those must be finite (padding may hold anything).
void check_finite(const char* op, const at::Tensor& x32, const at::Tensor& lengths) {
  at::Tensor bad = at::isfinite(x32).logical_not_();
  if (lengths.defined()) {
    const at::Tensor inside = at::arange(x32.size(2), lengths.options()).unsqueeze(0) < lengths.unsqueeze(1);
    bad.logical_and_(inside.unsqueeze(1));
  }
  TORCH_CHECK_VALUE(!bad.any().item<bool>(), op, kNotFiniteMessage);
}

TransformProblem prepare_transform(const at::Tensor& x, const at::Tensor& num_channels_per_combination,
                                   const at::Tensor& channel_indices, const at::Tensor& dilations,
                                   const at::Tensor& num_features_per_dilation, const at::Tensor& biases,
                                   const std::optional<at::Tensor>& x_lengths, bool to_float32,
                                   const TransformNames& names) {
  const char* op = names.op;
  const char* pre = names.parameter_prefix;
  check_series(op, x, names.min_length);
  const at::Device device = x.device();
  const std::vector<int64_t> ncpc =
      integer_parameter(op, "", "num_channels_per_combination", num_channels_per_combination, device);
  const std::vector<int64_t> channels = integer_parameter(op, "", "channel_indices", channel_indices, device);
  const std::vector<int64_t> dil = integer_parameter(op, pre, "dilations", dilations, device);
  const std::vector<int64_t> nfpd =
      integer_parameter(op, pre, "num_features_per_dilation", num_features_per_dilation, device);
  TORCH_CHECK_VALUE(biases.dim() == 1, op, ": expected ", pre, "biases to be a 1-D tensor, got ", biases.dim(), "-D");
  TORCH_CHECK_TYPE(at::isFloatingType(biases.scalar_type()), op, ": expected ", pre,
                   "biases to be a floating-point tensor (aeon: float32), got ", biases.scalar_type());
  TORCH_CHECK_VALUE(biases.device() == device || biases.device().is_cpu(), op, ": expected ", pre, "biases on ", device,
                    " or the CPU, got ", biases.device());

  const int64_t n_dilations = static_cast<int64_t>(dil.size());
  TORCH_CHECK_VALUE(n_dilations >= 1, op, ": expected at least one dilation, got ", pre, "dilations of shape [0]");
  TORCH_CHECK_VALUE(static_cast<int64_t>(nfpd.size()) == n_dilations, op, ": expected ", pre,
                    "num_features_per_dilation to have one entry per dilation (", n_dilations, "), got ", nfpd.size());
  TORCH_CHECK_VALUE(static_cast<int64_t>(ncpc.size()) == kKernels * n_dilations, op,
                    ": expected num_channels_per_combination to have 84 entries per dilation (", kKernels * n_dilations,
                    "), got ", ncpc.size());
  TORCH_CHECK_VALUE(min_of(dil) >= 1 && max_of(dil) <= std::numeric_limits<int32_t>::max(), op, ": expected ", pre,
                    "dilations in [1, 2**31 - 1], got min ", min_of(dil), " and max ", max_of(dil));
  TORCH_CHECK_VALUE(min_of(nfpd) >= 0, op, ": expected ", pre, "num_features_per_dilation >= 0, got min ",
                    min_of(nfpd));
  const int64_t n_features = kKernels * sum_of(nfpd);
  TORCH_CHECK_VALUE(biases.numel() == n_features, op, ": expected ", pre, "biases to have 84 * sum(", pre,
                    "num_features_per_dilation) = ", n_features, " entries, got ", biases.numel());
  TORCH_CHECK_VALUE(min_of(ncpc) >= 1, op, ": expected num_channels_per_combination >= 1, got min ", min_of(ncpc));
  TORCH_CHECK_VALUE(static_cast<int64_t>(channels.size()) == sum_of(ncpc), op,
                    ": expected channel_indices to have sum(num_channels_per_combination) = ", sum_of(ncpc),
                    " entries, got ", channels.size());
  TORCH_CHECK_VALUE(min_of(channels) >= 0, op, ": expected channel_indices >= 0, got min ", min_of(channels));
  TORCH_CHECK_VALUE(channels.empty() || max_of(channels) < x.size(1), op, ": expected x with at least ",
                    max_of(channels) + 1, " channels (the parameters use channel index ", max_of(channels), "), got ",
                    x.size(1), " channels");

  // The features: float32, n_cases x n_features (MultiRocket: 4 per feature and representation)
  memory::check(names.op, c10::str("the features of ", x.size(0), " cases"),
                4.0 * x.size(0) * n_features * names.outputs_per_feature, device,
                "transform fewer cases per call");
  TransformProblem p;
  p.n_cases = x.size(0);
  p.n_channels = x.size(1);
  p.n_timepoints = x.size(2);
  p.n_features = n_features;
  p.max_dilation = max_of(dil);
  p.x_lengths =
      checked_lengths(op, "x_lengths", x_lengths, p.n_cases, "case", names.min_length, p.n_timepoints, device);
  if (to_float32) {
    p.x = x.to(at::kFloat).contiguous();
    check_finite(op, p.x, p.x_lengths);
  } else {
    p.x = x.contiguous();
  }

  p.channel_indices.assign(channels.begin(), channels.end());
  const at::Tensor b = biases.to(at::kCPU, at::kFloat).contiguous();
  p.biases.assign(b.data_ptr<float>(), b.data_ptr<float>() + b.numel());
  int64_t channel_start = 0, feature_start = 0;
  for (int64_t di = 0; di < n_dilations; ++di) {
    for (int64_t k = 0; k < kKernels; ++k) {
      const int64_t m = ncpc[di * kKernels + k];
      p.combinations.push_back({dil[di], di, k, channel_start, m, feature_start, nfpd[di]});
      channel_start += m;
      feature_start += nfpd[di];
    }
  }
  return p;
}

}  // namespace minirocket
}  // namespace softdtw_torch
