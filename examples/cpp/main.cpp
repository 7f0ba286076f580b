// softdtw-torch from C++ (LibTorch), no Python:
//   (a) the C++ API on tensors that require grad: SoftDTW as a loss, ROCKET features with
//       learnable kernels, backward() and the gradients;
//   (b) optionally, TorchScript models saved by examples/export_torchscript.py (their forward
//       calls softdtw_torch operators): forward, the exported loss method, and backward.
//
// Usage: softdtw_torch_example [softdtw_forecaster.pt [rocket_classifier.pt]]
#include <softdtw_torch.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <iostream>
#include <string>

namespace {

void direct_api() {
  torch::manual_seed(0);
  // A batch of 4 pairs: x (4, 30, 2) against y (4, 20, 2); N != M is fine.
  torch::Tensor x = torch::randn({4, 30, 2}, torch::requires_grad());
  torch::Tensor y = torch::randn({4, 20, 2});
  torch::Tensor values = softdtw_torch::soft_dtw(x, y, /*gamma=*/0.1);
  values.sum().backward();
  std::cout << "soft_dtw values: " << values << "\n"
            << "d sum / d x[0, :3]: " << x.grad()[0].slice(0, 0, 3) << "\n";

  // The soft-DTW divergence with a Sakoe-Chiba band of radius 5, on a cost written with ATen ops.
  torch::Tensor D = softdtw_torch::pairwise_cost(x, y, "l1");
  std::cout << "soft_dtw_from_cost (L1 cost, band 5): " << softdtw_torch::soft_dtw_from_cost(D, 0.1, 5) << "\n";

  // ROCKET: aeon's kernels for seed 0, learnable weights, the MAX features' gradient.
  softdtw_torch::RocketKernels kernels = softdtw_torch::rocket_generate_kernels(
      /*n_timepoints=*/50, /*n_channels=*/1, /*n_kernels=*/8, /*seed=*/0);
  kernels.weights.requires_grad_(true);
  torch::Tensor series = torch::randn({3, 1, 50});
  torch::Tensor features = softdtw_torch::rocket_transform(series, kernels);  // (3, 16): [ppv, max] per kernel
  features.sum().backward();
  std::cout << "rocket features[0]: " << features[0] << "\n"
            << "d sum / d weights[:5]: " << kernels.weights.grad().slice(0, 0, 5) << "\n";
}

void run_model(const std::string& path, const torch::Tensor& input, const torch::Tensor& target) {
  torch::jit::Module model = torch::jit::load(path);
  torch::Tensor output = model.forward({input}).toTensor();
  torch::Tensor loss = model.get_method("loss")({input, target}).toTensor();
  loss.backward();
  double grad_norm = 0;
  for (const torch::Tensor& p : model.parameters()) grad_norm += p.grad().pow(2).sum().item<double>();
  std::cout << path << ": output " << output.sizes() << ", loss " << loss.item<double>() << ", |grad| "
            << std::sqrt(grad_norm) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::cout << "softdtw_torch " << softdtw_torch::version() << " (CUDA kernels "
            << (softdtw_torch::cuda_compiled() ? "compiled" : "not compiled") << ")\n";
  direct_api();
  torch::manual_seed(1);
  if (argc > 1) {  // the forecaster: history (B, 60, 1) -> forecast (B, 90, 1)
    run_model(argv[1], torch::randn({8, 60, 1}), torch::randn({8, 90, 1}));
  }
  if (argc > 2) {  // the ROCKET classifier: series (B, 1, 150) -> logits (B, 2)
    run_model(argv[2], torch::randn({8, 1, 150}), torch::randint(0, 2, {8}, torch::kInt64));
  }
  return 0;
}
