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
                                   std::shared_ptr<arrow::Schema> schema) {
  auto t = std::make_shared<TableSource>();
  t->name = name;
  t->format = "parquet";
  for (int i = 0; i < files; ++i) t->files.push_back(name + "/part-" + std::to_string(i));
  t->schema = schema;
  t->file_schema = schema;
  t->num_rows = 1000;
  return t;
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
                             arrow::field("v", arrow::float64())}));
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

TEST_F(StagePlannerTest, AggregateOverJoinIsNotCut) {
  BoundQuery q = Bind("SELECT name, sum(v) FROM t JOIN u ON k = uk GROUP BY name");
  StagePlan stages = PlanStages(*q.plan);
  EXPECT_TRUE(stages.cuts.empty());
  EXPECT_NE(stages.not_cut_reason.find("joins"), std::string::npos);
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
