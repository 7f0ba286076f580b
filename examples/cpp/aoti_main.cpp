// Runs the AOTInductor packages of examples/export_aoti.py from C++ (LibTorch), without Python:
//   classifier.pt2: ROCKET and MiniRocket features into a linear head, x (B, 1, 150) -> logits (B, 2),
//                   any batch size B;
//   forecaster.pt2: an MLP forecast and its soft-DTW divergence to a target, batch of 8.
// The packages call softdtw_torch operators through the dispatcher, which finds them because this
// program links the softdtw_torch library (including softdtw_torch.h keeps that link under
// --as-needed). It links torch's full target too: the packages' compiled code needs libtorch.so.
//
// Usage: softdtw_torch_aoti_example DIR   (DIR: the --out folder of examples/export_aoti.py)
#include <softdtw_torch.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/torch.h>

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " DIR (the --out folder of examples/export_aoti.py)\n";
    return 2;
  }
  const std::string dir = argv[1];
  torch::manual_seed(0);
  try {
    torch::inductor::AOTIModelPackageLoader classifier(dir + "/classifier.pt2");
    for (int64_t batch : {1, 5}) {
      const torch::Tensor logits = classifier.run({torch::randn({batch, 1, 150})})[0];
      std::cout << "classifier.pt2, batch " << batch << ": logits " << logits.sizes() << "\n";
    }
    torch::inductor::AOTIModelPackageLoader forecaster(dir + "/forecaster.pt2");
    const std::vector<torch::Tensor> out = forecaster.run({torch::randn({8, 60, 1}), torch::randn({8, 90, 1})});
    std::cout << "forecaster.pt2: forecast " << out[0].sizes() << ", soft-DTW divergence " << out[1].item<double>()
              << "\n";
  } catch (const c10::Error& e) {
    std::cerr << e.what_without_backtrace() << "\n";
    return 1;
  }
  return 0;
}
