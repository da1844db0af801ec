#include "common/hex.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(Hex, RoundTrip) {
  const std::vector<uint8_t> bytes = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
  const std::string hex = HexEncode(bytes.data(), bytes.size());
  EXPECT_EQ(hex, "00017f80abff");
  auto back = HexDecode(hex, "test value");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
  auto upper = HexDecode("00017F80ABFF", "test value");
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(*upper, bytes);
}

TEST(Hex, EmptyIsEmpty) {
  EXPECT_EQ(HexEncode(nullptr, 0), "");
  auto back = HexDecode("", "x");
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->empty());
}

TEST(Hex, ErrorsNameTheValueAndPosition) {
  auto odd = HexDecode("abc", "artifact digest");
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().message(), "artifact digest 'abc' is not hex: odd length 3");
  auto bad = HexDecode("abzz", "artifact digest");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "artifact digest 'abzz' is not hex: character 'z' at position 2");
}

}  // namespace
}  // namespace sluice
