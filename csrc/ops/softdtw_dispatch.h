// Calls of the SoftDTW ops through the dispatcher (so autograd, fake tensors and device kernels
// are all honoured), for the C++ code that composes them.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ATen.h>

#include <optional>
#include <tuple>

namespace softdtw_torch::dispatch {

using OptTensor = std::optional<at::Tensor>;

inline c10::OperatorHandle op_handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

inline at::Tensor soft_dtw_from_cost(const at::Tensor& D, double gamma, std::optional<int64_t> bandwidth,
                                     const OptTensor& x_lengths, const OptTensor& y_lengths) {
  static auto op = op_handle("softdtw_torch::soft_dtw_from_cost")
                       .typed<at::Tensor(const at::Tensor&, double, std::optional<int64_t>, const OptTensor&,
                                         const OptTensor&)>();
  return op.call(D, gamma, bandwidth, x_lengths, y_lengths);
}

inline at::Tensor soft_dtw_fused(const at::Tensor& x, const at::Tensor& y, double gamma,
                                 std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                 const OptTensor& y_lengths, bool checkpoint = false) {
  static auto op = op_handle("softdtw_torch::soft_dtw_fused")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double, std::optional<int64_t>,
                                         const OptTensor&, const OptTensor&, bool)>();
  return op.call(x, y, gamma, bandwidth, x_lengths, y_lengths, checkpoint);
}

inline at::Tensor pairwise_cost(const at::Tensor& x, const at::Tensor& y, c10::string_view cost) {
  static auto op = op_handle("softdtw_torch::pairwise_cost")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, c10::string_view)>();
  return op.call(x, y, cost);
}

inline std::tuple<at::Tensor, at::Tensor> from_cost_forward(const at::Tensor& D, double gamma,
                                                            std::optional<int64_t> bandwidth,
                                                            const OptTensor& x_lengths, const OptTensor& y_lengths,
                                                            bool keep_table) {
  static auto op = op_handle("softdtw_torch::_soft_dtw_from_cost_forward")
                       .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, double, std::optional<int64_t>,
                                                                 const OptTensor&, const OptTensor&, bool)>();
  return op.call(D, gamma, bandwidth, x_lengths, y_lengths, keep_table);
}

inline at::Tensor from_cost_backward(const at::Tensor& grad, const at::Tensor& R, double gamma,
                                     std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                     const OptTensor& y_lengths) {
  static auto op = op_handle("softdtw_torch::_soft_dtw_from_cost_backward")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double, std::optional<int64_t>,
                                         const OptTensor&, const OptTensor&)>();
  return op.call(grad, R, gamma, bandwidth, x_lengths, y_lengths);
}

inline std::tuple<at::Tensor, at::Tensor> fused_forward(const at::Tensor& x, const at::Tensor& y, double gamma,
                                                        std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
                                                        const OptTensor& y_lengths, bool keep_table) {
  static auto op = op_handle("softdtw_torch::_soft_dtw_fused_forward")
                       .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, double,
                                                                 std::optional<int64_t>, const OptTensor&,
                                                                 const OptTensor&, bool)>();
  return op.call(x, y, gamma, bandwidth, x_lengths, y_lengths, keep_table);
}

inline std::tuple<at::Tensor, at::Tensor> fused_backward(const at::Tensor& grad, const at::Tensor& x,
                                                         const at::Tensor& y, const at::Tensor& R, double gamma,
                                                         std::optional<int64_t> bandwidth,
                                                         const OptTensor& x_lengths, const OptTensor& y_lengths) {
  static auto op = op_handle("softdtw_torch::_soft_dtw_fused_backward")
                       .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                                 const at::Tensor&, const at::Tensor&, double,
                                                                 std::optional<int64_t>, const OptTensor&,
                                                                 const OptTensor&)>();
  return op.call(grad, x, y, R, gamma, bandwidth, x_lengths, y_lengths);
}

inline std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_forward_checkpointed(
    const at::Tensor& x, const at::Tensor& y, double gamma, std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
    const OptTensor& y_lengths) {
  static auto op = op_handle("softdtw_torch::_soft_dtw_fused_forward_checkpointed")
                       .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
                           const at::Tensor&, const at::Tensor&, double, std::optional<int64_t>, const OptTensor&,
                           const OptTensor&)>();
  return op.call(x, y, gamma, bandwidth, x_lengths, y_lengths);
}

inline std::tuple<at::Tensor, at::Tensor> fused_backward_checkpointed(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const at::Tensor& row_borders,
    const at::Tensor& column_borders, double gamma, std::optional<int64_t> bandwidth, const OptTensor& x_lengths,
    const OptTensor& y_lengths) {
  static auto op = op_handle("softdtw_torch::_soft_dtw_fused_backward_checkpointed")
                       .typed<std::tuple<at::Tensor, at::Tensor>(
                           const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                           const at::Tensor&, double, std::optional<int64_t>, const OptTensor&, const OptTensor&)>();
  return op.call(grad, x, y, row_borders, column_borders, gamma, bandwidth, x_lengths, y_lengths);
}

}  // namespace softdtw_torch::dispatch
