// Hydra's transform and backward on the GPU with the kernels of transform.cuh: validation (as on
// the CPU), allocation and the launch. Templated on how a kernel is launched
// (../../common/device.cuh), so the CUDA ops (kernel.cu) and the CPU emulation tests
// (tests/cuda_emu) run the same code.
#pragma once

#include <ATen/ATen.h>

#include <tuple>

#include "../problem.h"
#include "transform.cuh"

namespace softdtw_torch {
namespace hydra {

inline Shape shape_of(const TransformProblem& p) {
  return {p.n_cases,           p.n_channels, p.n_timepoints, p.n_dilations, p.n_representations,
          p.n_groups,          p.n_kernels,  p.channels_per_group};
}

inline const int64_t* lengths_or_null(const TransformProblem& p) {
  return p.x_lengths.defined() ? p.x_lengths.data_ptr<int64_t>() : nullptr;
}

template <typename Launch>
at::Tensor transform_op(const Launch& launch, const at::Tensor& x, const at::Tensor& weights,
                        const at::Tensor& channels, const std::optional<at::Tensor>& x_lengths) {
  const TransformProblem p = prepare_transform(kTransformOp, x, weights, channels, x_lengths);
  at::Tensor out = at::empty({p.n_cases, p.n_features()}, p.x.options());
  if (p.n_cases == 0) return out;
  AT_DISPATCH_FLOATING_TYPES(p.x.scalar_type(), "hydra_transform", [&] {
    launch_transform(launch, p.x.data_ptr<scalar_t>(), p.weights.data_ptr<scalar_t>(), p.channels.data_ptr<int64_t>(),
                     lengths_or_null(p), out.data_ptr<scalar_t>(), shape_of(p));
  });
  check_features_finite(out);
  return out;
}

template <typename Launch>
std::tuple<at::Tensor, at::Tensor> backward_op(const Launch& launch, const at::Tensor& grad, const at::Tensor& x,
                                               const at::Tensor& weights, const at::Tensor& channels,
                                               const std::optional<at::Tensor>& x_lengths) {
  const TransformProblem p = prepare_transform(kBackwardOp, x, weights, channels, x_lengths);
  TORCH_CHECK_VALUE(grad.dim() == 2 && grad.size(0) == p.n_cases && grad.size(1) == p.n_features(), kBackwardOp,
                    ": expected grad of shape (", p.n_cases, ", ", p.n_features(), "), got shape ", grad.sizes());
  const at::Tensor g = grad.to(x.device(), p.x.scalar_type()).contiguous();
  at::Tensor grad_rows = at::zeros({p.n_cases, p.n_dilations, p.n_representations, p.n_groups, p.n_timepoints},
                                   p.x.options());
  at::Tensor grad_w =
      at::zeros({p.n_cases, p.n_dilations, p.n_representations, p.n_groups, p.n_kernels, kTaps}, p.x.options());
  if (p.n_cases == 0) return {grad_rows, grad_w};
  AT_DISPATCH_FLOATING_TYPES(p.x.scalar_type(), "_hydra_transform_backward", [&] {
    launch_backward(launch, g.data_ptr<scalar_t>(), p.x.data_ptr<scalar_t>(), p.weights.data_ptr<scalar_t>(),
                    p.channels.data_ptr<int64_t>(), lengths_or_null(p), grad_rows.data_ptr<scalar_t>(),
                    grad_w.data_ptr<scalar_t>(), shape_of(p));
  });
  return {grad_rows, grad_w};
}

}  // namespace hydra
}  // namespace softdtw_torch
