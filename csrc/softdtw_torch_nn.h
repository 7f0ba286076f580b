// softdtw-torch's loss modules for LibTorch programs: torch::nn modules that store their
// hyper-parameters and call the functions of softdtw_torch.h, as the Python classes
// softdtw_torch.SoftDTW, SharpSoftDTW and DILATELoss do. Header-only; link against
// softdtw_torch::softdtw_torch as for softdtw_torch.h.
//
//   softdtw_torch::nn::DILATELoss loss(softdtw_torch::nn::DILATEOptions{0.5, 0.01});
//   torch::Tensor value = loss(prediction, target);  // reduced over the batch ("mean")
//
// `reduction` is "mean" (default), "sum" or "none" (the (B,) per-pair values), as torch's losses.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <optional>
#include <string>
#include <utility>

#include "softdtw_torch.h"

namespace softdtw_torch {
namespace nn {

inline void check_reduction(const char* module, const std::string& reduction) {
  TORCH_CHECK_VALUE(reduction == "mean" || reduction == "sum" || reduction == "none", module,
                    ": reduction must be one of 'none', 'mean', 'sum', got '", reduction, "'");
}

inline at::Tensor reduce(const at::Tensor& values, const std::string& reduction) {
  if (reduction == "mean") return values.mean();
  if (reduction == "sum") return values.sum();
  return values;
}

struct SoftDTWOptions {
  double gamma = 1.0;
  std::optional<int64_t> bandwidth = std::nullopt;
  bool normalize = false;
  std::optional<bool> fused = std::nullopt;
  std::string reduction = "mean";
  std::string cost = "sqeuclidean";
  bool checkpoint = false;
  std::optional<double> itakura_max_slope = std::nullopt;  // last: positional initializers keep their meaning
};

// The soft-DTW loss (or divergence, with normalize): differentiable twice.
class SoftDTWImpl : public torch::nn::Module {
 public:
  explicit SoftDTWImpl(SoftDTWOptions options = {}) : options(std::move(options)) {
    check_reduction("SoftDTW", this->options.reduction);
  }
  at::Tensor forward(const at::Tensor& x, const at::Tensor& y, const OptionalTensor& x_lengths = std::nullopt,
                     const OptionalTensor& y_lengths = std::nullopt) {
    const SoftDTWOptions& o = options;
    return reduce(soft_dtw(x, y, o.gamma, o.bandwidth, o.normalize, o.fused, x_lengths, y_lengths, o.cost, o.checkpoint,
                           o.itakura_max_slope),
                  o.reduction);
  }
  SoftDTWOptions options;
};
TORCH_MODULE(SoftDTW);

struct SharpSoftDTWOptions {
  double gamma = 1.0;
  std::optional<int64_t> bandwidth = std::nullopt;
  bool normalize = false;
  std::optional<bool> fused = std::nullopt;
  std::string reduction = "mean";
  std::string cost = "sqeuclidean";
  std::optional<double> itakura_max_slope = std::nullopt;  // last: positional initializers keep their meaning
};

// The sharp soft-DTW loss ⟨E, D⟩ (or the sharp divergence, with normalize): differentiable once.
class SharpSoftDTWImpl : public torch::nn::Module {
 public:
  explicit SharpSoftDTWImpl(SharpSoftDTWOptions options = {}) : options(std::move(options)) {
    check_reduction("SharpSoftDTW", this->options.reduction);
  }
  at::Tensor forward(const at::Tensor& x, const at::Tensor& y, const OptionalTensor& x_lengths = std::nullopt,
                     const OptionalTensor& y_lengths = std::nullopt) {
    const SharpSoftDTWOptions& o = options;
    return reduce(soft_dtw_sharp(x, y, o.gamma, o.bandwidth, o.normalize, o.fused, x_lengths, y_lengths, o.cost,
                                 o.itakura_max_slope),
                  o.reduction);
  }
  SharpSoftDTWOptions options;
};
TORCH_MODULE(SharpSoftDTW);

struct DILATEOptions {
  double alpha = 0.5;
  double gamma = 0.01;
  std::optional<int64_t> bandwidth = std::nullopt;
  OptionalTensor penalty = std::nullopt;
  std::string reduction = "mean";
  std::optional<double> itakura_max_slope = std::nullopt;  // last: positional initializers keep their meaning
};

// The DILATE loss α·shape + (1 − α)·temporal (softdtw_torch::dilate gives the two terms):
// differentiable once.
class DILATELossImpl : public torch::nn::Module {
 public:
  explicit DILATELossImpl(DILATEOptions options = {}) : options(std::move(options)) {
    check_reduction("DILATELoss", this->options.reduction);
    TORCH_CHECK_VALUE(this->options.alpha >= 0 && this->options.alpha <= 1, "DILATELoss: alpha must be in [0, 1], got ",
                      this->options.alpha);
  }
  at::Tensor forward(const at::Tensor& prediction, const at::Tensor& target,
                     const OptionalTensor& prediction_lengths = std::nullopt,
                     const OptionalTensor& target_lengths = std::nullopt) {
    const DILATEOptions& o = options;
    return reduce(dilate(prediction, target, o.alpha, o.gamma, o.bandwidth, o.penalty, prediction_lengths,
                         target_lengths, o.itakura_max_slope)
                      .loss,
                  o.reduction);
  }
  DILATEOptions options;
};
TORCH_MODULE(DILATELoss);

}  // namespace nn
}  // namespace softdtw_torch
