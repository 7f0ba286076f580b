// The random stream aeon's Rocket and MiniRocket draw from: MT19937 with numpy's legacy
// RandomState algorithms (numba's np.random mirrors them). Reproducing the exact call order
// is what makes seeded kernels identical to aeon's (see docs/design/rocket.md §3).
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace softdtw_torch {

class NumpyLegacyRandom {
 public:
  // np.random.seed(seed): MT19937 init_genrand on the low 32 bits.
  explicit NumpyLegacyRandom(uint64_t seed) {
    state_[0] = static_cast<uint32_t>(seed & 0xffffffffu);
    for (int i = 1; i < kStateSize; ++i) {
      state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
    }
    index_ = kStateSize;
  }

  uint32_t next_u32() {
    if (index_ >= kStateSize) twist();
    uint32_t y = state_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

  // random_sample(): 53-bit double in [0, 1) from two draws.
  double next_double() {
    const uint32_t a = next_u32() >> 5;
    const uint32_t b = next_u32() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  double uniform(double low, double high) { return low + (high - low) * next_double(); }

  // randint(0, n) for n >= 1: masked rejection sampling; n == 1 draws nothing.
  int64_t randint(int64_t n) {
    if (n <= 1) return 0;
    const uint64_t max = static_cast<uint64_t>(n - 1);
    uint64_t mask = max;
    for (int shift = 1; shift < 64; shift <<= 1) mask |= mask >> shift;
    if (max <= 0xffffffffu) {
      uint64_t r;
      do {
        r = next_u32() & mask;
      } while (r > max);
      return static_cast<int64_t>(r);
    }
    uint64_t r;
    do {
      // numpy draws the high word first; two statements fix that order (the operands of one
      // `|` expression are unsequenced in C++).
      const uint64_t high = next_u32();
      const uint64_t low = next_u32();
      r = ((high << 32) | low) & mask;
    } while (r > max);
    return static_cast<int64_t>(r);
  }

  // standard_normal() as numpy's legacy C code computes it (polar method; the second value of each
  // pair is cached across calls, and the cache survives other draws in between).
  double normal() { return gauss(/*fused_radius=*/false); }

  // The same draw as numba compiles it with fastmath=True on an x86-64 CPU with FMA, which is how
  // aeon's Rocket _generate_kernels draws its weights: LLVM contracts the radius to
  // r2 = fma(x2, x2, x1 * x1), so r2 and then the value differ from numpy's in the last bits of
  // about 13% of draws (none seen to survive rounding to float32, but a flipped r2 < 1 test would
  // shift the stream). The rest of that compiled draw is exact either way (2u - 1 needs no rounding).
  double normal_fused() { return gauss(/*fused_radius=*/true); }

  // permutation(arange(n)): Fisher-Yates from the end, j = randint(0, i + 1).
  std::vector<int32_t> permutation(int32_t n) {
    std::vector<int32_t> values(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) values[i] = i;
    for (int32_t i = n - 1; i >= 1; --i) {
      const int64_t j = randint(static_cast<int64_t>(i) + 1);
      std::swap(values[i], values[j]);
    }
    return values;
  }

 private:
  static constexpr int kStateSize = 624;
  static constexpr int kShift = 397;

  void twist() {
    for (int i = 0; i < kStateSize; ++i) {
      const uint32_t y = (state_[i] & 0x80000000u) | (state_[(i + 1) % kStateSize] & 0x7fffffffu);
      state_[i] = state_[(i + kShift) % kStateSize] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    index_ = 0;
  }

  // The polar method. The build compiles with -ffp-contract=off, so x1 * x1 + x2 * x2 is rounded
  // twice exactly as numpy's C code does; the fused variant asks for its single rounding explicitly.
  double gauss(bool fused_radius) {
    if (has_cached_normal_) {
      has_cached_normal_ = false;
      return cached_normal_;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * next_double() - 1.0;
      x2 = 2.0 * next_double() - 1.0;
      r2 = fused_radius ? std::fma(x2, x2, x1 * x1) : x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    cached_normal_ = f * x1;
    has_cached_normal_ = true;
    return f * x2;
  }

  uint32_t state_[kStateSize];
  int index_;
  bool has_cached_normal_ = false;
  double cached_normal_ = 0.0;
};

}  // namespace softdtw_torch
