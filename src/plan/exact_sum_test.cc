#include "plan/exact_sum.h"

#include <arrow/acero/api.h>
#include <arrow/api.h>
#include <arrow/array/concatenate.h>
#include <arrow/compute/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "plan/compute_init.h"

namespace sluice::plan {
namespace {

namespace cp = arrow::compute;
namespace ac = arrow::acero;

class ExactSum : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(EnsureComputeInitialized().ok()); }
};

// `function` of column "v" of `table`, by column "k" or not, through Acero as the executor
// runs it.
arrow::Result<std::shared_ptr<arrow::Table>> Sum(std::shared_ptr<arrow::Table> table,
                                                 const std::string& function, bool grouped,
                                                 int64_t batch_rows,
                                                 std::shared_ptr<cp::FunctionOptions> options) {
  std::vector<cp::Aggregate> aggs = {
      {(grouped ? "hash_" : "") + function, std::move(options), arrow::FieldRef("v"), "s"}};
  std::vector<arrow::FieldRef> keys;
  if (grouped) keys.emplace_back("k");
  ac::Declaration plan = ac::Declaration::Sequence(
      {{"table_source", ac::TableSourceNodeOptions(std::move(table), batch_rows)},
       {"aggregate", ac::AggregateNodeOptions(std::move(aggs), std::move(keys))}});
  ARROW_ASSIGN_OR_RAISE(auto out, ac::DeclarationToTable(std::move(plan), /*use_threads=*/true));
  if (!grouped) return out;
  ARROW_ASSIGN_OR_RAISE(auto order, cp::SortIndices(out, cp::SortOptions({cp::SortKey("k")})));
  ARROW_ASSIGN_OR_RAISE(auto sorted, cp::Take(out, order));
  return sorted.table();
}

std::shared_ptr<cp::FunctionOptions> Options(uint32_t min_count = 1) {
  return std::make_shared<ExactSumOptions>(/*skip_nulls=*/true, min_count, "sum(v)");
}

// `n` rows: keys in [0, keys), values of `type` in [lo, hi], about one NULL in seven.
std::shared_ptr<arrow::Table> RandomTable(const std::shared_ptr<arrow::DataType>& type, int64_t n,
                                          int keys, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937_64 rng(seed);
  arrow::Int32Builder kb;
  arrow::Int64Builder vb;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(kb.Append(static_cast<int32_t>(rng() % static_cast<uint64_t>(keys))).ok());
    if (rng() % 7 == 0) {
      EXPECT_TRUE(vb.AppendNull().ok());
    } else {
      EXPECT_TRUE(
          vb.Append(lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1))).ok());
    }
  }
  auto v = cp::Cast(vb.Finish().ValueOrDie(), type).ValueOrDie().make_array();
  return arrow::Table::Make(
      arrow::schema({arrow::field("k", arrow::int32()), arrow::field("v", type)}),
      {kb.Finish().ValueOrDie(), v});
}

TEST_F(ExactSum, IntegerSumsGiveArrowsTotalsAndTypesWhereNothingOverflows) {
  const int64_t big = int64_t{1} << 40;
  const struct {
    std::shared_ptr<arrow::DataType> type;
    int64_t lo, hi;
  } cases[] = {{arrow::int8(), -128, 127},
               {arrow::int16(), -32768, 32767},
               {arrow::int32(), -(1 << 30), 1 << 30},
               {arrow::int64(), -big, big},
               {arrow::uint8(), 0, 255},
               {arrow::uint16(), 0, 65535},
               {arrow::uint32(), 0, 1 << 30},
               {arrow::uint64(), 0, big}};
  for (const auto& c : cases) {
    // 4 keys in batches of 999 rows: the striped sum of few groups; 300 keys: many. An odd tail.
    for (const auto& [keys, batch_rows] :
         {std::pair{4, int64_t{999}}, std::pair{300, int64_t{64}}}) {
      const auto table = RandomTable(c.type, 5001, keys, c.lo, c.hi, 11);
      for (const bool grouped : {false, true}) {
        auto want = Sum(table, "sum", grouped, batch_rows, nullptr);
        auto got = Sum(table, kExactSumFunction, grouped, batch_rows, Options());
        ASSERT_TRUE(want.ok()) << want.status().ToString();
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_TRUE((*got)->Equals(**want)) << c.type->ToString() << " grouped " << grouped << "\n"
                                            << (*got)->ToString() << "\n"
                                            << (*want)->ToString();
      }
    }
  }
}

// A group of NULLs only, or of fewer valid values than min_count, is NULL; a group's 64-bit
// partial total may pass the type on its way, as long as the total does not.
TEST_F(ExactSum, AnIntermediateTotalMayPassTheTypeAndNullGroupsStayNull) {
  const auto table = arrow::Table::Make(
      arrow::schema({arrow::field("k", arrow::int32()), arrow::field("v", arrow::int64())}),
      {arrow::json::ArrayFromJSONString(arrow::int32(), "[0, 0, 0, 1, 1, 2]").ValueOrDie(),
       arrow::json::ArrayFromJSONString(
           arrow::int64(),
           "[9223372036854775807, 9223372036854775807, -9223372036854775808, null, null, -5]")
           .ValueOrDie()});
  for (const int64_t batch_rows : {1, 2, 6}) {
    auto got = Sum(table, kExactSumFunction, /*grouped=*/true, batch_rows, Options());
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ((*got)->GetColumnByName("s")->ToString(),
              arrow::ChunkedArray(arrow::json::ArrayFromJSONString(
                                      arrow::int64(), "[9223372036854775806, null, -5]")
                                      .ValueOrDie())
                  .ToString());
    auto total = Sum(table, kExactSumFunction, /*grouped=*/false, batch_rows, Options());
    ASSERT_TRUE(total.ok()) << total.status().ToString();
    EXPECT_EQ((*total)->column(0)->GetScalar(0).ValueOrDie()->ToString(), "9223372036854775801");
  }
  // min_count 2: group 2's one value is too few.
  auto two = Sum(table, kExactSumFunction, true, 6, Options(2));
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_TRUE((*two)->GetColumnByName("s")->chunk(0)->IsNull(2));
}

// Where Arrow's sum wraps (9223372036854775807 + 1 to -9223372036854775808), ours fails, and
// the error names the sum as the query wrote it.
TEST_F(ExactSum, ATotalPastTheTypeIsAnErrorNamingTheSumNeverAWrappedValue) {
  const struct {
    std::shared_ptr<arrow::DataType> type;
    const char* values;
  } cases[] = {
      {arrow::int64(), "[9223372036854775807, 1]"},
      {arrow::int64(), "[-9223372036854775808, -1]"},
      {arrow::int64(), "[4611686018427387904, 4611686018427387904, null]"},
      {arrow::uint64(), "[18446744073709551615, 1]"},
  };
  for (const auto& c : cases) {
    // The values 300 times over, in one group: the striped few-groups sum, and a batch per row.
    const auto values = arrow::json::ArrayFromJSONString(c.type, c.values).ValueOrDie();
    const auto v = arrow::Concatenate(arrow::ArrayVector(300, values)).ValueOrDie();
    const auto k = arrow::MakeArrayFromScalar(arrow::Int32Scalar(0), v->length()).ValueOrDie();
    const auto table = arrow::Table::Make(
        arrow::schema({arrow::field("k", arrow::int32()), arrow::field("v", c.type)}), {k, v});
    for (const bool grouped : {false, true}) {
      for (const int64_t batch_rows : {int64_t{1}, int64_t{1000}}) {
        auto got = Sum(table, kExactSumFunction, grouped, batch_rows, Options());
        ASSERT_FALSE(got.ok()) << c.values << " grouped " << grouped << ": " << (*got)->ToString();
        EXPECT_NE(got.status().message().find("overflow in sum(v): the total does not fit in " +
                                              (c.type->id() == arrow::Type::UINT64
                                                   ? std::string("uint64")
                                                   : std::string("int64"))),
                  std::string::npos)
            << got.status().ToString();
        EXPECT_NE(got.status().message().find("DECIMAL(38, 0)"), std::string::npos)
            << got.status().ToString();
      }
    }
  }
}

}  // namespace
}  // namespace sluice::plan
