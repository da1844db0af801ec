// The SQL stage task codec: bytes from another process are refused, with a message that names
// the check, unless every field has the shape the stage runner relies on.
#include "sql/stage_task.h"

#include <gtest/gtest.h>

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/writer.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "plan/cbor_fields.h"
#include "plan/session_spec.h"
#include "sql/binder.h"
#include "sql/query_plan_codec.h"
#include "sql/sql_parser.h"
#include "sql/stage_planner.h"
#include "sql/plan_node.h"

namespace sluice::sql {
namespace {

StageTask FinalTask() {
  StageTask t;
  t.role = "final";
  t.plan = {1, 2, 3};
  t.partitions = 1;
  t.output_prefix = "_sluice/shuffle/q-1/s2";
  StageTaskInput in;
  in.node = 1;
  in.partition_keys = {"g"};
  in.files = {"_sluice/shuffle/q-1/s1/s1p0-1/part-0.arrow"};
  in.blake3 = {"ab"};
  t.inputs = {in};
  return t;
}

std::string DecodeError(const std::vector<uint8_t>& bytes) {
  auto decoded = DecodeStageTask(bytes.data(), bytes.size());
  return decoded.ok() ? "ok" : decoded.status().message();
}

std::vector<uint8_t> Reencoded(const StageTask& t,
                               const std::function<void(nlohmann::json&)>& damage) {
  auto bytes = EncodeStageTask(t);
  EXPECT_TRUE(bytes.ok());
  const size_t magic = std::strlen(kStageTaskMagic);
  auto doc =
      nlohmann::json::from_cbor(bytes->begin() + static_cast<std::ptrdiff_t>(magic), bytes->end());
  damage(doc);
  return plan::WithMagic(kStageTaskMagic, doc);
}

TEST(StageTaskTest, RoundTrips) {
  auto bytes = EncodeStageTask(FinalTask());
  ASSERT_TRUE(bytes.ok());
  auto t = DecodeStageTask(bytes->data(), bytes->size());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->role, "final");
  EXPECT_EQ(t->plan, (std::vector<uint8_t>{1, 2, 3}));
  ASSERT_EQ(t->inputs.size(), 1u);
  EXPECT_EQ(t->inputs[0].node, 1);
  EXPECT_EQ(t->inputs[0].partition_keys, std::vector<std::string>{"g"});
  EXPECT_EQ(t->inputs[0].files, FinalTask().inputs[0].files);
  EXPECT_EQ(t->inputs[0].blake3, FinalTask().inputs[0].blake3);
  EXPECT_EQ(t->split_scan, -1);
  EXPECT_EQ(t->output_prefix, "_sluice/shuffle/q-1/s2");
}

TEST(StageTaskTest, MapTaskRoundTripsItsSplitScan) {
  StageTask map = FinalTask();
  map.role = "map";
  map.inputs.clear();
  map.output_keys = {"g"};
  map.partitions = 3;
  map.split_scan = 2;
  auto bytes = EncodeStageTask(map);
  ASSERT_TRUE(bytes.ok());
  auto t = DecodeStageTask(bytes->data(), bytes->size());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->role, "map");
  EXPECT_EQ(t->partitions, 3);
  EXPECT_EQ(t->output_keys, std::vector<std::string>{"g"});
  EXPECT_EQ(t->split_scan, 2);
  EXPECT_EQ(DecodeError(Reencoded(map, [](auto& d) { d["split_scan"] = -2; })),
            "stage task: split scan -2 out of range");
}

TEST(StageTaskTest, RefusesAnotherVersionByName) {
  auto bytes = EncodeStageTask(FinalTask());
  ASSERT_TRUE(bytes.ok());
  std::string text(bytes->begin(), bytes->end());
  text.replace(0, std::strlen("SLUICE-SQL-STAGE/2"), "SLUICE-SQL-STAGE/9");
  const std::vector<uint8_t> other(text.begin(), text.end());
  EXPECT_NE(DecodeError(other).find("SLUICE-SQL-STAGE/9"), std::string::npos) << DecodeError(other);
}

TEST(StageTaskTest, RefusesDamagedFields) {
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(), [](auto& d) { d["role"] = "reduce"; })),
            "stage task: unknown role 'reduce'");
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(), [](auto& d) { d["partitions"] = 0; })),
            "stage task: partitions 0 out of range");
  EXPECT_EQ(DecodeError(Reencoded(
                FinalTask(), [](auto& d) { d["inputs"][0]["blake3"] = nlohmann::json::array(); })),
            "stage task: input node 1 has 1 files and 0 digests");
  EXPECT_EQ(
      DecodeError(Reencoded(
          FinalTask(), [](auto& d) { d["inputs"][0]["files"] = {"tables/t/part-0.parquet"}; })),
      "stage task: input file 'tables/t/part-0.parquet' is not under _sluice/shuffle/");
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(),
                                  [](auto& d) {
                                    d["inputs"][0]["files"] = nlohmann::json::array();
                                    d["inputs"][0]["blake3"] = nlohmann::json::array();
                                  })),
            "stage task: input node 1 has 0 files and 0 digests");
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(), [](auto& d) { d["inputs"][0]["node"] = -1; })),
            "stage task: input node -1 out of range");
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(), [](auto& d) { d["one_row_per_key"] = true; })),
            "stage task: one row per key needs keys");
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(), [](auto& d) { d["inputs"] = 3; })),
            "stage task: inputs must be a list of at most 64");
  EXPECT_NE(DecodeError(Reencoded(FinalTask(),
                                  [](auto& d) { d["output_prefix"] = "_sluice/shuffle/../x"; })),
            "ok");
  EXPECT_NE(DecodeError(Reencoded(FinalTask(), [](auto& d) { d.erase("plan"); })), "ok");
}

TEST(StageTaskTest, AttemptsNeverShareAFileName) {
  EXPECT_EQ(ShuffleFileKey("_sluice/shuffle/q-1/s1", "s1p3", 2, 0),
            "_sluice/shuffle/q-1/s1/s1p3-2/part-0.arrow");
  EXPECT_NE(ShuffleFileKey("p", "s1p3", 1, 0), ShuffleFileKey("p", "s1p3", 2, 0));
}

// A worker runs a map plan only with a split the stage planner would choose: the bytes come from
// elsewhere, and splitting a build side or a sorted input would give a wrong answer silently.
class MapTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sluice-map-task-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto store = storage::ObjectStore::Open("file://" + dir_.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = *store;
    Write("t.parquet", "k", 40);
    Write("u.parquet", "uk", 10);
    auto statement = ParseStatement(kSql);
    ASSERT_TRUE(statement.ok());
    auto bound =
        BindSelect(std::get<SelectStatement>(*statement).select, kSql,
                   [&](const std::string& name) -> arrow::Result<std::shared_ptr<TableSource>> {
                     return OpenTable(store_, name, name + ".parquet", "parquet");
                   });
    ASSERT_TRUE(bound.ok()) << bound.status().ToString();
    query_ = std::move(*bound);
    StageOptions options;
    options.workers = 2;
    stages_ = PlanStages(*query_.plan, options);
    ASSERT_EQ(stages_.stages.size(), 2u) << stages_.not_cut_reason;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& key, const std::string& column, int rows) {
    arrow::Int64Builder b;
    for (int i = 0; i < rows; ++i) ASSERT_TRUE(b.Append(i % 10).ok());
    auto table = arrow::Table::Make(arrow::schema({arrow::field(column, arrow::int64())}),
                                    {b.Finish().ValueOrDie()});
    auto out = arrow::io::FileOutputStream::Open((dir_ / key).string());
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), *out, 100).ok());
    ASSERT_TRUE((*out)->Close().ok());
  }

  // Runs the cut's partial aggregate as map task s1p0 with `split_scan`; the report's error.
  std::string RunMap(int32_t split_scan) {
    const PlanNode& partial = *stages_.stages[0].root;
    StageTask task;
    task.role = "map";
    task.plan = EncodeQueryPlan(partial, partial.OutputNames()).ValueOrDie();
    task.split_scan = split_scan;
    task.output_keys = stages_.stages[0].output_keys;
    task.partitions = 2;
    task.output_prefix = "_sluice/shuffle/q-1/s1";
    plan::Fragment f;
    f.run_id = "q-1";
    f.stage_id = 1;
    f.partition = 0;
    f.session.store_url = "file://" + dir_.string();
    f.session.parity = plan::LocalParity();
    f.operators.push_back(plan::RunSqlStage{EncodeStageTask(task).ValueOrDie()});
    exec::TaskReport report = RunStageTask(f, {});
    return report.status == "error" ? report.error : "ok";
  }

  // The index of `scan` in ScansOf(partial): what split_scan names.
  int32_t IndexOf(const PlanNode* scan) {
    const auto scans = ScansOf(*stages_.stages[0].root);
    return static_cast<int32_t>(std::find(scans.begin(), scans.end(), scan) - scans.begin());
  }

  static constexpr char kSql[] = "SELECT k, count(*) FROM t JOIN u ON k = uk GROUP BY k";
  std::filesystem::path dir_;
  std::shared_ptr<storage::ObjectStore> store_;
  BoundQuery query_;
  StagePlan stages_;
};

TEST_F(MapTaskTest, RunsTheChosenSplit) {
  EXPECT_EQ(RunMap(IndexOf(stages_.stages[0].split)), "ok");
}

TEST_F(MapTaskTest, RefusesToSplitABuildSide) {
  ASSERT_EQ(stages_.stages[0].broadcast.size(), 1u);
  const std::string error = RunMap(IndexOf(stages_.stages[0].broadcast[0]));
  EXPECT_NE(error.find("the plan cannot run split: split rows on a join's build side"),
            std::string::npos)
      << error;
  EXPECT_NE(RunMap(7).find("split scan 7 is not a scan"), std::string::npos);
}

TEST_F(MapTaskTest, RefusesAMapPlanWithASortBelowTheAggregate) {
  // A sort above the split scan: the stage planner never sends this, a forged task might.
  auto* join = const_cast<PlanNode*>(stages_.stages[0].root);
  while (join->kind != PlanNode::Kind::kJoin) join = join->input.get();
  auto sort = std::make_unique<PlanNode>();
  sort->kind = PlanNode::Kind::kSort;
  sort->sort_keys = {arrow::compute::SortKey(join->input->OutputNames()[0])};
  sort->input = std::move(join->input);
  join->input = std::move(sort);
  const std::string error = RunMap(IndexOf(stages_.stages[0].split));
  EXPECT_NE(error.find("the plan cannot run split: a sort over split rows"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace sluice::sql
