// A small deterministic generator: the same seed gives the same numbers on
// every platform and standard library (std::normal_distribution does not).
#pragma once

#include <cmath>
#include <cstdint>

namespace needle {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): never 0, so log() is safe.
  double Uniform() { return (static_cast<double>(Next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  // Standard normal (Box–Muller; the second value is cached).
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = Uniform(), u2 = Uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(6.283185307179586 * u2);
    has_spare_ = true;
    return r * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace needle
