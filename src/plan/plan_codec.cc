#include "plan/plan_codec.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "plan/cbor_fields.h"
#include "plan/compute_init.h"
#include "plan/expression_codec.h"
#include "plan/library_functions.h"
#include "plan/session_spec.h"
#include "plan/string_agg.h"
#include "plan/table_provider.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;
using json = nlohmann::json;

// An estimate of rows as a whole number, -1 where there is none.
int64_t EstimateRows(double estimate) {
  if (!(estimate >= 0)) return -1;  // unknown, or NaN
  return static_cast<int64_t>(std::min(estimate, 1e18));
}

// Deeper plans than any query binds are refused before they can exhaust the stack. The parser
// bounds a query's nesting; a bound plan is at most about twice as deep (a subquery level adds
// a join and a projection), and its expressions about as deep, with a cast at some levels.
// sql_parser_test decodes the deepest query of each shape the parser accepts.
constexpr int kMaxDepth = 4 * kMaxQueryNesting;

// The CBOR nesting of the deepest plan the decoder accepts: a level per plan node, two per
// expression level (a call's map and its argument list), and a few for the document, a node's
// fields and their lists. Deeper bytes are refused before nlohmann's recursive decoder sees them.
constexpr int kMaxCborDepth = kMaxDepth + 2 * kMaxExpressionDepth + 16;

// The store that tables read: given, or the session's, opened on the first table.
class StoreSource {
 public:
  StoreSource(std::shared_ptr<storage::ObjectStore> store, std::string url)
      : store_(std::move(store)), url_(std::move(url)) {}

  arrow::Result<std::shared_ptr<storage::ObjectStore>> Get() {
    if (store_ == nullptr && !url_.empty()) {
      auto opened = storage::ObjectStore::Open(url_);
      if (!opened.ok()) {
        return arrow::Status::Invalid("plan: the session's store: ", opened.status().message());
      }
      store_ = *std::move(opened);
    }
    return store_;
  }

 private:
  std::shared_ptr<storage::ObjectStore> store_;
  std::string url_;
};

arrow::Result<cp::Expression> ExpressionAt(const json& node, const char* key) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Field(node, key));
  return DecodeExpression(*v, 0);
}

arrow::Result<std::shared_ptr<arrow::Schema>> SchemaAt(const json& node, const char* key) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Field(node, key));
  return SchemaFrom(*v);
}

// A store key of `what`, under `prefix` when one is given.
arrow::Status CheckKey(const std::string& key, const std::string& what, const char* prefix) {
  auto valid = storage::ObjectStore::ValidateKey(key);
  if (!valid.ok()) return arrow::Status::Invalid("plan: ", what, ": ", valid.message());
  if (prefix[0] != '\0' && key.rfind(prefix, 0) != 0) {
    return arrow::Status::Invalid("plan: ", what, " '", key, "' is not under ", prefix);
  }
  return arrow::Status::OK();
}

json RangesJson(const std::vector<std::pair<int32_t, int32_t>>& ranges) {
  json out = json::array();
  for (const auto& [first, end] : ranges) out.push_back({first, end});
  return out;
}

// One node's own fields into *out_ptr; apart from EncodeNode for the reason DecodeFields is.
[[gnu::noinline]] arrow::Status EncodeFields(const PlanNode& n, json* out_ptr) {
  json& out = *out_ptr;
  switch (n.kind) {
    case PlanNode::Kind::kScan: {
      const TableSource& t = *n.table;
      if (t.format == kMemoryFormat) {
        return arrow::Status::Invalid("internal: rows held in memory cannot go to a worker");
      }
      ARROW_ASSIGN_OR_RAISE(json file_schema, SchemaBytes(t.file_schema));
      ARROW_ASSIGN_OR_RAISE(json schema, SchemaBytes(t.schema));
      out["table"] = {
          {"name", t.name},
          {"location", t.location},
          {"store_url", t.store_url},
          {"format", t.format},
          {"files", t.files},
          {"row_group_ranges", RangesJson(t.row_group_ranges)},
          {"file_schema", file_schema},
          {"schema", schema},
          {"dictionary_columns",
           std::vector<std::string>(t.dictionary_columns.begin(), t.dictionary_columns.end())},
          {"integer_decimal_columns", std::vector<std::string>(t.integer_decimal_columns.begin(),
                                                               t.integer_decimal_columns.end())},
          {"provider", t.provider}};
      out["columns"] = n.columns;
      out["names"] = n.names;
      ARROW_ASSIGN_OR_RAISE(out["scan_filter"], EncodeExpression(n.scan_filter));
      out["batch_rows"] = n.batch_rows;
      out["split"] = n.split;
      break;
    }
    case PlanNode::Kind::kFilter: {
      ARROW_ASSIGN_OR_RAISE(out["predicate"], EncodeExpression(n.predicate));
      break;
    }
    case PlanNode::Kind::kProject: {
      json expressions = json::array();
      for (const auto& e : n.expressions) {
        ARROW_ASSIGN_OR_RAISE(json bytes, EncodeExpression(e));
        expressions.push_back(std::move(bytes));
      }
      out["expressions"] = std::move(expressions);
      out["names"] = n.names;
      out["keep_input"] = n.keep_input;
      break;
    }
    case PlanNode::Kind::kAggregate: {
      out["final_phase"] = n.final_phase;
      out["repeats_keys"] = n.repeats_keys;
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
      ARROW_ASSIGN_OR_RAISE(out["join_filter"], EncodeExpression(n.join_filter));
      out["build_input"] = n.build_input;
      out["null_equal_keys"] = n.null_equal_keys;
      // The optimizer's row estimates of both sides, whole rows (-1 unknown): the executor picks
      // its join by the hashed side's.
      out["estimates"] = {EstimateRows(n.input_estimate), EstimateRows(n.right_estimate)};
      break;
    }
    case PlanNode::Kind::kUnion:
      out["names"] = n.names;
      break;
    case PlanNode::Kind::kWindow: {
      json windows = json::array();
      for (const auto& w : n.windows) {
        json order = json::array();
        for (const auto& k : w.order_keys) {
          const std::string* name = k.target.name();
          if (name == nullptr)
            return arrow::Status::Invalid("internal: a window key is not a name");
          order.push_back({{"column", *name},
                           {"descending", k.order == cp::SortOrder::Descending},
                           {"nulls_first", k.null_placement == cp::NullPlacement::AtStart}});
        }
        windows.push_back({{"function", w.function},
                           {"arguments", w.arguments},
                           {"parameter", w.parameter},
                           {"partition_keys", w.partition_keys},
                           {"order", std::move(order)},
                           {"rows", w.frame.unit == WindowFrame::Unit::kRows},
                           {"start", static_cast<int64_t>(w.frame.start)},
                           {"start_offset", w.frame.start_offset},
                           {"end", static_cast<int64_t>(w.frame.end)},
                           {"end_offset", w.frame.end_offset},
                           {"output", w.output}});
      }
      out["windows"] = std::move(windows);
      break;
    }
    case PlanNode::Kind::kScanObjects: {
      const ScanObjects& o = n.objects;
      ARROW_ASSIGN_OR_RAISE(json schema, SchemaBytes(o.schema));
      out.update({{"format", o.format},
                  {"keys", o.keys},
                  {"first_object_index", o.first_object_index},
                  {"schema_id", o.schema_id},
                  {"schema", schema},
                  {"skip_bad_records", o.skip_bad_records}});
      break;
    }
    case PlanNode::Kind::kTransform: {
      ARROW_ASSIGN_OR_RAISE(json schema, SchemaBytes(n.transform.output_schema));
      out.update({{"qualified_name", n.transform.qualified_name},
                  {"pin", n.transform.pin},
                  {"output_schema", schema}});
      break;
    }
    case PlanNode::Kind::kDedup:
      out["key"] = n.dedup.key;
      break;
    case PlanNode::Kind::kSinkWrite:
      out.update({{"format", n.sink.format}, {"key", n.sink.key}});
      break;
    case PlanNode::Kind::kShuffleRead: {
      const ShuffleRead& r = n.shuffle_read;
      ARROW_ASSIGN_OR_RAISE(json schema, SchemaBytes(r.schema));
      out.update({{"files", r.files},
                  {"blake3", r.blake3},
                  {"schema", schema},
                  {"partition_keys", r.partition_keys}});
      if (!r.column_texts.empty()) {
        std::vector<std::string> names, texts, kinds;
        for (const auto& [name, text] : r.column_texts) {
          names.push_back(name);
          texts.push_back(text.text);
          kinds.push_back(text.aggregate ? "aggregate" : text.infix ? "infix" : "");
        }
        out.update({{"text_columns", names}, {"texts", texts}, {"text_kinds", kinds}});
      }
      break;
    }
    case PlanNode::Kind::kShuffleWrite: {
      const ShuffleWrite& w = n.shuffle_write;
      out.update({{"keys", w.keys},
                  {"partitions", w.partitions},
                  {"folder", w.folder},
                  {"one_row_per_key", w.one_row_per_key}});
      break;
    }
    case PlanNode::Kind::kJoinSet:
    case PlanNode::Kind::kDependentJoin:
      return arrow::Status::Invalid("internal: a logical ", KindName(n.kind),
                                    " node reached the plan codec (the optimizer did not run)");
    case PlanNode::Kind::kExchange:
      return arrow::Status::Invalid(
          "internal: an exchange reached the plan codec (the stage cutter did not run)");
  }
  return arrow::Status::OK();
}

arrow::Result<json> EncodeNode(const PlanNode& n) {
  json out = {{"kind", KindName(n.kind)}};
  ARROW_RETURN_NOT_OK(EncodeFields(n, &out));
  if (n.input != nullptr) {
    ARROW_ASSIGN_OR_RAISE(out["input"], EncodeNode(*n.input));
  }
  if (n.right != nullptr) {
    ARROW_ASSIGN_OR_RAISE(out["right"], EncodeNode(*n.right));
  }
  return out;
}

arrow::Result<std::shared_ptr<TableSource>> DecodeTable(const json& v, StoreSource* store) {
  auto t = std::make_shared<TableSource>();
  ARROW_ASSIGN_OR_RAISE(t->store, store->Get());
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
  const bool provider = t->format == kProviderFormat;
  if (t->format != "parquet" && t->format != "ipc" && t->format != "jsonl" && !provider) {
    return arrow::Status::Invalid("plan: table '", t->name, "' has unknown format '", t->format,
                                  "'");
  }
  ARROW_ASSIGN_OR_RAISE(t->files, TextList(v, "files"));
  if (t->files.empty()) return arrow::Status::Invalid("plan: table '", t->name, "' has no files");
  for (const auto& key : t->files) {
    // A provider's partitions are its own text, which only it reads.
    auto valid = provider ? arrow::Status::OK() : storage::ObjectStore::ValidateKey(key);
    if (!valid.ok()) {
      return arrow::Status::Invalid("plan: table '", t->name, "': ", valid.message());
    }
  }
  if (v.contains("provider")) {
    ARROW_ASSIGN_OR_RAISE(t->provider, Text(v, "provider"));
  }
  if (provider != !t->provider.empty()) {
    return arrow::Status::Invalid("plan: table '", t->name,
                                  "': a provider description belongs to a provider table");
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
  ARROW_ASSIGN_OR_RAISE(t->file_schema, SchemaFrom(*file_schema));
  ARROW_ASSIGN_OR_RAISE(const json* schema, Field(v, "schema"));
  ARROW_ASSIGN_OR_RAISE(t->schema, SchemaFrom(*schema));
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
  ARROW_ASSIGN_OR_RAISE(auto integer_decimals, TextList(v, "integer_decimal_columns"));
  t->integer_decimal_columns.insert(integer_decimals.begin(), integer_decimals.end());
  if (provider) {
    // The description is rebuilt here from the plan alone; its library must be loaded (from the
    // session spec, before the plan) and agree with the table's schema.
    auto described = ParseProviderDescription(t->provider, "plan: table '" + t->name + "'");
    if (!described.ok()) return described.status();
    if (!described->schema->Equals(*t->schema)) {
      return arrow::Status::Invalid("plan: table '", t->name,
                                    "': its provider description has another schema");
    }
  }
  return t;
}

arrow::Status DecodeWindow(const json& v, PlanNode* n) {
  WindowCall w;
  ARROW_ASSIGN_OR_RAISE(w.function, Text(v, "function"));
  if (ParseLibraryFunctionName(w.function)) {
    auto type = LibraryWindowType(w.function);
    if (!type.ok()) return arrow::Status::Invalid("plan: ", type.status().message());
  } else if (!IsWindowFunction(w.function)) {
    return arrow::Status::Invalid("plan: unknown window function '", w.function, "'");
  }
  ARROW_ASSIGN_OR_RAISE(w.arguments, TextList(v, "arguments"));
  ARROW_ASSIGN_OR_RAISE(w.parameter, Int(v, "parameter"));
  if (w.function == "ntile" && w.parameter < 1) {
    return arrow::Status::Invalid("plan: ntile needs at least one bucket");
  }
  ARROW_ASSIGN_OR_RAISE(w.partition_keys, TextList(v, "partition_keys"));
  ARROW_ASSIGN_OR_RAISE(const json* order, Field(v, "order"));
  if (!order->is_array()) return arrow::Status::Invalid("plan: window order not a list");
  for (const auto& k : *order) {
    ARROW_ASSIGN_OR_RAISE(std::string column, Text(k, "column"));
    ARROW_ASSIGN_OR_RAISE(bool descending, Bool(k, "descending"));
    ARROW_ASSIGN_OR_RAISE(bool nulls_first, Bool(k, "nulls_first"));
    w.order_keys.emplace_back(arrow::FieldRef(column),
                              descending ? cp::SortOrder::Descending : cp::SortOrder::Ascending,
                              nulls_first ? cp::NullPlacement::AtStart : cp::NullPlacement::AtEnd);
  }
  ARROW_ASSIGN_OR_RAISE(bool rows, Bool(v, "rows"));
  w.frame.unit = rows ? WindowFrame::Unit::kRows : WindowFrame::Unit::kRange;
  auto bound = [&](const char* key, WindowFrame::Bound* out) -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(int64_t b, Int(v, key));
    if (b < 0 || b > static_cast<int64_t>(WindowFrame::Bound::kUnboundedFollowing)) {
      return arrow::Status::Invalid("plan: bad window frame bound ", b);
    }
    *out = static_cast<WindowFrame::Bound>(b);
    return arrow::Status::OK();
  };
  ARROW_RETURN_NOT_OK(bound("start", &w.frame.start));
  ARROW_RETURN_NOT_OK(bound("end", &w.frame.end));
  ARROW_ASSIGN_OR_RAISE(w.frame.start_offset, Int(v, "start_offset"));
  ARROW_ASSIGN_OR_RAISE(w.frame.end_offset, Int(v, "end_offset"));
  if (w.frame.start_offset < 0 || w.frame.end_offset < 0) {
    return arrow::Status::Invalid("plan: a negative window frame offset");
  }
  ARROW_ASSIGN_OR_RAISE(w.output, Text(v, "output"));
  n->windows.push_back(std::move(w));
  return arrow::Status::OK();
}

// One node's own fields from `v`, by its kind; how many inputs it has goes to *children. Kept
// out of DecodeNode, which recurses once per plan level: its frame stays small, so the deepest
// plan the codec accepts decodes on a 1 MiB stack, also under AddressSanitizer.
[[gnu::noinline]] arrow::Status DecodeFields(const std::string& kind, const json& v,
                                             StoreSource* store, int depth, PlanNode* n,
                                             size_t* children) {
  *children = 1;
  if (kind == "scan") {
    n->kind = PlanNode::Kind::kScan;
    *children = 0;
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
    ARROW_ASSIGN_OR_RAISE(n->scan_filter, ExpressionAt(v, "scan_filter"));
    ARROW_ASSIGN_OR_RAISE(n->batch_rows, Int(v, "batch_rows"));
    if (n->batch_rows < 1 || n->batch_rows > (int64_t{1} << 24)) {
      return arrow::Status::Invalid("plan: batch_rows ", n->batch_rows, " out of range");
    }
    ARROW_ASSIGN_OR_RAISE(n->split, Bool(v, "split"));
  } else if (kind == "filter") {
    n->kind = PlanNode::Kind::kFilter;
    ARROW_ASSIGN_OR_RAISE(n->predicate, ExpressionAt(v, "predicate"));
  } else if (kind == "project") {
    n->kind = PlanNode::Kind::kProject;
    ARROW_ASSIGN_OR_RAISE(const json* expressions, Field(v, "expressions"));
    if (!expressions->is_array()) return arrow::Status::Invalid("plan: expressions not a list");
    for (size_t i = 0; i < expressions->size(); ++i) {
      json holder = {{"e", expressions->at(i)}};
      ARROW_ASSIGN_OR_RAISE(auto e, ExpressionAt(holder, "e"));
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
    ARROW_ASSIGN_OR_RAISE(n->repeats_keys, Bool(v, "repeats_keys"));
    ARROW_ASSIGN_OR_RAISE(n->keys, TextList(v, "keys"));
    ARROW_ASSIGN_OR_RAISE(const json* aggregates, Field(v, "aggregates"));
    if (!aggregates->is_array()) return arrow::Status::Invalid("plan: aggregates not a list");
    static const std::set<std::string> kFunctions = {
        "sum", "count", "count_all", "min", "max", "count_distinct", kStringAggFunction};
    for (const auto& a : *aggregates) {
      AggregateCall call;
      ARROW_ASSIGN_OR_RAISE(call.function, Text(a, "function"));
      if (auto ref = ParseLibraryFunctionName(call.function)) {
        if (!cp::GetFunctionRegistry()->GetFunction(call.function).ok()) {
          return arrow::Status::Invalid("plan: ", MissingLibraryFunctionMessage(*ref));
        }
      } else if (!kFunctions.count(call.function)) {
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
  } else if (kind == "join") {
    n->kind = PlanNode::Kind::kJoin;
    *children = 2;
    ARROW_ASSIGN_OR_RAISE(std::string type, Text(v, "join_type"));
    if (type == "inner") {
      n->join_type = JoinType::kInner;
    } else if (type == "left") {
      n->join_type = JoinType::kLeft;
    } else if (type == "semi") {
      n->join_type = JoinType::kSemi;
    } else if (type == "anti") {
      n->join_type = JoinType::kAnti;
    } else if (type == "full") {
      n->join_type = JoinType::kFull;
    } else {
      return arrow::Status::Invalid("plan: unknown join type '", type, "'");
    }
    ARROW_ASSIGN_OR_RAISE(n->left_keys, TextList(v, "left_keys"));
    ARROW_ASSIGN_OR_RAISE(n->right_keys, TextList(v, "right_keys"));
    if (n->left_keys.empty() || n->left_keys.size() != n->right_keys.size()) {
      return arrow::Status::Invalid("plan: a join needs pairs of keys");
    }
    ARROW_ASSIGN_OR_RAISE(n->join_filter, ExpressionAt(v, "join_filter"));
    ARROW_ASSIGN_OR_RAISE(n->build_input, Bool(v, "build_input"));
    if (n->build_input && n->join_type == JoinType::kInner) {
      return arrow::Status::Invalid("plan: an inner join hashes its right side");
    }
    ARROW_ASSIGN_OR_RAISE(n->null_equal_keys, Bool(v, "null_equal_keys"));
    if (v.contains("estimates")) {  // absent: unknown
      const json& e = v["estimates"];
      if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() ||
          !e[1].is_number_integer() || e[0].get<int64_t>() < -1 || e[1].get<int64_t>() < -1) {
        return arrow::Status::Invalid("plan: a join's estimates are not two row counts");
      }
      n->input_estimate = static_cast<double>(e[0].get<int64_t>());
      n->right_estimate = static_cast<double>(e[1].get<int64_t>());
    }
  } else if (kind == "window") {
    n->kind = PlanNode::Kind::kWindow;
    ARROW_ASSIGN_OR_RAISE(const json* windows, Field(v, "windows"));
    if (!windows->is_array() || windows->empty()) {
      return arrow::Status::Invalid("plan: a window node needs a list of window functions");
    }
    for (const auto& w : *windows) ARROW_RETURN_NOT_OK(DecodeWindow(w, n));
  } else if (kind == "union") {
    n->kind = PlanNode::Kind::kUnion;
    *children = 2;
    ARROW_ASSIGN_OR_RAISE(n->names, TextList(v, "names"));
    if (n->names.empty()) return arrow::Status::Invalid("plan: a union needs its column names");
  } else if (kind == "scan_objects") {
    n->kind = PlanNode::Kind::kScanObjects;
    *children = 0;
    ScanObjects& o = n->objects;
    ARROW_ASSIGN_OR_RAISE(o.format, Text(v, "format"));
    if (o.format != "jsonl" && o.format != "parquet" && o.format != "ipc") {
      return arrow::Status::Invalid("plan: scan_objects has unknown format '", o.format, "'");
    }
    ARROW_ASSIGN_OR_RAISE(o.keys, TextList(v, "keys"));
    for (const auto& key : o.keys) ARROW_RETURN_NOT_OK(CheckKey(key, "scan_objects", ""));
    ARROW_ASSIGN_OR_RAISE(o.first_object_index, Int(v, "first_object_index"));
    if (o.first_object_index < 0 || o.first_object_index > (int64_t{1} << 31)) {
      return arrow::Status::Invalid("plan: first_object_index out of range");
    }
    ARROW_ASSIGN_OR_RAISE(o.schema_id, Text(v, "schema_id"));
    ARROW_ASSIGN_OR_RAISE(o.schema, SchemaAt(v, "schema"));
    if (o.schema == nullptr) return arrow::Status::Invalid("plan: scan_objects needs a schema");
    ARROW_ASSIGN_OR_RAISE(o.skip_bad_records, Bool(v, "skip_bad_records"));
  } else if (kind == "transform") {
    n->kind = PlanNode::Kind::kTransform;
    ARROW_ASSIGN_OR_RAISE(n->transform.qualified_name, Text(v, "qualified_name"));
    ARROW_ASSIGN_OR_RAISE(n->transform.pin, Text(v, "pin"));
    ARROW_ASSIGN_OR_RAISE(n->transform.output_schema, SchemaAt(v, "output_schema"));
  } else if (kind == "dedup") {
    n->kind = PlanNode::Kind::kDedup;
    ARROW_ASSIGN_OR_RAISE(n->dedup.key, Text(v, "key"));
  } else if (kind == "sink_write") {
    n->kind = PlanNode::Kind::kSinkWrite;
    ARROW_ASSIGN_OR_RAISE(n->sink.format, Text(v, "format"));
    if (n->sink.format != "parquet" && n->sink.format != "ipc") {
      return arrow::Status::Invalid("plan: sink_write has unknown format '", n->sink.format, "'");
    }
    ARROW_ASSIGN_OR_RAISE(n->sink.key, Text(v, "key"));
    ARROW_RETURN_NOT_OK(CheckKey(n->sink.key, "sink_write", ""));
  } else if (kind == "shuffle_read") {
    n->kind = PlanNode::Kind::kShuffleRead;
    *children = 0;
    ShuffleRead& r = n->shuffle_read;
    ARROW_ASSIGN_OR_RAISE(r.files, TextList(v, "files"));
    ARROW_ASSIGN_OR_RAISE(r.blake3, TextList(v, "blake3"));
    if (r.files.empty() || r.files.size() != r.blake3.size()) {
      return arrow::Status::Invalid("plan: shuffle_read has ", r.files.size(), " files and ",
                                    r.blake3.size(), " digests");
    }
    for (const auto& key : r.files)
      ARROW_RETURN_NOT_OK(CheckKey(key, "shuffle_read", kShufflePrefix));
    ARROW_ASSIGN_OR_RAISE(r.schema, SchemaAt(v, "schema"));
    if (r.schema == nullptr) return arrow::Status::Invalid("plan: shuffle_read needs a schema");
    ARROW_ASSIGN_OR_RAISE(r.partition_keys, TextList(v, "partition_keys"));
    if (v.contains("text_columns")) {
      ARROW_ASSIGN_OR_RAISE(auto names, TextList(v, "text_columns"));
      ARROW_ASSIGN_OR_RAISE(auto texts, TextList(v, "texts"));
      ARROW_ASSIGN_OR_RAISE(auto kinds, TextList(v, "text_kinds"));
      if (texts.size() != names.size() || kinds.size() != names.size()) {
        return arrow::Status::Invalid("plan: shuffle_read has ", names.size(), " text columns, ",
                                      texts.size(), " texts and ", kinds.size(), " text kinds");
      }
      for (size_t i = 0; i < names.size(); ++i) {
        if (kinds[i] != "" && kinds[i] != "infix" && kinds[i] != "aggregate") {
          return arrow::Status::Invalid("plan: shuffle_read text kind '", kinds[i], "' of column '",
                                        names[i], "' is unknown");
        }
        r.column_texts[names[i]] = {texts[i], kinds[i] == "infix", kinds[i] == "aggregate"};
      }
    }
  } else if (kind == "shuffle_write") {
    n->kind = PlanNode::Kind::kShuffleWrite;
    ShuffleWrite& w = n->shuffle_write;
    ARROW_ASSIGN_OR_RAISE(w.keys, TextList(v, "keys"));
    ARROW_ASSIGN_OR_RAISE(int64_t partitions, Int(v, "partitions"));
    if (partitions < 1 || partitions > 65536) {
      return arrow::Status::Invalid("plan: partitions ", partitions, " out of range");
    }
    w.partitions = static_cast<int32_t>(partitions);
    ARROW_ASSIGN_OR_RAISE(w.folder, Text(v, "folder"));
    ARROW_RETURN_NOT_OK(CheckKey(w.folder, "shuffle_write", kShufflePrefix));
    ARROW_ASSIGN_OR_RAISE(w.one_row_per_key, Bool(v, "one_row_per_key"));
    if (w.one_row_per_key && w.keys.empty()) {
      return arrow::Status::Invalid("plan: one row per key needs keys");
    }
  } else {
    return arrow::Status::Invalid("plan: unknown node kind '", kind, "'");
  }
  return arrow::Status::OK();
}

arrow::Result<std::unique_ptr<PlanNode>> DecodeNode(const json& v, StoreSource* store, int depth) {
  if (depth > kMaxDepth) return arrow::Status::Invalid("plan: nested deeper than ", kMaxDepth);
  ARROW_ASSIGN_OR_RAISE(std::string kind, Text(v, "kind"));
  auto n = std::make_unique<PlanNode>();
  size_t children = 1;
  ARROW_RETURN_NOT_OK(DecodeFields(kind, v, store, depth, n.get(), &children));
  if ((n->kind == PlanNode::Kind::kShuffleWrite || n->kind == PlanNode::Kind::kSinkWrite) &&
      depth != 0) {
    return arrow::Status::Invalid("plan: a ", kind, " only at the top of a plan");
  }
  if (children >= 1) {
    ARROW_ASSIGN_OR_RAISE(const json* input, Field(v, "input"));
    ARROW_ASSIGN_OR_RAISE(n->input, DecodeNode(*input, store, depth + 1));
  } else if (v.contains("input")) {
    return arrow::Status::Invalid("plan: a ", kind, " has no input");
  }
  if (children == 2) {
    ARROW_ASSIGN_OR_RAISE(const json* right, Field(v, "right"));
    ARROW_ASSIGN_OR_RAISE(n->right, DecodeNode(*right, store, depth + 1));
  } else if (v.contains("right")) {
    return arrow::Status::Invalid("plan: only a join or a union has a right input");
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
    case PlanNode::Kind::kWindow:
      for (const auto& w : n.windows) {
        for (const auto& c : w.arguments) {
          ARROW_RETURN_NOT_OK(arrow::FieldRef(c).FindOne(*in).status());
        }
        for (const auto& c : w.partition_keys) {
          ARROW_RETURN_NOT_OK(arrow::FieldRef(c).FindOne(*in).status());
        }
        for (const auto& k : w.order_keys) ARROW_RETURN_NOT_OK(k.target.FindOne(*in).status());
      }
      break;
    case PlanNode::Kind::kShuffleWrite:
      for (const auto& k : n.shuffle_write.keys) {
        ARROW_RETURN_NOT_OK(arrow::FieldRef(k).FindOne(*in).status());
      }
      break;
    default:
      break;  // projections and aggregates are bound by OutputSchema itself
  }
  return out;
}

// The shapes a worker can run: a job's operators form one chain from scan_objects or a
// shuffle_read, with no relational operator in it; at most one scan is a task's share. True
// for a job's plan.
arrow::Result<bool> CheckShape(const PlanNode& root) {
  std::vector<const PlanNode*> stack = {&root};
  bool job = false, relational = false;
  int splits = 0;
  while (!stack.empty()) {
    const PlanNode* n = stack.back();
    stack.pop_back();
    if (IsJobKind(n->kind)) job = true;
    if (n->kind != PlanNode::Kind::kShuffleRead && n->kind != PlanNode::Kind::kShuffleWrite &&
        !IsJobKind(n->kind)) {
      relational = true;
    }
    if (n->kind == PlanNode::Kind::kScan && n->split) ++splits;
    if (n->input != nullptr) stack.push_back(n->input.get());
    if (n->right != nullptr) stack.push_back(n->right.get());
  }
  if (job && relational) {
    return arrow::Status::Invalid("plan: job operators and relational operators in one fragment");
  }
  if (splits > 1) return arrow::Status::Invalid("plan: more than one split scan");
  return job;
}

arrow::Result<Fragment> Decode(const uint8_t* data, size_t size,
                               std::shared_ptr<storage::ObjectStore> store) {
  ARROW_ASSIGN_OR_RAISE(json doc,
                        BodyAfterMagic(data, size, kPlanMagic, "SLUICE-PLAN/", kMaxCborDepth));
  Fragment f;
  ARROW_ASSIGN_OR_RAISE(f.run_id, Text(doc, "run_id"));
  ARROW_ASSIGN_OR_RAISE(int64_t stage, Int(doc, "stage_id"));
  ARROW_ASSIGN_OR_RAISE(int64_t partition, Int(doc, "partition"));
  ARROW_ASSIGN_OR_RAISE(int64_t attempt, Int(doc, "attempt"));
  if (stage < 0 || stage > 65536 || partition < 0 || partition > 65536 || attempt < 1 ||
      attempt > 65536) {
    return arrow::Status::Invalid("plan: stage, partition or attempt out of range");
  }
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
  StoreSource stores(std::move(store), f.session.store_url);
  // Function libraries before the plan: its expressions bind against their functions.
  if (session->contains("libraries")) {
    ARROW_ASSIGN_OR_RAISE(f.session.libraries, TextList(*session, "libraries"));
    if (f.session.libraries.size() > 64) {
      return arrow::Status::Invalid("plan: more than 64 function libraries");
    }
    for (const auto& digest : f.session.libraries) {
      ARROW_ASSIGN_OR_RAISE(auto library_store, stores.Get());
      auto loaded = EnsureFunctionLibrary(library_store, f.session.cache_dir, digest);
      if (!loaded.ok()) {
        return arrow::Status::Invalid("worker session: ", loaded.status().message());
      }
    }
  }
  ARROW_ASSIGN_OR_RAISE(const json* root, Field(doc, "plan"));
  ARROW_ASSIGN_OR_RAISE(std::unique_ptr<PlanNode> plan, DecodeNode(*root, &stores, 0));
  ARROW_ASSIGN_OR_RAISE(bool job, CheckShape(*plan));
  // Binding every expression against its input proves the plan is well-formed: names exist
  // and types fit, before anything runs. A job's rows are typed by its transforms at run time.
  if (!job) {
    auto schema = CheckBinds(*plan);
    if (!schema.ok()) {
      return arrow::Status::Invalid("plan: does not bind: ", schema.status().message());
    }
  }
  f.root = std::move(plan);
  return f;
}

}  // namespace

std::string Fragment::task_name() const {
  return "s" + std::to_string(stage_id) + "p" + std::to_string(partition);
}

std::string ShuffleAttemptFolder(const std::string& folder, const std::string& task,
                                 int32_t attempt) {
  return folder + "/" + task + "-" + std::to_string(attempt);
}

std::string ShuffleFileKey(const std::string& folder, const std::string& task, int32_t attempt,
                           int32_t partition) {
  return ShuffleAttemptFolder(folder, task, attempt) + "/part-" + std::to_string(partition) +
         ".arrow";
}

arrow::Result<std::vector<uint8_t>> EncodeFragment(const Fragment& f) {
  if (f.root == nullptr) return arrow::Status::Invalid("internal: a fragment without a plan");
  ARROW_RETURN_NOT_OK(EnsureComputeInitialized());
  ARROW_ASSIGN_OR_RAISE(json root, EncodeNode(*f.root));
  json doc = {{"run_id", f.run_id},
              {"stage_id", f.stage_id},
              {"partition", f.partition},
              {"attempt", f.attempt},
              {"session",
               {{"store_url", f.session.store_url},
                {"cache_dir", f.session.cache_dir},
                {"parity", LocalParity()},
                {"libraries", f.session.libraries}}},
              {"plan", std::move(root)}};
  return WithMagic(kPlanMagic, doc);
}

arrow::Result<Fragment> DecodeFragment(const uint8_t* data, size_t size,
                                       std::shared_ptr<storage::ObjectStore> store) {
  ARROW_RETURN_NOT_OK(EnsureComputeInitialized());
  try {
    return Decode(data, size, std::move(store));
  } catch (const std::exception& e) {  // a tree shape nlohmann refuses by throwing
    return arrow::Status::Invalid("plan: malformed (", e.what(), ")");
  }
}

}  // namespace sluice::plan
