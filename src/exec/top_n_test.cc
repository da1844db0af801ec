#include "exec/top_n.h"

#include <arrow/acero/api.h>
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include <random>

#include "plan/compute_init.h"

namespace sluice::exec {
namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

// `rows` rows in batches of 10,000: a (int32, a tenth null, many ties), s (string, ties, some
// null), d (double, some NaN, some null) and id (the row number, unique). Enough rows that the
// top-N sorts several runs and prunes against the N-th row.
std::shared_ptr<arrow::Table> Rows(int64_t rows) {
  std::mt19937 random(7);
  arrow::Int32Builder a;
  arrow::StringBuilder s;
  arrow::DoubleBuilder d;
  arrow::Int64Builder id;
  for (int64_t i = 0; i < rows; ++i) {
    const uint32_t pick = random() % 20;
    if (pick == 0) {
      EXPECT_TRUE(d.AppendNull().ok());
    } else if (pick == 1) {
      EXPECT_TRUE(d.Append(std::nan("")).ok());
    } else {
      EXPECT_TRUE(d.Append(static_cast<double>(random() % 100000) / 7).ok());
    }
    if (random() % 10 == 0) {
      EXPECT_TRUE(a.AppendNull().ok());
    } else {
      EXPECT_TRUE(a.Append(static_cast<int32_t>(random() % 1000)).ok());
    }
    if (random() % 13 == 0) {
      EXPECT_TRUE(s.AppendNull().ok());
    } else {
      EXPECT_TRUE(s.Append("s" + std::to_string(random() % 50)).ok());
    }
    EXPECT_TRUE(id.Append(i).ok());
  }
  auto schema =
      arrow::schema({arrow::field("a", arrow::int32()), arrow::field("s", arrow::utf8()),
                     arrow::field("d", arrow::float64()), arrow::field("id", arrow::int64())});
  auto table = arrow::Table::Make(schema, {a.Finish().ValueOrDie(), s.Finish().ValueOrDie(),
                                           d.Finish().ValueOrDie(), id.Finish().ValueOrDie()});
  arrow::TableBatchReader reader(*table);
  reader.set_chunksize(10000);
  return arrow::Table::FromRecordBatchReader(&reader).ValueOrDie();
}

// The first `rows` rows of a full sort, for comparison.
std::shared_ptr<arrow::Table> Sorted(const std::shared_ptr<arrow::Table>& table,
                                     const std::vector<cp::SortKey>& keys, int64_t rows) {
  auto order = cp::SortIndices(table, cp::SortOptions(keys)).ValueOrDie();
  auto first = order->Slice(0, std::min<int64_t>(rows, order->length()));
  return cp::Take(table, first).ValueOrDie().table()->CombineChunks().ValueOrDie();
}

std::shared_ptr<arrow::Table> RunTopN(const std::shared_ptr<arrow::Table>& table,
                                      const std::vector<cp::SortKey>& keys, int64_t rows) {
  ac::Declaration source("table_source", ac::TableSourceNodeOptions(table, 10000));
  auto result = ac::DeclarationToTable(TopN(std::move(source), table->schema(), keys, rows));
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return (*result)->CombineChunks().ValueOrDie();
}

class TopNTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(plan::EnsureComputeInitialized().ok()); }
};

// Ties make which rows come first free, so the sort keys are compared, and the ids of rows
// whose keys are unique (the last key is the id) exactly.
TEST_F(TopNTest, MatchesAFullSortAcrossNullPlacementsAndDirections) {
  auto table = Rows(400000);
  using Order = cp::SortOrder;
  using Nulls = cp::NullPlacement;
  const std::vector<std::vector<cp::SortKey>> orders = {
      {cp::SortKey("a"), cp::SortKey("id")},
      {cp::SortKey("a", Order::Descending, Nulls::AtStart), cp::SortKey("id")},
      {cp::SortKey("s", Order::Ascending, Nulls::AtStart),
       cp::SortKey("a", Order::Descending, Nulls::AtEnd), cp::SortKey("id", Order::Descending)},
      // NaNs sort with the nulls: after the values, or before them.
      {cp::SortKey("d"), cp::SortKey("id")},
      {cp::SortKey("d", Order::Descending, Nulls::AtStart), cp::SortKey("id")},
  };
  for (const auto& keys : orders) {
    // 390,000 of 400,000: the N-th row's key is a null or a NaN.
    for (int64_t rows :
         {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{150000}, int64_t{390000}}) {
      auto got = RunTopN(table, keys, rows);
      auto want = Sorted(table, keys, rows);
      ASSERT_EQ(got->num_rows(), want->num_rows()) << rows;
      EXPECT_TRUE(got->Equals(*want, arrow::EqualOptions().nans_equal(true)))
          << "top " << rows << " by " << keys[0].ToString();
    }
  }
}

TEST_F(TopNTest, KeysWithTiesGiveTheSameKeyValuesAsAFullSort) {
  auto table = Rows(300000);
  const std::vector<cp::SortKey> keys = {cp::SortKey("s", cp::SortOrder::Descending),
                                         cp::SortKey("a")};
  auto got = RunTopN(table, keys, 5000);
  auto want = Sorted(table, keys, 5000);
  for (const char* column : {"s", "a"}) {
    EXPECT_TRUE(got->GetColumnByName(column)->Equals(*want->GetColumnByName(column))) << column;
  }
}

TEST_F(TopNTest, MoreRowsThanTheInputGivesTheWholeInputSorted) {
  auto table = Rows(2500);
  const std::vector<cp::SortKey> keys = {cp::SortKey("id", cp::SortOrder::Descending)};
  auto got = RunTopN(table, keys, 1000000);
  EXPECT_TRUE(got->Equals(*Sorted(table, keys, 2500), arrow::EqualOptions().nans_equal(true)));
}

TEST_F(TopNTest, AnInputErrorFailsThePlan) {
  auto table = Rows(1000);
  // A key the input does not have: the sort fails, and the plan with it.
  ac::Declaration source("table_source", ac::TableSourceNodeOptions(table, 100));
  auto result = ac::DeclarationToTable(
      TopN(std::move(source), table->schema(), {cp::SortKey("missing")}, 10));
  EXPECT_FALSE(result.ok());
}

}  // namespace
}  // namespace sluice::exec
