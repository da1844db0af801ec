// The stage planner on plan text: which operators land in which stage, per query shape. The
// tables have files but are never read, so these tests need no data and no Python.
#include "sql/stage_planner.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <regex>

#include "sql/binder.h"
#include "sql/sql_parser.h"

namespace sluice::sql {
namespace {

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
std::unique_ptr<PlanNode> Node(PlanNode::Kind kind, std::unique_ptr<PlanNode> input = nullptr) {
  auto n = std::make_unique<PlanNode>();
  n->kind = kind;
  n->input = std::move(input);
  return n;
}

std::unique_ptr<PlanNode> ScanNode(const std::string& table, int64_t bytes) {
  auto n = Node(PlanNode::Kind::kScan);
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
  auto n = Node(PlanNode::Kind::kJoin, std::move(input));
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
      Node(PlanNode::Kind::kAggregate, Node(PlanNode::Kind::kAggregate, std::move(input)));
  final_step->final_phase = true;
  final_step->keys = {"a.k"};
  final_step->input->keys = {"a.k"};
  return final_step;
}

// One aggregate step that is no cut of its own (a scalar subquery's, say).
std::unique_ptr<PlanNode> Aggregate(std::unique_ptr<PlanNode> input) {
  auto n = Node(PlanNode::Kind::kAggregate, std::move(input));
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
    auto bound =
        BindSelect(select.select, sql,
                   [&](const std::string& name) -> arrow::Result<std::shared_ptr<TableSource>> {
                     if (name == "t") return t;
                     if (name == "u") return u;
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

TEST_F(StagePlannerTest, GroupedAggregateIsMapFinalAndDriver) {
  BoundQuery q = Bind("SELECT g, sum(v), count(*) FROM t WHERE k > 3 GROUP BY g ORDER BY g");
  StagePlan stages = PlanStages(*q.plan);
  ASSERT_EQ(stages.cuts.size(), 1u);
  EXPECT_EQ(stages.stage_count(), 3);
  const std::string text = ExplainStages(*q.plan, stages, 4);
  EXPECT_NE(text.find("distributed plan: 3 stages on 4 workers"), std::string::npos) << text;
  EXPECT_NE(text.find("stage 1 (map): 5 tasks over t's 5 files"), std::string::npos) << text;
  EXPECT_NE(text.find("into 4 partitions"), std::string::npos) << text;
  EXPECT_EQ(StageOf(text, "Scan t"), "1") << text;
  EXPECT_EQ(StageOf(text, "Filter"), "1") << text;
  EXPECT_EQ(StageOf(text, "PartialAggregate"), "1") << text;
  EXPECT_EQ(StageOf(text, "FinalAggregate"), "2") << text;
  EXPECT_EQ(StageOf(text, "Sort"), "3") << text;
}

TEST_F(StagePlannerTest, GlobalAggregateHasOnePartition) {
  BoundQuery q = Bind("SELECT count(*), avg(v) FROM t");
  StagePlan stages = PlanStages(*q.plan);
  ASSERT_EQ(stages.cuts.size(), 1u);
  EXPECT_EQ(FinalPartitionCount(stages.cuts[0], 4), 1);
  const std::string text = ExplainStages(*q.plan, stages, 4);
  EXPECT_NE(text.find("hash on [] into 1 partitions"), std::string::npos) << text;
}

TEST_F(StagePlannerTest, CountDistinctPartitionsOnGroupKeysOnly) {
  BoundQuery q = Bind("SELECT g, count(DISTINCT k) FROM t GROUP BY g");
  StagePlan stages = PlanStages(*q.plan);
  ASSERT_EQ(stages.cuts.size(), 1u);
  // The partial step groups on (g, k); the exchange must hash on g alone.
  EXPECT_EQ(stages.cuts[0].partial->keys.size(), 2u);
  EXPECT_EQ(stages.cuts[0].final_aggregate->keys.size(), 1u);
}

TEST_F(StagePlannerTest, AggregateOverJoinSplitsTheProbeSideAndBroadcastsTheRest) {
  BoundQuery q = Bind("SELECT name, sum(v) FROM t JOIN u ON k = uk GROUP BY name");
  StagePlan stages = PlanStages(*q.plan);
  ASSERT_EQ(stages.cuts.size(), 1u) << stages.not_cut_reason;
  EXPECT_EQ(stages.cuts[0].scan->table->name, "t");
  EXPECT_EQ(TablesOf(stages.cuts[0].broadcast), "u");
  const std::string text = ExplainStages(*q.plan, stages, 2);
  EXPECT_NE(text.find("stage 1 (map): 4 tasks over t's 5 files (split); broadcast by re-scan, "
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
    StagePlan stages = PlanStages(*q.plan);
    ASSERT_EQ(stages.cuts.size(), 1u) << sql << ": " << stages.not_cut_reason;
    EXPECT_EQ(stages.cuts[0].scan->table->name, "t") << sql;
    EXPECT_EQ(TablesOf(stages.cuts[0].broadcast), "u") << sql;
  }
}

// The probe (preserved, kept) side of every join type is split, whichever side is hashed.
TEST(StageSplitTest, EveryJoinTypeSplitsItsInputSide) {
  for (JoinType type : {JoinType::kInner, JoinType::kLeft, JoinType::kSemi, JoinType::kAnti}) {
    for (bool build_input : {false, true}) {
      auto plan =
          CountOver(JoinNode(type, ScanNode("big", 1000), ScanNode("small", 10), build_input));
      StagePlan stages = PlanStages(*plan);
      ASSERT_EQ(stages.cuts.size(), 1u) << JoinTypeName(type) << " " << stages.not_cut_reason;
      EXPECT_EQ(stages.cuts[0].scan->table->name, "big");
      EXPECT_EQ(TablesOf(stages.cuts[0].broadcast), "small");
      EXPECT_EQ(ScansOf(*stages.cuts[0].partial).size(), 2u);
    }
  }
}

// A build side is never split, even where the only other table cannot be: splitting `right`
// would keep, drop or null-pad each `input` row once per task.
TEST(StageSplitTest, BuildSideIsNeverSplit) {
  for (JoinType type : {JoinType::kInner, JoinType::kLeft, JoinType::kSemi, JoinType::kAnti}) {
    auto plan = CountOver(JoinNode(type, Aggregate(ScanNode("small", 10)), ScanNode("big", 1000)));
    StagePlan stages = PlanStages(*plan);
    EXPECT_TRUE(stages.cuts.empty()) << JoinTypeName(type);
    EXPECT_EQ(stages.not_cut_reason,
              "no aggregate can be cut: no table below the aggregate can be split: each sits on a "
              "join's build side or below an aggregate");
  }
}

// A table below an aggregate inside the map subtree needs all of its rows.
TEST(StageSplitTest, NestedAggregateInputIsNeverSplit) {
  auto plan = CountOver(
      JoinNode(JoinType::kInner, Aggregate(ScanNode("big", 1000)), ScanNode("small", 10)));
  StagePlan stages = PlanStages(*plan);
  EXPECT_TRUE(stages.cuts.empty());
  EXPECT_NE(stages.not_cut_reason.find("no table below the aggregate can be split"),
            std::string::npos)
      << stages.not_cut_reason;
}

// A broadcast side may hold an aggregate: every task computes it over the whole table.
TEST(StageSplitTest, AggregateOnABroadcastSideIsReadWhole) {
  auto plan =
      CountOver(JoinNode(JoinType::kLeft, ScanNode("big", 1000), Distinct(ScanNode("small", 10))));
  StagePlan stages = PlanStages(*plan);
  ASSERT_EQ(stages.cuts.size(), 1u) << stages.not_cut_reason;
  EXPECT_EQ(stages.cuts[0].scan->table->name, "big");
  EXPECT_EQ(TablesOf(stages.cuts[0].broadcast), "small");
}

TEST(StageSplitTest, SortOrLimitBelowThePartialAggregateIsRefused) {
  for (auto kind : {PlanNode::Kind::kSort, PlanNode::Kind::kLimit}) {
    for (bool on_broadcast_side : {false, true}) {
      auto big = ScanNode("big", 1000);
      auto small = ScanNode("small", 10);
      if (on_broadcast_side) {
        small = Node(kind, std::move(small));
      } else {
        big = Node(kind, std::move(big));
      }
      auto plan = CountOver(JoinNode(JoinType::kInner, std::move(big), std::move(small)));
      StagePlan stages = PlanStages(*plan);
      EXPECT_TRUE(stages.cuts.empty());
      EXPECT_EQ(stages.not_cut_reason, std::string("no aggregate can be cut: a ") +
                                           (kind == PlanNode::Kind::kSort ? "sort" : "limit") +
                                           " below the partial aggregate");
      EXPECT_NE(ExplainStages(*plan, stages, 2).find("  not cut: a "), std::string::npos);
    }
  }
}

// The largest table on a build side: splitting the probe side would have every task re-read
// the largest table whole, so the query runs in-process.
TEST(StageSplitTest, BroadcastOutweighingTheSplitIsRefused) {
  auto plan =
      CountOver(JoinNode(JoinType::kSemi, ScanNode("small", 10), ScanNode("big", 1000), true));
  StagePlan stages = PlanStages(*plan);
  EXPECT_TRUE(stages.cuts.empty());
  EXPECT_EQ(stages.not_cut_reason,
            "no aggregate can be cut: the tables every map task would re-read whole (big: 1000 "
            "bytes) outweigh the split table small (10 bytes), which is the largest that can be "
            "split");
  // Equal weights are still cut: a self-join of a table split on one side.
  auto even = CountOver(JoinNode(JoinType::kInner, ScanNode("left", 500), ScanNode("right", 500)));
  EXPECT_EQ(PlanStages(*even).cuts.size(), 1u);
}

// Scans in pre-order, `input` before `right`: the order a map task's split_scan indexes.
TEST(StageSplitTest, ScansAreListedInPreOrder) {
  auto plan =
      JoinNode(JoinType::kInner, JoinNode(JoinType::kInner, ScanNode("a", 1), ScanNode("b", 1)),
               ScanNode("c", 1));
  EXPECT_EQ(TablesOf(ScansOf(*plan)), "a,b,c");
  EXPECT_EQ(TablesOf(SplittableScans(*plan)), "a");
}

TEST_F(StagePlannerTest, NoAggregateIsNotCut) {
  BoundQuery q = Bind("SELECT k FROM t WHERE v > 1");
  StagePlan stages = PlanStages(*q.plan);
  EXPECT_TRUE(stages.cuts.empty());
  EXPECT_EQ(stages.not_cut_reason, "the query has no aggregate to split");
}

TEST_F(StagePlannerTest, AggregateInSubqueryIsCutAndJoinStaysInDriver) {
  BoundQuery q =
      Bind("SELECT name, s FROM u JOIN (SELECT k, sum(v) AS s FROM t GROUP BY k) x ON uk = x.k");
  StagePlan stages = PlanStages(*q.plan);
  ASSERT_EQ(stages.cuts.size(), 1u);
  const std::string text = ExplainStages(*q.plan, stages, 2);
  EXPECT_EQ(StageOf(text, "HashJoin"), "3") << text;
  EXPECT_EQ(StageOf(text, "Scan u"), "3") << text;
  EXPECT_EQ(StageOf(text, "Scan t"), "1") << text;
  EXPECT_EQ(StageOf(text, "FinalAggregate"), "2") << text;
}

TEST_F(StagePlannerTest, MapTasksFollowFilesAndWorkers) {
  EXPECT_EQ(MapTaskCount(8, 4), 8);
  EXPECT_EQ(MapTaskCount(8, 2), 4);
  EXPECT_EQ(MapTaskCount(1, 4), 1);
  EXPECT_EQ(MapTaskCount(0, 4), 1);
}

}  // namespace
}  // namespace sluice::sql
