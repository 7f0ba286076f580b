// The SoftDTW ops' C++ signatures (one per schema in library.cpp, written once here) and their
// dispatcher handles, for the C++ code that composes them (composite.cpp, autograd.cpp, the
// public API in api.cpp).
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>

#include "../common/op.h"
#include "args.h"

namespace softdtw_torch::softdtw {

using Tensor = at::Tensor;
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

// The private ops behind the autograd kernels (library.cpp): their tensors, the bundle (args.h),
// their trailing options.
using Triple = std::tuple<Tensor, Tensor, Tensor>;
// Forward / backward pairs.
using FromCostForward = Bundled<Pair, List<const Tensor& /*D*/>, List<bool /*keep_table*/>>;
using FromCostBackward = Bundled<Tensor, List<const Tensor& /*grad*/, const Tensor& /*D*/, const Tensor& /*R*/>>;
// The fused pair: the forward keeps what `keep` names (plan.h) in two cache tensors, the backward
// reads them as `kept` says.
using FusedForward = Bundled<Triple, List<const Tensor& /*x*/, const Tensor& /*y*/>, List<c10::string_view /*keep*/>>;
using FusedBackward = Bundled<Pair,
                              List<const Tensor& /*grad*/, const Tensor& /*x*/, const Tensor& /*y*/,
                                   const Tensor& /*first*/, const Tensor& /*second*/>,
                              List<c10::string_view /*kept*/>>;
using FusedValueAndGrad = Bundled<Pair, List<const Tensor& /*x*/, const Tensor& /*y*/, const Tensor& /*weights*/>>;

// Hard DTW's values and optimal paths: the bundle without gamma (0).
using DtwPath = Bundled<Triple, List<const Tensor& /*x*/, const Tensor& /*y*/>, List<>, WithoutGamma>;

// The Itakura parallelogram's rows per column (no bundle).
using ItakuraRows = Tensor(const Tensor& n, const Tensor& m, int64_t columns, double max_slope);

// Forward mode and second order.
using FromCostJvp = Bundled<Pair, List<const Tensor& /*D*/, const Tensor& /*D_tangent*/>>;
using FusedJvp = Bundled<Pair, List<const Tensor& /*x*/, const Tensor& /*y*/, const OptTensor& /*x_tangent*/,
                                    const OptTensor& /*y_tangent*/>>;
using FromCostHvp = Bundled<Triple,
                            List<const Tensor& /*grad*/, const OptTensor& /*grad_tangent*/, const Tensor& /*D*/,
                                 const OptTensor& /*D_tangent*/>,
                            List<bool /*with_grad*/>>;
using FusedHvp = Bundled<std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>,
                         List<const Tensor& /*grad*/, const OptTensor& /*grad_tangent*/, const Tensor& /*x*/,
                              const Tensor& /*y*/, const OptTensor& /*x_tangent*/, const OptTensor& /*y_tangent*/>,
                         List<bool /*with_grad*/>>;

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
inline const FromCostForward::Handle from_cost_forward{"softdtw_torch::_soft_dtw_from_cost_forward"};
inline const FromCostBackward::Handle from_cost_backward{"softdtw_torch::_soft_dtw_from_cost_backward"};
inline const FusedForward::Handle fused_forward{"softdtw_torch::_soft_dtw_fused_forward"};
inline const FusedBackward::Handle fused_backward{"softdtw_torch::_soft_dtw_fused_backward"};
inline const FusedValueAndGrad::Handle fused_value_and_grad{"softdtw_torch::_soft_dtw_fused_value_and_grad"};
inline const FromCostJvp::Handle from_cost_jvp{"softdtw_torch::_soft_dtw_from_cost_jvp"};
inline const FusedJvp::Handle fused_jvp{"softdtw_torch::_soft_dtw_fused_jvp"};
inline const FromCostHvp::Handle from_cost_hvp{"softdtw_torch::_soft_dtw_from_cost_hvp"};
inline const FusedHvp::Handle fused_hvp{"softdtw_torch::_soft_dtw_fused_hvp"};
inline const DtwPath::Handle dtw_path{"softdtw_torch::_dtw_path"};
}  // namespace ops

}  // namespace softdtw_torch::softdtw
