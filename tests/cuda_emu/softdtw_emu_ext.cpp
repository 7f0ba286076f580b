// The CUDA SoftDTW ops' bodies (csrc/softdtw/cuda/tiles_ops.h, with the device code of
// tiles.cuh) run on the CPU under the CUDA emulator, as a torch extension the tests load:
// same validation, same launch sequence, same kernels, with CPU tensors standing in for device
// memory. Only the CUDA glue of csrc/softdtw/cuda/kernel.cu (device guard, stream, launch check) is not
// exercised here.
#include <torch/extension.h>

#include <map>
#include <string>

#define SDTW_CUDA_EMULATION
#include "cuda_emu.h"
#include "cuda/tiles_ops.h"

namespace {

struct EmulatedLaunch {
  template <typename... Params, typename... Args>
  void operator()(void (*kernel)(Params...), int64_t blocks, int threads, int64_t smem_bytes, Args... args) const {
    TORCH_CHECK(blocks <= INT_MAX, "too many blocks");
    emu::launch(dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads)),
                static_cast<size_t>(smem_bytes), kernel, args...);
  }
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using Tensor = at::Tensor;
  using OptTensor = std::optional<at::Tensor>;
  using OptInt = std::optional<int64_t>;
  namespace tiles = softdtw_torch::tiles;
  const EmulatedLaunch launch{};
  m.def("from_cost_forward", [=](const Tensor& D, double g, OptInt bw, const OptTensor& xl, const OptTensor& yl,
                                 bool keep) { return tiles::from_cost_forward_op(launch, D, g, bw, xl, yl, keep); });
  m.def("from_cost_backward", [=](const Tensor& grad, const Tensor& D, const Tensor& R, double g, OptInt bw,
                                  const OptTensor& xl, const OptTensor& yl) {
    return tiles::from_cost_backward_op(launch, grad, D, R, g, bw, xl, yl);
  });
  m.def("fused_forward", [=](const Tensor& x, const Tensor& y, double g, OptInt bw, const OptTensor& xl,
                             const OptTensor& yl, bool keep) { return tiles::fused_forward_op(launch, x, y, g, bw, xl, yl, keep); });
  m.def("fused_backward", [=](const Tensor& grad, const Tensor& x, const Tensor& y, const Tensor& R, double g, OptInt bw,
                              const OptTensor& xl, const OptTensor& yl) {
    return tiles::fused_backward_op(launch, grad, x, y, R, g, bw, xl, yl);
  });
  m.def("fused_forward_checkpointed", [=](const Tensor& x, const Tensor& y, double g, OptInt bw, const OptTensor& xl,
                                          const OptTensor& yl) {
    return tiles::fused_forward_checkpointed_op(launch, x, y, g, bw, xl, yl);
  });
  m.def("fused_backward_checkpointed", [=](const Tensor& grad, const Tensor& x, const Tensor& y, const Tensor& rows,
                                           const Tensor& cols, double g, OptInt bw, const OptTensor& xl,
                                           const OptTensor& yl) {
    return tiles::fused_backward_checkpointed_op(launch, grad, x, y, rows, cols, g, bw, xl, yl);
  });
  m.def("from_cost_jvp", [=](const Tensor& D, const Tensor& t, double g, OptInt bw, const OptTensor& xl,
                             const OptTensor& yl) { return tiles::from_cost_jvp_op(launch, D, t, g, bw, xl, yl); });
  m.def("fused_jvp", [=](const Tensor& x, const Tensor& y, const OptTensor& u, const OptTensor& v, double g, OptInt bw,
                         const OptTensor& xl, const OptTensor& yl) {
    return tiles::fused_jvp_op(launch, x, y, u, v, g, bw, xl, yl);
  });
  m.def("from_cost_hvp", [=](const Tensor& grad, const OptTensor& grad_tangent, const Tensor& D, const OptTensor& t,
                             double g, OptInt bw, const OptTensor& xl, const OptTensor& yl, bool with_grad) {
    return tiles::from_cost_hvp_op(launch, grad, grad_tangent, D, t, g, bw, xl, yl, with_grad);
  });
  m.def("fused_hvp", [=](const Tensor& grad, const OptTensor& grad_tangent, const Tensor& x, const Tensor& y,
                         const OptTensor& u, const OptTensor& v, double g, OptInt bw, const OptTensor& xl,
                         const OptTensor& yl, bool with_grad) {
    return tiles::fused_hvp_op(launch, grad, grad_tangent, x, y, u, v, g, bw, xl, yl, with_grad);
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
  m.def("launches", [] { return static_cast<int64_t>(emu::launches()); });
  m.def("reset_launch_count", [] { emu::reset_launch_count(); });
}
