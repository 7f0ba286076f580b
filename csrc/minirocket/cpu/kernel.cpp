// MiniRocket on the CPU (docs/design/rocket.md §7, aeon's _minirocket.py):
//   minirocket_fit        aeon's _static_fit (its body, fit_cpu, is common/minirocket/fit.cpp's:
//                         MultiRocket's fit shares it);
//   minirocket_transform  PPV features, bit-exact with aeon's float32 transform.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "../../common/macros.h"
#include "../../common/cpu.h"
#include "../../common/parallel.h"
#include "../../common/table_memory.h"
#include "../../common/minirocket/problem.h"
#include "../../common/minirocket/rows.h"
#include "vector_passes.h"

namespace softdtw_torch {
namespace minirocket {

// Hot loops (SOFTDTW_TORCH_CPU_CLONES) use only correctly rounded IEEE additions, comparisons and
// divisions (no FMA, -ffp-contract=off): every ISA version computes the same bits.
namespace {

// ---------------------------------------------------------------------------------------------
// Transform. Work items are (case, dilation) pairs. Per case: -x and G = 3x zero-padded, once per
// thread; per dilation C_alpha once per used channel; per kernel its output over the counted
// segment, compared with each of the kernel's biases.

// features[j] = ppv_ratio(count, n), count the number of t < n with v(t) > bias[j], j < NB, where
// v(t) = c[t] (stored outputs) or, fused for one-channel combinations, c[t] + gc[t] with
// c = (alpha + ga) + gb (aeon adds the output to np.sum's 0, which only turns -0 into +0: no
// comparison changes). NB biases per pass keep their counters in registers; int32 lanes
// vectorize best, blocks keep them from overflow. Most of the transform's time is spent here.
// AVX2 and SSE2 turn a compare into a 0/-1 lane that one subtraction counts; with AVX-512 GCC
// compares into a mask register and needs one more instruction per compare to count it, which
// measured 20-30% slower on the 2-core Zen 4 VM (benchmarks/README.md): so no AVX-512 clone of
// this loop. The portable path's loop: the avx2 and avx512 paths take count_greater_avx2 and
// count_greater_avx512 (vector_passes.h).
template <int NB, bool kFused>
SOFTDTW_TORCH_CPU_CLONES_NO_AVX512 void count_greater(const float* __restrict c, const float* __restrict gc, int64_t n,
                                                      const float* bias, float* features) {
  float b[NB];
  int64_t total[NB];
  for (int j = 0; j < NB; ++j) {
    b[j] = bias[j];
    total[j] = 0;
  }
  constexpr int64_t kBlock = int64_t(1) << 30;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t stop = std::min(n, start + kBlock);
    int32_t k[NB] = {};
    for (int64_t t = start; t < stop; ++t) {
      const float v = kFused ? c[t] + gc[t] : c[t];
      for (int j = 0; j < NB; ++j) k[j] += v > b[j];
    }
    for (int j = 0; j < NB; ++j) total[j] += k[j];
  }
  for (int j = 0; j < NB; ++j) features[j] = ppv_ratio(static_cast<double>(total[j]), static_cast<double>(n));
}

// Features for nb biases (any number): on the vector paths (float32 ratios: segments under 2^24)
// count_all_passes, else passes of 8, then 4, then the remainder.
template <bool kFused>
void count_all(VectorPath path, const float* c, const float* gc, int64_t n, const float* bias, int64_t nb,
               float* features) {
#if SOFTDTW_TORCH_X86_INTRINSICS
  if (n < (int64_t(1) << 24) && path == VectorPath::kAvx512) {
    return count_all_passes<Avx512Passes, kFused>(c, gc, n, bias, nb, features);
  }
  if (n < (int64_t(1) << 24) && path == VectorPath::kAvx2) {
    return count_all_passes<Avx2Passes, kFused>(c, gc, n, bias, nb, features);
  }
#endif
  int64_t j = 0;
  for (; j + 8 <= nb; j += 8) count_greater<8, kFused>(c, gc, n, bias + j, features + j);
  if (j + 4 <= nb) {
    count_greater<4, kFused>(c, gc, n, bias + j, features + j);
    j += 4;
  }
  switch (nb - j) {
    case 3: count_greater<3, kFused>(c, gc, n, bias + j, features + j); break;
    case 2: count_greater<2, kFused>(c, gc, n, bias + j, features + j); break;
    case 1: count_greater<1, kFused>(c, gc, n, bias + j, features + j); break;
    default: break;
  }
}

// Features of K one-channel kernels with nb biases each on a segment of n positions: kernel i's
// values rows[i][t] + gcs[i][t], its biases bias[i·stride + j], its features
// features[i·stride + j]. In one pass where kernels_per_pass allows it (K > 1), else one kernel
// after the other.
void count_kernels(VectorPath path, int64_t K, int64_t nb, const float* const* rows, const float* const* gcs,
                   int64_t n, const float* bias, float* features, int64_t stride) {
#if SOFTDTW_TORCH_X86_INTRINSICS
  if (K > 1) {
    const auto& table = path == VectorPath::kAvx512 ? kCountKernels<Avx512Passes> : kCountKernels<Avx2Passes>;
    return table[(K - 1) * kMaxBiasesPerKernel + (nb - 1)](rows, gcs, n, bias, features, stride);
  }
#endif
  for (int64_t i = 0; i < K; ++i) {
    count_all<true>(path, rows[i], gcs[i], n, bias + i * stride, nb, features + i * stride);
  }
}

// One-channel kernels of one dilation are counted up to this many at a time (count_kernels' K):
// on the vector paths, as many as the pass's counters hold (on AVX-512 32 for series shorter than
// kMaxPackedSegment, else 16; on AVX2 24, else 12) and as keep the rows of a window of 2K kernels
// (below) within kWindowFloats, 32 KiB, so that they stay in the L1 cache with the series:
// grouped on 1460-point series with 8 rows of 5.7 KiB, the ACSF1 set ran 5% slower than one
// kernel a pass (benchmarks/README.md). A pass's fixed cost matters on short series only.
constexpr int64_t kWindowFloats = 8192;
constexpr int64_t kRowSlots = 2 * kMaxKernelsPerPass;
static_assert((kRowSlots & (kRowSlots - 1)) == 0, "slots are taken modulo a power of two by a mask");

int64_t kernels_per_pass(VectorPath path, int64_t nb, int64_t T) {
  if (path == VectorPath::kPortable) return 1;
  const int vectors = counter_vectors(path);
  return std::max<int64_t>(1, std::min<int64_t>({kMaxKernelsPerPass, counters_per_pass(vectors, T) / nb,
                                                  kWindowFloats / (2 * T)}));
}

// The counting passes' path (common/cpu.h), measured on first use by a probe of the passes the
// transform runs: 84 kernels of 4 biases (several kernels a pass) and of 24 (one kernel, packed
// counters), each on 150 and 1,000 positions (GunPoint's length and a long series), grouped as
// transform_dilation groups them: about 0.1-0.3 ms a path on a 2-core Xeon VM.
void probe_counting(VectorPath path);

const PathRule kCountingPaths{"minirocket", {VectorPath::kAvx512, VectorPath::kAvx2, VectorPath::kPortable},
                              &probe_counting};
const bool kCountingPathsRegistered = register_path_rule(kCountingPaths);

void probe_counting(VectorPath path) {
  constexpr int64_t kMostBiases = 24, kLong = 1000;
  static const std::vector<float> values = [] {
    std::vector<float> v(2 * kLong + kKernels * kMostBiases);
    uint32_t state = 12345;
    for (float& x : v) {
      state = state * 1664525u + 1013904223u;
      x = static_cast<float>(state >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
    return v;
  }();
  std::vector<float> features(kKernels * kMostBiases);
  const float* row = values.data();
  const float* gc = values.data() + kLong;
  const float* biases = values.data() + 2 * kLong;
  for (int64_t nb : {int64_t(4), kMostBiases}) {
    for (int64_t n : {int64_t(150), kLong}) {
      const int64_t K = kernels_per_pass(path, nb, n);
      const float* rows[kMaxKernelsPerPass];
      const float* gcs[kMaxKernelsPerPass];
      for (int64_t i = 0; i < K; ++i) {
        rows[i] = row + i;
        gcs[i] = gc + i;
      }
      for (int64_t k = 0; k + K <= kKernels; k += K) {
        count_kernels(path, K, nb, rows, gcs, n - K, biases + k * nb, features.data() + k * nb, nb);
      }
    }
  }
}

// kTapPair[k]: the index of kernel k's first two taps (a, b) among the 28 pairs, in the order the
// kernels (combinations(range(9), 3)) meet them: non-decreasing in k.
inline constexpr std::array<int, kKernels> kTapPair = [] {
  std::array<int, kKernels> pair{};
  for (int64_t k = 1; k < kKernels; ++k) {
    const bool same = kTaps[k][0] == kTaps[k - 1][0] && kTaps[k][1] == kTaps[k - 1][1];
    pair[k] = pair[k - 1] + (same ? 0 : 1);
  }
  return pair;
}();

// One thread's buffers, reused across its work items.
struct Workspace {
  int64_t prepared_case = -1;  // the case `neg` and `gpad` hold
  int64_t T = 0, pad = 0, padded = 0;
  int64_t row_stride = 0;  // T rounded up to 16 floats: with_ab's rows start on cache lines
  AlignedVector<float> neg, gpad, alpha, conv, with_a, with_ab;
  std::vector<int64_t> alpha_row;  // channel -> row of `alpha` for the current dilation
  // One-channel partial sums of the current dilation over the whole series: with_a = alpha + G[a]
  // for with_a_key = 9·channel + a, and with_ab = with_a + G[b] in slots (rows of row_stride
  // floats), tap pair index p's in slot p mod the dilation's slot count (a power of two, at least
  // 2 · kernels_per_pass, at most kRowSlots), with_ab_key[slot] = 64·channel + p (-1: none yet).
  // Kernels go in windows of 2 · kernels_per_pass consecutive ones, whose tap pair indices are as
  // many consecutive numbers at most: a window's rows never share a slot, and each is computed
  // once per dilation and channel.
  int64_t with_a_key = -1;
  std::array<int64_t, kRowSlots> with_ab_key{};
};

// Case i of length T (its own length with x_lengths): -x and G = 3x with zero padding, from x
// converted to float32 (as torch's .to(float32) and numpy's astype round). False if a converted
// value is NaN or inf.
template <typename scalar_t>
bool prepare_case(const TransformProblem& p, int64_t i, int64_t T, Workspace& w) {
  const int64_t C = p.n_channels;
  const scalar_t* x = p.x.data_ptr<scalar_t>() + i * C * p.n_timepoints;
  // Shifts beyond ±T only read zeros: clamp them to ±T, so padding by min(4·max dilation, T) suffices.
  w.T = T;
  w.pad = std::min<int64_t>(4 * p.max_dilation, T);
  w.padded = T + 2 * w.pad;
  w.neg.resize(static_cast<size_t>(C * T));
  w.gpad.assign(static_cast<size_t>(C * w.padded), 0.0f);
  bool finite = true;
  for (int64_t c = 0; c < C; ++c) {
    const scalar_t* row = x + c * p.n_timepoints;
    float* neg = w.neg.data() + c * T;
    float* g = w.gpad.data() + c * w.padded + w.pad;
    for (int64_t t = 0; t < T; ++t) {
      const float v = static_cast<float>(row[t]);
      finite = finite && std::isfinite(v);
      neg[t] = -v;
      g[t] = 3.0f * v;
    }
  }
  w.conv.resize(static_cast<size_t>(T));
  w.with_a.resize(static_cast<size_t>(T));
  w.row_stride = (T + 15) / 16 * 16;
  w.alpha_row.assign(static_cast<size_t>(C), -1);
  w.prepared_case = i;
  return finite;
}

// Features of dilation index di for the case prepared in w, written to the case's row `out`.
// used: the channels the dilation's kernels read; shared_channel: the channel of all its kernels
// when each reads one and the same (univariate series), else -1; path: the counting passes'.
void transform_dilation(const TransformProblem& p, const std::vector<int64_t>& used, int64_t shared_channel,
                        int64_t di, VectorPath path, float* out, Workspace& w) {
  const int64_t T = w.T, padded = w.padded, pad = w.pad;
  const int64_t d = p.combinations[di * kKernels].dilation;
  // C_alpha of every channel this dilation uses, in aeon's order of the 8 shifted copies of -x.
  w.alpha.resize(used.size() * static_cast<size_t>(T));
  for (size_t r = 0; r < used.size(); ++r) {
    const float* neg = w.neg.data() + used[r] * T;
    float* alpha = w.alpha.data() + r * T;
    std::copy(neg, neg + T, alpha);
    for (int64_t o : {-4, -3, -2, -1, 1, 2, 3, 4}) {
      const int64_t s = o * d;
      if (s <= -T || s >= T) continue;
      if (s < 0) {
        add_to(alpha - s, neg, T + s);  // alpha[t] += -x[t + s], t >= -s
      } else {
        add_to(alpha, neg + s, T - s);  // alpha[t] += -x[t + s], t < T - s
      }
    }
    w.alpha_row[used[r]] = static_cast<int64_t>(r);
  }
  const int64_t nf = p.combinations[di * kKernels].n_features;
  if (nf == 0) return;
  // Kernel k's biases and features start at base + k·nf (problem.cpp's layout).
  const int64_t base = p.combinations[di * kKernels].feature_start;
  const float* biases = p.biases.data() + base;
  float* features = out + base;
  const int64_t group = shared_channel >= 0 ? kernels_per_pass(path, nf, T) : 1;
  int64_t slots = 2;  // a power of two, at least a window's 2 · group kernels
  while (slots < 2 * group) slots *= 2;
  w.with_ab.resize(static_cast<size_t>(slots * w.row_stride));
  w.with_a_key = -1;
  w.with_ab_key.fill(-1);
  auto shift = [&](int tap) { return std::clamp<int64_t>((tap - 4) * d, -T, T); };
  auto gamma_row = [&](int64_t ch) { return w.gpad.data() + ch * padded + pad; };  // G[t] of channel ch
  // ((alpha + G[a]) + G[b]) of one-channel kernel k on channel ch, over the whole series: shared by
  // the kernels with the same a, b (and alpha + G[a] by those with the same a).
  auto with_ab_row = [&](int64_t k, int64_t ch) -> const float* {
    const int64_t pair = kTapPair[k], slot = pair & (slots - 1), key = 64 * ch + pair;
    float* row = w.with_ab.data() + slot * w.row_stride;
    if (w.with_ab_key[slot] != key) {
      const int ta = kTaps[k][0], tb = kTaps[k][1];
      if (w.with_a_key != 9 * ch + ta) {
        add_rows(w.with_a.data(), w.alpha.data() + w.alpha_row[ch] * T, gamma_row(ch) + shift(ta), T);
        w.with_a_key = 9 * ch + ta;
      }
      add_rows(row, w.with_a.data(), gamma_row(ch) + shift(tb), T);
      w.with_ab_key[slot] = key;
    }
    return row;
  };
  if (shared_channel >= 0) {
    // Every kernel on one channel (univariate series): windows of 2 · group kernels, the rows of
    // a window first, then its kernels of each segment (the parity of di + k) in one pass.
    const int64_t ch = shared_channel;
    const float* g = gamma_row(ch);
    for (int64_t first = 0; first < kKernels; first += 2 * group) {
      const int64_t last = std::min(kKernels, first + 2 * group);
      const float* window_rows[kRowSlots];
      for (int64_t k = first; k < last; ++k) window_rows[k - first] = with_ab_row(k, ch);
      for (int64_t k0 = first; k0 < first + 2 && k0 < last; ++k0) {
        int64_t lo, hi;
        ppv_segment(T, d, di, k0, &lo, &hi);
        const float* rows[kMaxKernelsPerPass];
        const float* gcs[kMaxKernelsPerPass];
        int64_t K = 0;
        for (int64_t k = k0; k < last; k += 2, ++K) {
          rows[K] = window_rows[k - first] + lo;
          gcs[K] = g + lo + shift(kTaps[k][2]);
          if (hi == lo) std::fill(features + k * nf, features + (k + 1) * nf, 0.0f);  // ppv_value(0, 0) = 0
        }
        if (hi > lo) count_kernels(path, K, nf, rows, gcs, hi - lo, biases + k0 * nf, features + k0 * nf, 2 * nf);
      }
    }
    return;
  }
  for (int64_t k = 0; k < kKernels; ++k) {
    const Combination& cb = p.combinations[di * kKernels + k];
    int64_t lo, hi;
    ppv_segment(T, d, di, k, &lo, &hi);
    if (hi == lo) {  // an empty segment counts nothing: ppv_value(0, 0) = 0
      std::fill(features + k * nf, features + (k + 1) * nf, 0.0f);
      continue;
    }
    if (cb.n_channels == 1) {  // the output is never stored: each pass over the biases adds G[c]
      const int64_t ch = p.channel_indices[cb.channel_start];
      count_all<true>(path, with_ab_row(k, ch) + lo, gamma_row(ch) + lo + shift(kTaps[k][2]), hi - lo, biases + k * nf, nf,
                      features + k * nf);
      continue;
    }
    for (int64_t j = 0; j < cb.n_channels; ++j) {  // several channels: the summed output, stored
      const int64_t c = p.channel_indices[cb.channel_start + j];
      const float* g = gamma_row(c) + lo;
      combine_channel(w.conv.data(), w.alpha.data() + w.alpha_row[c] * T + lo, g + shift(kTaps[k][0]),
                      g + shift(kTaps[k][1]), g + shift(kTaps[k][2]), hi - lo, j == 0);
    }
    count_all<false>(path, w.conv.data(), nullptr, hi - lo, biases + k * nf, nf, features + k * nf);
  }
}

at::Tensor transform_cpu(const at::Tensor& x, const at::Tensor& num_channels_per_combination,
                         const at::Tensor& channel_indices, const at::Tensor& dilations,
                         const at::Tensor& num_features_per_dilation, const at::Tensor& biases,
                         const std::optional<at::Tensor>& x_lengths) {
  const TransformProblem p = prepare_transform(x, num_channels_per_combination, channel_indices, dilations,
                                               num_features_per_dilation, biases, x_lengths, /*to_float32=*/false);
  // A big features matrix reuses the last freed one's block (common/table_memory.h).
  at::Tensor out = table_memory::empty({p.n_cases, p.n_features}, p.x.options().dtype(at::kFloat));
  if (p.n_cases == 0 || p.n_features == 0) return out;
  const int64_t n_dilations = static_cast<int64_t>(p.combinations.size()) / kKernels;
  std::vector<std::vector<int64_t>> channels_of_dilation(static_cast<size_t>(n_dilations));
  std::vector<int64_t> shared_channel(static_cast<size_t>(n_dilations), -1);
  for (int64_t di = 0; di < n_dilations; ++di) {
    std::vector<char> used(static_cast<size_t>(p.n_channels), 0);
    bool one_channel = true;
    for (int64_t k = 0; k < kKernels; ++k) {
      const Combination& cb = p.combinations[di * kKernels + k];
      for (int64_t j = 0; j < cb.n_channels; ++j) used[p.channel_indices[cb.channel_start + j]] = 1;
      one_channel = one_channel && cb.n_channels == 1;
    }
    for (int64_t c = 0; c < p.n_channels; ++c) {
      if (used[c]) channels_of_dilation[di].push_back(c);
    }
    if (one_channel && channels_of_dilation[di].size() == 1) shared_channel[di] = channels_of_dilation[di][0];
  }
  const int64_t* lengths = p.x_lengths.defined() ? p.x_lengths.data_ptr<int64_t>() : nullptr;
  float* op = out.data_ptr<float>();
  const VectorPath path = path_of(kCountingPaths);  // decided before the threads start
  // (case, dilation) items, case-major, shared out one at a time (common/parallel.h): all threads
  // stay busy with few cases. Each feature is computed by one thread in a fixed order.
  std::atomic<bool> not_finite{false};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, p.x.scalar_type(), "minirocket_transform", [&] {
    for_each_shared_item<Workspace>(
        p.n_cases * n_dilations,
        [&](int64_t item, Workspace& w) {
          const int64_t i = item / n_dilations, di = item % n_dilations;
          if (w.prepared_case != i && !prepare_case<scalar_t>(p, i, lengths ? lengths[i] : p.n_timepoints, w)) {
            not_finite = true;
          }
          transform_dilation(p, channels_of_dilation[di], shared_channel[di], di, path, op + i * p.n_features, w);
        },
        [&] { return not_finite.load(); });
  });
  TORCH_CHECK_VALUE(!not_finite, kTransformOp, kNotFiniteMessage);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(softdtw_torch, CPU, m) {
  m.impl("minirocket_fit", &fit_cpu);
  m.impl("minirocket_transform", &transform_cpu);
}

}  // namespace minirocket
}  // namespace softdtw_torch
