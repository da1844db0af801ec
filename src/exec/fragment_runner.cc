#include "exec/fragment_runner.h"

#include <arrow/acero/api.h>
#include <arrow/api.h>

#include <chrono>
#include <mutex>
#include <type_traits>

#include "exec/call_transform_node.h"
#include "exec/compute_init.h"
#include "exec/dedup_node.h"
#include "exec/scan_objects_node.h"
#include "exec/shuffle.h"
#include "exec/shuffle_write_node.h"
#include "exec/sink_write_node.h"
#include "plan/session_spec.h"

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

// The rows of a shuffle scan: every file, in the order given, read whole and checked against
// its writer's BLAKE3 and the plan's schema before the plan starts.
arrow::Result<ac::Declaration> ShuffleSource(const plan::ScanShuffle& scan, const JobTask& task) {
  if (scan.schema == nullptr || scan.blake3.size() != scan.keys.size()) {
    return arrow::Status::Invalid("internal: plan: scan_shuffle without a schema or digests");
  }
  std::vector<arrow::ExecBatch> batches;
  for (size_t i = 0; i < scan.keys.size(); ++i) {
    const std::string& key = scan.keys[i];
    task.Say("reading shuffle file '" + key + "'");
    ARROW_ASSIGN_OR_RAISE(auto table,
                          ReadShuffleFile(task.store.get(), key, scan.blake3[i], *scan.schema));
    ARROW_ASSIGN_OR_RAISE(auto read, arrow::TableBatchReader(*table).ToRecordBatches());
    for (const auto& b : read) batches.emplace_back(*b);
  }
  return ac::Declaration("exec_batch_source",
                         ac::ExecBatchSourceNodeOptions(scan.schema, std::move(batches)));
}

// One declaration per operator, in order: a scan first, then stages, and at most one end
// (a shuffle write or a sink part) last.
arrow::Result<ac::Declaration> JobDeclaration(const plan::Fragment& f,
                                              const std::shared_ptr<JobTask>& task) {
  std::vector<ac::Declaration> steps;
  bool ended = false;
  for (size_t i = 0; i < f.operators.size(); ++i) {
    const plan::Operator& op = f.operators[i];
    if (std::holds_alternative<plan::RunSqlStage>(op)) {
      // `sluice worker` hands a SQL stage to the SQL layer before it gets here.
      return arrow::Status::Invalid(
          "internal: plan: run_sql_stage reached the job fragment runner");
    }
    const bool scan = std::holds_alternative<plan::ScanObjects>(op) ||
                      std::holds_alternative<plan::ScanShuffle>(op);
    if (scan != (i == 0) || ended) {
      return arrow::Status::Invalid("internal: plan: task ", f.task_name(),
                                    ": a job fragment is one scan, then stages, then one end");
    }
    ARROW_ASSIGN_OR_RAISE(
        ac::Declaration step,
        std::visit(
            [&](const auto& o) -> arrow::Result<ac::Declaration> {
              using T = std::decay_t<decltype(o)>;
              if constexpr (std::is_same_v<T, plan::ScanObjects>) {
                return ac::Declaration(kScanObjectsNode, ScanObjectsNodeOptions(o, task));
              } else if constexpr (std::is_same_v<T, plan::ScanShuffle>) {
                return ShuffleSource(o, *task);
              } else if constexpr (std::is_same_v<T, plan::CallTransform>) {
                return ac::Declaration(kCallTransformNode, CallTransformNodeOptions(o, task));
              } else if constexpr (std::is_same_v<T, plan::HashExchange>) {
                ended = true;
                return ac::Declaration(kShuffleWriteNode, ShuffleWriteNodeOptions(o, task));
              } else if constexpr (std::is_same_v<T, plan::DedupFirst>) {
                return ac::Declaration(kDedupNode, DedupNodeOptions(o, task));
              } else if constexpr (std::is_same_v<T, plan::WriteSink>) {
                ended = true;
                return ac::Declaration(kSinkWriteNode, SinkWriteNodeOptions(o, task));
              } else {
                return arrow::Status::Invalid("internal: plan: unexpected operator");
              }
            },
            op));
    steps.push_back(std::move(step));
  }
  return ac::Declaration::Sequence(std::move(steps));
}

arrow::Status RunJob(const plan::Fragment& f, const ProgressFn& progress, TaskReport* report) {
  auto task = std::make_shared<JobTask>();
  task->fragment = &f;
  task->report = report;
  task->progress = progress;
  ARROW_ASSIGN_OR_RAISE(task->store, storage::ObjectStore::Open(f.session.store_url));
  if (f.operators.empty()) return arrow::Status::OK();
  ARROW_RETURN_NOT_OK(EnsureComputeInitialized());
  ARROW_RETURN_NOT_OK(RegisterJobNodes());
  ARROW_ASSIGN_OR_RAISE(ac::Declaration plan, JobDeclaration(f, task));
  ac::QueryOptions options;
  // One thread: rows arrive at every node in the order they were sent, which object framing,
  // __seq and byte-identical outputs rely on; a task is a worker process, one per core.
  options.use_threads = false;
  return ac::DeclarationToStatus(std::move(plan), std::move(options));
}

}  // namespace

TaskReport RunFragment(const plan::Fragment& fragment, const ProgressFn& progress) {
  const auto start = std::chrono::steady_clock::now();
  TaskReport report;
  report.task = fragment.task_name();
  report.attempt = fragment.attempt;
  // Nothing runs on a worker that cannot give the driver's answer.
  arrow::Status st = plan::CheckParity(fragment.session.parity);
  if (st.ok()) st = RunJob(fragment, progress, &report);
  if (!st.ok()) {
    report.status = "error";
    report.error = "task " + fragment.task_name() + ": " + st.ToString();
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace sluice::exec
