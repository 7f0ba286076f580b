// The memory of big CPU tables: SoftDTW's DP tables R and the features of MiniRocket, MultiRocket
// and Hydra. A big table's block is kept when the table is freed, for the next table of the same
// size (docs/design/softdtw.md §9, "The table's pages"): glibc maps a block of 32 MiB or more
// afresh on every call and unmaps it on free, so without this every call faults its whole table in
// page by page (12 ms of a 26 ms SoftDTW forward + backward at workload A, 5-12% of a MiniRocket
// transform of 1,000 cases, 3-5% of a MultiRocket one, on the development VMs). One block at most
// is kept, so what is held between calls is bounded by one table; release()
// (softdtw_torch.release_table_memory()) frees it, SOFTDTW_TORCH_KEEP_TABLE_MEMORY=0 turns keeping
// off.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace softdtw_torch::table_memory {

// Tables smaller than this come from at::empty: glibc reuses their memory itself.
constexpr int64_t kMinBytes = int64_t(1) << 20;

// at::empty(sizes, options); a CPU table of kMinBytes or more reuses the kept block when its size
// matches (else the kept block is freed and a new one allocated). The tensor's memory is never
// shared with another live tensor, and is reported to torch's profiler as allocated and freed, as
// the CPU allocator's is. Its storage is resizable, as at::empty's: resize_ moves it to memory from
// the CPU allocator, and its block is then kept.
at::Tensor empty(at::IntArrayRef sizes, const at::TensorOptions& options);

// Frees the kept block, if any; returns its size in bytes (0 when none was kept).
int64_t release();

}  // namespace softdtw_torch::table_memory
