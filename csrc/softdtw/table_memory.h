// The memory of the CPU DP tables R. A big table's block is kept when the table is freed, for the
// next table of the same size (design doc §9, "The table's pages"): glibc maps a block of 32 MiB
// or more afresh on every call and unmaps it on free, so without this every forward faults its
// whole table in page by page (12 ms of a 26 ms forward + backward at workload A on the
// development VM). One block at most is kept, so what is held between calls is bounded by one
// table; release_table_memory() frees it, SOFTDTW_TORCH_KEEP_TABLE_MEMORY=0 turns keeping off.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace softdtw_torch::softdtw {

// Tables smaller than this come from at::empty: glibc reuses their memory itself.
constexpr int64_t kKeptTableMinBytes = int64_t(1) << 20;

// at::empty(sizes, options); a CPU table of kKeptTableMinBytes or more reuses the kept block when
// its size matches (else the kept block is freed and a new one allocated). The tensor's memory is
// never shared with another live tensor, and is reported to torch's profiler as allocated and
// freed, as the CPU allocator's is.
at::Tensor empty_table(at::IntArrayRef sizes, const at::TensorOptions& options);

// Frees the kept block, if any; returns its size in bytes (0 when none was kept).
int64_t release_table_memory();

}  // namespace softdtw_torch::softdtw
