// The CBOR shape check that runs before nlohmann decodes plan bytes: deep nesting and declared
// lengths beyond the bytes must be errors, never a stack overflow or a huge allocation.
#include "plan/cbor_fields.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "plan/plan_codec.h"

namespace sluice::plan {
namespace {

std::vector<uint8_t> WithPlanMagic(std::vector<uint8_t> body) {
  std::vector<uint8_t> out(kPlanMagic, kPlanMagic + std::strlen(kPlanMagic));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// `levels` containers, each opened by `head`, around one zero.
std::vector<uint8_t> Nested(std::vector<uint8_t> head, size_t levels, bool close_with_breaks) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < levels; ++i) out.insert(out.end(), head.begin(), head.end());
  out.push_back(0x00);
  if (close_with_breaks) out.insert(out.end(), levels, 0xff);
  return out;
}

std::string DecodeError(const std::vector<uint8_t>& body) {
  const auto bytes = WithPlanMagic(body);
  auto fragment = DecodeFragment(bytes.data(), bytes.size());
  return fragment.ok() ? "decoded" : fragment.status().message();
}

TEST(CborShape, DeepNestingIsRefusedBeforeDecoding) {
  // 200,000 nested one-item arrays overflowed the stack inside nlohmann's from_cbor. Plans
  // nest a level per operator and two per expression level, up to 2064 levels.
  EXPECT_EQ(DecodeError(Nested({0x81}, 200000, false)),
            "plan: nested deeper than 2064 levels (at byte 2064)");
  // Indefinite-length arrays, and maps whose values nest.
  EXPECT_EQ(DecodeError(Nested({0x9f}, 200000, true)),
            "plan: nested deeper than 2064 levels (at byte 2064)");
  EXPECT_EQ(DecodeError(Nested({0xa1, 0x61, 'k'}, 200000, false)),
            "plan: nested deeper than 2064 levels (at byte 6192)");
  // Tags do not nest, however many there are; nlohmann then refuses the first one.
  EXPECT_NE(DecodeError(Nested({0xc6}, 200000, false)), "decoded");
}

TEST(CborShape, LimitIsExact) {
  for (int depth : {1, 10, 64}) {
    const auto ok = Nested({0x81}, static_cast<size_t>(depth), false);
    EXPECT_TRUE(CheckCborShape(ok.data(), ok.size(), 64).ok()) << depth;
    const auto ok_indefinite = Nested({0x9f}, static_cast<size_t>(depth), true);
    EXPECT_TRUE(CheckCborShape(ok_indefinite.data(), ok_indefinite.size(), 64).ok()) << depth;
  }
  const auto deep = Nested({0x81}, 65, false);
  EXPECT_FALSE(CheckCborShape(deep.data(), deep.size(), 64).ok());
}

TEST(CborShape, DeclaredLengthsMustFitTheBytes) {
  // The head, a 64-bit length of 2^64 - 1, and one byte.
  auto with = [](uint8_t head) {
    std::vector<uint8_t> v(10, 0xff);
    v.front() = head;
    v.back() = 0x00;
    return v;
  };
  EXPECT_EQ(DecodeError(with(0x9b)),
            "plan: body is not valid CBOR (an array at byte 0 declares 18446744073709551615 "
            "items, but 1 bytes remain)");
  EXPECT_EQ(DecodeError(with(0xbb)),
            "plan: body is not valid CBOR (a map at byte 0 declares 18446744073709551615 pairs, "
            "but 1 bytes remain)");
  EXPECT_EQ(DecodeError(with(0x5b)),
            "plan: body is not valid CBOR (a string at byte 0 declares 18446744073709551615 "
            "bytes, but 1 remain)");
  EXPECT_EQ(DecodeError(with(0x7b)),
            "plan: body is not valid CBOR (a string at byte 0 declares 18446744073709551615 "
            "bytes, but 1 remain)");
  // A map of n pairs needs 2n items: 3 pairs in 5 bytes cannot be.
  EXPECT_EQ(DecodeError({0xa3, 0, 0, 0, 0, 0}),
            "plan: body is not valid CBOR (a map at byte 0 declares 3 pairs, but 5 bytes remain)");
  // Inside a container too, at its own offset.
  EXPECT_EQ(DecodeError({0x9f, 0x00, 0x9a, 0x10, 0, 0, 0, 0, 0, 0, 0xff}),
            "plan: body is not valid CBOR (an array at byte 2 declares 268435456 items, but 4 "
            "bytes remain)");
}

TEST(CborShape, MalformedHeadersAreErrors) {
  EXPECT_EQ(DecodeError({}), "plan: body is not valid CBOR (truncated at byte 0)");
  EXPECT_EQ(DecodeError({0x9f, 0x00}), "plan: body is not valid CBOR (truncated at byte 2)");
  EXPECT_EQ(DecodeError({0x19, 0x01}), "plan: body is not valid CBOR (truncated at byte 1)");
  EXPECT_EQ(DecodeError({0xff}), "plan: body is not valid CBOR (a stray break at byte 0)");
  EXPECT_EQ(DecodeError({0x82, 0x00, 0xff, 0x00}),
            "plan: body is not valid CBOR (a stray break at byte 2)");
  EXPECT_EQ(DecodeError({0x1c}), "plan: body is not valid CBOR (a reserved header at byte 0)");
  EXPECT_EQ(DecodeError({0x1f}),
            "plan: body is not valid CBOR (an indefinite length on a number or tag at byte 0)");
}

TEST(CborShape, AcceptsWhatNlohmannWrites) {
  nlohmann::json doc = {{"a", {1, 2.5, "x", nullptr, true, {{"b", nlohmann::json::array()}}}},
                        {"c", nlohmann::json::binary({1, 2, 3})},
                        {"d", -70000},
                        {"e", std::string(300, 'y')},
                        {"f", nlohmann::json::object()}};
  const auto bytes = nlohmann::json::to_cbor(doc);
  EXPECT_TRUE(CheckCborShape(bytes.data(), bytes.size(), 4).ok());
  EXPECT_FALSE(CheckCborShape(bytes.data(), bytes.size(), 3).ok());
  // Indefinite-length strings are chunks inside a container level.
  const std::vector<uint8_t> chunks{0x7f, 0x61, 'a', 0x62, 'b', 'c', 0xff};
  EXPECT_TRUE(CheckCborShape(chunks.data(), chunks.size(), 1).ok());
}

}  // namespace
}  // namespace sluice::plan
