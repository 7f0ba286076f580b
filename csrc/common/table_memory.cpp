#include "table_memory.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace softdtw_torch::table_memory {

namespace {

struct Block {
  void* data;
  size_t bytes;
};

// The kept block: exchanged atomically, so no lock (nothing to hold across a fork) and no block
// is ever handed to two tables.
std::atomic<Block*> kept{nullptr};
// Bytes handed out to live tables and kept, for the profiler's running totals.
std::atomic<int64_t> live_bytes{0}, kept_bytes{0};

bool keeping_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("SOFTDTW_TORCH_KEEP_TABLE_MEMORY");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

void free_block(Block* b) {
  c10::free_cpu(b->data);
  delete b;
}

void report(const Block* b, int64_t signed_bytes) {
  const int64_t live = live_bytes.fetch_add(signed_bytes) + signed_bytes;
  c10::reportMemoryUsageToProfiler(b->data, signed_bytes, static_cast<size_t>(live),
                                   static_cast<size_t>(live + kept_bytes.load()), c10::Device(c10::DeviceType::CPU));
}

// The kept block, no longer kept (nullptr when none was).
Block* take_kept_block() {
  Block* b = kept.exchange(nullptr);
  if (b != nullptr) kept_bytes.fetch_sub(static_cast<int64_t>(b->bytes));
  return b;
}

// The block for a table of `bytes`: the kept one when its size matches, else a new one.
Block* take_block(size_t bytes) {
  Block* b = take_kept_block();
  if (b != nullptr) {
    if (b->bytes == bytes) return b;
    free_block(b);
  }
  return new Block{c10::alloc_cpu(bytes), bytes};
}

// A freed table's block becomes the kept one; the one it replaces is freed.
void keep_block(Block* b) {
  kept_bytes.fetch_add(static_cast<int64_t>(b->bytes));
  Block* old = kept.exchange(b);
  if (old != nullptr) {
    kept_bytes.fetch_sub(static_cast<int64_t>(old->bytes));
    free_block(old);
  }
}

// The deleter of a table's DataPtr: its block becomes the kept one.
void return_block(void* context) {
  Block* b = static_cast<Block*>(context);
  report(b, -static_cast<int64_t>(b->bytes));
  keep_block(b);
}

}  // namespace

at::Tensor empty(at::IntArrayRef sizes, const at::TensorOptions& options) {
  const int64_t bytes = c10::multiply_integers(sizes) * static_cast<int64_t>(c10::elementSize(
                                                            c10::typeMetaToScalarType(options.dtype())));
  if (!options.device().is_cpu() || bytes < kMinBytes || !keeping_enabled()) {
    return at::empty(sizes, options);
  }
  Block* b = take_block(static_cast<size_t>(bytes));
  report(b, bytes);
  // Resizable with the CPU allocator, as at::empty's storage: resize_ reallocates through it and
  // frees this DataPtr, whose deleter keeps the block.
  c10::Storage storage(c10::Storage::use_byte_size_t(), bytes,
                       c10::DataPtr(b->data, b, &return_block, c10::Device(c10::DeviceType::CPU)),
                       c10::GetCPUAllocator(), /*resizable=*/true);
  at::Tensor table = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), options.dtype());
  table.unsafeGetTensorImpl()->set_sizes_contiguous(sizes);
  return table;
}

int64_t release() {
  Block* b = take_kept_block();
  if (b == nullptr) return 0;
  const auto bytes = static_cast<int64_t>(b->bytes);
  free_block(b);
  return bytes;
}

}  // namespace softdtw_torch::table_memory
