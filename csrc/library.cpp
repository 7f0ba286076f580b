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
  m.def(
      "soft_dtw_fused(Tensor x, Tensor y, float gamma=1.0, int? bandwidth=None, Tensor? x_lengths=None, "
      "Tensor? y_lengths=None) -> Tensor");
  // SoftDTW or divergence of x and y under a named cost ("sqeuclidean", "l1", "cosine"); the
  // squared Euclidean cost runs fused or unfused (fused=None: the documented rule).
  m.def(
      "soft_dtw(Tensor x, Tensor y, float gamma=1.0, int? bandwidth=None, bool normalize=False, "
      "bool? fused=None, Tensor? x_lengths=None, Tensor? y_lengths=None, str cost=\"sqeuclidean\") -> Tensor");
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
