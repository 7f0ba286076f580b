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
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// The C++ package loader ships with torch >= 2.6 (the Python tests skip these tests below that).
#if __has_include(<torch/csrc/inductor/aoti_package/model_package_loader.h>)
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#define SOFTDTW_TORCH_HAS_AOTI_LOADER 1
#endif

#ifdef SOFTDTW_TORCH_TEST_UNLINKED
#include <dlfcn.h>
#endif

namespace {

constexpr int kSkipReturnCode = 77;  // ctest reports it as skipped (SKIP_RETURN_CODE)

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#define CHECK(cond, what)                                                                   \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::ostringstream message_;                                                          \
      message_ << __FILE__ << ":" << __LINE__ << ": " << what;                              \
      throw Failure(message_.str());                                                        \
    }                                                                                       \
  } while (0)

// The reference tensors: the "tensors" attribute of references.pt (write_references.py).
std::map<std::string, torch::Tensor> load_references(const std::string& dir) {
  std::map<std::string, torch::Tensor> tensors;
  torch::jit::Module module = torch::jit::load(dir + "/references.pt");
  for (const auto& item : module.attr("tensors").toGenericDict()) {
    tensors[item.key().toStringRef()] = item.value().toTensor();
  }
  return tensors;
}

torch::Tensor get(const std::map<std::string, torch::Tensor>& r, const std::string& name) {
  auto it = r.find(name);
  CHECK(it != r.end(), "no reference tensor " << name << " (rerun write_references.py)");
  return it->second;
}

// The package's outputs against eager PyTorch's. Our operators run the same kernels in both; the
// rest of the model is code inductor generated, which need not round as eager does (it matched
// bit for bit on torch 2.15, CPU).
void check_close(const std::string& what, const torch::Tensor& actual, const torch::Tensor& expected) {
  CHECK(actual.sizes() == expected.sizes(), what << ": shape " << actual.sizes() << ", expected " << expected.sizes());
  CHECK(actual.scalar_type() == expected.scalar_type(), what << ": dtype " << actual.scalar_type());
  CHECK(torch::allclose(actual, expected, /*rtol=*/1e-5, /*atol=*/1e-6),
        what << ": max |package - eager| = " << (actual - expected).abs().max().item<double>());
}

#ifdef SOFTDTW_TORCH_HAS_AOTI_LOADER
using torch::inductor::AOTIModelPackageLoader;

// forecaster.pt2: (history, target) -> (forecast, soft-DTW divergence).
void aoti_forecaster(const std::string& dir, const std::map<std::string, torch::Tensor>& r) {
  AOTIModelPackageLoader loader(dir + "/forecaster.pt2");
  const std::vector<torch::Tensor> out =
      loader.run({get(r, "aoti_forecaster_history"), get(r, "aoti_forecaster_target")});
  CHECK(out.size() == 2, "forecaster: " << out.size() << " outputs, expected 2");
  check_close("forecaster forecast", out[0], get(r, "aoti_forecaster_forecast"));
  check_close("forecaster loss", out[1], get(r, "aoti_forecaster_loss"));
}

// classifier.pt2: series -> logits, exported with a dynamic batch: two batch sizes.
void aoti_classifier(const std::string& dir, const std::map<std::string, torch::Tensor>& r) {
  AOTIModelPackageLoader loader(dir + "/classifier.pt2");
  for (const char* batch : {"0", "1"}) {
    const std::vector<torch::Tensor> out = loader.run({get(r, std::string("aoti_classifier_x_") + batch)});
    CHECK(out.size() == 1, "classifier: " << out.size() << " outputs, expected 1");
    check_close(std::string("classifier logits, batch ") + batch, out[0],
                get(r, std::string("aoti_classifier_logits_") + batch));
  }
}
#endif

#ifdef SOFTDTW_TORCH_TEST_UNLINKED
// Without the library no package of ours loads; with it loaded at run time, it runs.
void aoti_needs_library(const std::string& dir, const std::map<std::string, torch::Tensor>& r,
                        const std::string& library) {
  CHECK(!c10::Dispatcher::singleton().findSchema({"softdtw_torch::rocket_transform", ""}).has_value(),
        "the softdtw_torch operators are registered although this program does not link the library");
  bool refused = false;
  try {
    AOTIModelPackageLoader loader(dir + "/classifier.pt2");
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    std::cout << "without the library: " << what << "\n";
    refused = what.find("softdtw_torch::") != std::string::npos;
  }
  CHECK(refused, "loading the package without the library did not fail naming a softdtw_torch operator");
  CHECK(dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr, "dlopen " << library << ": " << dlerror());
  aoti_classifier(dir, r);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " REFERENCE_DIR TEST_NAME [LIBRARY_FILE]\n";
    return 2;
  }
  const std::string dir = argv[1], name = argv[2];
#ifndef SOFTDTW_TORCH_HAS_AOTI_LOADER
  std::cout << "skipped " << name << ": this torch has no torch/csrc/inductor/aoti_package/model_package_loader.h\n";
  return kSkipReturnCode;
#else
  try {
    const auto references = load_references(dir);
#ifdef SOFTDTW_TORCH_TEST_UNLINKED
    if (name != "aoti_needs_library" || argc != 4) {
      std::cerr << "usage: " << argv[0] << " REFERENCE_DIR aoti_needs_library LIBRARY_FILE\n";
      return 2;
    }
    aoti_needs_library(dir, references, argv[3]);
#else
    if (name == "aoti_forecaster") {
      aoti_forecaster(dir, references);
    } else if (name == "aoti_classifier") {
      aoti_classifier(dir, references);
    } else {
      std::cerr << "unknown test " << name << "; tests: aoti_forecaster aoti_classifier\n";
      return 2;
    }
#endif
  } catch (const Failure& failure) {
    std::cerr << "FAILED " << name << ": " << failure.what() << "\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "ERROR " << name << ": " << error.what() << "\n";
    return 1;
  }
  std::cout << "passed " << name << "\n";
  return 0;
#endif
}
