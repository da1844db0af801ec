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

TEST(Dedup, RowsAlreadyInSequenceOrderGiveTheSameAnswerAcrossChunks) {
  // In __seq order and in three chunks (the shape a shuffle read gives), with NULL keys, which
  // are never duplicates of each other: the in-place path. The same rows in reverse take the
  // sorting path; both keep the same rows in the same order.
  std::vector<std::pair<std::string, int64_t>> rows;
  for (int64_t i = 0; i < 30; ++i) rows.push_back({"k" + std::to_string(i % 7), i});
  auto whole = Rows(rows);
  arrow::TableBatchReader reader(*whole);
  reader.set_chunksize(11);
  auto chunked = *arrow::Table::FromRecordBatchReader(&reader);
  ASSERT_EQ(chunked->column(0)->num_chunks(), 3);
  std::vector<std::pair<std::string, int64_t>> reversed(rows.rbegin(), rows.rend());
  int64_t dropped_a = 0, dropped_b = 0;
  auto in_order = DedupFirst(chunked, "k", &dropped_a);
  auto sorted = DedupFirst(Rows(reversed), "k", &dropped_b);
  ASSERT_TRUE(in_order.ok()) << in_order.status().ToString();
  ASSERT_TRUE(sorted.ok()) << sorted.status().ToString();
  EXPECT_EQ(dropped_a, 23);
  EXPECT_EQ(dropped_b, 23);
  EXPECT_TRUE((*in_order)->Equals(**sorted)) << (*in_order)->ToString();
  EXPECT_TRUE((*in_order)->Equals(
      *Rows({{"k0", 0}, {"k1", 1}, {"k2", 2}, {"k3", 3}, {"k4", 4}, {"k5", 5}, {"k6", 6}})));

  // NULL keys are all kept, in either path.
  arrow::StringBuilder keys;
  arrow::Int64Builder seqs;
  for (int64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE((i % 2 ? keys.Append("a") : keys.AppendNull()).ok());
    ASSERT_TRUE(seqs.Append(i).ok());
  }
  auto with_nulls = arrow::Table::Make(whole->schema(), {*keys.Finish(), *seqs.Finish()});
  int64_t dropped = 0;
  auto out = DedupFirst(with_nulls, "k", &dropped);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)->num_rows(), 3);
  EXPECT_EQ(dropped, 1);
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
