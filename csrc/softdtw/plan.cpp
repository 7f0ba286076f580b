// The SoftDTW memory planner (plan.h).
#include "plan.h"

#include <ATen/Parallel.h>

#include <cstddef>
#include <iterator>
#include <string>

#include "constants.h"

namespace softdtw_torch::softdtw {

namespace {

// The CPU's forward with gradients pays where its pairs run in packs of short pairs (at most
// kMaxPackedLength steps, and at least as many pairs as threads: cpu/kernel.cpp's packs): a pack
// then keeps its cells' weights for its own backward, near in cache, instead of writing the
// (B, N, M) table and gathering it back. Measured on the 2-core Xeon VM, the op pairs forward +
// backward at 2 threads, with the weights kept (backward_pack_from_weights): 1.3-1.55x faster at
// 256 and 512 steps, 1.14-1.29x at 768, 0.83x at 1,024 and 2,048. float16 and bfloat16 keep the
// table path; the CUDA kernels have no such forward.
bool forward_with_grad_pays(const at::Tensor& x, const at::Tensor& y) {
  if (!x.device().is_cpu() || x.dim() != 3 || y.dim() != 3) return false;
  if (x.scalar_type() != y.scalar_type() || (x.scalar_type() != at::kFloat && x.scalar_type() != at::kDouble)) {
    return false;
  }
  // Symbolic sizes (torch.compile, torch.export) are guarded by the comparisons, not fixed: one
  // compiled graph serves every length and batch on the same side of the thresholds.
  const c10::SymBool short_pairs = x.sym_size(1).sym_le(kMaxPackedLength).sym_and(y.sym_size(1).sym_le(kMaxPackedLength));
  const c10::SymBool enough_pairs = x.sym_size(0).sym_ge(at::get_num_threads());
  return short_pairs.sym_and(enough_pairs).guard_bool(__FILE__, __LINE__);
}

// The strategies' names (the ops' option), in FusedCache's order.
constexpr const char* kCacheNames[] = {"nothing", "table", "borders", "gradients"};
static_assert(std::size(kCacheNames) == static_cast<std::size_t>(FusedCache::kGradients) + 1);

}  // namespace

const char* name_of(FusedCache cache) { return kCacheNames[static_cast<std::size_t>(cache)]; }

FusedCache fused_cache_named(const char* op, const char* option, c10::string_view name) {
  for (std::size_t i = 0; i < std::size(kCacheNames); ++i) {
    if (name == kCacheNames[i]) return static_cast<FusedCache>(i);
  }
  std::string choices;  // "nothing", "table", ... or "gradients"
  for (std::size_t i = 0; i < std::size(kCacheNames); ++i) {
    choices += std::string(i == 0 ? "" : i + 1 < std::size(kCacheNames) ? ", " : " or ") + '"' + kCacheNames[i] + '"';
  }
  TORCH_CHECK_VALUE(false, op, ": expected ", option, " to be one of ", choices, ", got \"", std::string(name), "\"");
}

FusedCache plan_fused_forward(const at::Tensor& x, const at::Tensor& y, bool gradient_needed, bool checkpoint) {
  if (!gradient_needed) return FusedCache::kNothing;
  if (checkpoint) return FusedCache::kBorders;
  if (forward_with_grad_pays(x, y)) return FusedCache::kGradients;
  return FusedCache::kTable;
}

}  // namespace softdtw_torch::softdtw
