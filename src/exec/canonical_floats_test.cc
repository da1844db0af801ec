#include "exec/canonical_floats.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

namespace sluice::exec {
namespace {

template <typename Builder, typename T>
std::shared_ptr<arrow::Array> Floats(const std::vector<std::optional<T>>& values) {
  Builder builder;
  for (const auto& v : values) EXPECT_TRUE((v ? builder.Append(*v) : builder.AppendNull()).ok());
  return builder.Finish().ValueOrDie();
}

template <typename T>
bool SameBits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// -0.0 becomes 0.0 and every NaN the canonical one; other values, and the NULLs, stay where they
// were, also in a slice whose validity starts mid-byte.
template <typename ArrowType, typename Builder>
void ExpectCanonical() {
  using T = typename ArrowType::c_type;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T negative_nan = -nan;
  ASSERT_FALSE(SameBits(nan, negative_nan));
  std::vector<std::optional<T>> values;
  for (int i = 0; i < 40; ++i) {
    values.push_back(i % 5 == 0   ? std::nullopt
                     : i % 5 == 1 ? std::optional<T>(-T{0})
                     : i % 5 == 2 ? std::optional<T>(negative_nan)
                     : i % 5 == 3 ? std::optional<T>(static_cast<T>(i) - T{20})
                                  : std::optional<T>(nan));
  }
  const auto whole = Floats<Builder, T>(values);
  for (const int64_t offset : {0, 3, 8, 11}) {
    const auto in = whole->Slice(offset);
    auto out = CanonicalFloatArray(in, arrow::default_memory_pool());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_TRUE((*out)->ValidateFull().ok());
    const auto& got = static_cast<const arrow::NumericArray<ArrowType>&>(**out);
    ASSERT_EQ(got.length(), in->length());
    for (int64_t i = 0; i < in->length(); ++i) {
      const auto& want = values[static_cast<size_t>(offset + i)];
      ASSERT_EQ(got.IsNull(i), !want.has_value()) << "offset " << offset << " row " << i;
      if (!want) continue;
      const T expected = std::isnan(*want) ? nan : *want + T{0};
      EXPECT_TRUE(SameBits(got.Value(i), expected)) << "offset " << offset << " row " << i;
    }
  }
  // Nothing to rewrite: the array itself.
  const auto plain = Floats<Builder, T>({T{1}, std::nullopt, T{0}, nan});
  auto same = CanonicalFloatArray(plain, arrow::default_memory_pool());
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->get(), plain.get());
}

TEST(CanonicalFloatsTest, RewritesNegativeZeroAndEveryNanKeepingNulls) {
  ExpectCanonical<arrow::DoubleType, arrow::DoubleBuilder>();
  ExpectCanonical<arrow::FloatType, arrow::FloatBuilder>();
}

}  // namespace
}  // namespace sluice::exec
