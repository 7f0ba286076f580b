// Kernels with and without data races, for the emulator's racecheck (cuda_emu.h built with
// -fsanitize=thread): `racecheck_cases NAME` runs one case; test_cuda_emu_selftest.py expects a
// ThreadSanitizer data-race report exactly for the racy ones.
#include "cuda_emu.h"

#include <cstdio>
#include <string>
#include <vector>

namespace {

// Thread 0 (warp 0) writes a shared word that thread 32 (warp 1) reads: racy without the barrier.
template <bool kBarrier>
__global__ void across_warps_kernel(float* out) {
  float* s = reinterpret_cast<float*>(emu::dynamic_shared_memory());
  if (threadIdx.x == 0) s[0] = 1.0f;
  if (kBarrier) __syncthreads();
  if (threadIdx.x == 32) out[0] = s[0];
}

// Each lane writes its word and reads its neighbour's: racy unless __syncwarp separates them
// (kOrder 1); a shuffle between them (kOrder 2) exchanges a value but orders no memory.
template <int kOrder>
__global__ void neighbour_kernel(float* out) {
  float* s = reinterpret_cast<float*>(emu::dynamic_shared_memory());
  const unsigned lane = threadIdx.x % 32;
  s[lane] = static_cast<float>(lane);
  float extra = 0.0f;
  if (kOrder == 1) __syncwarp();
  if (kOrder == 2) extra = __shfl_sync(0xffffffffu, 1.0f, 0);
  out[32 * blockIdx.x + lane] = s[(lane + 1) % 32] + extra;
}

// Every thread of the block writes one global word: write/write race.
__global__ void same_global_word_kernel(float* out) { out[0] = static_cast<float>(threadIdx.x); }

// Two blocks of one launch write the same global word: a race between blocks.
__global__ void blocks_same_word_kernel(float* out) {
  if (threadIdx.x == 0) out[0] = static_cast<float>(blockIdx.x);
}

// Distinct words, read back by the next launch: no race (launches are ordered).
__global__ void distinct_words_kernel(float* out) { out[threadIdx.x] = static_cast<float>(threadIdx.x); }
__global__ void read_back_kernel(const float* in, float* out) { out[threadIdx.x] = 2.0f * in[63 - threadIdx.x]; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: racecheck_cases NAME\n");
    return 2;
  }
  const std::string name = argv[1];
  std::vector<float> a(64), b(64);
  const std::size_t smem = 64 * sizeof(float);
  if (name == "across_warps_racy") emu::launch(dim3(1), dim3(64), smem, across_warps_kernel<false>, a.data());
  else if (name == "across_warps_barrier") emu::launch(dim3(1), dim3(64), smem, across_warps_kernel<true>, a.data());
  else if (name == "neighbour_racy") emu::launch(dim3(2), dim3(32), smem, neighbour_kernel<0>, a.data());
  else if (name == "neighbour_syncwarp") emu::launch(dim3(2), dim3(32), smem, neighbour_kernel<1>, a.data());
  else if (name == "neighbour_shuffle") emu::launch(dim3(2), dim3(32), smem, neighbour_kernel<2>, a.data());
  else if (name == "blocks_same_word") emu::launch(dim3(2), dim3(32), 0, blocks_same_word_kernel, a.data());
  else if (name == "same_global_word") emu::launch(dim3(1), dim3(64), 0, same_global_word_kernel, a.data());
  else if (name == "launches_in_order") {
    emu::launch(dim3(1), dim3(64), 0, distinct_words_kernel, a.data());
    emu::launch(dim3(1), dim3(64), 0, read_back_kernel, a.data(), b.data());
    if (b[0] != 126.0f) return 3;
  } else {
    std::fprintf(stderr, "unknown case %s\n", name.c_str());
    return 2;
  }
  std::printf("case %s ran\n", name.c_str());
  return 0;
}
