// MiniRocket's fit on the CPU (aeon's _static_fit; docs/design/rocket.md §7): dilations, channel
// combinations (numpy's global legacy RNG) and biases (numba's RNG and np.quantile), bit for bit.
// fit_parameters is shared with MultiRocket's fit (the series, then its first difference); fit_cpu
// is minirocket_fit's body (registered by the CPU kernel, called by the CUDA one: x on any device
// is read on the CPU).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../memory.h"
#include "../numpy_random.h"
#include "problem.h"

namespace softdtw_torch {
namespace minirocket {

namespace {

// _fit_dilations: D = min(n_features_per_kernel, max_dilations) exponents linspace(0, log2((T-1)/8), D)
// (numpy: i * step, the last one exactly the stop), dilations int32(2 ** e) made unique with their
// counts, then n_features_per_dilation = int32(counts * multiplier) plus the remainder, round robin.
// 2 ** e uses the C library's pow: numpy's scalar loop does the same, but numpy's AVX-512 (SVML)
// loop is not correctly rounded and gives 2 ** log2(3) = 2.9999999999999996, so on AVX-512 machines
// aeon's last dilation is one smaller for the few lengths with (T - 1) / 8 an integer that is not a
// power of two (T = 25, 49, 97, ...; see tests/rocket/test_minirocket.py).
void fit_dilations(int64_t n_timepoints, int64_t n_features, int64_t max_dilations, std::vector<int32_t>* dilations,
                   std::vector<int32_t>* features_per_dilation) {
  const int64_t per_kernel = n_features / kKernels;
  const int64_t count = std::min(per_kernel, max_dilations);
  const double multiplier = static_cast<double>(per_kernel) / static_cast<double>(count);
  const double max_exponent = std::log2(static_cast<double>(n_timepoints - 1) / 8.0);
  const double step = count > 1 ? max_exponent / static_cast<double>(count - 1) : 0.0;
  std::vector<int32_t> raw(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const double e = (count > 1 && i == count - 1) ? max_exponent : static_cast<double>(i) * step;
    raw[i] = static_cast<int32_t>(std::pow(2.0, e));
  }
  std::sort(raw.begin(), raw.end());  // already non-decreasing; np.unique sorts anyway
  dilations->clear();
  std::vector<int64_t> counts;
  for (int32_t d : raw) {
    if (dilations->empty() || dilations->back() != d) {
      dilations->push_back(d);
      counts.push_back(0);
    }
    ++counts.back();
  }
  features_per_dilation->clear();
  int64_t assigned = 0;
  for (int64_t c : counts) {
    features_per_dilation->push_back(static_cast<int32_t>(static_cast<double>(c) * multiplier));
    assigned += features_per_dilation->back();
  }
  for (int64_t i = 0, remainder = per_kernel - assigned; remainder > 0; --remainder) {
    ++(*features_per_dilation)[i];
    i = (i + 1) % static_cast<int64_t>(features_per_dilation->size());
  }
}

// aeon's _quantiles(n): float32(((i + 1) · golden ratio) mod 1), a low-discrepancy sequence.
std::vector<float> fit_quantiles(int64_t n) {
  const double phi = (std::sqrt(5.0) + 1.0) / 2.0;
  std::vector<float> q(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) q[i] = static_cast<float>(std::fmod(static_cast<double>(i + 1) * phi, 1.0));
  return q;
}

// numba's np.quantile (linear interpolation between closest ranks) of `sorted` (ascending) at q,
// rounded to float32 like aeon's biases array. numba compiles it inside aeon's fastmath function,
// where LLVM rewrites rank = 1 + (n - 1)·(p / 100) as (n - 1)·0.01·p + 1 and the interpolation
// lower·(1 - m) + upper·m as (upper - lower)·m + lower, both mul-adds fused (FMA, on every CPU
// numba targets with it: x86-64 since 2013, ARM). The rounding differs from the literal formula
// only near float32 ties, which integer-valued data hits (tests/rocket/test_minirocket.py).
float numba_quantile(const std::vector<double>& sorted, float q) {
  const int64_t n = static_cast<int64_t>(sorted.size());
  const double percentile = static_cast<double>(q) * 100.0;
  double value;
  if (n == 1) {
    value = sorted[0];
  } else if (percentile == 100.0) {
    value = sorted[n - 1];
  } else if (percentile == 0.0) {
    value = sorted[0];
  } else {
    const double rank = std::fma(static_cast<double>(n - 1) * 0.01, percentile, 1.0);
    const int64_t f = static_cast<int64_t>(std::floor(rank));
    const double m = rank - static_cast<double>(f);
    const double lower = sorted[f - 1], upper = sorted[std::min(f, n - 1)];
    value = std::fma(upper - lower, m, lower);
  }
  return static_cast<float>(value);
}

}  // namespace

Parameters fit_parameters(const char* op, const at::Tensor& x, int64_t n_features, int64_t max_dilations, int64_t seed,
                          NumpyLegacyRandom& numpy_rng, FitOrder order) {
  const int64_t n_cases = x.size(0), n_channels = x.size(1), T = x.size(2);

  // The quantiles and the biases, a float32 of each per feature, before anything is drawn; the
  // features per dilation are int32, as aeon's
  const int64_t features = n_features / kKernels * kKernels;
  memory::check(op, c10::str("the quantiles and biases of ", features, " features"), 8.0 * features, at::kCPU,
                "use fewer kernels (n_kernels)");
  TORCH_CHECK_VALUE(n_features / kKernels <= std::numeric_limits<int32_t>::max(), op,
                    ": expected at most 84 * (2**31 - 1) features, got ", n_features);
  std::vector<int32_t> dilations, per_dilation;
  fit_dilations(T, n_features, max_dilations, &dilations, &per_dilation);
  const int64_t n_dilations = static_cast<int64_t>(dilations.size());
  const int64_t n_combinations = kKernels * n_dilations;
  int64_t per_kernel = 0;
  for (int32_t f : per_dilation) per_kernel += f;
  const std::vector<float> quantiles = fit_quantiles(kKernels * per_kernel);

  // numpy's global RNG: all the channel counts first (one uniform each, drawn even for one
  // channel), then choice(C, m, replace=False) = permutation(C)[:m] per combination.
  const double max_exponent = std::log2(static_cast<double>(std::min<int64_t>(n_channels, 9) + 1));
  std::vector<int32_t> channels_per_combination(static_cast<size_t>(n_combinations));
  for (auto& m : channels_per_combination) {
    m = static_cast<int32_t>(std::pow(2.0, numpy_rng.uniform(0.0, max_exponent)));
  }
  std::vector<int32_t> channel_indices;
  std::vector<int64_t> channel_start(static_cast<size_t>(n_combinations));
  for (int64_t c = 0; c < n_combinations; ++c) {
    channel_start[c] = static_cast<int64_t>(channel_indices.size());
    const std::vector<int32_t> perm = numpy_rng.permutation(static_cast<int32_t>(n_channels));
    channel_indices.insert(channel_indices.end(), perm.begin(), perm.begin() + channels_per_combination[c]);
  }

  // numba's own RNG re-seeded with the same seed: one example per combination, in order.
  NumpyLegacyRandom numba_rng(static_cast<uint64_t>(seed));
  std::vector<int64_t> example(static_cast<size_t>(n_combinations));
  for (auto& e : example) e = numba_rng.randint(n_cases);

  // Combination c's features (dilation-major, then kernel) start at feature_start[c].
  std::vector<int64_t> feature_start(static_cast<size_t>(n_combinations + 1), 0);
  for (int64_t c = 0; c < n_combinations; ++c) feature_start[c + 1] = feature_start[c] + per_dilation[c / kKernels];

  // Biases: the quantiles of each combination's output on its example (independent per
  // combination, so computed in parallel with the same result for any thread count).
  at::Tensor biases = at::empty({kKernels * per_kernel}, x.options());
  float* bias_out = biases.data_ptr<float>();
  const float* xp = x.data_ptr<float>();
  std::vector<char> overflow(static_cast<size_t>(n_combinations), 0);
  at::parallel_for(0, n_combinations, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> conv(static_cast<size_t>(T));
    std::vector<double> sorted(static_cast<size_t>(T));
    for (int64_t c = begin; c < end; ++c) {
      const int64_t di = c / kKernels, k = c % kKernels, d = dilations[di];
      int a, b, g;
      kernel_taps(k, &a, &b, &g);
      std::fill(conv.begin(), conv.end(), 0.0f);  // np.sum over channels starts from 0
      for (int64_t j = 0; j < channels_per_combination[c]; ++j) {
        const float* row = xp + (example[c] * n_channels + channel_indices[channel_start[c] + j]) * T;
        for (int64_t t = 0; t < T; ++t) {
          conv[t] = conv[t] + combine_fit(alpha_at(row, T, t, d), gamma_at(row, T, t, d, a), gamma_at(row, T, t, d, b),
                                          gamma_at(row, T, t, d, g), order);
        }
      }
      for (int64_t t = 0; t < T; ++t) {
        if (!std::isfinite(conv[t])) overflow[c] = 1;
        sorted[t] = conv[t];
      }
      std::sort(sorted.begin(), sorted.end());
      for (int64_t f = feature_start[c]; f < feature_start[c] + per_dilation[di]; ++f) {
        bias_out[f] = numba_quantile(sorted, quantiles[f]);
      }
    }
  });
  // aeon would go on with inf/NaN biases (numba's quantile heuristics for non-finite data); an
  // output beyond float32's range only comes from |x| near 1e37, so it is reported instead.
  TORCH_CHECK_VALUE(std::none_of(overflow.begin(), overflow.end(), [](char o) { return o != 0; }), op,
                    ": expected the convolution outputs to fit in float32, got inf or NaN (|x| is too large; "
                    "rescale x)");

  auto int_tensor = [](const std::vector<int32_t>& v) {
    return at::tensor(at::ArrayRef<int32_t>(v), at::TensorOptions().dtype(at::kInt));
  };
  return {int_tensor(channels_per_combination), int_tensor(channel_indices), int_tensor(dilations),
          int_tensor(per_dilation), biases};
}

// minirocket_fit's body: aeon's _static_fit, np.random.seed(seed) then the fit.
Parameters fit_cpu(const at::Tensor& x_in, int64_t n_features, int64_t max_dilations, int64_t seed) {
  const char* op = kFitOp;
  check_series(op, x_in);
  TORCH_CHECK_VALUE(x_in.size(0) >= 1, op, ": expected at least one case, got x of shape ", x_in.sizes());
  TORCH_CHECK_VALUE(max_dilations >= 1, op, ": expected max_dilations_per_kernel >= 1, got ", max_dilations);
  TORCH_CHECK_VALUE(seed >= 0 && seed <= 0xffffffffLL, op, ": expected seed in [0, 2**32 - 1] (numpy's range), got ",
                    seed);
  const at::Tensor x = x_in.to(at::kCPU, at::kFloat).contiguous();
  check_finite(op, x, at::Tensor());
  NumpyLegacyRandom numpy_rng(static_cast<uint64_t>(seed));
  return fit_parameters(op, x, std::max<int64_t>(n_features, kKernels) /* aeon's n_kernels_ */, max_dilations, seed,
                        numpy_rng, FitOrder::kMiniRocket);
}

}  // namespace minirocket
}  // namespace softdtw_torch
