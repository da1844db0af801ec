#include "sql/optimizer/cardinality.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include "plan/compute_init.h"

namespace sluice::sql {
namespace {

namespace cp = arrow::compute;

class CardinalityTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(plan::EnsureComputeInitialized().ok()); }

  // 1,000 rows; `k` has 200 distinct values, `d` (days) spans 0..99, `s` has no statistics.
  static Cardinality Table() {
    Cardinality c;
    c.rows = 1000;
    c.estimate = 1000;
    c.distinct["k"] = 200;
    c.distinct["d"] = 100;
    c.ranges["d"] = {0, 99};
    return c;
  }
};

TEST_F(CardinalityTest, DistinctBoundIsTheStatisticCappedByRows) {
  Cardinality c = Table();
  EXPECT_DOUBLE_EQ(c.DistinctBound("k"), 200);
  EXPECT_DOUBLE_EQ(c.DistinctBound("s"), 1000);  // no statistic: every row may differ
  c.rows = 50;
  EXPECT_DOUBLE_EQ(c.DistinctBound("k"), 50);
}

TEST_F(CardinalityTest, EqualityKeepsOneDistinctValue) {
  const Cardinality c = Table();
  EXPECT_DOUBLE_EQ(Selectivity(cp::equal(cp::field_ref("k"), cp::literal(int64_t{5})), c),
                   1.0 / 200);
  EXPECT_DOUBLE_EQ(Selectivity(cp::equal(cp::field_ref("s"), cp::literal("x")), c),
                   1 / kUnknownDistinct);
  EXPECT_DOUBLE_EQ(Selectivity(cp::not_equal(cp::field_ref("k"), cp::literal(int64_t{5})), c),
                   1 - 1.0 / 200);
}

TEST_F(CardinalityTest, SystemRDefaults) {
  const Cardinality c = Table();
  EXPECT_DOUBLE_EQ(Selectivity(cp::less(cp::field_ref("s"), cp::literal("m")), c),
                   kRangeSelectivity);
  EXPECT_DOUBLE_EQ(
      Selectivity(cp::call("match_like", {cp::field_ref("s")}, cp::MatchSubstringOptions("a%")), c),
      kLikeSelectivity);
  EXPECT_DOUBLE_EQ(Selectivity(cp::field_ref("flag"), c), kDefaultSelectivity);
  EXPECT_DOUBLE_EQ(Selectivity(cp::call("is_null", {cp::field_ref("s")}), c), kDefaultSelectivity);
  EXPECT_DOUBLE_EQ(Selectivity(cp::call("invert", {cp::call("match_like", {cp::field_ref("s")},
                                                            cp::MatchSubstringOptions("a%"))}),
                               c),
                   1 - kLikeSelectivity);
}

TEST_F(CardinalityTest, RangesUseMinMaxAndIntersectOnOneColumn) {
  const Cardinality c = Table();
  // d < 50 keeps days 0..50 of 0..99 (the window is inclusive).
  EXPECT_DOUBLE_EQ(Selectivity(cp::less(cp::field_ref("d"), cp::literal(int64_t{50})), c),
                   51.0 / 100);
  // The constant on the left flips the direction: 90 < d keeps 90..99.
  EXPECT_DOUBLE_EQ(Selectivity(cp::less(cp::literal(int32_t{90}), cp::field_ref("d")), c),
                   10.0 / 100);
  // d >= 10 AND d < 20 is one window of 11 days, not 0.9 * 0.2.
  EXPECT_DOUBLE_EQ(
      ConjunctionSelectivity({cp::greater_equal(cp::field_ref("d"), cp::literal(int64_t{10})),
                              cp::less(cp::field_ref("d"), cp::literal(int64_t{20}))},
                             c),
      11.0 / 100);
  // An empty window still keeps a little.
  EXPECT_DOUBLE_EQ(
      ConjunctionSelectivity({cp::greater(cp::field_ref("d"), cp::literal(int64_t{80})),
                              cp::less(cp::field_ref("d"), cp::literal(int64_t{20}))},
                             c),
      kMinRangeSelectivity);
  // Other conjuncts multiply with the window.
  EXPECT_DOUBLE_EQ(Selectivity(cp::and_(cp::less(cp::field_ref("d"), cp::literal(int64_t{50})),
                                        cp::equal(cp::field_ref("k"), cp::literal(int64_t{1}))),
                               c),
                   1.0 / 200 * (51.0 / 100));
}

TEST_F(CardinalityTest, OrAddsAndIsInCountsValues) {
  const Cardinality c = Table();
  const auto eq = [](int64_t v) { return cp::equal(cp::field_ref("k"), cp::literal(v)); };
  EXPECT_DOUBLE_EQ(Selectivity(cp::or_(eq(1), eq(2)), c), 2.0 / 200);
  EXPECT_DOUBLE_EQ(
      Selectivity(cp::or_({cp::field_ref("a"), cp::field_ref("b"), cp::field_ref("c")}), c),
      1.0);  // three halves, capped
  arrow::Int64Builder builder;
  ASSERT_TRUE(builder.AppendValues({1, 2, 3}).ok());
  auto values = builder.Finish().ValueOrDie();
  EXPECT_DOUBLE_EQ(
      Selectivity(
          cp::call("is_in", {cp::field_ref("k")}, cp::SetLookupOptions(arrow::Datum(values))), c),
      3.0 / 200);
}

TEST_F(CardinalityTest, JoinDividesByTheLargerDistinctKeyCount) {
  // 6M lineitems join 1.5M orders on a key with 1.5M distinct values: one order per lineitem.
  EXPECT_DOUBLE_EQ(JoinEstimate(6e6, 1.5e6, 1.5e6), 6e6);
  // A join estimated under a row is still one row.
  EXPECT_DOUBLE_EQ(JoinEstimate(1, 1, 1000), 1);
  EXPECT_DOUBLE_EQ(SemiJoinEstimate(1000), 1000 / kSemiJoinReduction);
  EXPECT_DOUBLE_EQ(SemiJoinEstimate(1), 1);
  EXPECT_DOUBLE_EQ(HavingEstimate(900), 300);
}

}  // namespace
}  // namespace sluice::sql
