// The CPU kernels' choice of vector path (cpu.h says how it is decided).
#include "cpu.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace softdtw_torch {
namespace {

constexpr int kProbeRounds = 7;  // after one warm-up round; the best round of each path counts
// A narrower path is chosen only if it is faster than every wider one by more than this: the
// wider paths are the ones written for speed, and a difference within the machine's noise must
// not move a process onto another path.
constexpr double kNarrowerMustWinBy = 0.05;

struct Decision {
  VectorPath path;
  std::string why;
};

// The decisions and rules, under one mutex: a probe runs while it is held, so a kernel's first
// calls from several threads wait for one decision.
struct Registry {
  std::mutex mutex;
  std::map<std::string, Decision> decided;
  std::map<std::string, const PathRule*> rules;
  std::optional<VectorPath> cap;  // set_path_cap's, which overrides the environment's
  bool cap_set = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

// SOFTDTW_TORCH_CPU_PATH, read at each decision (nullopt when unset or empty).
std::optional<VectorPath> environment_cap() {
  const char* text = std::getenv("SOFTDTW_TORCH_CPU_PATH");
  if (text == nullptr || *text == '\0') return std::nullopt;
  const auto path = parse_path(text);
  TORCH_CHECK_VALUE(path.has_value(), "expected the environment variable SOFTDTW_TORCH_CPU_PATH to be portable, avx2 or "
                    "avx512, got '", text, "'");
  return path;
}

bool is_intel() {
#if SOFTDTW_TORCH_X86_INTRINSICS
  return __builtin_cpu_is("intel");
#else
  return false;
#endif
}

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f ms", seconds * 1e3);
  return text;
}

Decision decide(const PathRule& rule, std::optional<VectorPath> cap, const char* cap_source) {
  std::vector<VectorPath> runnable;
  for (VectorPath p : rule.candidates) {
    if (cpu_supports(p) && (!cap || static_cast<int>(p) <= static_cast<int>(*cap))) runnable.push_back(p);
  }
  std::sort(runnable.begin(), runnable.end(), [](VectorPath a, VectorPath b) { return a > b; });  // widest first
  TORCH_INTERNAL_ASSERT(!runnable.empty(), rule.kernel, ": no runnable CPU path (portable must be a candidate)");
  if (cap) return {runnable.front(), std::string("capped by ") + cap_source + "=" + path_name(*cap)};
  if (runnable.size() == 1) return {runnable.front(), "the only path this CPU runs"};
  if (rule.probe == nullptr) {
    for (VectorPath p : runnable) {
      if (p != VectorPath::kAvx512 || !rule.avx512_measured_on_intel_only || is_intel()) {
        return {p, p == runnable.front() ? "the widest this CPU runs"
                                         : "table: this loop's AVX-512 version was measured on Intel CPUs only"};
      }
    }
  }
  std::vector<double> best(runnable.size(), 1e300);
  for (int round = 0; round <= kProbeRounds; ++round) {
    for (size_t i = 0; i < runnable.size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      rule.probe(runnable[i]);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (round > 0) best[i] = std::min(best[i], seconds);
    }
  }
  // runnable is widest first: the first path within kNarrowerMustWinBy of the fastest time.
  const double fastest_time = *std::min_element(best.begin(), best.end());
  size_t fastest = 0;
  while (best[fastest] > fastest_time * (1.0 + kNarrowerMustWinBy)) ++fastest;
  std::string why = "measured:";
  for (size_t i = 0; i < runnable.size(); ++i) {
    why += std::string(i ? ", " : " ") + path_name(runnable[i]) + " " + milliseconds(best[i]);
  }
  return {runnable[fastest], why};
}

}  // namespace

std::optional<VectorPath> parse_path(const char* text) {
  for (VectorPath p : {VectorPath::kPortable, VectorPath::kAvx2, VectorPath::kAvx512}) {
    if (std::strcmp(text, path_name(p)) == 0) return p;
  }
  return std::nullopt;
}

const char* path_name(VectorPath path) {
  switch (path) {
    case VectorPath::kAvx512: return "avx512";
    case VectorPath::kAvx2: return "avx2";
    default: return "portable";
  }
}

bool cpu_supports(VectorPath path) {
#if SOFTDTW_TORCH_X86_INTRINSICS
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  static const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                             __builtin_cpu_supports("avx512cd");
  if (path == VectorPath::kAvx512) return avx512;
  if (path == VectorPath::kAvx2) return avx2;
#endif
  return path == VectorPath::kPortable;
}

VectorPath path_of(const PathRule& rule) {
  const int known = rule.decided.load(std::memory_order_acquire);
  if (known >= 0) return static_cast<VectorPath>(known);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.rules.emplace(rule.kernel, &rule);  // set_path_cap resets it
  const int again = rule.decided.load(std::memory_order_acquire);  // another thread's, while this one waited
  if (again >= 0) return static_cast<VectorPath>(again);
  const Decision d = r.cap_set ? decide(rule, r.cap, "set_path_cap")
                               : decide(rule, environment_cap(), "SOFTDTW_TORCH_CPU_PATH");
  r.decided[rule.kernel] = d;
  rule.decided.store(static_cast<int>(d.path), std::memory_order_release);
  return d.path;
}

void set_path_cap(std::optional<VectorPath> cap) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.cap = cap;
  r.cap_set = cap.has_value();
  r.decided.clear();  // decided again at each kernel's next call
  for (const auto& [name, rule] : r.rules) rule->decided.store(-1, std::memory_order_release);
}

bool register_path_rule(const PathRule& rule) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.rules.emplace(rule.kernel, &rule);
  return true;
}

void decide_all_paths() {
  std::vector<const PathRule*> rules;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto& [name, rule] : r.rules) rules.push_back(rule);
  }
  for (const PathRule* rule : rules) path_of(*rule);
}

std::vector<std::string> path_report() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> lines;
  for (const auto& [name, d] : r.decided) lines.push_back(name + ": " + path_name(d.path) + " (" + d.why + ")");
  return lines;
}

}  // namespace softdtw_torch
