// The ROCKET ops' C++ signatures (one per schema in library.cpp, written once here) and their
// dispatcher handles, for the C++ code that composes them (composite.cpp, autograd.cpp, api.cpp);
// the helpers at the end take aeon's kernels tuple as one Kernels.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>

#include "../common/op.h"

namespace softdtw_torch::rocket {

using Tensor = at::Tensor;
using KernelTuple = std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor>;

// aeon's kernels tuple as one value, in its order (the fields of the C++ API's RocketKernels).
struct Kernels {
  Tensor weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices;
};

using GenerateKernels = KernelTuple(int64_t n_timepoints, int64_t n_channels, int64_t n_kernels, int64_t seed);
using Normalise = Tensor(const Tensor& x, const OptTensor& x_lengths);
using Convolve = Tensor(const Tensor& x, const Tensor& weights, const Tensor& lengths, const Tensor& biases,
                        const Tensor& dilations, const Tensor& paddings, const Tensor& num_channel_indices,
                        const Tensor& channel_indices, c10::string_view accumulate, const OptTensor& x_lengths,
                        std::optional<double> ppv_temperature);
using Transform = Tensor(const Tensor& x, const Tensor& weights, const Tensor& lengths, const Tensor& biases,
                         const Tensor& dilations, const Tensor& paddings, const Tensor& num_channel_indices,
                         const Tensor& channel_indices, bool normalise, c10::string_view accumulate,
                         const OptTensor& x_lengths, std::optional<double> ppv_temperature);
// (features, argmax): argmax (n_cases, K) int64 is each MAX feature's position, -1 for none.
using ConvolveForward = std::tuple<Tensor, Tensor>(const Tensor& x, const Tensor& weights, const Tensor& lengths,
                                                   const Tensor& biases, const Tensor& dilations,
                                                   const Tensor& paddings, const Tensor& num_channel_indices,
                                                   const Tensor& channel_indices, c10::string_view accumulate,
                                                   const OptTensor& x_lengths, std::optional<double> ppv_temperature);
// (grad_x, grad_weights, grad_biases).
using ConvolveBackward = std::tuple<Tensor, Tensor, Tensor>(
    const Tensor& grad, const Tensor& x, const Tensor& weights, const Tensor& lengths, const Tensor& biases,
    const Tensor& dilations, const Tensor& paddings, const Tensor& num_channel_indices, const Tensor& channel_indices,
    const Tensor& argmax, c10::string_view accumulate, const OptTensor& x_lengths,
    std::optional<double> ppv_temperature);

namespace ops {
inline const Op<GenerateKernels> rocket_generate_kernels{"softdtw_torch::rocket_generate_kernels"};
inline const Op<Normalise> rocket_normalise{"softdtw_torch::rocket_normalise"};
inline const Op<Convolve> rocket_convolve{"softdtw_torch::rocket_convolve"};
inline const Op<Transform> rocket_transform{"softdtw_torch::rocket_transform"};
inline const Op<ConvolveForward> convolve_forward{"softdtw_torch::_rocket_convolve_forward"};
inline const Op<ConvolveBackward> convolve_backward{"softdtw_torch::_rocket_convolve_backward"};

// The same calls with the kernels tuple as one argument.
inline Tensor rocket_convolve_with(const Tensor& x, const Kernels& k, c10::string_view accumulate,
                                   const OptTensor& x_lengths, std::optional<double> ppv_temperature) {
  return rocket_convolve(x, k.weights, k.lengths, k.biases, k.dilations, k.paddings, k.num_channel_indices,
                         k.channel_indices, accumulate, x_lengths, ppv_temperature);
}
inline std::tuple<Tensor, Tensor> convolve_forward_with(const Tensor& x, const Kernels& k,
                                                        c10::string_view accumulate, const OptTensor& x_lengths,
                                                        std::optional<double> ppv_temperature) {
  return convolve_forward(x, k.weights, k.lengths, k.biases, k.dilations, k.paddings, k.num_channel_indices,
                          k.channel_indices, accumulate, x_lengths, ppv_temperature);
}
inline std::tuple<Tensor, Tensor, Tensor> convolve_backward_with(const Tensor& grad, const Tensor& x,
                                                                 const Kernels& k, const Tensor& argmax,
                                                                 c10::string_view accumulate,
                                                                 const OptTensor& x_lengths,
                                                                 std::optional<double> ppv_temperature) {
  return convolve_backward(grad, x, k.weights, k.lengths, k.biases, k.dilations, k.paddings, k.num_channel_indices,
                           k.channel_indices, argmax, accumulate, x_lengths, ppv_temperature);
}
}  // namespace ops

}  // namespace softdtw_torch::rocket
