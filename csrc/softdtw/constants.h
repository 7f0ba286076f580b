// SoftDTW numbers that more than one layer needs, written once. No ATen, no CUDA: the device code
// (cuda/tiles.cuh), the host code and the Python package (exported as attributes of
// softdtw_torch._C by library.cpp, read by the fake kernels and the barycenter) all read them here.
#pragma once

#include <cstdint>

namespace softdtw_torch::softdtw {

// soft_dtw's fused=None rule: the fused kernel computes ||x_i − y_j||² per cell at O(d) cost,
// which stays below the DP's own per-cell cost up to this many features; beyond it, the unfused
// mode's batched matrix product (x·yᵀ) is cheaper.
constexpr int64_t kMaxFusedFeatures = 128;

// Pairs of up to this many steps run in packs on the CPU (cpu/kernel.cpp says why), whose forward
// can also keep each pair's gradient: the memory planner (plan.cpp) reads it for that choice.
constexpr int64_t kMaxPackedLength = 512;

// Rows and columns of the CUDA kernels' tiles; a checkpointed CUDA forward keeps R on the last row
// of every block of this many rows and the last column of every block of this many columns.
constexpr int kCudaTileRows = 64;
constexpr int kCudaTileCols = 64;

// The CUDA forward and backward of short pairs, one warp per pair (cuda/tiles.cuh,
// pair_forward_kernel, pair_backward_kernel): pairs of up to this many columns (32 lanes of at
// most 8 columns each) and, fused, this many features.
constexpr int64_t kCudaPairMaxColumns = 256;
constexpr int64_t kCudaPairMaxFusedFeatures = 16;

}  // namespace softdtw_torch::softdtw
