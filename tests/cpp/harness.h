// The C++ tests' harness, shared by every test program of tests/cpp: failures and skips, the
// elementwise closeness check, the references tests/cpp/write_references.py writes from Python
// (tensors and error messages in references.pt), and main's loop over named tests.
#pragma once

#include <torch/script.h>
#include <torch/torch.h>

#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

namespace softdtw_torch_tests {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A test that cannot run here (ctest reports it as skipped: SKIP_RETURN_CODE in CMakeLists.txt).
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};
constexpr int kSkipReturnCode = 77;

#define CHECK(cond, what)                                                                   \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::ostringstream message_;                                                          \
      message_ << __FILE__ << ":" << __LINE__ << ": " << what;                              \
      throw ::softdtw_torch_tests::Failure(message_.str());                                 \
    }                                                                                       \
  } while (0)

// |actual - expected| <= atol + rtol * |expected| elementwise, same shape.
inline void check_close(const std::string& what, const torch::Tensor& actual, const torch::Tensor& expected,
                        double rtol = 1e-10, double atol = 1e-12) {
  CHECK(actual.sizes() == expected.sizes(),
        what << ": shape " << actual.sizes() << ", expected " << expected.sizes());
  torch::Tensor a = actual.detach().to(torch::kFloat64), e = expected.detach().to(torch::kFloat64);
  const double err = (a - e).abs().sub(e.abs().mul(rtol)).max().item<double>();
  CHECK(err <= atol, what << ": max |actual - expected| - rtol |expected| = " << err << " > " << atol);
}

// What write_references.py wrote into DIR: reference tensors (r["name"]), Python's error messages
// (r.message("name")) and files beside them (r.path("model.pt")).
class References {
 public:
  explicit References(const std::string& dir) : dir_(dir), module_(torch::jit::load(dir + "/references.pt")) {
    for (const auto& item : module_.attr("tensors").toGenericDict()) {
      tensors_[item.key().toStringRef()] = item.value().toTensor();
    }
    for (const auto& item : module_.attr("messages").toGenericDict()) {
      messages_[item.key().toStringRef()] = item.value().toStringRef();
    }
  }
  torch::Tensor operator[](const std::string& name) const {
    auto it = tensors_.find(name);
    CHECK(it != tensors_.end(), "no reference tensor " << name << " (rerun write_references.py)");
    return it->second;
  }
  const std::string& message(const std::string& name) const {
    auto it = messages_.find(name);
    CHECK(it != messages_.end(), "no reference message " << name);
    return it->second;
  }
  std::string path(const std::string& file) const { return dir_ + "/" + file; }

 private:
  std::string dir_;
  torch::jit::Module module_;
  std::map<std::string, torch::Tensor> tensors_;
  std::map<std::string, std::string> messages_;
};

using Tests = std::map<std::string, std::function<void(const References&)>>;

// main of a test program: `PROGRAM REFERENCE_DIR TEST_NAME [more arguments]` runs tests[TEST_NAME]
// and returns 0 (passed), kSkipReturnCode (skipped) or 1 (failed), 2 for a wrong command line.
inline int run_test(int argc, char** argv, const Tests& tests) {
  if (argc < 3 || tests.count(argv[2]) == 0) {
    std::cerr << "usage: " << argv[0] << " REFERENCE_DIR TEST_NAME; tests:";
    for (const auto& item : tests) std::cerr << " " << item.first;
    std::cerr << "\n";
    return 2;
  }
  try {
    const References references(argv[1]);
    tests.at(argv[2])(references);
  } catch (const Skip& skip) {
    std::cout << "skipped " << argv[2] << ": " << skip.what() << "\n";
    return kSkipReturnCode;
  } catch (const Failure& failure) {
    std::cerr << "FAILED " << argv[2] << ": " << failure.what() << "\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "ERROR " << argv[2] << ": " << error.what() << "\n";
    return 1;
  }
  std::cout << "passed " << argv[2] << "\n";
  return 0;
}

}  // namespace softdtw_torch_tests
