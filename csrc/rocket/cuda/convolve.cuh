// Device code of the ROCKET ops' CUDA kernels, with the CPU kernels' semantics and bits (the same
// term order and rounding per response, ../math.h). No ATen here: the op bodies
// (convolve_ops.h) launch these kernels on a GPU (kernel.cu) and under the CPU emulator in the
// tests (tests/cuda_emu).
//
// Forward: one launch for all kernels and cases, never materialising (cases, kernels, time)
// activations. A block takes one case (grid-stride over cases, so any number of cases streams
// through) and kWarps kernels; its series is staged in shared memory when it fits, else read
// from global memory (long series). Each warp computes one kernel's responses, lanes striding
// over output positions; the PPV count is an integer ballot/popc sum and the first maximum a
// shuffle reduction on (value, position): no float atomics, deterministic.
//
// Backward (deterministic, no atomics): the series gradient runs one block per case and walks
// the kernels in order, threads owning distinct targets within a step; the weight and bias
// gradients run one warp per kernel and walk the cases in order.
#pragma once

#include <cmath>
#include <cstdint>

#include "../../common/device.cuh"
#include "../math.h"

namespace softdtw_torch {
namespace rocket_cuda {

constexpr int kWarps = 8;  // kernels per forward block
constexpr int kThreads = kWarps * 32;
constexpr int64_t kMaxSeriesGradBlocks = int64_t(1) << 20;  // series-gradient blocks (grid-stride over cases)
constexpr int kNormaliseThreads = 128;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int64_t kStagingBytes = 48 * 1024;  // the default dynamic shared memory limit

constexpr int64_t min_of(int64_t a, int64_t b) { return a < b ? a : b; }

// The kernels tuple as device pointers.
struct DeviceKernels {
  const float *weights, *biases;
  const int32_t *lengths, *dilations, *paddings, *num_channels, *channels;
  const int64_t *weight_offsets, *channel_offsets;
};

struct KernelFields {
  int64_t length, dilation, padding, n_channels;
  const float* weights;
  const int32_t* channels;
  float bias;
};

__device__ __forceinline__ KernelFields kernel_fields(const DeviceKernels& k, int64_t i) {
  return {k.lengths[i], k.dilations[i], k.paddings[i], k.num_channels[i], k.weights + k.weight_offsets[i],
          k.channels + k.channel_offsets[i], k.biases[i]};
}

__device__ __forceinline__ int64_t case_length(const int64_t* lengths, int64_t n, int64_t padded) {
  return lengths != nullptr ? lengths[n] : padded;
}

// s at output index i (position t = i - p): aeon's order, out-of-range taps skipped.
template <typename acc_t, bool kFma>
__device__ acc_t response(const acc_t* series, int64_t stride, int64_t length, const KernelFields& k, int64_t i) {
  acc_t s = static_cast<acc_t>(k.bias);
  for (int64_t j = 0, u = i - k.padding; j < k.length; ++j, u += k.dilation) {
    if (u < 0 || u >= length) continue;
    for (int64_t c = 0; c < k.n_channels; ++c) {
      s = rocket_step<acc_t, kFma>(s, static_cast<acc_t>(k.weights[c * k.length + j]), series[k.channels[c] * stride + u]);
    }
  }
  return s;
}

template <typename acc_t>
__device__ double sigmoid(acc_t s, double temperature) {
  return 1.0 / (1.0 + exp(-static_cast<double>(s) / temperature));
}

template <typename acc_t, bool kFma>
__global__ void rocket_forward_kernel(const acc_t* __restrict__ x, int64_t n_cases, int64_t C, int64_t T,
                                      const int64_t* __restrict__ case_lengths, DeviceKernels kernels, int64_t K,
                                      bool staged, double temperature, float* __restrict__ features,
                                      int64_t* __restrict__ argmax) {
  acc_t* staging = reinterpret_cast<acc_t*>(dynamic_shared_memory());
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  for (int64_t n = blockIdx.y; n < n_cases; n += gridDim.y) {
    const acc_t* series = x + n * C * T;
    if (staged) {
      __syncthreads();  // the previous case's readers are done
      for (int64_t v = threadIdx.x; v < C * T; v += blockDim.x) staging[v] = series[v];
      __syncthreads();
      series = staging;
    }
    if (k >= K) continue;  // no barrier below this point
    const KernelFields f = kernel_fields(kernels, k);
    const int64_t length = case_length(case_lengths, n, T);
    const int64_t out_len = rocket_output_length(length, f.length, f.dilation, f.padding);
    acc_t best = -static_cast<acc_t>(INFINITY);
    int64_t best_at = INT64_MAX;
    int64_t positive = 0;
    double soft = 0.0;
    for (int64_t base = 0; base < out_len; base += 32) {  // warp-uniform trip count
      const int64_t i = base + lane;
      const bool active = i < out_len;
      acc_t s = 0;
      if (active) {
        s = response<acc_t, kFma>(series, T, length, f, i);
        if (s > best) {  // strict: a lane keeps its first maximum
          best = s;
          best_at = i;
        }
        if (temperature > 0) soft += sigmoid(s, temperature);
      }
      positive += __popc(__ballot_sync(kFullMask, active && s > 0));
    }
    // First maximum over the warp: larger value, or equal value at an earlier position.
    for (int offset = 16; offset > 0; offset /= 2) {
      const acc_t other = __shfl_down_sync(kFullMask, best, offset);
      const int64_t other_at = __shfl_down_sync(kFullMask, best_at, offset);
      if (other > best || (other == best && other_at < best_at)) {
        best = other;
        best_at = other_at;
      }
      soft += __shfl_down_sync(kFullMask, soft, offset);
    }
    if (lane == 0) {
      float* out = features + n * 2 * K + 2 * k;
      if (out_len <= 0) {  // no output position: both features 0 (documented)
        out[0] = 0.0f;
        out[1] = 0.0f;
        argmax[n * K + k] = -1;
      } else {
        const double count = temperature > 0 ? soft : static_cast<double>(positive);
        out[0] = static_cast<float>(count / static_cast<double>(out_len));
        out[1] = static_cast<float>(best);
        argmax[n * K + k] = best_at;
      }
    }
  }
}

// d soft-PPV / d s(i) for one (case, kernel).
template <typename acc_t>
__device__ double soft_ppv_slope(acc_t s, double grad, double temperature, int64_t out_len) {
  const double sig = sigmoid(s, temperature);
  return grad * sig * (1.0 - sig) / (temperature * static_cast<double>(out_len));
}

// Series gradient: one block per case (grid-stride), kernels in order. Within one kernel the MAX
// term's taps (c, j) hit distinct series values; the soft-PPV term is applied tap by tap with a
// barrier between taps, positions spread over threads (distinct targets for a fixed tap). Every
// target receives its terms in the CPU kernel's order: the same float64 sums.
template <typename acc_t, bool kFma>
__global__ void rocket_series_grad_kernel(const acc_t* __restrict__ x, int64_t n_cases, int64_t C, int64_t T,
                                          const int64_t* __restrict__ case_lengths, DeviceKernels kernels, int64_t K,
                                          const float* __restrict__ grad, const int64_t* __restrict__ argmax,
                                          double temperature, double* __restrict__ x_grad) {
  for (int64_t n = blockIdx.x; n < n_cases; n += gridDim.x) {
    const acc_t* series = x + n * C * T;
    double* gx = x_grad + n * C * T;
    const int64_t length = case_length(case_lengths, n, T);
    for (int64_t k = 0; k < K; ++k) {
      const KernelFields f = kernel_fields(kernels, k);
      const int64_t at = argmax[n * K + k];
      if (at < 0) continue;  // uniform across the block
      const double g_max = grad[n * 2 * K + 2 * k + 1];
      for (int64_t tap = threadIdx.x; tap < f.n_channels * f.length; tap += blockDim.x) {
        const int64_t c = tap / f.length, j = tap % f.length, u = at - f.padding + j * f.dilation;
        if (g_max != 0.0 && u >= 0 && u < length) {
          double& target = gx[f.channels[c] * T + u];
          target = add_product(target, g_max, f.weights[c * f.length + j]);
        }
      }
      __syncthreads();
      const double g_ppv = grad[n * 2 * K + 2 * k];
      if (temperature > 0 && g_ppv != 0.0) {
        const int64_t out_len = rocket_output_length(length, f.length, f.dilation, f.padding);
        for (int64_t base = 0; base < out_len; base += blockDim.x) {
          const int64_t i = base + threadIdx.x;
          const double slope =
              i < out_len ? soft_ppv_slope(response<acc_t, kFma>(series, T, length, f, i), g_ppv, temperature, out_len)
                          : 0.0;
          // Taps in descending order: each target u then receives its terms by ascending position
          // i = u + padding - j·dilation, the CPU kernel's order, so the sums are the CPU's bits.
          for (int64_t j = f.length - 1; j >= 0; --j) {
            const int64_t u = i - f.padding + j * f.dilation;
            if (i < out_len && u >= 0 && u < length) {
              for (int64_t c = 0; c < f.n_channels; ++c) {
                double& target = gx[f.channels[c] * T + u];
                target = add_product(target, slope, f.weights[c * f.length + j]);
              }
            }
            __syncthreads();
          }
        }
      }
    }
  }
}

// Weight and bias gradients: one warp per kernel, cases in order. MAX: lanes over taps; soft PPV:
// lanes over positions, each tap's sum reduced by a fixed shuffle tree and added by lane 0, with a
// __syncwarp between the two (they add into the same taps).
template <typename acc_t, bool kFma>
__global__ void rocket_kernel_grad_kernel(const acc_t* __restrict__ x, int64_t n_cases, int64_t C, int64_t T,
                                          const int64_t* __restrict__ case_lengths, DeviceKernels kernels, int64_t K,
                                          const float* __restrict__ grad, const int64_t* __restrict__ argmax,
                                          double temperature, double* __restrict__ w_grad, double* __restrict__ b_grad) {
  const int lane = threadIdx.x % 32;
  const int64_t k = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (k >= K) return;  // whole warps exit together
  const KernelFields f = kernel_fields(kernels, k);
  double* gw = w_grad + kernels.weight_offsets[k];
  const int64_t taps = f.n_channels * f.length;
  for (int64_t n = 0; n < n_cases; ++n) {
    const int64_t at = argmax[n * K + k];
    if (at < 0) continue;
    const acc_t* series = x + n * C * T;
    const int64_t length = case_length(case_lengths, n, T);
    const double g_max = grad[n * 2 * K + 2 * k + 1];
    if (g_max != 0.0) {
      for (int64_t tap = lane; tap < taps; tap += 32) {
        const int64_t c = tap / f.length, j = tap % f.length, u = at - f.padding + j * f.dilation;
        if (u >= 0 && u < length) gw[tap] = add_product(gw[tap], g_max, static_cast<double>(series[f.channels[c] * T + u]));
      }
      if (lane == 0) b_grad[k] += g_max;
      // Lane 0 adds into every tap below and the lanes of the next case add into theirs: shuffles
      // do not order memory, __syncwarp does (racecheck found this missing).
      __syncwarp();
    }
    const double g_ppv = grad[n * 2 * K + 2 * k];
    if (temperature > 0 && g_ppv != 0.0) {
      const int64_t out_len = rocket_output_length(length, f.length, f.dilation, f.padding);
      for (int64_t base = 0; base < out_len; base += 32) {
        const int64_t i = base + lane;
        const double slope =
            i < out_len ? soft_ppv_slope(response<acc_t, kFma>(series, T, length, f, i), g_ppv, temperature, out_len)
                        : 0.0;
        double bias_sum = slope;
        for (int offset = 16; offset > 0; offset /= 2) bias_sum += __shfl_down_sync(kFullMask, bias_sum, offset);
        if (lane == 0) b_grad[k] += bias_sum;
        for (int64_t tap = 0; tap < taps; ++tap) {
          const int64_t c = tap / f.length, j = tap % f.length, u = i - f.padding + j * f.dilation;
          double term = (i < out_len && u >= 0 && u < length)
                            ? rounded_product(slope, static_cast<double>(series[f.channels[c] * T + u]))
                            : 0.0;
          for (int offset = 16; offset > 0; offset /= 2) term += __shfl_down_sync(kFullMask, term, offset);
          if (lane == 0) gw[tap] += term;
        }
      }
      __syncwarp();  // lane 0's sums before the next case's lanes add into the same taps
    }
  }
}

// One thread per (case, channel) row: numpy's mean and std in the row's precision. The output row
// doubles as the scratch numpy_std needs before it receives the normalised values.
template <typename scalar_t>
__global__ void rocket_normalise_kernel(const scalar_t* __restrict__ x, int64_t rows, int64_t C, int64_t T,
                                        const int64_t* __restrict__ case_lengths, scalar_t* __restrict__ out) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const int64_t valid = case_length(case_lengths, row / C, T);
  const scalar_t* r = x + row * T;
  scalar_t* o = out + row * T;
  const scalar_t mean = numpy_mean(r, valid);
  scalar_t sd = numpy_std(r, valid, mean, o);
  if (sd == scalar_t(0)) sd = scalar_t(1);
  for (int64_t t = 0; t < valid; ++t) o[t] = (r[t] - mean) / sd;
  for (int64_t t = valid; t < T; ++t) o[t] = scalar_t(0);
}

// ---------------------------------------------------------------------------------------------
// Launch sequences, shared by the CUDA ops (convolve_ops.h) and the torch-free test harness
// (tests/cuda_emu/harness.cpp). `launch(kernel, Grid, threads, smem_bytes, args...)` runs one
// launch; `launch.grid_cap(limit)` is the most blocks a grid-stride axis gets (../../common/device.cuh).

// The series x is (n_cases, C, T) in acc_t; features (n_cases, 2K) and argmax (n_cases, K) out.
template <typename acc_t, bool kFma, typename Launch>
void launch_forward(const Launch& launch, const acc_t* x, int64_t n_cases, int64_t C, int64_t T,
                    const int64_t* case_lengths, const DeviceKernels& kernels, int64_t K, double temperature,
                    float* features, int64_t* argmax) {
  const int64_t series_bytes = C * T * static_cast<int64_t>(sizeof(acc_t));
  const bool staged = series_bytes <= kStagingBytes;
  launch(rocket_forward_kernel<acc_t, kFma>, Grid((K + kWarps - 1) / kWarps, min_of(n_cases, launch.grid_cap(kMaxGridY))),
         kThreads, staged ? series_bytes : 0, x, n_cases, C, T, case_lengths, kernels, K, staged, temperature, features,
         argmax);
}

// Gradients in float64, zero-initialised by the caller: x_grad like x, w_grad and b_grad like the
// kernels' weights and biases.
template <typename acc_t, bool kFma, typename Launch>
void launch_backward(const Launch& launch, const acc_t* x, int64_t n_cases, int64_t C, int64_t T,
                     const int64_t* case_lengths, const DeviceKernels& kernels, int64_t K, const float* grad,
                     const int64_t* argmax, double temperature, double* x_grad, double* w_grad, double* b_grad) {
  launch(rocket_series_grad_kernel<acc_t, kFma>, Grid(min_of(n_cases, launch.grid_cap(kMaxSeriesGradBlocks))),
         kThreads, 0, x, n_cases, C, T, case_lengths, kernels, K, grad, argmax, temperature, x_grad);
  launch(rocket_kernel_grad_kernel<acc_t, kFma>, Grid((K * 32 + kThreads - 1) / kThreads), kThreads, 0, x, n_cases, C,
         T, case_lengths, kernels, K, grad, argmax, temperature, w_grad, b_grad);
}

template <typename scalar_t, typename Launch>
void launch_normalise(const Launch& launch, const scalar_t* x, int64_t rows, int64_t C, int64_t T,
                      const int64_t* case_lengths, scalar_t* out) {
  launch(rocket_normalise_kernel<scalar_t>, Grid((rows + kNormaliseThreads - 1) / kNormaliseThreads),
         kNormaliseThreads, 0, x, rows, C, T, case_lengths, out);
}

}  // namespace rocket_cuda
}  // namespace softdtw_torch
