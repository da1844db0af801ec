// SQL stage tasks: a plan::Fragment whose root is a shuffle write over the stage's plan, with
// this task's share of the split scan (a kScan marked split) or its partition of the stage
// below (kShuffleRead nodes). Bytes from another process are refused, with a message that names
// the check, unless every field has the shape the stage runner relies on; and a worker runs a
// stage only with a split that splits its output.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "exec/fragment_runner.h"
#include "plan/cbor_fields.h"
#include "plan/fragment.h"
#include "plan/plan_codec.h"
#include "sql/binder.h"
#include "sql/plan_node.h"
#include "sql/sql_parser.h"
#include "sql/stage_planner.h"

namespace sluice::sql {
namespace {

using plan::MakeNode;

plan::Fragment Task(int32_t stage, std::unique_ptr<PlanNode> root) {
  plan::Fragment f;
  f.run_id = "q-1";
  f.stage_id = stage;
  f.partition = 0;
  f.root = std::move(root);
  return f;
}

// Task s2p0 of a final stage: the final aggregate over its partition of the partials, gathered
// for the driver.
plan::Fragment FinalTask() {
  auto read = MakeNode(PlanNode::Kind::kShuffleRead);
  read->shuffle_read.files = {"_sluice/shuffle/q-1/s1/s1p0-1/part-0.arrow"};
  read->shuffle_read.blake3 = {std::string(64, 'a')};
  read->shuffle_read.schema =
      arrow::schema({arrow::field("g", arrow::utf8()), arrow::field("c", arrow::int64())});
  read->shuffle_read.partition_keys = {"g"};
  auto final_aggregate = MakeNode(PlanNode::Kind::kAggregate, std::move(read));
  final_aggregate->final_phase = true;
  final_aggregate->keys = {"g"};
  final_aggregate->aggregates = {{"sum", "c", "total"}};
  auto write = MakeNode(PlanNode::Kind::kShuffleWrite, std::move(final_aggregate));
  write->shuffle_write.folder = "_sluice/shuffle/q-1/s2";
  return Task(2, std::move(write));
}

std::shared_ptr<TableSource> Table(const std::string& name, const std::string& column) {
  auto t = std::make_shared<TableSource>();
  t->name = name;
  t->location = name;
  t->format = "parquet";
  t->files = {name + "/part-0.parquet", name + "/part-1.parquet"};
  t->schema = t->file_schema = arrow::schema({arrow::field(column, arrow::utf8())});
  return t;
}

std::unique_ptr<PlanNode> Scan(const std::string& name, const std::string& column) {
  auto scan = MakeNode(PlanNode::Kind::kScan);
  scan->table = Table(name, column);
  scan->columns = {column};
  scan->names = {column};
  return scan;
}

// Task s1p0 of a map stage: its share of t (row groups [1, 3) of its first file and [0, 2) of
// its second), joined with all of u, partially aggregated and hashed on g into 3 partitions.
plan::Fragment MapTask() {
  auto split = Scan("t", "g");
  auto share = std::make_shared<TableSource>(*split->table);
  share->row_group_ranges = {{1, 3}, {0, 2}};
  split->table = share;
  split->split = true;
  auto join = MakeNode(PlanNode::Kind::kJoin, std::move(split));
  join->right = Scan("u", "ug");
  join->left_keys = {"g"};
  join->right_keys = {"ug"};
  auto partial = MakeNode(PlanNode::Kind::kAggregate, std::move(join));
  partial->keys = {"g"};
  partial->aggregates = {{"count_all", "", "c"}};
  auto write = MakeNode(PlanNode::Kind::kShuffleWrite, std::move(partial));
  write->shuffle_write = plan::ShuffleWrite{{"g"}, 3, "_sluice/shuffle/q-1/s1"};
  return Task(1, std::move(write));
}

std::string DecodeError(const std::vector<uint8_t>& bytes) {
  auto decoded = plan::DecodeFragment(bytes.data(), bytes.size());
  return decoded.ok() ? "ok" : decoded.status().message();
}

// The bytes of `f` with their CBOR body changed by `damage`, magic line kept.
std::vector<uint8_t> Reencoded(const plan::Fragment& f,
                               const std::function<void(nlohmann::json&)>& damage) {
  auto bytes = plan::EncodeFragment(f);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  const size_t magic = std::strlen(plan::kPlanMagic);
  auto doc =
      nlohmann::json::from_cbor(bytes->begin() + static_cast<std::ptrdiff_t>(magic), bytes->end());
  damage(doc);
  return plan::WithMagic(plan::kPlanMagic, doc);
}

TEST(StageTaskTest, RoundTrips) {
  const plan::Fragment final_task = FinalTask();
  auto bytes = plan::EncodeFragment(final_task);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto t = plan::DecodeFragment(bytes->data(), bytes->size());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->task_name(), "s2p0");
  EXPECT_EQ(t->root->Explain(), final_task.root->Explain());
  const PlanNode& write = *t->root;
  ASSERT_EQ(write.kind, PlanNode::Kind::kShuffleWrite);
  EXPECT_TRUE(write.shuffle_write.keys.empty());
  EXPECT_EQ(write.shuffle_write.partitions, 1);
  EXPECT_EQ(write.shuffle_write.folder, "_sluice/shuffle/q-1/s2");
  ASSERT_EQ(write.input->kind, PlanNode::Kind::kAggregate);
  EXPECT_TRUE(write.input->final_phase);
  const PlanNode& read = *write.input->input;
  ASSERT_EQ(read.kind, PlanNode::Kind::kShuffleRead);
  const plan::ShuffleRead& sent = final_task.root->input->input->shuffle_read;
  EXPECT_EQ(read.shuffle_read.partition_keys, std::vector<std::string>{"g"});
  EXPECT_EQ(read.shuffle_read.files, sent.files);
  EXPECT_EQ(read.shuffle_read.blake3, sent.blake3);
  EXPECT_TRUE(read.shuffle_read.schema->Equals(*sent.schema));
  EXPECT_TRUE(plan::ScansOf(*t->root).empty());
}

TEST(StageTaskTest, MapTaskRoundTripsItsSplitScan) {
  auto bytes = plan::EncodeFragment(MapTask());
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto t = plan::DecodeFragment(bytes->data(), bytes->size());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->root->shuffle_write.partitions, 3);
  EXPECT_EQ(t->root->shuffle_write.keys, std::vector<std::string>{"g"});
  const auto scans = plan::ScansOf(*t->root);
  ASSERT_EQ(scans.size(), 2u);
  EXPECT_TRUE(scans[0]->split);
  EXPECT_EQ(scans[0]->table->files, MapTask().root->input->input->input->table->files);
  EXPECT_EQ(scans[0]->table->row_group_ranges,
            (std::vector<std::pair<int32_t, int32_t>>{{1, 3}, {0, 2}}));
  EXPECT_FALSE(scans[1]->split);
  EXPECT_EQ(scans[1]->table->name, "u");
  // A task splits at most one scan.
  EXPECT_EQ(DecodeError(Reencoded(
                MapTask(), [](auto& d) { d["plan"]["input"]["input"]["right"]["split"] = true; })),
            "plan: more than one split scan");
}

TEST(StageTaskTest, RefusesAnotherVersionByName) {
  auto bytes = plan::EncodeFragment(FinalTask());
  ASSERT_TRUE(bytes.ok());
  std::string text(bytes->begin(), bytes->end());
  text.replace(0, std::strlen("SLUICE-PLAN/2"), "SLUICE-PLAN/9");
  const std::vector<uint8_t> other(text.begin(), text.end());
  EXPECT_NE(DecodeError(other).find("SLUICE-PLAN/9"), std::string::npos) << DecodeError(other);
}

TEST(StageTaskTest, RefusesDamagedFields) {
  // `edit` gets the task's shuffle_write (the root) and the shuffle_read below it.
  auto damaged = [](const std::function<void(nlohmann::json&, nlohmann::json&)>& edit) {
    return DecodeError(Reencoded(
        FinalTask(), [&](nlohmann::json& d) { edit(d["plan"], d["plan"]["input"]["input"]); }));
  };
  EXPECT_EQ(damaged([](auto& write, auto&) { write["partitions"] = 0; }),
            "plan: partitions 0 out of range");
  EXPECT_EQ(damaged([](auto&, auto& read) { read["blake3"] = nlohmann::json::array(); }),
            "plan: shuffle_read has 1 files and 0 digests");
  EXPECT_EQ(damaged([](auto&, auto& read) { read["files"] = {"tables/t/part-0.parquet"}; }),
            "plan: shuffle_read 'tables/t/part-0.parquet' is not under _sluice/shuffle/");
  EXPECT_EQ(damaged([](auto&, auto& read) {
              read["files"] = nlohmann::json::array();
              read["blake3"] = nlohmann::json::array();
            }),
            "plan: shuffle_read has 0 files and 0 digests");
  EXPECT_EQ(damaged([](auto&, auto& read) { read["files"] = 3; }),
            "plan: field 'files' is not a list");
  // A node read from the stage below stands in for a subtree: it has none of its own.
  EXPECT_EQ(damaged([](auto&, auto& read) {
              const nlohmann::json below = read;
              read["input"] = below;
            }),
            "plan: a shuffle_read has no input");
  EXPECT_EQ(damaged([](auto& write, auto&) { write["one_row_per_key"] = true; }),
            "plan: one row per key needs keys");
  EXPECT_EQ(damaged([](auto& write, auto&) { write["folder"] = "tables/t"; }),
            "plan: shuffle_write 'tables/t' is not under _sluice/shuffle/");
  const std::string escaping =
      damaged([](auto& write, auto&) { write["folder"] = "_sluice/shuffle/../x"; });
  EXPECT_EQ(escaping.rfind("plan: shuffle_write: ", 0), 0u) << escaping;
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(), [](auto& d) { d.erase("plan"); })),
            "plan: missing field 'plan'");
}

TEST(StageTaskTest, AttemptsNeverShareAFileName) {
  EXPECT_EQ(plan::ShuffleFileKey("_sluice/shuffle/q-1/s1", "s1p3", 2, 0),
            "_sluice/shuffle/q-1/s1/s1p3-2/part-0.arrow");
  EXPECT_NE(plan::ShuffleFileKey("p", "s1p3", 1, 0), plan::ShuffleFileKey("p", "s1p3", 2, 0));
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

  // Runs the cut's partial aggregate as map task s1p0 with `splits` marked as split scans (each
  // reading its whole table), through the bytes a worker receives; the error, or "ok".
  std::string RunMap(const std::vector<const PlanNode*>& splits) {
    const Stage& stage = stages_.stages[0];
    auto root = std::make_unique<PlanNode>();
    root->kind = PlanNode::Kind::kShuffleWrite;
    root->shuffle_write = plan::ShuffleWrite{stage.output_keys, 2, kFolder};
    root->input = plan::CopyPlan(*stage.root, [&](const PlanNode& n) -> std::unique_ptr<PlanNode> {
      if (std::find(splits.begin(), splits.end(), &n) == splits.end()) return nullptr;
      auto scan = plan::CopyPlan(n);
      scan->split = true;
      return scan;
    });
    plan::Fragment f = Task(1, std::move(root));
    f.session.store_url = "file://" + dir_.string();
    auto bytes = plan::EncodeFragment(f);
    if (!bytes.ok()) return bytes.status().ToString();
    auto decoded = plan::DecodeFragment(bytes->data(), bytes->size());
    if (!decoded.ok()) return decoded.status().ToString();
    report_ = exec::RunFragment(*decoded);
    return report_.status == "error" ? report_.error : "ok";
  }

  // A left join: its build side is never split (an inner join's may be).
  static constexpr char kSql[] = "SELECT k, count(uk) FROM t LEFT JOIN u ON k = uk GROUP BY k";
  static constexpr char kFolder[] = "_sluice/shuffle/q-1/s1";
  std::filesystem::path dir_;
  std::shared_ptr<storage::ObjectStore> store_;
  BoundQuery query_;
  StagePlan stages_;
  exec::TaskReport report_;
};

TEST_F(MapTaskTest, RunsTheChosenSplit) {
  EXPECT_EQ(RunMap({stages_.stages[0].split}), "ok");
  ASSERT_EQ(report_.shuffle_files.size(), 2u);
  EXPECT_EQ(report_.shuffle_files[1].key, plan::ShuffleFileKey(kFolder, "s1p0", 1, 1));
  EXPECT_EQ(report_.records_in, 40);
}

TEST_F(MapTaskTest, RefusesToSplitABuildSide) {
  ASSERT_EQ(stages_.stages[0].broadcast.size(), 1u);
  const std::string error = RunMap({stages_.stages[0].broadcast[0]});
  EXPECT_EQ(error,
            "task s1p0: Invalid: plan: the stage cannot run split: split rows on the build side "
            "of a left, semi or anti join");
  EXPECT_EQ(RunMap({stages_.stages[0].split, stages_.stages[0].broadcast[0]}),
            "Invalid: plan: more than one split scan");
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
  const std::string error = RunMap({stages_.stages[0].split});
  EXPECT_NE(error.find("the stage cannot run split: a sort over split rows"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace sluice::sql
