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
#include "common/memory.h"
#include "cuda_emu.h"
#include "emulated_launch.h"
#include "hydra/cuda/transform_ops.h"
#include "hydra/ops.h"
#include "minirocket/cuda/transform_ops.h"
#include "minirocket/ops.h"
#include "multirocket/cuda/transform_ops.h"
#include "multirocket/ops.h"
#include "rocket/cuda/convolve_ops.h"
#include "rocket/ops.h"
#include "softdtw/cuda/tiles_ops.h"
#include "softdtw/ops.h"

// rocket/problem.h includes the public header, whose link anchor the library defines; this module
// is not the library and defines it itself.
namespace softdtw_torch::detail {
bool link_anchor() { return true; }
}  // namespace softdtw_torch::detail

// A CUDA op body (the other families' *_op) run with the emulated launcher.
template <auto body>
struct Emulated {
  template <typename... Args>
  static auto run(const Args&... args) {
    return body(EmulatedLaunch{}, args...);
  }
};

// A SoftDTW op body (softdtw/bodies.h) on the tile kernels' engine, launched by the emulator.
using EmulatedTileEngine = softdtw_torch::tiles::TileEngine<EmulatedLaunch>;
template <auto body>
using EmulatedTiles = softdtw_torch::softdtw::On<EmulatedTileEngine, body>;

// A binding of `kernel` (an op's flat kernel, its signature from the family's ops.h) that takes a
// std::string where the kernel takes a c10::string_view: pybind11 converts str to std::string, and
// before torch 2.7 c10::string_view is a class of torch's own that it does not convert.
template <typename T>
struct FromPython {
  using type = T;
};
template <>
struct FromPython<c10::string_view> {
  using type = const std::string&;
};
template <auto kernel>
struct Binding;
template <typename Ret, typename... Args, Ret (*kernel)(Args...)>
struct Binding<kernel> {
  static Ret call(typename FromPython<Args>::type... args) { return kernel(static_cast<Args>(args)...); }
};

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using Tensor = at::Tensor;
  namespace tiles = softdtw_torch::tiles;
  namespace sdtw = softdtw_torch::softdtw;  // the signatures: each body takes the bundle, each binding the flat list
  using EngineT = EmulatedTileEngine;
  m.def("from_cost_forward", &sdtw::FromCostForward::kernel_of<EmulatedTiles<&sdtw::from_cost_forward<EngineT>>>);
  m.def("from_cost_backward", &sdtw::FromCostBackward::kernel_of<EmulatedTiles<&sdtw::from_cost_backward<EngineT>>>);
  m.def("fused_forward", &Binding<&sdtw::FusedForward::kernel_of<EmulatedTiles<&sdtw::fused_forward<EngineT>>>>::call);
  m.def("fused_backward",
        &Binding<&sdtw::FusedBackward::kernel_of<EmulatedTiles<&sdtw::fused_backward<EngineT>>>>::call);
  m.def("from_cost_jvp", &sdtw::FromCostJvp::kernel_of<EmulatedTiles<&sdtw::from_cost_jvp<EngineT>>>);
  m.def("fused_jvp", &sdtw::FusedJvp::kernel_of<EmulatedTiles<&sdtw::fused_jvp<EngineT>>>);
  m.def("from_cost_hvp", &sdtw::FromCostHvp::kernel_of<EmulatedTiles<&sdtw::from_cost_hvp<EngineT>>>);
  m.def("fused_hvp", &sdtw::FusedHvp::kernel_of<EmulatedTiles<&sdtw::fused_hvp<EngineT>>>);
  m.def("dtw_path", &sdtw::DtwPath::kernel_of<EmulatedTiles<&sdtw::dtw_path<EngineT>>>);
  m.def("itakura_rows",
        &softdtw_torch::KernelOf<sdtw::ItakuraRows>::kernel<EmulatedTiles<&sdtw::itakura_rows<EngineT>>>);
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
  // The other families' CUDA op bodies, under their signatures (ops.h).
  using softdtw_torch::KernelOf;
  namespace rocket = softdtw_torch::rocket;
  namespace rocket_cuda = softdtw_torch::rocket_cuda;
  namespace minirocket = softdtw_torch::minirocket;
  namespace multirocket = softdtw_torch::multirocket;
  namespace hydra = softdtw_torch::hydra;
  m.def("rocket_convolve_forward", &Binding<&KernelOf<rocket::ConvolveForward>::kernel<
                                       Emulated<&rocket_cuda::convolve_forward_op<EmulatedLaunch>>>>::call);
  m.def("rocket_convolve_backward", &Binding<&KernelOf<rocket::ConvolveBackward>::kernel<
                                        Emulated<&rocket_cuda::convolve_backward_op<EmulatedLaunch>>>>::call);
  m.def("rocket_normalise", &KernelOf<rocket::Normalise>::kernel<Emulated<&rocket_cuda::normalise_op<EmulatedLaunch>>>);
  m.def("minirocket_transform",
        &KernelOf<minirocket::Transform>::kernel<Emulated<&minirocket::transform_op<EmulatedLaunch>>>);
  m.def("multirocket_transform",
        &KernelOf<multirocket::Transform>::kernel<Emulated<&multirocket::transform_op<EmulatedLaunch>>>);
  m.def("hydra_transform", &KernelOf<hydra::Transform>::kernel<Emulated<&hydra::transform_op<EmulatedLaunch>>>);
  m.def("hydra_transform_backward", &KernelOf<hydra::Backward>::kernel<Emulated<&hydra::backward_op<EmulatedLaunch>>>);
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
  // The largest problem the small-problem kernels take (EmulatedLaunch::small_kernel_cap); -1: their
  // own limits. Returns the previous setting.
  m.def("set_small_kernel_limit", [](int64_t limit) {
    const int64_t previous = EmulatedLaunch::small_kernel_limit;
    EmulatedLaunch::small_kernel_limit = limit;
    return previous;
  });
  // This module's own copy of the memory preflight's CPU limit (common/memory.cpp is compiled into
  // it): the limit the emulated ops' preflight compares with; None restores the default.
  m.def("set_memory_limit", [](std::optional<int64_t> bytes) { softdtw_torch::memory::set_cpu_limit(bytes); });
  m.def("memory_limit", [] { return softdtw_torch::memory::cpu_limit(); });
  m.def("launches", [] { return static_cast<int64_t>(emu::launches()); });
  m.def("reset_launch_count", [] { emu::reset_launch_count(); });
}
