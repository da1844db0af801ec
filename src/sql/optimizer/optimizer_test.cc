// The optimizer's passes on plan text: small queries bound over tables that have files but are
// never read, and the EXPLAIN text before and after each pass. No data, no Python.
#include "sql/optimizer/optimizer.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "sql/binder.h"
#include "sql/optimizer/bind_testing.h"
#include "sql/optimizer/column_pruning.h"
#include "sql/optimizer/filter_pushdown.h"
#include "sql/optimizer/physical_choices.h"
#include "sql/sql_parser.h"

namespace sluice::sql {
namespace {

class OptimizerTest : public ::testing::Test {
 protected:
  // t(k, g, v) with `t_rows` rows and u(uk, name) with `u_rows`.
  BoundQuery Bind(const std::string& sql, int64_t t_rows = 1000, int64_t u_rows = 100) {
    return BindForTest(sql, t_rows, u_rows);
  }

  // The scans' lines of `plan` (which show a batch size other than the default).
  static std::string Scans(const PlanNode& plan) {
    std::string out;
    std::istringstream lines(plan.Explain());
    for (std::string line; std::getline(lines, line);) {
      if (line.find("Scan ") != std::string::npos) out += line + "\n";
    }
    return out;
  }
};

TEST_F(OptimizerTest, ColumnPruningKeepsWhatFiltersAndProjectionsRead) {
  auto q = Bind("select k from t where v > 1");
  PushDownFilters(q.plan.get());
  EXPECT_EQ(q.plan->Explain(),
            "Project k#3 := k#0\n"
            "  Filter (v#2 > 1)\n"
            "    Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(v#2 > 1)\n");
  EXPECT_EQ(ColumnsRead(*q.plan), (std::set<std::string>{"k#0", "v#2"}));
  PruneColumns(q.plan.get());
  EXPECT_EQ(q.plan->Explain(),
            "Project k#3 := k#0\n"
            "  Filter (v#2 > 1)\n"
            "    Scan t (1 files) columns=[k#0, v#2] pushdown=(v#2 > 1)\n");
}

TEST_F(OptimizerTest, ColumnPruningLeavesCountStarItsFirstColumn) {
  auto q = Bind("select count(*) from t");
  PruneColumns(q.plan.get());
  EXPECT_EQ(q.plan->Explain(),
            "Project count#5 := __agg3\n"
            "  FinalAggregate keys=[] aggregates=[__agg3 := sum(__p3)]\n"
            "    PartialAggregate keys=[] aggregates=[__p3 := count_all()]\n"
            "      Project row#4 := true\n"
            "        Scan t (1 files) columns=[k#0]\n");
}

TEST_F(OptimizerTest, ColumnPruningKeepsJoinKeysAndAggregateInputs) {
  auto q = Bind("select name, sum(v) from t join u on k = uk group by name");
  PruneColumns(q.plan.get());
  EXPECT_EQ(q.plan->Explain(),
            "Project name#6 := name#4, sum#7 := __agg5\n"
            "  FinalAggregate keys=[name#4] aggregates=[__agg5 := sum(__p5)]\n"
            "    PartialAggregate keys=[name#4] aggregates=[__p5 := sum(__in5)]\n"
            "      Project name#4 := name#4, __in5 := v#2\n"
            "        HashJoin inner on k#0 = uk#3\n"
            "          Scan t (1 files) columns=[k#0, v#2]\n"
            "          Scan u (1 files) columns=[uk#3, name#4]\n");
}

TEST_F(OptimizerTest, ColumnPruningReachesIntoSubqueries) {
  auto q = Bind("select k from t where k in (select uk from u)");
  PruneColumns(q.plan.get());
  EXPECT_EQ(q.plan->Explain(),
            "Project k#6 := k#0\n"
            "  HashJoin semi on k#0 = uk#5\n"
            "    Scan t (1 files) columns=[k#0]\n"
            "    Project uk#5 := uk#3\n"
            "      Scan u (1 files) columns=[uk#3]\n");
}

TEST_F(OptimizerTest, ScanBatchRowsShrinkOnlyForLargeBuilds) {
  // A 100-row build side: scans keep PlanNode's default.
  auto small = Bind("select name from t join u on k = uk");
  EXPECT_LT(LargestBuildRows(*small.plan), kLargeBuildRows);
  ChooseScanBatchRows(small.plan.get());
  EXPECT_EQ(Scans(*small.plan),
            "    Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "    Scan u (1 files) columns=[uk#3, name#4]\n");
  // 500K rows on each side: one is built, and every scan reads smaller batches.
  auto large = Bind("select name from t join u on k = uk", 500'000, 500'000);
  EXPECT_GE(LargestBuildRows(*large.plan), kLargeBuildRows);
  ChooseScanBatchRows(large.plan.get());
  EXPECT_EQ(Scans(*large.plan),
            "    Scan t (1 files) columns=[k#0, g#1, v#2] batch_rows=32768\n"
            "    Scan u (1 files) columns=[uk#3, name#4] batch_rows=32768\n");
}

TEST_F(OptimizerTest, BuildSideNeedsTheOuterSideClearlySmaller) {
  EXPECT_TRUE(HashOuterSide(100, 401));
  EXPECT_FALSE(HashOuterSide(100, 400));  // a near tie hashes the other side
  EXPECT_FALSE(HashOuterSide(1000, 10));
}

TEST_F(OptimizerTest, DefaultPassesRunInOrderAndMatchBindSelect) {
  const std::string sql = "select name, sum(v) from t join u on k = uk group by name";
  auto q = BindLogicalForTest(sql);
  std::vector<std::string> ran;
  ASSERT_TRUE(Optimize(q.plan.get(), DefaultPasses(), &ran).ok());
  EXPECT_EQ(ran, (std::vector<std::string>{"decorrelate", "join_order", "constant_folding",
                                           "filter_pushdown", "column_pruning", "build_sides",
                                           "scan_batch_rows"}));
  auto statement = ParseStatement(sql);
  ASSERT_TRUE(statement.ok());
  auto selected = BindSelect(std::get<SelectStatement>(*statement).select, sql, TestTables());
  ASSERT_TRUE(selected.ok()) << selected.status().ToString();
  EXPECT_EQ(Scans(*selected->plan), Scans(*q.plan));
  EXPECT_EQ(selected->plan->Explain(), q.plan->Explain());
}

TEST_F(OptimizerTest, NoPlanIsAnInternalError) {
  const auto status = Optimize(nullptr, DefaultPasses());
  EXPECT_EQ(status.message(), "internal: optimizing no plan");
}

}  // namespace
}  // namespace sluice::sql
