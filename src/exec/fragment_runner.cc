#include "exec/fragment_runner.h"

#include <arrow/acero/api.h>
#include <arrow/api.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "exec/call_transform_node.h"
#include "exec/dedup_node.h"
#include "exec/key_repeats.h"
#include "exec/plan_executor.h"
#include "exec/scan_objects_node.h"
#include "exec/shuffle.h"
#include "exec/shuffle_write_node.h"
#include "exec/sink_write_node.h"
#include "plan/compute_init.h"
#include "plan/session_spec.h"
#include "plan/stage_shape.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;

arrow::Status RegisterJobNodes() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    ac::ExecFactoryRegistry* registry = ac::default_exec_factory_registry();
    status = RegisterScanObjectsNode(registry);
    if (status.ok()) status = RegisterCallTransformNode(registry);
    if (status.ok()) status = RegisterShuffleWriteNode(registry);
    if (status.ok()) status = RegisterDedupNode(registry);
    if (status.ok()) status = RegisterSinkWriteNode(registry);
  });
  return status;
}

// The rows of a shuffle read: every file, in the order given, read whole and checked against
// its writer's BLAKE3 and the plan's schema before the plan starts.
arrow::Result<std::shared_ptr<arrow::Table>> ReadShuffle(const plan::ShuffleRead& read,
                                                         const JobTask& task) {
  if (read.schema == nullptr || read.blake3.size() != read.files.size()) {
    return arrow::Status::Invalid("internal: plan: shuffle_read without a schema or digests");
  }
  std::vector<std::shared_ptr<arrow::Table>> tables;
  for (size_t i = 0; i < read.files.size(); ++i) {
    const std::string& key = read.files[i];
    task.Say("reading shuffle file '" + key + "'");
    ARROW_ASSIGN_OR_RAISE(auto table,
                          ReadShuffleFile(task.store.get(), key, read.blake3[i], *read.schema));
    tables.push_back(std::move(table));
  }
  if (tables.empty()) return arrow::Table::MakeEmpty(read.schema);
  return arrow::ConcatenateTables(tables);
}

// A job's plan is one chain: a scan first, then stages, then one end (a shuffle or sink
// write). Each node becomes one Acero declaration.
arrow::Result<ac::Declaration> JobDeclaration(const plan::PlanNode& root,
                                              const std::shared_ptr<JobTask>& task) {
  std::vector<const plan::PlanNode*> chain;
  for (const plan::PlanNode* n = &root; n != nullptr; n = n->input.get()) {
    if (n->right != nullptr) return arrow::Status::Invalid("internal: plan: a job plan branches");
    chain.insert(chain.begin(), n);
  }
  std::vector<ac::Declaration> steps;
  for (size_t i = 0; i < chain.size(); ++i) {
    const plan::PlanNode& n = *chain[i];
    using K = plan::PlanNode::Kind;
    const bool source = n.kind == K::kScanObjects || n.kind == K::kShuffleRead;
    const bool end = n.kind == K::kShuffleWrite || n.kind == K::kSinkWrite;
    if (source != (i == 0) || end != (i + 1 == chain.size())) {
      return arrow::Status::Invalid("internal: plan: task ", task->fragment->task_name(),
                                    ": a job plan is one scan, then stages, then one end");
    }
    switch (n.kind) {
      case K::kScanObjects:
        steps.emplace_back(kScanObjectsNode, ScanObjectsNodeOptions(n.objects, task));
        break;
      case K::kShuffleRead: {
        // Rows that already carry __seq enter as plain batches (object_chunks.h).
        ARROW_ASSIGN_OR_RAISE(auto table, ReadShuffle(n.shuffle_read, *task));
        ARROW_ASSIGN_OR_RAISE(auto read, arrow::TableBatchReader(*table).ToRecordBatches());
        std::vector<arrow::ExecBatch> batches;
        for (const auto& b : read) batches.emplace_back(*b);
        steps.emplace_back("exec_batch_source", ac::ExecBatchSourceNodeOptions(
                                                    n.shuffle_read.schema, std::move(batches)));
        break;
      }
      case K::kTransform:
        steps.emplace_back(kCallTransformNode, CallTransformNodeOptions(n.transform, task));
        break;
      case K::kDedup:
        steps.emplace_back(kDedupNode, DedupNodeOptions(n.dedup, task));
        break;
      case K::kShuffleWrite:
        steps.emplace_back(kShuffleWriteNode, ShuffleWriteNodeOptions(n.shuffle_write, task));
        break;
      case K::kSinkWrite:
        steps.emplace_back(kSinkWriteNode, SinkWriteNodeOptions(n.sink, task));
        break;
      default:
        return arrow::Status::Invalid("internal: plan: a ", plan::KindName(n.kind),
                                      " in a job plan");
    }
  }
  return ac::Declaration::Sequence(std::move(steps));
}

arrow::Status RunJob(const plan::PlanNode& root, const std::shared_ptr<JobTask>& task) {
  ARROW_RETURN_NOT_OK(RegisterJobNodes());
  ARROW_ASSIGN_OR_RAISE(ac::Declaration plan, JobDeclaration(root, task));
  ac::QueryOptions options;
  // One thread: rows arrive at every node in the order they were sent, which object framing,
  // __seq and byte-identical outputs rely on; a task is a worker process, one per core.
  options.use_threads = false;
  return ac::DeclarationToStatus(std::move(plan), std::move(options));
}

// `table` under the schema the plan declares for it: Acero marks every output column nullable,
// where the plan keeps a file's NOT NULL, and readers check schemas exactly. Names and types
// must already agree, and a NOT NULL column must hold no nulls.
arrow::Result<std::shared_ptr<arrow::Table>> AsDeclared(
    const std::shared_ptr<arrow::Table>& table, const std::shared_ptr<arrow::Schema>& declared) {
  auto differ = [&] {
    return arrow::Status::Invalid("internal: the stage's plan produced ",
                                  table->schema()->ToString(), ", the plan declares ",
                                  declared->ToString());
  };
  if (table->num_columns() != declared->num_fields()) return differ();
  for (int i = 0; i < declared->num_fields(); ++i) {
    const auto& want = declared->field(i);
    const auto& got = table->schema()->field(i);
    if (want->name() != got->name() || !want->type()->Equals(*got->type()) ||
        (!want->nullable() && table->column(i)->null_count() > 0)) {
      return differ();
    }
  }
  return arrow::Table::Make(declared, table->columns(), table->num_rows());
}

// A SQL stage's task: relational operators over a split scan or shuffle reads, under the
// stage's exchange. The plan runs on Acero's threads; its result is written as one table.
arrow::Status RunRelational(const plan::PlanNode& root, const std::shared_ptr<JobTask>& task) {
  using K = plan::PlanNode::Kind;
  if (root.kind != K::kShuffleWrite) {
    return arrow::Status::Invalid("plan: a SQL stage's task ends in a shuffle_write, not a ",
                                  plan::KindName(root.kind));
  }
  const plan::PlanNode& stage = *root.input;
  // The driver placed the split and the partitions; the worker checks that they split the
  // output (plan/stage_shape.h).
  const plan::PlanNode* split = nullptr;
  std::map<const plan::PlanNode*, std::vector<std::string>> partitioned;
  for (const plan::PlanNode* n : plan::NodesOf(stage)) {
    if (n->kind == K::kScan && n->split) {
      if (split != nullptr) return arrow::Status::Invalid("plan: more than one split scan");
      split = n;
    }
    if (n->kind == K::kShuffleRead) partitioned[n] = n->shuffle_read.partition_keys;
  }
  const std::string refused = plan::StageShapeRefusal(stage, split, partitioned);
  if (!refused.empty()) {
    return arrow::Status::Invalid("plan: the stage cannot run split: ", refused);
  }
  NodeInputs read;
  for (const auto& [node, keys] : partitioned) {
    ARROW_ASSIGN_OR_RAISE(read[node], ReadShuffle(node->shuffle_read, *task));
    // A SQL task's report counts the shuffle files it read, and their rows, as its input.
    task->report->objects += static_cast<int64_t>(node->shuffle_read.files.size());
    task->report->records_in += read[node]->num_rows();
  }
  std::string broadcast;
  for (const plan::PlanNode* s : plan::ScansOf(stage)) {
    if (s != split && broadcast.find(s->table->name) == std::string::npos) {
      broadcast += (broadcast.empty() ? "" : ", ") + s->table->name;
    }
  }
  const std::string& name = task->fragment->task_name();
  if (split != nullptr) {
    std::string files;
    for (const auto& k : split->table->files) files += (files.empty() ? "" : ", ") + k;
    task->Say("running task " + name + " on " + split->table->name + " files " + files +
              (broadcast.empty() ? "" : ", reading whole " + broadcast));
  } else {
    task->Say("running task " + name + " on " + std::to_string(task->report->records_in) +
              " shuffled rows" + (broadcast.empty() ? "" : ", reading whole " + broadcast));
  }
  OperatorProbes probes;
  ARROW_ASSIGN_OR_RAISE(auto produced, Execute(stage, stage.OutputNames(), &probes, &read));
  if (root.shuffle_write.one_row_per_key) {
    ARROW_ASSIGN_OR_RAISE(produced, DropRepeatedKeys(produced, root.shuffle_write.keys));
  }
  ARROW_ASSIGN_OR_RAISE(auto declared, plan::OutputSchema(stage));
  ARROW_ASSIGN_OR_RAISE(auto table, AsDeclared(produced, declared));
  if (split != nullptr) {
    if (auto it = probes.find(split); it != probes.end()) {
      task->report->records_in = it->second->rows;
    }
    task->report->objects = static_cast<int64_t>(split->table->files.size());
  }
  for (const plan::PlanNode* s : plan::ScansOf(stage)) {
    if (auto it = probes.find(s); s != split && it != probes.end()) {
      task->report->broadcast_rows += it->second->rows;
    }
  }
  task->report->rows_out = table->num_rows();
  return WriteExchange(table, root.shuffle_write, *task);
}

bool IsJobPlan(const plan::PlanNode& root) {
  for (const plan::PlanNode* n = &root; n != nullptr; n = n->input.get()) {
    if (plan::IsJobKind(n->kind)) return true;
  }
  return false;
}

arrow::Status Run(const plan::Fragment& f, const ProgressFn& progress, TaskReport* report) {
  if (f.root == nullptr) return arrow::Status::Invalid("internal: a fragment without a plan");
  auto task = std::make_shared<JobTask>();
  task->fragment = &f;
  task->report = report;
  task->progress = progress;
  ARROW_ASSIGN_OR_RAISE(task->store, storage::ObjectStore::Open(f.session.store_url));
  ARROW_RETURN_NOT_OK(plan::EnsureComputeInitialized());
  return IsJobPlan(*f.root) ? RunJob(*f.root, task) : RunRelational(*f.root, task);
}

}  // namespace

TaskReport RunFragment(const plan::Fragment& fragment, const ProgressFn& progress) {
  const auto start = std::chrono::steady_clock::now();
  TaskReport report;
  report.task = fragment.task_name();
  report.attempt = fragment.attempt;
  // Nothing runs on a worker that cannot give the driver's answer.
  arrow::Status st = plan::CheckParity(fragment.session.parity);
  if (st.ok()) st = Run(fragment, progress, &report);
  if (!st.ok()) {
    report.status = "error";
    report.error = "task " + fragment.task_name() + ": " + st.ToString();
    report.shuffle_files.clear();
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace sluice::exec
