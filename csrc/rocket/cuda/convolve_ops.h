// The ROCKET ops' work on the GPU with the kernels of convolve.cuh: validation (as on CPU),
// allocation, dispatch over the accumulation modes and the launches. Templated on how a kernel is
// launched (`launch(kernel, Grid, threads, smem_bytes, args...)`, ../../common/device.cuh), so
// the CUDA ops (kernel.cu) and the CPU emulation tests (tests/cuda_emu) run the same code; the
// launch sequences themselves are in convolve.cuh.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include "../problem.h"
#include "convolve.cuh"

namespace softdtw_torch {
namespace rocket_cuda {

inline DeviceKernels device_kernels(const RocketPlan& plan) {
  return {plan.kernels.weights.data_ptr<float>(),
          plan.kernels.biases.data_ptr<float>(),
          plan.kernels.lengths.data_ptr<int32_t>(),
          plan.kernels.dilations.data_ptr<int32_t>(),
          plan.kernels.paddings.data_ptr<int32_t>(),
          plan.kernels.num_channel_indices.data_ptr<int32_t>(),
          plan.kernels.channel_indices.data_ptr<int32_t>(),
          plan.weight_offsets.data_ptr<int64_t>(),
          plan.channel_offsets.data_ptr<int64_t>()};
}

inline const int64_t* lengths_ptr(const ConvolveInputs& in) {
  return in.lengths.defined() ? in.lengths.data_ptr<int64_t>() : nullptr;
}


template <typename Launch>
std::tuple<at::Tensor, at::Tensor> convolve_forward_op(
    const Launch& launch, const at::Tensor& x, const at::Tensor& weights, const at::Tensor& lengths,
    const at::Tensor& biases, const at::Tensor& dilations, const at::Tensor& paddings,
    const at::Tensor& num_channel_indices, const at::Tensor& channel_indices, c10::string_view accumulate,
    const std::optional<at::Tensor>& x_lengths, std::optional<double> ppv_temperature) {
  const ConvolveInputs in = prepare_convolve(
      x, {weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices}, accumulate, x_lengths,
      ppv_temperature);
  const int64_t n_cases = in.x.size(0), C = in.x.size(1), T = in.x.size(2), K = in.plan.n_kernels;
  at::Tensor features = at::empty({n_cases, 2 * K}, x.options().dtype(at::kFloat));
  at::Tensor argmax = at::empty({n_cases, K}, x.options().dtype(at::kLong));
  if (n_cases == 0 || K == 0) return {features, argmax};
  const double temperature = ppv_temperature.value_or(-1.0);
  dispatch_rocket_accumulate(in.mode, [&](auto mode) {
    using M = decltype(mode);
    using acc_t = typename M::acc;
    launch_forward<acc_t, M::fma>(launch, in.x.data_ptr<acc_t>(), n_cases, C, T, lengths_ptr(in),
                                  device_kernels(in.plan), K, temperature, features.data_ptr<float>(),
                                  argmax.data_ptr<int64_t>());
  });
  return {features, argmax};
}

template <typename Launch>
std::tuple<at::Tensor, at::Tensor, at::Tensor> convolve_backward_op(
    const Launch& launch, const at::Tensor& grad, const at::Tensor& x, const at::Tensor& weights,
    const at::Tensor& lengths, const at::Tensor& biases, const at::Tensor& dilations, const at::Tensor& paddings,
    const at::Tensor& num_channel_indices, const at::Tensor& channel_indices, const at::Tensor& argmax,
    c10::string_view accumulate, const std::optional<at::Tensor>& x_lengths, std::optional<double> ppv_temperature) {
  ConvolveBackward b = prepare_convolve_backward(
      grad, x, {weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices}, argmax,
      accumulate, x_lengths, ppv_temperature);
  const ConvolveInputs& in = b.in;
  const int64_t n_cases = in.x.size(0), C = in.x.size(1), T = in.x.size(2), K = in.plan.n_kernels;
  if (n_cases > 0 && K > 0) {
    const double temperature = ppv_temperature.value_or(-1.0);
    dispatch_rocket_accumulate(in.mode, [&](auto mode) {
      using M = decltype(mode);
      using acc_t = typename M::acc;
      launch_backward<acc_t, M::fma>(launch, in.x.data_ptr<acc_t>(), n_cases, C, T, lengths_ptr(in),
                                     device_kernels(in.plan), K, b.grad.data_ptr<float>(),
                                     b.argmax.data_ptr<int64_t>(), temperature, b.x_grad.data_ptr<double>(),
                                     b.w_grad.data_ptr<double>(), b.b_grad.data_ptr<double>());
    });
  }
  return b.results(x.scalar_type());
}

template <typename Launch>
at::Tensor normalise_op(const Launch& launch, const at::Tensor& x, const std::optional<at::Tensor>& x_lengths) {
  check_rocket_series(kRocketNormaliseOp, x);
  const at::Tensor lengths = checked_rocket_lengths(kRocketNormaliseOp, x_lengths, x);
  const at::Tensor xc = x.contiguous();
  at::Tensor out = at::empty_like(xc);
  const int64_t rows = x.size(0) * x.size(1);
  if (rows == 0) return out;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "rocket_normalise", [&] {
    launch_normalise(launch, xc.data_ptr<scalar_t>(), rows, x.size(1), x.size(2),
                     lengths.defined() ? lengths.data_ptr<int64_t>() : nullptr, out.data_ptr<scalar_t>());
  });
  return out;
}

}  // namespace rocket_cuda
}  // namespace softdtw_torch
