// MiniRocket on CUDA (docs/design/rocket.md §7): minirocket_transform in one launch, and
// minirocket_fit for CUDA tensors (aeon's sequential random stream runs on the CPU).
//
// One thread block per (case, combination); the blocks loop over all of them (grid-stride, 64-bit
// indices). Threads take consecutive time points t of the counted segment; each computes the
// combination's output at t from x with the same float32 additions, in the same order, as the
// CPU kernel and aeon (math.h). PPV counts are integers: per warp a ballot and a
// popcount per bias, summed over warps in a fixed order, so the result is deterministic and
// identical to the CPU's. No float atomics.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "../problem.h"

namespace softdtw_torch {
namespace minirocket {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBiasChunk = 64;  // biases counted per pass over the segment (shared counters)

// Combination c's layout, one row of 7 int64 (see Combination in problem.h).
struct DeviceCombination {
  int64_t dilation, dilation_index, kernel, channel_start, n_channels, feature_start, n_features;
};

__device__ float combination_output(const float* x_case, int64_t row_stride, const int32_t* channels,
                                    int64_t n_channels, int64_t T, int64_t t, int64_t d, int a, int b, int c) {
  float acc = 0.0f;  // np.sum over the channels starts from 0
  for (int64_t j = 0; j < n_channels; ++j) {
    const float* row = x_case + static_cast<int64_t>(channels[j]) * row_stride;
    acc = acc + combine_transform(alpha_at(row, T, t, d), gamma_at(row, T, t, d, a), gamma_at(row, T, t, d, b),
                                  gamma_at(row, T, t, d, c));
  }
  return acc;
}

__global__ void __launch_bounds__(kThreads)
    transform_kernel(const float* __restrict__ x, const int64_t* __restrict__ lengths,
                     const DeviceCombination* __restrict__ combinations, const int32_t* __restrict__ channel_indices,
                     const float* __restrict__ biases, float* __restrict__ out, int64_t n_cases, int64_t n_channels,
                     int64_t n_timepoints, int64_t n_combinations, int64_t n_features) {
  __shared__ int warp_counts[kWarps][kBiasChunk];
  __shared__ float bias_chunk[kBiasChunk];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t n_blocks = n_cases * n_combinations;
  for (int64_t block = blockIdx.x; block < n_blocks; block += gridDim.x) {
    const int64_t i = block / n_combinations;
    const DeviceCombination cb = combinations[block % n_combinations];
    const int64_t T = lengths ? lengths[i] : n_timepoints;
    const float* x_case = x + i * n_channels * n_timepoints;
    int a, b, c;
    kernel_taps(cb.kernel, &a, &b, &c);
    int64_t lo, hi;
    ppv_segment(T, cb.dilation, cb.dilation_index, cb.kernel, &lo, &hi);
    for (int64_t j0 = 0; j0 < cb.n_features; j0 += kBiasChunk) {
      const int nb = static_cast<int>(min(static_cast<int64_t>(kBiasChunk), cb.n_features - j0));
      for (int j = threadIdx.x; j < kWarps * kBiasChunk; j += kThreads) warp_counts[j / kBiasChunk][j % kBiasChunk] = 0;
      for (int j = threadIdx.x; j < nb; j += kThreads) bias_chunk[j] = biases[cb.feature_start + j0 + j];
      __syncthreads();
      // Every lane of a warp runs the same iterations (the loop bound is block-uniform), so the
      // ballots see all 32 lanes; lanes past the segment vote false.
      for (int64_t base = lo; base < hi; base += kThreads) {
        const int64_t t = base + threadIdx.x;
        const bool inside = t < hi;
        const float v = inside ? combination_output(x_case, n_timepoints, channel_indices + cb.channel_start,
                                                    cb.n_channels, T, t, cb.dilation, a, b, c)
                               : 0.0f;
        for (int j = 0; j < nb; ++j) {
          const unsigned votes = __ballot_sync(0xffffffffu, inside && v > bias_chunk[j]);
          if (lane == 0) warp_counts[warp][j] += __popc(votes);
        }
      }
      __syncthreads();
      for (int j = threadIdx.x; j < nb; j += kThreads) {
        int64_t count = 0;
        for (int w = 0; w < kWarps; ++w) count += warp_counts[w][j];
        out[i * n_features + cb.feature_start + j0 + j] = ppv_value(count, hi - lo);
      }
      __syncthreads();  // the counters and biases are reset for the next chunk or block
    }
  }
}

at::Tensor transform_cuda(const at::Tensor& x, const at::Tensor& num_channels_per_combination,
                          const at::Tensor& channel_indices, const at::Tensor& dilations,
                          const at::Tensor& num_features_per_dilation, const at::Tensor& biases,
                          const std::optional<at::Tensor>& x_lengths) {
  const c10::cuda::CUDAGuard guard(x.device());
  const TransformProblem p = prepare_transform(x, num_channels_per_combination, channel_indices, dilations,
                                               num_features_per_dilation, biases, x_lengths);
  at::Tensor out = at::empty({p.n_cases, p.n_features}, p.x.options());
  if (p.n_cases == 0 || p.n_features == 0) return out;

  // The layout travels to the device once: combinations (as int64 rows), channels, biases.
  const int64_t n_combinations = static_cast<int64_t>(p.combinations.size());
  static_assert(sizeof(Combination) == sizeof(DeviceCombination), "same layout on host and device");
  const auto long_options = at::TensorOptions().dtype(at::kLong);
  at::Tensor combinations =
      at::from_blob(const_cast<Combination*>(p.combinations.data()), {n_combinations, 7}, long_options)
          .to(x.device());
  at::Tensor channels =
      at::tensor(at::ArrayRef<int32_t>(p.channel_indices), at::TensorOptions().dtype(at::kInt)).to(x.device());
  at::Tensor bias = at::tensor(at::ArrayRef<float>(p.biases), at::TensorOptions().dtype(at::kFloat)).to(x.device());

  const int64_t n_blocks = p.n_cases * n_combinations;
  const int64_t max_grid = static_cast<int64_t>(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) * 32;
  const unsigned grid = static_cast<unsigned>(std::min(n_blocks, max_grid));
  transform_kernel<<<grid, kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      p.x.data_ptr<float>(), p.x_lengths.defined() ? p.x_lengths.data_ptr<int64_t>() : nullptr,
      reinterpret_cast<const DeviceCombination*>(combinations.data_ptr<int64_t>()), channels.data_ptr<int32_t>(),
      bias.data_ptr<float>(), out.data_ptr<float>(), p.n_cases, p.n_channels, p.n_timepoints, n_combinations,
      p.n_features);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

// aeon's fit is one sequential random stream and a few quantiles: it runs on the CPU (x is copied
// there) and the parameters come back on x's device, ready for transform.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fit_cuda(const at::Tensor& x,
                                                                                int64_t n_features,
                                                                                int64_t max_dilations_per_kernel,
                                                                                int64_t seed) {
  auto [ncpc, channels, dilations, per_dilation, biases] = fit_cpu(x, n_features, max_dilations_per_kernel, seed);
  const at::Device device = x.device();
  return {ncpc.to(device), channels.to(device), dilations.to(device), per_dilation.to(device), biases.to(device)};
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  m.impl("minirocket_fit", &fit_cuda);
  m.impl("minirocket_transform", &transform_cuda);
}

}  // namespace minirocket
}  // namespace softdtw_torch
