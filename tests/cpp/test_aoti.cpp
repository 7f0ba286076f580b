// AOTInductor packages from C++: the .pt2 files of examples/export_aoti.py (written by
// tests/cpp/write_references.py) run with torch::inductor::AOTIModelPackageLoader, against the eager
// Python models' outputs on the same inputs.
//
// A CPU package calls our operators through the dispatcher: its proxy executor looks each one up by
// name ("softdtw_torch::_soft_dtw_fused_forward", ...) when the package is loaded, so the program
// must have the softdtw_torch library loaded by then. Two programs are built from this file:
// - softdtw_torch_aoti_tests links the library (including softdtw_torch.h keeps it linked under
//   --as-needed) and runs both packages: tests aoti_forecaster, aoti_classifier;
// - softdtw_torch_aoti_unlinked (SOFTDTW_TORCH_TEST_UNLINKED) links torch only: loading a package
//   must fail naming one of our operators, and work once the library is loaded with dlopen (as
//   Python's `import softdtw_torch` does): test aoti_needs_library.
//
// Usage: softdtw_torch_aoti_tests REFERENCE_DIR aoti_forecaster|aoti_classifier
//        softdtw_torch_aoti_unlinked REFERENCE_DIR aoti_needs_library LIBRARY_FILE
#ifndef SOFTDTW_TORCH_TEST_UNLINKED
#include <softdtw_torch.h>
#endif
#include <torch/script.h>
#include <torch/torch.h>

#include <iostream>
#include <string>
#include <vector>

#include "harness.h"

// The C++ package loader ships with torch >= 2.6 (the Python tests skip these tests below that).
#if __has_include(<torch/csrc/inductor/aoti_package/model_package_loader.h>)
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#define SOFTDTW_TORCH_HAS_AOTI_LOADER 1
#endif

#ifdef SOFTDTW_TORCH_TEST_UNLINKED
#include <dlfcn.h>
#endif

namespace {

using namespace softdtw_torch_tests;

// The package's outputs against eager PyTorch's: same dtype, and close. Our operators run the same
// kernels in both; the rest of the model is code inductor generated, which need not round as eager
// does (it matched bit for bit on torch 2.15, CPU).
void check_package_output(const std::string& what, const torch::Tensor& actual, const torch::Tensor& expected) {
  CHECK(actual.scalar_type() == expected.scalar_type(), what << ": dtype " << actual.scalar_type());
  check_close(what, actual, expected, /*rtol=*/1e-5, /*atol=*/1e-6);
}

#ifdef SOFTDTW_TORCH_HAS_AOTI_LOADER
using torch::inductor::AOTIModelPackageLoader;

// forecaster.pt2: (history, target) -> (forecast, soft-DTW divergence).
void aoti_forecaster(const References& r) {
  AOTIModelPackageLoader loader(r.path("forecaster.pt2"));
  const std::vector<torch::Tensor> out = loader.run({r["aoti_forecaster_history"], r["aoti_forecaster_target"]});
  CHECK(out.size() == 2, "forecaster: " << out.size() << " outputs, expected 2");
  check_package_output("forecaster forecast", out[0], r["aoti_forecaster_forecast"]);
  check_package_output("forecaster loss", out[1], r["aoti_forecaster_loss"]);
}

// classifier.pt2: series -> logits, exported with a dynamic batch: two batch sizes.
void aoti_classifier(const References& r) {
  AOTIModelPackageLoader loader(r.path("classifier.pt2"));
  for (const std::string batch : {"0", "1"}) {
    const std::vector<torch::Tensor> out = loader.run({r["aoti_classifier_x_" + batch]});
    CHECK(out.size() == 1, "classifier: " << out.size() << " outputs, expected 1");
    check_package_output("classifier logits, batch " + batch, out[0], r["aoti_classifier_logits_" + batch]);
  }
}
#endif

#ifdef SOFTDTW_TORCH_TEST_UNLINKED
// Without the library no package of ours loads; with it loaded at run time, it runs.
void aoti_needs_library(const References& r, const std::string& library) {
  CHECK(!c10::Dispatcher::singleton().findSchema({"softdtw_torch::rocket_transform", ""}).has_value(),
        "the softdtw_torch operators are registered although this program does not link the library");
  bool refused = false;
  try {
    AOTIModelPackageLoader loader(r.path("classifier.pt2"));
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    std::cout << "without the library: " << what << "\n";
    refused = what.find("softdtw_torch::") != std::string::npos;
  }
  CHECK(refused, "loading the package without the library did not fail naming a softdtw_torch operator");
  CHECK(dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr, "dlopen " << library << ": " << dlerror());
  aoti_classifier(r);
}
#endif

}  // namespace

int main(int argc, char** argv) {
#ifndef SOFTDTW_TORCH_HAS_AOTI_LOADER
  std::cout << "skipped: this torch has no torch/csrc/inductor/aoti_package/model_package_loader.h\n";
  return softdtw_torch_tests::kSkipReturnCode;
#elif defined(SOFTDTW_TORCH_TEST_UNLINKED)
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " REFERENCE_DIR aoti_needs_library LIBRARY_FILE\n";
    return 2;
  }
  const std::string library = argv[3];
  const softdtw_torch_tests::Tests tests = {
      {"aoti_needs_library", [&](const References& r) { aoti_needs_library(r, library); }},
  };
  return softdtw_torch_tests::run_test(argc, argv, tests);
#else
  const softdtw_torch_tests::Tests tests = {
      {"aoti_forecaster", aoti_forecaster},
      {"aoti_classifier", aoti_classifier},
  };
  return softdtw_torch_tests::run_test(argc, argv, tests);
#endif
}
