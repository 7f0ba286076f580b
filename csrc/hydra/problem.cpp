// Hydra: validation of the ops' inputs, shared by the CPU and CUDA kernels.
#include "../common/memory.h"
#include "problem.h"

#include "../common/checks.h"

namespace softdtw_torch {
namespace hydra {

void check_series(const char* op, const at::Tensor& x) {
  TORCH_CHECK_VALUE(x.dim() == 3, op, ": expected x to be a 3-D tensor (n_cases, n_channels, n_timepoints), got ",
                    x.dim(), "-D");
  check_float_tensor(op, "x", x);
  TORCH_CHECK_VALUE(x.size(1) >= 1, op, ": expected x to have at least one channel, got x of shape ", x.sizes());
  TORCH_CHECK_VALUE(x.size(2) >= kMinLength, op, ": expected at least ", kMinLength,
                    " time points (aeon's Hydra has no dilation below 6; zero-pad shorter series), got x of shape ",
                    x.sizes());
}

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

}  // namespace hydra
}  // namespace softdtw_torch
