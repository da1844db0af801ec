// The stage cutter: where a physical plan with Exchange nodes (plan_node.h) becomes the stages
// that the scheduler (stage_scheduler.h) runs, for `sluice submit`'s jobs and `sluice query`'s
// SQL alike. Each front door plans its exchanges (a job: one above its transforms when it has a
// dedup; SQL: sql/stage_planner.h) and cuts here.
//
// Each Exchange ends a stage: the subtree below it runs as the producing stage's tasks, each
// topped by a shuffle write (hash on the exchange's keys into its partitions, or one file to
// gather), and the stage above reads it. A stage's rows are divided among its tasks in one of
// two ways:
//   split        it has one split leaf (a kScanObjects, or a kScan marked `split`) and reads no
//                exchange: the caller says how many tasks and gives each its share;
//   partitioned  it reads exchanges: task p reads part p of every task of each producing stage,
//                exactly the files that task's successful attempt reported, each with its BLAKE3
//                (never a file found by listing).
// The part above the top exchanges is the root stage: tasks of their own (a job's sink parts) or
// the caller's (SQL's driver reads what the gathering exchanges wrote).
//
// Task t of stage s is "s<s>p<t>" and attempt a writes under `<shuffle folder>/s<s>/s<s>p<t>-<a>/`
// (plan::ShuffleFileKey), so no two attempts share a file name.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dist/stage_scheduler.h"
#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::dist {

struct CutOptions {
  /// Fragment::run_id and the session spec every task carries.
  std::string run_id;
  plan::SessionSpec session;
  /// Stage s writes its shuffle files under `<shuffle_folder>/s<s>`.
  std::string shuffle_folder;
  /// Whether the part above the top exchanges runs as tasks (the last stage); when false, the
  /// caller runs it on what the gathering exchanges wrote (GatheredFiles).
  bool root_stage = true;
  /// A stage's id, given its top node and the exchange above it (null: the root stage), and its
  /// name in progress lines and failures ("stage 1 (map)").
  std::function<int(const plan::PlanNode& root, const plan::PlanNode* exchange)> stage_id;
  std::function<std::string(const plan::PlanNode& root, const plan::PlanNode* exchange, int id)>
      stage_name;
  /// How many tasks a split stage has, and task `task`'s share of its split leaf.
  std::function<int(const plan::PlanNode& leaf)> split_tasks;
  std::function<arrow::Result<std::unique_ptr<plan::PlanNode>>(const plan::PlanNode& leaf,
                                                               int task)>
      split_share;
  /// When given, task `task`'s copy of another node of a split stage whose top is `root` (a
  /// broadcast scan read only where it can meet the task's share), or null to copy it as it is.
  std::function<arrow::Result<std::unique_ptr<plan::PlanNode>>(
      const plan::PlanNode& root, const plan::PlanNode& leaf, const plan::PlanNode& node, int task)>
      task_node;
  /// Completes task `task` of the root stage (a job's sink part key), when given.
  std::function<void(int task, plan::PlanNode* top)> finish_root;
};

struct CutStage {
  int id = 0;
  std::string name;
  /// The stage runs this node's subtree, with its input exchanges read from shuffle files.
  const plan::PlanNode* root = nullptr;
  /// The exchange its rows leave through; null for the root stage.
  const plan::PlanNode* exchange = nullptr;
  /// Its split leaf, or null.
  const plan::PlanNode* split = nullptr;
  /// The exchanges it reads, and the producing stage (an index into StageCut::stages()) of each.
  std::vector<const plan::PlanNode*> inputs;
  std::vector<size_t> producers;
  int tasks = 1;
  /// Per task, the shuffle bytes it reads; filled as its tasks are built.
  std::vector<int64_t> read_bytes;
};

class StageCut {
 public:
  /// Cuts `plan`, which must outlive the result, at its exchanges: producers first. A stage
  /// without a split leaf or input exchanges, with both, or with two split leaves, and
  /// partitioned inputs that disagree on their partition count are internal errors.
  static arrow::Result<std::unique_ptr<StageCut>> Make(const plan::PlanNode& plan,
                                                       CutOptions options);

  const std::vector<CutStage>& stages() const { return stages_; }

  /// Every stage, as the scheduler runs it; the result refers to this object.
  std::vector<ScheduledStage> Scheduled();

  /// The gathering exchanges the caller reads (root_stage false), each with its stage's index.
  const std::vector<std::pair<const plan::PlanNode*, size_t>>& gathered() const {
    return gathered_;
  }

 private:
  explicit StageCut(CutOptions options) : options_(std::move(options)) {}
  arrow::Result<size_t> AddStage(const plan::PlanNode* root, const plan::PlanNode* exchange);
  arrow::Status Walk(const plan::PlanNode& node, CutStage* stage);
  arrow::Result<std::vector<plan::Fragment>> Fragments(size_t index,
                                                       const std::vector<StageResult>& done);

  CutOptions options_;
  std::vector<CutStage> stages_;
  std::vector<std::pair<const plan::PlanNode*, size_t>> gathered_;
};

}  // namespace sluice::dist
