// Deterministic helpers for the data generator: a thin wrapper over SplitMix64
// (never std:: distributions, whose output differs between standard libraries)
// and a stable string hash used to assign templates, names and values to splits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/random.h"  // SplitMix64

namespace needle::data {

// FNV-1a, 64 bit, then a SplitMix finaliser: stable across platforms and runs.
inline uint64_t StableHash(std::string_view s, uint64_t salt = 0) {
  uint64_t h = 0xcbf29ce484222325ull ^ (salt * 0x9E3779B97F4A7C15ull);
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  h ^= h >> 30, h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27, h *= 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  uint64_t Next() { return g_.Next(); }
  // Uniform integer in [0, n); n = 0 gives 0.
  size_t Below(size_t n) { return n ? static_cast<size_t>(Next() % n) : 0; }
  // Uniform integer in [lo, hi] (inclusive).
  long long Range(long long lo, long long hi) {
    return hi <= lo ? lo : lo + static_cast<long long>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  double Uniform() { return g_.Uniform(); }
  bool Chance(double p) { return g_.Uniform() < p; }
  template <class T>
  const T& Pick(const std::vector<T>& v) { return v[Below(v.size())]; }
  // Index drawn with the given non-negative weights (at least one positive).
  size_t Weighted(const std::vector<double>& w) {
    double total = 0;
    for (double x : w) total += x;
    double r = g_.Uniform() * total;
    for (size_t i = 0; i < w.size(); ++i) {
      if (r < w[i]) return i;
      r -= w[i];
    }
    return w.empty() ? 0 : w.size() - 1;
  }
  template <class T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  SplitMix64 g_;
};

}  // namespace needle::data
