#include "exec/dedup.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "plan/fragment.h"

namespace sluice::exec {
namespace {

std::shared_ptr<arrow::Table> Rows(const std::vector<std::pair<std::string, int64_t>>& rows) {
  arrow::StringBuilder keys;
  arrow::Int64Builder seqs;
  for (const auto& [k, s] : rows) {
    EXPECT_TRUE(keys.Append(k).ok());
    EXPECT_TRUE(seqs.Append(s).ok());
  }
  auto schema = arrow::schema(
      {arrow::field("k", arrow::utf8()), arrow::field(plan::kSequenceColumn, arrow::int64())});
  return arrow::Table::Make(schema, {*keys.Finish(), *seqs.Finish()});
}

TEST(Dedup, KeepsTheFirstRowInSequenceOrder) {
  // Same rows in two different physical orders: the same answer.
  auto a = Rows({{"x", 5}, {"y", 2}, {"x", 1}, {"z", 9}, {"y", 7}});
  auto b = Rows({{"y", 7}, {"z", 9}, {"x", 1}, {"y", 2}, {"x", 5}});
  int64_t dropped_a = 0, dropped_b = 0;
  auto ra = DedupFirst(a, "k", &dropped_a);
  auto rb = DedupFirst(b, "k", &dropped_b);
  ASSERT_TRUE(ra.ok()) << ra.status().ToString();
  ASSERT_TRUE(rb.ok()) << rb.status().ToString();
  EXPECT_EQ(dropped_a, 2);
  EXPECT_EQ(dropped_b, 2);
  EXPECT_TRUE((*ra)->Equals(**rb));
  auto expected = Rows({{"x", 1}, {"y", 2}, {"z", 9}});
  EXPECT_TRUE((*ra)->Equals(*expected)) << (*ra)->ToString();
}

TEST(Dedup, UnknownOrUnsupportedKeyIsAnError) {
  int64_t dropped = 0;
  auto missing = DedupFirst(Rows({{"x", 1}}), "nope", &dropped);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("dedup key 'nope' is not a column"), std::string::npos);
  auto schema = arrow::schema(
      {arrow::field("d", arrow::float64()), arrow::field(plan::kSequenceColumn, arrow::int64())});
  arrow::DoubleBuilder d;
  arrow::Int64Builder s;
  ASSERT_TRUE(d.Append(1.5).ok() && s.Append(1).ok());
  auto t = arrow::Table::Make(schema, {*d.Finish(), *s.Finish()});
  auto unsupported = DedupFirst(t, "d", &dropped);
  ASSERT_FALSE(unsupported.ok());
  EXPECT_NE(unsupported.status().message().find("key column of type double is not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::exec
