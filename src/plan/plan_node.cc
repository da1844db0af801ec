#include "plan/plan_node.h"

#include <arrow/compute/api.h>
#include <arrow/compute/exec.h>
#include <arrow/table.h>
#include <arrow/type.h>

#include <sstream>

#include "plan/library_functions.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

std::vector<std::string> FieldNames(const std::shared_ptr<arrow::Schema>& schema) {
  return schema == nullptr ? std::vector<std::string>{} : schema->field_names();
}

std::string BoundText(WindowFrame::Bound bound, int64_t offset) {
  using B = WindowFrame::Bound;
  switch (bound) {
    case B::kUnboundedPreceding:
      return "unbounded preceding";
    case B::kPreceding:
      return std::to_string(offset) + " preceding";
    case B::kCurrentRow:
      return "current row";
    case B::kFollowing:
      return std::to_string(offset) + " following";
    case B::kUnboundedFollowing:
      return "unbounded following";
  }
  return "?";
}

std::string WindowText(const WindowCall& w) {
  std::ostringstream out;
  out << w.output << " := " << w.function << "(";
  for (size_t i = 0; i < w.arguments.size(); ++i) out << (i ? ", " : "") << w.arguments[i];
  if (w.function == "ntile" || w.function == "lag" || w.function == "lead" ||
      w.function == "nth_value") {
    out << (w.arguments.empty() ? "" : ", ") << w.parameter;
  }
  out << ") over (";
  if (!w.partition_keys.empty()) {
    out << "partition by ";
    for (size_t i = 0; i < w.partition_keys.size(); ++i) {
      out << (i ? ", " : "") << w.partition_keys[i];
    }
    out << " ";
  }
  if (!w.order_keys.empty()) {
    out << "order by ";
    for (size_t i = 0; i < w.order_keys.size(); ++i) {
      const auto& k = w.order_keys[i];
      out << (i ? ", " : "") << k.target.ToString()
          << (k.order == arrow::compute::SortOrder::Descending ? " desc" : "")
          << (k.null_placement == arrow::compute::NullPlacement::AtStart ? " nulls first" : "");
    }
    out << " ";
  }
  out << (w.frame.unit == WindowFrame::Unit::kRows ? "rows" : "range") << " between "
      << BoundText(w.frame.start, w.frame.start_offset) << " and "
      << BoundText(w.frame.end, w.frame.end_offset) << ")";
  return out.str();
}

}  // namespace

const char* KindName(PlanNode::Kind kind) {
  using K = PlanNode::Kind;
  switch (kind) {
    case K::kScan:
      return "scan";
    case K::kFilter:
      return "filter";
    case K::kProject:
      return "project";
    case K::kAggregate:
      return "aggregate";
    case K::kSort:
      return "sort";
    case K::kLimit:
      return "limit";
    case K::kJoin:
      return "join";
    case K::kScanObjects:
      return "scan_objects";
    case K::kTransform:
      return "transform";
    case K::kDedup:
      return "dedup";
    case K::kSinkWrite:
      return "sink_write";
    case K::kShuffleRead:
      return "shuffle_read";
    case K::kShuffleWrite:
      return "shuffle_write";
    case K::kJoinSet:
      return "join_set";
    case K::kDependentJoin:
      return "dependent_join";
    case K::kExchange:
      return "exchange";
    case K::kUnion:
      return "union";
    case K::kWindow:
      return "window";
  }
  return "?";
}

bool IsJobKind(PlanNode::Kind kind) {
  return kind == PlanNode::Kind::kScanObjects || kind == PlanNode::Kind::kTransform ||
         kind == PlanNode::Kind::kDedup || kind == PlanNode::Kind::kSinkWrite;
}

bool IsWholeTable(const PlanNode& node) {
  const PlanNode* side = &node;
  while (side->kind == PlanNode::Kind::kProject && side->input != nullptr) {
    side = side->input.get();
  }
  return side->kind == PlanNode::Kind::kScan && !side->split;
}

bool IsLogicalKind(PlanNode::Kind kind) {
  return kind == PlanNode::Kind::kJoinSet || kind == PlanNode::Kind::kDependentJoin;
}

std::unique_ptr<PlanNode> CopyPlan(
    const PlanNode& node,
    const std::function<std::unique_ptr<PlanNode>(const PlanNode&)>& replace) {
  if (replace) {
    if (auto instead = replace(node)) return instead;
  }
  auto out = std::make_unique<PlanNode>();
  static_cast<PlanNodeFields&>(*out) = node;
  if (node.input != nullptr) out->input = CopyPlan(*node.input, replace);
  if (node.right != nullptr) out->right = CopyPlan(*node.right, replace);
  for (const auto& item : node.items) out->items.push_back(CopyPlan(*item, replace));
  return out;
}

#define SLUICE_PLAN_STEP(Type, kind_value, member) \
  PlanNodeFields Step(Type value) {                \
    PlanNodeFields f;                              \
    f.kind = PlanNode::Kind::kind_value;           \
    f.member = std::move(value);                   \
    return f;                                      \
  }
SLUICE_PLAN_STEP(ScanObjects, kScanObjects, objects)
SLUICE_PLAN_STEP(CallTransform, kTransform, transform)
SLUICE_PLAN_STEP(DedupFirst, kDedup, dedup)
SLUICE_PLAN_STEP(WriteSink, kSinkWrite, sink)
SLUICE_PLAN_STEP(ShuffleRead, kShuffleRead, shuffle_read)
SLUICE_PLAN_STEP(ShuffleWrite, kShuffleWrite, shuffle_write)
#undef SLUICE_PLAN_STEP

std::unique_ptr<PlanNode> MakeNode(PlanNode::Kind kind, std::unique_ptr<PlanNode> input) {
  auto node = std::make_unique<PlanNode>();
  node->kind = kind;
  node->input = std::move(input);
  return node;
}

std::unique_ptr<PlanNode> Chain(std::vector<PlanNodeFields> steps) {
  std::unique_ptr<PlanNode> top;
  for (PlanNodeFields& step : steps) {
    auto node = std::make_unique<PlanNode>();
    static_cast<PlanNodeFields&>(*node) = std::move(step);
    node->input = std::move(top);
    top = std::move(node);
  }
  return top;
}

arrow::Result<std::shared_ptr<arrow::DataType>> AggregateOutputType(
    const AggregateCall& call, const std::shared_ptr<arrow::DataType>& input) {
  if (call.function == "count" || call.function == "count_all" ||
      call.function == "count_distinct") {
    return arrow::int64();
  }
  // The scalar aggregate resolves the same output type as its hash_ form.
  ARROW_ASSIGN_OR_RAISE(auto function, cp::GetFunctionRegistry()->GetFunction(call.function));
  std::vector<arrow::TypeHolder> types = {input};
  ARROW_ASSIGN_OR_RAISE(const cp::Kernel* kernel, function->DispatchBest(&types));
  cp::ExecContext exec;
  cp::KernelContext ctx(&exec);
  ARROW_ASSIGN_OR_RAISE(auto out, kernel->signature->out_type().Resolve(&ctx, types));
  return out.GetSharedPtr();
}

bool IsWindowFunction(const std::string& name) {
  static const char* kNames[] = {"row_number",  "rank",       "dense_rank", "percent_rank",
                                 "cume_dist",   "ntile",      "lag",        "lead",
                                 "first_value", "last_value", "nth_value",  "sum",
                                 "count",       "count_all",  "min",        "max"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

arrow::Result<std::shared_ptr<arrow::DataType>> WindowOutputType(
    const WindowCall& call, const std::shared_ptr<arrow::DataType>& value) {
  const std::string& f = call.function;
  if (f == "row_number" || f == "rank" || f == "dense_rank" || f == "ntile" || f == "count" ||
      f == "count_all") {
    return arrow::int64();
  }
  if (f == "percent_rank" || f == "cume_dist") return arrow::float64();
  if (ParseLibraryFunctionName(f)) return LibraryWindowType(f);
  if (value == nullptr) {
    return arrow::Status::Invalid("internal: window function ", f, " without its value");
  }
  if (f == "sum") return AggregateOutputType(AggregateCall{"sum", "", ""}, value);
  if (!IsWindowFunction(f)) return arrow::Status::Invalid("internal: window function ", f);
  return value;  // lag, lead, first_value, last_value, nth_value, min, max
}

arrow::Result<std::shared_ptr<arrow::Schema>> WindowSchema(const arrow::Schema& in,
                                                           const std::vector<WindowCall>& calls) {
  arrow::FieldVector fields = in.fields();
  for (const auto& w : calls) {
    std::shared_ptr<arrow::DataType> value;
    if (!w.arguments.empty()) {
      auto f = in.GetFieldByName(w.arguments[0]);
      if (f == nullptr) return arrow::Status::Invalid("internal: window argument ", w.arguments[0]);
      value = f->type();
    }
    ARROW_ASSIGN_OR_RAISE(auto type, WindowOutputType(w, value));
    fields.push_back(arrow::field(w.output, type));
  }
  return arrow::schema(fields);
}

arrow::Result<std::shared_ptr<arrow::Schema>> NodeOutputSchema(
    const PlanNode& node, const std::shared_ptr<arrow::Schema>& in,
    const std::shared_ptr<arrow::Schema>& right) {
  if ((node.input != nullptr && in == nullptr) || (node.right != nullptr && right == nullptr)) {
    return arrow::Status::Invalid("internal: an input schema is missing");
  }
  switch (node.kind) {
    case PlanNode::Kind::kScan: {
      if (node.table == nullptr || node.table->schema == nullptr) {
        return arrow::Status::Invalid("internal: a scan without a table schema");
      }
      arrow::FieldVector fields;
      for (size_t i = 0; i < node.columns.size(); ++i) {
        auto f = node.table->schema->GetFieldByName(node.columns[i]);
        if (f == nullptr) return arrow::Status::Invalid("internal: scan column ", node.columns[i]);
        fields.push_back(f->WithName(node.names[i]));
      }
      return arrow::schema(fields);
    }
    case PlanNode::Kind::kProject: {
      arrow::FieldVector fields;
      if (node.keep_input) fields = in->fields();
      for (size_t i = 0; i < node.expressions.size(); ++i) {
        const auto& e = node.expressions[i];
        if (const auto* ref = e.field_ref(); ref != nullptr && ref->name() != nullptr) {
          if (auto f = in->GetFieldByName(*ref->name())) {
            fields.push_back(f->WithName(node.names[i]));
            continue;
          }
        }
        ARROW_ASSIGN_OR_RAISE(auto bound, e.Bind(*in));
        fields.push_back(arrow::field(node.names[i], bound.type()->GetSharedPtr()));
      }
      return arrow::schema(fields);
    }
    case PlanNode::Kind::kAggregate: {
      arrow::FieldVector fields;
      for (const auto& k : node.keys) {
        auto f = in->GetFieldByName(k);
        if (f == nullptr) return arrow::Status::Invalid("internal: aggregate key ", k);
        fields.push_back(f);
      }
      for (const auto& a : node.aggregates) {
        std::shared_ptr<arrow::DataType> input_type = arrow::boolean();
        if (!a.input.empty()) {
          auto f = in->GetFieldByName(a.input);
          if (f == nullptr) return arrow::Status::Invalid("internal: aggregate input ", a.input);
          input_type = f->type();
        }
        ARROW_ASSIGN_OR_RAISE(auto type, AggregateOutputType(a, input_type));
        fields.push_back(arrow::field(a.output, type));
      }
      return arrow::schema(fields);
    }
    case PlanNode::Kind::kJoin:
    case PlanNode::Kind::kDependentJoin: {
      if (node.join_type == JoinType::kSemi || node.join_type == JoinType::kAnti) return in;
      arrow::FieldVector fields = in->fields();
      if (node.join_type == JoinType::kFull) {
        for (auto& f : fields) f = f->WithNullable(true);
      }
      for (const auto& f : right->fields()) {
        fields.push_back(node.join_type == JoinType::kInner ? f : f->WithNullable(true));
      }
      return arrow::schema(fields);
    }
    case PlanNode::Kind::kScanObjects:
      return node.objects.schema;
    case PlanNode::Kind::kTransform:
      return node.transform.output_schema;
    case PlanNode::Kind::kShuffleRead:
      return node.shuffle_read.schema;
    case PlanNode::Kind::kExchange:
      return node.exchange.schema != nullptr ? node.exchange.schema : in;
    case PlanNode::Kind::kJoinSet:
      return arrow::Status::Invalid("internal: a join set's schema is its items' (OutputSchema)");
    case PlanNode::Kind::kWindow:
      return WindowSchema(*in, node.windows);
    case PlanNode::Kind::kUnion: {
      if (in->num_fields() != static_cast<int>(node.names.size()) ||
          right->num_fields() != static_cast<int>(node.names.size())) {
        return arrow::Status::Invalid("internal: a union's sides do not have its ",
                                      node.names.size(), " columns");
      }
      arrow::FieldVector fields;
      for (int i = 0; i < in->num_fields(); ++i) {
        const auto& l = in->field(i);
        const auto& r = right->field(i);
        if (!l->type()->Equals(*r->type())) {
          return arrow::Status::Invalid("internal: a union's column ", node.names[i], " is ",
                                        l->type()->ToString(), " on one side and ",
                                        r->type()->ToString(), " on the other");
        }
        fields.push_back(arrow::field(node.names[i], l->type(), l->nullable() || r->nullable()));
      }
      return arrow::schema(fields);
    }
    default:
      return in;
  }
}

arrow::Result<std::shared_ptr<arrow::Schema>> OutputSchema(const PlanNode& node) {
  // An exchange that names its rows' schema needs none from below (a job's transforms may
  // declare `any`, which only running them fixes).
  if (node.kind == PlanNode::Kind::kExchange && node.exchange.schema != nullptr) {
    return node.exchange.schema;
  }
  if (node.kind == PlanNode::Kind::kJoinSet) {
    arrow::FieldVector fields;
    for (const auto& item : node.items) {
      ARROW_ASSIGN_OR_RAISE(auto schema, OutputSchema(*item));
      fields.insert(fields.end(), schema->fields().begin(), schema->fields().end());
    }
    return arrow::schema(fields);
  }
  std::shared_ptr<arrow::Schema> in, right;
  if (node.input != nullptr) {
    ARROW_ASSIGN_OR_RAISE(in, OutputSchema(*node.input));
  }
  if (node.right != nullptr) {
    ARROW_ASSIGN_OR_RAISE(right, OutputSchema(*node.right));
  }
  return NodeOutputSchema(node, in, right);
}

const char* JoinTypeName(JoinType type) {
  switch (type) {
    case JoinType::kInner:
      return "inner";
    case JoinType::kLeft:
      return "left";
    case JoinType::kSemi:
      return "semi";
    case JoinType::kAnti:
      return "anti";
    case JoinType::kFull:
      return "full";
  }
  return "?";
}

std::vector<std::string> PlanNode::OutputNames() const {
  switch (kind) {
    case Kind::kScan:
    case Kind::kUnion:
      return names;
    case Kind::kProject: {
      std::vector<std::string> out;
      if (keep_input) out = input->OutputNames();
      out.insert(out.end(), names.begin(), names.end());
      return out;
    }
    case Kind::kAggregate: {
      std::vector<std::string> out = keys;
      for (const auto& a : aggregates) out.push_back(a.output);
      return out;
    }
    case Kind::kWindow: {
      std::vector<std::string> out = input->OutputNames();
      for (const auto& w : windows) out.push_back(w.output);
      return out;
    }
    case Kind::kJoinSet: {
      std::vector<std::string> out;
      for (const auto& item : items) {
        for (auto& n : item->OutputNames()) out.push_back(std::move(n));
      }
      return out;
    }
    case Kind::kJoin:
    case Kind::kDependentJoin: {
      std::vector<std::string> out = input->OutputNames();
      if (join_type == JoinType::kInner || join_type == JoinType::kLeft ||
          join_type == JoinType::kFull) {
        for (auto& n : right->OutputNames()) out.push_back(std::move(n));
      }
      return out;
    }
    case Kind::kScanObjects:
      return FieldNames(objects.schema);
    case Kind::kTransform:
      return FieldNames(transform.output_schema);
    case Kind::kShuffleRead:
      return FieldNames(shuffle_read.schema);
    case Kind::kExchange:
      return exchange.schema != nullptr ? FieldNames(exchange.schema) : input->OutputNames();
    default:
      return input->OutputNames();
  }
}

std::string PlanNode::Explain(int indent,
                              const std::function<std::string(const PlanNode&)>& annotate) const {
  std::ostringstream out;
  out << std::string(static_cast<size_t>(indent) * 2, ' ');
  switch (kind) {
    case Kind::kScan: {
      if (table->format == kMemoryFormat) {
        out << "Scan " << table->name << " (" << (table->rows ? table->rows->num_rows() : 0)
            << " rows computed first) columns=[";
      } else {
        out << "Scan " << table->name << " (" << table->files.size() << " files"
            << (split ? ", this task's share" : "") << ") columns=[";
      }
      for (size_t i = 0; i < columns.size(); ++i) out << (i ? ", " : "") << names[i];
      out << "]";
      if (!scan_filter.Equals(arrow::compute::literal(true))) {
        out << " pushdown=" << scan_filter.ToString();
      }
      // Only the physical planner's non-default choice: most plans read 128K-row batches.
      if (batch_rows != PlanNodeFields{}.batch_rows) out << " batch_rows=" << batch_rows;
      break;
    }
    case Kind::kFilter:
      out << "Filter " << predicate.ToString();
      break;
    case Kind::kProject:
      out << "Project " << (keep_input ? "(input columns), " : "");
      for (size_t i = 0; i < expressions.size(); ++i) {
        out << (i ? ", " : "") << names[i] << " := " << expressions[i].ToString();
      }
      break;
    case Kind::kAggregate:
      out << (final_phase ? "FinalAggregate" : "PartialAggregate") << " keys=[";
      for (size_t i = 0; i < keys.size(); ++i) out << (i ? ", " : "") << keys[i];
      out << "] aggregates=[";
      for (size_t i = 0; i < aggregates.size(); ++i) {
        out << (i ? ", " : "") << aggregates[i].output << " := " << aggregates[i].function << "("
            << aggregates[i].input << ")";
      }
      out << "]" << (repeats_keys ? " repeats_keys" : "");
      break;
    case Kind::kSort:
      out << "Sort ";
      for (size_t i = 0; i < sort_keys.size(); ++i) {
        out << (i ? ", " : "") << sort_keys[i].target.ToString()
            << (sort_keys[i].order == arrow::compute::SortOrder::Descending ? " DESC" : "");
      }
      break;
    case Kind::kLimit:
      out << "Limit offset=" << offset << " count=" << count;
      break;
    case Kind::kJoin:
      out << "HashJoin " << JoinTypeName(join_type)
          << (build_input ? " (hashing the outer side)" : "") << " on ";
      for (size_t i = 0; i < left_keys.size(); ++i) {
        out << (i ? " and " : "") << left_keys[i] << " = " << right_keys[i];
      }
      if (null_equal_keys) out << " (NULLs equal)";
      if (!join_filter.Equals(arrow::compute::literal(true))) {
        out << " filter " << join_filter.ToString();
      }
      break;
    case Kind::kWindow:
      out << "Window ";
      for (size_t i = 0; i < windows.size(); ++i) out << (i ? ", " : "") << WindowText(windows[i]);
      break;
    case Kind::kUnion:
      out << "UnionAll ";
      for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << names[i];
      break;
    case Kind::kScanObjects:
      out << "ScanObjects " << objects.format << " (" << objects.keys.size() << " objects) as "
          << objects.schema_id;
      break;
    case Kind::kTransform:
      out << "Transform " << transform.qualified_name << " @" << transform.pin.substr(0, 12);
      break;
    case Kind::kDedup:
      out << "DedupFirst " << dedup.key;
      break;
    case Kind::kSinkWrite:
      out << "SinkWrite " << sink.format << " " << sink.key;
      break;
    case Kind::kShuffleRead:
      out << "ShuffleRead (" << shuffle_read.files.size() << " files)";
      if (!shuffle_read.partition_keys.empty()) {
        out << " partitioned on ";
        for (size_t i = 0; i < shuffle_read.partition_keys.size(); ++i) {
          out << (i ? ", " : "") << shuffle_read.partition_keys[i];
        }
      }
      break;
    case Kind::kShuffleWrite:
      out << "ShuffleWrite " << shuffle_write.partitions << " partitions";
      if (!shuffle_write.keys.empty()) {
        out << " on ";
        for (size_t i = 0; i < shuffle_write.keys.size(); ++i) {
          out << (i ? ", " : "") << shuffle_write.keys[i];
        }
      }
      if (shuffle_write.one_row_per_key) out << " (one row per key)";
      break;
    case Kind::kJoinSet:
      out << "JoinSet (" << items.size() << " items, not ordered yet)";
      break;
    case Kind::kExchange:
      out << "Exchange ";
      if (exchange.gather) {
        out << "gather";
      } else {
        out << "hash on [";
        for (size_t i = 0; i < exchange.keys.size(); ++i) {
          out << (i ? ", " : "") << exchange.keys[i];
        }
        out << "] into " << exchange.partitions << " partitions";
      }
      if (exchange.one_row_per_key) out << " (one row per key)";
      break;
    case Kind::kDependentJoin:
      out << "DependentJoin " << JoinTypeName(join_type);
      for (size_t i = 0; i < left_keys.size(); ++i) {
        out << (i ? " and " : " on ") << left_keys[i] << " = " << right_keys[i];
      }
      break;
  }
  if (annotate) out << "  " << annotate(*this);
  out << "\n";
  if (input != nullptr) out << input->Explain(indent + 1, annotate);
  if (right != nullptr) out << right->Explain(indent + 1, annotate);
  for (const auto& item : items) out << item->Explain(indent + 1, annotate);
  return out.str();
}

}  // namespace sluice::plan
