// The CUDA SoftDTW ops' code (csrc/ops/cuda/softdtw_tiles_ops.h and the device code of
// softdtw_tiles.cuh) run on the CPU under the CUDA emulator, as a torch extension the tests load:
// same validation, same launch sequence, same kernels, with CPU tensors standing in for device
// memory. Only the CUDA glue of softdtw_kernel.cu (device guard, stream, launch check) is not
// exercised here.
#include <torch/extension.h>

#define SDTW_CUDA_EMULATION
#include "cuda_emu.h"
#include "cuda/softdtw_tiles_ops.h"

namespace softdtw_torch {
namespace {

struct EmulatedLaunch {
  template <typename... Params, typename... Args>
  void operator()(void (*kernel)(Params...), int64_t blocks, int threads, int64_t smem_bytes, Args... args) const {
    TORCH_CHECK(blocks <= INT_MAX, "too many blocks");
    emu::launch(dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads)),
                static_cast<size_t>(smem_bytes), kernel, args...);
  }
};

std::tuple<at::Tensor, at::Tensor> from_cost_forward(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                                                     const std::optional<at::Tensor>& x_lengths,
                                                     const std::optional<at::Tensor>& y_lengths, bool keep_table) {
  const ForwardInputs in = prepare_from_cost(D, gamma, bandwidth, x_lengths, y_lengths);
  const tiles::TiledForward f = tiles::run_forward(EmulatedLaunch{}, in, /*fused=*/false, keep_table);
  return finish_forward(kFromCostOp, f.out, D.scalar_type(), kInvalidCostMessage);
}

at::Tensor from_cost_backward(const at::Tensor& grad, const at::Tensor& R, double gamma, std::optional<int64_t> bandwidth,
                              const std::optional<at::Tensor>& x_lengths, const std::optional<at::Tensor>& y_lengths) {
  const BackwardInputs in = prepare_from_cost_backward(grad, R, gamma, bandwidth, x_lengths, y_lengths);
  return tiles::run_from_cost_backward(EmulatedLaunch{}, in);
}

std::tuple<at::Tensor, at::Tensor> fused_forward(const at::Tensor& x, const at::Tensor& y, double gamma,
                                                 std::optional<int64_t> bandwidth,
                                                 const std::optional<at::Tensor>& x_lengths,
                                                 const std::optional<at::Tensor>& y_lengths, bool keep_table) {
  const ForwardInputs in = prepare_fused(x, y, gamma, bandwidth, x_lengths, y_lengths);
  const tiles::TiledForward f = tiles::run_forward(EmulatedLaunch{}, in, /*fused=*/true, keep_table);
  return finish_forward(kFusedOp, f.out, x.scalar_type(), kInvalidSequenceMessage);
}

std::tuple<at::Tensor, at::Tensor> fused_backward(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y,
                                                  const at::Tensor& R, double gamma, std::optional<int64_t> bandwidth,
                                                  const std::optional<at::Tensor>& x_lengths,
                                                  const std::optional<at::Tensor>& y_lengths) {
  const BackwardInputs in = prepare_fused_backward(grad, x, y, R, gamma, bandwidth, x_lengths, y_lengths);
  return tiles::run_fused_backward(EmulatedLaunch{}, in);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_forward_checkpointed(
    const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth,
    const std::optional<at::Tensor>& x_lengths, const std::optional<at::Tensor>& y_lengths) {
  const ForwardInputs in = prepare_fused(x, y, gamma, bandwidth, x_lengths, y_lengths);
  const tiles::TiledForward f =
      tiles::run_forward(EmulatedLaunch{}, in, /*fused=*/true, /*keep_table=*/false, /*checkpoint=*/true);
  auto [values, no_table] = finish_forward(kFusedOp, f.out, x.scalar_type(), kInvalidSequenceMessage);
  return {values, f.top_rows, f.left_cols};
}

std::tuple<at::Tensor, at::Tensor> fused_backward_checkpointed(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const at::Tensor& row_borders,
    const at::Tensor& column_borders, double gamma, std::optional<int64_t> bandwidth,
    const std::optional<at::Tensor>& x_lengths, const std::optional<at::Tensor>& y_lengths) {
  const BackwardInputs in = prepare_fused_checkpointed_backward(grad, x, y, gamma, bandwidth, x_lengths, y_lengths);
  const tiles::TiledForward checkpoints = tiles::checkpoints_of(in, row_borders, column_borders);
  return tiles::run_fused_backward(EmulatedLaunch{}, in, &checkpoints);
}

}  // namespace
}  // namespace softdtw_torch

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace softdtw_torch;
  m.def("from_cost_forward", &from_cost_forward);
  m.def("from_cost_backward", &from_cost_backward);
  m.def("fused_forward", &fused_forward);
  m.def("fused_backward", &fused_backward);
  m.def("fused_forward_checkpointed", &fused_forward_checkpointed);
  m.def("fused_backward_checkpointed", &fused_backward_checkpointed);
  m.def("launches", [] { return static_cast<int64_t>(emu::launches()); });
  m.def("reset_launch_count", [] { emu::reset_launch_count(); });
}
