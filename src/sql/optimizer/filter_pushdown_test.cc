// Filter pushdown on plan text: queries bound over t(k, g, v) and u(uk, name) (bind_testing.h),
// the plan as the logical passes leave it (WHERE above the joins, ON conditions on the join)
// and after the pass.
#include "sql/optimizer/filter_pushdown.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include "exec/shared_subplans.h"
#include "plan/compute_init.h"
#include "sql/optimizer/bind_testing.h"

namespace sluice::sql {
namespace {

namespace cp = arrow::compute;

class FilterPushdownTest : public ::testing::Test {
 protected:
  // The plan of `sql` after the pass; `before`, when given, gets it as bound.
  static std::string Pushed(const std::string& sql, std::string* before = nullptr) {
    BoundQuery q = BindForTest(sql);
    if (q.plan == nullptr) return "";
    if (before != nullptr) *before = q.plan->Explain();
    PushDownFilters(q.plan.get());
    const std::string once = q.plan->Explain();
    PushDownFilters(q.plan.get());
    EXPECT_EQ(q.plan->Explain(), once) << "a second run moved something";
    return once;
  }
};

TEST_F(FilterPushdownTest, WhereConditionsGoToTheSideOfAnInnerJoinTheyRead) {
  std::string before;
  const std::string after =
      Pushed("select k from t join u on k = uk where v > 1 and name = 'a' and v < uk", &before);
  EXPECT_EQ(before,
            "Project k#5 := k#0\n"
            "  Filter (((v#2 > 1) and (name#4 == \"a\")) and (v#2 < uk#3))\n"
            "    HashJoin inner on k#0 = uk#3\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n");
  // The condition on both sides stays above the join; the others reach their scans' row groups.
  EXPECT_EQ(after,
            "Project k#5 := k#0\n"
            "  Filter (v#2 < uk#3)\n"
            "    HashJoin inner on k#0 = uk#3\n"
            "      Filter (v#2 > 1)\n"
            "        Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(v#2 > 1)\n"
            "      Filter (name#4 == \"a\")\n"
            "        Scan u (1 files) columns=[uk#3, name#4] pushdown=(name#4 == \"a\")\n");
}

TEST_F(FilterPushdownTest, AConditionOnTwoOfThreeItemsGoesToTheJoinOfThoseTwo) {
  // (When the binder placed filters, it left such a condition above all the joins.) u is not
  // filtered, so that b and u do not join first (join_order.h: a branch that filters).
  EXPECT_EQ(Pushed("select a.k from t a join t b on a.k = b.k join u on b.k = uk "
                   "where a.v < b.v"),
            "Project k#8 := k#0\n"
            "  HashJoin inner on k#3 = uk#6\n"
            "    Filter (v#2 < v#5)\n"
            "      HashJoin inner on k#0 = k#3\n"
            "        Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "        Scan t (1 files) columns=[k#3, g#4, v#5]\n"
            "    Scan u (1 files) columns=[uk#6, name#7]\n");
}

TEST_F(FilterPushdownTest, WhereOnTheNullPaddedSideOfALeftJoinStaysAboveIt) {
  // name = 'a' above the join drops the rows it padded; below it, they would come back padded.
  // v > 1, on the preserved side, goes below it.
  EXPECT_EQ(Pushed("select k, name from t left join u on k = uk where name = 'a' and v > 1"),
            "Project k#5 := k#0, name#6 := name#4\n"
            "  Filter (name#4 == \"a\")\n"
            "    HashJoin left on k#0 = uk#3\n"
            "      Filter (v#2 > 1)\n"
            "        Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(v#2 > 1)\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n");
  // IS NULL above a left join finds the rows with no match; below it, it would find none.
  EXPECT_EQ(Pushed("select k from t left join u on k = uk where name is null"),
            "Project k#5 := k#0\n"
            "  Filter is_null(name#4, {nan_is_null=false})\n"
            "    HashJoin left on k#0 = uk#3\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n");
}

TEST_F(FilterPushdownTest, OnConditionsOfALeftJoinFilterOnlyItsJoinedSide) {
  std::string before;
  const std::string after =
      Pushed("select k from t left join u on k = uk and name = 'a' and v > 1", &before);
  EXPECT_EQ(before,
            "Project k#5 := k#0\n"
            "  HashJoin left on k#0 = uk#3 filter ((name#4 == \"a\") and (v#2 > 1))\n"
            "    Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "    Scan u (1 files) columns=[uk#3, name#4]\n");
  // v > 1 stays on the join: a row of t that fails it is still kept, padded.
  EXPECT_EQ(after,
            "Project k#5 := k#0\n"
            "  HashJoin left on k#0 = uk#3 filter (v#2 > 1)\n"
            "    Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "    Filter (name#4 == \"a\")\n"
            "      Scan u (1 files) columns=[uk#3, name#4] pushdown=(name#4 == \"a\")\n");
}

TEST_F(FilterPushdownTest, ThroughAProjectionOntoTheScan) {
  std::string before;
  const std::string after =
      Pushed("select * from (select k as a, v * 2 as b from t) s where b > 10 and a < 5", &before);
  EXPECT_EQ(before,
            "Project a#5 := a#3, b#6 := b#4\n"
            "  Filter ((b#4 > 10) and (a#3 < 5))\n"
            "    Project a#3 := k#0, b#4 := multiply_checked(v#2, 2)\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2]\n");
  EXPECT_EQ(after,
            "Project a#5 := a#3, b#6 := b#4\n"
            "  Project a#3 := k#0, b#4 := multiply_checked(v#2, 2)\n"
            "    Filter ((multiply_checked(v#2, 2) > 10) and (k#0 < 5))\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2] "
            "pushdown=((multiply_checked(v#2, 2) > 10) and (k#0 < 5))\n");
}

TEST_F(FilterPushdownTest, KeyConditionsThroughAnAggregate) {
  // The condition on the grouping key goes below both phases; the one on the sum stays.
  EXPECT_EQ(Pushed("select * from (select g, sum(v) as s from t group by g) x "
                   "where g = 'a' and s > 1"),
            "Project g#6 := g#4, s#7 := s#5\n"
            "  Filter (s#5 > 1)\n"
            "    Project g#4 := g#1, s#5 := __agg3\n"
            "      FinalAggregate keys=[g#1] aggregates=[__agg3 := sum(__p3)]\n"
            "        PartialAggregate keys=[g#1] aggregates=[__p3 := sum(__in3)]\n"
            "          Project g#1 := g#1, __in3 := v#2\n"
            "            Filter (g#1 == \"a\")\n"
            "              Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(g#1 == \"a\")\n");
  // Over no keys, nothing goes below: the aggregate's one row is made from no rows too.
  const std::string sql = "select * from (select sum(v) as s from t) x where s > 1";
  std::string before;
  EXPECT_EQ(Pushed(sql, &before), before);
}

// A WITH query read twice is computed once (exec/shared_subplans.h): where every reading has
// conditions on its keys, their OR goes into the copies (the same in each, so still computed
// once) and each reading keeps its own above; where one reading has none, nothing goes in.
TEST_F(FilterPushdownTest, IntoAWithQueryReadTwiceTheOrOfItsReadingsConditions) {
  const std::string with = "with s as (select g, sum(v) as total from t group by g) ";
  const std::string both = Pushed(with +
                                  "select a.total, b.total from s a join s b on a.total = b.total "
                                  "where a.g = 'x' and b.g = 'y'");
  EXPECT_NE(both.find("pushdown=((g#1 == \"x\") or (g#1 == \"y\"))"), std::string::npos) << both;
  EXPECT_NE(both.find("pushdown=((g#7 == \"x\") or (g#7 == \"y\"))"), std::string::npos) << both;
  EXPECT_NE(both.find("    Filter (g#4 == \"x\")\n      Project g#4 := g#1"), std::string::npos)
      << both;
  const std::string one = Pushed(with +
                                 "select a.total, b.total from s a join s b on a.total = b.total "
                                 "where a.g = 'x'");
  EXPECT_EQ(one.find("pushdown="), std::string::npos) << one;
  EXPECT_NE(one.find("Filter (g#"), std::string::npos) << one;
  const std::string joined = Pushed(
      "with s as (select t2.v as w, sum(t.v) as total from t join t t2 on t2.g = t.g "
      "join u on t.k = uk group by t2.v) "
      "select a.total, b.total from s a join s b on a.total = b.total where a.w = 1 and b.w = 2");
  // Each copy would be filtered only from its second join on (t2's v): they stay shared, each
  // keeps its own condition above it, and both read only the rows either keeps, the same in each.
  EXPECT_NE(joined.find("    Filter (w#9 == 1)\n      Project w#9 := v#5"), std::string::npos)
      << joined;
  EXPECT_NE(joined.find("pushdown=((v#5 == 1) or (v#5 == 2))"), std::string::npos) << joined;
  EXPECT_NE(joined.find("pushdown=((v#16 == 1) or (v#16 == 2))"), std::string::npos) << joined;
}

// Copies of a WITH query that share their computation keep sharing it once the OR of their
// conditions is below each: the same rows, so still one computation.
TEST_F(FilterPushdownTest, CopiesFilteredByTheOrOfTheirConditionsStayOneComputation) {
  BoundQuery q = BindForTest(
      "with s as (select t2.v as w, t2.k as k2, sum(t.v) as total from t join t t2 on t2.g = t.g "
      "join u on t.k = uk group by t2.v, t2.k) "
      "select a.total, b.total, c.total from s a, s b, s c where a.total = b.total "
      "and b.total = c.total and a.w = 1 and a.k2 > 3 and b.w = 2 and c.w in (5, 6)");
  ASSERT_NE(q.plan, nullptr);
  PushDownFilters(q.plan.get());
  const std::string plan = q.plan->Explain();
  const auto groups = exec::RepeatedAggregates(*q.plan, [](const PlanNode&) { return false; });
  ASSERT_EQ(groups.size(), 1u) << plan;
  EXPECT_EQ(groups[0].size(), 3u) << plan;
  for (const char* part :
       {"pushdown=((is_in(v#5, ", "or (v#5 == 2)) or ((v#5 == 1) and (k#3 > 3)))"}) {
    EXPECT_NE(plan.find(part), std::string::npos) << part << "\n" << plan;
  }
  // One copy without a condition: every copy reads every row, as before.
  BoundQuery r = BindForTest(
      "with s as (select t2.v as w, sum(t.v) as total from t join t t2 on t2.g = t.g "
      "join u on t.k = uk group by t2.v) "
      "select a.total, b.total from s a, s b where a.total = b.total and a.w = 1");
  ASSERT_NE(r.plan, nullptr);
  PushDownFilters(r.plan.get());
  EXPECT_EQ(r.plan->Explain().find(" or "), std::string::npos) << r.plan->Explain();
  // A reading's condition that could fail on another reading's rows (a division by a key) is
  // not one of its conditions: that reading has none, and nothing goes in.
  BoundQuery f = BindForTest(
      "with s as (select t2.k as k2, sum(t.v) as total from t join t t2 on t2.g = t.g "
      "join u on t.k = uk group by t2.k) "
      "select a.total, b.total from s a, s b where a.total = b.total and 10 / a.k2 > 1 "
      "and b.k2 = 2");
  ASSERT_NE(f.plan, nullptr);
  PushDownFilters(f.plan.get());
  EXPECT_EQ(f.plan->Explain().find(" or "), std::string::npos) << f.plan->Explain();
}

TEST_F(FilterPushdownTest, BelowSemiJoinsAndScalarSubqueryJoins) {
  EXPECT_EQ(Pushed("select k from t where k in (select uk from u) and v > 1"),
            "Project k#6 := k#0\n"
            "  HashJoin semi on k#0 = uk#5\n"
            "    Filter (v#2 > 1)\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(v#2 > 1)\n"
            "    Project uk#5 := uk#3\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n");
  // v > (the maximum) reads the subquery's result and stays above the join that brings it (the
  // null-padded side of a left join); k > 1 goes down through the constant key's projection.
  EXPECT_EQ(Pushed("select k from t where v > (select max(v) from t) and k > 1"),
            "Project k#10 := k#0\n"
            "  Filter (v#2 > max#7)\n"
            "    HashJoin left on one#8 = one#9\n"
            "      Project (input columns), one#8 := 1\n"
            "        Filter (k#0 > 1)\n"
            "          Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(k#0 > 1)\n"
            "      Project (input columns), one#9 := 1\n"
            "        Project max#7 := __agg6\n"
            "          FinalAggregate keys=[] aggregates=[__agg6 := max(__p6)]\n"
            "            PartialAggregate keys=[] aggregates=[__p6 := max(__in6)]\n"
            "              Project __in6 := v#5\n"
            "                Scan t (1 files) columns=[k#3, g#4, v#5]\n");
}

TEST_F(FilterPushdownTest, AConditionOnNoColumnStaysWhereItWasWritten) {
  EXPECT_EQ(Pushed("select k from t where 1 = 0"),
            "Project k#3 := k#0\n"
            "  Filter false\n"
            "    Scan t (1 files) columns=[k#0, g#1, v#2]\n");
  EXPECT_EQ(Pushed("select k from t where k > 2 and 1 = 0"),
            "Project k#3 := k#0\n"
            "  Filter false\n"
            "    Filter (k#0 > 2)\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(k#0 > 2)\n");
}

TEST_F(FilterPushdownTest, ATrueConditionGoes) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  BoundQuery q = BindForTest("select k from t");
  auto filter = std::make_unique<PlanNode>();
  filter->kind = PlanNode::Kind::kFilter;
  filter->predicate = cp::literal(true);
  filter->input = std::move(q.plan->input);
  q.plan->input = std::move(filter);
  PushDownFilters(q.plan.get());
  EXPECT_EQ(q.plan->Explain(),
            "Project k#3 := k#0\n"
            "  Scan t (1 files) columns=[k#0, g#1, v#2]\n");
}

TEST_F(FilterPushdownTest, AConditionOnAJoinKeyHoldsOnTheOtherSidesKey) {
  // The left join keeps t's rows, and u's rows other than uk = 5 could only have matched rows
  // k = 5 drops.
  EXPECT_EQ(Pushed("select k, name from t left join u on k = uk where k = 5"),
            "Project k#5 := k#0, name#6 := name#4\n"
            "  HashJoin left on k#0 = uk#3\n"
            "    Filter (k#0 == 5)\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(k#0 == 5)\n"
            "    Filter (uk#3 == 5)\n"
            "      Scan u (1 files) columns=[uk#3, name#4] pushdown=(uk#3 == 5)\n");
  // An inner join carries it from either side.
  EXPECT_EQ(Pushed("select k from t join u on k = uk where uk > 3"),
            "Project k#5 := k#0\n"
            "  HashJoin inner on k#0 = uk#3\n"
            "    Filter (k#0 > 3)\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(k#0 > 3)\n"
            "    Filter (uk#3 > 3)\n"
            "      Scan u (1 files) columns=[uk#3, name#4] pushdown=(uk#3 > 3)\n");
  // Through a grouping on the key, and not onto the preserved side from the padded one.
  EXPECT_EQ(Pushed("select k, c, name from (select k, count(*) as c from t group by k) a "
                   "left join u on k = uk where k < 3 and name = 'x'"),
            "Project k#8 := k#4, c#9 := c#5, name#10 := name#7\n"
            "  Filter (name#7 == \"x\")\n"
            "    HashJoin left on k#4 = uk#6\n"
            "      Project k#4 := k#0, c#5 := __agg3\n"
            "        FinalAggregate keys=[k#0] aggregates=[__agg3 := sum(__p3)]\n"
            "          PartialAggregate keys=[k#0] aggregates=[__p3 := count_all()]\n"
            "            Project k#0 := k#0\n"
            "              Filter (k#0 < 3)\n"
            "                Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(k#0 < 3)\n"
            "      Filter (uk#6 < 3)\n"
            "        Scan u (1 files) columns=[uk#6, name#7] pushdown=(uk#6 < 3)\n");
  // Into a NOT EXISTS subquery too: rows it drops could only have matched rows k = 5 drops.
  EXPECT_EQ(Pushed("select k from t where not exists (select 1 from u where uk = k) and k = 5"),
            "Project k#5 := k#0\n"
            "  HashJoin anti on k#0 = uk#3\n"
            "    Filter (k#0 == 5)\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(k#0 == 5)\n"
            "    Filter (uk#3 == 5)\n"
            "      Scan u (1 files) columns=[uk#3, name#4] pushdown=(uk#3 == 5)\n");
  // Not a condition that could fail on u's rows, which the query never evaluated it on.
  EXPECT_EQ(
      Pushed("select k from t join u on k = uk where 100 / k > 1"),
      "Project k#5 := k#0\n"
      "  HashJoin inner on k#0 = uk#3\n"
      "    Filter (divide_checked(100, k#0) > 1)\n"
      "      Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(divide_checked(100, k#0) > 1)\n"
      "    Scan u (1 files) columns=[uk#3, name#4]\n");
  // Not between keys of different types (nor from a float key, where -0.0 = 0.0).
  EXPECT_EQ(Pushed("select k from t join u on v = uk where v = 5"),
            "Project k#5 := k#0\n"
            "  HashJoin inner on v#2 = uk#3\n"
            "    Filter (v#2 == 5)\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(v#2 == 5)\n"
            "    Scan u (1 files) columns=[uk#3, name#4]\n");
}

}  // namespace
}  // namespace sluice::sql
