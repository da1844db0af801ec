#include "artifact/blake3_digest.h"

#include <arrow/io/memory.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace sluice::artifact {
namespace {

// BLAKE3's official test input: byte i is i % 251.
std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i % 251);
  return v;
}

TEST(Blake3, KnownVectors) {
  // From BLAKE3's test_vectors.json (hash, first 32 bytes).
  EXPECT_EQ(Blake3("").ToHex(), "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
  auto one = Pattern(1);
  EXPECT_EQ(Blake3(one.data(), one.size()).ToHex(),
            "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213");
  auto k = Pattern(1024);
  EXPECT_EQ(Blake3(k.data(), k.size()).ToHex(),
            "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7");
}

TEST(Blake3, StreamingEqualsOneShotForEverySplit) {
  for (size_t size : {0u, 1u, 63u, 64u, 65u, 1023u, 1024u, 1025u, 2048u, 65536u, 100000u}) {
    auto data = Pattern(size);
    const Digest whole = Blake3(data.data(), data.size());
    for (size_t step : {1u, 7u, 64u, 1000u, 4096u}) {
      if (size > 20000 && step < 64) continue;  // keep the test quick
      Blake3Hasher hasher;
      for (size_t off = 0; off < size; off += step) {
        hasher.Update(data.data() + off, std::min(step, size - off));
      }
      EXPECT_EQ(hasher.Finalize(), whole) << "size " << size << " step " << step;
    }
  }
}

TEST(Blake3, FinalizeDoesNotConsumeTheHasher) {
  Blake3Hasher hasher;
  hasher.Update("abc");
  EXPECT_EQ(hasher.Finalize(), Blake3("abc"));
  hasher.Update("def");
  EXPECT_EQ(hasher.Finalize(), Blake3("abcdef"));
}

TEST(Blake3, StreamMatchesOneShot) {
  auto data = Pattern(3 * 1024 * 1024 + 17);
  auto buffer = std::make_shared<arrow::Buffer>(data.data(), static_cast<int64_t>(data.size()));
  arrow::io::BufferReader reader(buffer);
  auto digest = Blake3Stream(&reader, 65536);
  ASSERT_TRUE(digest.ok()) << digest.status().ToString();
  EXPECT_EQ(*digest, Blake3(*buffer));
}

TEST(Digest, HexRoundTripAndErrors) {
  const Digest d = Blake3("sluice");
  auto back = Digest::FromHex(d.ToHex());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, d);

  auto short_hex = Digest::FromHex("abcd", "pin_artifact_hash");
  ASSERT_FALSE(short_hex.ok());
  EXPECT_EQ(short_hex.status().message(),
            "pin_artifact_hash 'abcd' is not a BLAKE3 digest: expected 64 hex characters, got 4");
  std::string bad = d.ToHex();
  bad[10] = 'q';
  auto not_hex = Digest::FromHex(bad, "pin_artifact_hash");
  ASSERT_FALSE(not_hex.ok());
  EXPECT_NE(not_hex.status().message().find("character 'q' at position 10"), std::string::npos);
}

}  // namespace
}  // namespace sluice::artifact
