#include "common/status.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

arrow::Status CheckPositive(int v) {
  SLUICE_INTERNAL_CHECK(v > 0);
  return arrow::Status::OK();
}

arrow::Status ReadThing() { return arrow::Status::IOError("short read"); }

arrow::Status ReadWithContext() {
  SLUICE_RETURN_NOT_OK_CTX(ReadThing(), "object 'a/b.parquet'");
  return arrow::Status::OK();
}

TEST(Status, InternalCheckSaysInternal) {
  EXPECT_TRUE(CheckPositive(1).ok());
  arrow::Status st = CheckPositive(0);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("internal: check failed: v > 0 (", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("status_test.cc:"), std::string::npos);
}

TEST(Status, ContextKeepsCodeAndPrefixesMessage) {
  arrow::Status st = ReadWithContext();
  EXPECT_TRUE(st.IsIOError());
  EXPECT_EQ(st.message(), "object 'a/b.parquet': short read");
  EXPECT_TRUE(AddContext(arrow::Status::OK(), "x").ok());
}

}  // namespace
}  // namespace sluice
