// The SoftDTW ops' C++ signatures (one per schema in library.cpp, written once here) and their
// dispatcher handles, for the C++ code that composes them (composite.cpp, autograd.cpp, the
// public API in api.cpp).
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>

#include "../common/op.h"

namespace softdtw_torch::softdtw {

using Tensor = at::Tensor;
using OptInt = std::optional<int64_t>;
using OptDouble = std::optional<double>;
using Pair = std::tuple<at::Tensor, at::Tensor>;

// Public ops.
using SoftDTWFromCost = Tensor(const Tensor& D, double gamma, OptInt bandwidth, const OptTensor& x_lengths,
                               const OptTensor& y_lengths, OptDouble itakura_max_slope);
using SoftDTWFused = Tensor(const Tensor& x, const Tensor& y, double gamma, OptInt bandwidth,
                            const OptTensor& x_lengths, const OptTensor& y_lengths, bool checkpoint,
                            OptDouble itakura_max_slope);
using SoftDTW = Tensor(const Tensor& x, const Tensor& y, double gamma, OptInt bandwidth, bool normalize,
                       std::optional<bool> fused, const OptTensor& x_lengths, const OptTensor& y_lengths,
                       c10::string_view cost, bool checkpoint, OptDouble itakura_max_slope);
using PairwiseCost = Tensor(const Tensor& x, const Tensor& y, c10::string_view cost);
using AlignmentFromCost = Pair(const Tensor& D, double gamma, OptInt bandwidth, const OptTensor& x_lengths,
                               const OptTensor& y_lengths, OptDouble itakura_max_slope);
using Alignment = Pair(const Tensor& x, const Tensor& y, double gamma, OptInt bandwidth, const OptTensor& x_lengths,
                       const OptTensor& y_lengths, c10::string_view cost, OptDouble itakura_max_slope);

using SoftDTWSharp = Tensor(const Tensor& x, const Tensor& y, double gamma, OptInt bandwidth, bool normalize,
                            std::optional<bool> fused, const OptTensor& x_lengths, const OptTensor& y_lengths,
                            c10::string_view cost, OptDouble itakura_max_slope);
using SoftDTWSharpFromCost = Tensor(const Tensor& D, double gamma, OptInt bandwidth, const OptTensor& x_lengths,
                                    const OptTensor& y_lengths, OptDouble itakura_max_slope);
using Dilate = std::tuple<Tensor, Tensor, Tensor>(const Tensor& prediction, const Tensor& target, double alpha,
                                                  double gamma, OptInt bandwidth, const OptTensor& penalty,
                                                  const OptTensor& prediction_lengths, const OptTensor& target_lengths,
                                                  OptDouble itakura_max_slope);

// Forward / backward pairs behind the autograd kernels.
using FromCostForward = Pair(const Tensor& D, double gamma, OptInt bandwidth, OptDouble itakura_max_slope,
                             const OptTensor& x_lengths, const OptTensor& y_lengths, bool keep_table);
using FromCostBackward = Tensor(const Tensor& grad, const Tensor& D, const Tensor& R, double gamma, OptInt bandwidth,
                                OptDouble itakura_max_slope, const OptTensor& x_lengths, const OptTensor& y_lengths);
using FusedForward = Pair(const Tensor& x, const Tensor& y, double gamma, OptInt bandwidth, OptDouble itakura_max_slope,
                          const OptTensor& x_lengths, const OptTensor& y_lengths, bool keep_table);
using FusedBackward = Pair(const Tensor& grad, const Tensor& x, const Tensor& y, const Tensor& R, double gamma,
                           OptInt bandwidth, OptDouble itakura_max_slope, const OptTensor& x_lengths,
                           const OptTensor& y_lengths);
using FusedForwardWithGrad = std::tuple<Tensor, Tensor, Tensor>(const Tensor& x, const Tensor& y, double gamma,
                                                                OptInt bandwidth, OptDouble itakura_max_slope,
                                                                const OptTensor& x_lengths, const OptTensor& y_lengths);
using FusedBackwardFromGrad = Pair(const Tensor& grad, const Tensor& x, const Tensor& y, const Tensor& x_grad,
                                   const Tensor& y_grad, double gamma, OptInt bandwidth, OptDouble itakura_max_slope,
                                   const OptTensor& x_lengths, const OptTensor& y_lengths);
using FusedForwardCheckpointed = std::tuple<Tensor, Tensor, Tensor>(const Tensor& x, const Tensor& y, double gamma,
                                                                    OptInt bandwidth, OptDouble itakura_max_slope,
                                                                    const OptTensor& x_lengths,
                                                                    const OptTensor& y_lengths);
using FusedBackwardCheckpointed = Pair(const Tensor& grad, const Tensor& x, const Tensor& y, const Tensor& row_borders,
                                       const Tensor& column_borders, double gamma, OptInt bandwidth,
                                       OptDouble itakura_max_slope, const OptTensor& x_lengths,
                                       const OptTensor& y_lengths);
using FusedValueAndGrad = Pair(const Tensor& x, const Tensor& y, const Tensor& weights, double gamma, OptInt bandwidth,
                               OptDouble itakura_max_slope, const OptTensor& x_lengths, const OptTensor& y_lengths);

// Hard DTW's values and optimal paths (library.cpp).
using DtwPath = std::tuple<Tensor, Tensor, Tensor>(const Tensor& x, const Tensor& y, OptInt bandwidth,
                                                   OptDouble itakura_max_slope, const OptTensor& x_lengths,
                                                   const OptTensor& y_lengths);

// The Itakura parallelogram's rows per column (library.cpp).
using ItakuraRows = Tensor(const Tensor& n, const Tensor& m, int64_t columns, double max_slope);

// Forward mode and second order (library.cpp).
using FromCostJvp = Pair(const Tensor& D, const Tensor& D_tangent, double gamma, OptInt bandwidth,
                         OptDouble itakura_max_slope, const OptTensor& x_lengths, const OptTensor& y_lengths);
using FusedJvp = Pair(const Tensor& x, const Tensor& y, const OptTensor& x_tangent, const OptTensor& y_tangent,
                      double gamma, OptInt bandwidth, OptDouble itakura_max_slope, const OptTensor& x_lengths,
                      const OptTensor& y_lengths);
using FromCostHvp = std::tuple<Tensor, Tensor, Tensor>(const Tensor& grad, const OptTensor& grad_tangent,
                                                       const Tensor& D, const OptTensor& D_tangent, double gamma,
                                                       OptInt bandwidth, OptDouble itakura_max_slope,
                                                       const OptTensor& x_lengths, const OptTensor& y_lengths,
                                                       bool with_grad);
using FusedHvp = std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>(
    const Tensor& grad, const OptTensor& grad_tangent, const Tensor& x, const Tensor& y, const OptTensor& x_tangent,
    const OptTensor& y_tangent, double gamma, OptInt bandwidth, OptDouble itakura_max_slope, const OptTensor& x_lengths,
    const OptTensor& y_lengths, bool with_grad);

namespace ops {
inline const Op<SoftDTWFromCost> soft_dtw_from_cost{"softdtw_torch::soft_dtw_from_cost"};
inline const Op<SoftDTWFused> soft_dtw_fused{"softdtw_torch::soft_dtw_fused"};
inline const Op<SoftDTW> soft_dtw{"softdtw_torch::soft_dtw"};
inline const Op<PairwiseCost> pairwise_cost{"softdtw_torch::pairwise_cost"};
inline const Op<AlignmentFromCost> soft_dtw_alignment_from_cost{"softdtw_torch::soft_dtw_alignment_from_cost"};
inline const Op<Alignment> soft_dtw_alignment{"softdtw_torch::soft_dtw_alignment"};
inline const Op<SoftDTWSharp> soft_dtw_sharp{"softdtw_torch::soft_dtw_sharp"};
inline const Op<SoftDTWSharpFromCost> soft_dtw_sharp_from_cost{"softdtw_torch::soft_dtw_sharp_from_cost"};
inline const Op<Dilate> dilate{"softdtw_torch::dilate"};
inline const Op<FromCostForward> from_cost_forward{"softdtw_torch::_soft_dtw_from_cost_forward"};
inline const Op<FromCostBackward> from_cost_backward{"softdtw_torch::_soft_dtw_from_cost_backward"};
inline const Op<FusedForward> fused_forward{"softdtw_torch::_soft_dtw_fused_forward"};
inline const Op<FusedBackward> fused_backward{"softdtw_torch::_soft_dtw_fused_backward"};
inline const Op<FusedForwardWithGrad> fused_forward_with_grad{"softdtw_torch::_soft_dtw_fused_forward_with_grad"};
inline const Op<FusedBackwardFromGrad> fused_backward_from_grad{"softdtw_torch::_soft_dtw_fused_backward_from_grad"};
inline const Op<FusedForwardCheckpointed> fused_forward_checkpointed{
    "softdtw_torch::_soft_dtw_fused_forward_checkpointed"};
inline const Op<FusedBackwardCheckpointed> fused_backward_checkpointed{
    "softdtw_torch::_soft_dtw_fused_backward_checkpointed"};
inline const Op<FusedValueAndGrad> fused_value_and_grad{"softdtw_torch::_soft_dtw_fused_value_and_grad"};
inline const Op<FromCostJvp> from_cost_jvp{"softdtw_torch::_soft_dtw_from_cost_jvp"};
inline const Op<FusedJvp> fused_jvp{"softdtw_torch::_soft_dtw_fused_jvp"};
inline const Op<FromCostHvp> from_cost_hvp{"softdtw_torch::_soft_dtw_from_cost_hvp"};
inline const Op<FusedHvp> fused_hvp{"softdtw_torch::_soft_dtw_fused_hvp"};
inline const Op<DtwPath> dtw_path{"softdtw_torch::_dtw_path"};
}  // namespace ops

}  // namespace softdtw_torch::softdtw
