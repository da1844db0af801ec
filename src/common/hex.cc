#include "common/hex.h"

namespace sluice {

namespace {
constexpr char kDigits[] = "0123456789abcdef";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string HexEncode(const uint8_t* data, size_t size) {
  std::string out(size * 2, '\0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

arrow::Result<std::vector<uint8_t>> HexDecode(std::string_view hex, std::string_view what) {
  if (hex.size() % 2 != 0) {
    return arrow::Status::Invalid(what, " '", hex, "' is not hex: odd length ", hex.size());
  }
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexValue(hex[i]);
    const int lo = HexValue(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      const size_t bad = hi < 0 ? i : i + 1;
      return arrow::Status::Invalid(what, " '", hex, "' is not hex: character '", hex[bad],
                                    "' at position ", bad);
    }
    out[i / 2] = static_cast<uint8_t>((hi << 4) | lo);
  }
  return out;
}

}  // namespace sluice
