#include "sql/stage_task.h"

#include <signal.h>

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
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
  ARROW_ASSIGN_OR_RAISE(t.role, plan::Text(doc, "role"));
  if (t.role != "map" && t.role != "join" && t.role != "final") {
    return arrow::Status::Invalid("stage task: unknown role '", t.role, "'");
  }
  ARROW_ASSIGN_OR_RAISE(auto plan_bytes, plan::Bytes(doc, "plan"));
  t.plan.assign(plan_bytes->data(), plan_bytes->data() + plan_bytes->size());
  ARROW_ASSIGN_OR_RAISE(t.output_keys, plan::TextList(doc, "output_keys"));
  ARROW_ASSIGN_OR_RAISE(int64_t partitions, plan::Int(doc, "partitions"));
  if (partitions < 1 || partitions > 65536) {
    return arrow::Status::Invalid("stage task: partitions ", partitions, " out of range");
  }
  t.partitions = static_cast<int32_t>(partitions);
  ARROW_ASSIGN_OR_RAISE(int64_t split_scan, plan::Int(doc, "split_scan"));
  if (split_scan < -1 || split_scan > 65536) {
    return arrow::Status::Invalid("stage task: split scan ", split_scan, " out of range");
  }
  t.split_scan = static_cast<int32_t>(split_scan);
  ARROW_ASSIGN_OR_RAISE(t.one_row_per_key, plan::Bool(doc, "one_row_per_key"));
  if (t.one_row_per_key && t.output_keys.empty()) {
    return arrow::Status::Invalid("stage task: one row per key needs keys");
  }
  ARROW_ASSIGN_OR_RAISE(t.output_prefix, plan::Text(doc, "output_prefix"));
  ARROW_RETURN_NOT_OK(CheckShuffleKey(t.output_prefix, "output prefix"));
  ARROW_ASSIGN_OR_RAISE(const json* inputs, plan::Field(doc, "inputs"));
  if (!inputs->is_array() || inputs->size() > 64) {
    return arrow::Status::Invalid("stage task: inputs must be a list of at most 64");
  }
  for (const json& v : *inputs) {
    StageTaskInput in;
    ARROW_ASSIGN_OR_RAISE(int64_t node, plan::Int(v, "node"));
    if (node < 0 || node > 65536) {
      return arrow::Status::Invalid("stage task: input node ", node, " out of range");
    }
    in.node = static_cast<int32_t>(node);
    ARROW_ASSIGN_OR_RAISE(in.partition_keys, plan::TextList(v, "partition_keys"));
    ARROW_ASSIGN_OR_RAISE(in.files, plan::TextList(v, "files"));
    ARROW_ASSIGN_OR_RAISE(in.blake3, plan::TextList(v, "blake3"));
    if (in.files.empty() || in.files.size() != in.blake3.size()) {
      return arrow::Status::Invalid("stage task: input node ", node, " has ", in.files.size(),
                                    " files and ", in.blake3.size(), " digests");
    }
    for (const auto& key : in.files) ARROW_RETURN_NOT_OK(CheckShuffleKey(key, "input file"));
    t.inputs.push_back(std::move(in));
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

// One row of `table` per distinct value of `keys` (NULLs equal), any one, in no particular
// order, with `table`'s columns in its order.
arrow::Result<std::shared_ptr<arrow::Table>> OneRowPerKey(
    const std::shared_ptr<arrow::Table>& table, const std::vector<std::string>& keys) {
  namespace ac = arrow::acero;
  std::vector<arrow::FieldRef> key_refs(keys.begin(), keys.end());
  std::vector<arrow::compute::Aggregate> others;
  for (const auto& f : table->schema()->fields()) {
    if (std::find(keys.begin(), keys.end(), f->name()) != keys.end()) continue;
    others.emplace_back("hash_one", nullptr, arrow::FieldRef(f->name()), f->name());
  }
  ac::Declaration plan = ac::Declaration::Sequence(
      {{"table_source", ac::TableSourceNodeOptions(table)},
       {"aggregate", ac::AggregateNodeOptions(std::move(others), std::move(key_refs))}});
  ARROW_ASSIGN_OR_RAISE(auto grouped, ac::DeclarationToTable(std::move(plan)));
  std::vector<int> order;
  for (const auto& f : table->schema()->fields()) {
    const int at = grouped->schema()->GetFieldIndex(f->name());
    if (at < 0) return arrow::Status::Invalid("internal: a column is missing after grouping");
    order.push_back(at);
  }
  return grouped->SelectColumns(order);
}

// Test-only fault injection (see the header).
void MaybeFail(const plan::Fragment& f, const std::string& when) {
  const char* fp = std::getenv("SLUICE_FAILPOINT");
  if (fp == nullptr) return;
  const std::string task = when + ":" + f.task_name() + ":";
  if (fp == task + std::to_string(f.attempt) || fp == task + "*") raise(SIGKILL);
}

arrow::Status RunTask(const plan::Fragment& f, const StageTask& task, const BoundQuery& q,
                      storage::ObjectStore* store, const exec::ProgressFn& say,
                      exec::TaskReport* report) {
  const PlanNode& root = *q.plan;
  // The driver placed the split and the inputs; the worker checks that they split the output.
  const PlanNode* split = nullptr;
  if (task.split_scan >= 0) {
    const std::vector<const PlanNode*> scans = ScansOf(root);
    if (task.split_scan >= static_cast<int32_t>(scans.size())) {
      return arrow::Status::Invalid("stage task: split scan ", task.split_scan, " is not a scan");
    }
    split = scans[static_cast<size_t>(task.split_scan)];
  }
  const std::vector<const PlanNode*> nodes = NodesOf(root);
  std::map<const PlanNode*, std::vector<std::string>> partitioned;
  for (const StageTaskInput& in : task.inputs) {
    if (in.node >= static_cast<int32_t>(nodes.size()) ||
        !partitioned.emplace(nodes[static_cast<size_t>(in.node)], in.partition_keys).second) {
      return arrow::Status::Invalid("stage task: input node ", in.node,
                                    " is not a node of the plan, or named twice");
    }
  }
  const std::string refused = StageShapeRefusal(root, split, partitioned);
  if (!refused.empty()) {
    return arrow::Status::Invalid("stage task: the plan cannot run split: ", refused);
  }
  NodeInputs read;
  for (const StageTaskInput& in : task.inputs) {
    const PlanNode* node = nodes[static_cast<size_t>(in.node)];
    ARROW_ASSIGN_OR_RAISE(auto schema, OutputSchema(*node));
    std::vector<std::shared_ptr<arrow::Table>> tables;
    for (size_t i = 0; i < in.files.size(); ++i) {
      say("reading shuffle file '" + in.files[i] + "'");
      ARROW_ASSIGN_OR_RAISE(auto t,
                            exec::ReadShuffleFile(store, in.files[i], in.blake3[i], *schema));
      report->records_in += t->num_rows();
      tables.push_back(std::move(t));
    }
    report->objects += static_cast<int64_t>(tables.size());
    ARROW_ASSIGN_OR_RAISE(read[node], arrow::ConcatenateTables(tables));
  }
  std::string broadcast;
  for (const PlanNode* s : ScansOf(root)) {
    if (s != split && broadcast.find(s->table->name) == std::string::npos) {
      broadcast += (broadcast.empty() ? "" : ", ") + s->table->name;
    }
  }
  if (split != nullptr) {
    std::string files;
    for (const auto& k : split->table->files) files += (files.empty() ? "" : ", ") + k;
    say("running " + task.role + " task " + f.task_name() + " on " + split->table->name +
        " files " + files + (broadcast.empty() ? "" : ", reading whole " + broadcast));
  } else {
    say("running " + task.role + " task " + f.task_name() + " on " +
        std::to_string(report->records_in) + " shuffled rows" +
        (broadcast.empty() ? "" : ", reading whole " + broadcast));
  }
  OperatorProbes probes;
  ARROW_ASSIGN_OR_RAISE(auto produced, Execute(root, root.OutputNames(), &probes, &read));
  if (task.one_row_per_key) {
    ARROW_ASSIGN_OR_RAISE(produced, OneRowPerKey(produced, task.output_keys));
  }
  ARROW_ASSIGN_OR_RAISE(auto declared, OutputSchema(root));
  ARROW_ASSIGN_OR_RAISE(auto table, AsDeclared(produced, declared, "the stage's plan"));
  if (split != nullptr) {
    if (auto it = probes.find(split); it != probes.end()) report->records_in = it->second->rows;
    report->objects = static_cast<int64_t>(split->table->files.size());
  }
  report->rows_out = table->num_rows();
  ARROW_ASSIGN_OR_RAISE(auto parts,
                        exec::HashPartitionByKeys(table, task.output_keys, task.partitions));
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

arrow::Status Run(const plan::Fragment& f, const exec::ProgressFn& say, exec::TaskReport* report) {
  const auto* op =
      f.operators.size() == 1 ? std::get_if<plan::RunSqlStage>(&f.operators[0]) : nullptr;
  if (op == nullptr) {
    return arrow::Status::Invalid("stage task: run_sql_stage must be the only operator");
  }
  ARROW_ASSIGN_OR_RAISE(StageTask task, DecodeStageTask(op->body.data(), op->body.size()));
  ARROW_ASSIGN_OR_RAISE(auto store, storage::ObjectStore::Open(f.session.store_url));
  ARROW_ASSIGN_OR_RAISE(BoundQuery q, DecodeQueryPlan(task.plan.data(), task.plan.size(), store));
  return RunTask(f, task, q, store.get(), say, report);
}

}  // namespace

arrow::Result<std::vector<uint8_t>> EncodeStageTask(const StageTask& t) {
  json inputs = json::array();
  for (const StageTaskInput& in : t.inputs) {
    inputs.push_back({{"node", in.node},
                      {"partition_keys", in.partition_keys},
                      {"files", in.files},
                      {"blake3", in.blake3}});
  }
  json doc = {{"role", t.role},
              {"plan", json::binary(t.plan)},
              {"split_scan", t.split_scan},
              {"inputs", std::move(inputs)},
              {"output_keys", t.output_keys},
              {"partitions", t.partitions},
              {"one_row_per_key", t.one_row_per_key},
              {"output_prefix", t.output_prefix}};
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
