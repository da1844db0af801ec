#include "sql/stage_task.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "exec/row_partition.h"
#include "exec/shuffle.h"
#include "plan/cbor_fields.h"
#include "plan/session_spec.h"
#include "sql/executor.h"
#include "sql/query_plan_codec.h"
#include "sql/stage_planner.h"
#include "storage/object_store.h"

namespace sluice::sql {

namespace {

using json = nlohmann::json;

arrow::Status CheckShuffleKey(const std::string& key, const char* what) {
  auto valid = storage::ObjectStore::ValidateKey(key);
  if (!valid.ok()) return arrow::Status::Invalid("stage task: ", what, ": ", valid.message());
  if (key.rfind(kShufflePrefix, 0) != 0) {
    return arrow::Status::Invalid("stage task: ", what, " '", key, "' is not under ",
                                  kShufflePrefix);
  }
  return arrow::Status::OK();
}

arrow::Result<StageTask> Decode(const uint8_t* data, size_t size) {
  ARROW_ASSIGN_OR_RAISE(json doc,
                        plan::BodyAfterMagic(data, size, kStageTaskMagic, "SLUICE-SQL-STAGE/"));
  StageTask t;
  ARROW_ASSIGN_OR_RAISE(std::string role, plan::Text(doc, "role"));
  if (role == "map") {
    t.role = StageTask::Role::kMap;
  } else if (role == "final") {
    t.role = StageTask::Role::kFinal;
  } else {
    return arrow::Status::Invalid("stage task: unknown role '", role, "'");
  }
  ARROW_ASSIGN_OR_RAISE(auto plan_bytes, plan::Bytes(doc, "plan"));
  t.plan.assign(plan_bytes->data(), plan_bytes->data() + plan_bytes->size());
  ARROW_ASSIGN_OR_RAISE(t.partition_keys, plan::TextList(doc, "partition_keys"));
  ARROW_ASSIGN_OR_RAISE(int64_t partitions, plan::Int(doc, "partitions"));
  if (partitions < 1 || partitions > 65536) {
    return arrow::Status::Invalid("stage task: partitions ", partitions, " out of range");
  }
  t.partitions = static_cast<int32_t>(partitions);
  ARROW_ASSIGN_OR_RAISE(int64_t split_scan, plan::Int(doc, "split_scan"));
  if (split_scan < 0 || split_scan > 65536) {
    return arrow::Status::Invalid("stage task: split scan ", split_scan, " out of range");
  }
  t.split_scan = static_cast<int32_t>(split_scan);
  ARROW_ASSIGN_OR_RAISE(t.output_prefix, plan::Text(doc, "output_prefix"));
  ARROW_RETURN_NOT_OK(CheckShuffleKey(t.output_prefix, "output prefix"));
  ARROW_ASSIGN_OR_RAISE(t.input_keys, plan::TextList(doc, "input_keys"));
  ARROW_ASSIGN_OR_RAISE(t.input_blake3, plan::TextList(doc, "input_blake3"));
  if (t.input_keys.size() != t.input_blake3.size()) {
    return arrow::Status::Invalid("stage task: ", t.input_keys.size(), " input files but ",
                                  t.input_blake3.size(), " digests");
  }
  for (const auto& key : t.input_keys) ARROW_RETURN_NOT_OK(CheckShuffleKey(key, "input file"));
  if (t.role == StageTask::Role::kFinal && t.input_keys.empty()) {
    return arrow::Status::Invalid("stage task: a final task needs input files");
  }
  return t;
}

// `table` under the schema the plan declares for it: Acero marks every output column nullable,
// where the plan keeps a file's NOT NULL, and readers check schemas exactly. Names and types
// must already agree, and a NOT NULL column must hold no nulls.
arrow::Result<std::shared_ptr<arrow::Table>> AsDeclared(
    const std::shared_ptr<arrow::Table>& table, const std::shared_ptr<arrow::Schema>& declared,
    const std::string& what) {
  if (table->num_columns() != declared->num_fields()) {
    return arrow::Status::Invalid("internal: ", what, " produced ", table->schema()->ToString(),
                                  ", the plan declares ", declared->ToString());
  }
  for (int i = 0; i < declared->num_fields(); ++i) {
    const auto& want = declared->field(i);
    const auto& got = table->schema()->field(i);
    if (want->name() != got->name() || !want->type()->Equals(*got->type()) ||
        (!want->nullable() && table->column(i)->null_count() > 0)) {
      return arrow::Status::Invalid("internal: ", what, " produced ", table->schema()->ToString(),
                                    ", the plan declares ", declared->ToString());
    }
  }
  return arrow::Table::Make(declared, table->columns(), table->num_rows());
}

// Test-only fault injection (see the header).
void MaybeFail(const plan::Fragment& f, const std::string& when) {
  const char* fp = std::getenv("SLUICE_FAILPOINT");
  if (fp == nullptr) return;
  const std::string task = when + ":" + f.task_name() + ":";
  if (fp == task + std::to_string(f.attempt) || fp == task + "*") raise(SIGKILL);
}

arrow::Status RunMap(const plan::Fragment& f, const StageTask& task, const BoundQuery& q,
                     storage::ObjectStore* store, const exec::ProgressFn& say,
                     exec::TaskReport* report) {
  const PlanNode& partial = *q.plan;
  if (partial.kind != PlanNode::Kind::kAggregate || partial.final_phase ||
      partial.input == nullptr) {
    return arrow::Status::Invalid("stage task: a map plan must be a partial aggregate");
  }
  // The driver chose the split; the worker checks it is one that splits the output.
  const std::string refused = MapShapeRefusal(*partial.input);
  const std::vector<const PlanNode*> scans = ScansOf(*partial.input);
  const std::vector<const PlanNode*> splittable = SplittableScans(*partial.input);
  if (!refused.empty()) {
    return arrow::Status::Invalid("stage task: a map plan cannot be split: ", refused);
  }
  if (task.split_scan >= static_cast<int32_t>(scans.size()) ||
      std::find(splittable.begin(), splittable.end(),
                scans[static_cast<size_t>(task.split_scan)]) == splittable.end()) {
    return arrow::Status::Invalid("stage task: split scan ", task.split_scan,
                                  " is not a scan whose rows split the map plan's output");
  }
  const PlanNode* scan = scans[static_cast<size_t>(task.split_scan)];
  std::string files, broadcast;
  for (const auto& k : scan->table->files) files += (files.empty() ? "" : ", ") + k;
  for (const PlanNode* s : scans) {
    if (s != scan) broadcast += (broadcast.empty() ? "" : ", ") + s->table->name;
  }
  say("running map task " + f.task_name() + " on " + scan->table->name + " files " + files +
      (broadcast.empty() ? "" : ", reading whole " + broadcast));
  OperatorProbes probes;
  ARROW_ASSIGN_OR_RAISE(auto produced, Execute(partial, partial.OutputNames(), &probes));
  ARROW_ASSIGN_OR_RAISE(auto declared, OutputSchema(partial));
  ARROW_ASSIGN_OR_RAISE(auto table, AsDeclared(produced, declared, "the partial aggregate"));
  if (auto it = probes.find(scan); it != probes.end()) report->records_in = it->second->rows;
  report->objects = static_cast<int64_t>(scan->table->files.size());
  report->rows_out = table->num_rows();
  ARROW_ASSIGN_OR_RAISE(auto parts,
                        exec::HashPartitionByKeys(table, task.partition_keys, task.partitions));
  MaybeFail(f, "kill");
  for (int32_t p = 0; p < task.partitions; ++p) {
    const std::string key = ShuffleFileKey(task.output_prefix, f.task_name(), f.attempt, p);
    say("writing shuffle file '" + key + "'");
    auto file = exec::WriteShuffleFile(store, key, parts[static_cast<size_t>(p)]);
    if (!file.ok()) {
      return arrow::Status::IOError("writing shuffle file '", key, "': ", file.status().message());
    }
    report->shuffle_files.push_back(*file);
  }
  MaybeFail(f, "kill-after-write");
  return arrow::Status::OK();
}

arrow::Status RunFinal(const plan::Fragment& f, const StageTask& task, const BoundQuery& q,
                       storage::ObjectStore* store, const exec::ProgressFn& say,
                       exec::TaskReport* report) {
  const PlanNode& final_aggregate = *q.plan;
  if (final_aggregate.kind != PlanNode::Kind::kAggregate || !final_aggregate.final_phase ||
      final_aggregate.input == nullptr ||
      final_aggregate.input->kind != PlanNode::Kind::kAggregate ||
      final_aggregate.input->final_phase) {
    return arrow::Status::Invalid(
        "stage task: a final plan must be a final aggregate over a partial one");
  }
  ARROW_ASSIGN_OR_RAISE(auto schema, OutputSchema(*final_aggregate.input));
  std::vector<std::shared_ptr<arrow::Table>> tables;
  for (size_t i = 0; i < task.input_keys.size(); ++i) {
    say("reading shuffle file '" + task.input_keys[i] + "'");
    ARROW_ASSIGN_OR_RAISE(
        auto t, exec::ReadShuffleFile(store, task.input_keys[i], task.input_blake3[i], *schema));
    report->records_in += t->num_rows();
    tables.push_back(std::move(t));
  }
  report->objects = static_cast<int64_t>(tables.size());
  ARROW_ASSIGN_OR_RAISE(auto partials, arrow::ConcatenateTables(tables));
  NodeInputs inputs{{final_aggregate.input.get(), partials}};
  say("merging " + std::to_string(partials->num_rows()) + " partial rows in " + f.task_name());
  ARROW_ASSIGN_OR_RAISE(auto merged,
                        Execute(final_aggregate, final_aggregate.OutputNames(), nullptr, &inputs));
  ARROW_ASSIGN_OR_RAISE(auto declared, OutputSchema(final_aggregate));
  ARROW_ASSIGN_OR_RAISE(auto result, AsDeclared(merged, declared, "the final aggregate"));
  report->rows_out = result->num_rows();
  MaybeFail(f, "kill");
  const std::string key = ShuffleFileKey(task.output_prefix, f.task_name(), f.attempt, 0);
  say("writing shuffle file '" + key + "'");
  auto file = exec::WriteShuffleFile(store, key, result);
  if (!file.ok()) {
    return arrow::Status::IOError("writing shuffle file '", key, "': ", file.status().message());
  }
  report->shuffle_files.push_back(*file);
  MaybeFail(f, "kill-after-write");
  return arrow::Status::OK();
}

arrow::Status Run(const plan::Fragment& f, const exec::ProgressFn& say, exec::TaskReport* report) {
  const auto* op =
      f.operators.size() == 1 ? std::get_if<plan::RunSqlStage>(&f.operators[0]) : nullptr;
  if (op == nullptr) {
    return arrow::Status::Invalid("stage task: run_sql_stage must be the only operator");
  }
  ARROW_ASSIGN_OR_RAISE(StageTask task, DecodeStageTask(op->body.data(), op->body.size()));
  ARROW_ASSIGN_OR_RAISE(auto store, storage::ObjectStore::Open(f.session.store_url));
  ARROW_ASSIGN_OR_RAISE(BoundQuery q, DecodeQueryPlan(task.plan.data(), task.plan.size(), store));
  if (task.role == StageTask::Role::kMap) {
    return RunMap(f, task, q, store.get(), say, report);
  }
  return RunFinal(f, task, q, store.get(), say, report);
}

}  // namespace

arrow::Result<std::vector<uint8_t>> EncodeStageTask(const StageTask& t) {
  json doc = {{"role", t.role == StageTask::Role::kMap ? "map" : "final"},
              {"plan", json::binary(t.plan)},
              {"partition_keys", t.partition_keys},
              {"partitions", t.partitions},
              {"split_scan", t.split_scan},
              {"output_prefix", t.output_prefix},
              {"input_keys", t.input_keys},
              {"input_blake3", t.input_blake3}};
  return plan::WithMagic(kStageTaskMagic, doc);
}

arrow::Result<StageTask> DecodeStageTask(const uint8_t* data, size_t size) {
  try {
    return Decode(data, size);
  } catch (const std::exception& e) {  // a tree shape nlohmann refuses by throwing
    return arrow::Status::Invalid("stage task: malformed (", e.what(), ")");
  }
}

std::string ShuffleFileKey(const std::string& output_prefix, const std::string& task,
                           int32_t attempt, int32_t partition) {
  return output_prefix + "/" + task + "-" + std::to_string(attempt) + "/part-" +
         std::to_string(partition) + ".arrow";
}

exec::TaskReport RunStageTask(const plan::Fragment& fragment, const exec::ProgressFn& progress) {
  exec::TaskReport report;
  report.task = fragment.task_name();
  report.attempt = fragment.attempt;
  const auto start = std::chrono::steady_clock::now();
  exec::ProgressFn say = [&](const std::string& doing) {
    if (progress) progress(doing);
  };
  // Nothing runs on a worker that cannot give the driver's answer.
  arrow::Status st = plan::CheckParity(fragment.session.parity);
  if (st.ok()) st = Run(fragment, say, &report);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!st.ok()) {
    report.status = "error";
    report.error = "query " + fragment.run_id + " stage " + std::to_string(fragment.stage_id) +
                   " task " + fragment.task_name() + " attempt " +
                   std::to_string(fragment.attempt) + ": " + st.ToString();
    report.shuffle_files.clear();
  }
  return report;
}

}  // namespace sluice::sql
