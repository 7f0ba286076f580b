// MultiRocket's fit on the CPU (docs/design/rocket.md §8), multirocket_fit's body: MiniRocket's fit
// (common/minirocket/fit.cpp) of the series and of its first difference, the second carrying on
// numpy's stream from the first, bit for bit. Registered by the CPU kernel, called by the CUDA
// one (x on any device is read on the CPU).
#include <ATen/ATen.h>

#include "../common/numpy_random.h"
#include "problem.h"

namespace softdtw_torch {
namespace multirocket {

// aeon seeds numpy's global stream once, fits the series (channel draws from that stream, examples
// from numba's stream seeded with `seed`), then fits np.diff(x) going on with numpy's stream
// (numba's is seeded again: the same examples' draws).
Parameters fit_cpu(const at::Tensor& x_in, int64_t n_kernels, int64_t max_dilations, int64_t seed) {
  const char* op = kFitOp;
  minirocket::check_series(op, x_in, kMinLength);
  TORCH_CHECK_VALUE(x_in.size(0) >= 1, op, ": expected at least one case, got x of shape ", x_in.sizes());
  TORCH_CHECK_VALUE(n_kernels >= kKernels, op, ": expected n_kernels >= 84 (MultiRocket's 84 kernels), got ",
                    n_kernels);
  TORCH_CHECK_VALUE(max_dilations >= 1, op, ": expected max_dilations_per_kernel >= 1, got ", max_dilations);
  TORCH_CHECK_VALUE(seed >= 0 && seed <= 0xffffffffLL, op, ": expected seed in [0, 2**32 - 1] (numpy's range), got ",
                    seed);
  const at::Tensor x = x_in.to(at::kCPU, at::kFloat).contiguous();
  minirocket::check_finite(op, x, at::Tensor());
  const int64_t T = x.size(2);
  const at::Tensor difference = (x.narrow(2, 1, T - 1) - x.narrow(2, 0, T - 1)).contiguous();  // float32, as np.diff

  NumpyLegacyRandom numpy_rng(static_cast<uint64_t>(seed));
  // aeon's one-channel fit draws no channels (one channel per combination, as drawing them gives)
  // and sums in an order of its own.
  const auto order = x.size(1) == 1 ? minirocket::FitOrder::kMultiRocketUnivariate : minirocket::FitOrder::kMiniRocket;
  auto [a0, a1, a2, a3, a4] = minirocket::fit_parameters(op, x, n_kernels, max_dilations, seed, numpy_rng, order);
  auto [b0, b1, b2, b3, b4] =
      minirocket::fit_parameters(op, difference, n_kernels, max_dilations, seed, numpy_rng, order);
  return {a0, a1, a2, a3, a4, b0, b1, b2, b3, b4};
}

}  // namespace multirocket
}  // namespace softdtw_torch
