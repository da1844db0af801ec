#include "exec/scan_readahead.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::exec {
namespace {

// TPC-H lineitem's columns that the scans below read.
std::shared_ptr<arrow::Schema> Lineitem() {
  return arrow::schema({
      arrow::field("l_orderkey", arrow::int64()),
      arrow::field("l_partkey", arrow::int64()),
      arrow::field("l_suppkey", arrow::int64()),
      arrow::field("l_quantity", arrow::decimal128(15, 2)),
      arrow::field("l_extendedprice", arrow::decimal128(15, 2)),
      arrow::field("l_discount", arrow::decimal128(15, 2)),
      arrow::field("l_tax", arrow::decimal128(15, 2)),
      arrow::field("l_returnflag", arrow::utf8()),
      arrow::field("l_linestatus", arrow::utf8()),
      arrow::field("l_shipdate", arrow::date32()),
      arrow::field("l_comment", arrow::utf8()),
  });
}

const std::vector<std::string> kQ1Columns = {"l_quantity", "l_extendedprice", "l_discount",
                                             "l_tax",      "l_returnflag",    "l_linestatus",
                                             "l_shipdate"};
const std::vector<std::string> kQ9Columns = {"l_orderkey", "l_partkey",       "l_suppkey",
                                             "l_quantity", "l_extendedprice", "l_discount"};

TEST(ScanReadahead, NarrowRowsReadFourBatchesAndWideRowsTwo) {
  // 128K rows of two keys: 2 MiB a batch.
  EXPECT_EQ(ScanReadahead(*Lineitem(), {"l_orderkey", "l_suppkey"}, 128 << 10), 4);
  // Q1's seven columns, 128K rows: 9.5 MiB a batch, and two batches are two row groups.
  EXPECT_EQ(ScanReadahead(*Lineitem(), kQ1Columns, 128 << 10), 2);
}

TEST(ScanReadahead, SmallBatchesStillKeepARowGroupAhead) {
  // Q9's six columns in 32K-row batches: 2.25 MiB each, over the bytes for four, but two such
  // batches are less than a row group.
  EXPECT_EQ(ScanReadahead(*Lineitem(), kQ9Columns, 32 << 10), 4);
  EXPECT_EQ(ScanReadahead(*Lineitem(), kQ9Columns, 16 << 10), 8);
  EXPECT_EQ(ScanReadahead(*Lineitem(), {"l_orderkey"}, 1), kMostBatchesAhead);
  // The same columns in batches larger than a row group keep the bytes' answer.
  EXPECT_EQ(ScanReadahead(*Lineitem(), kQ9Columns, 256 << 10), 2);
}

TEST(ScanReadahead, RowsTooWideForARowGroupAheadKeepTwo) {
  // Eight strings, guessed at 32 bytes each: 128K rows would be 32 MiB, the most allowed.
  auto schema = arrow::schema({});
  std::vector<std::string> columns;
  for (int i = 0; i < 9; ++i) {
    columns.push_back("s" + std::to_string(i));
    schema = *schema->AddField(i, arrow::field(columns.back(), arrow::utf8()));
  }
  EXPECT_EQ(ScanReadahead(*schema, {columns.begin(), columns.begin() + 8}, 32 << 10), 4);
  EXPECT_EQ(ScanReadahead(*schema, columns, 32 << 10), 2);
}

TEST(ScanReadahead, ColumnsNotInTheSchemaCountForNothing) {
  // A date and, if the missing column counted as a string, 36 bytes a row: two batches.
  EXPECT_EQ(ScanReadahead(*Lineitem(), {"l_shipdate", "no_such_column"}, 128 << 10), 4);
  EXPECT_EQ(ScanReadahead(*Lineitem(), {}, 128 << 10), 4);
}

}  // namespace
}  // namespace sluice::exec
