// A run of up to 64 bits of an Arrow bitmap as one word, so that a loop over validity or a mask
// reads one word per 64 rows instead of a bit per row.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace sluice {

/// `length` (at most 64) bits of `bitmap` from bit `offset`, the first in the lowest bit; reads
/// only the bytes that hold them. Bits past `length` are unspecified: mask them where they
/// matter.
inline uint64_t BitWord(const uint8_t* bitmap, int64_t offset, int64_t length) {
  const uint8_t* bytes = bitmap + offset / 8;
  const int shift = static_cast<int>(offset % 8);
  const int64_t count = (shift + length + 7) / 8;  // at most 9
  uint64_t word = 0;
  std::memcpy(&word, bytes, static_cast<size_t>(std::min<int64_t>(count, 8)));
  word >>= shift;
  if (count > 8) word |= static_cast<uint64_t>(bytes[8]) << (64 - shift);
  return word;
}

}  // namespace sluice
