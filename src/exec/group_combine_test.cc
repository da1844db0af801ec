#include "exec/group_combine.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "plan/compute_init.h"
#include "plan/exact_sum.h"

namespace sluice::exec {
namespace {

namespace cp = arrow::compute;

std::shared_ptr<arrow::Array> Json(const std::shared_ptr<arrow::DataType>& type,
                                   const std::string& json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

class GroupCombine : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(plan::EnsureComputeInitialized().ok()); }

  std::shared_ptr<arrow::Array> Combine(const std::string& function,
                                        const std::shared_ptr<arrow::Array>& a,
                                        const std::shared_ptr<arrow::Array>& b) {
    auto out = CombineFinished(function, nullptr, a, b, &ctx_);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? out->make_array() : nullptr;
  }

  cp::ExecContext ctx_;
};

TEST_F(GroupCombine, SumsAddWithANullCountingForNothing) {
  const auto a = Json(arrow::int64(), "[1, null, 5, null, 9223372036854775806]");
  const auto b = Json(arrow::int64(), "[2, 3, null, null, 1]");
  EXPECT_TRUE(Combine("hash_sum", a, b)
                  ->Equals(*Json(arrow::int64(), "[3, 3, 5, null, 9223372036854775807]")));
  const auto u = Json(arrow::uint64(), "[18446744073709551614, null]");
  EXPECT_TRUE(Combine("hash_sum", u, Json(arrow::uint64(), "[1, 7]"))
                  ->Equals(*Json(arrow::uint64(), "[18446744073709551615, 7]")));
  const auto x = Json(arrow::float64(), "[0.5, null]");
  EXPECT_TRUE(Combine("hash_sum", x, Json(arrow::float64(), "[0.25, 2]"))
                  ->Equals(*Json(arrow::float64(), "[0.75, 2]")));
  const auto counts = Json(arrow::int64(), "[0, 4]");
  EXPECT_TRUE(Combine("hash_count_all", counts, Json(arrow::int64(), "[2, 1]"))
                  ->Equals(*Json(arrow::int64(), "[2, 5]")));
  const auto d = arrow::decimal128(38, 2);
  const std::string sum = std::string("hash_") + plan::kExactSumFunction;
  EXPECT_TRUE(
      Combine(sum, Json(d, R"(["1.25", null, "-3.00"])"), Json(d, R"(["2.50", "7.00", null])"))
          ->Equals(*Json(d, R"(["3.75", "7.00", "-3.00"])")));
}

TEST_F(GroupCombine, ADecimalSumPastItsDigitsIsAnError) {
  const auto d = arrow::decimal128(38, 0);
  const std::string nines(38, '9');
  auto out = CombineFinished(std::string("hash_") + plan::kExactSumFunction, nullptr,
                             Json(d, "[\"" + nines + "\"]"), Json(d, "[\"1\"]"), &ctx_);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("overflow in sum"), std::string::npos)
      << out.status().ToString();
}

// Never a wrapped total: the combined sum fails, naming the sum as the query wrote it.
TEST_F(GroupCombine, AnIntegerSumPastItsTypeIsAnErrorNamingTheSum) {
  const plan::ExactSumOptions options(true, 1, "sum(ss_quantity)");
  const std::string sum = std::string("hash_") + plan::kExactSumFunction;
  auto out = CombineFinished(sum, &options, Json(arrow::int64(), "[1, 9223372036854775807]"),
                             Json(arrow::int64(), "[null, 1]"), &ctx_);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(
      out.status().message().find("overflow in sum(ss_quantity): the total does not fit in int64"),
      std::string::npos)
      << out.status().ToString();
  out = CombineFinished(sum, &options, Json(arrow::int64(), "[-9223372036854775807]"),
                        Json(arrow::int64(), "[-2]"), &ctx_);
  EXPECT_FALSE(out.ok());
  out = CombineFinished(sum, &options, Json(arrow::uint64(), "[18446744073709551615]"),
                        Json(arrow::uint64(), "[1]"), &ctx_);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("does not fit in uint64"), std::string::npos)
      << out.status().ToString();
}

TEST_F(GroupCombine, MinAndMaxOfNumbersStringsAndNulls) {
  const auto a = Json(arrow::int32(), "[1, null, 5, null]");
  const auto b = Json(arrow::int32(), "[2, 3, 4, null]");
  EXPECT_TRUE(Combine("hash_min", a, b)->Equals(*Json(arrow::int32(), "[1, 3, 4, null]")));
  EXPECT_TRUE(Combine("hash_max", a, b)->Equals(*Json(arrow::int32(), "[2, 3, 5, null]")));
  const auto s = Json(arrow::utf8(), R"(["b", "a", null])");
  const auto t = Json(arrow::utf8(), R"(["a", null, "c"])");
  EXPECT_TRUE(Combine("hash_min", s, t)->Equals(*Json(arrow::utf8(), R"(["a", "a", "c"])")));
}

TEST_F(GroupCombine, OnlyAggregatesWhoseFinishedValuesCombine) {
  const cp::ScalarAggregateOptions skip(/*skip_nulls=*/true, /*min_count=*/1);
  const cp::ScalarAggregateOptions keep_nulls(/*skip_nulls=*/false, /*min_count=*/1);
  const cp::ScalarAggregateOptions two(/*skip_nulls=*/true, /*min_count=*/2);
  EXPECT_TRUE(CombinableAggregate("hash_sum", &skip, *arrow::int64()));
  EXPECT_TRUE(CombinableAggregate("hash_sum", nullptr, *arrow::float64()));
  EXPECT_TRUE(CombinableAggregate("hash_count", nullptr, *arrow::int64()));
  EXPECT_TRUE(CombinableAggregate("hash_min", &skip, *arrow::utf8()));
  EXPECT_TRUE(CombinableAggregate(std::string("hash_") + plan::kExactSumFunction, &skip,
                                  *arrow::decimal128(38, 2)));
  // A mean is not the mean of means; NULLs kept or a least count need the states.
  EXPECT_FALSE(CombinableAggregate("hash_mean", &skip, *arrow::float64()));
  EXPECT_FALSE(CombinableAggregate("hash_sum", &keep_nulls, *arrow::int64()));
  EXPECT_FALSE(CombinableAggregate("hash_sum", &two, *arrow::int64()));
  // Arrow's decimal sum has its own overflow rule; NaN orders apart from less and greater.
  EXPECT_FALSE(CombinableAggregate("hash_sum", &skip, *arrow::decimal128(38, 2)));
  EXPECT_FALSE(CombinableAggregate("hash_min", &skip, *arrow::float64()));
  EXPECT_FALSE(CombinableAggregate("hash_max", &skip, *arrow::list(arrow::int32())));
  EXPECT_FALSE(CombinableAggregate("hash_distinct", nullptr, *arrow::int64()));
}

}  // namespace
}  // namespace sluice::exec
