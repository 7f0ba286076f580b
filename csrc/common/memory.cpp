#include "memory.h"

#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#ifdef SOFTDTW_TORCH_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace softdtw_torch::memory {

namespace {

constexpr int64_t kNoLimit = -1;

int64_t limit_from_environment() {
  const char* text = std::getenv("SOFTDTW_TORCH_CPU_MEMORY_LIMIT");
  if (text == nullptr || *text == '\0') return kNoLimit;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  TORCH_CHECK_VALUE(end != text && *end == '\0' && value > 0,
                    "SOFTDTW_TORCH_CPU_MEMORY_LIMIT: expected a positive number of bytes, got '", text, "'");
  return value;
}

std::atomic<int64_t>& limit_slot() {
  static std::atomic<int64_t> slot{limit_from_environment()};
  return slot;
}

#ifdef __linux__
// A "<key>: <n> kB" line of /proc/meminfo, in bytes.
std::optional<int64_t> meminfo(const char* key) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  int64_t kib = 0;
  std::string unit;
  while (in >> name >> kib) {
    std::getline(in, unit);
    if (name == key) return kib * 1024;
  }
  return std::nullopt;
}

// A number in a cgroup v2 file ("max": none).
std::optional<int64_t> cgroup_value(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  return std::strtoll(text.c_str(), nullptr, 10);
}
#endif

std::optional<int64_t> cpu_available() {
  const int64_t limit = limit_slot().load();
  if (limit != kNoLimit) return limit;
#ifdef __linux__
  std::optional<int64_t> bytes = meminfo("MemAvailable:");
  const auto max = cgroup_value("/sys/fs/cgroup/memory.max");
  const auto current = cgroup_value("/sys/fs/cgroup/memory.current");
  if (max && current) {
    const int64_t room = std::max<int64_t>(*max - *current, 0);
    bytes = bytes ? std::min(*bytes, room) : room;
  }
  return bytes;
#else
  return std::nullopt;
#endif
}

std::string readable(double bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  double value = bytes;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  char text[64];
  if (unit == 0) {
    std::snprintf(text, sizeof(text), "%.0f bytes", value);
  } else {
    std::snprintf(text, sizeof(text), "%.1f %s", value, units[unit]);
  }
  return text;
}

}  // namespace

double bytes_of(at::IntArrayRef sizes, at::ScalarType dtype) {
  double bytes = static_cast<double>(c10::elementSize(dtype));
  for (const int64_t size : sizes) bytes *= static_cast<double>(size);
  return bytes;
}

void set_cpu_limit(std::optional<int64_t> bytes) {
  TORCH_CHECK_VALUE(!bytes.has_value() || *bytes > 0, "set_memory_limit: expected a positive number of bytes or None, got ",
                    bytes.value_or(0));
  limit_slot().store(bytes.value_or(kNoLimit));
}

std::optional<int64_t> cpu_limit() {
  const int64_t limit = limit_slot().load();
  return limit == kNoLimit ? std::nullopt : std::optional<int64_t>(limit);
}

std::optional<int64_t> available(const at::Device& device) {
  if (device.is_cpu()) return cpu_available();
#ifdef SOFTDTW_TORCH_WITH_CUDA
  if (device.is_cuda()) {
    const c10::cuda::CUDAGuard guard(device);
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
      (void)cudaGetLastError();  // leave no error behind for the next CUDA call
      return std::nullopt;
    }
    // Memory torch's caching allocator holds but no tensor uses is free to this call too.
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(guard.current_device().index());
    const size_t aggregate = 0;  // StatType::AGGREGATE, the first (its namespace moved between torch versions)
    const int64_t cached = stats.reserved_bytes[aggregate].current - stats.allocated_bytes[aggregate].current;
    return static_cast<int64_t>(free) + std::max<int64_t>(cached, 0);
  }
#endif
  return std::nullopt;  // meta and other devices: nothing is allocated, or nothing known
}

std::string refusal(const char* op, const std::string& what, double bytes, const at::Device& device,
                    const std::string& remedies) {
  const bool limited = device.is_cpu() && cpu_limit().has_value();
  if (!(bytes > kAlwaysFits) && !limited) return std::string();
  const std::optional<int64_t> room = available(device);
  if (!room.has_value() || bytes <= static_cast<double>(*room)) return std::string();
  std::ostringstream message;
  message << op << ": needs " << readable(bytes) << " for " << what << ", but " << device << " has "
          << readable(static_cast<double>(*room)) << " available"
          << (limited ? " (the limit set by softdtw_torch.set_memory_limit or SOFTDTW_TORCH_CPU_MEMORY_LIMIT)" : "");
  if (!remedies.empty()) message << "; " << remedies;
  return message.str();
}

void check(const char* op, const std::string& what, double bytes, const at::Device& device,
           const std::string& remedies) {
  const std::string message = refusal(op, what, bytes, device, remedies);
  if (!message.empty()) C10_THROW_ERROR(OutOfMemoryError, message);
}

}  // namespace softdtw_torch::memory
