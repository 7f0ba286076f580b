// The CUDA ops' bodies of every family (csrc/softdtw/cuda/tiles_ops.h, csrc/rocket/cuda/convolve_ops.h,
// csrc/minirocket/cuda/transform_ops.h, csrc/multirocket/cuda/transform_ops.h, csrc/hydra/cuda/transform_ops.h, with
// their device code) run on the CPU
// under the CUDA emulator, as a torch extension the tests load (emulated_ops.py): same validation, same launch
// sequences, same kernels, with CPU tensors standing in for device memory. Only the CUDA glue of
// the kernel.cu files (device guard, stream, csrc/common/cuda_launch.h) is not exercised here.
#include <torch/extension.h>

#include <map>
#include <string>

#define SDTW_CUDA_EMULATION
#include "cuda_emu.h"
#include "emulated_launch.h"
#include "hydra/cuda/transform_ops.h"
#include "minirocket/cuda/transform_ops.h"
#include "multirocket/cuda/transform_ops.h"
#include "rocket/cuda/convolve_ops.h"
#include "softdtw/cuda/tiles_ops.h"
#include "softdtw/ops.h"

// rocket/problem.h includes the public header, whose link anchor the library defines; this module
// is not the library and defines it itself.
namespace softdtw_torch::detail {
bool link_anchor() { return true; }
}  // namespace softdtw_torch::detail

// A SoftDTW op body (tiles::*_op) run with the emulated launcher.
template <auto body>
struct Emulated {
  template <typename... Args>
  static auto run(const Args&... args) {
    return body(EmulatedLaunch{}, args...);
  }
};

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using Tensor = at::Tensor;
  using OptTensor = std::optional<at::Tensor>;
  namespace tiles = softdtw_torch::tiles;
  namespace sdtw = softdtw_torch::softdtw;  // the signatures: each body takes the bundle, each binding the flat list
  const EmulatedLaunch launch{};
  m.def("from_cost_forward", &sdtw::FromCostForward::kernel_of<Emulated<&tiles::from_cost_forward_op<EmulatedLaunch>>>);
  m.def("from_cost_backward",
        &sdtw::FromCostBackward::kernel_of<Emulated<&tiles::from_cost_backward_op<EmulatedLaunch>>>);
  m.def("fused_forward", &sdtw::FusedForward::kernel_of<Emulated<&tiles::fused_forward_op<EmulatedLaunch>>>);
  m.def("fused_backward", &sdtw::FusedBackward::kernel_of<Emulated<&tiles::fused_backward_op<EmulatedLaunch>>>);
  m.def("from_cost_jvp", &sdtw::FromCostJvp::kernel_of<Emulated<&tiles::from_cost_jvp_op<EmulatedLaunch>>>);
  m.def("fused_jvp", &sdtw::FusedJvp::kernel_of<Emulated<&tiles::fused_jvp_op<EmulatedLaunch>>>);
  m.def("from_cost_hvp", &sdtw::FromCostHvp::kernel_of<Emulated<&tiles::from_cost_hvp_op<EmulatedLaunch>>>);
  m.def("fused_hvp", &sdtw::FusedHvp::kernel_of<Emulated<&tiles::fused_hvp_op<EmulatedLaunch>>>);
  m.def("dtw_path", &sdtw::DtwPath::kernel_of<Emulated<&tiles::dtw_path_op<EmulatedLaunch>>>);
  m.def("itakura_rows", [=](const Tensor& n, const Tensor& m, int64_t columns, double slope) {
    return tiles::itakura_rows_op(launch, n, m, columns, slope);
  });
  // Dynamic shared memory per block of every kernel the ops launch, in bytes.
  m.def("shared_memory_bytes", [](bool float64) {
    auto of = [](auto zero) {
      using T = decltype(zero);
      using Sq = tiles::SquaredEuclideanCosts<T>;
      using Cost = tiles::CostsFromTensor<T>;
      using SqTangents = tiles::SquaredEuclideanTangents<T>;
      using CostTangents = tiles::TangentsFromTensor<T>;
      return std::map<std::string, int64_t>{
          {"forward from cost", tiles::forward_smem_bytes<T, Cost>()},
          {"forward fused", tiles::forward_smem_bytes<T, Sq>()},
          {"backward from cost", tiles::backward_smem_bytes<T, tiles::RFromTable<T>, tiles::WriteCostGradient<T>>()},
          {"backward fused",
           tiles::backward_smem_bytes<T, tiles::RFromTable<T>, tiles::AccumulateSequenceGradients<T>>()},
          {"backward fused checkpointed",
           tiles::backward_smem_bytes<T, tiles::RFromCheckpoints<T, Sq>, tiles::AccumulateSequenceGradients<T>>()},
          {"tangent forward from cost", tiles::forward_smem_bytes<T, Cost, CostTangents>()},
          {"tangent forward fused", tiles::forward_smem_bytes<T, Sq, SqTangents>()},
          {"tangent backward from cost",
           tiles::backward_smem_bytes<T, tiles::RAndTangentFromCheckpoints<T, Cost, CostTangents>,
                                      tiles::WriteCostGradientTangent<T>>()},
          {"tangent backward fused",
           tiles::backward_smem_bytes<T, tiles::RAndTangentFromCheckpoints<T, Sq, SqTangents>,
                                      tiles::AccumulateSequenceGradientTangents<T>>()},
      };
    };
    return float64 ? of(0.0) : of(0.0f);
  });
  m.def("rocket_convolve_forward",
        [=](const Tensor& x, const Tensor& weights, const Tensor& lengths, const Tensor& biases, const Tensor& dilations,
            const Tensor& paddings, const Tensor& num_channel_indices, const Tensor& channel_indices,
            const std::string& accumulate, const OptTensor& x_lengths, std::optional<double> temperature) {
          return softdtw_torch::rocket_cuda::convolve_forward_op(launch, x, weights, lengths, biases, dilations,
                                                                 paddings, num_channel_indices, channel_indices,
                                                                 accumulate, x_lengths, temperature);
        });
  m.def("rocket_convolve_backward",
        [=](const Tensor& grad, const Tensor& x, const Tensor& weights, const Tensor& lengths, const Tensor& biases,
            const Tensor& dilations, const Tensor& paddings, const Tensor& num_channel_indices,
            const Tensor& channel_indices, const Tensor& argmax, const std::string& accumulate,
            const OptTensor& x_lengths, std::optional<double> temperature) {
          return softdtw_torch::rocket_cuda::convolve_backward_op(launch, grad, x, weights, lengths, biases, dilations,
                                                                  paddings, num_channel_indices, channel_indices,
                                                                  argmax, accumulate, x_lengths, temperature);
        });
  m.def("rocket_normalise", [=](const Tensor& x, const OptTensor& x_lengths) {
    return softdtw_torch::rocket_cuda::normalise_op(launch, x, x_lengths);
  });
  m.def("minirocket_transform",
        [=](const Tensor& x, const Tensor& num_channels_per_combination, const Tensor& channel_indices,
            const Tensor& dilations, const Tensor& num_features_per_dilation, const Tensor& biases,
            const OptTensor& x_lengths) {
          return softdtw_torch::minirocket::transform_op(launch, x, num_channels_per_combination, channel_indices,
                                                         dilations, num_features_per_dilation, biases, x_lengths);
        });
  m.def("multirocket_transform",
        [=](const Tensor& x, const Tensor& num_channels_per_combination, const Tensor& channel_indices,
            const Tensor& dilations, const Tensor& num_features_per_dilation, const Tensor& biases,
            const Tensor& diff_dilations, const Tensor& diff_num_features_per_dilation, const Tensor& diff_biases,
            const OptTensor& x_lengths) {
          return softdtw_torch::multirocket::transform_op(launch, x, num_channels_per_combination, channel_indices,
                                                          dilations, num_features_per_dilation, biases, diff_dilations,
                                                          diff_num_features_per_dilation, diff_biases, x_lengths);
        });
  m.def("hydra_transform",
        [=](const Tensor& x, const Tensor& weights, const Tensor& channels, const OptTensor& x_lengths) {
          return softdtw_torch::hydra::transform_op(launch, x, weights, channels, x_lengths);
        });
  m.def("hydra_transform_backward", [=](const Tensor& grad, const Tensor& x, const Tensor& weights,
                                        const Tensor& channels, const OptTensor& x_lengths) {
    return softdtw_torch::hydra::backward_op(launch, grad, x, weights, channels, x_lengths);
  });
  // The combination layout minirocket_transform uploads (csrc/minirocket/problem.h), for the
  // torch-free harness: (combinations (n, 7) int64, channel indices int32, biases float32).
  m.def("minirocket_layout", [](const Tensor& x, const Tensor& num_channels_per_combination,
                                const Tensor& channel_indices, const Tensor& dilations,
                                const Tensor& num_features_per_dilation, const Tensor& biases) {
    const auto p = softdtw_torch::minirocket::prepare_transform(x, num_channels_per_combination, channel_indices,
                                                                dilations, num_features_per_dilation, biases,
                                                                std::nullopt);
    const int64_t n = static_cast<int64_t>(p.combinations.size());
    return std::make_tuple(
        at::from_blob(const_cast<softdtw_torch::minirocket::Combination*>(p.combinations.data()), {n, 7}, at::kLong)
            .clone(),
        at::tensor(at::ArrayRef<int32_t>(p.channel_indices), at::kInt),
        at::tensor(at::ArrayRef<float>(p.biases), at::kFloat));
  });
  // The layout multirocket_transform uploads (make_layout in csrc/multirocket/cuda/transform_ops.h),
  // for the torch-free harness: (combinations (n, 7) int64, feature_combination int32, channel
  // indices int32, biases float32).
  m.def("multirocket_layout",
        [](const Tensor& x, const Tensor& num_channels_per_combination, const Tensor& channel_indices,
           const Tensor& dilations, const Tensor& num_features_per_dilation, const Tensor& biases,
           const Tensor& diff_dilations, const Tensor& diff_num_features_per_dilation, const Tensor& diff_biases) {
          namespace multirocket = softdtw_torch::multirocket;
          const auto layout = multirocket::make_layout(multirocket::prepare_transform(
              x, num_channels_per_combination, channel_indices, dilations, num_features_per_dilation, biases,
              diff_dilations, diff_num_features_per_dilation, diff_biases, std::nullopt));
          const int64_t n = static_cast<int64_t>(layout.combinations.size());
          return std::make_tuple(
              at::from_blob(const_cast<softdtw_torch::minirocket::Combination*>(layout.combinations.data()), {n, 7},
                            at::kLong)
                  .clone(),
              at::tensor(at::ArrayRef<int32_t>(layout.feature_combination), at::kInt),
              at::tensor(at::ArrayRef<int32_t>(layout.channel_indices), at::kInt),
              at::tensor(at::ArrayRef<float>(layout.biases), at::kFloat));
        });
  m.def("launches", [] { return static_cast<int64_t>(emu::launches()); });
  m.def("reset_launch_count", [] { emu::reset_launch_count(); });
}
