// Grouping before a join on plan text: queries bound over t(k, g, v) and u(uk, name)
// (bind_testing.h), with filters pushed down and columns pruned as the pass finds plans.
#include "sql/optimizer/eager_aggregation.h"

#include <gtest/gtest.h>

#include "sql/optimizer/bind_testing.h"
#include "sql/optimizer/column_pruning.h"
#include "sql/optimizer/filter_pushdown.h"

namespace sluice::sql {
namespace {

// The plan of `sql` after the pass (t of `t_rows` rows, u of `u_rows`).
std::string Eager(const std::string& sql, int64_t t_rows = 1'000'000, int64_t u_rows = 100) {
  BoundQuery q = BindForTest(sql, t_rows, u_rows);
  if (q.plan == nullptr) return "";
  PushDownFilters(q.plan.get());
  PruneColumns(q.plan.get());
  AggregateBeforeJoins(q.plan.get());
  return q.plan->Explain();
}

std::string Unchanged(const std::string& sql, int64_t t_rows = 1'000'000, int64_t u_rows = 100) {
  BoundQuery q = BindForTest(sql, t_rows, u_rows);
  if (q.plan == nullptr) return "";
  PushDownFilters(q.plan.get());
  PruneColumns(q.plan.get());
  const std::string before = q.plan->Explain();
  AggregateBeforeJoins(q.plan.get());
  return q.plan->Explain() == before ? "" : q.plan->Explain();
}

TEST(EagerAggregationTest, TheFactSideIsGroupedByItsJoinKeyBeforeTheJoin) {
  // t's million rows become one per k before they meet u's names; above the join, the sums and
  // counts of those groups add up and their mins and maxes combine.
  EXPECT_EQ(Eager("select name, sum(v), count(*), min(k), max(v) from t join u on k = uk "
                  "group by name"),
            "Project name#9 := name#4, sum#10 := __agg5, count#11 := __agg6, min#12 := __agg7, "
            "max#13 := __agg8\n"
            "  FinalAggregate keys=[name#4] aggregates=[__agg5 := sum(__p5), __agg6 := sum(__p6), "
            "__agg7 := min(__p7), __agg8 := max(__p8)]\n"
            "    PartialAggregate keys=[name#4] aggregates=[__p5 := sum(__p5@pre), "
            "__p6 := sum(__p6@pre), __p7 := min(__p7@pre), __p8 := max(__p8@pre)]\n"
            "      Project name#4 := name#4, __p5@pre := __p5@pre, __p6@pre := __p6@pre, "
            "__p7@pre := __p7@pre, __p8@pre := __p8@pre\n"
            "        HashJoin inner on k#0 = uk#3\n"
            "          FinalAggregate keys=[k#0] aggregates=[__p5@pre := sum(__p5@eager), "
            "__p6@pre := sum(__p6@eager), __p7@pre := min(__p7@eager), "
            "__p8@pre := max(__p8@eager)] repeats_keys\n"
            "            PartialAggregate keys=[k#0] aggregates=[__p5@eager := sum(__in5), "
            "__p6@eager := count_all(), __p7@eager := min(__in7), __p8@eager := max(__in5)]\n"
            "              Project k#0 := k#0, __in5 := v#2, __in7 := k#0\n"
            "                Scan t (1 files) columns=[k#0, v#2]\n"
            "          Scan u (1 files) columns=[uk#3, name#4]\n");
}

TEST(EagerAggregationTest, GroupKeysOfTheFactSideAreGroupedBelowToo) {
  // An integer key of t's own (k % 7) is computed and grouped below the join, then passed up.
  const std::string plan =
      Eager("select name, k % 7 as m, sum(v) from t join u on k = uk group by name, k % 7");
  EXPECT_NE(plan.find("FinalAggregate keys=[group#5, k#0]"), std::string::npos) << plan;
  EXPECT_NE(plan.find("HashJoin inner on k#0 = uk#3\n          FinalAggregate"), std::string::npos)
      << plan;
}

TEST(EagerAggregationTest, CountStarAloneCountsTheSideThatScansMore) {
  const std::string plan = Eager("select name, count(*) from t join u on k = uk group by name");
  EXPECT_NE(plan.find("            PartialAggregate keys=[k#0] aggregates=[__p5@eager := "
                      "count_all()]\n"
                      "              Project k#0 := k#0\n"
                      "                Scan t"),
            std::string::npos)
      << plan;
}

TEST(EagerAggregationTest, OnlyWhereItCanShrinkTheJoinAndChangesNoResult) {
  for (const std::string sql : {
           // u is filtered: grouping t would keep groups the join then drops.
           "select name, sum(v) from t join u on k = uk where name <> 'x' group by name",
           // An aggregate reads both sides.
           "select name, sum(v + uk) from t join u on k = uk group by name",
           // DISTINCT needs the rows themselves.
           "select name, count(distinct v) from t join u on k = uk group by name",
           // A string key of t's own could keep nearly every row apart.
           "select name, g, sum(v) from t join u on k = uk group by name, g",
           // A key reading both sides.
           "select k + uk, sum(v) from t join u on k = uk group by k + uk",
           // A division by a column could fail on t's rows the join drops.
           "select name, sum(100 / v) from t join u on k = uk group by name",
           // Left join: u's unmatched rows must count nothing.
           "select name, sum(v) from u left join t on k = uk group by name",
       }) {
    EXPECT_EQ(Unchanged(sql), "") << sql;
  }
  // t scans under four times u's rows: grouping it first would shrink little.
  EXPECT_EQ(Unchanged("select name, sum(v) from t join u on k = uk group by name", 300, 100), "");
}

}  // namespace
}  // namespace sluice::sql
