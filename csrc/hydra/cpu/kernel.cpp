// Hydra on the CPU (docs/design/rocket.md §11, aeon's _hydra.py):
//   hydra_fit                   aeon's draws (torch's CPU generator, seeded as torch.manual_seed);
//   hydra_transform             count_max and count_min of every group, math.h's arithmetic;
//   _hydra_transform_backward   the count_max features' gradient w.r.t. the rows and weights.
// Work items are (case, dilation, representation) triples, each writing its own features, so the
// result has the same bits at any thread count.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "../../common/macros.h"
#include "../../common/cpu.h"
#include "../../common/parallel.h"
#include "../../common/table_memory.h"
#include "../problem.h"
#include "avx2.h"

namespace softdtw_torch {
namespace hydra {

namespace {

// The row a group reads, zero-padded so that every tap of every position of a block of 8 reads
// inside it: padded[kPadBefore(d) + p] = s(p).
int64_t pad_before(int64_t d) { return 4 * d; }
int64_t padded_length(int64_t length, int64_t d) { return length + 8 * d + 8; }

void fill_padded(const GroupRow<float>& row, int64_t d, std::vector<float>& padded) {
  padded.assign(static_cast<size_t>(padded_length(row.length, d)), 0.0f);
  float* s = padded.data() + pad_before(d);
  for (int64_t p = 0; p < row.length; ++p) s[p] = row.value(p);
}

// The avx2 path (common/cpu.h): group_features_avx2 (avx2.h) for float32, else group_features.
const PathRule kGroupPaths{"hydra", {VectorPath::kAvx2, VectorPath::kPortable}};
const bool kGroupPathsRegistered = register_path_rule(kGroupPaths);

template <typename scalar_t>
GroupRow<scalar_t> group_row(const TransformProblem& p, const scalar_t* x, const int64_t* channels, int64_t length,
                             int64_t case_index, int64_t i, int64_t r, int64_t g) {
  GroupRow<scalar_t> row;
  row.x_case = x + case_index * p.n_channels * p.n_timepoints;
  row.row_stride = p.n_timepoints;
  row.channels = channels + ((i * p.n_representations + r) * p.n_groups + g) * p.channels_per_group;
  row.n_summed = n_summed_channels(p.n_channels, p.channels_per_group);
  row.difference = r == 1;
  row.length = length - r;
  return row;
}

template <typename scalar_t>
void transform_kernel(const TransformProblem& p, at::Tensor& out) {
  const scalar_t* x = p.x.data_ptr<scalar_t>();
  const scalar_t* weights = p.weights.data_ptr<scalar_t>();
  const int64_t* channels = p.channels.data_ptr<int64_t>();
  const int64_t* lengths = p.x_lengths.defined() ? p.x_lengths.data_ptr<int64_t>() : nullptr;
  scalar_t* features = out.data_ptr<scalar_t>();
  const int64_t R = p.n_representations, G = p.n_groups, K = p.n_kernels, F = p.n_features();
  const int64_t units = p.n_cases * p.n_dilations * R;
  [[maybe_unused]] const bool avx2 = path_of(kGroupPaths) == VectorPath::kAvx2;
  // (case, dilation, representation) units shared out one at a time (common/parallel.h), each
  // thread with its own padded row.
  for_each_shared_item<std::vector<float>>(
      units,
      [&](int64_t unit, std::vector<float>& padded) {
        const int64_t case_index = unit / (p.n_dilations * R), i = unit / R % p.n_dilations, r = unit % R;
        const int64_t d = dilation_of(i), length = lengths ? lengths[case_index] : p.n_timepoints;
        bool padded_ready = false;  // one channel: every group of (i, r) reads the same row
        for (int64_t g = 0; g < G; ++g) {
          const GroupRow<scalar_t> row = group_row(p, x, channels, length, case_index, i, r, g);
          const scalar_t* w = weights + ((i * R + r) * G + g) * K * kTaps;
          scalar_t* out_max = features + case_index * F + p.feature_offset(i, r, g);
          scalar_t* out_min = out_max + G * K;
#if SOFTDTW_TORCH_X86_INTRINSICS
          if constexpr (std::is_same_v<scalar_t, float>) {
            if (avx2) {
              if (!padded_ready || row.n_summed > 0) fill_padded(row, d, padded);
              padded_ready = true;
              group_features_avx2(padded.data() + pad_before(d), row.length, d, w, K, out_max, out_min);
              continue;
            }
          }
#endif
          group_features(row, d, w, K, out_max, out_min);
        }
      });
}

at::Tensor transform_cpu(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& channels,
                         const std::optional<at::Tensor>& x_lengths) {
  const TransformProblem p = prepare_transform(kTransformOp, x, weights, channels, x_lengths);
  // A big features matrix reuses the last freed one's block (common/table_memory.h).
  at::Tensor out = table_memory::empty({p.n_cases, p.n_features()}, p.x.options());
  if (p.n_cases == 0) return out;
  AT_DISPATCH_FLOATING_TYPES(p.x.scalar_type(), "hydra_transform", [&] { transform_kernel<scalar_t>(p, out); });
  check_features_finite(out);
  return out;
}

template <typename scalar_t>
void backward_kernel(const TransformProblem& p, const at::Tensor& grad, at::Tensor& grad_rows, at::Tensor& grad_w) {
  const scalar_t* x = p.x.data_ptr<scalar_t>();
  const scalar_t* weights = p.weights.data_ptr<scalar_t>();
  const int64_t* channels = p.channels.data_ptr<int64_t>();
  const int64_t* lengths = p.x_lengths.defined() ? p.x_lengths.data_ptr<int64_t>() : nullptr;
  const scalar_t* g_features = grad.data_ptr<scalar_t>();
  scalar_t* g_rows = grad_rows.data_ptr<scalar_t>();
  scalar_t* g_w = grad_w.data_ptr<scalar_t>();
  const int64_t R = p.n_representations, G = p.n_groups, K = p.n_kernels, F = p.n_features(), T = p.n_timepoints;
  const int64_t items = p.n_items();
  for_each_shared_item(p.n_cases * items, [&](int64_t unit) {
    const int64_t case_index = unit / items, item = unit % items;
    const int64_t i = item / (R * G), r = item / G % R, g = item % G;
    const int64_t length = lengths ? lengths[case_index] : T;
    const GroupRow<scalar_t> row = group_row(p, x, channels, length, case_index, i, r, g);
    group_backward(row, dilation_of(i), weights + item * K * kTaps, K,
                   g_features + case_index * F + p.feature_offset(i, r, g), g_rows + unit * T,
                   g_w + unit * K * kTaps);
  });
}

std::tuple<at::Tensor, at::Tensor> backward_cpu(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& weights,
                                                const at::Tensor& channels,
                                                const std::optional<at::Tensor>& x_lengths) {
  const TransformProblem p = prepare_transform(kBackwardOp, x, weights, channels, x_lengths);
  TORCH_CHECK_VALUE(grad.dim() == 2 && grad.size(0) == p.n_cases && grad.size(1) == p.n_features(), kBackwardOp,
                    ": expected grad of shape (", p.n_cases, ", ", p.n_features(), "), got shape ", grad.sizes());
  const at::Tensor g = grad.to(p.x.scalar_type()).contiguous();
  at::Tensor grad_rows = at::zeros({p.n_cases, p.n_dilations, p.n_representations, p.n_groups, p.n_timepoints},
                                   p.x.options());
  at::Tensor grad_w = at::zeros(
      {p.n_cases, p.n_dilations, p.n_representations, p.n_groups, p.n_kernels, kTaps}, p.x.options());
  if (p.n_cases == 0) return {grad_rows, grad_w};
  AT_DISPATCH_FLOATING_TYPES(p.x.scalar_type(), "_hydra_transform_backward",
                             [&] { backward_kernel<scalar_t>(p, g, grad_rows, grad_w); });
  return {grad_rows, grad_w};
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CPU, m) {
  m.impl("hydra_fit", &fit_cpu);
  m.impl("hydra_transform", &transform_cpu);
  m.impl("_hydra_transform_backward", &backward_cpu);
}

}  // namespace hydra
}  // namespace softdtw_torch
