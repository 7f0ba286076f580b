// cuda_emu.h: a CPU emulator for the device code of this project's CUDA kernels, for the tests.
//
// Why: the CUDA kernels (SoftDTW, ROCKET, MiniRocket) must be checked on machines without a GPU. A
// test translation unit compiled by g++ (-std=c++20 -pthread) defines SDTW_CUDA_EMULATION,
// includes this header first and then the unchanged CUDA-style device code; emu::launch() then
// runs every CUDA thread of the kernel on the CPU, so logic errors (indexing, barriers, shuffles,
// reductions) show up in results, and the checks below show what results alone would not.
//
// How: each warp of a block is one std::thread, so warps run concurrently and are preempted as on
// a GPU (a warp may spin on a flag another warp sets). The 32 lanes of a warp are fibers on that
// thread (own stack and thread_local threadIdx, switched in user space): a warp primitive then
// costs ~1 us rather than 32 OS context switches. Lanes run one at a time between primitives, in
// ascending then descending lane order (alternating at each warp round).
//
// Emulated faithfully:
//   - threadIdx/blockIdx (per emulated thread), blockDim/gridDim, warps of 32 consecutive linear
//     thread ids (x fastest, then y, then z).
//   - Every warp primitive (__shfl*_sync, __ballot/__any/__all_sync, __syncwarp) is a rendezvous
//     of the 32 lanes, with full-mask sm_70+ semantics (width, out-of-range source lanes).
//     Divergence is an error: a lane that returned while its warp-mates wait in a primitive, lanes
//     of a warp in different primitives in the same round, a lane in a warp primitive while a
//     warp-mate waits at a block barrier.
//   - __syncthreads and the _or/_and/_count variants, with arrive-and-drop for returned threads;
//     a barrier that does not complete within CUDA_EMU_TIMEOUT_S seconds (default 60) is reported
//     as a deadlock.
//   - synccheck: every thread of a barrier round must call the same variant from the same call
//     site (source file, line and column), else "divergent barrier".
//   - Launch checks (cudaLaunchKernel's invalid configurations): grid x in [1, 2^31 − 1], y and z
//     in [1, 65535] (emu::LaunchShape checks 64-bit counts before narrowing); at most 1024 threads
//     a block, z at most 64, whole warps; dynamic shared memory at most 48 KiB unless the kernel
//     opted in with cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize), and never
//     above the emulated architecture's opt-in limit (CUDA_EMU_ARCH: 75 by default, 64 KiB; 90:
//     227 KiB). cudaGetDevice, cudaDeviceGetAttribute(cudaDevAttrMaxSharedMemoryPerBlockOptin) and
//     cudaFuncSetAttribute are emulated for launchers.
//   - Dynamic shared memory per block, filled with 0xFF bytes (NaN as float/double) at block start,
//     so reads of uninitialised shared memory show in the results.
//   - Blocks run in a pseudo-random order (CUDA_EMU_SEED, default 1; 0 runs them in order), one at
//     a time unless CUDA_EMU_CONCURRENT_BLOCKS=k.
//   - racecheck, in a build with -fsanitize=thread: the GPU's ordering rules between the threads
//     of a launch, given to ThreadSanitizer (see CUDA_EMU_TSAN below): __syncwarp and the barriers
//     order memory within a warp and a block, shuffles and votes do not, blocks of one launch are
//     not ordered with each other (though they run one after another here), launches are.
//     ThreadSanitizer then reports every unordered pair of accesses to one address, one a write,
//     in shared or global memory, whether or not it changed a result.
//   - memcheck, in a build with -fsanitize=address,undefined: fiber switches and stack reuse are
//     annotated for AddressSanitizer, which then sees the device code's out-of-bounds accesses.
// NOT emulated:
//   - No implicit warp-synchronous execution: lanes are only in step at explicit primitives, which
//     exposes a missing __syncwarp (a lane reads shared memory its warp-mates have not written yet).
//   - No forward progress between lanes of one warp outside primitives: a lane spinning on a value
//     a warp-mate writes never ends (reported after CUDA_EMU_TIMEOUT_S as a stuck lane).
//   - Masks other than 0xffffffff (an error), static __shared__ (the including code maps it),
//     streams, events, timing, occupancy, register limits, the memory model between blocks and
//     between a GPU and its host, floating-point details of the fast intrinsics (__expf etc. are
//     the accurate host functions; emu::worst_case_* below give code a documented worst-case
//     error instead, where it asks for them).
//
// API besides the CUDA built-ins: emu::launch(grid, block, dynamic_smem_bytes, kernel, args...)
// (grid a dim3 or an emu::LaunchShape), emu::dynamic_shared_memory(),
// emu::dynamic_shared_memory_size(), emu::launches(), emu::reset_launch_count(),
// emu::EmulationError. Environment, read at each launch: CUDA_EMU_TIMEOUT_S, CUDA_EMU_SEED,
// CUDA_EMU_CONCURRENT_BLOCKS, CUDA_EMU_ON_ERROR=abort|throw, CUDA_EMU_STACK_KB, CUDA_EMU_ARCH.
//
// Errors found by the emulator print "cuda_emu: <what>" to stderr and std::abort(), or, with
// CUDA_EMU_ON_ERROR=throw, make emu::launch() throw emu::EmulationError (a stuck lane always
// aborts). An exception a kernel throws is rethrown by emu::launch() once its block has unwound.
// Each lane has a 256 KiB stack (CUDA_EMU_STACK_KB) with a guard page. Linux/POSIX only; x86-64
// switches fibers with a few instructions, other targets (or -DCUDA_EMU_USE_UCONTEXT) use
// swapcontext.
#pragma once

#ifdef __CUDACC__
#error "cuda_emu.h emulates CUDA for a host compiler; do not include it in code compiled by nvcc"
#endif

// Every standard header the emulator needs comes before the qualifier macros below.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if !defined(__x86_64__) && !defined(CUDA_EMU_USE_UCONTEXT)
#define CUDA_EMU_USE_UCONTEXT 1
#endif
#ifdef CUDA_EMU_USE_UCONTEXT
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define CUDA_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDA_EMU_ASAN 1
#endif
#endif
#ifdef CUDA_EMU_ASAN
extern "C" void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, std::size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, std::size_t* size_old);
extern "C" void __asan_unpoison_memory_region(void const volatile* addr, std::size_t size);
#endif

// Racecheck: built with -fsanitize=thread, every lane is a ThreadSanitizer fiber of its own and the
// emulator tells ThreadSanitizer exactly which operations order memory between lanes: __syncwarp
// (within a warp), the block barriers (within a block), a lane's return (towards the host, once the
// launch ends) and the launch itself (host → lanes). Warp shuffles, votes, the switches between
// lanes and the order in which blocks run order nothing, as on a GPU; the emulator's own
// bookkeeping is hidden from the race detector. Any two accesses to one address by two threads of
// a launch, one a write, that nothing orders are then reported by ThreadSanitizer as a data race,
// in shared or global memory, within a block or between blocks, whether or not it changed a result.
#if defined(__SANITIZE_THREAD__)
#define CUDA_EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CUDA_EMU_TSAN 1
#endif
#endif
#ifdef CUDA_EMU_TSAN
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
void AnnotateIgnoreSyncBegin(const char* file, int line);
void AnnotateIgnoreSyncEnd(const char* file, int line);
}
#endif

// ---------------------------------------------------------------------------------------------
// Qualifiers. __noinline__ is empty rather than __attribute__((noinline)): libstdc++ itself writes
// __attribute__((__noinline__)), which must stay valid in headers included after this one.
#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

// ---------------------------------------------------------------------------------------------
// Built-in types and index variables.
struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// Per OS thread, and set to the running lane's values at every fiber switch: each emulated CUDA
// thread sees its own.
inline thread_local uint3 threadIdx{0, 0, 0};
inline thread_local uint3 blockIdx{0, 0, 0};
inline dim3 blockDim{1, 1, 1};  // launches run one at a time: one value per launch
inline dim3 gridDim{1, 1, 1};
constexpr int warpSize = 32;

namespace emu {

// Thrown by emu::launch() for an error the emulator found, when CUDA_EMU_ON_ERROR=throw.
class EmulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr std::size_t kSharedAlignment = 128;

// Thrown inside the lanes of a block that failed, to unwind them; never escapes launch().
struct BlockPoisoned {};

enum class Primitive : int {
  syncwarp,
  shfl,
  shfl_up,
  shfl_down,
  shfl_xor,
  ballot,
  any,
  all,
  syncthreads,
  syncthreads_or,
  syncthreads_and,
  syncthreads_count,
};

inline const char* primitive_name(Primitive p) {
  static const char* const names[] = {"__syncwarp",       "__shfl_sync",     "__shfl_up_sync",   "__shfl_down_sync",
                                      "__shfl_xor_sync",  "__ballot_sync",   "__any_sync",       "__all_sync",
                                      "__syncthreads",    "__syncthreads_or", "__syncthreads_and", "__syncthreads_count"};
  return names[static_cast<int>(p)];
}

// Settings of the launch in progress (read from the environment at each launch).
inline bool g_throw_on_error = false;
inline std::chrono::nanoseconds g_timeout{std::chrono::seconds(60)};
inline std::size_t g_stack_size = 256 * 1024;
inline std::atomic<std::uint64_t> g_launch_count{0};

inline std::string printf_string(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string printf_string(const char* fmt, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  return buffer;
}

inline std::mutex g_report_mutex;

// Prints and aborts; the mutex keeps a second failing thread from interleaving its message.
[[noreturn]] inline void fatal(const std::string& message) {
  g_report_mutex.lock();
  std::fprintf(stderr, "cuda_emu: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

[[noreturn]] inline void fail(const std::string& message) {
  if (g_throw_on_error) throw EmulationError("cuda_emu: " + message);
  fatal(message);
}

// ---------------------------------------------------------------------------------------------
// Fibers: a saved stack pointer (x86-64) or a ucontext, plus AddressSanitizer bookkeeping.
struct FiberContext {
#ifdef CUDA_EMU_USE_UCONTEXT
  ucontext_t context;
#else
  void* sp = nullptr;
#endif
  const void* stack_bottom = nullptr;  // for AddressSanitizer
  std::size_t stack_size = 0;
  void* asan_fake_stack = nullptr;
  void* tsan_fiber = nullptr;  // for ThreadSanitizer
};

// The emulator's own work (round and barrier bookkeeping and the values of a shuffle in a lane,
// the host's setup of a block and its warps' thread starts): invisible to ThreadSanitizer,
// accesses and synchronisation alike, so that neither races with the kernel's accesses nor orders
// them (the block mutex, a thread start). Nests.
struct Internal {
#ifdef CUDA_EMU_TSAN
  Internal() {
    __tsan_ignore_thread_begin();
    AnnotateIgnoreSyncBegin(__FILE__, __LINE__);
  }
  ~Internal() {
    AnnotateIgnoreSyncEnd(__FILE__, __LINE__);
    __tsan_ignore_thread_end();
  }
#endif
};

// Happens-before edges of the emulated memory model: a lane releases at a barrier (or __syncwarp)
// it arrives at and acquires once it completes. Called inside Internal scopes, so synchronisation
// is switched back on around them.
inline void order_release([[maybe_unused]] void* sync_object) {
#ifdef CUDA_EMU_TSAN
  AnnotateIgnoreSyncEnd(__FILE__, __LINE__);
  __tsan_release(sync_object);
  AnnotateIgnoreSyncBegin(__FILE__, __LINE__);
#endif
}
inline void order_acquire([[maybe_unused]] void* sync_object) {
#ifdef CUDA_EMU_TSAN
  AnnotateIgnoreSyncEnd(__FILE__, __LINE__);
  __tsan_acquire(sync_object);
  AnnotateIgnoreSyncBegin(__FILE__, __LINE__);
#endif
}

// Blocks of one launch are not ordered with each other (they run one after another here, on
// threads the host starts and joins, which ThreadSanitizer would take as ordering them): the host
// releases the launch's start into g_launch_start, each warp acquires it as it starts, and the
// host starts the warps' threads and sets a block up without creating any other edge. The host
// joins them normally: everything a launch did is ordered before what the host does next.
inline char g_launch_start;
// Lane fibers are destroyed when their launch ends, not with their block: ThreadSanitizer reuses a
// destroyed fiber's thread id, and takes a later fiber with that id as ordered after it.
inline std::mutex g_retired_mutex;
inline std::vector<void*> g_retired_fibers;


#ifndef CUDA_EMU_USE_UCONTEXT
// Saves the callee-saved registers (and SSE/x87 control words) on the current stack, stores the
// stack pointer in *save_sp, switches to load_sp and restores what was saved there.
__attribute__((naked, noinline)) inline void switch_stack(void** /*save_sp*/, void* /*load_sp*/) {
  asm volatile(
      "pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "subq $8, %rsp\n\t"
      "stmxcsr (%rsp)\n\t"
      "fnstcw 4(%rsp)\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq %rsi, %rsp\n\t"
      "ldmxcsr (%rsp)\n\t"
      "fldcw 4(%rsp)\n\t"
      "addq $8, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret\n\t");
}

// First code of a fiber: entry (r13) called with its argument (r12); entry never returns.
__attribute__((naked, noinline)) inline void fiber_trampoline() {
  asm volatile(
      "movq %r12, %rdi\n\t"
      "callq *%r13\n\t"
      "ud2\n\t");
}

inline void fiber_prepare(FiberContext& fiber, unsigned char* stack, std::size_t size, void (*entry)(void*), void* arg) {
#ifdef CUDA_EMU_ASAN
  __asan_unpoison_memory_region(stack, size);  // a reused stack keeps the redzones of its last fiber's frames
#endif
  // Frame that switch_stack pops: control words, r15, r14, r13 = entry, r12 = arg, rbx, rbp, then
  // the return address (the trampoline). Above it a zero return address ends stack unwinding.
  const std::uintptr_t top = (reinterpret_cast<std::uintptr_t>(stack + size) & ~std::uintptr_t{15}) - 16;
  auto* frame = reinterpret_cast<std::uint64_t*>(top - 64);
  frame[0] = (std::uint64_t{0x037F} << 32) | 0x1F80;  // default x87 control word, MXCSR
  frame[1] = 0;
  frame[2] = 0;
  frame[3] = reinterpret_cast<std::uint64_t>(entry);
  frame[4] = reinterpret_cast<std::uint64_t>(arg);
  frame[5] = 0;
  frame[6] = 0;
  frame[7] = reinterpret_cast<std::uint64_t>(&fiber_trampoline);
  reinterpret_cast<std::uint64_t*>(top)[0] = 0;
  reinterpret_cast<std::uint64_t*>(top)[1] = 0;
  fiber.sp = frame;
  fiber.stack_bottom = stack;
  fiber.stack_size = size;
}
#else
inline thread_local std::pair<void (*)(void*), void*> t_fiber_start{nullptr, nullptr};

inline void ucontext_entry() { t_fiber_start.first(t_fiber_start.second); }

inline void fiber_prepare(FiberContext& fiber, unsigned char* stack, std::size_t size, void (*entry)(void*), void* arg) {
  if (getcontext(&fiber.context) != 0) fatal("getcontext failed");
  fiber.context.uc_stack.ss_sp = stack;
  fiber.context.uc_stack.ss_size = size;
  fiber.context.uc_link = nullptr;
  makecontext(&fiber.context, ucontext_entry, 0);
  t_fiber_start = {entry, arg};  // read by the fiber as it starts, right after this switch
  fiber.stack_bottom = stack;
  fiber.stack_size = size;
}
#endif

// `finishing`: `from` never runs again (AddressSanitizer then frees its fake stack).
inline void fiber_switch(FiberContext& from, FiberContext& to, bool finishing = false) {
#ifdef CUDA_EMU_TSAN
  // Only a lane's last switch (its return) orders its accesses before the scheduler's, and so
  // before the host's once the launch ends.
  __tsan_switch_to_fiber(to.tsan_fiber, finishing ? 0 : 1 /* __tsan_switch_to_fiber_no_sync */);
#endif
#ifdef CUDA_EMU_ASAN
  __sanitizer_start_switch_fiber(finishing ? nullptr : &from.asan_fake_stack, to.stack_bottom, to.stack_size);
#else
  (void)finishing;
#endif
#ifdef CUDA_EMU_USE_UCONTEXT
  if (swapcontext(&from.context, &to.context) != 0) fatal("swapcontext failed");
#else
  switch_stack(&from.sp, to.sp);
#endif
#ifdef CUDA_EMU_ASAN
  __sanitizer_finish_switch_fiber(from.asan_fake_stack, nullptr, nullptr);
#endif
}

// Lane stacks, reused across blocks and launches (mapping 1024 stacks per block would dominate).
class StackPool {
 public:
  static StackPool& instance() {
    static StackPool* pool = new StackPool;  // never destroyed: stacks may outlive static destruction
    return *pool;
  }

  // A stack of `size` usable bytes above a PROT_NONE guard page (an overflow faults).
  unsigned char* acquire(std::size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t i = 0; i < free_.size(); ++i) {
        if (free_[i].second == size) {
          unsigned char* stack = free_[i].first;
          free_[i] = free_.back();
          free_.pop_back();
          return stack;
        }
      }
    }
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* base = mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) fail(printf_string("cannot map a %zu-byte lane stack", size));
    mprotect(base, page, PROT_NONE);
    return static_cast<unsigned char*>(base) + page;
  }

  void release(unsigned char* stack, std::size_t size) {
#ifdef CUDA_EMU_TSAN
    // Unmapped, so that ThreadSanitizer forgets its accesses: a later block's lanes, unordered
    // with this block's, would otherwise race with them on a reused stack.
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    munmap(stack - page, size + page);
#else
    std::lock_guard<std::mutex> lock(mutex_);
    free_.emplace_back(stack, size);
#endif
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<unsigned char*, std::size_t>> free_;
};

// ---------------------------------------------------------------------------------------------
// Blocks, warps, lanes.
struct WarpRunner;

struct BlockState {
  uint3 index{0, 0, 0};
  unsigned thread_count = 0;
  const std::function<void()>* body = nullptr;

  unsigned char* shared = nullptr;
  std::size_t shared_size = 0;

  // Block barrier, shared by the warp threads.
  std::mutex mutex;
  std::condition_variable barrier_released;
  unsigned live_threads = 0;  // threads that have not returned: arrive-and-drop
  unsigned barrier_arrived = 0;
  unsigned barrier_true = 0;
  Primitive barrier_primitive = Primitive::syncthreads;
  uint3 barrier_first_thread{0, 0, 0};
  std::source_location barrier_site;  // where the round's first thread called the barrier
  std::uint64_t completed_barriers = 0;
  char barrier_order[2] = {};  // racecheck's sync objects of barriers, by generation parity
  unsigned result_true = 0;  // of the last completed barrier
  unsigned result_arrived = 0;

  std::atomic<bool> poisoned{false};
  std::exception_ptr first_error;  // under `mutex`

  ~BlockState() {
    if (shared) ::operator delete[](shared, std::align_val_t{kSharedAlignment});
  }

  // Records the block's first error and wakes the warp threads so that every lane unwinds.
  void poison(std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!first_error) first_error = error;
      poisoned.store(true);
    }
    barrier_released.notify_all();
  }
};

struct Lane {
  FiberContext fiber;
  unsigned char* stack = nullptr;
  WarpRunner* warp = nullptr;
  uint3 thread_index{0, 0, 0};
  unsigned linear_id = 0;
  unsigned index = 0;  // lane id in the warp
  bool started = false;
};

// One warp: an OS thread whose scheduler runs the 32 lane fibers. Lane state is kept as masks and
// only touched by this thread, so it needs no lock.
struct WarpRunner {
  BlockState* block = nullptr;
  unsigned warp_index = 0;
  FiberContext scheduler;
  Lane lanes[32];

  unsigned runnable = 0;    // lanes the scheduler may resume
  unsigned in_round = 0;    // lanes waiting in the current warp round
  unsigned at_barrier = 0;  // lanes waiting at a block barrier
  unsigned exited = 0;      // lanes that returned from the kernel
  bool descending = false;  // lane order of the current pass

  Primitive round_primitive = Primitive::syncwarp;
  unsigned round_value_size = 0;
  unsigned round_first_lane = 0;
  std::uint64_t completed_rounds = 0;
  // Values of a round, by round parity: lanes released from round r read slot r%2 while others
  // already write round r+1 into the other slot; round r+2 needs every lane to have left round r.
  std::uint64_t values[2][32] = {};
  std::uint64_t barrier_generation = 0;  // the block barrier the at_barrier lanes wait for
  char syncwarp_order[2] = {};            // racecheck's sync objects of __syncwarp, by round parity

  // Read by the watchdog thread.
  std::atomic<std::uint64_t> switches{0};
  std::atomic<bool> waiting_at_barrier{false};
  std::atomic<bool> finished{false};
  std::atomic<unsigned> running_lane{0};
};

inline thread_local Lane* t_lane = nullptr;

inline Lane& current_lane(const char* what) {
  if (!t_lane) fail(printf_string("%s called outside an emulated kernel thread", what));
  return *t_lane;
}

inline std::string where(const Lane& lane) {
  const uint3 b = lane.warp->block->index;
  const uint3 t = lane.thread_index;
  return printf_string("block (%u,%u,%u) thread (%u,%u,%u)", b.x, b.y, b.z, t.x, t.y, t.z);
}

inline void yield_to_scheduler(Lane& lane) {
  fiber_switch(lane.fiber, lane.warp->scheduler);
  if (lane.warp->block->poisoned.load(std::memory_order_relaxed)) throw BlockPoisoned{};
}

// One warp round: every lane passes a value (as raw bits); returns the round's 32 values, valid
// until this lane enters its next warp primitive.
inline const std::uint64_t* warp_round(Primitive primitive, unsigned mask, std::uint64_t value, unsigned value_size) {
  const Internal internal;
  Lane& lane = current_lane(primitive_name(primitive));
  if (mask != kFullMask) {
    fail(printf_string("%s called with mask 0x%08x at %s: the emulator supports only the full mask 0xffffffff",
                       primitive_name(primitive), mask, where(lane).c_str()));
  }
  WarpRunner& warp = *lane.warp;
  if (warp.block->poisoned.load(std::memory_order_relaxed)) throw BlockPoisoned{};
  if (warp.exited) {
    fail(printf_string("divergent warp: %s (warp %u, lane %u) called %s but lane mask 0x%08x of its warp already "
                       "returned from the kernel",
                       where(lane).c_str(), warp.warp_index, lane.index, primitive_name(primitive), warp.exited));
  }
  if (warp.in_round == 0) {
    warp.round_primitive = primitive;
    warp.round_value_size = value_size;
    warp.round_first_lane = lane.index;
  } else if (warp.round_primitive != primitive) {
    fail(printf_string("divergent warp: %s (warp %u, lane %u) called %s while lane %u of its warp called %s in the "
                       "same round",
                       where(lane).c_str(), warp.warp_index, lane.index, primitive_name(primitive),
                       warp.round_first_lane, primitive_name(warp.round_primitive)));
  } else if (warp.round_value_size != value_size) {
    fail(printf_string("divergent warp: %s (warp %u, lane %u) called %s on a %u-byte value while lane %u of its warp "
                       "passed a %u-byte value in the same round",
                       where(lane).c_str(), warp.warp_index, lane.index, primitive_name(primitive), value_size,
                       warp.round_first_lane, warp.round_value_size));
  }
  const unsigned bit = 1u << lane.index;
  const unsigned parity = warp.completed_rounds & 1;
  std::uint64_t* slot = warp.values[parity];
  slot[lane.index] = value;
  // Only __syncwarp orders memory between the lanes of a warp: shuffles and votes exchange values.
  const bool orders_memory = primitive == Primitive::syncwarp;
  if (orders_memory) order_release(&warp.syncwarp_order[parity]);
  warp.in_round |= bit;
  warp.runnable &= ~bit;
  if (warp.in_round == kFullMask) {  // the last lane: release the round
    warp.in_round = 0;
    ++warp.completed_rounds;
    warp.runnable = kFullMask;
    warp.descending = !warp.descending;
  }
  yield_to_scheduler(lane);
  if (orders_memory) order_acquire(&warp.syncwarp_order[parity]);
  return slot;
}

struct BarrierResult {
  unsigned predicate_true;
  unsigned arrived;
};

inline void complete_barrier_locked(BlockState& block) {
  block.result_true = block.barrier_true;
  block.result_arrived = block.barrier_arrived;
  block.barrier_true = 0;
  block.barrier_arrived = 0;
  ++block.completed_barriers;
}

inline std::string site_name(const std::source_location& site) {
  return printf_string("%s:%u", site.file_name(), static_cast<unsigned>(site.line()));
}

// synccheck: every thread of a barrier round must call the same barrier, from the same call site
// (compute-sanitizer's synccheck flags threads of a block waiting at different barriers).
inline BarrierResult block_barrier(Primitive primitive, bool predicate, const std::source_location& site) {
  const Internal internal;
  Lane& lane = current_lane(primitive_name(primitive));
  WarpRunner& warp = *lane.warp;
  BlockState& block = *warp.block;
  bool completed = false;
  {
    std::unique_lock<std::mutex> lock(block.mutex);
    if (block.poisoned.load()) throw BlockPoisoned{};
    if (block.barrier_arrived == 0) {
      block.barrier_primitive = primitive;
      block.barrier_first_thread = lane.thread_index;
      block.barrier_site = site;
    } else if (block.barrier_primitive != primitive || block.barrier_site.line() != site.line() ||
               block.barrier_site.column() != site.column() ||
               std::strcmp(block.barrier_site.file_name(), site.file_name()) != 0) {
      const uint3 f = block.barrier_first_thread;
      fail(printf_string("divergent barrier: %s called %s at %s while thread (%u,%u,%u) called %s at %s in the same "
                         "round",
                         where(lane).c_str(), primitive_name(primitive), site_name(site).c_str(), f.x, f.y, f.z,
                         primitive_name(block.barrier_primitive), site_name(block.barrier_site).c_str()));
    }
    ++block.barrier_arrived;
    block.barrier_true += predicate ? 1 : 0;
    warp.barrier_generation = block.completed_barriers;
    order_release(&block.barrier_order[warp.barrier_generation & 1]);
    if (block.barrier_arrived == block.live_threads) {
      complete_barrier_locked(block);
      completed = true;
    }
  }
  if (completed) block.barrier_released.notify_all();
  const unsigned bit = 1u << lane.index;
  warp.at_barrier |= bit;
  warp.runnable &= ~bit;
  const std::uint64_t generation = warp.barrier_generation;
  yield_to_scheduler(lane);  // the scheduler resumes the warp's lanes once the barrier completed
  order_acquire(&block.barrier_order[generation & 1]);
  std::lock_guard<std::mutex> lock(block.mutex);
  // The next barrier cannot complete without this lane: the results are still this round's.
  return BarrierResult{block.result_true, block.result_arrived};
}

// A lane returned from the kernel. Returns an error message, empty if none.
inline std::string lane_returned(Lane& lane) {
  const Internal internal;
  WarpRunner& warp = *lane.warp;
  BlockState& block = *warp.block;
  std::string error;
  if (warp.in_round && !block.poisoned.load()) {
    error = printf_string("divergent warp: %s (warp %u, lane %u) returned from the kernel while lane mask 0x%08x of "
                          "its warp waits in %s",
                          where(lane).c_str(), warp.warp_index, lane.index, warp.in_round,
                          primitive_name(warp.round_primitive));
  }
  warp.exited |= 1u << lane.index;
  warp.runnable &= ~(1u << lane.index);
  bool completed = false;
  {
    std::lock_guard<std::mutex> lock(block.mutex);
    --block.live_threads;  // arrive-and-drop
    if (block.barrier_arrived > 0 && block.barrier_arrived == block.live_threads) {
      complete_barrier_locked(block);
      completed = true;
    }
  }
  if (completed) block.barrier_released.notify_all();
  return error;
}

// Runs the kernel in a lane; its locals are gone before the lane's last switch.
inline void run_lane(Lane& lane) {
  BlockState& block = *lane.warp->block;
  const std::function<void()>* body = nullptr;
  {
    const Internal internal;
    body = block.body;
  }
  try {
    try {
      if (!block.poisoned.load()) (*body)();
    } catch (const BlockPoisoned&) {
      // unwound because another lane of the block failed
    } catch (...) {
      block.poison(std::current_exception());
    }
    const std::string error = lane_returned(lane);
    if (!error.empty()) fail(error);
  } catch (...) {  // fail() in CUDA_EMU_ON_ERROR=throw mode
    block.poison(std::current_exception());
  }
}

inline void lane_main(void* arg) {
  Lane& lane = *static_cast<Lane*>(arg);
#ifdef CUDA_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &lane.warp->scheduler.stack_bottom, &lane.warp->scheduler.stack_size);
#endif
  run_lane(lane);
  fiber_switch(lane.fiber, lane.warp->scheduler, /*finishing=*/true);
  fatal("internal error: a lane was resumed after it returned");
}

inline void resume(WarpRunner& warp, Lane& lane) {
  warp.running_lane.store(lane.index, std::memory_order_relaxed);
  warp.switches.fetch_add(1, std::memory_order_relaxed);
  t_lane = &lane;
  threadIdx = lane.thread_index;
  blockIdx = warp.block->index;
  if (!lane.started) {
    lane.started = true;
    fiber_prepare(lane.fiber, lane.stack, g_stack_size, lane_main, &lane);
  }
  fiber_switch(warp.scheduler, lane.fiber);
  t_lane = nullptr;
  warp.switches.fetch_add(1, std::memory_order_relaxed);
}

// All live lanes of the warp wait at a block barrier: wait for the other warps.
inline void wait_for_block_barrier(WarpRunner& warp) {
  BlockState& block = *warp.block;
  std::unique_lock<std::mutex> lock(block.mutex);
  warp.waiting_at_barrier.store(true);
  const auto deadline = std::chrono::steady_clock::now() + g_timeout;
  while (block.completed_barriers == warp.barrier_generation && !block.poisoned.load()) {
    if (block.barrier_released.wait_until(lock, deadline) == std::cv_status::timeout &&
        block.completed_barriers == warp.barrier_generation && !block.poisoned.load()) {
      warp.waiting_at_barrier.store(false);
      const Lane& first = warp.lanes[std::countr_zero(warp.at_barrier)];
      fail(printf_string("deadlock in %s, %s: waited %.0f s; %u of %u live threads arrived",
                         primitive_name(block.barrier_primitive), where(first).c_str(),
                         std::chrono::duration<double>(g_timeout).count(), block.barrier_arrived,
                         block.live_threads));
    }
  }
  warp.waiting_at_barrier.store(false);
  warp.runnable |= warp.at_barrier;
  warp.at_barrier = 0;
}

inline void schedule_step(WarpRunner& warp) {
  if (warp.block->poisoned.load(std::memory_order_relaxed)) {  // every waiting lane resumes to unwind
    warp.runnable |= warp.in_round | warp.at_barrier;
    warp.in_round = 0;
    warp.at_barrier = 0;
  }
  if (warp.runnable) {
    const unsigned next = warp.descending ? 31 - std::countl_zero(warp.runnable) : std::countr_zero(warp.runnable);
    resume(warp, warp.lanes[next]);
    return;
  }
  if (warp.in_round) {  // the rest of the warp waits at a block barrier, which waits for these lanes
    const Lane& first = warp.lanes[warp.round_first_lane];
    fail(printf_string("deadlock in %s, %s: lane mask 0x%08x of its warp waits in %s while lane mask 0x%08x waits "
                       "in %s; neither can complete",
                       primitive_name(warp.round_primitive), where(first).c_str(), warp.in_round,
                       primitive_name(warp.round_primitive), warp.at_barrier,
                       primitive_name(warp.block->barrier_primitive)));
  }
  if (warp.at_barrier) {
    wait_for_block_barrier(warp);
    return;
  }
  fatal("internal error: a warp has live lanes but none is runnable or waiting");
}

inline void run_warp(WarpRunner& warp) {
#ifdef CUDA_EMU_TSAN
  // Every lane's fiber exists before any lane runs: each starts from the launch's state alone. The
  // scheduler's accesses are hidden, but not its synchronisation: it acquires each lane's
  // accesses at the lane's return, and the host acquires them all when it joins this thread.
  __tsan_ignore_thread_begin();
  __tsan_acquire(&g_launch_start);
  warp.scheduler.tsan_fiber = __tsan_get_current_fiber();
  for (Lane& lane : warp.lanes) lane.fiber.tsan_fiber = __tsan_create_fiber(0);
#endif
  while (warp.exited != kFullMask) {
    try {
      schedule_step(warp);
    } catch (...) {  // fail() in CUDA_EMU_ON_ERROR=throw mode: the block unwinds
      warp.block->poison(std::current_exception());
    }
  }
#ifdef CUDA_EMU_TSAN
  {
    std::lock_guard<std::mutex> lock(g_retired_mutex);
    for (Lane& lane : warp.lanes) g_retired_fibers.push_back(lane.fiber.tsan_fiber);
  }
  __tsan_ignore_thread_end();
#endif
  warp.finished.store(true);
}

// Aborts when a lane runs for the timeout without switching: a lane spinning on a warp-mate (which
// never runs meanwhile) or an endless loop. Barrier waits have their own timeout.
class Watchdog {
 public:
  Watchdog() : thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void add(WarpRunner* warp) {
    std::lock_guard<std::mutex> lock(mutex_);
    warps_.push_back({warp, warp->switches.load(), std::chrono::steady_clock::now()});
  }
  void remove(WarpRunner* warp) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(warps_, [&](const Watched& w) { return w.warp == warp; });
  }

 private:
  struct Watched {
    WarpRunner* warp;
    std::uint64_t switches;
    std::chrono::steady_clock::time_point since;
  };

  void watch() {
    const auto period = std::min<std::chrono::nanoseconds>(g_timeout / 4, std::chrono::seconds(1));
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, period, [&] { return stop_; })) {
      const auto now = std::chrono::steady_clock::now();
      for (Watched& w : warps_) {
        const std::uint64_t switches = w.warp->switches.load();
        if (switches != w.switches || w.warp->waiting_at_barrier.load() || w.warp->finished.load()) {
          w.switches = switches;
          w.since = now;
        } else if (now - w.since >= g_timeout) {
          const Lane& lane = w.warp->lanes[w.warp->running_lane.load()];
          fatal(printf_string("stuck lane: %s ran %.0f s without reaching a warp primitive, a barrier or its return "
                              "(an endless loop, or a spin-wait on a warp-mate: lanes of a warp only run in turn)",
                              where(lane).c_str(), std::chrono::duration<double>(g_timeout).count()));
        }
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::vector<Watched> warps_;
  std::thread thread_;  // last: starts once the members above exist
};

// Runs one block: one OS thread per warp. Returns the block's first error, if any.
inline std::exception_ptr run_block(std::uint64_t linear_block, std::size_t dynamic_smem_bytes,
                                    const std::function<void()>& body, Watchdog& watchdog) {
  // The block's setup and its warps' starts: no access the lanes could race with, no ordering.
  std::optional<Internal> unordered(std::in_place);
  BlockState block;
  block.index = uint3{static_cast<unsigned>(linear_block % gridDim.x),
                      static_cast<unsigned>((linear_block / gridDim.x) % gridDim.y),
                      static_cast<unsigned>(linear_block / (static_cast<std::uint64_t>(gridDim.x) * gridDim.y))};
  block.thread_count = blockDim.x * blockDim.y * blockDim.z;
  block.live_threads = block.thread_count;
  block.body = &body;
  block.shared_size = dynamic_smem_bytes;
  block.shared = static_cast<unsigned char*>(::operator new[](std::max<std::size_t>(dynamic_smem_bytes, 1),
                                                               std::align_val_t{kSharedAlignment}));
  std::memset(block.shared, 0xFF, dynamic_smem_bytes);  // garbage: NaN as float or double

  const unsigned warp_count = block.thread_count / 32;
  std::vector<std::unique_ptr<WarpRunner>> warps(warp_count);
  for (unsigned w = 0; w < warp_count; ++w) {
    warps[w] = std::make_unique<WarpRunner>();
    WarpRunner& warp = *warps[w];
    warp.block = &block;
    warp.warp_index = w;
    warp.runnable = kFullMask;
    for (unsigned l = 0; l < 32; ++l) {
      Lane& lane = warp.lanes[l];
      lane.warp = &warp;
      lane.index = l;
      lane.linear_id = 32 * w + l;
      lane.thread_index = uint3{lane.linear_id % blockDim.x, (lane.linear_id / blockDim.x) % blockDim.y,
                                lane.linear_id / (blockDim.x * blockDim.y)};
      lane.stack = StackPool::instance().acquire(g_stack_size);
    }
  }

  std::vector<std::thread> threads;
  threads.reserve(warp_count);
  for (unsigned w = 0; w < warp_count; ++w) {
    WarpRunner* warp = warps[w].get();
    watchdog.add(warp);
    try {
      threads.emplace_back([warp] { run_warp(*warp); });
    } catch (...) {  // resource limits: the warps already running must not wait for this one
      watchdog.remove(warp);
      block.poison(std::current_exception());
      std::lock_guard<std::mutex> lock(block.mutex);
      block.live_threads -= 32 * (warp_count - w);
      break;
    }
  }
  unordered.reset();  // the joins order the block's work before whatever the host does next
  for (unsigned w = 0; w < threads.size(); ++w) {
    threads[w].join();
    watchdog.remove(warps[w].get());
  }
  for (auto& warp : warps) {
    for (Lane& lane : warp->lanes) StackPool::instance().release(lane.stack, g_stack_size);
  }
  return block.first_error;
}

inline long env_integer(const char* name, long fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end) fail(printf_string("environment variable %s=%s is not an integer", name, text));
  return value;
}

inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The order blocks run in: a permutation fixed by the seed and the grid, so that a failure that
// depends on the order reproduces whatever ran before; seed 0 keeps the natural order.
inline std::vector<std::uint64_t> block_order(std::uint64_t block_count, std::uint64_t seed) {
  std::vector<std::uint64_t> order(block_count);
  for (std::uint64_t i = 0; i < block_count; ++i) order[i] = i;
  if (seed == 0) return order;
  std::uint64_t state = seed ^ (block_count * 0xD1B54A32D192ED03ull);
  for (std::uint64_t i = block_count; i > 1; --i) std::swap(order[i - 1], order[splitmix64(state) % i]);
  return order;
}

inline std::mutex g_launch_mutex;

// Shared memory limits per block of the emulated architecture (CUDA_EMU_ARCH, e.g. 75 or 90; the
// CUDA C++ Programming Guide's table of compute capabilities): 48 KiB without opting in, and the
// most a kernel may opt in to with cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize).
constexpr std::size_t kDefaultSharedBytes = 48 * 1024;
inline std::size_t opt_in_shared_bytes(long arch) {
  if (arch < 70) fail(printf_string("CUDA_EMU_ARCH=%ld: the emulator knows sm_70 and later", arch));
  if (arch == 70 || arch == 72) return 96 * 1024;
  if (arch == 75) return 64 * 1024;
  if (arch == 80 || arch == 87) return 163 * 1024;
  if (arch == 86 || arch == 89) return 99 * 1024;
  if (arch == 90 || arch >= 100) return 227 * 1024;
  fail(printf_string("CUDA_EMU_ARCH=%ld: unknown architecture", arch));
}
inline long emulated_arch() { return env_integer("CUDA_EMU_ARCH", 75); }

// cudaFuncAttributeMaxDynamicSharedMemorySize per kernel, as cudaFuncSetAttribute set it.
inline std::mutex g_attribute_mutex;
inline std::vector<std::pair<const void*, std::size_t>> g_max_dynamic_shared;
inline std::size_t max_dynamic_shared(const void* kernel) {
  std::lock_guard<std::mutex> lock(g_attribute_mutex);
  for (const auto& [k, bytes] : g_max_dynamic_shared) {
    if (k == kernel) return bytes;
  }
  return kDefaultSharedBytes;
}

inline void run_launch(const void* kernel, dim3 grid, dim3 block, std::size_t dynamic_smem_bytes,
                       const std::function<void()>& body) {
  if (t_lane) fail("emu::launch called from inside a kernel (dynamic parallelism is not emulated)");
  std::lock_guard<std::mutex> launch_lock(g_launch_mutex);

  g_throw_on_error = false;
  if (const char* mode = std::getenv("CUDA_EMU_ON_ERROR")) {
    if (std::strcmp(mode, "throw") == 0) {
      g_throw_on_error = true;
    } else if (*mode && std::strcmp(mode, "abort") != 0) {
      fail(printf_string("CUDA_EMU_ON_ERROR=%s: expected abort or throw", mode));
    }
  }
  const long timeout_s = env_integer("CUDA_EMU_TIMEOUT_S", 60);
  const long seed = env_integer("CUDA_EMU_SEED", 1);
  const long concurrent_blocks = env_integer("CUDA_EMU_CONCURRENT_BLOCKS", 1);
  const long stack_kb = env_integer("CUDA_EMU_STACK_KB", 256);
  if (timeout_s <= 0) fail("CUDA_EMU_TIMEOUT_S must be positive");
  if (concurrent_blocks <= 0) fail("CUDA_EMU_CONCURRENT_BLOCKS must be positive");
  if (stack_kb < 16) fail("CUDA_EMU_STACK_KB must be at least 16");
  g_timeout = std::chrono::seconds(timeout_s);
  g_stack_size = static_cast<std::size_t>(stack_kb) * 1024;

  // The checks of cudaLaunchKernel (invalid configuration), and whole warps.
  const std::uint64_t threads_per_block = static_cast<std::uint64_t>(block.x) * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) {
    fail(printf_string("invalid grid (%u,%u,%u)", grid.x, grid.y, grid.z));
  }
  if (block.x == 0 || block.y == 0 || block.z == 0 || block.z > 64 || threads_per_block > kMaxThreadsPerBlock) {
    fail(printf_string("invalid block (%u,%u,%u): at most 1024 threads, z at most 64", block.x, block.y, block.z));
  }
  if (threads_per_block % 32 != 0) {
    fail(printf_string("block (%u,%u,%u) has %llu threads: the emulator needs a multiple of 32 (whole warps)", block.x,
                       block.y, block.z, static_cast<unsigned long long>(threads_per_block)));
  }

  // Dynamic shared memory: at most 48 KiB unless the kernel opted in to more, never more than
  // the architecture allows (cudaErrorInvalidValue on a GPU).
  const long arch = emulated_arch();
  if (dynamic_smem_bytes > opt_in_shared_bytes(arch)) {
    fail(printf_string("launch with %zu bytes of dynamic shared memory per block: sm_%ld allows at most %zu",
                       dynamic_smem_bytes, arch, opt_in_shared_bytes(arch)));
  }
  if (dynamic_smem_bytes > max_dynamic_shared(kernel)) {
    fail(printf_string("launch with %zu bytes of dynamic shared memory per block, above the kernel's limit of %zu: "
                       "beyond 48 KiB a kernel must opt in with cudaFuncSetAttribute("
                       "cudaFuncAttributeMaxDynamicSharedMemorySize)",
                       dynamic_smem_bytes, max_dynamic_shared(kernel)));
  }

  ::blockDim = block;
  ::gridDim = grid;
  g_launch_count.fetch_add(1);
#ifdef CUDA_EMU_TSAN
  __tsan_release(&g_launch_start);
#endif
  const std::uint64_t block_count = static_cast<std::uint64_t>(grid.x) * grid.y * grid.z;
  const std::vector<std::uint64_t> order = block_order(block_count, static_cast<std::uint64_t>(seed));

  Watchdog watchdog;
  auto run_block_or_error = [&](std::uint64_t b) -> std::exception_ptr {
    try {
      return run_block(order[b], dynamic_smem_bytes, body, watchdog);
    } catch (...) {  // setting the block up failed (CUDA_EMU_ON_ERROR=throw)
      return std::current_exception();
    }
  };
  std::exception_ptr launch_error;
  if (concurrent_blocks == 1) {
    for (std::uint64_t b = 0; b < block_count && !launch_error; ++b) launch_error = run_block_or_error(b);
  } else {
    std::atomic<std::uint64_t> next{0};
    std::mutex error_mutex;
    auto runner = [&] {
      for (;;) {
        {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (launch_error) return;
        }
        const std::uint64_t b = next.fetch_add(1);
        if (b >= block_count) return;
        if (std::exception_ptr error = run_block_or_error(b)) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!launch_error) launch_error = error;
        }
      }
    };
    std::vector<std::thread> runners;
    const auto runner_count = std::min<std::uint64_t>(static_cast<std::uint64_t>(concurrent_blocks), block_count);
    for (std::uint64_t r = 0; r < runner_count; ++r) runners.emplace_back(runner);
    for (std::thread& r : runners) r.join();
  }
#ifdef CUDA_EMU_TSAN
  {
    std::lock_guard<std::mutex> lock(g_retired_mutex);
    for (void* fiber : g_retired_fibers) __tsan_destroy_fiber(fiber);
    g_retired_fibers.clear();
  }
#endif
  if (launch_error) std::rethrow_exception(launch_error);
}

template <class T>
std::uint64_t to_bits(T value) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "warp primitives move values of at most 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <class T>
T from_bits(std::uint64_t bits) {
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

inline unsigned checked_width(const char* primitive, int width) {
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
    fail(printf_string("%s: width %d is not a power of two in [1, 32]", primitive, width));
  }
  return static_cast<unsigned>(width);
}

// Source lane of each shuffle mode, as PTX shfl.sync computes it; the own lane when out of range.
template <class T>
T shuffle(Primitive mode, unsigned mask, T value, int operand, int width) {
  const Internal internal;
  const unsigned w = checked_width(primitive_name(mode), width);
  const std::uint64_t* values = warp_round(mode, mask, to_bits(value), sizeof(T));
  const unsigned lane = t_lane->index;
  const unsigned segment_start = lane & ~(w - 1);
  const unsigned segment_last = segment_start | (w - 1);
  const unsigned b = static_cast<unsigned>(operand);
  unsigned source = lane;
  switch (mode) {
    case Primitive::shfl:
      source = segment_start | (b & (w - 1));
      break;
    case Primitive::shfl_up:
      if (b <= lane - segment_start) source = lane - b;  // else the lane keeps its value
      break;
    case Primitive::shfl_down:
      if (b <= segment_last - lane) source = lane + b;
      break;
    case Primitive::shfl_xor: {
      const unsigned j = (lane ^ b) & 31u;
      if (j <= segment_last) source = j;  // earlier segments are readable, later ones are not
      break;
    }
    default:
      break;
  }
  return from_bits<T>(values[source]);
}

}  // namespace detail

// Launches kernel(args...) over grid x block, with dynamic_smem_bytes of dynamic shared memory per
// block. Returns when every block ran; rethrows the first exception a kernel thread threw.
template <class Kernel, class... Args>
void launch(dim3 grid, dim3 block, std::size_t dynamic_smem_bytes, Kernel kernel, Args... args) {
  const std::function<void()> body = [&] { kernel(args...); };
  const void* identity = nullptr;
  if constexpr (std::is_pointer_v<Kernel>) identity = reinterpret_cast<const void*>(kernel);
  detail::run_launch(identity, grid, block, dynamic_smem_bytes, body);
}

// A grid given in 64-bit counts (as op code computes it), checked against CUDA's limits before it
// is narrowed to dim3's unsigned fields.
struct LaunchShape {
  long long x = 1, y = 1, z = 1;
};
template <class Kernel, class... Args>
void launch(LaunchShape grid, dim3 block, std::size_t dynamic_smem_bytes, Kernel kernel, Args... args) {
  if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.x > 0x7fffffffLL || grid.y > 65535 || grid.z > 65535) {
    detail::fail(detail::printf_string("invalid grid (%lld,%lld,%lld): x in [1, 2^31 - 1], y and z in [1, 65535]",
                                       grid.x, grid.y, grid.z));
  }
  launch(dim3(static_cast<unsigned>(grid.x), static_cast<unsigned>(grid.y), static_cast<unsigned>(grid.z)), block,
         dynamic_smem_bytes, kernel, args...);
}

// The current block's dynamic shared memory (aligned to 128 bytes, filled with 0xFF at block start).
inline unsigned char* dynamic_shared_memory() {
  const detail::Internal internal;
  return detail::current_lane("emu::dynamic_shared_memory").warp->block->shared;
}

inline std::size_t dynamic_shared_memory_size() {
  return detail::current_lane("emu::dynamic_shared_memory_size").warp->block->shared_size;
}

// Launches since the program started or since the last reset_launch_count().
inline std::size_t launches() { return static_cast<std::size_t>(detail::g_launch_count.load()); }
inline void reset_launch_count() { detail::g_launch_count.store(0); }

// Device math at the worst-case error CUDA documents for it (CUDA C++ Programming Guide,
// Mathematical Functions appendix), for code whose accuracy rests on those bounds: the accurate
// result moved by the whole bound, up or down as a hash of the argument's bits decides (so the
// same argument always errs the same way, as a hardware approximation does). Results that are
// exact by definition (0 for −inf, +inf, NaN) stay so.
namespace detail {
inline bool errs_upwards(float x) {
  uint32_t h = std::bit_cast<uint32_t>(x);
  h ^= h >> 16;
  h *= 0x7feb352dU;
  h ^= h >> 15;
  h *= 0x846ca68bU;
  h ^= h >> 16;
  return (h & 1U) != 0;
}
inline float move_ulps(float v, int ulps, bool up) {
  for (int k = 0; k < ulps; ++k) v = std::nextafter(v, up ? INFINITY : -INFINITY);
  return v;
}
}  // namespace detail

// exp2f: at most 2 ulp.
inline float worst_case_exp2f(float x) {
  const float v = std::exp2(x);
  if (!std::isfinite(v) || v == 0.0f) return v;
  return detail::move_ulps(v, 2, detail::errs_upwards(x));
}

// __log2f: at most 2^-22 absolute for x in [0.5, 2], 2 ulp elsewhere.
inline float worst_case_log2f_intrinsic(float x) {
  const float v = std::log2(x);
  if (!std::isfinite(v)) return v;
  const bool up = detail::errs_upwards(x);
  if (x >= 0.5f && x <= 2.0f) return static_cast<float>(static_cast<double>(v) + (up ? 0x1p-22 : -0x1p-22));
  return detail::move_ulps(v, 2, up);
}

}  // namespace emu

// ---------------------------------------------------------------------------------------------
// The few runtime calls a launcher makes before a launch, on the emulated device (CUDA_EMU_ARCH).
enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaDeviceAttr { cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
inline cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int /*device*/) {
  if (attribute != cudaDevAttrMaxSharedMemoryPerBlockOptin) return cudaErrorInvalidValue;
  *value = static_cast<int>(emu::detail::opt_in_shared_bytes(emu::detail::emulated_arch()));
  return cudaSuccess;
}
// Above the architecture's opt-in maximum: cudaErrorInvalidValue, as on a GPU.
template <class Kernel>
cudaError_t cudaFuncSetAttribute(Kernel kernel, cudaFuncAttribute attribute, int value) {
  namespace d = emu::detail;
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      static_cast<std::size_t>(value) > d::opt_in_shared_bytes(d::emulated_arch())) {
    return cudaErrorInvalidValue;
  }
  const void* identity = reinterpret_cast<const void*>(kernel);
  std::lock_guard<std::mutex> lock(d::g_attribute_mutex);
  for (auto& [k, bytes] : d::g_max_dynamic_shared) {
    if (k == identity) {
      bytes = static_cast<std::size_t>(value);
      return cudaSuccess;
    }
  }
  d::g_max_dynamic_shared.emplace_back(identity, static_cast<std::size_t>(value));
  return cudaSuccess;
}

// ---------------------------------------------------------------------------------------------
// Block barriers.
// Each takes its call site as a defaulted argument, for synccheck.
using emu_site = std::source_location;
inline void __syncthreads(emu_site site = emu_site::current()) {
  emu::detail::block_barrier(emu::detail::Primitive::syncthreads, false, site);
}
inline int __syncthreads_or(int predicate, emu_site site = emu_site::current()) {
  return emu::detail::block_barrier(emu::detail::Primitive::syncthreads_or, predicate != 0, site).predicate_true != 0;
}
inline int __syncthreads_and(int predicate, emu_site site = emu_site::current()) {
  const auto r = emu::detail::block_barrier(emu::detail::Primitive::syncthreads_and, predicate != 0, site);
  return r.predicate_true == r.arrived;
}
inline int __syncthreads_count(int predicate, emu_site site = emu_site::current()) {
  return static_cast<int>(
      emu::detail::block_barrier(emu::detail::Primitive::syncthreads_count, predicate != 0, site).predicate_true);
}

// ---------------------------------------------------------------------------------------------
// Warp primitives (full mask only).
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  emu::detail::warp_round(emu::detail::Primitive::syncwarp, mask, 0, 0);
}

template <class T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
  return emu::detail::shuffle(emu::detail::Primitive::shfl, mask, var, srcLane, width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = warpSize) {
  return emu::detail::shuffle(emu::detail::Primitive::shfl_up, mask, var, static_cast<int>(delta), width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = warpSize) {
  return emu::detail::shuffle(emu::detail::Primitive::shfl_down, mask, var, static_cast<int>(delta), width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize) {
  return emu::detail::shuffle(emu::detail::Primitive::shfl_xor, mask, var, laneMask, width);
}

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  const emu::detail::Internal internal;
  const std::uint64_t* values = emu::detail::warp_round(emu::detail::Primitive::ballot, mask, predicate != 0, 4);
  unsigned ballot = 0;
  for (unsigned lane = 0; lane < 32; ++lane) ballot |= values[lane] ? 1u << lane : 0u;
  return ballot;
}
inline int __any_sync(unsigned mask, int predicate) {
  const emu::detail::Internal internal;
  const std::uint64_t* values = emu::detail::warp_round(emu::detail::Primitive::any, mask, predicate != 0, 4);
  return std::any_of(values, values + 32, [](std::uint64_t v) { return v != 0; });
}
inline int __all_sync(unsigned mask, int predicate) {
  const emu::detail::Internal internal;
  const std::uint64_t* values = emu::detail::warp_round(emu::detail::Primitive::all, mask, predicate != 0, 4);
  return std::all_of(values, values + 32, [](std::uint64_t v) { return v != 0; });
}

// ---------------------------------------------------------------------------------------------
// Memory: loads, fences, atomics (lock-free std::atomic_ref on the host).
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

#define EMU_DEFINE_ATOMIC_ADD(T) \
  inline T atomicAdd(T* address, T value) { return std::atomic_ref<T>(*address).fetch_add(value); }
EMU_DEFINE_ATOMIC_ADD(int)
EMU_DEFINE_ATOMIC_ADD(unsigned int)
EMU_DEFINE_ATOMIC_ADD(long)
EMU_DEFINE_ATOMIC_ADD(unsigned long)
EMU_DEFINE_ATOMIC_ADD(long long)
EMU_DEFINE_ATOMIC_ADD(unsigned long long)
EMU_DEFINE_ATOMIC_ADD(float)
EMU_DEFINE_ATOMIC_ADD(double)
#undef EMU_DEFINE_ATOMIC_ADD

#define EMU_DEFINE_INTEGER_ATOMICS(T)                                                                     \
  inline T atomicSub(T* address, T value) { return std::atomic_ref<T>(*address).fetch_sub(value); }       \
  inline T atomicExch(T* address, T value) { return std::atomic_ref<T>(*address).exchange(value); }       \
  inline T atomicCAS(T* address, T compare, T value) {                                                    \
    std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);                                 \
    return compare; /* the old value, whether or not it was swapped */                                    \
  }                                                                                                       \
  inline T atomicMax(T* address, T value) {                                                               \
    std::atomic_ref<T> ref(*address);                                                                     \
    T old = ref.load();                                                                                   \
    while (old < value && !ref.compare_exchange_weak(old, value)) {                                       \
    }                                                                                                     \
    return old;                                                                                           \
  }                                                                                                       \
  inline T atomicMin(T* address, T value) {                                                               \
    std::atomic_ref<T> ref(*address);                                                                     \
    T old = ref.load();                                                                                   \
    while (value < old && !ref.compare_exchange_weak(old, value)) {                                       \
    }                                                                                                     \
    return old;                                                                                           \
  }
EMU_DEFINE_INTEGER_ATOMICS(int)
EMU_DEFINE_INTEGER_ATOMICS(unsigned int)
EMU_DEFINE_INTEGER_ATOMICS(long long)
EMU_DEFINE_INTEGER_ATOMICS(unsigned long long)
#undef EMU_DEFINE_INTEGER_ATOMICS
inline float atomicExch(float* address, float value) { return std::atomic_ref<float>(*address).exchange(value); }

// ---------------------------------------------------------------------------------------------
// Integer intrinsics and bit casts.
inline int __popc(unsigned int x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline int __ffsll(long long x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned long long>(x)) + 1; }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return std::countl_zero(static_cast<unsigned long long>(x)); }
inline unsigned int __brev(unsigned int x) {
  unsigned int r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __uint_as_float(unsigned int x) { return std::bit_cast<float>(x); }
inline unsigned int __float_as_uint(float x) { return std::bit_cast<unsigned int>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline void __nanosleep(unsigned int ns) { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }

// ---------------------------------------------------------------------------------------------
// Math. Unqualified calls resolve in the global namespace with float overloads kept in float (as
// in device code, where exp(float) is the float function).
using std::abs;
using std::acos;
using std::asin;
using std::atan;
using std::atan2;
using std::cbrt;
using std::ceil;
using std::copysign;
using std::cos;
using std::cosh;
using std::erf;
using std::erfc;
using std::exp;
using std::exp2;
using std::expm1;
using std::fabs;
using std::floor;
using std::fma;
using std::fmax;
using std::fmin;
using std::fmod;
using std::hypot;
using std::isfinite;
using std::isinf;
using std::isnan;
using std::ldexp;
using std::lgamma;
using std::llround;
using std::log;
using std::log10;
using std::log1p;
using std::log2;
using std::lround;
using std::nearbyint;
using std::pow;
using std::rint;
using std::round;
using std::signbit;
using std::sin;
using std::sinh;
using std::sqrt;
using std::tan;
using std::tanh;
using std::tgamma;
using std::trunc;

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

// Fast-math intrinsics, computed with the accurate host functions (within CUDA's error bounds).
// glibc's <math.h> already declares __expf, __logf, ... as extern "C" noexcept: match that.
extern "C" {
inline float __expf(float x) noexcept { return std::exp(x); }
inline float __exp10f(float x) noexcept { return std::pow(10.0f, x); }
inline float __logf(float x) noexcept { return std::log(x); }
inline float __log2f(float x) noexcept { return std::log2(x); }
inline float __log10f(float x) noexcept { return std::log10(x); }
inline float __powf(float x, float y) noexcept { return std::pow(x, y); }
inline float __sinf(float x) noexcept { return std::sin(x); }
inline float __cosf(float x) noexcept { return std::cos(x); }
inline float __tanf(float x) noexcept { return std::tan(x); }
}
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
// The _rn intrinsics round each operation on its own, and nvcc never contracts them into an FMA;
// their operands and results pass through emu::detail::opaque so that a build with FMA
// contraction (-ffp-contract=fast -mfma, the emulation of nvcc's default) cannot either.
namespace emu::detail {
template <class T>
inline T opaque(T v) {
#if defined(__GNUC__) && defined(__x86_64__)
  asm("" : "+x"(v));  // the value must exist, rounded, in a register here
#else
  volatile T kept = v;
  v = kept;
#endif
  return v;
}
template <class T>
inline T add_rn(T x, T y) {
  return opaque(opaque(x) + opaque(y));
}
template <class T>
inline T mul_rn(T x, T y) {
  return opaque(opaque(x) * opaque(y));
}
}  // namespace emu::detail
inline float __fadd_rn(float x, float y) { return emu::detail::add_rn(x, y); }
inline float __fmul_rn(float x, float y) { return emu::detail::mul_rn(x, y); }
inline float __fmaf_rn(float x, float y, float z) { return std::fma(x, y, z); }
inline double __dadd_rn(double x, double y) { return emu::detail::add_rn(x, y); }
inline double __dmul_rn(double x, double y) { return emu::detail::mul_rn(x, y); }
inline double __fma_rn(double x, double y, double z) { return std::fma(x, y, z); }
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }  // NaN -> 0

// min/max as device code sees them (global overloads, no template deduction surprises).
#define EMU_DEFINE_MIN_MAX(R, A, B)                            \
  inline R min(A a, B b) { return std::min(static_cast<R>(a), static_cast<R>(b)); } \
  inline R max(A a, B b) { return std::max(static_cast<R>(a), static_cast<R>(b)); }
EMU_DEFINE_MIN_MAX(int, int, int)
EMU_DEFINE_MIN_MAX(unsigned int, unsigned int, unsigned int)
EMU_DEFINE_MIN_MAX(unsigned int, int, unsigned int)
EMU_DEFINE_MIN_MAX(unsigned int, unsigned int, int)
EMU_DEFINE_MIN_MAX(long, long, long)
EMU_DEFINE_MIN_MAX(unsigned long, unsigned long, unsigned long)
EMU_DEFINE_MIN_MAX(long long, long long, long long)
EMU_DEFINE_MIN_MAX(unsigned long long, unsigned long long, unsigned long long)
#undef EMU_DEFINE_MIN_MAX
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
inline double min(float a, double b) { return std::fmin(a, b); }
inline double max(float a, double b) { return std::fmax(a, b); }
inline double min(double a, float b) { return std::fmin(a, b); }
inline double max(double a, float b) { return std::fmax(a, b); }
