// The stage cutter on hand-built plans: a job's shape (objects, an exchange on the dedup key,
// dedup, sink) and SQL's (a gather to the driver), the tasks it makes from the producers'
// reports, and the plans it refuses.
#include "dist/stage_cutter.h"

#include <gtest/gtest.h>

#include <arrow/api.h>

namespace sluice::dist {
namespace {

using plan::PlanNode;

std::shared_ptr<arrow::Schema> Rows() {
  return arrow::schema({arrow::field("k", arrow::utf8()), arrow::field("__seq", arrow::int64())});
}

plan::PlanNodeFields Objects(std::vector<std::string> keys) {
  plan::ScanObjects scan;
  scan.format = "jsonl";
  scan.keys = std::move(keys);
  scan.schema = arrow::schema({arrow::field("k", arrow::utf8())});
  return plan::Step(std::move(scan));
}

// scan_objects(6 objects) -> exchange(hash on k into 3) -> dedup -> sink.
std::unique_ptr<PlanNode> JobPlan() {
  plan::PlanNodeFields exchange;
  exchange.kind = PlanNode::Kind::kExchange;
  exchange.exchange.keys = {"k"};
  exchange.exchange.partitions = 3;
  exchange.exchange.schema = Rows();
  return plan::Chain({Objects({"o0", "o1", "o2", "o3", "o4", "o5"}), exchange,
                      plan::Step(plan::DedupFirst{"k"}),
                      plan::Step(plan::WriteSink{"parquet", ""})});
}

CutOptions JobOptions() {
  CutOptions o;
  o.run_id = "r";
  o.shuffle_folder = "_sluice/shuffle/r";
  o.split_tasks = [](const PlanNode&) { return 2; };
  o.split_share = [](const PlanNode& leaf, int task) -> arrow::Result<std::unique_ptr<PlanNode>> {
    auto scan = plan::CopyPlan(leaf);
    scan->objects.keys.assign(leaf.objects.keys.begin() + 3 * task,
                              leaf.objects.keys.begin() + 3 * (task + 1));
    scan->objects.first_object_index = 3 * task;
    return scan;
  };
  o.finish_root = [](int task, PlanNode* top) { top->sink.key = "part-" + std::to_string(task); };
  return o;
}

// What a map task reports: one shuffle file per partition, named for its attempt.
StageResult MapReports(const CutStage& stage, int attempt) {
  StageResult r;
  r.wave = 0;
  for (int t = 0; t < stage.tasks; ++t) {
    exec::TaskReport report;
    report.task = "s" + std::to_string(stage.id) + "p" + std::to_string(t);
    report.attempt = attempt;
    for (int p = 0; p < 3; ++p) {
      exec::OutputFile f;
      f.key = plan::ShuffleFileKey("_sluice/shuffle/r/s0", report.task, attempt, p);
      f.blake3 = "b" + std::to_string(t) + std::to_string(p);
      f.bytes = 10;
      report.shuffle_files.push_back(f);
    }
    r.reports.push_back(report);
  }
  return r;
}

TEST(StageCutterTest, AJobIsAMapStageAndADedupStageReadingItsPartitions) {
  auto job = JobPlan();
  auto cut = StageCut::Make(*job, JobOptions());
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  const auto& stages = (*cut)->stages();
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].tasks, 2);
  EXPECT_NE(stages[0].split, nullptr);
  EXPECT_EQ(stages[0].exchange, job->input->input.get());
  EXPECT_EQ(stages[1].tasks, 3);  // one per partition of the exchange it reads
  EXPECT_EQ(stages[1].producers, std::vector<size_t>{0});
  EXPECT_EQ(stages[1].exchange, nullptr);

  auto scheduled = (*cut)->Scheduled();
  ASSERT_EQ(scheduled.size(), 2u);
  EXPECT_EQ(scheduled[0].shuffle_files, 3);
  EXPECT_EQ(scheduled[1].shuffle_files, 0);
  EXPECT_EQ(scheduled[1].producers, std::vector<size_t>{0});

  std::vector<StageResult> done(2);
  auto maps = scheduled[0].fragments(done);
  ASSERT_TRUE(maps.ok()) << maps.status().ToString();
  ASSERT_EQ(maps->size(), 2u);
  EXPECT_EQ((*maps)[1].task_name(), "s0p1");
  EXPECT_EQ((*maps)[1].root->Explain(),
            "ShuffleWrite 3 partitions on k\n"
            "  ScanObjects jsonl (3 objects) as \n");
  EXPECT_EQ((*maps)[1].root->input->objects.first_object_index, 3);
  EXPECT_EQ((*maps)[1].root->shuffle_write.folder, "_sluice/shuffle/r/s0");
  EXPECT_EQ(scheduled[0].shuffle_file_key((*maps)[1], 2, 1),
            "_sluice/shuffle/r/s0/s0p1-2/part-1.arrow");

  // The dedup stage's task p reads part p of each map task's reported (successful) attempt.
  done[0] = MapReports(stages[0], 2);
  auto dedups = scheduled[1].fragments(done);
  ASSERT_TRUE(dedups.ok()) << dedups.status().ToString();
  ASSERT_EQ(dedups->size(), 3u);
  const plan::Fragment& last = (*dedups)[2];
  EXPECT_EQ(last.task_name(), "s1p2");
  EXPECT_EQ(last.root->Explain(),
            "SinkWrite parquet part-2\n"
            "  DedupFirst k\n"
            "    ShuffleRead (2 files) partitioned on k\n");
  const plan::ShuffleRead& read = last.root->input->input->shuffle_read;
  EXPECT_EQ(read.files, (std::vector<std::string>{"_sluice/shuffle/r/s0/s0p0-2/part-2.arrow",
                                                  "_sluice/shuffle/r/s0/s0p1-2/part-2.arrow"}));
  EXPECT_EQ(read.blake3, (std::vector<std::string>{"b02", "b12"}));
  EXPECT_TRUE(read.schema->Equals(*Rows()));
  EXPECT_EQ((*cut)->stages()[1].read_bytes, (std::vector<int64_t>{20, 20, 20}));
}

TEST(StageCutterTest, WithoutAnExchangeAJobIsOneStageOfSinkParts) {
  auto job = plan::Chain(
      {Objects({"a", "b", "c", "d", "e", "f"}), plan::Step(plan::WriteSink{"ipc", ""})});
  auto cut = StageCut::Make(*job, JobOptions());
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  ASSERT_EQ((*cut)->stages().size(), 1u);
  std::vector<StageResult> done(1);
  auto tasks = (*cut)->Scheduled()[0].fragments(done);
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 2u);
  EXPECT_EQ((*tasks)[0].root->sink.key, "part-0");
  EXPECT_EQ((*tasks)[1].root->sink.key, "part-1");
}

TEST(StageCutterTest, TheDriversGatherIsLeftToTheCaller) {
  // exchange(gather) -> exchange(hash into 2) below a final step: the driver reads the gather.
  auto map = plan::Chain({Objects({"a", "b"})});
  auto hash = plan::MakeNode(PlanNode::Kind::kExchange, std::move(map));
  hash->exchange.keys = {"k"};
  hash->exchange.partitions = 2;
  hash->exchange.schema = Rows();
  auto final_step = plan::MakeNode(PlanNode::Kind::kDedup, std::move(hash));
  auto gather = plan::MakeNode(PlanNode::Kind::kExchange, std::move(final_step));
  gather->exchange.gather = true;
  CutOptions o = JobOptions();
  o.root_stage = false;
  auto cut = StageCut::Make(*gather, o);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  ASSERT_EQ((*cut)->stages().size(), 2u);
  EXPECT_EQ((*cut)->stages()[1].tasks, 2);
  ASSERT_EQ((*cut)->gathered().size(), 1u);
  EXPECT_EQ((*cut)->gathered()[0].first, gather.get());
  EXPECT_EQ((*cut)->gathered()[0].second, 1u);
  EXPECT_EQ((*cut)->Scheduled()[1].shuffle_files, 1);  // one file per task to gather
}

TEST(StageCutterTest, RefusesStagesWithoutOneSourceOfRows) {
  // Two split leaves in one stage (a join of two object scans): which rows would a task get?
  auto two = plan::MakeNode(PlanNode::Kind::kJoin, plan::Chain({Objects({"a"})}));
  two->right = plan::Chain({Objects({"b"})});
  auto cut = StageCut::Make(*two, JobOptions());
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("internal: a stage with two split leaves"),
            std::string::npos);
  // A stage with no split leaf and no exchange below it.
  auto none = plan::Chain({plan::Step(plan::DedupFirst{"k"})});
  cut = StageCut::Make(*none, JobOptions());
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("not neither"), std::string::npos);
  // A split stage whose caller gives no shares: every task would read every object.
  CutOptions no_shares = JobOptions();
  no_shares.split_share = nullptr;
  auto job = JobPlan();
  cut = StageCut::Make(*job, no_shares);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("without split_tasks and split_share"), std::string::npos);
}

}  // namespace
}  // namespace sluice::dist
