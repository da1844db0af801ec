// 128-bit integers as decimal128's unscaled values and as exact sums: loads and stores that ask
// no alignment of Arrow's buffers, and conversions to and from arrow::Decimal128.
#pragma once

#include <arrow/util/decimal.h>

#include <cstdint>
#include <cstring>

namespace sluice::plan::int128 {

__extension__ typedef __int128 Int128;

inline Int128 Load(const uint8_t* p) {
  Int128 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline void Store(uint8_t* p, Int128 v) { std::memcpy(p, &v, sizeof(v)); }

inline Int128 FromDecimal(const arrow::Decimal128& d) {
  return static_cast<Int128>((static_cast<unsigned __int128>(d.high_bits()) << 64) | d.low_bits());
}

inline arrow::Decimal128 ToDecimal(Int128 v) {
  const auto u = static_cast<unsigned __int128>(v);
  return arrow::Decimal128(static_cast<int64_t>(u >> 64), static_cast<uint64_t>(u));
}

/// 10^digits, for digits in [0, 38]. A decimal128 of p digits is strictly smaller in magnitude
/// than 10^p.
inline Int128 PowerOfTen(int32_t digits) {
  Int128 v = 1;
  for (int32_t i = 0; i < digits; ++i) v *= 10;
  return v;
}

}  // namespace sluice::plan::int128
