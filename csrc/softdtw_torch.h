// softdtw-torch: the public C++ API for LibTorch programs.
//
// Every function calls its operator through the PyTorch dispatcher (torch.ops.softdtw_torch.* in
// Python), so autograd, the CPU/CUDA kernels and the error messages are exactly those of Python:
// tensors that require grad get gradients through backward(), and bad input throws c10::Error
// (c10::ValueError for bad scalars such as gamma <= 0) with the same text.
//
// Link against the CMake target softdtw_torch::softdtw_torch. Including this header is enough to
// keep the operators registered in a linked program (see detail::registered below), also for
// programs that only run TorchScript modules with torch::jit::load.
//
// Differences from the Python API: gamma is a double here (the Python functions also take a tensor
// gamma that requires grad); batched inputs only (x (B, N, d), D (B, N, M)); the estimators
// (Rocket, MiniRocket, RocketClassifier, barycenters) are Python classes built on these ops.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#if defined(_WIN32)
#if defined(SOFTDTW_TORCH_BUILDING_LIBRARY)
#define SOFTDTW_TORCH_API __declspec(dllexport)
#else
#define SOFTDTW_TORCH_API __declspec(dllimport)
#endif
#else
#define SOFTDTW_TORCH_API __attribute__((visibility("default")))
#endif

namespace softdtw_torch {

using OptionalTensor = std::optional<at::Tensor>;

// ---- SoftDTW -------------------------------------------------------------------------------
// (These declarations are written from the ops' schemas by scripts/generate_cpp_api.py; the
// comments by hand.)
// Shapes: x (B, N, d), y (B, M, d), D (B, N, M); values (B,). bandwidth: Sakoe-Chiba radius
// (nullopt: no band); itakura_max_slope: the Itakura parallelogram's slope, >= 1, tslearn's
// (nullopt: none; both given: their intersection; a pair with no admissible path gets +inf). x_lengths / y_lengths:
// optional (B,) integer tensors for ragged batches.

// SoftDTW (or, with normalize, the soft-DTW divergence) under a named cost: "sqeuclidean", "l1",
// "cosine". fused: nullopt picks the fused kernel for d <= 128 (squared Euclidean only).
// checkpoint: the backward recomputes the DP table instead of keeping it (fused mode only).
SOFTDTW_TORCH_API at::Tensor soft_dtw(const at::Tensor& x, const at::Tensor& y, double gamma = 1.0,
                                      std::optional<int64_t> bandwidth = std::nullopt, bool normalize = false,
                                      std::optional<bool> fused = std::nullopt,
                                      const OptionalTensor& x_lengths = std::nullopt,
                                      const OptionalTensor& y_lengths = std::nullopt,
                                      const std::string& cost = "sqeuclidean", bool checkpoint = false,
                                      std::optional<double> itakura_max_slope = std::nullopt);

// Fused squared-Euclidean SoftDTW: costs computed in the kernel, no (B, N, M) cost tensor; with
// checkpoint, no (B, N, M) table kept for the backward either.
SOFTDTW_TORCH_API at::Tensor soft_dtw_fused(const at::Tensor& x, const at::Tensor& y, double gamma = 1.0,
                                            std::optional<int64_t> bandwidth = std::nullopt,
                                            const OptionalTensor& x_lengths = std::nullopt,
                                            const OptionalTensor& y_lengths = std::nullopt, bool checkpoint = false,
                                            std::optional<double> itakura_max_slope = std::nullopt);

// SoftDTW of a precomputed cost tensor D, differentiable w.r.t. D (any cost written with ATen ops).
SOFTDTW_TORCH_API at::Tensor soft_dtw_from_cost(const at::Tensor& D, double gamma = 1.0,
                                                std::optional<int64_t> bandwidth = std::nullopt,
                                                const OptionalTensor& x_lengths = std::nullopt,
                                                const OptionalTensor& y_lengths = std::nullopt,
                                                std::optional<double> itakura_max_slope = std::nullopt);

// The (B, N, M) cost tensor of a named cost, differentiable.
SOFTDTW_TORCH_API at::Tensor pairwise_cost(const at::Tensor& x, const at::Tensor& y,
                                           const std::string& cost = "sqeuclidean");

// (values (B,), expected alignments E (B, N, M)); E = d value / d D, both differentiable (E
// through soft-DTW's Hessian).
SOFTDTW_TORCH_API std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment(
    const at::Tensor& x, const at::Tensor& y, double gamma = 1.0, std::optional<int64_t> bandwidth = std::nullopt,
    const OptionalTensor& x_lengths = std::nullopt, const OptionalTensor& y_lengths = std::nullopt,
    const std::string& cost = "sqeuclidean", std::optional<double> itakura_max_slope = std::nullopt);

SOFTDTW_TORCH_API std::tuple<at::Tensor, at::Tensor> soft_dtw_alignment_from_cost(
    const at::Tensor& D, double gamma = 1.0, std::optional<int64_t> bandwidth = std::nullopt,
    const OptionalTensor& x_lengths = std::nullopt, const OptionalTensor& y_lengths = std::nullopt,
    std::optional<double> itakura_max_slope = std::nullopt);

// The sharp soft-DTW ⟨E, D⟩ (with normalize, the sharp divergence) of Blondel, Mensch & Vert 2021;
// arguments as soft_dtw's (no checkpoint). Differentiable once (its gradient uses the Hessian).
SOFTDTW_TORCH_API at::Tensor soft_dtw_sharp(const at::Tensor& x, const at::Tensor& y, double gamma = 1.0,
                                            std::optional<int64_t> bandwidth = std::nullopt, bool normalize = false,
                                            std::optional<bool> fused = std::nullopt,
                                            const OptionalTensor& x_lengths = std::nullopt,
                                            const OptionalTensor& y_lengths = std::nullopt,
                                            const std::string& cost = "sqeuclidean",
                                            std::optional<double> itakura_max_slope = std::nullopt);

SOFTDTW_TORCH_API at::Tensor soft_dtw_sharp_from_cost(const at::Tensor& D, double gamma = 1.0,
                                                      std::optional<int64_t> bandwidth = std::nullopt,
                                                      const OptionalTensor& x_lengths = std::nullopt,
                                                      const OptionalTensor& y_lengths = std::nullopt,
                                                      std::optional<double> itakura_max_slope = std::nullopt);

// DILATE (Le Guen & Thome 2019) per pair: loss = alpha·shape + (1 − alpha)·temporal, shape the
// soft-DTW of prediction (B, N, d) and target (B, M, d), temporal ⟨E, Ω⟩ with the time penalty
// Ω_ij = ((i + 1)/N − (j + 1)/M)² of each pair's lengths, or `penalty` (N, M) or (B, N, M).
struct DilateTerms {
  at::Tensor loss, shape, temporal;  // each (B,)
};
SOFTDTW_TORCH_API DilateTerms dilate(const at::Tensor& prediction, const at::Tensor& target, double alpha = 0.5,
                                     double gamma = 0.01, std::optional<int64_t> bandwidth = std::nullopt,
                                     const OptionalTensor& penalty = std::nullopt,
                                     const OptionalTensor& prediction_lengths = std::nullopt,
                                     const OptionalTensor& target_lengths = std::nullopt,
                                     std::optional<double> itakura_max_slope = std::nullopt);

// Derivatives: every function above is differentiable through autograd in reverse and forward
// mode, to the second order (torch::autograd::grad with create_graph=true gives Hessian-vector
// products); a third derivative throws. soft_dtw_sharp and dilate, whose gradients already use
// the Hessian, are differentiable once. Loss modules: softdtw_torch_nn.h.

// ---- ROCKET --------------------------------------------------------------------------------
// x (n_cases, n_channels, n_timepoints); features (n_cases, 2K) float32, interleaved [ppv, max].

// aeon's kernels tuple, in its order: weights float32 [sum_i m_i*L_i], lengths int32 [K], biases
// float32 [K], dilations int32 [K], paddings int32 [K], num_channel_indices int32 [K],
// channel_indices int32 [sum_i m_i]. Weights and biases may require grad.
struct RocketKernels {
  at::Tensor weights, lengths, biases, dilations, paddings, num_channel_indices, channel_indices;
};

// Seeded kernels, the same random stream as aeon's Rocket(random_state=seed) (CPU tensors).
SOFTDTW_TORCH_API RocketKernels rocket_generate_kernels(int64_t n_timepoints, int64_t n_channels, int64_t n_kernels,
                                                        int64_t seed);

// aeon's per-(case, channel) z-normalisation (population std; std == 0 -> 1), differentiable.
SOFTDTW_TORCH_API at::Tensor rocket_normalise(const at::Tensor& x, const OptionalTensor& x_lengths = std::nullopt);

// accumulate: "float32_fma" (aeon on float32 input), "float64" (aeon on float64 input) or
// "float32". ppv_temperature: nullopt for aeon's hard PPV, else the soft PPV's temperature.
SOFTDTW_TORCH_API at::Tensor rocket_convolve(const at::Tensor& x, const RocketKernels& kernels,
                                             const std::string& accumulate = "float32_fma",
                                             const OptionalTensor& x_lengths = std::nullopt,
                                             std::optional<double> ppv_temperature = std::nullopt);

// rocket_normalise (when normalise) then rocket_convolve: aeon's Rocket.transform.
SOFTDTW_TORCH_API at::Tensor rocket_transform(const at::Tensor& x, const RocketKernels& kernels, bool normalise = true,
                                              const std::string& accumulate = "float32_fma",
                                              const OptionalTensor& x_lengths = std::nullopt,
                                              std::optional<double> ppv_temperature = std::nullopt);

// ---- MiniRocket ----------------------------------------------------------------------------

// aeon's fitted parameters, in its order: num_channels_per_combination int32, channel_indices
// int32, dilations int32, num_features_per_dilation int32, biases float32.
struct MiniRocketParameters {
  at::Tensor num_channels_per_combination, channel_indices, dilations, num_features_per_dilation, biases;
};

// aeon's MiniRocket.fit with random_state=seed (seed in [0, 2^32 - 1]).
SOFTDTW_TORCH_API MiniRocketParameters minirocket_fit(const at::Tensor& x, int64_t n_features = 10000,
                                                      int64_t max_dilations_per_kernel = 32, int64_t seed = 0);

// Features (n_cases, n_features) float32; not differentiable (PPV only).
SOFTDTW_TORCH_API at::Tensor minirocket_transform(const at::Tensor& x, const MiniRocketParameters& parameters,
                                                  const OptionalTensor& x_lengths = std::nullopt);

// ---- MultiRocket ---------------------------------------------------------------------------

// aeon's MultiRocket.parameter and .parameter1: MiniRocket's five arrays for the series and for
// its first difference (aeon's transform reads the difference with the series' channel arrays).
struct MultiRocketParameters {
  MiniRocketParameters series, difference;
};

// aeon's MultiRocket.fit with random_state=seed (n_kernels >= 84, at least 10 time points).
SOFTDTW_TORCH_API MultiRocketParameters multirocket_fit(const at::Tensor& x, int64_t n_kernels = 6250,
                                                        int64_t max_dilations_per_kernel = 32, int64_t seed = 0);

// Features (n_cases, 8 * 84 * sum(num_features_per_dilation)) float32: PPV, LSPV, MPV, MIPV of the
// series, then of its first difference; not differentiable.
SOFTDTW_TORCH_API at::Tensor multirocket_transform(const at::Tensor& x, const MultiRocketParameters& parameters,
                                                   const OptionalTensor& x_lengths = std::nullopt);

// ---- Hydra ---------------------------------------------------------------------------------

// aeon's HydraTransformer parameters: weights (n_dilations, n_representations, n_groups,
// n_kernels, 9) float32 (its W) and channels (n_dilations, n_representations, n_groups,
// channels_per_group) int64 (its idx).
struct HydraParameters {
  at::Tensor weights, channels;
};

// aeon's HydraTransformer.fit with random_state=seed (at least 6 time points; only x's shape is read).
SOFTDTW_TORCH_API HydraParameters hydra_fit(const at::Tensor& x, int64_t n_kernels = 8, int64_t n_groups = 64,
                                            int64_t max_num_channels = 8, int64_t seed = 0);

// Features (n_cases, n_dilations * n_representations * 2 * n_groups * n_kernels) in x's precision
// (float64 for float64 x, else float32): per (dilation, representation) count_max then count_min;
// differentiable w.r.t. x and weights through count_max.
SOFTDTW_TORCH_API at::Tensor hydra_transform(const at::Tensor& x, const HydraParameters& parameters,
                                             const OptionalTensor& x_lengths = std::nullopt);

// ---- Build facts ---------------------------------------------------------------------------

SOFTDTW_TORCH_API std::string version();
// Whether the library holds CUDA kernels (it may still run on a machine without a GPU).
SOFTDTW_TORCH_API bool cuda_compiled();
// Frees the block the CPU keeps from the last freed big table (a DP table or the features of
// MiniRocket, MultiRocket or Hydra, 1 MiB or more) for the next table of its size (README,
// "Memory"); returns its size in bytes, 0 when none was kept.
SOFTDTW_TORCH_API int64_t release_table_memory();

namespace detail {
// Defined in the library. Every program that includes this header calls it at start-up, so the
// linker cannot drop the library (e.g. under --as-needed when only torch::jit::load uses the
// ops) and its static operator registrations always run.
SOFTDTW_TORCH_API bool link_anchor();
inline const bool registered = link_anchor();
}  // namespace detail

}  // namespace softdtw_torch
