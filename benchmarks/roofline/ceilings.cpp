// The machine's ceilings for the CPU kernels' inner work (benchmarks/bench_roofline.py), each
// measured on N threads at once, every thread on its own data held in L1:
//   fma_peak            float32 vector multiply-adds per second (Rocket's convolution);
//   compare_count_peak  `count += (value > bias)` per second (MiniRocket's PPV);
//   softdtw_cells_peak  SoftDTW cells per second through the kernels' own anti-diagonal loops
//                       (cpu/tiles.h, float32, the same exp and log1p per cell), without the
//                       wavefront's dependency, the tiles' borders, the costs or the table's
//                       traffic: forward_cells and backward_cells (the table's path), and
//                       forward_cells_with_weights and flow_cells (the packs' forward with
//                       gradients, whose backward takes the weights its forward kept);
//   softdtw_float64_cells_peak  the same in float64 for the all-pairs matrix and the barycenters'
//                       objective (forward; forward with weights and flow), and the same forward
//                       loops with their divisions replaced by multiplications: a bound on what
//                       any exact division could gain, not a ceiling of the kernels' bits.
// Each figure is the best of `trials`; a trial runs all threads together for a fixed amount of
// work, timed from the first start to the last finish.
#include <immintrin.h>
#include <torch/extension.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "csrc/softdtw/cpu/tiles.h"

namespace {

// Work per second over `threads` threads each running work(thread) once; the best of `trials`.
double best_rate(int threads, int trials, double work_per_thread, const std::function<void(int)>& work) {
  double best = 0.0;
  for (int trial = 0; trial < trials; ++trial) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
    for (std::thread& thread : pool) thread.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, threads * work_per_thread / seconds);
  }
  return best;
}

// Each thread stores its result (to its own cache line) so that the compiler keeps its loop.
constexpr int kMaxThreads = 256;
float sink[kMaxThreads * 16];

// ---------------------------------------------------------------------------------------------
// FMA: 10 independent accumulators (more than latency × throughput on current x86 cores).
constexpr int kAccumulators = 10;

__attribute__((target("avx2,fma"))) void fma_avx2(int64_t iterations, float* out) {
  __m256 acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_set1_ps(static_cast<float>(k));
  const __m256 scale = _mm256_set1_ps(0.999999f), shift = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_fmadd_ps(acc[k], scale, shift);
  }
  __m256 total = acc[0];
  for (int k = 1; k < kAccumulators; ++k) total = _mm256_add_ps(total, acc[k]);
  *out = _mm256_cvtss_f32(total);
}

__attribute__((target("avx512f"))) void fma_avx512(int64_t iterations, float* out) {
  __m512 acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k));
  const __m512 scale = _mm512_set1_ps(0.999999f), shift = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_fmadd_ps(acc[k], scale, shift);
  }
  __m512 total = acc[0];
  for (int k = 1; k < kAccumulators; ++k) total = _mm512_add_ps(total, acc[k]);
  *out = _mm512_reduce_add_ps(total);
}

// (multiply-adds per second, instruction set) for the widest vectors the machine has.
void check_threads(const char* op, int threads, int trials) {
  TORCH_CHECK_VALUE(threads >= 1 && threads <= kMaxThreads, op, ": expected 1 <= threads <= ", kMaxThreads, ", got ",
                    threads);
  TORCH_CHECK_VALUE(trials >= 1, op, ": expected trials >= 1, got ", trials);
}

std::tuple<double, std::string> fma_peak(int threads, int trials) {
  check_threads("fma_peak", threads, trials);
  const int64_t iterations = 20'000'000;
  double avx2 = 0.0, avx512 = 0.0;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    avx2 = best_rate(threads, trials, double(iterations) * kAccumulators * 8,
                     [&](int t) { fma_avx2(iterations, sink + t * 16); });
  }
  if (__builtin_cpu_supports("avx512f")) {
    avx512 = best_rate(threads, trials, double(iterations) * kAccumulators * 16,
                       [&](int t) { fma_avx512(iterations, sink + t * 16); });
  }
  TORCH_CHECK(avx2 > 0.0 || avx512 > 0.0, "fma_peak: this machine has neither AVX2 with FMA nor AVX-512");
  return avx512 > avx2 ? std::make_tuple(avx512, std::string("AVX-512")) : std::make_tuple(avx2, std::string("AVX2"));
}

// ---------------------------------------------------------------------------------------------
// Compare and count: 4 biases against each of 2 loaded vectors of values, one compare and one
// subtract (AVX2) or one masked add (AVX-512) per vector of (value, bias) pairs. The fastest of
// the shapes tried (1 vector x 8 biases ran out of AVX2's registers and was 30% slower).
constexpr int kBiases = 4;
constexpr int64_t kValues = 2048;  // 8 KiB of float32: in L1

__attribute__((target("avx2"))) void compare_count_avx2(const float* values, int64_t repeats, float* out) {
  __m256i count[kBiases];
  __m256 bias[kBiases];
  for (int k = 0; k < kBiases; ++k) {
    count[k] = _mm256_setzero_si256();
    bias[k] = _mm256_set1_ps(0.2f * static_cast<float>(k) - 0.3f);
  }
  for (int64_t r = 0; r < repeats; ++r) {
    for (int64_t j = 0; j < kValues; j += 16) {
      const __m256 v[2] = {_mm256_loadu_ps(values + j), _mm256_loadu_ps(values + j + 8)};
      for (int h = 0; h < 2; ++h) {
        for (int k = 0; k < kBiases; ++k) {
          count[k] = _mm256_sub_epi32(count[k], _mm256_castps_si256(_mm256_cmp_ps(v[h], bias[k], _CMP_GT_OQ)));
        }
      }
    }
  }
  __m256i total = count[0];
  for (int k = 1; k < kBiases; ++k) total = _mm256_add_epi32(total, count[k]);
  *out = static_cast<float>(_mm256_extract_epi32(total, 0));
}

__attribute__((target("avx512f"))) void compare_count_avx512(const float* values, int64_t repeats, float* out) {
  __m512i count[kBiases];
  __m512 bias[kBiases];
  const __m512i one = _mm512_set1_epi32(1);
  for (int k = 0; k < kBiases; ++k) {
    count[k] = _mm512_setzero_si512();
    bias[k] = _mm512_set1_ps(0.2f * static_cast<float>(k) - 0.3f);
  }
  for (int64_t r = 0; r < repeats; ++r) {
    for (int64_t j = 0; j < kValues; j += 32) {
      const __m512 v[2] = {_mm512_loadu_ps(values + j), _mm512_loadu_ps(values + j + 16)};
      for (int h = 0; h < 2; ++h) {
        for (int k = 0; k < kBiases; ++k) {
          count[k] = _mm512_mask_add_epi32(count[k], _mm512_cmp_ps_mask(v[h], bias[k], _CMP_GT_OQ), count[k], one);
        }
      }
    }
  }
  __m512i total = count[0];
  for (int k = 1; k < kBiases; ++k) total = _mm512_add_epi32(total, count[k]);
  *out = static_cast<float>(_mm512_reduce_add_epi32(total));
}

// (compares-and-counts per second, instruction set): of `isa`, "avx2" or "avx512" (the vector path
// MiniRocket's counting runs), or the faster of the two ("best").
std::tuple<double, std::string> compare_count_peak(int threads, int trials, const std::string& isa) {
  TORCH_CHECK(isa == "best" || isa == "avx2" || isa == "avx512", "compare_count_peak: isa must be best, avx2 or "
              "avx512, got ", isa);
  check_threads("compare_count_peak", threads, trials);
  const int64_t repeats = 20'000;
  std::vector<std::vector<float>> values(threads, std::vector<float>(kValues));
  for (auto& row : values) {
    for (int64_t j = 0; j < kValues; ++j) row[j] = static_cast<float>((j * 37) % 101) / 101.0f - 0.5f;
  }
  const double work = double(repeats) * kValues * kBiases;
  double avx2 = 0.0, avx512 = 0.0;
  if (__builtin_cpu_supports("avx2") && isa != "avx512") {
    avx2 = best_rate(threads, trials, work,
                     [&](int t) { compare_count_avx2(values[t].data(), repeats, sink + t * 16); });
  }
  if (__builtin_cpu_supports("avx512f") && isa != "avx2") {
    avx512 = best_rate(threads, trials, work,
                       [&](int t) { compare_count_avx512(values[t].data(), repeats, sink + t * 16); });
  }
  TORCH_CHECK(avx2 > 0.0 || avx512 > 0.0, "compare_count_peak: this machine runs no ", isa == "best" ? "AVX2 or AVX-512"
              : isa);
  return avx512 > avx2 ? std::make_tuple(avx512, std::string("AVX-512")) : std::make_tuple(avx2, std::string("AVX2"));
}

// ---------------------------------------------------------------------------------------------
// SoftDTW's cells: the kernels' own loops over one anti-diagonal of a tile (kTile cells), on 8
// independent diagonals in turn, float32 R as the double-float the kernels carry, γ = 1. The
// forward goes through the kernels' dispatch (forward_diagonal*), which picks the interleaved
// loops where the kernels do (cpu/interleaved_vectors.h).
namespace cpu = softdtw_torch::cpu;
using softdtw_torch::NaturalCellFunctions;
using softdtw_torch::RValue;
using softdtw_torch::Run;
constexpr int64_t kCells = cpu::kTile;
constexpr int64_t kDiagonals = 8;

template <typename T>
struct Diagonals {
  // R-like inputs (diag, up, left, self) and plain inputs (cost, E and weights of successors).
  cpu::RunVector<RValue<T>> r[4], out;
  std::vector<T> plain[7], e_out, w_out[3];
  Diagonals() {
    const int64_t n = kCells * kDiagonals;
    for (int i = 0; i < 4; ++i) {
      r[i].resize(n);
      for (int64_t t = 0; t < n; ++t) {
        softdtw_torch::store(r[i].at(0), t, softdtw_torch::exact_r(T(50) + static_cast<T>((t * 7 + i * 3) % 13)));
      }
    }
    out.resize(n);
    for (auto& p : plain) p.assign(n, T(0.25));
    e_out.resize(n);
    for (auto& w : w_out) w.resize(n);
  }
};

// `cells(d, o)` on the 8 diagonals of each thread's data in turn, `repeats` times: cells per second.
template <typename T, typename Cells>
double cells_rate(int threads, int trials, int64_t repeats, std::vector<Diagonals<T>>& data, const Cells& cells) {
  return best_rate(threads, trials, double(repeats) * kDiagonals * kCells, [&](int t) {
    Diagonals<T>& d = data[t];
    for (int64_t r = 0; r < repeats; ++r) {
      for (int64_t k = 0; k < kDiagonals; ++k) cells(d, k * kCells);
    }
  });
}

// Cells per second of the forward loops and the flow, float32 or float64: the kernels' own calls.
struct ForwardAndFlowRates {
  double forward, forward_with_weights, flow;
};
template <typename T>
ForwardAndFlowRates forward_and_flow_rates(int threads, int trials, int64_t repeats, std::vector<Diagonals<T>>& data,
                                           NaturalCellFunctions<T> f) {
  const double forward = cells_rate(threads, trials, repeats, data, [&](Diagonals<T>& d, int64_t o) {
    cpu::forward_diagonal<T>(d.plain[0].data() + o, d.r[0].at(o), d.r[1].at(o), d.r[2].at(o), d.out.at(o), kCells, f);
  });
  const double forward_with_weights = cells_rate(threads, trials, repeats, data, [&](Diagonals<T>& d, int64_t o) {
    cpu::forward_diagonal_with_weights<T>(d.plain[0].data() + o, d.r[0].at(o), d.r[1].at(o), d.r[2].at(o),
                                          d.out.at(o), d.w_out[0].data() + o, d.w_out[1].data() + o,
                                          d.w_out[2].data() + o, kCells, f);
  });
  const double flow = cells_rate(threads, trials, repeats, data, [&](Diagonals<T>& d, int64_t o) {
    cpu::flow_cells<T>(d.plain[1].data() + o, d.plain[2].data() + o, d.plain[3].data() + o, d.plain[4].data() + o,
                       d.plain[5].data() + o, d.plain[6].data() + o, d.e_out.data() + o, kCells);
  });
  return {forward, forward_with_weights, flow};
}

// Cells per second: (forward, backward) of the table's path, (forward with weights, flow) of the
// packs' path.
std::tuple<double, double, double, double> softdtw_cells_peak(int threads, int trials) {
  check_threads("softdtw_cells_peak", threads, trials);
  const int64_t repeats = 20'000;
  const auto f = NaturalCellFunctions<float>::for_gamma(1.0);
  std::vector<Diagonals<float>> data(threads);
  const ForwardAndFlowRates rates = forward_and_flow_rates(threads, trials, repeats, data, f);
  const double backward = cells_rate(threads, trials, repeats, data, [&](Diagonals<float>& d, int64_t o) {
    cpu::backward_cells<float>(d.r[3].at(o), d.r[0].at(o), d.r[1].at(o), d.r[2].at(o), d.plain[1].data() + o,
                               d.plain[2].data() + o, d.plain[3].data() + o, d.plain[4].data() + o,
                               d.plain[5].data() + o, d.plain[6].data() + o, d.e_out.data() + o, d.w_out[0].data() + o,
                               d.w_out[1].data() + o, d.w_out[2].data() + o, kCells, f);
  });
  return {rates.forward, backward, rates.forward_with_weights, rates.flow};
}

// ---------------------------------------------------------------------------------------------
// float64 cells without the divider: a bound, not a ceiling of the kernels' bits. The float64 cell
// math divides four times a cell in the forward (exp's Padé quotient twice, log1p's two) and once
// more for the weights' normalisation, each a correctly rounded division that the bits depend on.
// DivisionFree runs the same interleaved operations with every one of those divisions replaced by
// a multiplication (wrong values, same instruction count otherwise): the time any exact division,
// however cheap, would leave. Where the divider binds, this runs much faster than the real loop;
// where the vector ports do, about as fast.
#if SOFTDTW_TORCH_HAS_INTERLEAVED_VECTORS
struct DivisionFree : cpu::Interleaved<double> {
  DivisionFree() = default;
  DivisionFree(const cpu::Interleaved<double>& x) : cpu::Interleaved<double>(x) {}
  DivisionFree(double x) : cpu::Interleaved<double>(x) {}
};
inline DivisionFree operator/(const DivisionFree& a, const cpu::Interleaved<double>& b) { return a * b; }
inline DivisionFree operator/(const cpu::Interleaved<double>& a, const DivisionFree& b) { return a * b; }
inline DivisionFree operator/(const DivisionFree& a, const DivisionFree& b) { return a * b; }

// NaturalCellFunctions<double>'s functions on DivisionFree vectors. γ comes as an argument, as in the
// kernels (a constant 1 would let the compiler drop the multiplications by γ and 1/γ).
struct DivisionFreeFunctions {
  DivisionFree gamma, inv_gamma;
  static constexpr bool kHardMin = false;
  DivisionFree term(const DivisionFree& delta) const {
    return softdtw_torch::cpu_math::exp(DivisionFree(delta * inv_gamma));
  }
  DivisionFree gamma_log1p(const DivisionFree& s) const { return gamma * softdtw_torch::cpu_math::log1p(s); }
  DivisionFree reciprocal(const DivisionFree& s) const { return DivisionFree(1.0) / s; }
};

DivisionFree load_division_free(const double* p) { return cpu::load_interleaved(p); }

// forward_cells_interleaved and forward_cells_with_weights_interleaved (cpu/interleaved_vectors.h)
// on DivisionFree vectors.
__attribute__((target("arch=x86-64-v4"), flatten)) void division_free_forward(Diagonals<double>& d, int64_t o,
                                                                              NaturalCellFunctions<double> g) {
  const DivisionFreeFunctions f{g.gamma, g.inv_gamma};
  for (int64_t t = o; t < o + kCells; t += cpu::kInterleavedCells<double>) {
    const DivisionFree value =
        softdtw_torch::cell_value(load_division_free(d.plain[0].data() + t), load_division_free(d.r[0].at(t)),
                                  load_division_free(d.r[1].at(t)), load_division_free(d.r[2].at(t)), f);
    cpu::store_interleaved(d.out.at(t), value);
  }
}
__attribute__((target("arch=x86-64-v4"), flatten)) void division_free_forward_with_weights(
    Diagonals<double>& d, int64_t o, NaturalCellFunctions<double> g) {
  const DivisionFreeFunctions f{g.gamma, g.inv_gamma};
  for (int64_t t = o; t < o + kCells; t += cpu::kInterleavedCells<double>) {
    const softdtw_torch::CellValueAndWeights<DivisionFree> s = softdtw_torch::cell_value_and_weights(
        load_division_free(d.plain[0].data() + t), load_division_free(d.r[0].at(t)),
        load_division_free(d.r[1].at(t)), load_division_free(d.r[2].at(t)), f);
    cpu::store_interleaved(d.out.at(t), s.value);
    cpu::store_interleaved(d.w_out[0].data() + t, s.w.diag);
    cpu::store_interleaved(d.w_out[1].data() + t, s.w.up);
    cpu::store_interleaved(d.w_out[2].data() + t, s.w.left);
  }
}
#endif

// float64 cells per second, the loops of the all-pairs matrix (cdist_soft_dtw: packs' forward without
// gradients) and of the barycenters' objective (packs' forward with weights, flow): (forward,
// forward without the divider, forward with weights, forward with weights without the divider,
// flow). The bounds without the divider need the interleaved loops (Intel CPUs with AVX-512):
// 0 elsewhere.
std::tuple<double, double, double, double, double> softdtw_float64_cells_peak(int threads, int trials) {
  check_threads("softdtw_float64_cells_peak", threads, trials);
  const int64_t repeats = 20'000;
  const auto f = NaturalCellFunctions<double>::for_gamma(1.0);
  std::vector<Diagonals<double>> data(threads);
  const ForwardAndFlowRates rates = forward_and_flow_rates(threads, trials, repeats, data, f);
  double forward_free = 0.0, forward_with_weights_free = 0.0;
#if SOFTDTW_TORCH_HAS_INTERLEAVED_VECTORS
  if (cpu::interleaved_vectors_apply<double>(kCells)) {
    forward_free = cells_rate(threads, trials, repeats, data,
                              [&](Diagonals<double>& d, int64_t o) { division_free_forward(d, o, f); });
    forward_with_weights_free = cells_rate(threads, trials, repeats, data, [&](Diagonals<double>& d, int64_t o) {
      division_free_forward_with_weights(d, o, f);
    });
  }
#endif
  return {rates.forward, forward_free, rates.forward_with_weights, forward_with_weights_free, rates.flow};
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("fma_peak", &fma_peak, "float32 multiply-adds per second, and the instruction set", py::arg("threads"),
        py::arg("trials") = 5);
  m.def("compare_count_peak", &compare_count_peak, "compares-and-counts per second, and the instruction set",
        py::arg("threads"), py::arg("trials") = 5, py::arg("isa") = "best");
  m.def("softdtw_cells_peak", &softdtw_cells_peak,
        "SoftDTW cells per second (float32): forward and backward, forward with weights and flow",
        py::arg("threads"), py::arg("trials") = 5);
  m.def("softdtw_float64_cells_peak", &softdtw_float64_cells_peak,
        "SoftDTW cells per second (float64): forward, forward without the divider (a bound), forward with weights, "
        "the same without the divider, flow",
        py::arg("threads"), py::arg("trials") = 5);
}
