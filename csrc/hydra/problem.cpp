// Hydra: validation of the ops' inputs, shared by the CPU and CUDA kernels, and the fit.
#include "../common/memory.h"
#include "problem.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "../common/checks.h"

namespace softdtw_torch {
namespace hydra {

namespace {

void check_series(const char* op, const at::Tensor& x) {
  TORCH_CHECK_VALUE(x.dim() == 3, op, ": expected x to be a 3-D tensor (n_cases, n_channels, n_timepoints), got ",
                    x.dim(), "-D");
  check_float_tensor(op, "x", x);
  TORCH_CHECK_VALUE(x.size(1) >= 1, op, ": expected x to have at least one channel, got x of shape ", x.sizes());
  TORCH_CHECK_VALUE(x.size(2) >= kMinLength, op, ": expected at least ", kMinLength,
                    " time points (aeon's Hydra has no dilation below 6; zero-pad shorter series), got x of shape ",
                    x.sizes());
}

}  // namespace

TransformProblem prepare_transform(const char* op, const at::Tensor& x, const at::Tensor& weights,
                                   const at::Tensor& channels, const std::optional<at::Tensor>& x_lengths) {
  check_series(op, x);
  const at::Device device = x.device();
  TORCH_CHECK_VALUE(weights.dim() == 5 && weights.size(4) == kTaps, op,
                    ": expected weights of shape (n_dilations, n_representations, n_groups, n_kernels, 9), got shape ",
                    weights.sizes());
  TORCH_CHECK_TYPE(at::isFloatingType(weights.scalar_type()), op,
                   ": expected weights to be a floating-point tensor, got ", weights.scalar_type());
  TORCH_CHECK_VALUE(weights.device() == device || weights.device().is_cpu(), op, ": expected weights on ", device,
                    " or the CPU, got ", weights.device());
  const int64_t D = weights.size(0), R = weights.size(1), G = weights.size(2), K = weights.size(3);
  TORCH_CHECK_VALUE(D >= 1 && D <= kMaxDilations, op, ": expected 1 to ", kMaxDilations,
                    " dilations (weights.shape[0]), got ", D);
  TORCH_CHECK_VALUE(R == 1 || R == 2, op,
                    ": expected 1 or 2 representations (weights.shape[1]: the series, then its first difference), got ",
                    R);
  TORCH_CHECK_VALUE(G >= 1 && K >= 1, op, ": expected at least one group and one kernel, got weights of shape ",
                    weights.sizes());
  TORCH_CHECK_VALUE(channels.dim() == 4 && channels.size(0) == D && channels.size(1) == R && channels.size(2) == G &&
                        channels.size(3) >= 1,
                    op, ": expected channels of shape (", D, ", ", R, ", ", G,
                    ", channels_per_group >= 1) (one row of channels per group of weights), got shape ",
                    channels.sizes());
  TORCH_CHECK_TYPE(at::isIntegralType(channels.scalar_type(), /*includeBool=*/false), op,
                   ": expected channels to be an integer tensor, got ", channels.scalar_type());
  TORCH_CHECK_VALUE(channels.device() == device || channels.device().is_cpu(), op, ": expected channels on ", device,
                    " or the CPU, got ", channels.device());

  TransformProblem p;
  p.n_cases = x.size(0);
  p.n_channels = x.size(1);
  p.n_timepoints = x.size(2);
  p.n_dilations = D;
  p.n_representations = R;
  p.n_groups = G;
  p.n_kernels = K;
  p.channels_per_group = channels.size(3);
  memory::check(op, c10::str("the features of ", p.n_cases, " cases"), 4.0 * p.n_cases * p.n_features(), device,
                "transform fewer cases per call");
  const at::ScalarType dtype = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  p.channels = channels.to(device, at::kLong).contiguous();
  if (p.n_channels > 1 && p.channels.numel() > 0) {  // one channel: aeon reads channel 0, not the indices
    const int64_t lo = p.channels.min().item<int64_t>(), hi = p.channels.max().item<int64_t>();
    TORCH_CHECK_VALUE(lo >= 0 && hi < p.n_channels, op, ": expected channels in [0, ", p.n_channels,
                      ") (x's channels), got min ", lo, " and max ", hi);
  }
  p.weights = weights.to(device, dtype).contiguous();
  TORCH_CHECK_VALUE(at::isfinite(p.weights).all().item<bool>(), op, ": expected finite weights, got NaN or inf");
  p.x_lengths = checked_lengths(op, "x_lengths", x_lengths, p.n_cases, "case", kMinLength, p.n_timepoints, device);
  p.x = x.to(dtype).contiguous();
  // Only each case's first x_lengths[i] time points are read, so only those must be finite.
  at::Tensor bad = at::isfinite(p.x).logical_not_();
  if (p.x_lengths.defined()) {
    bad.logical_and_((at::arange(p.n_timepoints, p.x_lengths.options()).unsqueeze(0) < p.x_lengths.unsqueeze(1))
                         .unsqueeze(1));
  }
  TORCH_CHECK_VALUE(!bad.any().item<bool>(), op,
                    ": expected x to contain only finite values (after conversion to float32 for float16, bfloat16 "
                    "and float32 x), got NaN or inf (x has missing values or infinities)");
  return p;
}

void check_features_finite(const at::Tensor& features) {
  TORCH_CHECK_VALUE(at::isfinite(features).all().item<bool>(), kTransformOp,
                    ": expected the features to be finite, got inf or NaN (|x| or the weights are too large for ",
                    features.scalar_type(), "; rescale x)");
}

Parameters fit_cpu(const at::Tensor& x, int64_t n_kernels, int64_t n_groups, int64_t max_num_channels, int64_t seed) {
  const char* op = kFitOp;
  check_series(op, x);
  TORCH_CHECK_VALUE(n_kernels >= 1, op, ": expected n_kernels >= 1 (kernels per group), got ", n_kernels);
  TORCH_CHECK_VALUE(n_groups >= 1, op, ": expected n_groups >= 1, got ", n_groups);
  TORCH_CHECK_VALUE(max_num_channels >= 1, op, ": expected max_num_channels >= 1, got ", max_num_channels);
  TORCH_CHECK_VALUE(seed >= 0 && seed <= 0xffffffffLL, op, ": expected seed in [0, 2**32 - 1] (numpy's range), got ",
                    seed);
  const int64_t n_channels = x.size(1), n_timepoints = x.size(2);
  // aeon: max_exponent = np.log2((n_timepoints - 1) / (9 - 1)); dilations 2 ** arange(int(max_exponent) + 1).
  const int64_t n_dilations = static_cast<int64_t>(std::log2(static_cast<double>(n_timepoints - 1) / 8.0)) + 1;
  const int64_t divisor = std::min<int64_t>(2, n_groups);  // representations
  const int64_t h = n_groups / divisor;                   // groups per representation
  // np.clip(n_channels // 2, 2, max_num_channels): the lower bound first, then the upper.
  const int64_t channels_per_group = std::min(std::max<int64_t>(n_channels / 2, 2), max_num_channels);

  // torch.manual_seed(seed) then aeon's draws in its order, on a generator of the same kind.
  // The weights (float32, 9 taps) and two temporaries of their size
  memory::check(op, c10::str("the weights of ", n_dilations * divisor * n_kernels * h, " kernels"),
                3.0 * 4.0 * kTaps * n_dilations * divisor * static_cast<double>(n_kernels) * h, at::kCPU,
                "use fewer kernels (n_kernels) or groups (n_groups)");
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat);
  at::Tensor w = at::randn({n_dilations, divisor, n_kernels * h, 1, kTaps}, generator, f32);
  w = w - w.mean(-1, /*keepdim=*/true);
  w = w / w.abs().sum(-1, /*keepdim=*/true);
  std::vector<at::Tensor> idx;
  for (int64_t i = 0; i < n_dilations; ++i) {
    idx.push_back(at::randint(0, n_channels, {divisor, h, channels_per_group}, generator,
                              at::TensorOptions().dtype(at::kLong)));
  }
  return {w.view({n_dilations, divisor, h, n_kernels, kTaps}), at::stack(idx)};
}

}  // namespace hydra
}  // namespace softdtw_torch
