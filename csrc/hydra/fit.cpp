// Hydra's fit on the CPU (aeon's HydraTransformer._fit: torch.manual_seed(seed), then its draws in
// its order), hydra_fit's body: registered by the CPU kernel, called by the CUDA one.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "../common/memory.h"
#include "problem.h"

namespace softdtw_torch {
namespace hydra {

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
