#include "exec/window.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <limits>

#include "plan/compute_init.h"

namespace sluice::exec {
namespace {

using plan::WindowCall;
using plan::WindowFrame;
using B = WindowFrame::Bound;

std::shared_ptr<arrow::Array> Json(const std::shared_ptr<arrow::DataType>& type, const char* json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

// Rows (g, k, v) in a scrambled order: the results must come back in this order.
std::shared_ptr<arrow::Table> Rows() {
  auto g = Json(arrow::utf8(), R"(["a", "b", "a", null, "a", "b", null])");
  auto k = Json(arrow::int32(), R"([3, 1, 1, 5, 2, 2, 4])");
  auto v = Json(arrow::int64(), R"([30, 10, null, 50, 20, 20, 40])");
  auto schema = arrow::schema({arrow::field("g", arrow::utf8()), arrow::field("k", arrow::int32()),
                               arrow::field("v", arrow::int64())});
  return arrow::Table::Make(schema, arrow::ArrayVector{g, k, v});
}

WindowCall Call(std::string function, std::vector<std::string> args = {}) {
  WindowCall w;
  w.function = std::move(function);
  w.arguments = std::move(args);
  w.partition_keys = {"g"};
  w.order_keys = {arrow::compute::SortKey(arrow::FieldRef("k"))};
  w.output = "out";
  return w;
}

std::shared_ptr<arrow::Array> Compute(const WindowCall& call) {
  EXPECT_TRUE(plan::EnsureComputeInitialized().ok());
  auto out = ComputeWindows(Rows(), {call});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return nullptr;
  EXPECT_EQ((*out)->num_columns(), 4);
  return (*out)->GetColumnByName("out")->chunk(0);
}

void ExpectJson(const std::shared_ptr<arrow::Array>& actual,
                const std::shared_ptr<arrow::DataType>& type, const char* json) {
  ASSERT_NE(actual, nullptr);
  auto expected = Json(type, json);
  EXPECT_TRUE(actual->Equals(*expected)) << actual->ToString() << "\nexpected " << json;
}

TEST(Window, RankingComesBackInInputOrderWithNullPartitionsTogether) {
  // Partitions: a = k 1,2,3; b = k 1,2; NULL = k 4,5.
  ExpectJson(Compute(Call("row_number")), arrow::int64(), "[3, 1, 1, 2, 2, 2, 1]");
  ExpectJson(Compute(Call("percent_rank")), arrow::float64(), "[1, 0, 0, 1, 0.5, 1, 0]");
  auto ntile = Call("ntile");
  ntile.parameter = 5;  // more buckets than rows: one row each
  ExpectJson(Compute(ntile), arrow::int64(), "[3, 1, 1, 2, 2, 2, 1]");
}

TEST(Window, SumsOverRowsFramesSkipNullsAndEmptyFramesAreNull) {
  auto sum = Call("sum", {"v"});
  sum.frame.unit = WindowFrame::Unit::kRows;
  sum.frame.start = B::kPreceding;
  sum.frame.start_offset = 1;
  sum.frame.end = B::kCurrentRow;
  // a: k1 null, k2 20, k3 30 -> null, 20, 50.
  ExpectJson(Compute(sum), arrow::int64(), "[50, 10, null, 90, 20, 30, 40]");
  // A frame wholly after the partition's end is empty: NULL, and an offset as large as int64
  // allows does not overflow.
  sum.frame.start = B::kFollowing;
  sum.frame.start_offset = std::numeric_limits<int64_t>::max();
  sum.frame.end = B::kUnboundedFollowing;
  ExpectJson(Compute(sum), arrow::int64(), "[null, null, null, null, null, null, null]");
}

TEST(Window, MinAndMaxSlideWithTheFrame) {
  auto max = Call("max", {"v"});
  max.frame.unit = WindowFrame::Unit::kRows;
  max.frame.start = B::kCurrentRow;
  max.frame.end = B::kFollowing;
  max.frame.end_offset = 1;
  ExpectJson(Compute(max), arrow::int64(), "[30, 20, 20, 50, 30, 20, 50]");
  auto min = max;
  min.function = "min";
  ExpectJson(Compute(min), arrow::int64(), "[30, 10, 20, 50, 20, 20, 40]");
}

TEST(Window, LagStaysInsideThePartition) {
  auto lag = Call("lag", {"v"});
  lag.parameter = 1;
  ExpectJson(Compute(lag), arrow::int64(), "[20, null, null, 40, null, 10, null]");
}

TEST(Window, AnEmptyInputGivesAnEmptyColumn) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  auto rows = Rows()->Slice(0, 0);
  auto sum = Call("sum", {"v"});
  sum.output = "total";
  auto out = ComputeWindows(rows, {Call("rank"), sum});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)->num_rows(), 0);
  EXPECT_EQ((*out)->num_columns(), 5);
}

TEST(Window, ChunkedInputKeepsItsOtherColumnsAndDecodesDictionaries) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  // Rows() in three chunks, g a dictionary in each, and a column no window reads (w).
  auto rows = Rows();
  auto w = Json(arrow::utf8(), R"(["r0", "r1", "r2", "r3", null, "r5", "r6"])");
  auto g_type = arrow::dictionary(arrow::int32(), arrow::utf8());
  arrow::ArrayVector g_chunks, k_chunks, v_chunks, w_chunks;
  for (auto [at, length] : {std::pair{0, 2}, std::pair{2, 4}, std::pair{6, 1}}) {
    arrow::Datum g =
        arrow::compute::DictionaryEncode(rows->column(0)->Slice(at, length)).ValueOrDie();
    g_chunks.push_back(g.chunked_array()->chunk(0));
    k_chunks.push_back(rows->column(1)->Slice(at, length)->chunk(0));
    v_chunks.push_back(rows->column(2)->Slice(at, length)->chunk(0));
    w_chunks.push_back(w->Slice(at, length));
  }
  auto schema =
      arrow::schema({arrow::field("g", g_type), arrow::field("k", arrow::int32()),
                     arrow::field("v", arrow::int64()), arrow::field("w", arrow::utf8())});
  auto chunked = arrow::Table::Make(schema, {std::make_shared<arrow::ChunkedArray>(g_chunks),
                                             std::make_shared<arrow::ChunkedArray>(k_chunks),
                                             std::make_shared<arrow::ChunkedArray>(v_chunks),
                                             std::make_shared<arrow::ChunkedArray>(w_chunks)});
  auto lag = Call("lag", {"v"});
  lag.parameter = 1;
  lag.output = "lag";
  WindowCall all;  // no keys, no values: the whole input is one frame
  all.function = "row_number";
  all.output = "n";
  auto out = ComputeWindows(chunked, {Call("row_number"), lag, all});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ((*out)->num_columns(), 7);
  ASSERT_EQ((*out)->num_rows(), 7);
  EXPECT_TRUE((*out)->schema()->field(0)->type()->Equals(arrow::utf8()));
  auto column = [&](const char* name) {
    return arrow::Concatenate((*out)->GetColumnByName(name)->chunks()).ValueOrDie();
  };
  EXPECT_TRUE(column("g")->Equals(*rows->column(0)->chunk(0))) << column("g")->ToString();
  EXPECT_TRUE(column("w")->Equals(*w)) << column("w")->ToString();
  ExpectJson(column("out"), arrow::int64(), "[3, 1, 1, 2, 2, 2, 1]");
  ExpectJson(column("lag"), arrow::int64(), "[20, null, null, 40, null, 10, null]");
  ExpectJson(column("n"), arrow::int64(), "[1, 2, 3, 4, 5, 6, 7]");
  EXPECT_TRUE((*out)->ValidateFull().ok());
}

}  // namespace
}  // namespace sluice::exec
