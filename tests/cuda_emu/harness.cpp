// A torch-free harness for every CUDA kernel of the library: plain arrays in, results out.
//
// The same source builds two ways:
//   - with a host C++ compiler (g++ -std=c++20 -pthread): the device code runs on the CPU under
//     the CUDA emulator (cuda_emu.h). The tests build it plain, with AddressSanitizer and
//     UndefinedBehaviorSanitizer (memcheck), and with ThreadSanitizer (racecheck: cuda_emu.h tells
//     it which operations order memory between CUDA threads), and compare its results with the
//     emulated ops and the CPU ops (tests/cuda_emu/test_harness.py);
//   - with nvcc (nvcc -x cu -std=c++20 -arch=sm_XX): the same launches on a GPU, or under any GPU
//     simulator, so that they run exactly what CI runs on the CPU.
//
// Usage: harness FAMILY IN_DIR OUT_DIR, FAMILY one of softdtw_float32, softdtw_float64, rocket,
// minirocket, multirocket, hydra. IN_DIR holds meta.txt ("name value" lines) and one raw little-endian file NAME.bin
// per input array; each result is written to OUT_DIR/NAME.bin. What each family reads and writes
// is listed at its function below.
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#define SDTW_CUDA_EMULATION 1
#include "cuda_emu.h"
#include "emulated_launch.h"
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hydra/cuda/transform.cuh"
#include "minirocket/cuda/transform.cuh"
#include "multirocket/cuda/transform.cuh"
#include "rocket/cuda/convolve.cuh"
#include "softdtw/cuda/tiles.cuh"

namespace {

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "harness: %s\n", message.c_str());
  std::exit(2);
}

#if defined(__CUDACC__)
void check_cuda(cudaError_t error, const char* what) {
  if (error != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(error));
}
#endif

// An array in device memory (host memory under the emulator), filled from and copied back to the
// host as raw bytes.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& values) : DeviceArray(values.size()) {
    upload(values.data());
  }
  explicit DeviceArray(size_t size, T fill = T()) : size_(size) {
#if defined(__CUDACC__)
    check_cuda(cudaMalloc(&data_, std::max<size_t>(size_, 1) * sizeof(T)), "cudaMalloc");
#else
    storage_.resize(std::max<size_t>(size_, 1) * sizeof(T));
    data_ = reinterpret_cast<T*>(storage_.data());
#endif
    std::unique_ptr<T[]> filled(new T[size_ == 0 ? 1 : size_]);
    std::fill(filled.get(), filled.get() + size_, fill);
    upload(filled.get());
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() {
#if defined(__CUDACC__)
    cudaFree(data_);
#endif
  }
  T* get() const { return data_; }
  std::vector<unsigned char> bytes() const {
    std::vector<unsigned char> out(size_ * sizeof(T));
#if defined(__CUDACC__)
    check_cuda(cudaMemcpy(out.data(), data_, out.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
#else
    std::copy(storage_.begin(), storage_.begin() + static_cast<std::ptrdiff_t>(out.size()), out.begin());
#endif
    return out;
  }

 private:
  void upload(const T* values) {
#if defined(__CUDACC__)
    check_cuda(cudaMemcpy(data_, values, size_ * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
#else
    std::copy(values, values + size_, data_);
#endif
  }
  size_t size_;
  T* data_ = nullptr;
#if !defined(__CUDACC__)
  std::vector<unsigned char> storage_;
#endif
};

// The launcher: under the emulator its launcher (emulated_launch.h: grid-stride axes capped at 3
// blocks, meta "grid_cap", and one multiprocessor, so that the grid-stride loops run on small
// inputs); with nvcc the same opt-in and a real launch.
#if defined(__CUDACC__)
struct HarnessLaunch {
  int64_t grid_limit = 3;
  template <typename... Params, typename... Args>
  void operator()(void (*kernel)(Params...), softdtw_torch::Grid grid, int threads, int64_t smem_bytes,
                  Args... args) const {
    const softdtw_torch::SharedMemoryOptIn opt_in = softdtw_torch::opt_in_shared_memory(kernel, smem_bytes);
    if (opt_in.error != cudaSuccess || !opt_in.fits) {
      die("a kernel needs " + std::to_string(smem_bytes) + " bytes of shared memory, the device allows " +
          std::to_string(opt_in.device_limit));
    }
    kernel<<<dim3(static_cast<unsigned>(grid.x), static_cast<unsigned>(grid.y)), threads,
             static_cast<size_t>(smem_bytes)>>>(args...);
    check_cuda(cudaGetLastError(), "launch");
    check_cuda(cudaDeviceSynchronize(), "kernel");
  }
  int64_t grid_cap(int64_t limit) const { return std::min(limit, grid_limit); }
  int64_t multiprocessors() const { return 1; }
};
#else
using HarnessLaunch = EmulatedLaunch;
#endif

// Inputs and outputs.
class Files {
 public:
  Files(std::string in_dir, std::string out_dir) : in_(std::move(in_dir)), out_(std::move(out_dir)) {
    std::ifstream meta(in_ + "/meta.txt");
    if (!meta) die("cannot read " + in_ + "/meta.txt");
    for (std::string name, value; meta >> name >> value;) meta_[name] = value;
  }
  int64_t integer(const std::string& name) const { return std::stoll(value(name)); }
  double real(const std::string& name) const { return std::stod(value(name)); }
  bool has(const std::string& name) const { return meta_.count(name) != 0; }

  template <typename T>
  std::vector<T> read(const std::string& name, size_t expected_size) const {
    std::ifstream f(in_ + "/" + name + ".bin", std::ios::binary | std::ios::ate);
    if (!f) die("cannot read " + in_ + "/" + name + ".bin");
    const auto bytes = static_cast<size_t>(f.tellg());
    if (bytes != expected_size * sizeof(T)) {
      die(name + ".bin holds " + std::to_string(bytes) + " bytes, expected " + std::to_string(expected_size * sizeof(T)));
    }
    std::vector<T> values(expected_size);
    f.seekg(0);
    f.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(bytes));
    return values;
  }
  template <typename T>
  void write(const std::string& name, const DeviceArray<T>& values) const {
    const std::vector<unsigned char> bytes = values.bytes();
    std::ofstream f(out_ + "/" + name + ".bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) die("cannot write " + out_ + "/" + name + ".bin");
  }

 private:
  std::string value(const std::string& name) const {
    const auto it = meta_.find(name);
    if (it == meta_.end()) die("meta.txt has no " + name);
    return it->second;
  }
  std::string in_, out_;
  std::map<std::string, std::string> meta_;
};

// SoftDTW, every kernel the ops launch (the tiles, and one warp per pair), in float32 or float64.
// meta: B N M d gamma radius (-1: no band) itakura_slope (0: none) ragged (0/1); arrays (T: float or double):
//   x (B,N,d), y (B,M,d), u (B,N,d), v (B,M,d) tangents, D (B,N,M), D_tangent (B,N,M), grad (B,),
//   grad_tangent (B,) as T; x_lengths, y_lengths (B,) int64 when ragged.
// Results: from_cost_values (B,), from_cost_R (table: B,N,M of RValue<T>), from_cost_invalid (B,
// bytes), grad_D (B,N,M); for M <= kPairMaxColumns, the same forward one warp per pair, from a
// cost and fused, and its backward: pair_from_cost_values, _R, _invalid, pair_grad_D, pair_fused_values,
// _R, _invalid, pair_fused_acc_x, pair_fused_acc_y;
// fused_values, fused_acc_x, fused_acc_y (float64 sums Σ E (x − y));
// checkpointed_values, checkpointed_acc_x, checkpointed_acc_y; jvp_values, jvp_tangents (B,);
// hvp_from_cost_grad_D, hvp_from_cost_grad_D_tangent (B,N,M); hvp_fused_acc_x, hvp_fused_acc_y,
// hvp_fused_hess_x, hvp_fused_hess_y (float64).
template <typename T>
void run_softdtw(const Files& io, const HarnessLaunch& launch) {
  using namespace softdtw_torch::tiles;
  using softdtw_torch::RValue;
  const int64_t B = io.integer("B"), N = io.integer("N"), M = io.integer("M"), d = io.integer("d");
  const double gamma = io.real("gamma");
  const bool ragged = io.integer("ragged") != 0;
  const DeviceArray<T> x(io.read<T>("x", B * N * d)), y(io.read<T>("y", B * M * d));
  const DeviceArray<T> u(io.read<T>("u", B * N * d)), v(io.read<T>("v", B * M * d));
  const DeviceArray<T> D(io.read<T>("D", B * N * M)), D_tangent(io.read<T>("D_tangent", B * N * M));
  const DeviceArray<T> grad(io.read<T>("grad", B)), grad_tangent(io.read<T>("grad_tangent", B));
  const DeviceArray<int64_t> x_lengths(ragged ? io.read<int64_t>("x_lengths", B) : std::vector<int64_t>{});
  const DeviceArray<int64_t> y_lengths(ragged ? io.read<int64_t>("y_lengths", B) : std::vector<int64_t>{});
  Geometry g;
  g.batch = B;
  g.n = N;
  g.m = M;
  g.radius = io.integer("radius");
  g.x_lengths = ragged ? x_lengths.get() : nullptr;
  g.y_lengths = ragged ? y_lengths.get() : nullptr;
  const double itakura_slope = io.real("itakura_slope");
  const DeviceArray<int64_t> itakura_rows(itakura_slope > 0 ? 2 * B * M : 0);
  if (itakura_slope > 0) {  // the parallelogram's table, by its kernel (as the ops do)
    launch(itakura_rows_kernel, (B * M + kThreads - 1) / kThreads, kThreads, 0, g, itakura_slope, itakura_rows.get());
    g.itakura_rows = itakura_rows.get();
    io.write("itakura_rows", itakura_rows);
  }
  const auto cell = CellFunctions<T>::for_gamma(gamma);
  const RValue<T> padding = softdtw_torch::exact_r(softdtw_torch::positive_infinity<T>());
  const SquaredEuclideanCosts<T> costs{x.get(), y.get(), d};
  const SquaredEuclideanTangents<T> tangents{x.get(), y.get(), u.get(), v.get(), d};
  const CostsFromTensor<T> cost_table{D.get()};
  const TangentsFromTensor<T> cost_tangents{D_tangent.get()};

  // A forward keeping the table (or, checkpoint, every tile border), with its own border buffers.
  struct Forward {
    DeviceArray<RValue<T>> table, top_rows, left_cols;
    DeviceArray<T> values;
    DeviceArray<bool> invalid;
    ForwardArgs<T> args;
  };
  auto forward_state = [&](bool table, bool checkpoint) {
    const int64_t top_slots = checkpoint ? g.row_blocks() : kForwardSlots;
    const int64_t left_slots = checkpoint ? g.col_blocks() : kColumnSlots;
    auto* f = new Forward{DeviceArray<RValue<T>>(table ? B * N * M : 0, padding),
                          DeviceArray<RValue<T>>(B * top_slots * M), DeviceArray<RValue<T>>(B * left_slots * N),
                          DeviceArray<T>(B), DeviceArray<bool>(B, false), {}};
    f->args = ForwardArgs<T>{g, cell, table ? f->table.get() : nullptr, f->top_rows.get(), f->left_cols.get(),
                             top_slots, left_slots, f->values.get(), f->invalid.get(), /*hard_min=*/gamma == 0};
    return std::unique_ptr<Forward>(f);
  };
  const TangentForwardArgs<T> no_tangent{};
  const TangentBackwardArgs<T> no_tangent_back{};
  auto backward_args = [&](DeviceArray<T>& row_msgs, DeviceArray<T>& col_msgs) {
    return BackwardArgs<T>{g, cell, grad.get(), row_msgs.get(), col_msgs.get(), /*hard_min=*/gamma == 0};
  };
  auto row_messages = [&] { return DeviceArray<T>(B * kBackwardSlots * 2 * M); };
  auto column_messages = [&] { return DeviceArray<T>(B * kColumnSlots * 2 * N); };

  {  // from a cost: forward with the table, backward to ∂D
    const auto f = forward_state(/*table=*/true, /*checkpoint=*/false);
    launch_forward(launch, f->args, no_tangent, cost_table, NoTangents{});
    DeviceArray<T> rows = row_messages(), cols = column_messages();
    DeviceArray<T> grad_D(B * N * M, T(0));
    launch_backward(launch, backward_args(rows, cols), no_tangent_back, RFromTable<T>{f->table.get()},
                    WriteCostGradient<T>{grad_D.get()});
    io.write("from_cost_values", f->values);
    io.write("from_cost_R", f->table);
    io.write("from_cost_invalid", f->invalid);
    io.write("grad_D", grad_D);
  }
  if (M <= kPairMaxColumns) {  // the forward of short pairs, one warp per pair, from a cost and fused
    for (const bool fused : {false, true}) {
      const auto f = forward_state(/*table=*/true, /*checkpoint=*/false);
      if (fused) {
        launch_pair_forward(launch, f->args, costs);
      } else {
        launch_pair_forward(launch, f->args, cost_table);
      }
      const std::string name = fused ? "pair_fused" : "pair_from_cost";
      io.write(name + "_values", f->values);
      io.write(name + "_R", f->table);
      io.write(name + "_invalid", f->invalid);
      // The backward from that table, one warp per pair: ∂D, or E (NaN where unwritten) and its sums.
      const BackwardArgs<T> pair_args{g, cell, grad.get(), nullptr, nullptr, /*hard_min=*/gamma == 0};
      DeviceArray<T> cells(B * N * M, fused ? std::numeric_limits<T>::quiet_NaN() : T(0));
      if (fused) {
        DeviceArray<double> acc_x(B * N * d, 0.0), acc_y(B * M * d, 0.0);
        launch_pair_backward(launch, pair_args, f->table.get(), static_cast<const T*>(nullptr), cells.get());
        launch_pair_sequence_sums(launch, g, cells.get(), x.get(), y.get(), d, acc_x.get(), acc_y.get());
        io.write("pair_fused_acc_x", acc_x);
        io.write("pair_fused_acc_y", acc_y);
      } else {
        launch_pair_backward(launch, pair_args, f->table.get(), grad.get(), cells.get());
        io.write("pair_grad_D", cells);
      }
    }
  }
  for (const bool checkpoint : {false, true}) {  // fused: squared Euclidean costs of x and y
    const auto f = forward_state(/*table=*/!checkpoint, checkpoint);
    launch_forward(launch, f->args, no_tangent, costs, NoTangents{});
    DeviceArray<T> rows = row_messages(), cols = column_messages();
    DeviceArray<double> acc_x(B * N * d, 0.0), acc_y(B * M * d, 0.0);
    const AccumulateSequenceGradients<T> epilogue{x.get(), y.get(), d, acc_x.get(), acc_y.get()};
    if (checkpoint) {
      const BorderBuffers<RValue<T>> borders{f->top_rows.get(), f->left_cols.get(), f->args.top_slots,
                                             f->args.left_slots};
      launch_backward(launch, backward_args(rows, cols), no_tangent_back,
                      RFromCheckpoints<T, SquaredEuclideanCosts<T>>{costs, borders}, epilogue);
    } else {
      launch_backward(launch, backward_args(rows, cols), no_tangent_back, RFromTable<T>{f->table.get()}, epilogue);
    }
    const std::string name = checkpoint ? "checkpointed" : "fused";
    io.write(name + "_values", f->values);
    io.write(name + "_acc_x", acc_x);
    io.write(name + "_acc_y", acc_y);
  }
  // Forward mode and second order: the forward with the tangent (rolling borders for a JVP, every
  // border for an HVP), then the reverse sweep with the tangent.
  struct TangentForward {
    std::unique_ptr<Forward> values;
    DeviceArray<T> top_rows, left_cols, tangents;
    TangentForwardArgs<T> args;
  };
  auto tangent_forward = [&](bool checkpoint, auto run) {
    auto f = std::unique_ptr<TangentForward>(new TangentForward{
        forward_state(/*table=*/false, checkpoint),
        DeviceArray<T>(B * (checkpoint ? g.row_blocks() : kForwardSlots) * M),
        DeviceArray<T>(B * (checkpoint ? g.col_blocks() : kColumnSlots) * N), DeviceArray<T>(B, T(0)), {}});
    f->args = TangentForwardArgs<T>{f->top_rows.get(), f->left_cols.get(), f->tangents.get()};
    run(*f);
    return f;
  };
  {
    const auto f = tangent_forward(false, [&](TangentForward& t) {
      launch_forward(launch, t.values->args, t.args, costs, tangents);
    });
    io.write("jvp_values", f->values->values);
    io.write("jvp_tangents", f->tangents);
  }
  auto second_order = [&](TangentForward& f, auto source_costs, auto source_tangents, auto epilogue) {
    DeviceArray<T> rows = row_messages(), cols = column_messages(), trows = row_messages(), tcols = column_messages();
    const TangentBackwardArgs<T> ta{grad_tangent.get(), trows.get(), tcols.get()};
    const BorderBuffers<RValue<T>> borders{f.values->top_rows.get(), f.values->left_cols.get(),
                                           f.values->args.top_slots, f.values->args.left_slots};
    const BorderBuffers<T> tangent_borders{f.top_rows.get(), f.left_cols.get(), f.values->args.top_slots,
                                           f.values->args.left_slots};
    using Source = RAndTangentFromCheckpoints<T, decltype(source_costs), decltype(source_tangents)>;
    launch_backward(launch, backward_args(rows, cols), ta,
                    Source{source_costs, source_tangents, borders, tangent_borders}, epilogue);
  };
  {
    const auto f = tangent_forward(true, [&](TangentForward& t) {
      launch_forward(launch, t.values->args, t.args, cost_table, cost_tangents);
    });
    DeviceArray<T> grad_D(B * N * M, T(0)), grad_D_tangent(B * N * M, T(0));
    second_order(*f, cost_table, cost_tangents, WriteCostGradientTangent<T>{grad_D_tangent.get(), grad_D.get()});
    io.write("hvp_from_cost_grad_D", grad_D);
    io.write("hvp_from_cost_grad_D_tangent", grad_D_tangent);
  }
  {
    const auto f = tangent_forward(true, [&](TangentForward& t) {
      launch_forward(launch, t.values->args, t.args, costs, tangents);
    });
    DeviceArray<double> acc_x(B * N * d, 0.0), acc_y(B * M * d, 0.0), hess_x(B * N * d, 0.0), hess_y(B * M * d, 0.0);
    second_order(*f, costs, tangents,
                 AccumulateSequenceGradientTangents<T>{x.get(), y.get(), u.get(), v.get(), d, acc_x.get(), acc_y.get(),
                                                       hess_x.get(), hess_y.get()});
    io.write("hvp_fused_acc_x", acc_x);
    io.write("hvp_fused_acc_y", acc_y);
    io.write("hvp_fused_hess_x", hess_x);
    io.write("hvp_fused_hess_y", hess_y);
  }
}

// ROCKET: the convolution (forward and backward) in every accumulation mode and the normalisation.
// meta: n C T K temperature (<= 0: hard PPV) ragged; arrays: x (n,C,T) float64, lengths (n,) int64
// when ragged, weights, biases (float32), kernel_lengths, dilations, paddings, num_channels,
// channels (int32), weight_offsets, channel_offsets (K,) int64, grad (n, 2K) float32.
// Results, for each mode float64 | float32_fma | float32: MODE_features (n, 2K) float32,
// MODE_argmax (n, K) int64, MODE_x_grad, MODE_w_grad, MODE_b_grad (float64 sums); and
// normalised_float64, normalised_float32 (numpy's normalisation of x and of x as float32).
void run_rocket(const Files& io, const HarnessLaunch& launch) {
  using namespace softdtw_torch::rocket_cuda;
  const int64_t n = io.integer("n"), C = io.integer("C"), T = io.integer("T"), K = io.integer("K");
  const double temperature = io.real("temperature");
  const bool ragged = io.integer("ragged") != 0;
  const std::vector<double> x = io.read<double>("x", n * C * T);
  const DeviceArray<int64_t> lengths(ragged ? io.read<int64_t>("lengths", n) : std::vector<int64_t>{});
  const int64_t n_weights = io.integer("n_weights"), n_channel_indices = io.integer("n_channel_indices");
  const DeviceArray<float> weights(io.read<float>("weights", n_weights)), biases(io.read<float>("biases", K));
  const DeviceArray<int32_t> kernel_lengths(io.read<int32_t>("kernel_lengths", K));
  const DeviceArray<int32_t> dilations(io.read<int32_t>("dilations", K)), paddings(io.read<int32_t>("paddings", K));
  const DeviceArray<int32_t> num_channels(io.read<int32_t>("num_channels", K));
  const DeviceArray<int32_t> channels(io.read<int32_t>("channels", n_channel_indices));
  const DeviceArray<int64_t> weight_offsets(io.read<int64_t>("weight_offsets", K));
  const DeviceArray<int64_t> channel_offsets(io.read<int64_t>("channel_offsets", K));
  const DeviceArray<float> grad(io.read<float>("grad", n * 2 * K));
  const DeviceKernels kernels{weights.get(),  biases.get(),   kernel_lengths.get(), dilations.get(),
                              paddings.get(), num_channels.get(), channels.get(),   weight_offsets.get(),
                              channel_offsets.get()};
  const int64_t* case_lengths = ragged ? lengths.get() : nullptr;
  auto run_mode = [&](auto zero, auto fma, const std::string& name) {
    using acc_t = decltype(zero);
    constexpr bool kFma = decltype(fma)::value;
    const DeviceArray<acc_t> xs(std::vector<acc_t>(x.begin(), x.end()));
    DeviceArray<float> features(n * 2 * K);
    DeviceArray<int64_t> argmax(n * K);
    launch_forward<acc_t, kFma>(launch, xs.get(), n, C, T, case_lengths, kernels, K, temperature, features.get(),
                                argmax.get());
    DeviceArray<double> x_grad(n * C * T, 0.0), w_grad(n_weights, 0.0), b_grad(K, 0.0);
    launch_backward<acc_t, kFma>(launch, xs.get(), n, C, T, case_lengths, kernels, K, grad.get(), argmax.get(),
                                 temperature, x_grad.get(), w_grad.get(), b_grad.get());
    io.write(name + "_features", features);
    io.write(name + "_argmax", argmax);
    io.write(name + "_x_grad", x_grad);
    io.write(name + "_w_grad", w_grad);
    io.write(name + "_b_grad", b_grad);
  };
  run_mode(0.0, std::true_type{}, "float64");
  run_mode(0.0f, std::true_type{}, "float32_fma");
  run_mode(0.0f, std::false_type{}, "float32");
  auto normalise = [&](auto zero, const std::string& name) {
    using scalar_t = decltype(zero);
    const DeviceArray<scalar_t> xs(std::vector<scalar_t>(x.begin(), x.end()));
    DeviceArray<scalar_t> out(n * C * T);
    launch_normalise(launch, xs.get(), n * C, C, T, case_lengths, out.get());
    io.write(name, out);
  };
  normalise(0.0, "normalised_float64");
  normalise(0.0f, "normalised_float32");
}

// MiniRocket's transform. meta: n C T n_combinations n_channel_indices n_features ragged; arrays:
// x (n,C,T) float32, lengths (n,) int64 when ragged, combinations (n_combinations, 7) int64 (the
// layout csrc/minirocket/problem.h prepares, split between the two kernels as the op splits it),
// channels int32, biases (n_features,) float32. Result: features (n, n_features) float32.
void run_minirocket(const Files& io, const HarnessLaunch& launch) {
  using namespace softdtw_torch::minirocket;
  const int64_t n = io.integer("n"), C = io.integer("C"), T = io.integer("T");
  const int64_t n_combinations = io.integer("n_combinations"), n_features = io.integer("n_features");
  const bool ragged = io.integer("ragged") != 0;
  const DeviceArray<float> x(io.read<float>("x", n * C * T));
  const DeviceArray<int64_t> lengths(ragged ? io.read<int64_t>("lengths", n) : std::vector<int64_t>{});
  const std::vector<int64_t> rows = io.read<int64_t>("combinations", n_combinations * 7);
  const std::vector<int32_t> channel_indices = io.read<int32_t>("channels", io.integer("n_channel_indices"));
  const TransformLayout layout =
      split_layout(reinterpret_cast<const DeviceCombination*>(rows.data()), n_combinations, channel_indices.data(), T);
  const DeviceArray<DeviceDilation> dilations(layout.dilations);
  const DeviceArray<DeviceCombination> combinations(layout.combinations);
  const DeviceArray<int32_t> channels(channel_indices);
  const DeviceArray<float> biases(io.read<float>("biases", n_features));
  DeviceArray<float> out(n * n_features);
  launch_transform(launch, x.get(), ragged ? lengths.get() : nullptr, dilations.get(),
                   static_cast<int64_t>(layout.dilations.size()), combinations.get(),
                   static_cast<int64_t>(layout.combinations.size()), channels.get(), biases.get(), out.get(), n, C, T,
                   n_features);
  io.write("features", out);
}

// MultiRocket's transform. meta: n C T n_combinations n_channel_indices n_features ragged; arrays:
// x (n,C,T) float32 and its first difference (n,C,T-1), lengths (n,) int64 when ragged, the
// layout csrc/multirocket/cuda/transform_ops.h makes (make_layout): combinations (n_combinations,
// 7) int64, feature_combination (2·n_features,) int32, channels int32, biases (2·n_features,)
// float32, split between the kernels as the op splits it (split_multirocket_layout). Results:
// features (n, 8·n_features) float32, overflow (1,) int32.
void run_multirocket(const Files& io, const HarnessLaunch& launch) {
  using namespace softdtw_torch::multirocket;
  const int64_t n = io.integer("n"), C = io.integer("C"), T = io.integer("T");
  const int64_t n_combinations = io.integer("n_combinations"), n_features = io.integer("n_features");
  const bool ragged = io.integer("ragged") != 0;
  const DeviceArray<float> x(io.read<float>("x", n * C * T));
  const DeviceArray<float> difference(io.read<float>("difference", n * C * (T - 1)));
  const DeviceArray<int64_t> lengths(ragged ? io.read<int64_t>("lengths", n) : std::vector<int64_t>{});
  const std::vector<int64_t> rows = io.read<int64_t>("combinations", n_combinations * 7);
  const std::vector<int32_t> channel_indices = io.read<int32_t>("channels", io.integer("n_channel_indices"));
  const DilationLayout split = split_multirocket_layout(reinterpret_cast<const DeviceCombination*>(rows.data()),
                                                        io.read<int32_t>("feature_combination", 2 * n_features).data(),
                                                        channel_indices.data(), T, n_features);
  const DeviceArray<DeviceDilation> series_dilations(split.dilations[0]), difference_dilations(split.dilations[1]);
  const DeviceDilation* const dilations[2] = {series_dilations.get(), difference_dilations.get()};
  const int64_t n_dilations[2] = {static_cast<int64_t>(split.dilations[0].size()),
                                  static_cast<int64_t>(split.dilations[1].size())};
  const DeviceArray<int64_t> combinations(rows);
  const DeviceArray<int32_t> feature_combination(split.feature_combination);
  const DeviceArray<int32_t> channels(channel_indices);
  const DeviceArray<float> biases(io.read<float>("biases", 2 * n_features));
  DeviceArray<float> out(n * 2 * kPoolings * n_features);
  DeviceArray<int> overflow(1, 0);
  const bool features_left =
      std::any_of(split.feature_combination.begin(), split.feature_combination.end(), [](int32_t c) { return c >= 0; });
  launch_transform(launch, x.get(), difference.get(), ragged ? lengths.get() : nullptr, dilations, n_dilations,
                   reinterpret_cast<const DeviceCombination*>(combinations.get()), feature_combination.get(),
                   features_left, channels.get(), biases.get(), out.get(), overflow.get(), n, C, T, n_features);
  io.write("features", out);
  io.write("overflow", overflow);
}

// Hydra's transform and backward (float32). meta: n C T D R G K per_group ragged; arrays: x (n,C,T)
// float32, weights (D,R,G,K,9) float32, channels (D,R,G,per_group) int64, lengths (n,) int64 when
// ragged, grad (n, D·R·2·G·K) float32. Results: features (n, D·R·2·G·K) float32, grad_rows
// (n,D,R,G,T) float32, grad_w (n,D,R,G,K,9) float32.
void run_hydra(const Files& io, const HarnessLaunch& launch) {
  using namespace softdtw_torch::hydra;
  Shape s{io.integer("n"), io.integer("C"), io.integer("T"), io.integer("D"),
          io.integer("R"), io.integer("G"), io.integer("K"), io.integer("per_group")};
  const bool ragged = io.integer("ragged") != 0;
  const int64_t items = s.n_dilations * s.n_representations * s.n_groups, n_features = items * 2 * s.n_kernels;
  const DeviceArray<float> x(io.read<float>("x", s.n_cases * s.n_channels * s.n_timepoints));
  const DeviceArray<float> weights(io.read<float>("weights", items * s.n_kernels * kTaps));
  const DeviceArray<int64_t> channels(io.read<int64_t>("channels", items * s.channels_per_group));
  const DeviceArray<int64_t> lengths(ragged ? io.read<int64_t>("lengths", s.n_cases) : std::vector<int64_t>{});
  const DeviceArray<float> grad(io.read<float>("grad", s.n_cases * n_features));
  DeviceArray<float> features(s.n_cases * n_features);
  DeviceArray<float> grad_rows(s.n_cases * items * s.n_timepoints, 0.0f);
  DeviceArray<float> grad_w(s.n_cases * items * s.n_kernels * kTaps, 0.0f);
  const int64_t* l = ragged ? lengths.get() : nullptr;
  launch_transform(launch, x.get(), weights.get(), channels.get(), l, features.get(), s);
  launch_backward(launch, grad.get(), x.get(), weights.get(), channels.get(), l, grad_rows.get(), grad_w.get(), s);
  io.write("features", features);
  io.write("grad_rows", grad_rows);
  io.write("grad_w", grad_w);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    die("usage: harness softdtw_float32|softdtw_float64|rocket|minirocket|multirocket|hydra IN_DIR OUT_DIR");
  }
  const std::string family = argv[1];
  const Files io(argv[2], argv[3]);
  HarnessLaunch launch;
  if (io.has("grid_cap")) launch.grid_limit = io.integer("grid_cap");
  try {
    if (family == "softdtw_float32") {
      run_softdtw<float>(io, launch);
    } else if (family == "softdtw_float64") {
      run_softdtw<double>(io, launch);
    } else if (family == "rocket") {
      run_rocket(io, launch);
    } else if (family == "minirocket") {
      run_minirocket(io, launch);
    } else if (family == "multirocket") {
      run_multirocket(io, launch);
    } else if (family == "hydra") {
      run_hydra(io, launch);
    } else {
      die("unknown family " + family);
    }
  } catch (const std::exception& error) {  // a refused launch, or an emulation error in throw mode
    die(error.what());
  }
  std::printf("harness: %s done\n", family.c_str());
  return 0;
}
