#ifndef LINAC_RUNTIME_RNG_H
#define LINAC_RUNTIME_RNG_H

// A generator whose whole state is one 64-bit word, so checkpoints can store it and
// every platform draws the same numbers (std:: distributions are implementation-defined).

#include <cmath>
#include <cstdint>

namespace linac::rt {

struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed = 0) : state(seed) {}

  /// splitmix64
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// In [0, 1) with 53 random bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  /// In [0, n).
  uint64_t below(uint64_t n) { return next() % n; }
  /// Box-Muller.
  double normal() {
    double u = uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(1.0 - u)) * std::cos(6.283185307179586 * v);
  }
};

} // namespace linac::rt

#endif
