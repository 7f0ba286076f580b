// C++ tests of softdtw-torch without Python: the public API (csrc/softdtw_torch.h) and TorchScript
// models loaded with torch::jit::load, against what tests/cpp/write_references.py wrote from Python
// (the Python API's outputs, independent float64 references, error messages), plus float64
// finite-difference gradient checks done here.
//
// Usage: softdtw_torch_tests REFERENCE_DIR TEST_NAME   (one CTest test per name, see CMakeLists.txt)
#include <softdtw_torch.h>
#include <softdtw_torch_nn.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "harness.h"

#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

using namespace softdtw_torch_tests;

torch::Tensor leaf(const torch::Tensor& t) {
  return t.detach().clone().requires_grad_(true);
}

// Central differences of sum(f(x)) w.r.t. every element of x (float64), against autograd.
void check_finite_differences(const std::string& what, const std::function<torch::Tensor(const torch::Tensor&)>& f,
                              const torch::Tensor& at, double eps = 1e-6, double tol = 1e-6) {
  torch::Tensor x = leaf(at.to(torch::kFloat64));
  f(x).sum().backward();
  torch::Tensor analytic = x.grad();
  torch::NoGradGuard no_grad;
  torch::Tensor numeric = torch::zeros_like(analytic);
  torch::Tensor flat = x.detach().clone().reshape(-1);
  for (int64_t i = 0; i < flat.numel(); ++i) {
    const double original = flat[i].item<double>();
    flat[i] = original + eps;
    const double up = f(flat.view(x.sizes())).sum().item<double>();
    flat[i] = original - eps;
    const double down = f(flat.view(x.sizes())).sum().item<double>();
    flat[i] = original;
    numeric.view(-1)[i] = (up - down) / (2 * eps);
  }
  const double scale = std::max(1.0, numeric.abs().max().item<double>());
  const double err = (analytic - numeric).abs().max().item<double>() / scale;
  CHECK(err <= tol, what << ": finite differences differ from backward by " << err << " (relative)");
}

// ---- tests ----------------------------------------------------------------------------------

// Second order, forward mode and the losses built on them, from C++.
void softdtw_second_order(const References& r) {
  torch::Tensor x = leaf(r["x"]), y = leaf(r["y"]);
  torch::Tensor value = softdtw_torch::soft_dtw(x, y, 0.7, std::nullopt, false, /*fused=*/true).sum();
  auto grads = torch::autograd::grad({value}, {x, y}, {}, /*retain_graph=*/true, /*create_graph=*/true);
  torch::Tensor inner = (grads[0] * r["hvp_u"]).sum() + (grads[1] * r["hvp_v"]).sum();
  auto hvp = torch::autograd::grad({inner}, {x, y}, {}, /*retain_graph=*/true, /*create_graph=*/true);
  check_close("HVP x vs Python", hvp[0], r["hvp_x"]);
  check_close("HVP y vs Python", hvp[1], r["hvp_y"]);
  check_close("HVP x vs reference DP", hvp[0], r["hvp_reference_x"], 1e-9, 1e-10);
  check_close("HVP y vs reference DP", hvp[1], r["hvp_reference_y"], 1e-9, 1e-10);
  bool refused = false;
  try {
    torch::autograd::grad({hvp[0].sum()}, {x});
  } catch (const c10::Error& e) {
    refused = std::string(e.what()).find("a third derivative") != std::string::npos;
  }
  CHECK(refused, "a third derivative did not throw the library's error");

  softdtw_torch::nn::SharpSoftDTW sharp(softdtw_torch::nn::SharpSoftDTWOptions{0.7, std::nullopt, /*normalize=*/true,
                                                                               std::nullopt, "none"});
  x = leaf(r["x"]), y = leaf(r["y"]);
  torch::Tensor divergence = sharp(x, y);
  divergence.sum().backward();
  check_close("sharp divergence vs Python", divergence, r["sharp_divergence"]);
  check_close("sharp divergence grad x vs Python", x.grad(), r["sharp_divergence_grad_x"]);
  check_close("sharp divergence grad y vs Python", y.grad(), r["sharp_divergence_grad_y"]);

  softdtw_torch::nn::DILATELoss dilate_loss(softdtw_torch::nn::DILATEOptions{0.3, 0.1, std::nullopt, std::nullopt, "sum"});
  x = leaf(r["x"]), y = leaf(r["y"]);
  dilate_loss(x, y).backward();
  check_close("DILATE grad prediction vs Python", x.grad(), r["dilate_loss_grad_x"]);
  check_close("DILATE grad target vs Python", y.grad(), r["dilate_loss_grad_y"]);
  const softdtw_torch::DilateTerms terms = softdtw_torch::dilate(r["x"], r["y"], 0.3, 0.1);
  check_close("DILATE loss vs Python", terms.loss, r["dilate_loss"]);
  check_close("DILATE shape vs Python", terms.shape, r["dilate_shape"]);
  check_close("DILATE temporal vs Python", terms.temporal, r["dilate_temporal"]);
}

void softdtw_values_and_gradients(const References& r) {
  torch::Tensor x = leaf(r["x"]), y = leaf(r["y"]);
  torch::Tensor values = softdtw_torch::soft_dtw(x, y, 0.7, std::nullopt, false, /*fused=*/true);
  values.sum().backward();
  // The same kernels as Python: equal to what Python computed, and to the independent reference.
  check_close("fused values vs Python", values, r["fused"]);
  check_close("fused grad x vs Python", x.grad(), r["fused_grad_x"]);
  check_close("fused grad y vs Python", y.grad(), r["fused_grad_y"]);
  check_close("fused values vs reference DP", values, r["reference"], 1e-12);
  check_close("grad x vs reference DP autograd", x.grad(), r["reference_grad_x"], 1e-9, 1e-10);
  check_close("grad y vs reference DP autograd", y.grad(), r["reference_grad_y"], 1e-9, 1e-10);

  // checkpoint=true (the memory-lean backward) through the C++ API: same values and gradients.
  x = leaf(r["x"]), y = leaf(r["y"]);
  values = softdtw_torch::soft_dtw_fused(x, y, 0.7, std::nullopt, std::nullopt, std::nullopt, /*checkpoint=*/true);
  values.sum().backward();
  check_close("checkpointed values vs Python", values, r["fused"]);
  check_close("checkpointed grad x vs Python", x.grad(), r["fused_grad_x"]);
  check_close("checkpointed grad y vs Python", y.grad(), r["fused_grad_y"]);

  x = leaf(r["x"]), y = leaf(r["y"]);
  values = softdtw_torch::soft_dtw(x, y, 0.7, /*bandwidth=*/2, /*normalize=*/true);
  values.sum().backward();
  check_close("divergence (band 2) vs Python", values, r["divergence_band2"]);
  check_close("divergence grad x vs Python", x.grad(), r["divergence_band2_grad_x"]);
  check_close("divergence grad y vs Python", y.grad(), r["divergence_band2_grad_y"]);

  x = leaf(r["x"]), y = leaf(r["y"]);
  values = softdtw_torch::soft_dtw(x, y, 0.7, std::nullopt, false, std::nullopt, std::nullopt, std::nullopt,
                                   "sqeuclidean", false, /*itakura_max_slope=*/2.0);
  values.sum().backward();
  check_close("Itakura parallelogram (slope 2) vs reference DP", values, r["itakura2"], 1e-12);
  check_close("Itakura grad x vs reference DP autograd", x.grad(), r["itakura2_grad_x"], 1e-9, 1e-10);
  check_close("Itakura grad y vs reference DP autograd", y.grad(), r["itakura2_grad_y"], 1e-9, 1e-10);
  softdtw_torch::nn::SoftDTWOptions itakura_options;
  itakura_options.gamma = 0.7;
  itakura_options.reduction = "none";
  itakura_options.itakura_max_slope = 2.0;
  check_close("Itakura loss module vs reference DP", softdtw_torch::nn::SoftDTW(itakura_options)(r["x"], r["y"]),
              r["itakura2"], 1e-12);

  check_close("ragged vs Python",
              softdtw_torch::soft_dtw(r["x"], r["y"], 0.7, std::nullopt, false, std::nullopt, r["x_lengths"],
                                      r["y_lengths"]),
              r["ragged"]);
  check_close("cosine cost vs Python",
              softdtw_torch::soft_dtw(r["x"], r["y"], 0.7, std::nullopt, false, std::nullopt, std::nullopt,
                                      std::nullopt, "cosine"),
              r["cosine"]);

  torch::Tensor D = leaf(r["D"]);
  values = softdtw_torch::soft_dtw_from_cost(D, 0.3, /*bandwidth=*/1);
  values.sum().backward();
  check_close("from cost (band 1) vs Python", values, r["from_cost_band1"]);
  check_close("from cost grad D vs Python", D.grad(), r["from_cost_band1_grad_D"]);

  auto [alignment_values, E] = softdtw_torch::soft_dtw_alignment(r["x"], r["y"], 0.7);
  check_close("alignment values vs Python", alignment_values, r["alignment_values"]);
  check_close("alignment E vs Python", E, r["alignment_E"]);

  // A table of 1 MiB or more leaves its block when freed (after the backward); release frees it.
  // Pairs longer than 512 steps keep a table at any thread count (shorter ones in packs keep each
  // pair's gradient instead: docs/design/softdtw.md §3).
  softdtw_torch::release_table_memory();
  torch::Tensor xb = torch::randn({2, 600, 1}).requires_grad_(true), yb = torch::randn({2, 520, 1});
  softdtw_torch::soft_dtw(xb, yb).sum().backward();
  const int64_t table_bytes = int64_t(2) * 600 * 520 * 2 * sizeof(float);  // float32: (hi, lo) per cell
  CHECK(softdtw_torch::release_table_memory() == table_bytes, "release_table_memory: expected the table's block");
  CHECK(softdtw_torch::release_table_memory() == 0, "release_table_memory: expected nothing kept after a release");
}

void softdtw_finite_differences(const References& r) {
  const torch::Tensor y = r["y"];
  check_finite_differences("fused, d/dx", [&](const torch::Tensor& x) { return softdtw_torch::soft_dtw(x, y, 0.7); },
                           r["x"]);
  check_finite_differences(
      "unfused divergence with band, d/dx",
      [&](const torch::Tensor& x) { return softdtw_torch::soft_dtw(x, y, 0.7, 2, true, /*fused=*/false); }, r["x"]);
  check_finite_differences(
      "ragged, d/dx",
      [&](const torch::Tensor& x) {
        return softdtw_torch::soft_dtw(x, y, 0.7, std::nullopt, false, std::nullopt, r["x_lengths"], r["y_lengths"]);
      },
      r["x"]);
  check_finite_differences(
      "from cost, d/dD", [](const torch::Tensor& D) { return softdtw_torch::soft_dtw_from_cost(D, 0.3, 1); }, r["D"]);
  // The alignment matrix is the gradient of the value w.r.t. D.
  auto [values, E] = softdtw_torch::soft_dtw_alignment_from_cost(r["D"], 0.3);
  torch::Tensor D = leaf(r["D"]);
  softdtw_torch::soft_dtw_from_cost(D, 0.3).sum().backward();
  check_close("alignment E = d value / d D", E, D.grad());
}

softdtw_torch::RocketKernels rocket_kernels(const References& r) {
  return {r["rocket_weights"],  r["rocket_lengths"],  r["rocket_biases"],
          r["rocket_dilations"], r["rocket_paddings"], r["rocket_num_channel_indices"],
          r["rocket_channel_indices"]};
}

void rocket(const References& r) {
  // The C++ generator gives Python's kernels (aeon's random stream for seed 3).
  softdtw_torch::RocketKernels generated = softdtw_torch::rocket_generate_kernels(40, 2, 20, 3);
  softdtw_torch::RocketKernels expected = rocket_kernels(r);
  CHECK(torch::equal(generated.weights, expected.weights), "generated weights differ from Python's");
  CHECK(torch::equal(generated.channel_indices, expected.channel_indices), "generated channels differ");
  CHECK(torch::equal(generated.dilations, expected.dilations), "generated dilations differ");

  CHECK(torch::equal(softdtw_torch::rocket_transform(r["rocket_x"], generated), r["rocket_hard"]),
        "rocket_transform features differ from Python's (bit for bit)");
  softdtw_torch::RocketKernels learnable = rocket_kernels(r);
  learnable.weights = leaf(learnable.weights);
  learnable.biases = leaf(learnable.biases);
  torch::Tensor soft = softdtw_torch::rocket_transform(r["rocket_x"], learnable, true, "float32_fma", std::nullopt,
                                                       /*ppv_temperature=*/0.5);
  soft.sum().backward();
  check_close("soft-PPV features vs Python", soft, r["rocket_soft"], 0, 0);
  check_close("grad weights vs Python", learnable.weights.grad(), r["rocket_soft_grad_weights"], 0, 0);
  check_close("grad biases vs Python", learnable.biases.grad(), r["rocket_soft_grad_biases"], 0, 0);

  // float64 accumulation: normalisation and the MAX / soft-PPV features differentiated w.r.t. the
  // series, against central differences. The features are float32 whatever the accumulation
  // (aeon's contract), so the step is large enough for their rounding (~1e-7 relative) to stay
  // below the tolerance, and small enough that no MAX changes its argmax.
  check_finite_differences(
      "rocket_transform (normalise, float64, soft PPV), d/dx",
      [&](const torch::Tensor& x) {
        return softdtw_torch::rocket_transform(x, expected, true, "float64", std::nullopt, 0.5).to(torch::kFloat64);
      },
      r["rocket_x"].to(torch::kFloat64), 1e-3, 2e-3);
}

void minirocket(const References& r) {
  softdtw_torch::MiniRocketParameters p = softdtw_torch::minirocket_fit(r["minirocket_x"], 840, 32, 7);
  CHECK(torch::equal(p.dilations, r["minirocket_dilations"]), "MiniRocket dilations differ from Python's");
  CHECK(torch::equal(p.biases, r["minirocket_biases"]), "MiniRocket biases differ from Python's");
  CHECK(torch::equal(softdtw_torch::minirocket_transform(r["minirocket_x"], p), r["minirocket_features"]),
        "MiniRocket features differ from Python's");
}

void multirocket(const References& r) {
  const softdtw_torch::MultiRocketParameters p = softdtw_torch::multirocket_fit(r["multirocket_x"], 336, 32, 9);
  CHECK(torch::equal(p.series.biases, r["multirocket_biases"]), "MultiRocket biases differ from Python's");
  CHECK(torch::equal(p.difference.biases, r["multirocket_diff_biases"]),
        "MultiRocket first-difference biases differ from Python's");
  CHECK(torch::equal(p.difference.dilations, r["multirocket_diff_dilations"]),
        "MultiRocket first-difference dilations differ from Python's");
  CHECK(torch::equal(softdtw_torch::multirocket_transform(r["multirocket_x"], p), r["multirocket_features"]),
        "MultiRocket features differ from Python's");
}

void hydra(const References& r) {
  const softdtw_torch::HydraParameters p = softdtw_torch::hydra_fit(r["hydra_x"], 8, 16, 8, 4);
  CHECK(torch::equal(p.weights, r["hydra_weights"]), "Hydra weights differ from Python's");
  CHECK(torch::equal(p.channels, r["hydra_channels"]), "Hydra channels differ from Python's");
  CHECK(torch::equal(softdtw_torch::hydra_transform(r["hydra_x"], p), r["hydra_features"]),
        "Hydra features differ from Python's");
  // count_max is differentiable in C++ too: the same gradient as Python's.
  const torch::Tensor x = r["hydra_x"].clone().requires_grad_(true);
  softdtw_torch::hydra_transform(x, p).sum().backward();
  CHECK(torch::equal(x.grad(), r["hydra_x_grad"]), "Hydra gradient differs from Python's");
}

// Misuse from C++ throws c10::Error with the Python API's message: c10::ValueError where Python
// raised ValueError, c10::TypeError where it raised TypeError.
void errors(const References& r) {
  const torch::Tensor x = r["x"], y = r["y"];
  torch::Tensor nan_x = x.clone();
  nan_x[0][1][0] = std::numeric_limits<double>::quiet_NaN();
  softdtw_torch::RocketKernels k = rocket_kernels(r);
  const torch::Tensor one_channel = r["rocket_x"].slice(1, 0, 1);
  const std::map<std::string, std::function<void()>> cases = {
      {"gamma_negative", [&] { softdtw_torch::soft_dtw(x, y, -1.0); }},
      {"rank", [&] { softdtw_torch::soft_dtw_from_cost(x[0][0]); }},
      {"feature_mismatch", [&] { softdtw_torch::soft_dtw(x, y.slice(2, 0, 1)); }},
      {"integer_dtype", [&] { softdtw_torch::soft_dtw(x.to(torch::kLong), y.to(torch::kLong)); }},
      {"nan_fused", [&] { softdtw_torch::soft_dtw(nan_x, y, 1.0, std::nullopt, false, true); }},
      {"nan_unfused",
       [&] {
         softdtw_torch::soft_dtw(nan_x, y, 1.0, std::nullopt, false, std::nullopt, std::nullopt, std::nullopt, "l1");
       }},
      {"lengths_out_of_range",
       [&] {
         softdtw_torch::soft_dtw(x, y, 1.0, std::nullopt, false, std::nullopt, torch::tensor({7, 8, 1}));
       }},
      {"unknown_cost",
       [&] {
         softdtw_torch::soft_dtw(x, y, 1.0, std::nullopt, false, std::nullopt, std::nullopt, std::nullopt, "l3");
       }},
      {"rocket_channels", [&] { softdtw_torch::rocket_transform(one_channel, k); }},
      {"rocket_accumulate", [&] { softdtw_torch::rocket_transform(r["rocket_x"], k, true, "float16"); }},
      {"minirocket_short", [&] { softdtw_torch::minirocket_fit(r["minirocket_x"].slice(2, 0, 8), 840, 32, 7); }},
      {"multirocket_short", [&] { softdtw_torch::multirocket_fit(r["multirocket_x"].slice(2, 0, 9), 336, 32, 9); }},
      {"hydra_short", [&] { softdtw_torch::hydra_fit(r["hydra_x"].slice(2, 0, 5), 8, 16, 8, 4); }},
  };
  for (const auto& [name, call] : cases) {
    const std::string& expected = r.message(name);
    const std::string& python_type = r.message(name + ".type");
    try {
      call();
    } catch (const c10::Error& e) {
      const char* thrown = dynamic_cast<const c10::ValueError*>(&e)  ? "ValueError"
                           : dynamic_cast<const c10::TypeError*>(&e) ? "TypeError"
                                                                     : "RuntimeError";
      CHECK(python_type == thrown, name << ": threw the C++ class of " << thrown << ", Python raised " << python_type);
      CHECK(e.what_without_backtrace() == expected,
            name << ": message\n  " << e.what_without_backtrace() << "\nPython:\n  " << expected);
      continue;
    }
    CHECK(false, name << ": nothing thrown; Python raised: " << expected);
  }
}

// A TorchScript model saved by examples/export_torchscript.py: forward, the exported loss method and
// backward give Python's outputs and gradients.
void torchscript_model(const References& r, const std::string& name, const std::string& file) {
  torch::jit::Module model = torch::jit::load(r.path(file));
  const torch::Tensor input = r[name + "_input"], target = r[name + "_target"];
  check_close(name + " forward vs Python", model.forward({input}).toTensor(), r[name + "_output"], 1e-6, 1e-6);
  torch::Tensor input_leaf = input.detach().clone().requires_grad_(true);
  torch::Tensor loss = model.get_method("loss")({input_leaf, target}).toTensor();
  loss.backward();
  check_close(name + " loss vs Python", loss, r[name + "_loss"], 1e-6, 1e-6);
  check_close(name + " input grad vs Python", input_leaf.grad(), r[name + "_input_grad"], 1e-5, 1e-6);
  int64_t i = 0;
  for (const torch::Tensor& p : model.parameters()) {
    check_close(name + " parameter " + std::to_string(i) + " grad vs Python", p.grad(),
                r[name + "_param_grad_" + std::to_string(i)], 1e-5, 1e-6);
    ++i;
  }
  CHECK(i > 0, name << ": the loaded model has no parameters");
}

void torchscript_forecaster(const References& r) {
  torchscript_model(r, "forecaster", "softdtw_forecaster.pt");
  // In float64, the scripted loss's gradient w.r.t. the history matches finite differences.
  torch::jit::Module model = torch::jit::load(r.path("softdtw_forecaster.pt"));
  model.to(torch::kFloat64);
  const torch::Tensor target = r["forecaster_target"].slice(0, 0, 2).to(torch::kFloat64);
  check_finite_differences(
      "scripted forecaster loss, d/dhistory",
      [&](const torch::Tensor& history) { return model.get_method("loss")({history, target}).toTensor(); },
      r["forecaster_input"].slice(0, 0, 2).to(torch::kFloat64));
}

void torchscript_classifier(const References& r) {
  torchscript_model(r, "classifier", "rocket_classifier.pt");
}

// The CUDA kernels from C++ (a CUDA build on a machine with a GPU): values and gradients equal
// what the same calls give on the CPU.
void cuda(const References& r) {
  if (!softdtw_torch::cuda_compiled()) throw Skip("the library was built without CUDA kernels");
  if (!torch::cuda::is_available()) throw Skip("no GPU visible");
  const torch::Device gpu(torch::kCUDA);
  torch::Tensor x = leaf(r["x"]), y = leaf(r["y"]);
  torch::Tensor x_gpu = leaf(r["x"].to(gpu)), y_gpu = leaf(r["y"].to(gpu));
  torch::Tensor values = softdtw_torch::soft_dtw(x, y, 0.7, 2, true);
  torch::Tensor values_gpu = softdtw_torch::soft_dtw(x_gpu, y_gpu, 0.7, 2, true);
  values.sum().backward();
  values_gpu.sum().backward();
  check_close("CUDA divergence vs CPU", values_gpu.cpu(), values, 1e-12);
  check_close("CUDA grad x vs CPU", x_gpu.grad().cpu(), x.grad(), 1e-10, 1e-12);
  check_close("CUDA grad y vs CPU", y_gpu.grad().cpu(), y.grad(), 1e-10, 1e-12);
  // The checkpointed backward (tiles recomputed from R on their borders) on the GPU.
  torch::Tensor xc_gpu = leaf(r["x"].to(gpu)), yc_gpu = leaf(r["y"].to(gpu));
  torch::Tensor checkpointed = softdtw_torch::soft_dtw(xc_gpu, yc_gpu, 0.7, 2, true, std::nullopt, std::nullopt,
                                                       std::nullopt, "sqeuclidean", /*checkpoint=*/true);
  checkpointed.sum().backward();
  check_close("CUDA checkpointed divergence vs CPU", checkpointed.cpu(), values, 1e-12);
  check_close("CUDA checkpointed grad x vs CPU", xc_gpu.grad().cpu(), x.grad(), 1e-10, 1e-12);
  softdtw_torch::RocketKernels k = rocket_kernels(r), k_gpu;
  k_gpu = {k.weights.to(gpu), k.lengths.to(gpu), k.biases.to(gpu), k.dilations.to(gpu),
           k.paddings.to(gpu), k.num_channel_indices.to(gpu), k.channel_indices.to(gpu)};
  CHECK(torch::equal(softdtw_torch::rocket_transform(r["rocket_x"].to(gpu), k_gpu).cpu(), r["rocket_hard"]),
        "CUDA rocket_transform features differ from the CPU's (bit for bit)");
}

}  // namespace

int main(int argc, char** argv) {
  const softdtw_torch_tests::Tests tests = {
      {"softdtw_values_and_gradients", softdtw_values_and_gradients},
      {"softdtw_finite_differences", softdtw_finite_differences},
      {"softdtw_second_order", softdtw_second_order},
      {"rocket", rocket},
      {"minirocket", minirocket},
      {"multirocket", multirocket},
      {"hydra", hydra},
      {"errors", errors},
      {"torchscript_forecaster", torchscript_forecaster},
      {"torchscript_classifier", torchscript_classifier},
      {"cuda", cuda},
  };
  return softdtw_torch_tests::run_test(argc, argv, tests);
}
