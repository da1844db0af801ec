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

}  // namespace
}  // namespace sluice::exec
