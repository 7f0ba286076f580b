// The memory preflight: a call whose memory grows with the problem (DP tables, cost tensors,
// features, kernels) computes the bytes it will allocate before allocating them, and refuses a
// size the device cannot give with torch.OutOfMemoryError (c10::OutOfMemoryError), naming the op,
// the size asked, the size available and the options that fit; in well under a second, instead
// of the allocator's raw message, or minutes of work before std::bad_alloc.
//
// What a device can give (available()): on CUDA, the driver's free memory plus what torch's caching
// allocator holds unused; on the CPU, the limit set by set_cpu_limit (softdtw_torch.set_memory_limit,
// or the environment variable SOFTDTW_TORCH_CPU_MEMORY_LIMIT in bytes), by default the machine's
// available memory (Linux: MemAvailable, capped by the cgroup's memory.max; elsewhere no check).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>

namespace softdtw_torch::memory {

// Bytes `device` can give now; nullopt where unknown (then nothing is refused).
std::optional<int64_t> available(const at::Device& device);

// The CPU limit: nullopt restores the default (the available memory).
void set_cpu_limit(std::optional<int64_t> bytes);
std::optional<int64_t> cpu_limit();

// Refuses `bytes` (a double: sizes of products that overflow int64 are still compared) on `device`:
// "<op>: needs <what> of <size> (<shape>), but <device> has <size> available; <remedies>". An empty
// string when it fits; for Python callers, which raise torch.OutOfMemoryError with it.
std::string refusal(const char* op, const std::string& what, double bytes, const at::Device& device,
                    const std::string& remedies);

// Throws c10::OutOfMemoryError with refusal()'s message when it is not empty.
void check(const char* op, const std::string& what, double bytes, const at::Device& device,
           const std::string& remedies);

// The bytes of a tensor of these sizes and dtype, as a double (a product beyond int64 still compares).
double bytes_of(at::IntArrayRef sizes, at::ScalarType dtype);

// Sizes up to this are never refused by default (no system call for the everyday sizes).
constexpr double kAlwaysFits = 256.0 * (1 << 20);

}  // namespace softdtw_torch::memory
