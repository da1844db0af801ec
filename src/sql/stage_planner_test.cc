// The stage planner on plan text: which operators land in which stage, per query shape. The
// tables have files but are never read, so these tests need no data and no Python.
#include "sql/stage_planner.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <regex>

#include "plan/split_key_ranges.h"
#include "sql/binder.h"
#include "sql/sql_parser.h"

namespace sluice::sql {
namespace {

using plan::MakeNode;

std::shared_ptr<TableSource> Table(const std::string& name, int files,
                                   std::shared_ptr<arrow::Schema> schema, int64_t rows = 1000) {
  auto t = std::make_shared<TableSource>();
  t->name = name;
  t->format = "parquet";
  for (int i = 0; i < files; ++i) t->files.push_back(name + "/part-" + std::to_string(i));
  t->schema = schema;
  t->file_schema = schema;
  t->num_rows = rows;
  t->total_bytes = rows * 10;
  return t;
}

// Hand-built plans, for shapes the binder does not produce today: only their structure matters.
std::unique_ptr<PlanNode> ScanNode(const std::string& table, int64_t bytes) {
  auto n = MakeNode(PlanNode::Kind::kScan);
  auto t = std::make_shared<TableSource>();
  t->name = table;
  t->files = {table + "/part-0", table + "/part-1"};
  t->total_bytes = bytes;
  t->num_rows = bytes / 10;
  n->table = std::move(t);
  n->columns = {"k"};
  n->names = {table + ".k"};
  return n;
}

std::unique_ptr<PlanNode> JoinNode(JoinType type, std::unique_ptr<PlanNode> input,
                                   std::unique_ptr<PlanNode> right, bool build_input = false) {
  auto n = MakeNode(PlanNode::Kind::kJoin, std::move(input));
  n->right = std::move(right);
  n->join_type = type;
  n->left_keys = {"a.k"};
  n->right_keys = {"b.k"};
  n->build_input = build_input;
  return n;
}

// A DISTINCT (an aggregate needing all its rows) over `input`.
std::unique_ptr<PlanNode> Distinct(std::unique_ptr<PlanNode> input) {
  auto final_step =
      MakeNode(PlanNode::Kind::kAggregate, MakeNode(PlanNode::Kind::kAggregate, std::move(input)));
  final_step->final_phase = true;
  final_step->keys = {"a.k"};
  final_step->input->keys = {"a.k"};
  return final_step;
}

// One aggregate step that is no cut of its own (a scalar subquery's, say).
std::unique_ptr<PlanNode> Aggregate(std::unique_ptr<PlanNode> input) {
  auto n = MakeNode(PlanNode::Kind::kAggregate, std::move(input));
  n->keys = {"a.k"};
  return n;
}

// A grouped count (final over partial) over `input`: what the stage planner cuts.
std::unique_ptr<PlanNode> CountOver(std::unique_ptr<PlanNode> input) {
  auto root = Distinct(std::move(input));
  root->input->aggregates = {{"count_all", "", "__p"}};
  root->aggregates = {{"sum", "__p", "n"}};
  return root;
}

std::string TablesOf(const std::vector<const PlanNode*>& scans) {
  std::string out;
  for (const PlanNode* s : scans) out += (out.empty() ? "" : ",") + s->table->name;
  return out;
}

class StagePlannerTest : public ::testing::Test {
 protected:
  BoundQuery Bind(const std::string& sql) {
    auto statement = ParseStatement(sql);
    EXPECT_TRUE(statement.ok()) << statement.status().ToString();
    const auto& select = std::get<SelectStatement>(*statement);
    auto t =
        Table("t", 5,
              arrow::schema({arrow::field("k", arrow::int64()), arrow::field("g", arrow::utf8()),
                             arrow::field("v", arrow::float64())}),
              100000);
    auto u = Table(
        "u", 1,
        arrow::schema({arrow::field("uk", arrow::int64()), arrow::field("name", arrow::utf8())}));
    // Five times t's bytes, but its key column weighs a tenth of t.
    auto w = Table(
        "w", 1,
        arrow::schema({arrow::field("wk", arrow::int64()), arrow::field("wname", arrow::utf8())}),
        500000);
    w->column_bytes = {{"wk", 100000}, {"wname", 4900000}};
    // l and o hold their keys in key order (lk, ok and oi: each file a run of keys), as TPC-H's
    // lineitem and orders do; l's lp is in no order.
    auto l = Table(
        "l", 4,
        arrow::schema({arrow::field("lk", arrow::int64()), arrow::field("lp", arrow::int64()),
                       arrow::field("li", arrow::int32()), arrow::field("lv", arrow::float64())}),
        400000);
    l->row_group_int_ranges["lk"] = {{{1, 100}}, {{101, 200}}, {{201, 300}}, {{301, 400}}};
    l->row_group_int_ranges["li"] = l->row_group_int_ranges["lk"];
    l->row_group_int_ranges["lp"] = {{{1, 400}}, {{1, 400}}, {{1, 400}}, {{1, 400}}};
    l->row_group_bytes = {{1000000}, {1000000}, {1000000}, {1000000}};
    auto o =
        Table("o", 2,
              arrow::schema({arrow::field("ok", arrow::int64()), arrow::field("oi", arrow::int32()),
                             arrow::field("op", arrow::utf8())}),
              20000);
    o->row_group_int_ranges["ok"] = {{{1, 200}}, {{201, 400}}};
    o->row_group_int_ranges["oi"] = o->row_group_int_ranges["ok"];
    o->row_group_bytes = {{100000}, {100000}};
    auto bound =
        BindSelect(select.select, sql,
                   [&](const std::string& name) -> arrow::Result<std::shared_ptr<TableSource>> {
                     if (name == "t") return t;
                     if (name == "u") return u;
                     if (name == "w") return w;
                     if (name == "l") return l;
                     if (name == "o") return o;
                     return arrow::Status::Invalid("no table ", name);
                   });
    EXPECT_TRUE(bound.ok()) << bound.status().ToString();
    return std::move(*bound);
  }

  // The plan's lines without column ids: "Scan t ... [stage 1]" and so on.
  static std::vector<std::string> Lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

  // The stage marked on the first plan line that starts (after indentation) with `op`.
  static std::string StageOf(const std::string& text, const std::string& op) {
    for (const auto& line : Lines(text)) {
      const size_t at = line.find_first_not_of(' ');
      if (at != std::string::npos && line.compare(at, op.size(), op) == 0) {
        std::smatch m;
        if (std::regex_search(line, m, std::regex(R"(\[stage (\d+)\])"))) return m[1];
        return "none";
      }
    }
    return "missing";
  }
};

StagePlan Plan(const PlanNode& plan, int workers = 2,
               int64_t broadcast_limit = kDefaultBroadcastLimitBytes) {
  StageOptions options;
  options.workers = workers;
  options.broadcast_limit_bytes = broadcast_limit;
  return PlanStages(plan, options);
}

int FinalStages(const StagePlan& plan) {
  int n = 0;
  for (const Stage& s : plan.stages) n += s.role == StageRole::kFinal ? 1 : 0;
  return n;
}

TEST_F(StagePlannerTest, GroupedAggregateIsMapFinalAndDriver) {
  BoundQuery q = Bind("SELECT g, sum(v), count(*) FROM t WHERE k > 3 GROUP BY g ORDER BY g");
  StagePlan stages = Plan(*q.plan, 4);
  ASSERT_EQ(FinalStages(stages), 1);
  EXPECT_EQ(stages.stage_count(), 3);
  const std::string text = ExplainStages(*q.plan, stages);
  EXPECT_NE(text.find("distributed plan: 3 stages on 4 workers"), std::string::npos) << text;
  EXPECT_NE(text.find("stage 1 (map): 4 tasks over t's 5 files"), std::string::npos) << text;
  EXPECT_NE(text.find("into 4 partitions"), std::string::npos) << text;
  EXPECT_EQ(StageOf(text, "Scan t"), "1") << text;
  EXPECT_EQ(StageOf(text, "Filter"), "1") << text;
  EXPECT_EQ(StageOf(text, "PartialAggregate"), "1") << text;
  EXPECT_EQ(StageOf(text, "FinalAggregate"), "2") << text;
  EXPECT_EQ(StageOf(text, "Sort"), "3") << text;
}

TEST_F(StagePlannerTest, GlobalAggregateHasOnePartition) {
  BoundQuery q = Bind("SELECT count(*), avg(v) FROM t");
  StagePlan stages = Plan(*q.plan, 4);
  ASSERT_EQ(FinalStages(stages), 1);
  EXPECT_EQ(stages.stages[0].partitions, 1);
  EXPECT_EQ(stages.stages[1].tasks, 1);
  const std::string text = ExplainStages(*q.plan, stages);
  EXPECT_NE(text.find("hash on [] into 1 partitions"), std::string::npos) << text;
}

TEST_F(StagePlannerTest, CountDistinctPartitionsOnGroupKeysOnly) {
  BoundQuery q = Bind("SELECT g, count(DISTINCT k) FROM t GROUP BY g");
  StagePlan stages = Plan(*q.plan, 4);
  ASSERT_EQ(FinalStages(stages), 1);
  // The partial step groups on (g, k); the exchange must hash on g alone.
  EXPECT_EQ(stages.stages[0].root->keys.size(), 2u);
  EXPECT_EQ(stages.stages[0].output_keys.size(), 1u);
  // The final stage's inputs name the partial aggregate: its final one groups on g alone.
  const PlanNode* final_agg = stages.stages[1].root;
  while (!(final_agg->kind == PlanNode::Kind::kAggregate && final_agg->final_phase)) {
    final_agg = final_agg->input.get();
  }
  EXPECT_EQ(final_agg->keys.size(), 1u);
}

TEST_F(StagePlannerTest, TheFinalStageAppliesTheHavingAndTheSelectList) {
  // Each final task filters its own groups: the driver gathers only the groups kept.
  BoundQuery q =
      Bind("SELECT g, sum(v) * 2 AS twice FROM t GROUP BY g HAVING count(*) > 1 ORDER BY twice");
  StagePlan stages = Plan(*q.plan, 2);
  ASSERT_EQ(FinalStages(stages), 1);
  const std::string text = ExplainStages(*q.plan, stages);
  EXPECT_EQ(StageOf(text, "FinalAggregate"), "2") << text;
  EXPECT_EQ(StageOf(text, "Filter"), "2") << text;
  EXPECT_EQ(StageOf(text, "Sort"), "3") << text;
  ASSERT_EQ(stages.gathered.size(), 1u);
  EXPECT_EQ(stages.gathered[0].node, stages.stages[1].root);
  EXPECT_EQ(stages.stages[1].root->kind, PlanNode::Kind::kProject) << text;
  EXPECT_EQ(stages.stages[1].root->input->kind, PlanNode::Kind::kFilter) << text;
}

TEST_F(StagePlannerTest, AnAggregateReadTwiceIsCutOnce) {
  // A WITH query read twice is bound twice; its stages run once and the driver reads their
  // rows in both places.
  BoundQuery q = Bind(
      "WITH r AS (SELECT g, sum(v) AS s FROM t GROUP BY g) "
      "SELECT g, s FROM r WHERE s = (SELECT max(s) FROM r) ORDER BY g");
  StagePlan stages = Plan(*q.plan, 2);
  ASSERT_EQ(FinalStages(stages), 1) << ExplainStages(*q.plan, stages);
  ASSERT_EQ(stages.repeats.size(), 1u);
  ASSERT_EQ(stages.gathered.size(), 1u);
  const auto& [repeat, same] = stages.repeats[0];
  EXPECT_EQ(same, stages.gathered[0].node);
  EXPECT_NE(repeat, same);
  // Both are the grouped sum itself, not what sits above either.
  for (const PlanNode* n : {repeat, same}) {
    EXPECT_EQ(n->kind, PlanNode::Kind::kAggregate);
    EXPECT_TRUE(n->final_phase);
    EXPECT_EQ(n->keys.size(), 1u);
  }
  const std::string text = ExplainStages(*q.plan, stages);
  EXPECT_NE(text.find("[stage 2's rows, read again by the driver]"), std::string::npos) << text;
  EXPECT_NE(text.find("[not run: the rows of stage 2]"), std::string::npos) << text;
}

TEST_F(StagePlannerTest, AggregateOverJoinSplitsTheProbeSideAndBroadcastsTheRest) {
  BoundQuery q = Bind("SELECT name, sum(v) FROM t JOIN u ON k = uk GROUP BY name");
  StagePlan stages = Plan(*q.plan, 2);
  ASSERT_EQ(FinalStages(stages), 1) << stages.not_cut_reason;
  EXPECT_EQ(stages.stages[0].split->table->name, "t");
  EXPECT_EQ(TablesOf(stages.stages[0].broadcast), "u");
  const std::string text = ExplainStages(*q.plan, stages);
  // One task per worker: each re-reads the broadcast table.
  EXPECT_NE(text.find("stage 1 (map): 2 tasks over t's 5 files (split); broadcast by re-scan, "
                      "read whole by every task: u; exchange: hash on"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[stage 1] [split]"), std::string::npos) << text;
  EXPECT_NE(text.find("[stage 1] [broadcast]"), std::string::npos) << text;
  EXPECT_EQ(StageOf(text, "HashJoin"), "1") << text;
  EXPECT_EQ(StageOf(text, "Scan u"), "1") << text;
  EXPECT_EQ(StageOf(text, "FinalAggregate"), "2") << text;
}

TEST_F(StagePlannerTest, SemiAndAntiJoinsSplitTheKeptSide) {
  for (const char* sql : {"SELECT g, count(*) FROM t WHERE k IN (SELECT uk FROM u) GROUP BY g",
                          "SELECT g, count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE uk = "
                          "k) GROUP BY g"}) {
    BoundQuery q = Bind(sql);
    StagePlan stages = Plan(*q.plan, 4);
    ASSERT_EQ(FinalStages(stages), 1) << sql << ": " << stages.not_cut_reason;
    EXPECT_EQ(stages.stages[0].split->table->name, "t") << sql;
    EXPECT_EQ(TablesOf(stages.stages[0].broadcast), "u") << sql;
  }
}

// The probe (preserved, kept) side of every join type is split, whichever side is hashed.
TEST(StageSplitTest, EveryJoinTypeSplitsItsInputSide) {
  for (JoinType type : {JoinType::kInner, JoinType::kLeft, JoinType::kSemi, JoinType::kAnti}) {
    for (bool build_input : {false, true}) {
      auto plan =
          CountOver(JoinNode(type, ScanNode("big", 1000), ScanNode("small", 10), build_input));
      StagePlan stages = Plan(*plan, 4);
      ASSERT_EQ(FinalStages(stages), 1) << JoinTypeName(type) << " " << stages.not_cut_reason;
      EXPECT_EQ(stages.stages[0].split->table->name, "big");
      EXPECT_EQ(TablesOf(stages.stages[0].broadcast), "small");
      EXPECT_EQ(ScansOf(*stages.stages[0].root).size(), 2u);
    }
  }
}

// The build side of a left, semi or anti join is never split, even where the only other table
// cannot be: splitting `right` would keep, drop or null-pad each `input` row once per task. An
// inner join's may be, its probe side read whole by every task: each output row comes from one
// row of either side.
TEST(StageSplitTest, BuildSideIsNeverSplit) {
  {
    auto plan = CountOver(
        JoinNode(JoinType::kInner, Aggregate(ScanNode("small", 10)), ScanNode("big", 1000)));
    StagePlan stages = Plan(*plan);
    ASSERT_EQ(FinalStages(stages), 1) << stages.not_cut_reason;
    EXPECT_EQ(stages.stages[0].split->table->name, "big");
    EXPECT_EQ(TablesOf(stages.stages[0].broadcast), "small");
  }
  for (JoinType type : {JoinType::kLeft, JoinType::kSemi, JoinType::kAnti}) {
    auto plan = CountOver(JoinNode(type, Aggregate(ScanNode("small", 10)), ScanNode("big", 1000)));
    StagePlan stages = Plan(*plan);
    EXPECT_FALSE(stages.cut()) << JoinTypeName(type);
    EXPECT_EQ(stages.not_cut_reason,
              "no aggregate or window can be cut: no table below the aggregate can be split: each "
              "sits on a "
              "join's build side or below an aggregate");
  }
}

// A table below an aggregate inside the map subtree needs all of its rows.
TEST(StageSplitTest, NestedAggregateInputIsNeverSplit) {
  auto plan = CountOver(
      JoinNode(JoinType::kInner, Aggregate(ScanNode("big", 1000)), ScanNode("small", 10)));
  StagePlan stages = Plan(*plan);
  EXPECT_FALSE(stages.cut());
  EXPECT_NE(stages.not_cut_reason.find("no table below the aggregate can be split"),
            std::string::npos)
      << stages.not_cut_reason;
}

// A broadcast side may hold an aggregate: every task computes it over the whole table.
TEST(StageSplitTest, AggregateOnABroadcastSideIsReadWhole) {
  auto plan =
      CountOver(JoinNode(JoinType::kLeft, ScanNode("big", 1000), Distinct(ScanNode("small", 10))));
  StagePlan stages = Plan(*plan, 4);
  ASSERT_EQ(FinalStages(stages), 1) << stages.not_cut_reason;
  EXPECT_EQ(stages.stages[0].split->table->name, "big");
  EXPECT_EQ(TablesOf(stages.stages[0].broadcast), "small");
}

TEST(StageSplitTest, SortOrLimitBelowThePartialAggregateIsRefused) {
  for (auto kind : {PlanNode::Kind::kSort, PlanNode::Kind::kLimit}) {
    for (bool on_broadcast_side : {false, true}) {
      auto big = ScanNode("big", 1000);
      auto small = ScanNode("small", 10);
      if (on_broadcast_side) {
        small = MakeNode(kind, std::move(small));
      } else {
        big = MakeNode(kind, std::move(big));
      }
      auto plan = CountOver(JoinNode(JoinType::kInner, std::move(big), std::move(small)));
      StagePlan stages = Plan(*plan);
      EXPECT_FALSE(stages.cut());
      EXPECT_EQ(stages.not_cut_reason, std::string("no aggregate or window can be cut: a ") +
                                           (kind == PlanNode::Kind::kSort ? "sort" : "limit") +
                                           " below the partial aggregate");
      EXPECT_NE(ExplainStages(*plan, stages).find("  not cut: a "), std::string::npos);
    }
  }
}

// The largest table on a build side: splitting the probe side would have every task re-read
// the largest table whole, so the query runs in-process.
TEST(StageSplitTest, BroadcastOutweighingTheSplitIsRefused) {
  auto plan =
      CountOver(JoinNode(JoinType::kSemi, ScanNode("small", 10), ScanNode("big", 1000), true));
  StagePlan stages = Plan(*plan);
  EXPECT_FALSE(stages.cut());
  EXPECT_EQ(
      stages.not_cut_reason,
      "no aggregate or window can be cut: the tables every map task would re-read whole (big: 1000 "
      "bytes to read) outweigh the split table small (10 bytes), which is the largest that can be "
      "split");
  // Equal weights are still cut: a self-join of a table split on one side.
  auto even = CountOver(JoinNode(JoinType::kInner, ScanNode("left", 500), ScanNode("right", 500)));
  EXPECT_EQ(FinalStages(Plan(*even)), 1);
}

// Scans in pre-order, `input` before `right`: the order a map task's split_scan indexes.
TEST(StageSplitTest, ScansAreListedInPreOrder) {
  auto plan =
      JoinNode(JoinType::kInner, JoinNode(JoinType::kInner, ScanNode("a", 1), ScanNode("b", 1)),
               ScanNode("c", 1));
  EXPECT_EQ(TablesOf(ScansOf(*plan)), "a,b,c");
}

TEST_F(StagePlannerTest, NoAggregateIsNotCut) {
  BoundQuery q = Bind("SELECT k FROM t WHERE v > 1");
  StagePlan stages = Plan(*q.plan, 4);
  EXPECT_FALSE(stages.cut());
  EXPECT_EQ(stages.not_cut_reason, "the query has no aggregate or window to split");
}

TEST_F(StagePlannerTest, AggregateInSubqueryIsCutAndJoinStaysInDriver) {
  BoundQuery q =
      Bind("SELECT name, s FROM u JOIN (SELECT k, sum(v) AS s FROM t GROUP BY k) x ON uk = x.k");
  StagePlan stages = Plan(*q.plan, 4);
  ASSERT_EQ(FinalStages(stages), 1);
  const std::string text = ExplainStages(*q.plan, stages);
  EXPECT_EQ(StageOf(text, "HashJoin"), "3") << text;
  EXPECT_EQ(StageOf(text, "Scan u"), "3") << text;
  EXPECT_EQ(StageOf(text, "Scan t"), "1") << text;
  EXPECT_EQ(StageOf(text, "FinalAggregate"), "2") << text;
}

constexpr char kGroupedJoin[] =
    "SELECT g, count(*) FROM t JOIN (SELECT uk, count(*) AS c FROM u GROUP BY uk) x "
    "ON k = x.uk WHERE v < c GROUP BY g";

// A join with a grouped subquery on its group keys (TPC-H Q17's average per part): when the
// subquery's tables are not broadcast, its partials are hashed on the group keys and the probe
// side on the join keys, and one join stage runs the final aggregate and the join per
// partition. Behind a HAVING (which may keep few groups) the subquery is not co-partitioned.
TEST_F(StagePlannerTest, AJoinWithAGroupedSubqueryOnItsKeysRunsInOneJoinStage) {
  BoundQuery q = Bind(kGroupedJoin);
  StagePlan stages = Plan(*q.plan, 3, /*broadcast_limit=*/0);
  ASSERT_EQ(stages.stages.size(), 4u) << stages.not_cut_reason;
  const Stage& probe = stages.stages[0];
  const Stage& partials = stages.stages[1];
  const Stage& join = stages.stages[2];
  EXPECT_EQ(probe.split->table->name, "t");
  EXPECT_EQ(partials.split->table->name, "u");
  ASSERT_EQ(partials.root->kind, PlanNode::Kind::kAggregate);
  EXPECT_FALSE(partials.root->final_phase);
  EXPECT_EQ(partials.output_keys, partials.root->keys);
  EXPECT_FALSE(partials.one_row_per_key);
  EXPECT_EQ(join.role, StageRole::kJoin);
  ASSERT_EQ(join.inputs.size(), 2u);
  EXPECT_EQ(join.inputs[1].node, partials.root);
  EXPECT_EQ(stages.stages[3].role, StageRole::kFinal);
  const std::string text = ExplainStages(*q.plan, stages);
  EXPECT_EQ(StageOf(text, "HashJoin"), "3") << text;
  // The subquery's final aggregate runs in the join stage, below the join.
  int finals_in_join = 0;
  for (const auto& line : Lines(text)) {
    if (line.find("FinalAggregate") != std::string::npos &&
        line.find("[stage 3]") != std::string::npos) {
      ++finals_in_join;
    }
  }
  EXPECT_EQ(finals_in_join, 1) << text;

  BoundQuery having = Bind(
      "SELECT g, count(*) FROM t JOIN (SELECT uk, count(*) AS c FROM u GROUP BY uk "
      "HAVING count(*) > 1) x ON k = x.uk GROUP BY g");
  StagePlan broadcast = Plan(*having.plan, 3, /*broadcast_limit=*/0);
  for (const Stage& s : broadcast.stages) EXPECT_NE(s.role, StageRole::kJoin);
}

// A worker refuses a final aggregate below a join unless its partials are partitioned on
// exactly its keys, and a join of two partitions unless they are partitioned on its keys.
TEST_F(StagePlannerTest, AGroupedSideIsPartitionedOnlyOnItsOwnKeys) {
  BoundQuery q = Bind(kGroupedJoin);
  StagePlan stages = Plan(*q.plan, 3, /*broadcast_limit=*/0);
  ASSERT_EQ(stages.stages.size(), 4u) << stages.not_cut_reason;
  const Stage& join = stages.stages[2];
  std::map<const PlanNode*, std::vector<std::string>> inputs = {
      {join.inputs[0].node, stages.stages[0].output_keys},
      {join.inputs[1].node, stages.stages[1].output_keys}};
  EXPECT_EQ(StageShapeRefusal(*join.root, nullptr, inputs), "");
  inputs[join.inputs[1].node] = {"other#99"};
  EXPECT_EQ(StageShapeRefusal(*join.root, nullptr, inputs),
            "a final aggregate over partials not partitioned on its keys");
  inputs[join.inputs[1].node] = stages.stages[1].output_keys;
  inputs[join.inputs[0].node] = {"other#99"};
  EXPECT_EQ(StageShapeRefusal(*join.root, nullptr, inputs),
            "a join of two split sides that are not partitions on its own keys");
}

TEST_F(StagePlannerTest, MapTasksFollowFilesAndWorkers) {
  EXPECT_EQ(MapTaskCount(8, 4), 4);
  EXPECT_EQ(MapTaskCount(8, 2), 2);
  EXPECT_EQ(MapTaskCount(1, 4), 1);
  EXPECT_EQ(MapTaskCount(0, 4), 1);
}

// A build side above the broadcast limit: both sides are split in map stages of their own and
// hash-partitioned on the join keys, and the join runs once per partition.
TEST_F(StagePlannerTest, ABuildSideIsWeighedByTheColumnsItsScansRead) {
  // w's files outweigh t's five times; the one column a semi join reads of it, a tenth of t.
  auto broadcasts_w = [&](const std::string& sql) {
    BoundQuery q = Bind(sql);
    StagePlan stages = Plan(*q.plan, 2);
    EXPECT_FALSE(stages.stages.empty()) << sql << ": " << stages.not_cut_reason;
    for (const Stage& s : stages.stages) {
      if (TablesOf(s.broadcast).find('w') != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(broadcasts_w("SELECT g, count(*) FROM t WHERE k IN (SELECT wk FROM w) GROUP BY g"));
  EXPECT_TRUE(broadcasts_w(
      "SELECT g, count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM w WHERE wk = k) GROUP BY g"));
  // Reading wname too, w outweighs t: both sides are hash-partitioned.
  EXPECT_FALSE(
      broadcasts_w("SELECT g, count(*) FROM t JOIN w ON k = wk WHERE wname <> 'x' GROUP BY g"));
  // Below an aggregate, every task would recompute it over w's whole files.
  EXPECT_FALSE(broadcasts_w(
      "SELECT g, count(*) FROM t WHERE k IN (SELECT wk FROM w GROUP BY wk HAVING count(*) > 1) "
      "GROUP BY g"));
}

TEST_F(StagePlannerTest, LargeBuildSideIsHashPartitionedWithTheProbeSide) {
  for (const char* sql :
       {"SELECT name, sum(v) FROM t JOIN u ON k = uk GROUP BY name",
        "SELECT g, count(*) FROM t WHERE k IN (SELECT uk FROM u) GROUP BY g",
        "SELECT g, count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE uk = k) GROUP BY g",
        "SELECT g, count(name) FROM t LEFT JOIN u ON k = uk GROUP BY g"}) {
    BoundQuery q = Bind(sql);
    StagePlan stages = Plan(*q.plan, 3, /*broadcast_limit=*/0);
    ASSERT_EQ(stages.stages.size(), 4u) << sql << ": " << stages.not_cut_reason;
    const Stage& t = stages.stages[0];
    const Stage& u = stages.stages[1];
    const Stage& join = stages.stages[2];
    EXPECT_EQ(t.split->table->name, "t") << sql;
    EXPECT_EQ(u.split->table->name, "u") << sql;
    EXPECT_TRUE(t.broadcast.empty() && u.broadcast.empty()) << sql;
    EXPECT_EQ(t.partitions, 3);
    EXPECT_EQ(u.partitions, 3);
    EXPECT_EQ(t.output_keys.size(), 1u);
    // A semi or anti join's build side of keys alone sends each key once per task.
    const bool semi = std::string(sql).find("IN (") != std::string::npos ||
                      std::string(sql).find("EXISTS") != std::string::npos;
    EXPECT_EQ(u.one_row_per_key, semi) << sql;
    EXPECT_FALSE(t.one_row_per_key) << sql;
    EXPECT_EQ(join.role, StageRole::kJoin);
    EXPECT_EQ(join.tasks, 3);
    ASSERT_EQ(join.inputs.size(), 2u);
    EXPECT_EQ(join.inputs[0].producer, 0);
    EXPECT_EQ(join.inputs[1].producer, 1);
    EXPECT_EQ(join.root->kind, PlanNode::Kind::kAggregate) << sql;  // the partial aggregate
    EXPECT_EQ(stages.stages[3].role, StageRole::kFinal);
    EXPECT_EQ(stages.stage_count(), 5);
    const std::string text = ExplainStages(*q.plan, stages);
    EXPECT_EQ(StageOf(text, "HashJoin"), "3") << text;
    EXPECT_EQ(StageOf(text, "Scan t"), "1") << text;
    EXPECT_EQ(StageOf(text, "Scan u"), "2") << text;
    EXPECT_EQ(StageOf(text, "FinalAggregate"), "4") << text;
    EXPECT_NE(text.find("stage 3 (join): 3 tasks, one per partition, each reading its partition "
                        "from all 3 tasks of stage 1 and all 1 tasks of stage 2"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("into 3 partitions to stage 3]"), std::string::npos) << text;
    // At the default limit the small side is broadcast instead.
    EXPECT_EQ(Plan(*q.plan, 3).stages.size(), 2u) << sql;
  }
}

// Joins above a partitioned join repartition again on their own keys.
TEST_F(StagePlannerTest, JoinOverAPartitionedJoinRepartitions) {
  BoundQuery q =
      Bind("SELECT a.g, count(*) FROM t a JOIN u ON a.k = uk JOIN t b ON b.g = name GROUP BY a.g");
  StagePlan stages = Plan(*q.plan, 2, 0);
  ASSERT_TRUE(stages.cut()) << stages.not_cut_reason;
  int joins = 0;
  for (const Stage& s : stages.stages) joins += s.role == StageRole::kJoin ? 1 : 0;
  EXPECT_EQ(joins, 2) << ExplainStages(*q.plan, stages);
  EXPECT_EQ(stages.stages.back().role, StageRole::kFinal);
}

// The rules every worker checks on the stage it is sent (StageShapeRefusal).
TEST(StageShapeTest, WorkersRefuseStagesWhoseSplitDoesNotSplitTheOutput) {
  using Inputs = std::map<const PlanNode*, std::vector<std::string>>;
  auto plan = CountOver(JoinNode(JoinType::kLeft, ScanNode("big", 1000), ScanNode("small", 10)));
  const PlanNode& partial = *plan->input;
  const PlanNode& join = *partial.input;
  const PlanNode* big = join.input.get();
  const PlanNode* small = join.right.get();
  EXPECT_EQ(StageShapeRefusal(partial, big, {}), "");
  EXPECT_EQ(StageShapeRefusal(partial, small, {}),
            "split rows on the build side of a left, semi or anti join");
  EXPECT_EQ(StageShapeRefusal(partial, nullptr, {}), "the stage splits nothing");
  EXPECT_EQ(StageShapeRefusal(*plan, big, {}),
            "an aggregate over split rows below the stage's top");
  // A partitioned join: both sides must be partitions on exactly the join's keys.
  EXPECT_EQ(StageShapeRefusal(partial, nullptr, Inputs{{big, {"a.k"}}, {small, {"b.k"}}}), "");
  EXPECT_EQ(StageShapeRefusal(partial, nullptr, Inputs{{big, {"a.k"}}, {small, {"other"}}}),
            "a join of two split sides that are not partitions on its own keys");
  EXPECT_EQ(StageShapeRefusal(partial, nullptr, Inputs{{small, {"b.k"}}}),
            "split rows on the build side of a left, semi or anti join");
  // An inner join's output rows each come from one row of either side.
  auto inner = CountOver(JoinNode(JoinType::kInner, ScanNode("big", 1000), ScanNode("small", 10)));
  const PlanNode& inner_join = *inner->input->input;
  EXPECT_EQ(StageShapeRefusal(*inner->input, inner_join.right.get(), {}), "");
  EXPECT_EQ(StageShapeRefusal(*inner->input, nullptr, Inputs{{inner_join.right.get(), {"b.k"}}}),
            "");
  // A final aggregate reads partials partitioned on its keys.
  EXPECT_EQ(StageShapeRefusal(*plan, nullptr, Inputs{{&partial, {"a.k"}}}), "");
  EXPECT_EQ(StageShapeRefusal(*plan, nullptr, Inputs{{&partial, {}}}),
            "a final aggregate over partials not partitioned on its keys");
  // An input below another input is never read.
  EXPECT_EQ(StageShapeRefusal(*plan, nullptr, Inputs{{&partial, {"a.k"}}, {big, {"a.k"}}}),
            "a split scan or partition input that its stage's plan does not reach");
  auto sorted = MakeNode(PlanNode::Kind::kSort, ScanNode("big", 1000));
  EXPECT_EQ(StageShapeRefusal(*sorted, sorted->input.get(), {}), "a sort over split rows");
  EXPECT_EQ(StageShapeRefusal(*sorted, nullptr, Inputs{{sorted.get(), {}}}),
            "the stage's top is read from another stage");
}

// A window computes whole partitions: over split rows, only those partitioned on its PARTITION
// BY keys; a full join never pairs split rows with whole ones (each task would add the whole
// side's unmatched rows again).
TEST(StageShapeTest, WindowsNeedTheirPartitionsAndFullJoinsBothSidesSplit) {
  using Inputs = std::map<const PlanNode*, std::vector<std::string>>;
  auto window = MakeNode(PlanNode::Kind::kWindow, ScanNode("big", 1000));
  plan::WindowCall rank;
  rank.function = "rank";
  rank.partition_keys = {"a.k"};
  rank.output = "r";
  window->windows.push_back(rank);
  const PlanNode* rows = window->input.get();
  EXPECT_EQ(StageShapeRefusal(*window, nullptr, Inputs{{rows, {"a.k"}}}), "");
  EXPECT_EQ(StageShapeRefusal(*window, nullptr, Inputs{{rows, {"other"}}}),
            "a window over split rows not partitioned on its PARTITION BY keys");
  EXPECT_EQ(StageShapeRefusal(*window, rows, {}),
            "a window over split rows not partitioned on its PARTITION BY keys");
  auto full = JoinNode(JoinType::kFull, ScanNode("big", 1000), ScanNode("small", 10));
  EXPECT_EQ(StageShapeRefusal(*full, full->input.get(), {}),
            "a full outer join of split rows with whole ones");
  EXPECT_EQ(StageShapeRefusal(*full, nullptr,
                              Inputs{{full->input.get(), {"a.k"}}, {full->right.get(), {"b.k"}}}),
            "");
}

// Pre-order, `input` before `right`: how a stage task names the nodes it reads.
TEST(StageShapeTest, NodesAreListedInPreOrder) {
  auto plan = JoinNode(JoinType::kInner, ScanNode("a", 1), ScanNode("b", 1));
  std::vector<const PlanNode*> nodes = NodesOf(*plan);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0], plan.get());
  EXPECT_EQ(nodes[1], plan->input.get());
  EXPECT_EQ(nodes[2], plan->right.get());
}

// A map task's share is a contiguous run of row groups: one large file still splits, and every
// row group is read by exactly one task.
TEST(SplitSharesTest, EveryRowGroupIsInExactlyOneShare) {
  TableSource t;
  t.files = {"a", "b", "c"};
  t.file_bytes = {700, 50, 300};
  t.row_group_bytes = {{100, 200, 300}, {}, {120, 130}};
  EXPECT_EQ(t.SplitUnits(), 6);
  std::vector<SplitShare> shares = SplitShares(t, 4);
  ASSERT_EQ(shares.size(), 4u);
  using Ranges = std::vector<std::pair<int32_t, int32_t>>;
  EXPECT_EQ(shares[0].files, std::vector<std::string>{"a"});
  EXPECT_EQ(shares[0].row_group_ranges, (Ranges{{0, 1}}));
  EXPECT_EQ(shares[1].files, std::vector<std::string>{"a"});
  EXPECT_EQ(shares[1].row_group_ranges, (Ranges{{1, 3}}));
  EXPECT_EQ(shares[2].files, std::vector<std::string>{"b"});  // no row groups: read whole
  EXPECT_EQ(shares[2].row_group_ranges, (Ranges{{0, 0}}));
  EXPECT_EQ(shares[3].files, std::vector<std::string>{"c"});
  EXPECT_EQ(shares[3].row_group_ranges, (Ranges{{0, 2}}));
  EXPECT_EQ(shares[0].bytes, 100);
  EXPECT_EQ(shares[1].bytes, 500);
  EXPECT_EQ(shares[2].bytes, 50);  // a whole file: its listed size
  EXPECT_EQ(shares[3].bytes, 250);
  // Runs may cross files.
  shares = SplitShares(t, 2);
  EXPECT_EQ(shares[0].files, std::vector<std::string>{"a"});
  EXPECT_EQ(shares[1].files, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(shares[1].row_group_ranges, (Ranges{{0, 0}, {0, 2}}));
  // Without footers (IPC, JSONL), files are the units.
  t.row_group_bytes.clear();
  EXPECT_EQ(t.SplitUnits(), 3);
  shares = SplitShares(t, 2);
  EXPECT_EQ(shares[0].files, std::vector<std::string>{"a"});
  EXPECT_EQ(shares[1].files, (std::vector<std::string>{"b", "c"}));
  EXPECT_TRUE(shares[1].row_group_ranges.empty());
  EXPECT_EQ(shares[1].bytes, 350);
  EXPECT_EQ(MapTaskCount(t.SplitUnits(), 4), 3);
}

// Rows with equal keys meet in one partition only if both sides hash the same bytes: keys of
// other types (an int32 against an int64) are never hash-partitioned against each other.
TEST(StageSplitTest, KeysOfOtherTypesAreNotHashPartitioned) {
  for (bool same_types : {true, false}) {
    auto a = ScanNode("a", 1000);
    auto b = ScanNode("b", 1000);
    a->table->schema = a->table->file_schema = arrow::schema({arrow::field("k", arrow::int64())});
    b->table->schema = b->table->file_schema =
        arrow::schema({arrow::field("k", same_types ? arrow::int64() : arrow::int32())});
    auto plan = CountOver(JoinNode(JoinType::kInner, std::move(a), std::move(b)));
    StagePlan stages = Plan(*plan, 2, /*broadcast_limit=*/0);
    bool joins = false;
    for (const Stage& s : stages.stages) joins = joins || s.role == StageRole::kJoin;
    EXPECT_EQ(joins, same_types) << ExplainStages(*plan, stages);
  }
}

// Where re-reading the probe side weighs less than re-reading the build side, an inner join
// splits its build side: TPC-H Q12 re-reads orders' two columns, not five of lineitem's. Other
// joins never do.
TEST(StageSplitTest, AnInnerJoinSplitsItsBuildSideWhereThatReReadsLess) {
  for (JoinType type : {JoinType::kInner, JoinType::kLeft, JoinType::kSemi, JoinType::kAnti}) {
    auto plan = CountOver(JoinNode(type, ScanNode("probe", 100), ScanNode("build", 1000), true));
    StagePlan stages = Plan(*plan, 2);
    if (type != JoinType::kInner) {
      // Splitting the probe side would re-read more than it splits, and the build side may not be.
      EXPECT_FALSE(stages.cut()) << JoinTypeName(type);
      continue;
    }
    ASSERT_EQ(FinalStages(stages), 1) << stages.not_cut_reason;
    EXPECT_EQ(stages.stages[0].split->table->name, "build");
    EXPECT_EQ(TablesOf(stages.stages[0].broadcast), "probe");
    EXPECT_EQ(stages.stages[0].broadcast_bytes, 100);
  }
  // Where the build side weighs no more than the probe side, the probe side is split.
  auto plan = CountOver(JoinNode(JoinType::kInner, ScanNode("probe", 500), ScanNode("build", 500)));
  StagePlan stages = Plan(*plan, 2);
  ASSERT_EQ(FinalStages(stages), 1) << stages.not_cut_reason;
  EXPECT_EQ(stages.stages[0].split->table->name, "probe");
}

// A broadcast scan that meets the split scan on an integer join key, both tables in key order, is
// read by each task only where its keys can meet the task's share.
TEST_F(StagePlannerTest, BroadcastScansMeetingTheSplitOnAKeyAreReadByRange) {
  auto ranges = [&](const std::string& sql) {
    BoundQuery q = Bind(sql);
    StagePlan stages = Plan(*q.plan, 2);
    EXPECT_EQ(FinalStages(stages), 1) << sql << ": " << stages.not_cut_reason;
    std::string out;
    for (const Stage& s : stages.stages) {
      if (s.split == nullptr) continue;
      for (const auto& k : plan::SplitKeyRanges(*s.root, *s.split)) {
        out += (out.empty() ? "" : ";") + k.scan->table->name + "." + k.scan_column + " by " +
               s.split->table->name + "." + k.split_column;
      }
    }
    return out;
  };
  // inner (either side split), left, semi and anti joins: the build side's unmatched rows are
  // dropped, and so may be those that cannot match.
  EXPECT_EQ(ranges("SELECT op, sum(lv) FROM l JOIN o ON lk = ok GROUP BY op"), "o.ok by l.lk");
  EXPECT_EQ(ranges("SELECT lp, count(*) FROM o JOIN l ON ok = lk GROUP BY lp"), "o.ok by l.lk");
  EXPECT_EQ(ranges("SELECT lp, count(op) FROM l LEFT JOIN o ON lk = ok GROUP BY lp"),
            "o.ok by l.lk");
  EXPECT_EQ(ranges("SELECT lp, count(*) FROM l WHERE EXISTS (SELECT 1 FROM o WHERE ok = lk) "
                   "GROUP BY lp"),
            "o.ok by l.lk");
  EXPECT_EQ(ranges("SELECT lp, count(*) FROM l WHERE NOT EXISTS (SELECT 1 FROM o WHERE ok = lk) "
                   "GROUP BY lp"),
            "o.ok by l.lk");
  // Through renaming projections, filters and the build side's grouping on the key.
  EXPECT_EQ(
      ranges("SELECT lp, sum(n) FROM (SELECT lk AS key, lp FROM l WHERE lv > 1) x "
             "JOIN (SELECT ok, count(*) AS n FROM o GROUP BY ok) y ON key = y.ok GROUP BY lp"),
      "o.ok by l.lk");
  // int32 keys too.
  EXPECT_EQ(ranges("SELECT op, sum(lv) FROM l JOIN o ON li = oi GROUP BY op"), "o.oi by l.li");
  // Not: a split key in no order (every share spans all keys), a computed key, keys of other
  // types, a key the build side aggregates away.
  EXPECT_EQ(ranges("SELECT op, sum(lv) FROM l JOIN o ON lp = ok GROUP BY op"), "");
  EXPECT_EQ(ranges("SELECT op, sum(lv) FROM l JOIN o ON lk + 1 = ok GROUP BY op"), "");
  EXPECT_EQ(ranges("SELECT op, sum(lv) FROM l JOIN o ON li = ok GROUP BY op"), "");
  EXPECT_EQ(ranges("SELECT lp, sum(m) FROM l JOIN (SELECT op, max(ok) AS m FROM o GROUP BY op) y "
                   "ON lk = y.m GROUP BY lp"),
            "");
  BoundQuery q = Bind("SELECT op, sum(lv) FROM l JOIN o ON lk = ok JOIN u ON lp = uk GROUP BY op");
  const std::string text = ExplainStages(*q.plan, Plan(*q.plan, 2));
  EXPECT_NE(text.find("broadcast by re-scan, read whole by every task: u; read by every task "
                      "where its keys can meet the task's share: o (ok by lk)"),
            std::string::npos)
      << text;
}

// A share's range of a key is its row groups' statistics together; a row group without any
// gives none.
TEST(SplitKeyRangeTest, AShareSpansItsRowGroupsStatistics) {
  TableSource whole;
  whole.files = {"a", "b", "c"};
  whole.row_group_int_ranges["k"] = {{{1, 10}, {11, 20}}, {{21, 30}}, {{31, 40}, {1, 0}}};
  whole.row_group_int_ranges["j"] = {{{1, 10}, {11, 20}}, {}, {{31, 40}, {41, 50}}};
  whole.row_group_bytes = {{1, 1}, {1}, {1, 1}};
  TableSource share = whole;
  share.files = {"a", "b"};
  EXPECT_EQ(plan::ShareKeyRange(whole, share, "k"), std::make_pair(int64_t{1}, int64_t{30}));
  share.row_group_ranges = {{1, 2}, {0, 1}};
  EXPECT_EQ(plan::ShareKeyRange(whole, share, "k"), std::make_pair(int64_t{11}, int64_t{30}));
  share.files = {"c"};
  share.row_group_ranges = {{0, 1}};
  EXPECT_EQ(plan::ShareKeyRange(whole, share, "k"), std::make_pair(int64_t{31}, int64_t{40}));
  share.row_group_ranges = {{0, 2}};
  EXPECT_EQ(plan::ShareKeyRange(whole, share, "k"), std::nullopt);  // no statistics
  share.row_group_ranges = {{0, 3}};
  EXPECT_EQ(plan::ShareKeyRange(whole, share, "k"), std::nullopt);  // no such row group
  EXPECT_EQ(plan::ShareKeyRange(whole, share, "other"), std::nullopt);
  // A file whose footer gave no statistics of the column at all: its keys are unknown.
  share.files = {"a", "b"};
  share.row_group_ranges = {};
  EXPECT_EQ(plan::ShareKeyRange(whole, share, "j"), std::nullopt);
  share.files = {"a"};
  EXPECT_EQ(plan::ShareKeyRange(whole, share, "j"), std::make_pair(int64_t{1}, int64_t{20}));
  share.files = {"d"};
  EXPECT_EQ(plan::ShareKeyRange(whole, share, "k"), std::nullopt);

  // The range joins the scan's pushed-down filter, typed as the column.
  auto scan = ScanNode("o", 100);
  scan->table->schema = arrow::schema({arrow::field("k", arrow::int32())});
  scan->names = {"o.k"};
  scan->scan_filter = arrow::compute::greater(arrow::compute::field_ref("o.k"),
                                              arrow::compute::literal(int32_t{0}));
  plan::RestrictScan(scan.get(), "k", 5, 9);
  EXPECT_EQ(scan->scan_filter.ToString(), "(((o.k > 0) and (o.k >= 5)) and (o.k <= 9))");
}

}  // namespace
}  // namespace sluice::sql
