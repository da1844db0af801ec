// The optimizer's passes on plan text: small queries bound over tables that have files but are
// never read, and the EXPLAIN text before and after each pass. No data, no Python.
#include "sql/optimizer/optimizer.h"

#include <arrow/acero/options.h>
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <sstream>

#include "exec/plan_executor.h"
#include "exec/shared_subplans.h"
#include "plan/stage_shape.h"
#include "sql/binder.h"
#include "sql/optimizer/aggregate_reduction.h"
#include "sql/optimizer/bind_testing.h"
#include "sql/optimizer/column_pruning.h"
#include "sql/optimizer/filter_pushdown.h"
#include "sql/optimizer/physical_choices.h"
#include "sql/sql_parser.h"
#include "storage/object_store.h"

namespace sluice::sql {
namespace {

namespace ac = arrow::acero;

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

TEST_F(OptimizerTest, ColumnPruningDropsAScanFiltersOwnColumnsBeforeAJoinOrAggregate) {
  // name is read by u's filter only, g by t's only: neither reaches the join or the aggregate.
  auto q = Bind(
      "select k, sum(v) from t, u where k = uk and name = 'x' and g <> 'y' and v < 5 group by k");
  PushDownFilters(q.plan.get());
  PruneColumns(q.plan.get());
  const std::string plan = q.plan->Explain();
  EXPECT_NE(plan.find("          Project uk#3 := uk#3\n"
                      "            Filter (name#4 == \"x\")\n"),
            std::string::npos)
      << plan;
  EXPECT_NE(plan.find("          Project k#0 := k#0, v#2 := v#2\n"
                      "            Filter ((g#1 != \"y\") and (v#2 < 5))\n"),
            std::string::npos)
      << plan;
  // A column a filter reads that the join also reads stays.
  auto kept = Bind("select name from t, u where k = uk and name = 'x'");
  PushDownFilters(kept.plan.get());
  PruneColumns(kept.plan.get());
  EXPECT_EQ(kept.plan->Explain().find("Project uk"), std::string::npos) << kept.plan->Explain();
}

TEST_F(OptimizerTest, AnAggregateReadTwiceIsFoundOnceUnderOtherNames) {
  // Without the last pass, which makes scalar aggregates over one table copies on purpose
  // (scalar_aggregate_merging_test.cc).
  std::vector<Pass> passes = DefaultPasses();
  passes.pop_back();
  ASSERT_EQ(DefaultPasses().back().name, "scalar_aggregate_merging");
  auto repeated = [&](const std::string& sql) {
    auto q = BindLogicalForTest(sql);
    EXPECT_TRUE(Optimize(q.plan.get(), passes).ok());
    size_t places = 0;
    const auto groups = exec::RepeatedAggregates(*q.plan, [](const PlanNode&) { return false; });
    for (const auto& g : groups) places += g.size();
    return std::make_pair(groups.size(), places);
  };
  // A WITH query read twice: bound twice, under other column names, yet the same rows.
  EXPECT_EQ(repeated("with s as (select k, sum(v) as total from t where g <> 'x' group by k) "
                     "select a.k from s a, s b where a.k = b.k + 1 and a.total > b.total"),
            std::make_pair(size_t{1}, size_t{2}));
  EXPECT_EQ(repeated("with s as (select k, sum(v) as total from t group by k) select "
                     "(select max(total) from s), (select min(total) from s), count(*) from s"),
            std::make_pair(size_t{1}, size_t{3}));
  // Not the same: another literal, another aggregate, the same aggregates in another order.
  EXPECT_EQ(repeated("select (select count(*) from t where g = 'a'), "
                     "(select count(*) from t where g = 'b')"),
            std::make_pair(size_t{0}, size_t{0}));
  EXPECT_EQ(repeated("select (select sum(v) from t), (select max(v) from t)"),
            std::make_pair(size_t{0}, size_t{0}));
  EXPECT_EQ(repeated("select (select sum(v) - min(k) from t), (select min(k) - sum(v) from t)"),
            std::make_pair(size_t{0}, size_t{0}));
  // One table scanned whole and the same grouped twice: only the aggregates are shared.
  EXPECT_EQ(repeated("select count(*) from t a, t b where a.k = b.k"),
            std::make_pair(size_t{0}, size_t{0}));
  // Each grouping of a ROLLUP regroups the finest one, which is computed once; also over a
  // UNION ALL.
  EXPECT_EQ(repeated("select k, g, sum(v), count(*), min(g) from t where v > 1 "
                     "group by rollup(k, g)"),
            std::make_pair(size_t{1}, size_t{3}));
  EXPECT_EQ(repeated("select k, avg(v) from (select k, v from t union all "
                     "select uk, 1.5 from u) x group by cube(k)"),
            std::make_pair(size_t{1}, size_t{2}));
  // A distinct count cannot be regrouped: each grouping counts its own rows.
  EXPECT_EQ(repeated("select k, count(distinct g) from t group by rollup(k)"),
            std::make_pair(size_t{0}, size_t{0}));
}

TEST_F(OptimizerTest, TheFinestGroupingOfARollupIsNotRegrouped) {
  // The finest grouping's rows are the shared aggregate's, one per key already: no aggregate
  // regroups an aggregate by the same keys. The coarser groupings still regroup it.
  auto q = Bind("select k, g, sum(v), count(*), min(g) from t group by rollup(k, g)");
  const std::string plan = q.plan->Explain();
  std::vector<std::string> lines;
  for (size_t at = 0; at < plan.size();) {
    const size_t end = plan.find('\n', at);
    lines.push_back(plan.substr(at, end - at));
    at = end == std::string::npos ? plan.size() : end + 1;
  }
  auto keys_of = [](const std::string& line, const std::string& kind) -> std::string {
    const size_t at = line.find(kind + " keys=[");
    if (at == std::string::npos) return "";
    return line.substr(at + kind.size(), line.find(']', at) - at - kind.size());
  };
  int finest = 0, regroups = 0;
  for (size_t i = 0; i + 2 < lines.size(); ++i) {
    const std::string final_keys = keys_of(lines[i], "FinalAggregate");
    if (final_keys.empty() || keys_of(lines[i + 1], "PartialAggregate") != final_keys) continue;
    const std::string below = keys_of(lines[i + 2], "FinalAggregate");
    if (below.empty()) continue;  // the finest aggregate itself, over its input
    EXPECT_NE(below, final_keys) << "a regroup by the same keys:\n" << plan;
    ++regroups;
    if (below.find("k#0, g#1") != std::string::npos) ++finest;
  }
  EXPECT_EQ(regroups, 2) << plan;  // by k, and by nothing
  EXPECT_EQ(finest, 2) << plan;
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

TEST_F(OptimizerTest, ColumnPruningNarrowsAJoinBelowAnotherJoin) {
  // The lower join's key k is read by nothing above it: a project drops it there, which the
  // executor makes that join's own output. The upper join, under a filter, keeps its columns.
  auto q =
      Bind("select name, t2.v from t join u on t.k = uk join t t2 on t2.k = uk where t2.v > 0");
  PruneColumns(q.plan.get());
  EXPECT_EQ(q.plan->Explain(),
            "Project name#8 := name#4, v#9 := v#7\n"
            "  Filter (v#7 > 0)\n"
            "    HashJoin inner on uk#3 = k#5\n"
            "      Project uk#3 := uk#3, name#4 := name#4\n"
            "        HashJoin inner on k#0 = uk#3\n"
            "          Scan t (1 files) columns=[k#0]\n"
            "          Scan u (1 files) columns=[uk#3, name#4]\n"
            "      Scan t (1 files) columns=[k#5, v#7]\n");
}

TEST_F(OptimizerTest, AJoinBuildingOnAWholeTablePushesNoBloomFilter) {
  // The hash join's options as the executor makes them, for the one join of `sql`.
  auto join_options = [&](const std::string& sql) -> std::optional<ac::HashJoinNodeOptions> {
    auto q = Bind(sql);
    PushDownFilters(q.plan.get());
    PruneColumns(q.plan.get());
    // A table without a store is refused, not dereferenced.
    auto storeless = exec::ToDeclaration(*q.plan);
    EXPECT_FALSE(storeless.ok());
    EXPECT_NE(storeless.status().message().find("has no store"), std::string::npos)
        << storeless.status().ToString();
    // The declarations name the files; nothing opens them.
    auto store = storage::ObjectStore::Open("file:///nonexistent");
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return std::nullopt;
    for (const PlanNode* scan : plan::ScansOf(*q.plan)) scan->table->store = *store;
    auto decl = exec::ToDeclaration(*q.plan);
    EXPECT_TRUE(decl.ok()) << decl.status().ToString();
    if (!decl.ok()) return std::nullopt;
    std::vector<const ac::Declaration*> pending = {&*decl};
    while (!pending.empty()) {
      const ac::Declaration* d = pending.back();
      pending.pop_back();
      if (d->factory_name == "hashjoin") {
        return static_cast<const ac::HashJoinNodeOptions&>(*d->options);
      }
      for (const auto& input : d->inputs) {
        if (const auto* below = std::get_if<ac::Declaration>(&input)) pending.push_back(below);
      }
    }
    ADD_FAILURE() << "no hash join in " << sql;
    return std::nullopt;
  };
  // u, hashed, is all of its table: every key of t that refers to it matches.
  auto whole = join_options("select name, v from t join u on k = uk");
  ASSERT_TRUE(whole.has_value());
  EXPECT_TRUE(whole->disable_bloom_filter);
  EXPECT_TRUE(IsWholeTable(*Bind("select uk from u").plan));
  // A filtered side keeps its filter, which may drop rows below.
  auto filtered = join_options("select name, v from t join u on k = uk where name = 'x'");
  ASSERT_TRUE(filtered.has_value());
  EXPECT_FALSE(filtered->disable_bloom_filter);
  // So does an aggregate, and a map stage's share of a table.
  auto grouped = join_options("select v from t join (select uk from u group by uk) g on k = g.uk");
  ASSERT_TRUE(grouped.has_value());
  EXPECT_FALSE(grouped->disable_bloom_filter);
  auto split = Bind("select uk from u");
  PlanNode* scan = split.plan.get();
  while (scan->input != nullptr) scan = scan->input.get();
  ASSERT_EQ(scan->kind, PlanNode::Kind::kScan);
  scan->split = true;
  EXPECT_FALSE(IsWholeTable(*split.plan));
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
  EXPECT_EQ(ran, (std::vector<std::string>{
                     "window_subqueries", "decorrelate", "outer_join_simplification",
                     "outer_join_conditions", "join_order", "constant_folding", "filter_pushdown",
                     "column_pruning", "aggregate_reduction", "build_sides", "constant_group_keys",
                     "scan_batch_rows", "scalar_aggregate_merging"}));
  auto statement = ParseStatement(sql);
  ASSERT_TRUE(statement.ok());
  auto selected = BindSelect(std::get<SelectStatement>(*statement).select, sql, TestTables());
  ASSERT_TRUE(selected.ok()) << selected.status().ToString();
  EXPECT_EQ(Scans(*selected->plan), Scans(*q.plan));
  EXPECT_EQ(selected->plan->Explain(), q.plan->Explain());
}

// The semi joins the aggregate_reduction pass added to `plan`, a line each.
std::string Reductions(const PlanNode& plan) {
  std::string out;
  std::istringstream lines(plan.Explain());
  for (std::string line; std::getline(lines, line);) {
    if (line.find("__reduce") != std::string::npos)
      out += line.substr(line.find_first_not_of(' ')) + "\n";
  }
  return out;
}

// Bound, with filters pushed and columns pruned, as the pass finds plans.
BoundQuery Prepared(const std::string& sql, int64_t t_rows, int64_t u_rows) {
  auto q = BindForTest(sql, t_rows, u_rows);
  if (q.plan == nullptr) return q;
  PushDownFilters(q.plan.get());
  PruneColumns(q.plan.get());
  return q;
}

TEST_F(OptimizerTest, AggregateReductionSemiJoinsAGroupedSideToFilteredKeys) {
  // A correlated subquery's aggregate over 1M rows, grouped by the key that 100 filtered rows
  // of u ask for: t is reduced to u's keys before it is grouped.
  auto q =
      Prepared("select name from u where name <> 'x' and uk > (select avg(v) from t where k = uk)",
               1'000'000, 100);
  ReduceAggregatesByJoins(q.plan.get());
  // The reducer is a copy of the filtered scan of u, under the partial aggregate.
  const std::string plan = q.plan->Explain();
  const std::string reduced =
      "          PartialAggregate keys=[k#2] aggregates=[__p5s := sum(__in5), __p5c := "
      "count(__in5)]\n"
      "            HashJoin semi on k#2 = __reduce0_uk#0\n"
      "              Project k#2 := k#2, __in5 := v#4\n"
      "                Scan t (1 files) columns=[k#2, v#4]\n"
      "              Project __reduce0_uk#0 := uk#0\n"
      "                Filter (name#1 != \"x\")\n"
      "                  Scan u (1 files) columns=[uk#0, name#1] pushdown=(name#1 != \"x\")\n";
  EXPECT_NE(plan.find(reduced), std::string::npos) << plan;

  // An inner join with a derived table grouped on the join key, either way round.
  auto derived = Prepared(
      "select name, s from u join (select k, g, sum(v) as s from t group by k, g) a on uk = k "
      "where name = 'n'",
      1'000'000, 100);
  ReduceAggregatesByJoins(derived.plan.get());
  EXPECT_EQ(Reductions(*derived.plan),
            "HashJoin semi on k#2 = __reduce0_uk#0\n"
            "Project __reduce0_uk#0 := uk#0\n");
}

TEST_F(OptimizerTest, AggregateReductionGoesBelowTheJoinsUnderTheAggregate) {
  // The grouped key comes from t, joined to u2 under the aggregate: the semi join drops t's rows
  // before that join, not the joined rows after it.
  auto q = Prepared(
      "select u.name, a.s from u join (select t.k, sum(t.v) as s from t join u u2 on t.k = u2.uk "
      "group by t.k) a on u.uk = a.k where u.name = 'n'",
      1'000'000, 100);
  ReduceAggregatesByJoins(q.plan.get());
  EXPECT_EQ(
      q.plan->Explain(),
      "Project name#10 := name#1, s#11 := s#9\n"
      "  HashJoin inner on k#8 = uk#0\n"
      "    Project k#8 := k#2, s#9 := __agg7\n"
      "      FinalAggregate keys=[k#2] aggregates=[__agg7 := sum(__p7)]\n"
      "        PartialAggregate keys=[k#2] aggregates=[__p7 := sum(__in7)]\n"
      "          Project k#2 := k#2, __in7 := v#4\n"
      "            HashJoin inner on k#2 = uk#5\n"
      "              HashJoin semi on k#2 = __reduce0_uk#0\n"
      "                Scan t (1 files) columns=[k#2, v#4]\n"
      "                Project __reduce0_uk#0 := uk#0\n"
      "                  Filter (name#1 == \"n\")\n"
      "                    Scan u (1 files) columns=[uk#0, name#1] pushdown=(name#1 == \"n\")\n"
      "              Scan u (1 files) columns=[uk#5]\n"
      "    Filter (name#1 == \"n\")\n"
      "      Scan u (1 files) columns=[uk#0, name#1] pushdown=(name#1 == \"n\")\n");
}

TEST_F(OptimizerTest, AggregateReductionOnlyWhereNoResultCanChange) {
  const std::vector<std::string> unchanged = {
      // The other side filters nothing: a reducer would be all of u.
      "select name, s from u join (select k, sum(v) as s from t group by k) a on uk = k",
      // The aggregate is the side a left join keeps.
      "select k, s, name from (select k, sum(v) as s from t group by k) a left join u "
      "on k = uk and name = 'n'",
      // A full join keeps both sides.
      "select k, s, name from (select k, sum(v) as s from t group by k) a full join "
      "(select * from u where name = 'n') b on k = uk",
      // The join key is not a group key (it is an aggregate).
      "select name from u join (select g, max(k) as m from t group by g) a on uk = m "
      "where name = 'n'",
      // Grouping sets: a union of aggregates, whose rolled-up rows cover other keys.
      "select name from u join (select k, sum(v) as s from t group by rollup (k)) a on uk = k "
      "where name = 'n'",
  };
  for (const auto& sql : unchanged) {
    auto q = Prepared(sql, 1'000'000, 100);
    ASSERT_NE(q.plan, nullptr) << sql;
    const std::string before = q.plan->Explain();
    ReduceAggregatesByJoins(q.plan.get());
    EXPECT_EQ(q.plan->Explain(), before) << sql;
  }
  // A reducer must cost far less than what it saves: u of 500K rows against t of 1M is not.
  auto q = Prepared(
      "select name, s from u join (select k, sum(v) as s from t group by k) a "
      "on uk = k where name = 'n'",
      1'000'000, 500'000);
  const std::string before = q.plan->Explain();
  ReduceAggregatesByJoins(q.plan.get());
  EXPECT_EQ(q.plan->Explain(), before);
}

TEST_F(OptimizerTest, NoPlanIsAnInternalError) {
  const auto status = Optimize(nullptr, DefaultPasses());
  EXPECT_EQ(status.message(), "internal: optimizing no plan");
}

}  // namespace
}  // namespace sluice::sql
