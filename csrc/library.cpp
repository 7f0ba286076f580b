// Every operator schema of the library, in one place.
//
// The layout rule: one folder per op family (csrc/softdtw/, csrc/rocket/, csrc/minirocket/,
// csrc/multirocket/, csrc/hydra/), with the same file names in each, so that any op's parts are found by path
// alone:
//   library.cpp (here)       the schema (m.def) of every op of every family
//   <family>/ops.h           the ops' C++ signatures, each written once, and their dispatcher
//                            handles (Op<Signature>) for C++ code that calls them
//   <family>/problem.{h,cpp} input validation (the messages) and the validated problem the
//                            kernels read, shared by every device
//   <family>/math.h          arithmetic shared by the CPU and CUDA kernels (no ATen)
//   <family>/cpu/kernel.cpp  the CPU kernels (TORCH_LIBRARY_IMPL ..., CPU)
//   <family>/cuda/kernel.cu  the CUDA kernels (..., CUDA): the bodies of <engine>_ops.h run with
//                            the CUDA launcher (common/cuda_launch.h); <engine>.cuh holds the
//                            device code and launch sequences, without ATen, which the tests also
//                            run under the CUDA emulator (tests/cuda_emu)
//   <family>/autograd.cpp    the Autograd kernels (..., Autograd)
//   <family>/composite.cpp   the device-agnostic kernels (..., CompositeImplicitAutograd and
//                            CompositeExplicitAutograd)
//   softdtw_torch/_fake/<family>.py   the fake (meta) kernels, in Python
//   autocast.cpp (beside this file)   torch.autocast for every public op that reads floats
// A family may add files named for their subject (softdtw/constants.h, softdtw/plan.h,
// softdtw/cpu/tiles.h, <family>/fit.cpp; the CUDA engines softdtw/cuda/tiles,
// rocket/cuda/convolve, minirocket/cuda/transform, multirocket/cuda/transform, hydra/cuda/transform); no
// family includes another's files: what several families share is in csrc/common/ (numpy_random.h:
// aeon's random stream; minirocket/: MiniRocket's kernels, checks and fit, which MultiRocket runs;
// macros.h: the host-device, device-path and CPU
// multi-versioning macros; rounding.h: float64 products and sums rounded once each on every
// device; op.h: typed op handles; autograd.h: the autograd kernels' helpers; device.cuh and
// cuda_launch.h: grids, dynamic shared memory and its opt-in, the launcher).
// A new family is a copy of an existing folder. CONTRIBUTING.md says the same at more length.
#include <torch/library.h>

#include "softdtw/args.h"  // the SoftDTW bundle's schema text

TORCH_LIBRARY(softdtw_torch, m) {
  // Public, differentiable ops.
  // SoftDTW on a precomputed cost tensor D (B, N, M) -> (B,), differentiable w.r.t. D.
  m.def(
      "soft_dtw_from_cost(Tensor D, float gamma=1.0, int? bandwidth=None, Tensor? x_lengths=None, "
      "Tensor? y_lengths=None, float? itakura_max_slope=None) -> Tensor");
  // Fused squared-Euclidean SoftDTW on x (B, N, d) and y (B, M, d) -> (B,), no (B, N, M) cost tensor.
  // checkpoint: the backward recomputes R instead of keeping the (B, N, M) table from the forward.
  m.def(
      "soft_dtw_fused(Tensor x, Tensor y, float gamma=1.0, int? bandwidth=None, Tensor? x_lengths=None, "
      "Tensor? y_lengths=None, bool checkpoint=False, float? itakura_max_slope=None) -> Tensor");
  // SoftDTW or divergence of x and y under a named cost ("sqeuclidean", "l1", "cosine"); the
  // squared Euclidean cost runs fused or unfused (fused=None: the documented rule).
  m.def(
      "soft_dtw(Tensor x, Tensor y, float gamma=1.0, int? bandwidth=None, bool normalize=False, "
      "bool? fused=None, Tensor? x_lengths=None, Tensor? y_lengths=None, str cost=\"sqeuclidean\", "
      "bool checkpoint=False, float? itakura_max_slope=None) -> Tensor");
  // Pairwise cost tensor (B, N, M) of a named cost: the unfused mode's input to soft_dtw_from_cost.
  m.def("pairwise_cost(Tensor x, Tensor y, str cost=\"sqeuclidean\") -> Tensor");
  // Values (B,) and expected alignments E = d value / d D (B, N, M); E is not differentiable.
  m.def(
      "soft_dtw_alignment_from_cost(Tensor D, float gamma=1.0, int? bandwidth=None, Tensor? x_lengths=None, "
      "Tensor? y_lengths=None, float? itakura_max_slope=None) -> (Tensor, Tensor)");
  m.def(
      "soft_dtw_alignment(Tensor x, Tensor y, float gamma=1.0, int? bandwidth=None, Tensor? x_lengths=None, "
      "Tensor? y_lengths=None, str cost=\"sqeuclidean\", float? itakura_max_slope=None) -> (Tensor, Tensor)");

  // The sharp soft-DTW ⟨E, D⟩ (Blondel, Mensch & Vert 2021): the cost of the expected alignment, soft-DTW
  // without its entropy term, differentiable to the first order (its gradient is E + H·D, H soft-DTW's
  // Hessian); normalize=True gives the sharp divergence sharp(x, y) − ½ sharp(x, x) − ½ sharp(y, y).
  // One forward recursion with the tangent D: no (B, N, M) tensor in the fused mode.
  m.def(
      "soft_dtw_sharp(Tensor x, Tensor y, float gamma=1.0, int? bandwidth=None, bool normalize=False, "
      "bool? fused=None, Tensor? x_lengths=None, Tensor? y_lengths=None, str cost=\"sqeuclidean\", "
      "float? itakura_max_slope=None) -> Tensor");
  m.def(
      "soft_dtw_sharp_from_cost(Tensor D, float gamma=1.0, int? bandwidth=None, Tensor? x_lengths=None, "
      "Tensor? y_lengths=None, float? itakura_max_slope=None) -> Tensor");
  // DILATE (Le Guen & Thome 2019), per pair: (alpha·shape + (1 − alpha)·temporal, shape, temporal), with
  // shape = sdtw_γ(D) and temporal = ⟨E, Ω⟩ on D_ij = ||prediction_i − target_j||² and the time
  // penalty Ω_ij = ((i + 1)/N − (j + 1)/M)² of each pair's own lengths (for N = M the authors' (i − j)²/N²),
  // or a given penalty (N, M) or (B, N, M). One forward recursion for both terms.
  m.def(
      "dilate(Tensor prediction, Tensor target, float alpha=0.5, float gamma=0.01, int? bandwidth=None, "
      "Tensor? penalty=None, Tensor? prediction_lengths=None, Tensor? target_lengths=None, "
      "float? itakura_max_slope=None) -> (Tensor, Tensor, Tensor)");

  // The private SoftDTW ops below take their tensors, then the argument bundle ("float gamma, int?
  // bandwidth, float? itakura_max_slope, Tensor? x_lengths, Tensor? y_lengths": its text and the
  // C++ signatures derived from it are softdtw/args.h's; _dtw_path's is without gamma), then their
  // own options.
  // Forward / backward pairs, each differentiable (their autograd kernels, docs/design/softdtw.md
  // §3). A backward returns grad·E of D (the values' gradient weighted by grad (B,)): its inputs
  // are the tensors it depends on, so it can itself be differentiated, and what its forward kept
  // of those inputs (the DP table R, ...) is a cache it reads, not differentiated. The from-cost
  // forward returns the values and, when keep_table, R (B, N, M) (else an empty tensor; an empty
  // R is recomputed by the backward).
  m.def("_soft_dtw_from_cost_forward(Tensor D, " SOFTDTW_TORCH_BUNDLE_SCHEMA ", bool keep_table) -> (Tensor, Tensor)");
  m.def("_soft_dtw_from_cost_backward(Tensor grad, Tensor D, Tensor R, " SOFTDTW_TORCH_BUNDLE_SCHEMA ") -> Tensor");
  // The fused pair (squared Euclidean costs computed in the kernels) keeps for its backward what
  // `keep` names, chosen by the memory planner (softdtw/plan.h): the forward returns the values and
  // two cache tensors (first, second), which the backward reads as `kept` says:
  //   "nothing":   two empty tensors (the backward recomputes the table);
  //   "table":     R and an empty tensor (an empty R: recomputed);
  //   "borders":   checkpoint=True: on CUDA, R on the last row of every 64-row block (B, ⌈N/64⌉, M)
  //                and on the last column of every 64-column block (B, ⌈M/64⌉, N); on other devices
  //                two empty tensors (the backward recomputes the whole table there);
  //   "gradients": the unit gradients ∂value_b/∂x_b (B, N, d) and ∂value_b/∂y_b (B, M, d) in
  //                float64, which the backward scales by grad (the CPU's choice for short pairs in
  //                packs, docs/design/softdtw.md §3; CPU only).
  // The backward's result does not depend on the strategy: the same function, the same bits.
  m.def("_soft_dtw_fused_forward(Tensor x, Tensor y, " SOFTDTW_TORCH_BUNDLE_SCHEMA
        ", str keep) -> (Tensor, Tensor, Tensor)");
  m.def("_soft_dtw_fused_backward(Tensor grad, Tensor x, Tensor y, Tensor first, Tensor second, "
        SOFTDTW_TORCH_BUNDLE_SCHEMA ", str kept) -> (Tensor, Tensor)");
  // Forward mode and second order (docs/design/softdtw.md §3). A tangent (Ḋ of D; ẋ, ẏ of x, y; ġ of
  // an upstream gradient) is optional: None stands for a zero tangent.
  // Values (B,) and their directional derivatives ⟨E, D_tangent⟩ (B,): one forward recursion
  // carrying Ṙ beside R, no table, no backward pass.
  m.def("_soft_dtw_from_cost_jvp(Tensor D, Tensor D_tangent, " SOFTDTW_TORCH_BUNDLE_SCHEMA ") -> (Tensor, Tensor)");
  // The same for the fused squared Euclidean cost: Ḋ_ij = 2 (x_i − y_j)·(ẋ_i − ẏ_j), in the kernel.
  m.def("_soft_dtw_fused_jvp(Tensor x, Tensor y, Tensor? x_tangent, Tensor? y_tangent, " SOFTDTW_TORCH_BUNDLE_SCHEMA
        ") -> (Tensor, Tensor)");
  // The gradient grad·E (B, N, M) of grad-weighted values, differentiated in the direction
  // (grad_tangent, D_tangent): returns ⟨E, D_tangent⟩ (B,), grad·E (when with_grad, else empty)
  // and grad_tangent·E + grad·H·D_tangent (B, N, M), H the Hessian of a value w.r.t. its D. One
  // forward recursion with the tangent, then one reverse recursion with it (Ė beside E); the
  // double backward, the forward mode of the gradient and the reverse mode of the JVP all use it.
  m.def("_soft_dtw_from_cost_hvp(Tensor grad, Tensor? grad_tangent, Tensor D, Tensor? D_tangent, "
        SOFTDTW_TORCH_BUNDLE_SCHEMA ", bool with_grad) -> (Tensor, Tensor, Tensor)");
  // The same for the fused squared Euclidean cost, with no (B, N, M) tensor: returns the directional
  // derivative (B,), the gradient grad·∇v (x then y; empty unless with_grad) and its tangent
  // grad_tangent·∇v + grad·∇²v·(x_tangent, y_tangent) (x then y).
  m.def("_soft_dtw_fused_hvp(Tensor grad, Tensor? grad_tangent, Tensor x, Tensor y, Tensor? x_tangent, "
        "Tensor? y_tangent, " SOFTDTW_TORCH_BUNDLE_SCHEMA
        ", bool with_grad) -> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  // Hard DTW (gamma = 0) of x (B, N, d) and y (B, M, d) with its optimal paths, not differentiable
  // (soft_dtw with gamma=0 is): the squared values (B,), the paths' cells (B, N + M − 1, 2) int64 in
  // order from (0, 0), −1 past each path's end, and the paths' lengths (B,). The fused forward keeps
  // its table, then one walk back per pair, O(N + M) (docs/design/softdtw.md §10).
  m.def("_dtw_path(Tensor x, Tensor y, " SOFTDTW_TORCH_WINDOW_SCHEMA ") -> (Tensor, Tensor, Tensor)");
  // The Itakura parallelogram of pairs of lengths (n[b], m[b]) with slope max_slope, tslearn's
  // (docs/design/softdtw.md §11): column j of pair b admits the rows [out[b, j, 0], out[b, j, 1]),
  // (B, columns, 2) int64, m[b] <= columns; the columns past m[b] admit none (n[b], n[b]). The
  // table the CUDA tile kernels read, for the masks and the nearest-neighbour bounds too.
  m.def("_itakura_rows(Tensor n, Tensor m, int columns, float max_slope) -> Tensor");
  // Values (B,) and weights[b]·∂value_b/∂x_b (B, N, d) of the fused op in one call, not differentiable:
  // the objective and gradient of barycenters and k-means (which need no ∂/∂y and no table).
  m.def("_soft_dtw_fused_value_and_grad(Tensor x, Tensor y, Tensor weights, " SOFTDTW_TORCH_BUNDLE_SCHEMA
        ") -> (Tensor, Tensor)");

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

  // MultiRocket. Parameters are aeon's parameter and parameter1, MiniRocket's 5 arrays each, for the
  // series and its first difference; the transform reads the difference with the series' channel
  // combinations, as aeon's does (its own two channel arrays are not arguments).
  m.def(
      "multirocket_fit(Tensor x, int n_kernels, int max_dilations_per_kernel, int seed) -> (Tensor, Tensor, Tensor, "
      "Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)");
  m.def(
      "multirocket_transform(Tensor x, Tensor num_channels_per_combination, Tensor channel_indices, Tensor dilations, "
      "Tensor num_features_per_dilation, Tensor biases, Tensor diff_dilations, Tensor diff_num_features_per_dilation, "
      "Tensor diff_biases, Tensor? x_lengths=None) -> Tensor");

  // Hydra. Parameters are aeon's _HydraInternal.W as weights (n_dilations, n_representations,
  // n_groups, n_kernels, 9) float32 and its idx stacked as channels (n_dilations, n_representations,
  // n_groups, channels_per_group) int64; dilation i is 2^i. Features (n_cases, n_dilations ·
  // n_representations · 2 · n_groups · n_kernels) in x's precision (float64 for float64 x, float32
  // otherwise), differentiable w.r.t. x and weights through count_max.
  m.def("hydra_fit(Tensor x, int n_kernels, int n_groups, int max_num_channels, int seed) -> (Tensor, Tensor)");
  m.def("hydra_transform(Tensor x, Tensor weights, Tensor channels, Tensor? x_lengths=None) -> Tensor");
  m.def(
      "_hydra_transform_backward(Tensor grad, Tensor x, Tensor weights, Tensor channels, Tensor? x_lengths) -> "
      "(Tensor, Tensor)");
}

#ifdef SOFTDTW_TORCH_PYTHON_MODULE
// Importing softdtw_torch._C loads this shared library, which runs the registrations above.
// It defines no Python functions: everything is reached through torch.ops.softdtw_torch.
// The numbers the Python package needs (fake kernels, the barycenter's choice of objective,
// MiniRocket's feature count) are
// attributes of the module, from their one definition in C++.
#include <Python.h>

#include "hydra/math.h"
#include "common/minirocket/math.h"
#include "multirocket/math.h"
#include "softdtw/constants.h"

#include "common/cpu.h"
#include "common/memory.h"
#include "common/table_memory.h"

namespace {
PyObject* release_table_memory(PyObject*, PyObject*) {
  return PyLong_FromLongLong(softdtw_torch::table_memory::release());
}

// memory::set_cpu_limit(bytes or None); its ValueError (a bound below 1) as Python's.
PyObject* set_memory_limit(PyObject*, PyObject* bytes) {
  std::optional<int64_t> limit;
  if (bytes != Py_None) {
    limit = PyLong_AsLongLong(bytes);
    if (PyErr_Occurred()) return nullptr;
  }
  if (limit.has_value() && *limit <= 0) {
    PyErr_SetString(PyExc_ValueError, "expected a positive number of bytes or None");
    return nullptr;
  }
  softdtw_torch::memory::set_cpu_limit(limit);
  Py_RETURN_NONE;
}

PyObject* memory_limit(PyObject*, PyObject*) {
  const auto limit = softdtw_torch::memory::cpu_limit();
  if (!limit.has_value()) Py_RETURN_NONE;
  return PyLong_FromLongLong(*limit);
}

// Every CPU kernel's vector path (common/cpu.h), deciding those not yet decided: a list of
// "<kernel>: <path> (<why>)" lines.
PyObject* cpu_paths(PyObject*, PyObject*) {
  try {
    softdtw_torch::decide_all_paths();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
    return nullptr;
  }
  const std::vector<std::string> lines = softdtw_torch::path_report();
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(lines.size()));
  if (list == nullptr) return nullptr;
  for (size_t i = 0; i < lines.size(); ++i) {
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), PyUnicode_FromString(lines[i].c_str()));
  }
  return list;
}

// set_path_cap("portable", "avx2", "avx512" or None): every kernel's path decided again.
PyObject* set_cpu_path_cap(PyObject*, PyObject* cap) {
  using softdtw_torch::VectorPath;
  std::optional<VectorPath> path;
  if (cap != Py_None) {
    const char* text = PyUnicode_AsUTF8(cap);
    if (text == nullptr) return nullptr;
    path = softdtw_torch::parse_path(text);
    if (!path.has_value()) {
      PyErr_Format(PyExc_ValueError, "expected 'portable', 'avx2', 'avx512' or None, got '%s'", text);
      return nullptr;
    }
  }
  softdtw_torch::set_path_cap(path);
  Py_RETURN_NONE;
}

// memory::refusal(op, what, bytes, torch.device(device_type, index), remedies): "" when it fits.
PyObject* memory_refusal(PyObject*, PyObject* args) {
  const char *op, *what, *device_type, *remedies;
  double bytes;
  int index;
  if (!PyArg_ParseTuple(args, "ssdsis", &op, &what, &bytes, &device_type, &index, &remedies)) return nullptr;
  try {
    const c10::DeviceType type = c10::Device(device_type).type();
    const c10::Device device(type, static_cast<c10::DeviceIndex>(index));
    return PyUnicode_FromString(softdtw_torch::memory::refusal(op, what, bytes, device, remedies).c_str());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyMethodDef module_methods[] = {
    {"set_memory_limit", set_memory_limit, METH_O, "The CPU memory limit of the preflight, bytes or None."},
    {"memory_limit", memory_limit, METH_NOARGS, "The CPU memory limit set, bytes or None (the default)."},
    {"memory_refusal", memory_refusal, METH_VARARGS,
     "(op, what, bytes, device_type, device_index, remedies): the preflight's message, '' when it fits."},
    {"cpu_paths", cpu_paths, METH_NOARGS, "Each CPU kernel's vector path and why, deciding those not yet decided."},
    {"set_cpu_path_cap", set_cpu_path_cap, METH_O,
     "Caps every CPU kernel's vector path: 'portable', 'avx2', 'avx512', or None for the default choice."},
    {"release_table_memory", release_table_memory, METH_NOARGS,
     "Frees the block kept from the last freed big CPU table (a SoftDTW DP table or the features of "
     "MiniRocket, MultiRocket or Hydra); returns its size in bytes."},
    {nullptr, nullptr, 0, nullptr}};
}  // namespace

extern "C" PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, module_methods};
  PyObject* module = PyModule_Create(&module_def);
  if (module == nullptr) return nullptr;
  namespace sdtw = softdtw_torch::softdtw;
  namespace minirocket = softdtw_torch::minirocket;
  if (PyModule_AddIntConstant(module, "SOFTDTW_MAX_FUSED_FEATURES", sdtw::kMaxFusedFeatures) < 0 ||
      PyModule_AddIntConstant(module, "SOFTDTW_CUDA_TILE_ROWS", sdtw::kCudaTileRows) < 0 ||
      PyModule_AddIntConstant(module, "SOFTDTW_CUDA_TILE_COLS", sdtw::kCudaTileCols) < 0 ||
      PyModule_AddIntConstant(module, "SOFTDTW_CUDA_PAIR_MAX_COLUMNS", sdtw::kCudaPairMaxColumns) < 0 ||
      PyModule_AddIntConstant(module, "SOFTDTW_CUDA_PAIR_MAX_FUSED_FEATURES", sdtw::kCudaPairMaxFusedFeatures) < 0 ||
      PyModule_AddIntConstant(module, "MINIROCKET_KERNELS", minirocket::kKernels) < 0 ||
      PyModule_AddIntConstant(module, "MINIROCKET_MIN_LENGTH", minirocket::kMinLength) < 0 ||
      PyModule_AddIntConstant(module, "MULTIROCKET_MIN_LENGTH", softdtw_torch::multirocket::kMinLength) < 0 ||
      PyModule_AddIntConstant(module, "HYDRA_MIN_LENGTH", softdtw_torch::hydra::kMinLength) < 0 ||
      PyModule_AddIntConstant(module, "HYDRA_MAX_DILATIONS", softdtw_torch::hydra::kMaxDilations) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
#endif
