// Device-agnostic kernels of the ROCKET ops:
// - rocket_generate_kernels (CompositeExplicitAutograd): aeon's Rocket kernel generator
//   (_generate_kernels in aeon's _rocket.py, compiled by numba with fastmath=True), reproduced draw
//   for draw from the same MT19937 stream (random.h); exact call order and the parity contract:
//   docs/design/rocket.md §3. It takes no tensors and always returns CPU tensors, so it is
//   registered once: the dispatcher reaches it from Python, TorchScript and C++ alike.
// - rocket_transform (CompositeImplicitAutograd): rocket_normalise then rocket_convolve, aeon's
//   Rocket.transform; autograd flows through the ops it calls.
// - rocket_convolve (CompositeExplicitAutograd): the value-only path (below autograd, or with no
//   input requiring grad).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "../common/checks.h"
#include "../common/memory.h"
#include "../common/numpy_random.h"
#include "ops.h"

namespace softdtw_torch {
namespace {

namespace ops = rocket::ops;

// ---------------------------------------------------------------------------------------------
// rocket_generate_kernels

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// Sum of one weight row (7, 9 or 11 float32 values) in the order numba's fastmath build of
// aeon's `_weights[a3:b3].mean()` adds them (read from its LLVM IR). The loop is vectorised with
// an 8-lane epilogue on AVX-512 targets that do not prefer 256-bit vectors (AMD Zen 4/5): rows
// shorter than 8 are summed left to right; longer ones put x[j] in lane j of one 8-lane step,
// reduce it as the tree ((x0+x4)+(x2+x6)) + ((x1+x5)+(x3+x7)), then add the rest one by one.
// SSE-only targets give the same sums. AVX2 targets (and Intel AVX-512 CPUs, which LLVM tunes to
// prefer 256-bit vectors) use a 4-lane epilogue instead: rows of 9 and 11 are summed as here, but
// rows of 7 as ((x0+x2)+(x1+x3)) + x4 + x5 + x6, so aeon's weights of some 7-long rows (~3% of
// all weights) differ from ours there by a few float32 ulps of the row's scale. One order had to
// be chosen; this one is bit-exact with aeon where it was measured (tests/rocket/test_rocket_generate.py).
float numba_row_sum(const float* x, int64_t n) {
  if (n < 8) {
    float s = 0.0f;
    for (int64_t j = 0; j < n; ++j) s += x[j];
    return s;
  }
  // Rows are at most 11 long, so the vector part is exactly one 8-lane step.
  const float a0 = x[0] + x[4], a1 = x[1] + x[5], a2 = x[2] + x[6], a3 = x[3] + x[7];
  const float b0 = a0 + a2, b1 = a1 + a3;
  float s = b1 + b0;
  for (int64_t j = 8; j < n; ++j) s += x[j];
  return s;
}

// aeon: `w[row] = w[row] - w[row].mean()`. numba divides the float32 sum by the row length in
// float64 and subtracts in float64 (the row is float32, the mean a float64 scalar), then stores
// back to float32: one rounding of the exact difference of two doubles.
void centre_row(float* x, int64_t n) {
  const double mean = static_cast<double>(numba_row_sum(x, n)) / static_cast<double>(n);
  for (int64_t j = 0; j < n; ++j) x[j] = static_cast<float>(static_cast<double>(x[j]) - mean);
}

// aeon writes `int32(2 ** u)`; numba lowers `2 ** u` to exp2 (glibc's, the same function numba
// calls), which can differ from pow(2, u) in the last bit and flip a truncation. Truncation
// toward zero as int32 conversion does (values are small and non-negative here).
int32_t exp2_to_int32(double u) { return static_cast<int32_t>(std::exp2(u)); }

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
generate_kernels(int64_t n_timepoints, int64_t n_channels, int64_t n_kernels, int64_t seed) {
  TORCH_CHECK_VALUE(n_kernels >= 1, "rocket_generate_kernels: expected n_kernels >= 1, got ", n_kernels);
  TORCH_CHECK_VALUE(n_channels >= 1 && n_channels <= kInt32Max,
                    "rocket_generate_kernels: expected n_channels in [1, 2147483647], got ", n_channels);
  TORCH_CHECK_VALUE(n_timepoints >= 2 && n_timepoints <= kInt32Max,
                    "rocket_generate_kernels: expected n_timepoints in [2, 2147483647], got ", n_timepoints);
  TORCH_CHECK_VALUE(seed >= 0, "rocket_generate_kernels: expected seed >= 0, got ", seed);

  // numba's np.random.seed takes a uint32: larger seeds keep their low 32 bits.
  NumpyLegacyRandom rng(static_cast<uint64_t>(seed) & 0xffffffffu);
  const int64_t K = n_kernels;
  const int64_t C = n_channels;
  // Five int32/float32 fields per kernel now, then weights and channel indices (at least 7 and 1 per kernel).
  memory::check("rocket_generate_kernels", c10::str("the fields of ", K, " kernels"), (20.0 + 32.0) * K, at::kCPU,
                "use fewer kernels (n_kernels)");

  at::Tensor lengths = at::empty({K}, at::kInt);
  at::Tensor num_channel_indices = at::empty({K}, at::kInt);
  at::Tensor biases = at::empty({K}, at::kFloat);
  at::Tensor dilations = at::empty({K}, at::kInt);
  at::Tensor paddings = at::empty({K}, at::kInt);
  int32_t* L = lengths.data_ptr<int32_t>();
  int32_t* m = num_channel_indices.data_ptr<int32_t>();
  float* b = biases.data_ptr<float>();
  int32_t* d = dilations.data_ptr<int32_t>();
  int32_t* p = paddings.data_ptr<int32_t>();

  // Pass 1: np.random.choice((7, 9, 11), K), one randint(0, 3) per kernel.
  static constexpr int32_t kCandidateLengths[3] = {7, 9, 11};
  for (int64_t i = 0; i < K; ++i) L[i] = kCandidateLengths[rng.randint(3)];

  // Pass 2: the number of channels, int32(2 ** uniform(0, log2(min(C, L) + 1))), drawn even
  // when C == 1. The sizes of the two ragged outputs follow from it.
  int64_t n_weights = 0;
  int64_t n_indices = 0;
  for (int64_t i = 0; i < K; ++i) {
    const int64_t limit = std::min<int64_t>(C, L[i]);
    m[i] = exp2_to_int32(rng.uniform(0.0, std::log2(static_cast<double>(limit + 1))));
    // 2 ** u < limit + 1 mathematically; only a last-bit rounding of exp2 at u ~ 1 could reach
    // limit + 1, where aeon's choice(replace=False) raises too. Say so rather than read out of range.
    TORCH_CHECK(m[i] >= 1 && m[i] <= C, "rocket_generate_kernels: kernel ", i, " drew ", m[i],
                " channels out of ", C, " (a rounding edge case aeon cannot handle either); try another seed");
    n_weights += static_cast<int64_t>(m[i]) * L[i];
    n_indices += m[i];
  }
  // aeon sizes its weights array with a float32 dot product, exact while the total is below 2^24
  // (K < 138,000 kernels at most); here the size is always the exact integer sum.
  at::Tensor weights = at::empty({n_weights}, at::kFloat);
  at::Tensor channel_indices = at::empty({n_indices}, at::kInt);
  float* w = weights.data_ptr<float>();
  int32_t* ch = channel_indices.data_ptr<int32_t>();

  // Pass 3, per kernel in this order: weights, mean-centring per channel row, channels, bias,
  // dilation, padding.
  const double max_exponent_numerator = static_cast<double>(n_timepoints - 1);
  int64_t w_offset = 0;
  int64_t ch_offset = 0;
  for (int64_t i = 0; i < K; ++i) {
    const int64_t len = L[i];
    const int64_t rows = m[i];
    float* wi = w + w_offset;
    for (int64_t j = 0; j < rows * len; ++j) wi[j] = static_cast<float>(rng.normal_fused());
    for (int64_t r = 0; r < rows; ++r) centre_row(wi + r * len, len);

    // np.random.choice(arange(C), m, replace=False) in numba is permutation(arange(C))[:m].
    const std::vector<int32_t> perm = rng.permutation(static_cast<int32_t>(C));
    for (int64_t r = 0; r < rows; ++r) ch[ch_offset + r] = perm[r];

    b[i] = static_cast<float>(rng.uniform(-1.0, 1.0));

    // With T < L the exponent's range is negative and aeon's dilation is 0 (almost surely);
    // reproduced as is, padding then 0.
    const double max_exponent = std::log2(max_exponent_numerator / static_cast<double>(len - 1));
    d[i] = exp2_to_int32(rng.uniform(0.0, max_exponent));
    p[i] = rng.randint(2) == 1 ? static_cast<int32_t>(((len - 1) * static_cast<int64_t>(d[i])) / 2) : 0;

    w_offset += rows * len;
    ch_offset += rows;
  }
  return {weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices};
}


// ---------------------------------------------------------------------------------------------
// rocket_transform, rocket_convolve

at::Tensor normalise_then_convolve(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& lengths,
                                   const at::Tensor& biases, const at::Tensor& dilations, const at::Tensor& paddings,
                                   const at::Tensor& num_channel_indices, const at::Tensor& channel_indices,
                                   bool normalise, c10::string_view accumulate,
                                   const std::optional<at::Tensor>& x_lengths, std::optional<double> ppv_temperature) {
  const rocket::Kernels kernels{weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices};
  // The two ops' errors name rocket_transform, the op called.
  return with_public_name("rocket_transform", [&] {
    // aeon normalises in the input's precision and only then converts to the convolution's.
    const at::Tensor series = normalise ? ops::rocket_normalise(x, x_lengths) : x;
    return ops::rocket_convolve_with(series, kernels, accumulate, x_lengths, ppv_temperature);
  });
}

at::Tensor rocket_convolve_values(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& lengths,
                                  const at::Tensor& biases, const at::Tensor& dilations, const at::Tensor& paddings,
                                  const at::Tensor& num_channel_indices, const at::Tensor& channel_indices,
                                  c10::string_view accumulate, const std::optional<at::Tensor>& x_lengths,
                                  std::optional<double> ppv_temperature) {
  const rocket::Kernels kernels{weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices};
  return std::get<0>(ops::convolve_forward_with(x, kernels, accumulate, x_lengths, ppv_temperature));
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CompositeImplicitAutograd, m) {
  m.impl("rocket_transform", &normalise_then_convolve);
}

TORCH_LIBRARY_IMPL(softdtw_torch, CompositeExplicitAutograd, m) {
  m.impl("rocket_generate_kernels", &generate_kernels);
  m.impl("rocket_convolve", &rocket_convolve_values);
}

}  // namespace softdtw_torch
