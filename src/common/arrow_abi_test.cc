// The Arrow we link comes from the pyarrow wheel, built by a different toolchain than Debian's
// g++ 12. These tests confirm the two agree on the C++ ABI: std::string and arrow::Status must
// cross the library boundary intact in both directions, or every error message would be garbage.
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/config.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

namespace {

// Longer than any small-string buffer, so the heap representation is exercised too.
const std::string kLong(200, 'x');

TEST(ArrowAbi, LibraryUsesTheCxx11StringAbi) {
  // Status::ToString is defined in libarrow. Under the old (gcc4) std::string ABI its mangled
  // name would lack the [abi:cxx11] tag, and our calls would bind to a missing symbol.
  EXPECT_NE(dlsym(RTLD_DEFAULT, "_ZNK5arrow6Status8ToStringB5cxx11Ev"), nullptr);
#if defined(_GLIBCXX_USE_CXX11_ABI)
  EXPECT_EQ(_GLIBCXX_USE_CXX11_ABI, 1);
#endif
}

TEST(ArrowAbi, StatusMessageCrossesIntoAndOutOfTheLibrary) {
  // The message is built here and stored by the library's constructor; ToString() builds a new
  // string inside the library and returns it to us.
  arrow::Status st = arrow::Status::Invalid("short ", kLong, " tail");
  EXPECT_EQ(st.message(), "short " + kLong + " tail");
  EXPECT_EQ(st.ToString(), "Invalid: short " + kLong + " tail");
  arrow::Status copy = st;
  EXPECT_EQ(copy.ToString(), st.ToString());
}

TEST(ArrowAbi, ErrorBuiltInsideTheLibraryReachesUs) {
  // A cast failure is composed entirely inside libarrow_compute, including our input value.
  const std::string bad = "not-a-number-" + kLong;
  arrow::StringBuilder builder;
  ASSERT_TRUE(builder.Append(bad).ok());
  auto array = builder.Finish();
  ASSERT_TRUE(array.ok()) << array.status().ToString();
  auto cast = arrow::compute::Cast(*array, arrow::int32());
  ASSERT_FALSE(cast.ok());
  EXPECT_TRUE(cast.status().IsInvalid());
  EXPECT_NE(cast.status().message().find(bad), std::string::npos) << cast.status().message();
}

TEST(ArrowAbi, FieldNamesRoundTripThroughTheLibrary) {
  auto schema =
      arrow::schema({arrow::field(kLong, arrow::utf8()), arrow::field("b", arrow::int64())});
  EXPECT_EQ(schema->field(0)->name(), kLong);
  EXPECT_EQ(schema->ToString(), kLong + ": string\nb: int64");
  EXPECT_EQ(schema->GetFieldIndex(kLong), 0);
}

TEST(ArrowAbi, RuntimeLibraryMatchesHeaders) {
  const arrow::BuildInfo& info = arrow::GetBuildInfo();
  EXPECT_EQ(info.version_major, ARROW_VERSION_MAJOR);
  EXPECT_EQ(info.version_string, ARROW_VERSION_STRING);
}

}  // namespace
