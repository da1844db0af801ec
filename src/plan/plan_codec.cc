#include "plan/plan_codec.h"

#include <arrow/buffer.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "plan/cbor_fields.h"
#include "plan/session_spec.h"

namespace sluice::plan {

namespace {

using json = nlohmann::json;

// A schema's bytes, recording a failure in *st (EncodeFragment reports it) instead of throwing.
json SchemaOrNull(const std::shared_ptr<arrow::Schema>& schema, arrow::Status* st) {
  auto bytes = SchemaBytes(schema);
  if (!bytes.ok()) {
    *st = bytes.status();
    return nullptr;
  }
  return *bytes;
}

json EncodeOperator(const Operator& op, arrow::Status* st) {
  return std::visit(
      [st](const auto& o) -> json {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ScanObjects>) {
          return {{"op", "scan_objects"},
                  {"format", o.format},
                  {"keys", o.keys},
                  {"first_object_index", o.first_object_index},
                  {"schema_id", o.schema_id},
                  {"schema", SchemaOrNull(o.schema, st)},
                  {"skip_bad_records", o.skip_bad_records}};
        } else if constexpr (std::is_same_v<T, ScanShuffle>) {
          return {{"op", "scan_shuffle"},
                  {"keys", o.keys},
                  {"blake3", o.blake3},
                  {"schema", SchemaOrNull(o.schema, st)}};
        } else if constexpr (std::is_same_v<T, CallTransform>) {
          return {{"op", "call_transform"},
                  {"qualified_name", o.qualified_name},
                  {"pin", o.pin},
                  {"output_schema", SchemaOrNull(o.output_schema, st)}};
        } else if constexpr (std::is_same_v<T, HashExchange>) {
          return {{"op", "hash_exchange"},
                  {"key", o.key},
                  {"partitions", o.partitions},
                  {"folder", o.folder}};
        } else if constexpr (std::is_same_v<T, DedupFirst>) {
          return {{"op", "dedup_first"}, {"key", o.key}};
        } else if constexpr (std::is_same_v<T, RunSqlStage>) {
          return {{"op", "run_sql_stage"}, {"body", json::binary(o.body)}};
        } else {
          return {{"op", "write_sink"}, {"format", o.format}, {"key", o.key}};
        }
      },
      op);
}

arrow::Result<Operator> DecodeOperator(const json& v) {
  ARROW_ASSIGN_OR_RAISE(std::string op, Text(v, "op"));
  if (op == "scan_objects") {
    ScanObjects o;
    ARROW_ASSIGN_OR_RAISE(o.format, Text(v, "format"));
    ARROW_ASSIGN_OR_RAISE(o.keys, TextList(v, "keys"));
    ARROW_ASSIGN_OR_RAISE(o.first_object_index, Int(v, "first_object_index"));
    ARROW_ASSIGN_OR_RAISE(o.schema_id, Text(v, "schema_id"));
    ARROW_ASSIGN_OR_RAISE(const json* schema, Field(v, "schema"));
    ARROW_ASSIGN_OR_RAISE(o.schema, SchemaFrom(*schema));
    if (o.schema == nullptr) return arrow::Status::Invalid("plan: ", op, " needs a schema");
    ARROW_ASSIGN_OR_RAISE(const json* skip, Field(v, "skip_bad_records"));
    if (!skip->is_boolean()) return arrow::Status::Invalid("plan: skip_bad_records not boolean");
    o.skip_bad_records = skip->get<bool>();
    return o;
  }
  if (op == "scan_shuffle") {
    ScanShuffle o;
    ARROW_ASSIGN_OR_RAISE(o.keys, TextList(v, "keys"));
    ARROW_ASSIGN_OR_RAISE(o.blake3, TextList(v, "blake3"));
    if (o.blake3.size() != o.keys.size()) {
      return arrow::Status::Invalid("plan: scan_shuffle has ", o.keys.size(), " keys but ",
                                    o.blake3.size(), " digests");
    }
    ARROW_ASSIGN_OR_RAISE(const json* schema, Field(v, "schema"));
    ARROW_ASSIGN_OR_RAISE(o.schema, SchemaFrom(*schema));
    if (o.schema == nullptr) return arrow::Status::Invalid("plan: ", op, " needs a schema");
    return o;
  }
  if (op == "call_transform") {
    CallTransform o;
    ARROW_ASSIGN_OR_RAISE(o.qualified_name, Text(v, "qualified_name"));
    ARROW_ASSIGN_OR_RAISE(o.pin, Text(v, "pin"));
    ARROW_ASSIGN_OR_RAISE(const json* schema, Field(v, "output_schema"));
    ARROW_ASSIGN_OR_RAISE(o.output_schema, SchemaFrom(*schema));
    return o;
  }
  if (op == "hash_exchange") {
    HashExchange o;
    ARROW_ASSIGN_OR_RAISE(o.key, Text(v, "key"));
    ARROW_ASSIGN_OR_RAISE(int64_t partitions, Int(v, "partitions"));
    if (partitions < 1 || partitions > 65536) {
      return arrow::Status::Invalid("plan: partitions ", partitions, " out of range");
    }
    o.partitions = static_cast<int32_t>(partitions);
    ARROW_ASSIGN_OR_RAISE(o.folder, Text(v, "folder"));
    return o;
  }
  if (op == "dedup_first") {
    DedupFirst o;
    ARROW_ASSIGN_OR_RAISE(o.key, Text(v, "key"));
    return o;
  }
  if (op == "write_sink") {
    WriteSink o;
    ARROW_ASSIGN_OR_RAISE(o.format, Text(v, "format"));
    ARROW_ASSIGN_OR_RAISE(o.key, Text(v, "key"));
    return o;
  }
  if (op == "run_sql_stage") {
    RunSqlStage o;
    ARROW_ASSIGN_OR_RAISE(auto body, Bytes(v, "body"));
    o.body.assign(body->data(), body->data() + body->size());
    return o;
  }
  return arrow::Status::Invalid("plan: unknown operator '", op, "'");
}

}  // namespace

std::string Fragment::task_name() const {
  return "s" + std::to_string(stage_id) + "p" + std::to_string(partition);
}

std::string ShuffleAttemptFolder(const std::string& folder, const std::string& task,
                                 int32_t attempt) {
  return folder + "/" + task + "-" + std::to_string(attempt);
}

arrow::Result<std::vector<uint8_t>> EncodeFragment(const Fragment& f) {
  json ops = json::array();
  arrow::Status st;
  for (const auto& op : f.operators) ops.push_back(EncodeOperator(op, &st));
  ARROW_RETURN_NOT_OK(st);
  json doc = {{"run_id", f.run_id},
              {"stage_id", f.stage_id},
              {"partition", f.partition},
              {"attempt", f.attempt},
              {"session",
               {{"store_url", f.session.store_url},
                {"cache_dir", f.session.cache_dir},
                {"parity", LocalParity()}}},
              {"operators", ops}};
  return WithMagic(kPlanMagic, doc);
}

arrow::Result<Fragment> DecodeFragment(const uint8_t* data, size_t size) {
  ARROW_ASSIGN_OR_RAISE(json doc, BodyAfterMagic(data, size, kPlanMagic, "SLUICE-PLAN/"));
  Fragment f;
  ARROW_ASSIGN_OR_RAISE(f.run_id, Text(doc, "run_id"));
  ARROW_ASSIGN_OR_RAISE(int64_t stage, Int(doc, "stage_id"));
  ARROW_ASSIGN_OR_RAISE(int64_t partition, Int(doc, "partition"));
  ARROW_ASSIGN_OR_RAISE(int64_t attempt, Int(doc, "attempt"));
  f.stage_id = static_cast<int32_t>(stage);
  f.partition = static_cast<int32_t>(partition);
  f.attempt = static_cast<int32_t>(attempt);
  ARROW_ASSIGN_OR_RAISE(const json* session, Field(doc, "session"));
  ARROW_ASSIGN_OR_RAISE(f.session.store_url, Text(*session, "store_url"));
  ARROW_ASSIGN_OR_RAISE(f.session.cache_dir, Text(*session, "cache_dir"));
  ARROW_ASSIGN_OR_RAISE(const json* parity, Field(*session, "parity"));
  if (!parity->is_object() || parity->size() > 64) {
    return arrow::Status::Invalid("plan: session parity must be a map of at most 64 settings");
  }
  for (const auto& [key, value] : parity->items()) {
    if (!value.is_string()) {
      return arrow::Status::Invalid("plan: session parity '", key, "' is not text");
    }
    f.session.parity[key] = value.get<std::string>();
  }
  ARROW_ASSIGN_OR_RAISE(const json* ops, Field(doc, "operators"));
  if (!ops->is_array() || ops->empty()) {
    return arrow::Status::Invalid("plan: operators must be a non-empty list");
  }
  for (const auto& op : *ops) {
    ARROW_ASSIGN_OR_RAISE(Operator decoded, DecodeOperator(op));
    f.operators.push_back(std::move(decoded));
  }
  ARROW_RETURN_NOT_OK(CheckOperatorOrder(f.operators));
  return f;
}

arrow::Status CheckOperatorOrder(const std::vector<Operator>& ops) {
  // The runner relies on this shape: a source first, a sink or exchange only last.
  auto is = [](const Operator& op, auto tag) { return std::holds_alternative<decltype(tag)>(op); };
  for (size_t i = 0; i < ops.size(); ++i) {
    const bool source =
        is(ops[i], ScanObjects{}) || is(ops[i], ScanShuffle{}) || is(ops[i], RunSqlStage{});
    const bool last = is(ops[i], WriteSink{}) || is(ops[i], HashExchange{});
    if (i == 0 && !source) {
      return arrow::Status::Invalid("plan: a fragment must start with a scan, not operator ", i);
    }
    if (i > 0 && source) {
      return arrow::Status::Invalid("plan: operator ", i,
                                    " is a source, but only the first may be");
    }
    if (last && i + 1 != ops.size()) {
      return arrow::Status::Invalid("plan: operator ", i, " ends a fragment, but ",
                                    ops.size() - i - 1, " follow it");
    }
    if (is(ops[i], RunSqlStage{}) && ops.size() != 1) {
      return arrow::Status::Invalid("plan: a SQL stage task has exactly one operator");
    }
  }
  return arrow::Status::OK();
}

}  // namespace sluice::plan
