#include "sql/query_plan_codec.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/expression.h>

#include <set>

#include "exec/compute_init.h"
#include "plan/cbor_fields.h"
#include "sql/sql_parser.h"
#include "storage/ipc_stream.h"

namespace sluice::sql {

namespace {

namespace cp = arrow::compute;
using json = nlohmann::json;
using plan::Bool;
using plan::Field;
using plan::Int;
using plan::Text;
using plan::TextList;

// Deeper plans than any query binds are refused before they can exhaust the stack. The parser
// bounds a query's nesting; a bound plan is at most about twice as deep (a subquery level adds
// a join and a projection), and its expressions about as deep, with a cast at some levels.
// sql_parser_test decodes the deepest query of each shape the parser accepts.
constexpr int kMaxDepth = 4 * kMaxQueryNesting;

const char* KindName(PlanNode::Kind kind) {
  switch (kind) {
    case PlanNode::Kind::kScan:
      return "scan";
    case PlanNode::Kind::kFilter:
      return "filter";
    case PlanNode::Kind::kProject:
      return "project";
    case PlanNode::Kind::kAggregate:
      return "aggregate";
    case PlanNode::Kind::kSort:
      return "sort";
    case PlanNode::Kind::kLimit:
      return "limit";
    case PlanNode::Kind::kJoin:
      return "join";
  }
  return "?";
}

// Expressions are encoded here, not with arrow::compute::Serialize: Arrow's Deserialize is not
// hardened against damaged bytes (a flipped byte in an option crashed it in our fuzz test), so
// only the option types sluice plans use are accepted, field by field.
constexpr int kMaxExpressionDepth = 2 * kMaxQueryNesting;

// The CBOR nesting of the deepest plan the decoder accepts: a level per plan node, two per
// expression level (a call's map and its argument list), and a few for the document, a node's
// fields and their lists. Deeper bytes are refused before nlohmann's recursive decoder sees them.
constexpr int kMaxCborDepth = kMaxDepth + 2 * kMaxExpressionDepth + 16;

// A one-row (literal) or one-column (IN list) array as IPC stream bytes, validated on reading.
arrow::Result<json> ArrayBytes(const std::shared_ptr<arrow::Array>& array) {
  auto schema = arrow::schema({arrow::field("v", array->type())});
  ARROW_ASSIGN_OR_RAISE(auto buffer,
                        storage::WriteIpcStream(
                            schema, {arrow::RecordBatch::Make(schema, array->length(), {array})}));
  return json::binary(std::vector<uint8_t>(buffer->data(), buffer->data() + buffer->size()));
}

arrow::Result<std::shared_ptr<arrow::Array>> ArrayFrom(const json& node, const char* key) {
  ARROW_ASSIGN_OR_RAISE(auto buffer, plan::Bytes(node, key));
  auto stream = storage::ReadIpcStream(buffer, std::string("plan: field '") + key + "'");
  if (!stream.ok()) return stream.status();
  if (stream->schema->num_fields() != 1 || stream->batches.size() != 1) {
    return arrow::Status::Invalid("plan: field '", key, "' is not one column in one batch");
  }
  return stream->batches[0]->column(0);
}

arrow::Result<json> EncodeOptions(const cp::FunctionOptions& options) {
  const std::string type = options.type_name();
  if (type == "CastOptions") {
    const auto& o = static_cast<const cp::CastOptions&>(options);
    ARROW_ASSIGN_OR_RAISE(
        json to, plan::SchemaBytes(arrow::schema({arrow::field("t", o.to_type.GetSharedPtr())})));
    return json{{"kind", "cast"}, {"to", to}, {"safe", !o.allow_int_overflow}};
  }
  if (type == "MatchSubstringOptions") {
    const auto& o = static_cast<const cp::MatchSubstringOptions&>(options);
    return json{
        {"kind", "match_substring"}, {"pattern", o.pattern}, {"ignore_case", o.ignore_case}};
  }
  if (type == "SetLookupOptions") {
    const auto& o = static_cast<const cp::SetLookupOptions&>(options);
    if (!o.value_set.is_array()) return arrow::Status::Invalid("internal: IN set not an array");
    ARROW_ASSIGN_OR_RAISE(json values, ArrayBytes(o.value_set.make_array()));
    return json{{"kind", "set_lookup"},
                {"values", values},
                {"null_matching", static_cast<int>(o.null_matching_behavior)}};
  }
  if (type == "MakeStructOptions") {
    const auto& o = static_cast<const cp::MakeStructOptions&>(options);
    return json{{"kind", "make_struct"}, {"names", o.field_names}};
  }
  if (type == "SliceOptions") {
    const auto& o = static_cast<const cp::SliceOptions&>(options);
    return json{{"kind", "slice"}, {"start", o.start}, {"stop", o.stop}, {"step", o.step}};
  }
  if (type == "RoundOptions") {
    const auto& o = static_cast<const cp::RoundOptions&>(options);
    return json{
        {"kind", "round"}, {"ndigits", o.ndigits}, {"mode", static_cast<int>(o.round_mode)}};
  }
  return arrow::Status::Invalid("internal: plans cannot carry ", type);
}

arrow::Result<std::shared_ptr<cp::FunctionOptions>> DecodeOptions(const json& v) {
  ARROW_ASSIGN_OR_RAISE(std::string kind, Text(v, "kind"));
  if (kind == "cast") {
    ARROW_ASSIGN_OR_RAISE(const json* to, Field(v, "to"));
    ARROW_ASSIGN_OR_RAISE(auto schema, plan::SchemaFrom(*to));
    if (schema == nullptr || schema->num_fields() != 1) {
      return arrow::Status::Invalid("plan: a cast needs one target type");
    }
    ARROW_ASSIGN_OR_RAISE(bool safe, Bool(v, "safe"));
    auto type = schema->field(0)->type();
    return std::make_shared<cp::CastOptions>(safe ? cp::CastOptions::Safe(type)
                                                  : cp::CastOptions::Unsafe(type));
  }
  if (kind == "match_substring") {
    ARROW_ASSIGN_OR_RAISE(std::string pattern, Text(v, "pattern"));
    ARROW_ASSIGN_OR_RAISE(bool ignore_case, Bool(v, "ignore_case"));
    return std::make_shared<cp::MatchSubstringOptions>(pattern, ignore_case);
  }
  if (kind == "set_lookup") {
    ARROW_ASSIGN_OR_RAISE(auto values, ArrayFrom(v, "values"));
    ARROW_ASSIGN_OR_RAISE(int64_t null_matching, Int(v, "null_matching"));
    if (null_matching < cp::SetLookupOptions::MATCH ||
        null_matching > cp::SetLookupOptions::INCONCLUSIVE) {
      return arrow::Status::Invalid("plan: unknown null matching ", null_matching);
    }
    return std::make_shared<cp::SetLookupOptions>(
        values, static_cast<cp::SetLookupOptions::NullMatchingBehavior>(null_matching));
  }
  if (kind == "make_struct") {
    ARROW_ASSIGN_OR_RAISE(auto names, TextList(v, "names"));
    return std::make_shared<cp::MakeStructOptions>(names);
  }
  if (kind == "slice") {
    ARROW_ASSIGN_OR_RAISE(int64_t start, Int(v, "start"));
    ARROW_ASSIGN_OR_RAISE(int64_t stop, Int(v, "stop"));
    ARROW_ASSIGN_OR_RAISE(int64_t step, Int(v, "step"));
    if (step == 0) return arrow::Status::Invalid("plan: a slice step of 0");
    return std::make_shared<cp::SliceOptions>(start, stop, step);
  }
  if (kind == "round") {
    ARROW_ASSIGN_OR_RAISE(int64_t ndigits, Int(v, "ndigits"));
    ARROW_ASSIGN_OR_RAISE(int64_t mode, Int(v, "mode"));
    if (mode < static_cast<int>(cp::RoundMode::DOWN) ||
        mode > static_cast<int>(cp::RoundMode::HALF_TO_ODD) || ndigits < -38 || ndigits > 38) {
      return arrow::Status::Invalid("plan: bad rounding options");
    }
    return std::make_shared<cp::RoundOptions>(ndigits, static_cast<cp::RoundMode>(mode));
  }
  return arrow::Status::Invalid("plan: unknown function options '", kind, "'");
}

arrow::Result<json> EncodeExpression(const cp::Expression& e) {
  if (const auto* ref = e.field_ref()) {
    if (ref->name() == nullptr) return arrow::Status::Invalid("internal: a field ref by index");
    return json{{"field", *ref->name()}};
  }
  if (const auto* literal = e.literal()) {
    if (!literal->is_scalar()) return arrow::Status::Invalid("internal: an array literal");
    ARROW_ASSIGN_OR_RAISE(auto array, arrow::MakeArrayFromScalar(*literal->scalar(), 1));
    ARROW_ASSIGN_OR_RAISE(json bytes, ArrayBytes(array));
    return json{{"literal", bytes}};
  }
  const auto* call = e.call();
  json args = json::array();
  for (const auto& a : call->arguments) {
    ARROW_ASSIGN_OR_RAISE(json arg, EncodeExpression(a));
    args.push_back(std::move(arg));
  }
  json out = {{"call", call->function_name}, {"args", std::move(args)}};
  if (call->options != nullptr) {
    ARROW_ASSIGN_OR_RAISE(out["options"], EncodeOptions(*call->options));
  }
  return out;
}

arrow::Result<cp::Expression> DecodeExpression(const json& v, int depth) {
  if (depth > kMaxExpressionDepth) {
    return arrow::Status::Invalid("plan: an expression nested deeper than ", kMaxExpressionDepth);
  }
  if (v.is_object() && v.contains("field")) {
    ARROW_ASSIGN_OR_RAISE(std::string name, Text(v, "field"));
    return cp::field_ref(name);
  }
  if (v.is_object() && v.contains("literal")) {
    ARROW_ASSIGN_OR_RAISE(auto array, ArrayFrom(v, "literal"));
    if (array->length() != 1) return arrow::Status::Invalid("plan: a literal is one value");
    ARROW_ASSIGN_OR_RAISE(auto scalar, array->GetScalar(0));
    return cp::literal(std::move(scalar));
  }
  ARROW_ASSIGN_OR_RAISE(std::string function, Text(v, "call"));
  ARROW_ASSIGN_OR_RAISE(const json* args, Field(v, "args"));
  if (!args->is_array()) return arrow::Status::Invalid("plan: call arguments are not a list");
  std::vector<cp::Expression> arguments;
  for (const auto& a : *args) {
    ARROW_ASSIGN_OR_RAISE(auto arg, DecodeExpression(a, depth + 1));
    arguments.push_back(std::move(arg));
  }
  std::shared_ptr<cp::FunctionOptions> options;
  if (v.contains("options")) {
    ARROW_ASSIGN_OR_RAISE(options, DecodeOptions(v.at("options")));
  }
  if (!cp::GetFunctionRegistry()->GetFunction(function).ok()) {
    return arrow::Status::Invalid("plan: unknown function '", function, "'");
  }
  return cp::call(function, std::move(arguments), std::move(options));
}

arrow::Result<json> ExpressionBytes(const cp::Expression& e) { return EncodeExpression(e); }

arrow::Result<cp::Expression> ExpressionFrom(const json& node, const char* key) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Field(node, key));
  return DecodeExpression(*v, 0);
}

json RangesJson(const std::vector<std::pair<int32_t, int32_t>>& ranges) {
  json out = json::array();
  for (const auto& [first, end] : ranges) out.push_back({first, end});
  return out;
}

arrow::Result<json> EncodeNode(const PlanNode& n) {
  json out = {{"kind", KindName(n.kind)}};
  switch (n.kind) {
    case PlanNode::Kind::kScan: {
      const TableSource& t = *n.table;
      ARROW_ASSIGN_OR_RAISE(json file_schema, plan::SchemaBytes(t.file_schema));
      ARROW_ASSIGN_OR_RAISE(json schema, plan::SchemaBytes(t.schema));
      out["table"] = {{"name", t.name},
                      {"location", t.location},
                      {"store_url", t.store_url},
                      {"format", t.format},
                      {"files", t.files},
                      {"row_group_ranges", RangesJson(t.row_group_ranges)},
                      {"file_schema", file_schema},
                      {"schema", schema},
                      {"dictionary_columns", std::vector<std::string>(t.dictionary_columns.begin(),
                                                                      t.dictionary_columns.end())}};
      out["columns"] = n.columns;
      out["names"] = n.names;
      ARROW_ASSIGN_OR_RAISE(out["scan_filter"], ExpressionBytes(n.scan_filter));
      out["batch_rows"] = n.batch_rows;
      break;
    }
    case PlanNode::Kind::kFilter: {
      ARROW_ASSIGN_OR_RAISE(out["predicate"], ExpressionBytes(n.predicate));
      break;
    }
    case PlanNode::Kind::kProject: {
      json expressions = json::array();
      for (const auto& e : n.expressions) {
        ARROW_ASSIGN_OR_RAISE(json bytes, ExpressionBytes(e));
        expressions.push_back(std::move(bytes));
      }
      out["expressions"] = std::move(expressions);
      out["names"] = n.names;
      out["keep_input"] = n.keep_input;
      break;
    }
    case PlanNode::Kind::kAggregate: {
      out["final_phase"] = n.final_phase;
      out["keys"] = n.keys;
      json aggregates = json::array();
      for (const auto& a : n.aggregates) {
        aggregates.push_back({{"function", a.function}, {"input", a.input}, {"output", a.output}});
      }
      out["aggregates"] = std::move(aggregates);
      break;
    }
    case PlanNode::Kind::kSort: {
      json keys = json::array();
      for (const auto& k : n.sort_keys) {
        const std::string* name = k.target.name();
        if (name == nullptr) return arrow::Status::Invalid("internal: a sort key is not a name");
        keys.push_back({{"column", *name}, {"descending", k.order == cp::SortOrder::Descending}});
      }
      out["keys"] = std::move(keys);
      break;
    }
    case PlanNode::Kind::kLimit:
      out["offset"] = n.offset;
      out["count"] = n.count;
      break;
    case PlanNode::Kind::kJoin: {
      out["join_type"] = JoinTypeName(n.join_type);
      out["left_keys"] = n.left_keys;
      out["right_keys"] = n.right_keys;
      ARROW_ASSIGN_OR_RAISE(out["join_filter"], ExpressionBytes(n.join_filter));
      out["build_input"] = n.build_input;
      break;
    }
  }
  if (n.input != nullptr) {
    ARROW_ASSIGN_OR_RAISE(out["input"], EncodeNode(*n.input));
  }
  if (n.right != nullptr) {
    ARROW_ASSIGN_OR_RAISE(out["right"], EncodeNode(*n.right));
  }
  return out;
}

arrow::Result<std::shared_ptr<TableSource>> DecodeTable(
    const json& v, const std::shared_ptr<storage::ObjectStore>& store) {
  auto t = std::make_shared<TableSource>();
  t->store = store;
  ARROW_ASSIGN_OR_RAISE(t->name, Text(v, "name"));
  ARROW_ASSIGN_OR_RAISE(t->location, Text(v, "location"));
  // A table at a path or URL of its own carries its store; its files are keys of that store.
  ARROW_ASSIGN_OR_RAISE(t->store_url, Text(v, "store_url"));
  if (!t->store_url.empty()) {
    auto own = storage::ObjectStore::Open(t->store_url);
    if (!own.ok()) {
      return arrow::Status::Invalid("plan: table '", t->name, "': ", own.status().message());
    }
    t->store = *std::move(own);
  }
  ARROW_ASSIGN_OR_RAISE(t->format, Text(v, "format"));
  if (t->format != "parquet" && t->format != "ipc" && t->format != "jsonl") {
    return arrow::Status::Invalid("plan: table '", t->name, "' has unknown format '", t->format,
                                  "'");
  }
  ARROW_ASSIGN_OR_RAISE(t->files, TextList(v, "files"));
  if (t->files.empty()) return arrow::Status::Invalid("plan: table '", t->name, "' has no files");
  for (const auto& key : t->files) {
    auto valid = storage::ObjectStore::ValidateKey(key);
    if (!valid.ok()) {
      return arrow::Status::Invalid("plan: table '", t->name, "': ", valid.message());
    }
  }
  ARROW_ASSIGN_OR_RAISE(const json* ranges, Field(v, "row_group_ranges"));
  if (!ranges->is_array() ||
      (!ranges->empty() && (ranges->size() != t->files.size() || t->format != "parquet"))) {
    return arrow::Status::Invalid("plan: table '", t->name,
                                  "': row group ranges need one range per Parquet file");
  }
  for (const json& r : *ranges) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer() ||
        r[0].get<int64_t>() < 0 || r[0].get<int64_t>() > r[1].get<int64_t>() ||
        r[1].get<int64_t>() > (int64_t{1} << 24)) {
      return arrow::Status::Invalid("plan: table '", t->name, "': a bad row group range");
    }
    t->row_group_ranges.emplace_back(r[0].get<int32_t>(), r[1].get<int32_t>());
  }
  ARROW_ASSIGN_OR_RAISE(const json* file_schema, Field(v, "file_schema"));
  ARROW_ASSIGN_OR_RAISE(t->file_schema, plan::SchemaFrom(*file_schema));
  ARROW_ASSIGN_OR_RAISE(const json* schema, Field(v, "schema"));
  ARROW_ASSIGN_OR_RAISE(t->schema, plan::SchemaFrom(*schema));
  if (t->file_schema == nullptr || t->schema == nullptr ||
      t->file_schema->num_fields() != t->schema->num_fields()) {
    return arrow::Status::Invalid("plan: table '", t->name, "' has mismatched schemas");
  }
  for (int i = 0; i < t->schema->num_fields(); ++i) {
    if (t->schema->field(i)->name() != t->file_schema->field(i)->name()) {
      return arrow::Status::Invalid("plan: table '", t->name, "' has mismatched schemas");
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto dictionary, TextList(v, "dictionary_columns"));
  t->dictionary_columns.insert(dictionary.begin(), dictionary.end());
  return t;
}

arrow::Result<std::unique_ptr<PlanNode>> DecodeNode(
    const json& v, const std::shared_ptr<storage::ObjectStore>& store, int depth) {
  if (depth > kMaxDepth) return arrow::Status::Invalid("plan: nested deeper than ", kMaxDepth);
  ARROW_ASSIGN_OR_RAISE(std::string kind, Text(v, "kind"));
  auto n = std::make_unique<PlanNode>();
  size_t children = 1;
  if (kind == "scan") {
    n->kind = PlanNode::Kind::kScan;
    children = 0;
    ARROW_ASSIGN_OR_RAISE(const json* table, Field(v, "table"));
    ARROW_ASSIGN_OR_RAISE(n->table, DecodeTable(*table, store));
    ARROW_ASSIGN_OR_RAISE(n->columns, TextList(v, "columns"));
    ARROW_ASSIGN_OR_RAISE(n->names, TextList(v, "names"));
    if (n->columns.empty() || n->columns.size() != n->names.size()) {
      return arrow::Status::Invalid("plan: scan of '", n->table->name,
                                    "' needs as many names as columns, at least one");
    }
    for (const auto& c : n->columns) {
      if (n->table->schema->GetFieldByName(c) == nullptr) {
        return arrow::Status::Invalid("plan: scan of '", n->table->name, "' reads unknown column '",
                                      c, "'");
      }
    }
    ARROW_ASSIGN_OR_RAISE(n->scan_filter, ExpressionFrom(v, "scan_filter"));
    ARROW_ASSIGN_OR_RAISE(n->batch_rows, Int(v, "batch_rows"));
    if (n->batch_rows < 1 || n->batch_rows > (int64_t{1} << 24)) {
      return arrow::Status::Invalid("plan: batch_rows ", n->batch_rows, " out of range");
    }
  } else if (kind == "filter") {
    n->kind = PlanNode::Kind::kFilter;
    ARROW_ASSIGN_OR_RAISE(n->predicate, ExpressionFrom(v, "predicate"));
  } else if (kind == "project") {
    n->kind = PlanNode::Kind::kProject;
    ARROW_ASSIGN_OR_RAISE(const json* expressions, Field(v, "expressions"));
    if (!expressions->is_array()) return arrow::Status::Invalid("plan: expressions not a list");
    for (size_t i = 0; i < expressions->size(); ++i) {
      json holder = {{"e", expressions->at(i)}};
      ARROW_ASSIGN_OR_RAISE(auto e, ExpressionFrom(holder, "e"));
      n->expressions.push_back(std::move(e));
    }
    ARROW_ASSIGN_OR_RAISE(n->names, TextList(v, "names"));
    if (n->names.size() != n->expressions.size()) {
      return arrow::Status::Invalid("plan: a projection needs one name per expression");
    }
    ARROW_ASSIGN_OR_RAISE(n->keep_input, Bool(v, "keep_input"));
  } else if (kind == "aggregate") {
    n->kind = PlanNode::Kind::kAggregate;
    ARROW_ASSIGN_OR_RAISE(n->final_phase, Bool(v, "final_phase"));
    ARROW_ASSIGN_OR_RAISE(n->keys, TextList(v, "keys"));
    ARROW_ASSIGN_OR_RAISE(const json* aggregates, Field(v, "aggregates"));
    if (!aggregates->is_array()) return arrow::Status::Invalid("plan: aggregates not a list");
    static const std::set<std::string> kFunctions = {"sum", "count", "count_all",
                                                     "min", "max",   "count_distinct"};
    for (const auto& a : *aggregates) {
      AggregateCall call;
      ARROW_ASSIGN_OR_RAISE(call.function, Text(a, "function"));
      if (!kFunctions.count(call.function)) {
        return arrow::Status::Invalid("plan: unknown aggregate function '", call.function, "'");
      }
      ARROW_ASSIGN_OR_RAISE(call.input, Text(a, "input"));
      ARROW_ASSIGN_OR_RAISE(call.output, Text(a, "output"));
      n->aggregates.push_back(std::move(call));
    }
  } else if (kind == "sort") {
    n->kind = PlanNode::Kind::kSort;
    ARROW_ASSIGN_OR_RAISE(const json* keys, Field(v, "keys"));
    if (!keys->is_array() || keys->empty()) {
      return arrow::Status::Invalid("plan: a sort needs a list of keys");
    }
    for (const auto& k : *keys) {
      ARROW_ASSIGN_OR_RAISE(std::string column, Text(k, "column"));
      ARROW_ASSIGN_OR_RAISE(bool descending, Bool(k, "descending"));
      n->sort_keys.emplace_back(arrow::FieldRef(column),
                                descending ? cp::SortOrder::Descending : cp::SortOrder::Ascending);
    }
  } else if (kind == "limit") {
    n->kind = PlanNode::Kind::kLimit;
    ARROW_ASSIGN_OR_RAISE(n->offset, Int(v, "offset"));
    ARROW_ASSIGN_OR_RAISE(n->count, Int(v, "count"));
    if (n->offset < 0 || n->count < -1) return arrow::Status::Invalid("plan: negative limit");
    if (depth != 0) return arrow::Status::Invalid("plan: a limit only at the top of a plan");
  } else if (kind == "join") {
    n->kind = PlanNode::Kind::kJoin;
    children = 2;
    ARROW_ASSIGN_OR_RAISE(std::string type, Text(v, "join_type"));
    if (type == "inner") {
      n->join_type = JoinType::kInner;
    } else if (type == "left") {
      n->join_type = JoinType::kLeft;
    } else if (type == "semi") {
      n->join_type = JoinType::kSemi;
    } else if (type == "anti") {
      n->join_type = JoinType::kAnti;
    } else {
      return arrow::Status::Invalid("plan: unknown join type '", type, "'");
    }
    ARROW_ASSIGN_OR_RAISE(n->left_keys, TextList(v, "left_keys"));
    ARROW_ASSIGN_OR_RAISE(n->right_keys, TextList(v, "right_keys"));
    if (n->left_keys.empty() || n->left_keys.size() != n->right_keys.size()) {
      return arrow::Status::Invalid("plan: a join needs pairs of keys");
    }
    ARROW_ASSIGN_OR_RAISE(n->join_filter, ExpressionFrom(v, "join_filter"));
    ARROW_ASSIGN_OR_RAISE(n->build_input, Bool(v, "build_input"));
    if (n->build_input && n->join_type == JoinType::kInner) {
      return arrow::Status::Invalid("plan: an inner join hashes its right side");
    }
  } else {
    return arrow::Status::Invalid("plan: unknown node kind '", kind, "'");
  }
  if (children >= 1) {
    ARROW_ASSIGN_OR_RAISE(const json* input, Field(v, "input"));
    ARROW_ASSIGN_OR_RAISE(n->input, DecodeNode(*input, store, depth + 1));
  } else if (v.contains("input")) {
    return arrow::Status::Invalid("plan: a scan has no input");
  }
  if (children == 2) {
    ARROW_ASSIGN_OR_RAISE(const json* right, Field(v, "right"));
    ARROW_ASSIGN_OR_RAISE(n->right, DecodeNode(*right, store, depth + 1));
  } else if (v.contains("right")) {
    return arrow::Status::Invalid("plan: only a join has a right input");
  }
  return n;
}

// The node's output schema, after binding each of its expressions to its input.
arrow::Result<std::shared_ptr<arrow::Schema>> CheckBinds(const PlanNode& n) {
  std::shared_ptr<arrow::Schema> in, right;
  if (n.input != nullptr) {
    ARROW_ASSIGN_OR_RAISE(in, CheckBinds(*n.input));
  }
  if (n.right != nullptr) {
    ARROW_ASSIGN_OR_RAISE(right, CheckBinds(*n.right));
  }
  auto binds = [](const cp::Expression& e, const arrow::Schema& schema) -> arrow::Status {
    return e.Bind(schema).status();
  };
  ARROW_ASSIGN_OR_RAISE(auto out, NodeOutputSchema(n, in, right));  // children: once each
  switch (n.kind) {
    case PlanNode::Kind::kScan:
      ARROW_RETURN_NOT_OK(binds(n.scan_filter, *out));
      break;
    case PlanNode::Kind::kFilter:
      ARROW_RETURN_NOT_OK(binds(n.predicate, *in));
      break;
    case PlanNode::Kind::kSort:
      for (const auto& k : n.sort_keys) ARROW_RETURN_NOT_OK(k.target.FindOne(*in).status());
      break;
    case PlanNode::Kind::kJoin: {
      for (const auto& k : n.left_keys)
        ARROW_RETURN_NOT_OK(arrow::FieldRef(k).FindOne(*in).status());
      for (const auto& k : n.right_keys) {
        ARROW_RETURN_NOT_OK(arrow::FieldRef(k).FindOne(*right).status());
      }
      arrow::FieldVector both = in->fields();
      both.insert(both.end(), right->fields().begin(), right->fields().end());
      ARROW_RETURN_NOT_OK(binds(n.join_filter, *arrow::schema(both)));
      break;
    }
    default:
      break;  // projections and aggregates are bound by OutputSchema itself
  }
  return out;
}

arrow::Result<BoundQuery> Decode(const uint8_t* data, size_t size,
                                 std::shared_ptr<storage::ObjectStore> store) {
  ARROW_ASSIGN_OR_RAISE(json doc, plan::BodyAfterMagic(data, size, kQueryPlanMagic,
                                                       "SLUICE-SQL-PLAN/", kMaxCborDepth));
  BoundQuery query;
  ARROW_ASSIGN_OR_RAISE(query.names, TextList(doc, "names"));
  ARROW_ASSIGN_OR_RAISE(const json* root, Field(doc, "plan"));
  ARROW_ASSIGN_OR_RAISE(query.plan, DecodeNode(*root, store, 0));
  // Binding every expression against its input proves the plan is well-formed: names exist
  // and types fit, before anything runs.
  auto schema = CheckBinds(*query.plan);
  if (!schema.ok()) {
    return arrow::Status::Invalid("plan: does not bind: ", schema.status().message());
  }
  if (static_cast<size_t>((*schema)->num_fields()) < query.names.size()) {
    return arrow::Status::Invalid("plan: names more columns than the plan produces");
  }
  return query;
}

}  // namespace

arrow::Result<std::vector<uint8_t>> EncodeQueryPlan(const BoundQuery& query) {
  return EncodeQueryPlan(*query.plan, query.names);
}

arrow::Result<std::vector<uint8_t>> EncodeQueryPlan(const PlanNode& plan,
                                                    const std::vector<std::string>& names) {
  ARROW_RETURN_NOT_OK(exec::EnsureComputeInitialized());
  ARROW_ASSIGN_OR_RAISE(json root, EncodeNode(plan));
  return plan::WithMagic(kQueryPlanMagic, {{"names", names}, {"plan", std::move(root)}});
}

arrow::Result<BoundQuery> DecodeQueryPlan(const uint8_t* data, size_t size,
                                          std::shared_ptr<storage::ObjectStore> store) {
  ARROW_RETURN_NOT_OK(exec::EnsureComputeInitialized());
  try {
    return Decode(data, size, std::move(store));
  } catch (const std::exception& e) {  // a tree shape nlohmann refuses by throwing
    return arrow::Status::Invalid("plan: malformed (", e.what(), ")");
  }
}

}  // namespace sluice::sql
