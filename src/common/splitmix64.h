// SplitMix64: a tiny, fully specified pseudo-random generator. Example data and fuzz tests use
// it so that a seed gives the same sequence on every platform (std::uniform_int_distribution
// does not promise that).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform enough in [0, n); 0 when n is 0.
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  /// True with probability percent/100.
  bool Chance(int percent) { return Below(100) < static_cast<uint64_t>(percent); }

 private:
  uint64_t state_;
};

}  // namespace sluice
