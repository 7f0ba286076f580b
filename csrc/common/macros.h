// The library's macros, in one place.
#pragma once

// Functions of the math headers shared by host and device code (softdtw/math.h, rocket/math.h,
// minirocket/math.h): inlined device functions under nvcc, plain inline functions elsewhere.
#if defined(__CUDACC__)
#define SOFTDTW_TORCH_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define SOFTDTW_TORCH_HOST_DEVICE inline
#endif

// The device code's own paths (the CUDA math library, the _rn intrinsics, one-instruction min/max):
// under nvcc's device pass, and in the tests' CPU emulation of the CUDA kernels (tests/cuda_emu,
// which defines SDTW_CUDA_EMULATION), so that the emulation runs the code a GPU runs.
#if defined(__CUDA_ARCH__) || defined(SDTW_CUDA_EMULATION)
#define SOFTDTW_TORCH_DEVICE_PATH 1
#else
#define SOFTDTW_TORCH_DEVICE_PATH 0
#endif

// CPU hot loops are compiled once per instruction set and the loader picks the version the
// machine supports (GCC function multi-versioning; other compilers build the baseline only).
// Every version computes the same bits: the build disables FMA contraction (-ffp-contract=off)
// and the kernels call std::fma only where aeon's arithmetic fuses, which is exact everywhere
// (an instruction, or libm's correctly rounded fma on the baseline).
// SOFTDTW_TORCH_PORTABLE_ONLY, defined by tests/infra/test_build.py alone, turns off these clones
// and the intrinsics below, so that this machine compiles the code other CPUs and compilers get.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && \
    !defined(SOFTDTW_TORCH_PORTABLE_ONLY)
#define SOFTDTW_TORCH_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#define SOFTDTW_TORCH_HAS_CPU_CLONES 1
#else
#define SOFTDTW_TORCH_TARGET_CLONES(...)
#define SOFTDTW_TORCH_HAS_CPU_CLONES 0
#endif

// The default set: AVX-512 (x86-64-v4), AVX2 with FMA (x86-64-v3) and the baseline x86-64.
#define SOFTDTW_TORCH_CPU_CLONES SOFTDTW_TORCH_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
// Without AVX-512, for loops where it measured slower (MiniRocket's counting loop: an AVX-512
// compare counts through a mask register with one more instruction).
#define SOFTDTW_TORCH_CPU_CLONES_NO_AVX512 SOFTDTW_TORCH_TARGET_CLONES("arch=x86-64-v3", "default")

// x86-64 intrinsics (<immintrin.h>) for the CPU loops written by hand for one instruction set
// (Hydra's AVX2, MiniRocket's AVX-512), each chosen at run time by a CPU check beside it.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(SOFTDTW_TORCH_PORTABLE_ONLY)
#define SOFTDTW_TORCH_X86_INTRINSICS 1
#else
#define SOFTDTW_TORCH_X86_INTRINSICS 0
#endif
// A small helper of such a loop, inlined into its AVX-512 caller (a lambda would not inherit the
// caller's instruction set).
#define SOFTDTW_TORCH_AVX512_HELPER __attribute__((target("avx512f,avx512vl"), always_inline)) inline
// GCC 12 warns that the "undefined" source vector inside some AVX-512 intrinsics (inserts,
// extracts, shuffles) is used uninitialized (GCC bug 105593, fixed in GCC 13): a false alarm,
// silenced between these two around the code that uses them.
#define SOFTDTW_TORCH_AVX512_WARNINGS_OFF              \
  _Pragma("GCC diagnostic push")                        \
  _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
  _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define SOFTDTW_TORCH_AVX512_WARNINGS_ON _Pragma("GCC diagnostic pop")

// Asserts that a loop's iterations are independent (its pointers do not overlap), so that it
// vectorizes where the pointers sit in structs, which __restrict does not reach.
#if defined(__clang__)
#define SOFTDTW_TORCH_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define SOFTDTW_TORCH_IVDEP _Pragma("GCC ivdep")
#else
#define SOFTDTW_TORCH_IVDEP
#endif
