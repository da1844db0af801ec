// Constant folding and boolean simplification, on expressions and on plan text.
#include "sql/optimizer/constant_folding.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include "plan/compute_init.h"
#include "sql/optimizer/bind_testing.h"

namespace sluice::sql {
namespace {

namespace cp = arrow::compute;

class ConstantFoldingTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(plan::EnsureComputeInitialized().ok()); }

  static std::string Simplified(const cp::Expression& e) { return Simplify(e).ToString(); }

  static cp::Expression X() { return cp::greater(cp::field_ref("x"), cp::literal(int64_t{1})); }
};

TEST_F(ConstantFoldingTest, FoldsConstantSubtrees) {
  // x > 1 + 2 is x > 3; the comparison itself reads x and stays.
  EXPECT_EQ(Simplified(cp::greater(
                cp::field_ref("x"),
                cp::call("add_checked", {cp::literal(int64_t{1}), cp::literal(int64_t{2})}))),
            "(x > 3)");
  EXPECT_EQ(Simplified(cp::equal(cp::literal(int64_t{1}), cp::literal(int64_t{1}))), "true");
  EXPECT_EQ(
      Simplified(cp::call("cast", {cp::literal(2.5)}, cp::CastOptions::Safe(arrow::float64()))),
      "2.5");
}

TEST_F(ConstantFoldingTest, AConstantThatFailsIsKeptForTheRunAndIsTheBindersError) {
  const auto one_over_zero =
      cp::call("divide_checked", {cp::literal(int64_t{1}), cp::literal(int64_t{0})});
  EXPECT_EQ(Simplified(one_over_zero), one_over_zero.ToString());
  auto folded = FoldConstantSubtrees(one_over_zero);
  ASSERT_FALSE(folded.ok());
  EXPECT_NE(folded.status().message().find("divide by zero"), std::string::npos);
  // A literal's decimal cast that does not fit names the value (as a column's does), where
  // Arrow's own cast names only the precision.
  const auto narrow = cp::call("cast",
                               {cp::call("cast", {cp::literal(int64_t{-12345})},
                                         cp::CastOptions::Safe(arrow::decimal128(38, 0)))},
                               cp::CastOptions::Safe(arrow::decimal128(3, 0)));
  auto failed = FoldConstantSubtrees(narrow);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("decimal value -12345 does not fit in "
                                           "decimal128(3, 0)"),
            std::string::npos)
      << failed.status().ToString();
  // One that fits folds to the same literal as Arrow's cast gives.
  const auto fits =
      cp::call("cast", {cp::literal(int64_t{123})}, cp::CastOptions::Safe(arrow::decimal128(5, 2)));
  auto value = FoldConstantSubtrees(fits);
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(value->ToString(), "123.00");
}

TEST_F(ConstantFoldingTest, BooleanIdentities) {
  const auto t = cp::literal(true), f = cp::literal(false);
  EXPECT_EQ(Simplified(cp::and_(X(), t)), "(x > 1)");
  EXPECT_EQ(Simplified(cp::and_(t, X())), "(x > 1)");
  EXPECT_EQ(Simplified(cp::or_(X(), f)), "(x > 1)");
  // NULL AND false is false and NULL OR true is true in SQL (Arrow's _kleene kernels).
  EXPECT_EQ(Simplified(cp::and_(X(), f)), "false");
  EXPECT_EQ(Simplified(cp::or_(t, X())), "true");
  // The NULL-propagating kernels give NULL there: only the identities hold.
  EXPECT_EQ(Simplified(cp::call("and", {X(), f})), cp::call("and", {X(), f}).ToString());
  EXPECT_EQ(Simplified(cp::call("and", {X(), t})), "(x > 1)");
  EXPECT_EQ(Simplified(cp::not_(cp::not_(X()))), "(x > 1)");
  EXPECT_EQ(Simplified(cp::not_(X())), "invert((x > 1))");
  // Nested: (x > 1 OR false) AND NOT NOT (x > 1 AND 1 = 1).
  EXPECT_EQ(
      Simplified(cp::and_(cp::or_(X(), f),
                          cp::not_(cp::not_(cp::and_(
                              X(), cp::equal(cp::literal(int64_t{1}), cp::literal(int64_t{1}))))))),
      "((x > 1) and (x > 1))");
}

TEST_F(ConstantFoldingTest, OnAPlanAFilterThatBecomesTrueGoes) {
  BoundQuery q = BindForTest("select k from t where k > 1 or true");
  const std::string before = q.plan->Explain();
  SimplifyExpressions(q.plan.get());
  EXPECT_EQ(before,
            "Project k#3 := k#0\n"
            "  Filter ((k#0 > 1) or true)\n"
            "    Scan t (1 files) columns=[k#0, g#1, v#2]\n");
  EXPECT_EQ(q.plan->Explain(),
            "Project k#3 := k#0\n"
            "  Scan t (1 files) columns=[k#0, g#1, v#2]\n");
}

TEST_F(ConstantFoldingTest, OnAPlanFiltersAndProjections) {
  // The binder folds as it types; the ratio's cast of 2.5 to double after GROUP BY and the
  // boolean identities are left to the pass.
  BoundQuery q = BindForTest(
      "select g, sum(v) * 2.5 from t where (v > 1 or false) and not not (k > 2) group by g");
  const std::string to_double =
      "{to_type=double, allow_int_overflow=false, allow_time_truncate=false, "
      "allow_time_overflow=false, allow_decimal_truncate=false, allow_float_truncate=true, "
      "allow_invalid_utf8=false}";
  const std::string rest =
      "  FinalAggregate keys=[g#1] aggregates=[__agg3 := sum(__p3)]\n"
      "    PartialAggregate keys=[g#1] aggregates=[__p3 := sum(__in3)]\n"
      "      Project g#1 := g#1, __in3 := v#2\n";
  EXPECT_EQ(q.plan->Explain(), "Project g#4 := g#1, ?column?#5 := multiply_checked(cast(__agg3, " +
                                   to_double + "), cast(2.5, " + to_double + "))\n" + rest +
                                   "        Filter (((v#2 > 1) or false) and "
                                   "invert(invert((k#0 > 2))))\n"
                                   "          Scan t (1 files) columns=[k#0, g#1, v#2]\n");
  SimplifyExpressions(q.plan.get());
  EXPECT_EQ(q.plan->Explain(), "Project g#4 := g#1, ?column?#5 := multiply_checked(cast(__agg3, " +
                                   to_double + "), 2.5)\n" + rest +
                                   "        Filter ((v#2 > 1) and (k#0 > 2))\n"
                                   "          Scan t (1 files) columns=[k#0, g#1, v#2]\n");
}

}  // namespace
}  // namespace sluice::sql
