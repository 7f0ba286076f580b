// Every operator schema of the library, in one place. Kernels are registered per dispatch key
// in csrc/ops/{cpu,cuda,autograd,composite}/; fake kernels live in softdtw_torch/_ops.py.
#include <torch/library.h>

TORCH_LIBRARY(softdtw_torch, m) {
  // Public, differentiable ops.
  // SoftDTW on a precomputed cost tensor D (B, N, M) -> (B,), differentiable w.r.t. D.
  m.def(
      "soft_dtw_from_cost(Tensor D, float gamma=1.0, int? bandwidth=None, Tensor? x_lengths=None, "
      "Tensor? y_lengths=None) -> Tensor");
  // Fused squared-Euclidean SoftDTW on x (B, N, d) and y (B, M, d) -> (B,), no (B, N, M) cost tensor.
  // checkpoint: the backward recomputes R instead of keeping the (B, N, M) table from the forward.
  m.def(
      "soft_dtw_fused(Tensor x, Tensor y, float gamma=1.0, int? bandwidth=None, Tensor? x_lengths=None, "
      "Tensor? y_lengths=None, bool checkpoint=False) -> Tensor");
  // SoftDTW or divergence of x and y under a named cost ("sqeuclidean", "l1", "cosine"); the
  // squared Euclidean cost runs fused or unfused (fused=None: the documented rule).
  m.def(
      "soft_dtw(Tensor x, Tensor y, float gamma=1.0, int? bandwidth=None, bool normalize=False, "
      "bool? fused=None, Tensor? x_lengths=None, Tensor? y_lengths=None, str cost=\"sqeuclidean\", "
      "bool checkpoint=False) -> Tensor");
  // Pairwise cost tensor (B, N, M) of a named cost: the unfused mode's input to soft_dtw_from_cost.
  m.def("pairwise_cost(Tensor x, Tensor y, str cost=\"sqeuclidean\") -> Tensor");
  // Values (B,) and expected alignments E = d value / d D (B, N, M); E is not differentiable.
  m.def(
      "soft_dtw_alignment_from_cost(Tensor D, float gamma=1.0, int? bandwidth=None, Tensor? x_lengths=None, "
      "Tensor? y_lengths=None) -> (Tensor, Tensor)");
  m.def(
      "soft_dtw_alignment(Tensor x, Tensor y, float gamma=1.0, int? bandwidth=None, Tensor? x_lengths=None, "
      "Tensor? y_lengths=None, str cost=\"sqeuclidean\") -> (Tensor, Tensor)");

  // Forward / backward pairs used by the autograd kernels. The forward returns the values and,
  // when keep_table, the DP table R (B, N, M) the backward needs (else an empty tensor).
  m.def(
      "_soft_dtw_from_cost_forward(Tensor D, float gamma, int? bandwidth, Tensor? x_lengths, "
      "Tensor? y_lengths, bool keep_table) -> (Tensor, Tensor)");
  m.def(
      "_soft_dtw_from_cost_backward(Tensor grad, Tensor R, float gamma, int? bandwidth, Tensor? x_lengths, "
      "Tensor? y_lengths) -> Tensor");
  m.def(
      "_soft_dtw_fused_forward(Tensor x, Tensor y, float gamma, int? bandwidth, Tensor? x_lengths, "
      "Tensor? y_lengths, bool keep_table) -> (Tensor, Tensor)");
  m.def(
      "_soft_dtw_fused_backward(Tensor grad, Tensor x, Tensor y, Tensor R, float gamma, int? bandwidth, "
      "Tensor? x_lengths, Tensor? y_lengths) -> (Tensor, Tensor)");
  // The fused pair with checkpoint=True. The forward returns the values and what its backward
  // needs instead of the table: on CUDA, R on the last row of every 64-row block (B, ⌈N/64⌉, M)
  // and the last column of every 64-column block (B, ⌈M/64⌉, N); on other devices two empty
  // tensors (the backward recomputes the whole table there).
  m.def(
      "_soft_dtw_fused_forward_checkpointed(Tensor x, Tensor y, float gamma, int? bandwidth, Tensor? x_lengths, "
      "Tensor? y_lengths) -> (Tensor, Tensor, Tensor)");
  m.def(
      "_soft_dtw_fused_backward_checkpointed(Tensor grad, Tensor x, Tensor y, Tensor row_borders, "
      "Tensor column_borders, float gamma, int? bandwidth, Tensor? x_lengths, Tensor? y_lengths) -> (Tensor, Tensor)");
  // Values (B,) and weights[b]·∂value_b/∂x_b (B, N, d) of the fused op in one call, not differentiable:
  // the objective and gradient of barycenters and k-means (which need no ∂/∂y and no table).
  m.def(
      "_soft_dtw_fused_value_and_grad(Tensor x, Tensor y, Tensor weights, float gamma, int? bandwidth, "
      "Tensor? x_lengths, Tensor? y_lengths) -> (Tensor, Tensor)");

  // ROCKET. A kernels tuple is aeon's 7 arrays (weights float32 [sum_i m_i*L_i], lengths int32 [K],
  // biases float32 [K], dilations int32 [K], paddings int32 [K], num_channel_indices int32 [K],
  // channel_indices int32 [sum_i m_i]); kernel i's weights are row-major (m_i, L_i).
  // Seeded kernel generation reproducing aeon's Rocket random stream (CPU tensors).
  m.def(
      "rocket_generate_kernels(int n_timepoints, int n_channels, int n_kernels, int seed) -> (Tensor, Tensor, "
      "Tensor, Tensor, Tensor, Tensor, Tensor)");
  // aeon's per-(case, channel) z-normalisation (numpy's summation order; std == 0 -> 1), differentiable.
  m.def("rocket_normalise(Tensor x, Tensor? x_lengths=None) -> Tensor");
  // Features (n_cases, 2K) float32, interleaved [ppv, max] per kernel; differentiable w.r.t. x,
  // weights and biases (MAX through its argmax; PPV hard, or soft with ppv_temperature).
  m.def(
      "rocket_convolve(Tensor x, Tensor weights, Tensor lengths, Tensor biases, Tensor dilations, Tensor paddings, "
      "Tensor num_channel_indices, Tensor channel_indices, str accumulate=\"float32_fma\", Tensor? x_lengths=None, "
      "float? ppv_temperature=None) -> Tensor");
  // rocket_normalise (when normalise) then rocket_convolve: aeon's Rocket.transform.
  m.def(
      "rocket_transform(Tensor x, Tensor weights, Tensor lengths, Tensor biases, Tensor dilations, Tensor paddings, "
      "Tensor num_channel_indices, Tensor channel_indices, bool normalise=True, str accumulate=\"float32_fma\", "
      "Tensor? x_lengths=None, float? ppv_temperature=None) -> Tensor");
  m.def(
      "_rocket_convolve_forward(Tensor x, Tensor weights, Tensor lengths, Tensor biases, Tensor dilations, "
      "Tensor paddings, Tensor num_channel_indices, Tensor channel_indices, str accumulate, Tensor? x_lengths, "
      "float? ppv_temperature) -> (Tensor, Tensor)");
  m.def(
      "_rocket_convolve_backward(Tensor grad, Tensor x, Tensor weights, Tensor lengths, Tensor biases, "
      "Tensor dilations, Tensor paddings, Tensor num_channel_indices, Tensor channel_indices, Tensor argmax, "
      "str accumulate, Tensor? x_lengths, float? ppv_temperature) -> (Tensor, Tensor, Tensor)");

  // MiniRocket. Parameters are aeon's 5 arrays (num_channels_per_combination int32, channel_indices int32,
  // dilations int32, num_features_per_dilation int32, biases float32).
  m.def(
      "minirocket_fit(Tensor x, int n_features, int max_dilations_per_kernel, int seed) -> (Tensor, Tensor, Tensor, "
      "Tensor, Tensor)");
  m.def(
      "minirocket_transform(Tensor x, Tensor num_channels_per_combination, Tensor channel_indices, Tensor dilations, "
      "Tensor num_features_per_dilation, Tensor biases, Tensor? x_lengths=None) -> Tensor");
}

#ifdef SOFTDTW_TORCH_PYTHON_MODULE
// Importing softdtw_torch._C loads this shared library, which runs the registrations above.
// It defines no Python functions: everything is reached through torch.ops.softdtw_torch.
#include <Python.h>

extern "C" PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
#endif
