#include "exec/plan_executor.h"

#include <arrow/acero/api.h>
#include <arrow/compute/api.h>
#include <arrow/dataset/api.h>
#include <arrow/dataset/file_ipc.h>
#include <arrow/dataset/file_json.h>
#include <arrow/dataset/file_parquet.h>
#include <arrow/dataset/plan.h>
#include <parquet/properties.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "exec/canonical_floats.h"
#include "exec/deferred_source.h"
#include "exec/expand_node.h"
#include "exec/filter_node.h"
#include "exec/int_key_aggregate.h"
#include "exec/int_key_join.h"
#include "exec/int_range_pruning.h"
#include "exec/join_gate.h"
#include "exec/named_fragment.h"
#include "exec/narrow_decimals.h"
#include "exec/project_node.h"
#include "exec/scan_readahead.h"
#include "exec/shared_subplans.h"
#include "exec/top_n.h"
#include "exec/window.h"
#include "plan/column_texts.h"
#include "plan/common_subexpressions.h"
#include "plan/compute_init.h"
#include "plan/conjuncts.h"
#include "plan/decimal_kernels.h"
#include "plan/dictionary_kernels.h"
#include "plan/exact_sum.h"
#include "plan/expression_text.h"
#include "plan/library_functions.h"
#include "plan/like_kernels.h"
#include "plan/set_kernels.h"
#include "plan/table_provider.h"
#include "plan/unsigned_comparisons.h"

namespace sluice::exec {

using plan::AggregateCall;
using plan::JoinType;
using plan::PlanNode;
using plan::TableSource;

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;
namespace ds = arrow::dataset;

// Arrow's compute kernels (registered once for the whole process) and the dataset scan node.
arrow::Status EnsureInitialized() {
  ARROW_RETURN_NOT_OK(plan::EnsureComputeInitialized());
  static std::once_flag once;
  std::call_once(once, [] { ds::internal::Initialize(); });
  return arrow::Status::OK();
}

// The scan filter over the files' own column names (the dataset reads them in SQL's types), or
// none if it reads a column the scan does not.
std::optional<cp::Expression> FileFilter(const PlanNode& node) {
  std::map<std::string, std::string> file_name;
  for (size_t i = 0; i < node.columns.size(); ++i) file_name[node.names[i]] = node.columns[i];
  std::function<std::optional<cp::Expression>(const cp::Expression&)> rewrite =
      [&](const cp::Expression& e) -> std::optional<cp::Expression> {
    if (const auto* ref = e.field_ref()) {
      const std::string* id = ref->name();
      if (id == nullptr || !file_name.count(*id)) return std::nullopt;
      return cp::field_ref(file_name[*id]);
    }
    const auto* call = e.call();
    if (call == nullptr) return e;
    std::vector<cp::Expression> args;
    for (const auto& a : call->arguments) {
      auto r = rewrite(a);
      if (!r) return std::nullopt;
      args.push_back(std::move(*r));
    }
    return cp::call(call->function_name, std::move(args), call->options);
  };
  return rewrite(node.scan_filter);
}

// The columns of `table` that Parquet stores wholly as dictionaries, among the scan's, as file
// names.
std::set<std::string> DictionaryColumns(const PlanNode& node) {
  std::set<std::string> out;
  if (node.table->format != "parquet") return out;
  for (const auto& c : node.columns) {
    const auto field = node.table->schema->GetFieldByName(c);
    if (node.table->dictionary_columns.count(c) && field != nullptr &&
        field->type()->id() == arrow::Type::STRING) {
      out.insert(c);
    }
  }
  return out;
}

// A Parquet table's fragments to read, one per file: a map task's share of row groups (when
// the plan gives ranges), less those whose statistics rule out `filter`. Statistics are read
// with a plain format: a column read as a dictionary has none that Arrow's dataset uses, so
// a filter on a string would otherwise prune nothing.
arrow::Result<std::vector<std::shared_ptr<ds::FileFragment>>> ParquetFragments(
    const TableSource& table, const std::vector<std::string>& paths,
    const std::optional<cp::Expression>& filter, ds::ParquetFileFormat* format) {
  if (!table.row_group_ranges.empty() && table.row_group_ranges.size() != paths.size()) {
    return arrow::Status::Invalid("internal: row group ranges of table '", table.name,
                                  "' do not match its files");
  }
  std::vector<cp::Expression> conjuncts;
  std::vector<cp::Expression> unbound;  // the same, as written (IntRangeKeeps)
  if (filter) {
    std::vector<cp::Expression> parts;
    plan::Conjuncts(*filter, &parts);
    unbound = parts;
    for (const auto& c : parts) {
      auto bound = c.Bind(*table.schema);
      if (bound.ok()) conjuncts.push_back(std::move(*bound));
    }
  }
  // Arrow reads an empty list of row groups as none of them; nullopt is all of them.
  auto make = [](ds::ParquetFileFormat* f, const ds::FileSource& source,
                 const std::optional<std::vector<int>>& row_groups)
      -> arrow::Result<std::shared_ptr<ds::ParquetFileFragment>> {
    if (row_groups) return f->MakeFragment(source, cp::literal(true), nullptr, *row_groups);
    ARROW_ASSIGN_OR_RAISE(auto all, f->MakeFragment(source, cp::literal(true), nullptr));
    return std::static_pointer_cast<ds::ParquetFileFragment>(all);
  };
  auto plain = std::make_shared<ds::ParquetFileFormat>();
  std::vector<std::shared_ptr<ds::FileFragment>> fragments;
  for (size_t i = 0; i < paths.size(); ++i) {
    std::optional<std::vector<int>> row_groups;
    if (!table.row_group_ranges.empty()) {
      const auto [first, end] = table.row_group_ranges[i];
      if (first >= end) continue;
      row_groups.emplace();
      for (int32_t rg = first; rg < end; ++rg) row_groups->push_back(rg);
    }
    ds::FileSource source(paths[i], table.store->filesystem());
    if (!conjuncts.empty()) {
      ARROW_ASSIGN_OR_RAISE(auto file, make(plain.get(), source, row_groups));
      // Conjunct by conjunct: Arrow cannot compare some statistics with the plan's types (a
      // file's string_view with a string), and such a conjunct then prunes nothing.
      std::optional<std::set<int>> kept;
      for (const auto& conjunct : conjuncts) {
        auto parts = file->SplitByRowGroup(conjunct);
        if (!parts.ok()) continue;
        std::set<int> ids;
        for (const auto& part : *parts) {
          for (int id : static_cast<const ds::ParquetFileFragment&>(*part).row_groups()) {
            if (!kept || kept->count(id)) ids.insert(id);
          }
        }
        kept = std::move(ids);
      }
      // And by the integer statistics, which Arrow cannot use where a group has NULLs.
      int known = 0;
      const std::set<int> excluded = IntRangeExcludes(table, i, unbound, &known);
      if (!excluded.empty()) {
        if (!kept) {
          kept.emplace();
          if (row_groups) {
            kept->insert(row_groups->begin(), row_groups->end());
          } else {
            for (int id = 0; id < known; ++id) kept->insert(id);
          }
        }
        for (int id : excluded) kept->erase(id);
      }
      if (kept) {
        if (kept->empty()) continue;
        row_groups = std::vector<int>(kept->begin(), kept->end());
      }
    }
    ARROW_ASSIGN_OR_RAISE(auto fragment, make(format, source, row_groups));
    fragments.push_back(NameReadErrors(std::move(fragment), table.name));
  }
  return fragments;
}

// The scan of `node`. With `dictionaries`, Parquet's dictionary string columns stay
// dictionaries (named in it, as plan names) for a filter to test per value and to drop by code;
// the caller decodes them. Otherwise every column has the plan's type.
arrow::Result<ac::Declaration> Scan(const PlanNode& node,
                                    std::set<std::string>* dictionaries = nullptr) {
  const TableSource& table = *node.table;
  if (table.format == plan::kConstantRowFormat) {
    // One row of no columns, for the select list's constants to be computed over.
    std::vector<arrow::compute::ExecBatch> row = {arrow::compute::ExecBatch({}, 1)};
    return ac::Declaration("exec_batch_source",
                           ac::ExecBatchSourceNodeOptions(table.schema, std::move(row)));
  }
  if (table.format == plan::kMemoryFormat) {
    std::vector<cp::Expression> exprs;
    for (const auto& c : node.columns) exprs.push_back(cp::field_ref(c));
    return ac::Declaration::Sequence(
        {{"table_source", ac::TableSourceNodeOptions(table.rows)},
         {"project", ac::ProjectNodeOptions(std::move(exprs), node.names)}});
  }
  if (table.format == plan::kProviderFormat) {
    // A function library's table: its scan of this task's partitions, checked batch by batch.
    ARROW_ASSIGN_OR_RAISE(auto reader, plan::ScanProvider(table, node.columns));
    ac::Declaration source{"record_batch_reader_source",
                           ac::RecordBatchReaderSourceNodeOptions(std::move(reader))};
    std::vector<cp::Expression> exprs;
    for (const auto& c : node.columns) exprs.push_back(cp::field_ref(c));
    return ac::Declaration::Sequence(
        {std::move(source), {"project", ac::ProjectNodeOptions(exprs, node.names)}});
  }
  if (table.store == nullptr) {
    return arrow::Status::Invalid("internal: table ", table.name, " has no store");
  }
  std::vector<std::string> paths;
  for (const auto& key : table.files) paths.push_back(table.store->FileSystemPath(key));
  const std::set<std::string> kept =
      dictionaries != nullptr ? DictionaryColumns(node) : std::set<std::string>{};
  std::shared_ptr<ds::FileFormat> format;
  // Decimal columns that only our decimal kernels read above this scan (exec/narrow_decimals.h).
  const std::set<std::string> narrow =
      table.format == "parquet" ? ScopedNarrowDecimals::For(node) : std::set<std::string>{};
  if (table.format == "parquet") {
    auto parquet = narrow.empty() ? std::make_shared<ds::ParquetFileFormat>()
                                  : NarrowDecimalParquetFormat(narrow);
    // A dictionary column is read as one even where the scan decodes it: expanding small
    // dictionaries beats decoding each value into a string view and casting it (TPC-DS q10's
    // customer_demographics, 1.9M rows of flags: 0.33 s against 0.21 s with them decoded).
    for (const auto& c : node.columns) {
      if (table.dictionary_columns.count(c)) parquet->reader_options.dict_columns.insert(c);
    }
    format = parquet;
  } else if (table.format == "ipc") {
    format = std::make_shared<ds::IpcFileFormat>();
  } else {
    format = std::make_shared<ds::JsonFileFormat>();
  }
  auto options = std::make_shared<ds::ScanOptions>();
  options->dataset_schema = table.schema;
  // Parquet's row groups are pruned below, before the scan; the scan's schema may hold
  // dictionaries, which not every function in a filter takes.
  const std::optional<cp::Expression> filter = FileFilter(node);
  if (filter && table.format != "parquet") options->filter = *filter;
  if (!kept.empty()) {
    arrow::FieldVector fields = table.schema->fields();
    for (auto& f : fields) {
      if (kept.count(f->name())) f = f->WithType(arrow::dictionary(arrow::int32(), f->type()));
    }
    options->dataset_schema = arrow::schema(std::move(fields), table.schema->metadata());
    for (size_t i = 0; i < node.columns.size(); ++i) {
      if (kept.count(node.columns[i])) dictionaries->insert(node.names[i]);
    }
  }
  if (!narrow.empty()) {
    arrow::FieldVector fields = options->dataset_schema->fields();
    for (auto& f : fields) {
      if (!narrow.count(f->name())) continue;
      const auto& t = static_cast<const arrow::Decimal128Type&>(*f->type());
      f = f->WithType(arrow::decimal64(t.precision(), t.scale()));
    }
    options->dataset_schema = arrow::schema(std::move(fields), options->dataset_schema->metadata());
  }
  std::shared_ptr<ds::Dataset> dataset;
  if (table.format == "parquet") {
    // In the plan's types, not each file's: the scan casts string views and dictionaries.
    ARROW_ASSIGN_OR_RAISE(
        auto fragments,
        ParquetFragments(table, paths, filter, static_cast<ds::ParquetFileFormat*>(format.get())));
    ARROW_ASSIGN_OR_RAISE(
        dataset, ds::FileSystemDataset::Make(options->dataset_schema, cp::literal(true), format,
                                             table.store->filesystem(), std::move(fragments)));
  } else {
    if (!table.row_group_ranges.empty()) {
      return arrow::Status::Invalid("internal: row group ranges of table '", table.name,
                                    "', which is not Parquet");
    }
    ARROW_ASSIGN_OR_RAISE(auto factory, ds::FileSystemDatasetFactory::Make(
                                            table.store->filesystem(), paths, format, {}));
    // The schema carried in the plan, not re-read per file.
    ds::FinishOptions finish;
    finish.schema = table.schema;
    ARROW_ASSIGN_OR_RAISE(dataset, factory->Finish(finish));
  }
  std::vector<cp::Expression> columns;
  for (const auto& c : node.columns) columns.push_back(cp::field_ref(c));
  options->projection = cp::call("make_struct", columns, cp::MakeStructOptions(node.columns));
  // Only Parquet's reader turns readahead into row groups decoded at once; other formats keep
  // two batches, which also keeps a LIMIT's rows in file order as before.
  options->batch_readahead =
      table.format == "parquet"
          ? ScanReadahead(*options->dataset_schema, node.columns, node.batch_rows)
          : 2;
  options->batch_size = node.batch_rows;
  // A row group's columns decode in parallel, so fewer decoded row groups are held at once and a
  // scan of few row groups uses every thread. A/B medians against one row group per thread:
  // TPC-DS q21, which keeps one of inventory's 6 row groups, 83 -> 69 ms; peak RSS of TPC-H Q5
  // 165 -> 141 MiB and Q1 123 -> 108 MiB; the 22 TPC-H queries' time unchanged.
  options->use_threads = true;
  if (table.format == "parquet") {
    auto parquet_options = std::make_shared<ds::ParquetFragmentScanOptions>();
    // A page that carries a CRC (sluice's own files do) is checked against it: a damaged
    // uncompressed page would otherwise read as wrong values, without an error.
    parquet_options->reader_properties->set_page_checksum_verification(true);
    // A local file needs no pre-buffering of whole row groups (object stores still get it).
    if (table.store->filesystem()->type_name() == "local") {
      parquet_options->arrow_reader_properties->set_pre_buffer(false);
    }
    options->fragment_scan_options = parquet_options;
  }
  ac::Declaration scan{"scan", ds::ScanNodeOptions{dataset, options}};
  // Scan output carries extra fields; keep the needed columns under their plan names.
  std::vector<cp::Expression> exprs;
  for (const auto& c : node.columns) exprs.push_back(cp::field_ref(c));
  return ac::Declaration::Sequence(
      {std::move(scan), {"project", ac::ProjectNodeOptions(exprs, node.names)}});
}

// How an error names the sum `call`: as the query wrote it, where the binder named it
// ("sum(l_quantity)"), else by its argument. `texts`: the aggregate's HiddenColumnTexts.
std::string SumLabel(const plan::ColumnTexts& texts, const AggregateCall& call) {
  const auto found = texts.find(call.output);
  if (found != texts.end()) return found->second.text;
  return "sum(" + plan::ExpressionText(cp::field_ref(call.input), &texts) + ")";
}

// The aggregate `node` of `input`, whose types `input_schema` gives (they pick a sum's kernel).
// `repeats_keys`: the output may give a key in several rows (PlanNode::repeats_keys).
arrow::Result<ac::Declaration> Aggregate(const PlanNode& node, ac::Declaration input,
                                         const arrow::Schema& input_schema,
                                         const std::vector<std::string>& key_names,
                                         const std::vector<AggregateCall>& calls,
                                         bool repeats_keys) {
  std::vector<cp::Aggregate> aggregates;
  const bool grouped = !key_names.empty();
  std::optional<plan::ColumnTexts> texts;
  for (const auto& a : calls) {
    std::string function = a.function;
    std::shared_ptr<cp::FunctionOptions> options;
    if (a.function == "count" || a.function == "count_distinct") {
      options = std::make_shared<cp::CountOptions>(cp::CountOptions::ONLY_VALID);
    }
    if (a.function == "sum" || a.function == "min" || a.function == "max") {
      // SQL: an aggregate over no non-null rows is NULL, not 0.
      options = std::make_shared<cp::ScalarAggregateOptions>(/*skip_nulls=*/true, /*min_count=*/1);
    }
    if (function == "sum") {
      // Integers and decimals sum exactly, or fail naming the sum; Arrow's sums wrap.
      const auto field = input_schema.GetFieldByName(a.input);
      if (field != nullptr && plan::SumsExactly(*field->type())) {
        function = plan::kExactSumFunction;
        if (!texts) texts = plan::HiddenColumnTexts(node);
        options = std::make_shared<plan::ExactSumOptions>(/*skip_nulls=*/true, /*min_count=*/1,
                                                          SumLabel(*texts, a));
      }
    }
    function = (grouped ? "hash_" : "") + function;
    if (a.function == "count_all") {
      aggregates.emplace_back(function, options, std::vector<arrow::FieldRef>{}, a.output);
    } else {
      aggregates.emplace_back(function, options, arrow::FieldRef(a.input), a.output);
    }
  }
  std::vector<arrow::FieldRef> keys;
  for (const auto& k : key_names) keys.emplace_back(k);
  // Float keys and distinct values group -0.0 with 0.0 and every NaN together, as SQL does. A
  // key is rewritten where it is (its group shows 0.0); a distinct count reads a rewritten copy,
  // so that the other aggregates of the column still see -0.0.
  std::vector<std::string> float_keys, distinct_floats, distinct_copies;
  const auto is_float = [&](const std::string& name) {
    const auto field = input_schema.GetFieldByName(name);
    return field != nullptr && IsFloatKey(*field->type());
  };
  for (const auto& k : key_names) {
    if (is_float(k)) float_keys.push_back(k);
  }
  for (auto& a : aggregates) {
    const std::string* input = a.target.empty() ? nullptr : a.target[0].name();
    if (a.function.find("count_distinct") == std::string::npos || input == nullptr ||
        !is_float(*input)) {
      continue;
    }
    distinct_floats.push_back(*input);
    distinct_copies.push_back("__distinct_" + std::to_string(distinct_copies.size()) + "_" +
                              *input);
    a.target[0] = arrow::FieldRef(distinct_copies.back());
  }
  ARROW_ASSIGN_OR_RAISE(input, CanonicalFloats(std::move(input), std::move(float_keys)));
  ARROW_ASSIGN_OR_RAISE(input, CanonicalFloats(std::move(input), std::move(distinct_floats),
                                               std::move(distinct_copies)));
  // One integer key or two small ones: our grouper (it makes Arrow's node itself where it does
  // not apply).
  const bool int_key = keys.size() <= 2 && !keys.empty() && RegisterIntKeyAggregate().ok();
  const char* factory = !int_key       ? "aggregate"
                        : repeats_keys ? kPartialIntKeyAggregateFactory
                                       : kIntKeyAggregateFactory;
  return ac::Declaration::Sequence(
      {std::move(input), {factory, ac::AggregateNodeOptions(aggregates, keys)}});
}

// An operator that needs all of its input first (window functions, a LIMIT below the top):
// `input` runs when the plan around it asks for the first batch, then `finish` turns its rows
// into the node's, typed as `schema`.
ac::Declaration Materialized(
    ac::Declaration input, std::shared_ptr<arrow::Schema> schema,
    std::function<arrow::Result<std::shared_ptr<arrow::Table>>(std::shared_ptr<arrow::Table>)>
        finish) {
  return DeferredSource(std::move(schema), [input = std::move(input), finish]() mutable {
    return ac::DeclarationToTableAsync(std::move(input)).Then(finish);
  });
}

ac::JoinType AceroJoinType(JoinType type) {
  switch (type) {
    case JoinType::kInner:
      return ac::JoinType::INNER;
    case JoinType::kLeft:
      return ac::JoinType::LEFT_OUTER;
    case JoinType::kSemi:
      return ac::JoinType::LEFT_SEMI;
    case JoinType::kAnti:
      return ac::JoinType::LEFT_ANTI;
    case JoinType::kFull:
      return ac::JoinType::FULL_OUTER;
  }
  return ac::JoinType::INNER;
}

// `decl`, counted as `node`'s operator where the caller asked for counts.
arrow::Result<ac::Declaration> Probed(const PlanNode& node, ac::Declaration decl,
                                      OperatorProbes* probes) {
  if (probes == nullptr) return decl;
  auto stats = std::make_shared<OperatorStats>();
  (*probes)[&node] = stats;
  return WithProbe(std::move(decl), std::move(stats));
}

// `expression` with our kernels where they replace Arrow's (decimal arithmetic, LIKE, IN).
cp::Expression OwnKernels(const cp::Expression& expression, const arrow::Schema& schema) {
  return plan::WithSetKernels(plan::WithLikeKernels(plan::WithDecimalKernels(
                                  plan::WithExactUnsignedComparisons(expression, schema), schema)),
                              schema);
}

// What the hidden columns that `expression` reads compute, from the plan below `input`, or
// null when it reads none (plan/column_texts.h).
std::shared_ptr<const plan::ColumnTexts> HiddenTexts(const cp::Expression& expression,
                                                     const PlanNode& input) {
  if (!plan::ReadsHiddenColumn(expression)) return nullptr;
  return std::make_shared<const plan::ColumnTexts>(plan::HiddenColumnTexts(input));
}

// How an error names a part that several outputs share, computed once as column `name`: by the
// first output that reads it (`labels[j]` names `expressions[j]`, which read the parts).
std::string SharedPartLabel(const std::string& name, const cp::Expression& part,
                            const std::vector<cp::Expression>& expressions,
                            const std::vector<std::string>& labels) {
  const std::string text = "(" + plan::ExpressionText(part) + ")";
  for (size_t j = 0; j < expressions.size() && j < labels.size(); ++j) {
    for (const arrow::FieldRef& ref : cp::FieldsInExpression(expressions[j])) {
      if (ref.name() != nullptr && *ref.name() == name && !labels[j].empty()) {
        // The part may be the whole of the output, which its label already shows.
        if (labels[j].ends_with(" " + text)) return labels[j];
        return labels[j] + ", in its part " + text;
      }
    }
  }
  return "expression " + text;
}

// The sides of the union `node` (nested unions' sides in order) where each is a projection of
// columns and literals of one subplan (exec/expand_node.h); none otherwise.
std::vector<const PlanNode*> ProjectedCopies(const PlanNode& node) {
  std::vector<const PlanNode*> sides;
  std::vector<const PlanNode*> pending = {&node};
  while (!pending.empty()) {
    const PlanNode* n = pending.back();
    pending.pop_back();
    if (n->kind == PlanNode::Kind::kUnion) {
      pending.push_back(n->right.get());
      pending.push_back(n->input.get());
    } else {
      sides.push_back(n);
    }
  }
  for (const PlanNode* side : sides) {
    if (side->kind != PlanNode::Kind::kProject || side->keep_input || side->input == nullptr) {
      return {};
    }
    for (const auto& e : side->expressions) {
      if (e.field_ref() == nullptr && e.literal() == nullptr) return {};
    }
    if (side != sides[0] && (!SameSubplan(*side->input, *sides[0]->input) ||
                             side->input->OutputNames() != sides[0]->input->OutputNames())) {
      return {};
    }
  }
  return sides;
}

// A project of `input`, whose plan schema is `input_schema`; `coded`, when given, is its actual
// schema, where some columns are still dictionaries. The outputs named in `interned` are
// interned ids (with `intern`'s interner) instead of strings.
arrow::Result<ac::Declaration> Project(
    const PlanNode& node, ac::Declaration input, const arrow::Schema& input_schema,
    const arrow::Schema* coded, const std::set<std::string>& interned = {},
    const std::shared_ptr<cp::FunctionOptions>& intern = nullptr) {
  std::vector<cp::Expression> expressions;
  std::vector<std::string> names;
  // What an output's errors name: its column and the plan's expression, before our kernels
  // replace Arrow's, since that is the form EXPLAIN shows.
  std::vector<std::string> labels;
  std::shared_ptr<const plan::ColumnTexts> texts;  // once an output reads a hidden column
  if (node.keep_input) {
    for (const auto& n : node.input->OutputNames()) {
      expressions.push_back(cp::field_ref(n));
      names.push_back(n);
      labels.emplace_back();
    }
  }
  for (size_t i = 0; i < node.expressions.size(); ++i) {
    cp::Expression e = OwnKernels(node.expressions[i], input_schema);
    if (interned.count(node.names[i])) e = cp::call(plan::kInternFunction, {std::move(e)}, intern);
    expressions.push_back(std::move(e));
    if (texts == nullptr) texts = HiddenTexts(node.expressions[i], *node.input);
    labels.push_back(OutputLabel(node.names[i], node.expressions[i], texts.get()));
  }
  const arrow::Schema& actual = coded != nullptr ? *coded : input_schema;
  std::vector<std::string> input_names;
  for (const auto& f : actual.fields()) input_names.push_back(f->name());
  auto common = plan::FactorCommonSubexpressions(expressions, input_names);
  std::shared_ptr<arrow::Schema> widened;
  if (!common.shared.empty()) {
    // The shared parts first, as more columns beside the input's.
    std::vector<cp::Expression> first;
    for (const auto& n : input_names) first.push_back(cp::field_ref(n));
    std::vector<std::string> first_labels(input_names.size());
    arrow::FieldVector fields = actual.fields();
    bool typed = true;
    for (size_t i = 0; i < common.shared.size() && typed; ++i) {
      auto bound = common.shared[i].Bind(input_schema);
      typed = bound.ok();
      if (typed) fields.push_back(arrow::field(common.names[i], bound->type()->GetSharedPtr()));
      first.push_back(coded != nullptr ? plan::WithDictionaryMaps(common.shared[i], *coded)
                                       : common.shared[i]);
      first_labels.push_back(
          SharedPartLabel(common.names[i], common.shared[i], common.expressions, labels));
    }
    if (typed) {
      std::vector<std::string> first_names = input_names;
      first_names.insert(first_names.end(), common.names.begin(), common.names.end());
      ARROW_ASSIGN_OR_RAISE(input, Projected(std::move(input), std::move(first),
                                             std::move(first_names), std::move(first_labels)));
      expressions = std::move(common.expressions);
      widened = arrow::schema(std::move(fields));
      coded = widened.get();
    }
  }
  if (coded != nullptr) {
    for (auto& e : expressions) e = plan::WithDictionaryMaps(e, *coded);
  }
  names.insert(names.end(), node.names.begin(), node.names.end());
  return Projected(std::move(input), std::move(expressions), std::move(names), std::move(labels));
}

// A filter right over a scan, where Parquet's dictionary columns stay dictionaries: the filter
// tests them per dictionary value and drops rows by code, so the rows it drops are never
// decoded. `coded`: the output's schema, with those columns' dictionary types.
struct CodedFilteredScan {
  ac::Declaration decl;
  std::shared_ptr<arrow::Schema> coded;
};

// The scan of `scan_node` with Parquet's dictionary columns kept as dictionaries.
arrow::Result<CodedFilteredScan> CodedScan(const PlanNode& scan_node, OperatorProbes* probes) {
  std::set<std::string> dictionaries;
  ARROW_ASSIGN_OR_RAISE(ac::Declaration scan, Scan(scan_node, &dictionaries));
  ARROW_ASSIGN_OR_RAISE(scan, Probed(scan_node, std::move(scan), probes));
  ARROW_ASSIGN_OR_RAISE(auto schema, plan::OutputSchema(scan_node));
  arrow::FieldVector coded = schema->fields();
  for (auto& f : coded) {
    if (dictionaries.count(f->name())) {
      f = f->WithType(arrow::dictionary(arrow::int32(), f->type()));
    }
  }
  return CodedFilteredScan{std::move(scan), arrow::schema(std::move(coded))};
}

// The columns of `schema` that `project` reads, in the schema's order (none for a count(*)'s
// literal); std::nullopt where it reads all of them or passes its input on.
std::optional<std::vector<std::string>> ReadByProject(const PlanNode& project,
                                                      const arrow::Schema& schema) {
  if (project.keep_input) return std::nullopt;
  std::set<std::string> read;
  for (const auto& e : project.expressions) {
    for (const arrow::FieldRef& ref : cp::FieldsInExpression(e)) {
      if (ref.name() == nullptr) return std::nullopt;
      read.insert(*ref.name());
    }
  }
  std::vector<std::string> out;
  for (const auto& f : schema.fields()) {
    if (read.count(f->name())) out.push_back(f->name());
  }
  if (out.size() == static_cast<size_t>(schema.num_fields())) return std::nullopt;
  return out;
}

// `schema` with only the fields named in `names` (all where there are none).
std::shared_ptr<arrow::Schema> Narrowed(const std::shared_ptr<arrow::Schema>& schema,
                                        const std::optional<std::vector<std::string>>& names) {
  if (!names) return schema;
  arrow::FieldVector fields;
  for (const auto& f : schema->fields()) {
    if (std::find(names->begin(), names->end(), f->name()) != names->end()) fields.push_back(f);
  }
  return arrow::schema(std::move(fields), schema->metadata());
}

// The filter `node` over `scan`, the coded scan of its input. `mark_kept_rows`: it marks rather
// than drops (exec/kept_rows.h), for the integer-key aggregate alone. `outputs`: the columns the
// project above reads (ReadByProject), the only ones passed on; std::nullopt: all.
arrow::Result<CodedFilteredScan> FilterOver(
    const PlanNode& node, CodedFilteredScan scan, bool mark_kept_rows,
    const std::optional<std::vector<std::string>>& outputs) {
  ARROW_ASSIGN_OR_RAISE(auto schema, plan::OutputSchema(*node.input));
  const cp::Expression predicate =
      plan::WithDictionaryMaps(OwnKernels(node.predicate, *schema), *scan.coded);
  ARROW_ASSIGN_OR_RAISE(ac::Declaration filtered,
                        Filtered(std::move(scan.decl), predicate,
                                 /*texts=*/nullptr, mark_kept_rows, outputs));
  return CodedFilteredScan{std::move(filtered), Narrowed(scan.coded, outputs)};
}

arrow::Result<CodedFilteredScan> FilteredScan(
    const PlanNode& node, OperatorProbes* probes,
    const std::optional<std::vector<std::string>>& outputs = std::nullopt) {
  ARROW_ASSIGN_OR_RAISE(CodedFilteredScan scan, CodedScan(*node.input, probes));
  return FilterOver(node, std::move(scan), /*mark_kept_rows=*/false, outputs);
}

// The filtered scan with its dictionaries decoded, for operators other than a project (which
// decodes only what it reads).
arrow::Result<ac::Declaration> DecodedFilteredScan(const PlanNode& node, OperatorProbes* probes) {
  ARROW_ASSIGN_OR_RAISE(CodedFilteredScan filtered, FilteredScan(node, probes));
  ARROW_ASSIGN_OR_RAISE(auto schema, plan::OutputSchema(node));
  if (filtered.coded->Equals(*schema)) return std::move(filtered.decl);
  std::vector<cp::Expression> decoded;
  for (const auto& f : filtered.coded->fields()) {
    decoded.push_back(plan::WithDictionaryMaps(cp::field_ref(f->name()), *filtered.coded));
  }
  return ac::Declaration::Sequence(
      {std::move(filtered.decl),
       {"project", ac::ProjectNodeOptions(std::move(decoded), filtered.coded->field_names())}});
}

// Whether `e` calls a function library's function, which must never see a row the WHERE removed.
bool CallsLibrary(const cp::Expression& e) {
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return false;
  if (plan::ParseLibraryFunctionName(call->function_name).has_value()) return true;
  return std::any_of(call->arguments.begin(), call->arguments.end(), CallsLibrary);
}

// Whether the filter under `project` may mark the rows it drops instead of dropping them
// (exec/kept_rows.h): keys that the integer-key aggregate groups itself (one int32, int64 or
// date32, or two 32-bit ones; `interned` strings are int32 ids), typed as `schema` says, and no
// library function in the project or the aggregates, since the project computes the marked rows
// too.
bool MarksKeptRows(const PlanNode& project, const std::vector<std::string>& keys,
                   const std::vector<AggregateCall>& calls, const arrow::Schema& schema,
                   const std::set<std::string>& interned) {
  if (!RegisterIntKeyAggregate().ok()) return false;
  std::vector<arrow::Type::type> key_types;
  for (const auto& key : keys) {
    const auto field = schema.GetFieldByName(key);
    key_types.push_back(interned.count(key) != 0 ? arrow::Type::INT32
                        : field != nullptr       ? field->type()->id()
                                                 : arrow::Type::NA);
  }
  if (!GroupsKeysOfTypes(key_types)) return false;
  for (const auto& c : calls) {
    if (plan::ParseLibraryFunctionName(c.function).has_value()) return false;
  }
  return std::none_of(project.expressions.begin(), project.expressions.end(), CallsLibrary);
}

// An aggregate of `input` by `keys`, its rows typed as `out`'s plan schema says. Over a project
// of a Parquet scan, filtered or not, a key that passes a dictionary column through groups by
// interned ids (4 bytes to hash and compare per row instead of a string), decoded after the
// aggregate. (Without a WHERE, TPC-H Q1's GROUP BY on its two flags took 0.27 s at SF 1 on their
// strings, against 0.22 s with the WHERE that kept them dictionaries.)
arrow::Result<ac::Declaration> AggregateOver(const PlanNode& out, const PlanNode& input,
                                             const std::vector<std::string>& keys,
                                             const std::vector<AggregateCall>& calls,
                                             OperatorProbes* probes, const NodeInputs* inputs) {
  ARROW_ASSIGN_OR_RAISE(auto input_schema, plan::OutputSchema(input));
  auto given = [&](const PlanNode* n) { return inputs != nullptr && inputs->count(n) > 0; };
  const bool coded_scan =
      input.kind == PlanNode::Kind::kProject && !input.keep_input && !given(&input) &&
      !given(input.input.get()) &&
      (input.input->kind == PlanNode::Kind::kScan ||
       (input.input->kind == PlanNode::Kind::kFilter &&
        input.input->input->kind == PlanNode::Kind::kScan && !given(input.input->input.get())));
  if (!coded_scan) {
    ARROW_ASSIGN_OR_RAISE(ac::Declaration decl, ToDeclaration(input, probes, inputs));
    return Aggregate(out, std::move(decl), *input_schema, keys, calls, out.repeats_keys);
  }
  const PlanNode& filter = *input.input;  // the filter, or the scan where there is none
  const bool filtered_scan = filter.kind == PlanNode::Kind::kFilter;
  ARROW_ASSIGN_OR_RAISE(CodedFilteredScan filtered,
                        CodedScan(filtered_scan ? *filter.input : filter, probes));
  std::set<std::string> interned;
  for (size_t i = 0; i < input.names.size(); ++i) {
    const auto* ref = input.expressions[i].field_ref();
    const auto field = ref != nullptr && ref->name() != nullptr
                           ? filtered.coded->GetFieldByName(*ref->name())
                           : nullptr;
    const std::string& name = input.names[i];
    const bool key = std::find(keys.begin(), keys.end(), name) != keys.end();
    const bool read = std::any_of(calls.begin(), calls.end(),
                                  [&](const AggregateCall& c) { return c.input == name; });
    if (field != nullptr && field->type()->id() == arrow::Type::DICTIONARY && key && !read) {
      interned.insert(name);
    }
  }
  ac::Declaration rows;
  ARROW_ASSIGN_OR_RAISE(auto filter_schema, plan::OutputSchema(filter));
  std::optional<std::vector<std::string>> read;
  if (filtered_scan) {
    const bool mark = MarksKeptRows(input, keys, calls, *input_schema, interned);
    read = ReadByProject(input, *filter_schema);
    ARROW_ASSIGN_OR_RAISE(filtered, FilterOver(filter, std::move(filtered), mark, read));
    ARROW_ASSIGN_OR_RAISE(rows, Probed(filter, std::move(filtered.decl), probes));
  } else {
    rows = std::move(filtered.decl);  // probed as the scan
  }
  const auto intern = plan::MakeInternOptions();
  ARROW_ASSIGN_OR_RAISE(rows, Project(input, std::move(rows), *Narrowed(filter_schema, read),
                                      filtered.coded.get(), interned, intern));
  ARROW_ASSIGN_OR_RAISE(rows, Probed(input, std::move(rows), probes));
  ARROW_ASSIGN_OR_RAISE(ac::Declaration aggregate, Aggregate(out, std::move(rows), *input_schema,
                                                             keys, calls, out.repeats_keys));
  if (interned.empty()) return aggregate;
  ARROW_ASSIGN_OR_RAISE(auto out_schema, plan::OutputSchema(out));
  std::vector<cp::Expression> decoded;
  for (const auto& f : out_schema->fields()) {
    decoded.push_back(interned.count(f->name()) ? cp::call(plan::kInternLookupFunction,
                                                           {cp::field_ref(f->name())}, intern)
                                                : cp::field_ref(f->name()));
  }
  return ac::Declaration::Sequence(
      {std::move(aggregate),
       {"project", ac::ProjectNodeOptions(std::move(decoded), out_schema->field_names())}});
}

}  // namespace

namespace {
arrow::Result<ac::Declaration> OperatorDeclaration(const PlanNode& node, OperatorProbes* probes,
                                                   const NodeInputs* inputs);
arrow::Result<ac::Declaration> LimitInput(const PlanNode& limit, OperatorProbes* probes,
                                          const NodeInputs* inputs);
}  // namespace

arrow::Result<ac::Declaration> ToDeclaration(const PlanNode& node, OperatorProbes* probes,
                                             const NodeInputs* inputs) {
  if (inputs != nullptr) {
    if (auto it = inputs->find(&node); it != inputs->end()) {
      return ac::Declaration("table_source", ac::TableSourceNodeOptions(it->second));
    }
  }
  ARROW_ASSIGN_OR_RAISE(ac::Declaration decl, OperatorDeclaration(node, probes, inputs));
  if (node.kind == PlanNode::Kind::kLimit) return decl;
  return Probed(node, std::move(decl), probes);
}

namespace {

// The type to compare two join keys of numeric types in (an int32 column equal to an int64 one):
// an integer type that holds both for integers, a decimal that holds both for decimals and
// integers, float64 where either is floating point. Null where there is none (other types are
// left to Acero as they are).
std::shared_ptr<arrow::DataType> CommonKeyType(const arrow::DataType& a, const arrow::DataType& b) {
  const auto numeric = [](const arrow::DataType& t) {
    return arrow::is_integer(t.id()) || arrow::is_floating(t.id()) || arrow::is_decimal(t.id());
  };
  if (!numeric(a) || !numeric(b)) return nullptr;
  if (arrow::is_integer(a.id()) && arrow::is_integer(b.id())) {
    // Unsigned beside unsigned in uint64; a uint64 beside a signed integer in decimal(20, 0),
    // which holds both (int64 fails past 2^63).
    const bool a_unsigned = arrow::is_unsigned_integer(a.id());
    const bool b_unsigned = arrow::is_unsigned_integer(b.id());
    if (a_unsigned && b_unsigned) return arrow::uint64();
    if ((a_unsigned && a.id() == arrow::Type::UINT64) ||
        (b_unsigned && b.id() == arrow::Type::UINT64)) {
      return arrow::decimal128(20, 0);
    }
    return arrow::int64();
  }
  if (arrow::is_floating(a.id()) || arrow::is_floating(b.id())) return arrow::float64();
  // Decimals, or a decimal and an integer (as many digits as the integer's type holds).
  const auto digits = [](const arrow::DataType& t, int* precision, int* scale) {
    if (arrow::is_decimal(t.id())) {
      const auto& d = static_cast<const arrow::DecimalType&>(t);
      *precision = d.precision();
      *scale = d.scale();
    } else {
      *precision = t.byte_width() <= 4 ? 10 : t.id() == arrow::Type::UINT64 ? 20 : 19;
      *scale = 0;
    }
  };
  int pa = 0, sa = 0, pb = 0, sb = 0;
  digits(a, &pa, &sa);
  digits(b, &pb, &sb);
  const int scale = std::max(sa, sb);
  const int precision = std::max(pa - sa, pb - sb) + scale;
  if (precision > arrow::Decimal128Type::kMaxPrecision) return nullptr;
  return arrow::decimal128(precision, scale);
}

// Where a key pair of `join` has two types, the side whose key is not of their common type
// (CommonKeyType) gets it cast into a column of its own, and `left` or `right` names that
// column: Acero's join compares keys of one type only (it aborted on an int32 against an
// int64). Returns whether it added any.
arrow::Result<bool> CastKeysToCommonTypes(const PlanNode& join, ac::Declaration* probe,
                                          ac::Declaration* build,
                                          std::vector<arrow::FieldRef>* left,
                                          std::vector<arrow::FieldRef>* right) {
  ARROW_ASSIGN_OR_RAISE(auto left_schema, plan::OutputSchema(*join.input));
  ARROW_ASSIGN_OR_RAISE(auto right_schema, plan::OutputSchema(*join.right));
  std::vector<cp::Expression> left_casts, right_casts;
  std::vector<std::string> left_names, right_names, left_labels, right_labels;
  for (size_t i = 0; i < join.left_keys.size() && i < join.right_keys.size(); ++i) {
    auto l = left_schema->GetFieldByName(join.left_keys[i]);
    auto r = right_schema->GetFieldByName(join.right_keys[i]);
    if (l == nullptr || r == nullptr || l->type()->Equals(*r->type())) continue;
    auto common = CommonKeyType(*l->type(), *r->type());
    if (common == nullptr) continue;
    // A value the common type cannot hold (a decimal's fraction as an integer) fails the query,
    // naming the key; an integer becomes the nearest double, as SQL compares it with one.
    cp::CastOptions options = cp::CastOptions::Safe(common);
    options.allow_float_truncate = arrow::is_floating(common->id());
    const auto cast = [&](const std::string& key, std::vector<cp::Expression>* casts,
                          std::vector<std::string>* names, std::vector<std::string>* labels,
                          arrow::FieldRef* ref) {
      const std::string name = "__join_key" + std::to_string(i) + "_" + key;
      casts->push_back(cp::call("cast", {cp::field_ref(key)}, options));
      names->push_back(name);
      labels->push_back("join key \"" + plan::WithoutColumnId(key) + "\" cast to " +
                        common->ToString());
      *ref = arrow::FieldRef(name);
    };
    if (!l->type()->Equals(*common)) {
      cast(join.left_keys[i], &left_casts, &left_names, &left_labels, &(*left)[i]);
    }
    if (!r->type()->Equals(*common)) {
      cast(join.right_keys[i], &right_casts, &right_names, &right_labels, &(*right)[i]);
    }
  }
  const auto add = [](const arrow::Schema& schema, std::vector<cp::Expression> casts,
                      std::vector<std::string> names, std::vector<std::string> cast_labels,
                      ac::Declaration* side) -> arrow::Status {
    if (casts.empty()) return arrow::Status::OK();
    std::vector<cp::Expression> exprs;
    std::vector<std::string> all, labels;
    for (const auto& f : schema.fields()) {
      exprs.push_back(cp::field_ref(f->name()));
      all.push_back(f->name());
      labels.emplace_back();  // a column passed on cannot fail
    }
    exprs.insert(exprs.end(), casts.begin(), casts.end());
    all.insert(all.end(), names.begin(), names.end());
    labels.insert(labels.end(), cast_labels.begin(), cast_labels.end());
    ARROW_ASSIGN_OR_RAISE(
        *side, Projected(std::move(*side), std::move(exprs), std::move(all), std::move(labels)));
    return arrow::Status::OK();
  };
  const bool any = !left_casts.empty() || !right_casts.empty();
  ARROW_RETURN_NOT_OK(add(*left_schema, std::move(left_casts), std::move(left_names),
                          std::move(left_labels), probe));
  ARROW_RETURN_NOT_OK(add(*right_schema, std::move(right_casts), std::move(right_names),
                          std::move(right_labels), build));
  return any;
}

// Where a key pair of `join` is of a floating type on either side (both are, after
// CastKeysToCommonTypes, whose key columns `left` and `right` name), both sides get a copy of
// their key with -0.0 as 0.0 and one NaN (exec/canonical_floats.h), and `left` and `right` name
// the copies: SQL's equality, where Acero compares bits. Returns whether it added any.
arrow::Result<bool> CanonicalFloatKeys(const PlanNode& join, ac::Declaration* probe,
                                       ac::Declaration* build, std::vector<arrow::FieldRef>* left,
                                       std::vector<arrow::FieldRef>* right) {
  ARROW_ASSIGN_OR_RAISE(auto left_schema, plan::OutputSchema(*join.input));
  ARROW_ASSIGN_OR_RAISE(auto right_schema, plan::OutputSchema(*join.right));
  std::vector<std::string> left_keys, right_keys, left_copies, right_copies;
  for (size_t i = 0; i < join.left_keys.size() && i < left->size() && i < right->size(); ++i) {
    const auto l = left_schema->GetFieldByName(join.left_keys[i]);
    const auto r = right_schema->GetFieldByName(join.right_keys[i]);
    const std::string* left_name = (*left)[i].name();
    const std::string* right_name = (*right)[i].name();
    if ((l == nullptr || !IsFloatKey(*l->type())) && (r == nullptr || !IsFloatKey(*r->type()))) {
      continue;
    }
    if (left_name == nullptr || right_name == nullptr) continue;
    left_keys.push_back(*left_name);
    right_keys.push_back(*right_name);
    left_copies.push_back("__float_key" + std::to_string(i) + "_" + *left_name);
    right_copies.push_back("__float_key" + std::to_string(i) + "_" + *right_name);
    (*left)[i] = arrow::FieldRef(left_copies.back());
    (*right)[i] = arrow::FieldRef(right_copies.back());
  }
  if (left_keys.empty()) return false;
  ARROW_ASSIGN_OR_RAISE(
      *probe, CanonicalFloats(std::move(*probe), std::move(left_keys), std::move(left_copies)));
  ARROW_ASSIGN_OR_RAISE(
      *build, CanonicalFloats(std::move(*build), std::move(right_keys), std::move(right_copies)));
  return true;
}

// The least estimated rows of a join's hashed side for which the integer-key join
// (int_key_join.h) replaces Acero's.
constexpr double kIntKeyJoinRows = 1'000'000;

// The hash join of `node`. With `outputs`, it outputs only those of its columns (at least one),
// and `*order` gets the names of its output in order.
arrow::Result<ac::Declaration> Join(const PlanNode& node, const std::set<std::string>* outputs,
                                    OperatorProbes* probes, const NodeInputs* inputs,
                                    std::vector<std::string>* order = nullptr) {
  ARROW_ASSIGN_OR_RAISE(ac::Declaration probe, ToDeclaration(*node.input, probes, inputs));
  ARROW_ASSIGN_OR_RAISE(ac::Declaration build, ToDeclaration(*node.right, probes, inputs));
  std::vector<arrow::FieldRef> left, right;
  for (const auto& k : node.left_keys) left.emplace_back(k);
  for (const auto& k : node.right_keys) right.emplace_back(k);
  ARROW_ASSIGN_OR_RAISE(const bool casts,
                        CastKeysToCommonTypes(node, &probe, &build, &left, &right));
  ARROW_ASSIGN_OR_RAISE(const bool floats, CanonicalFloatKeys(node, &probe, &build, &left, &right));
  std::set<std::string> every;
  std::vector<std::string> every_order;
  const bool cast = casts || floats;
  if (cast && outputs == nullptr) {
    // The join outputs its sides' own columns, and not the cast keys.
    for (const PlanNode* side : {node.input.get(), node.right.get()}) {
      for (const auto& n : side->OutputNames()) every.insert(n);
    }
    outputs = &every;
    order = &every_order;
  }
  // Acero hashes its right input: with build_input, node.input is Acero's right side.
  ac::JoinType type = AceroJoinType(node.join_type);
  if (node.build_input) {
    // Swapped: keep (or preserve) the now right outer rows.
    type = ac::JoinType::RIGHT_OUTER;
    if (node.join_type == JoinType::kSemi) type = ac::JoinType::RIGHT_SEMI;
    if (node.join_type == JoinType::kAnti) type = ac::JoinType::RIGHT_ANTI;
    if (node.join_type == JoinType::kFull) type = ac::JoinType::FULL_OUTER;
    std::swap(left, right);
    std::swap(probe, build);
  }
  std::optional<ac::HashJoinNodeOptions> options;
  if (outputs == nullptr) {
    options.emplace(type, left, right, node.join_filter);
  } else {
    const bool semi = node.join_type == JoinType::kSemi || node.join_type == JoinType::kAnti;
    const PlanNode* acero_left = node.build_input ? node.right.get() : node.input.get();
    const PlanNode* acero_right = node.build_input ? node.input.get() : node.right.get();
    std::vector<arrow::FieldRef> left_out, right_out;
    const auto pick = [&](const PlanNode& side, std::vector<arrow::FieldRef>* out) {
      for (const auto& n : side.OutputNames()) {
        if (outputs->count(n)) {
          out->emplace_back(n);
          order->push_back(n);
        }
      }
    };
    // A semi or anti join outputs its outer side only: node.input, Acero's left unless swapped.
    if (!semi || !node.build_input) pick(*acero_left, &left_out);
    if (!semi || node.build_input) pick(*acero_right, &right_out);
    if (left_out.empty() && right_out.empty()) {  // count(*) over a join: one column for its rows
      const PlanNode& side = semi && node.build_input ? *acero_right : *acero_left;
      const std::string first = side.OutputNames().at(0);
      (semi && node.build_input ? right_out : left_out).emplace_back(first);
      order->push_back(first);
    }
    options.emplace(type, left, right, std::move(left_out), std::move(right_out), node.join_filter);
  }
  if (node.null_equal_keys) options->key_cmp.assign(left.size(), ac::JoinKeyCmp::IS);
  // Acero pushes a join's Bloom filter down to the join below on its probe side. Built from a
  // whole table, it drops nothing in a foreign key join and costs a pass over every key and a
  // lookup per probe row (Q9 at SF 10: 15M order keys, checked against all of lineitem).
  // (A side given in `inputs` is a result from elsewhere, not the table.)
  const PlanNode* built = node.build_input ? node.input.get() : node.right.get();
  bool whole = plan::IsWholeTable(*built);
  for (const PlanNode* n = built; whole && n != nullptr;
       n = n->kind == PlanNode::Kind::kProject ? n->input.get() : nullptr) {
    whole = inputs == nullptr || inputs->count(n) == 0;
  }
  options->disable_bloom_filter = whole;
  // The same holds for filtering the probe side by the build side's keys (join_gate.h).
  ARROW_RETURN_NOT_OK(GateProbeOnBuild(&probe, &build, *options, /*filter_probe=*/!whole));
  // An inner join on one key that hashes an estimated 1M rows or more: our integer-key join
  // where the key is an integer (it falls back to Acero's otherwise). It pushes no Bloom filter
  // down, and a whole table's would drop nothing. Measured (medians): TPC-H Q9 (whole orders)
  // 0.436 -> 0.324 s at SF 1; at SF 10 4.9 -> 3.3 s with peak RSS 1.6 -> 0.7 GB. At SF 10 the
  // filtered orders of Q5 (2.3M rows) and Q21 (7.3M) take it too: Q5 3.13 -> 2.80 s at 946 ->
  // 266 MB, Q21 4.23 -> 3.69 s at 731 -> 486 MB. Below 1M rows Acero's join, with its Bloom
  // filters, was as fast or faster (SF 1: Q8 0.255 -> 0.276 s with ours on its filtered sides).
  const double built_rows = node.build_input ? node.input_estimate : node.right_estimate;
  const char* factory = type == ac::JoinType::INNER && left.size() == 1 && !node.null_equal_keys &&
                                built_rows >= kIntKeyJoinRows && RegisterIntKeyJoin().ok()
                            ? kIntKeyJoinFactory
                            : "hashjoin";
  return ac::Declaration(factory, {std::move(probe), std::move(build)}, std::move(*options));
}

arrow::Result<ac::Declaration> OperatorDeclaration(const PlanNode& node, OperatorProbes* probes,
                                                   const NodeInputs* inputs) {
  ARROW_RETURN_NOT_OK(EnsureInitialized());
  if (plan::IsLogicalKind(node.kind) || node.kind == PlanNode::Kind::kExchange) {
    return arrow::Status::Invalid("internal: a ", plan::KindName(node.kind),
                                  " node reached the executor (a planner pass did not run)");
  }
  if (node.kind == PlanNode::Kind::kScan) return Scan(node);
  if (node.kind == PlanNode::Kind::kLimit) {
    // Below the top of a plan (a subquery's LIMIT): its input's rows, sliced. (Execute slices
    // the top one itself.)
    ARROW_ASSIGN_OR_RAISE(ac::Declaration input, LimitInput(node, probes, inputs));
    ARROW_ASSIGN_OR_RAISE(auto schema, plan::OutputSchema(node));
    const int64_t offset = node.offset, count = node.count;
    return Materialized(std::move(input), std::move(schema),
                        [offset, count](std::shared_ptr<arrow::Table> rows) {
                          const int64_t first = std::min(offset, rows->num_rows());
                          return arrow::Result<std::shared_ptr<arrow::Table>>(
                              rows->Slice(first, count < 0 ? rows->num_rows() - first : count));
                        });
  }
  if (node.kind == PlanNode::Kind::kJoin) return Join(node, nullptr, probes, inputs);
  if (node.kind == PlanNode::Kind::kProject && !node.keep_input &&
      node.input->kind == PlanNode::Kind::kJoin &&
      (inputs == nullptr || inputs->count(node.input.get()) == 0)) {
    // A project over a join (column pruning puts one where the join's output has columns
    // nothing above reads): the join outputs only the columns the project reads, so that it
    // neither copies nor, on its hashed side, holds the others. A project of the join's own
    // columns in its order is the join itself: a node between two joins would stop Acero's
    // Bloom filter pushdown.
    std::set<std::string> read;
    for (const auto& e : node.expressions) {
      plan::AddColumnNames(e, &read);
    }
    std::vector<std::string> order;
    ARROW_ASSIGN_OR_RAISE(ac::Declaration join, Join(*node.input, &read, probes, inputs, &order));
    ARROW_ASSIGN_OR_RAISE(join, Probed(*node.input, std::move(join), probes));
    bool same = order == node.names;
    for (size_t i = 0; same && i < node.expressions.size(); ++i) {
      const arrow::FieldRef* ref = node.expressions[i].field_ref();
      same = ref != nullptr && ref->name() != nullptr && *ref->name() == node.names[i];
    }
    if (same) return join;
    // The project's input is the join's output as Acero gives it (a shared subexpression's
    // project passes every input column on).
    ARROW_ASSIGN_OR_RAISE(auto join_schema, plan::OutputSchema(*node.input));
    arrow::FieldVector fields;
    for (const auto& n : order) {
      auto field = join_schema->GetFieldByName(n);
      if (field == nullptr) return arrow::Status::Invalid("internal: join output ", n, " unknown");
      fields.push_back(std::move(field));
    }
    return Project(node, std::move(join), *arrow::schema(std::move(fields)), nullptr);
  }
  if (node.kind == PlanNode::Kind::kWindow) {
    // A partition needs all of its rows before any result.
    ARROW_ASSIGN_OR_RAISE(ac::Declaration input, ToDeclaration(*node.input, probes, inputs));
    ARROW_ASSIGN_OR_RAISE(auto schema, plan::OutputSchema(node));
    return Materialized(std::move(input), std::move(schema),
                        [windows = node.windows](std::shared_ptr<arrow::Table> rows) {
                          return ComputeWindows(rows, windows);
                        });
  }
  if (node.kind == PlanNode::Kind::kUnion) {
    // Acero's union wants one schema: each side is renamed to the union's names, and cast to
    // the plan's types (a scan may produce a dictionary where the plan says string).
    ARROW_ASSIGN_OR_RAISE(auto schema, plan::OutputSchema(node));
    // Column i of a side, `value` over `side_schema`, in the union's type. Our decimal cast where
    // it applies: Arrow's checks every value's digits even where the types are the same (q14a's
    // union of three channels' sums).
    auto column = [&](const cp::Expression& value, size_t i, const arrow::Schema& side_schema) {
      const auto& type = schema->field(static_cast<int>(i))->type();
      // A column of NULLs alone (inside VALUES) stays untyped: Arrow casts nothing to null.
      if (type->id() == arrow::Type::NA) return OwnKernels(value, side_schema);
      return OwnKernels(cp::call("cast", {value}, cp::CastOptions::Safe(type)), side_schema);
    };
    if (const auto copies = ProjectedCopies(node); !copies.empty()) {
      // Sides that pick columns of one subplan: that subplan once, each batch of it expanded.
      const PlanNode& common = *copies[0]->input;
      ARROW_ASSIGN_OR_RAISE(ac::Declaration decl, ToDeclaration(common, probes, inputs));
      ARROW_ASSIGN_OR_RAISE(auto common_schema, plan::OutputSchema(common));
      std::vector<std::vector<cp::Expression>> projections;
      for (const PlanNode* copy : copies) {
        projections.emplace_back();
        for (size_t i = 0; i < copy->expressions.size(); ++i) {
          projections.back().push_back(column(copy->expressions[i], i, *common_schema));
        }
      }
      return Expanded(std::move(decl), std::move(projections), node.names);
    }
    std::vector<ac::Declaration> sides;
    for (const PlanNode* side : {node.input.get(), node.right.get()}) {
      ARROW_ASSIGN_OR_RAISE(ac::Declaration decl, ToDeclaration(*side, probes, inputs));
      ARROW_ASSIGN_OR_RAISE(auto side_schema, plan::OutputSchema(*side));
      const std::vector<std::string> names = side->OutputNames();
      std::vector<cp::Expression> columns;
      for (size_t i = 0; i < names.size(); ++i) {
        columns.push_back(column(cp::field_ref(names[i]), i, *side_schema));
      }
      sides.push_back(ac::Declaration::Sequence(
          {std::move(decl), {"project", ac::ProjectNodeOptions(columns, node.names)}}));
    }
#pragma GCC diagnostic push
    // GCC 12 reports a false maybe-uninitialized inside Declaration::Input's std::variant.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
    std::vector<ac::Declaration::Input> both = {std::move(sides[0]), std::move(sides[1])};
    return ac::Declaration("union", std::move(both), ac::ExecNodeOptions{});
#pragma GCC diagnostic pop
  }
  if (node.kind == PlanNode::Kind::kAggregate && node.final_phase &&
      node.input->kind == PlanNode::Kind::kAggregate && !node.input->final_phase &&
      (inputs == nullptr || inputs->count(node.input.get()) == 0)) {
    // In one process the partial and final steps run as one aggregate: there are no partials
    // from elsewhere to merge, and a second pass over every group would be pure cost.
    const PlanNode& partial = *node.input;
    std::vector<AggregateCall> fused;
    for (const auto& a : node.aggregates) {
      auto p = std::find_if(partial.aggregates.begin(), partial.aggregates.end(),
                            [&](const AggregateCall& c) { return c.output == a.input; });
      if (p == partial.aggregates.end()) {
        fused.push_back(a);  // count_distinct of a partial key: of the same column before it
      } else if (auto library = plan::ParseLibraryFunctionName(p->function)) {
        // A library aggregate's one-step form updates and finalizes (library_functions.h).
        fused.push_back({plan::LibraryFunctionName(library->digest_hex, library->function),
                         p->input, a.output});
      } else {
        fused.push_back({p->function, p->input, a.output});  // sum of counts is the count
      }
    }
    return AggregateOver(node, *partial.input, node.keys, fused, probes, inputs);
  }
  if (node.kind == PlanNode::Kind::kAggregate) {
    return AggregateOver(node, *node.input, node.keys, node.aggregates, probes, inputs);
  }
  if (node.kind == PlanNode::Kind::kFilter && node.input->kind == PlanNode::Kind::kScan &&
      (inputs == nullptr || inputs->count(node.input.get()) == 0)) {
    return DecodedFilteredScan(node, probes);
  }
  if (node.kind == PlanNode::Kind::kProject && node.input->kind == PlanNode::Kind::kFilter &&
      node.input->input->kind == PlanNode::Kind::kScan &&
      (inputs == nullptr ||
       (inputs->count(node.input.get()) == 0 && inputs->count(node.input->input.get()) == 0))) {
    // The project decodes the dictionaries it reads, and maps expressions of one per value.
    ARROW_ASSIGN_OR_RAISE(auto input_schema, plan::OutputSchema(*node.input));
    const auto read = ReadByProject(node, *input_schema);
    ARROW_ASSIGN_OR_RAISE(CodedFilteredScan filtered, FilteredScan(*node.input, probes, read));
    ARROW_ASSIGN_OR_RAISE(ac::Declaration input,
                          Probed(*node.input, std::move(filtered.decl), probes));
    return Project(node, std::move(input), *Narrowed(input_schema, read), filtered.coded.get());
  }
  ARROW_ASSIGN_OR_RAISE(ac::Declaration input, ToDeclaration(*node.input, probes, inputs));
  ARROW_ASSIGN_OR_RAISE(auto input_schema, plan::OutputSchema(*node.input));
  switch (node.kind) {
    case PlanNode::Kind::kFilter:
      return Filtered(std::move(input), OwnKernels(node.predicate, *input_schema),
                      HiddenTexts(node.predicate, *node.input));
    case PlanNode::Kind::kProject:
      return Project(node, std::move(input), *input_schema, nullptr);
    case PlanNode::Kind::kSort:
      return ac::Declaration::Sequence(
          {std::move(input), {"order_by", ac::OrderByNodeOptions(cp::Ordering(node.sort_keys))}});
    default:
      return arrow::Status::Invalid("internal: unexpected plan node");
  }
}

// The plan under a LIMIT: an ORDER BY below a LIMIT of few enough rows becomes a top-N, which
// holds about LIMIT + OFFSET rows at a time rather than its whole input.
arrow::Result<ac::Declaration> LimitInput(const PlanNode& limit, OperatorProbes* probes,
                                          const NodeInputs* inputs) {
  const PlanNode& body = *limit.input;
  const bool given = inputs != nullptr && inputs->count(&body) > 0;
  if (given || body.kind != PlanNode::Kind::kSort || limit.count < 0 || limit.offset < 0 ||
      limit.count > kTopNMaxRows || limit.offset > kTopNMaxRows - limit.count) {
    return ToDeclaration(body, probes, inputs);
  }
  ARROW_ASSIGN_OR_RAISE(ac::Declaration input, ToDeclaration(*body.input, probes, inputs));
  ARROW_ASSIGN_OR_RAISE(auto schema, plan::OutputSchema(body));
  return Probed(
      body, TopN(std::move(input), std::move(schema), body.sort_keys, limit.offset + limit.count),
      probes);
}

// How many bytes of finished batches a streamed plan may hold before its sources pause, and how
// few before they resume. Acero's DeclarationToReader builds its sink without backpressure, so
// a consumer slower than the plan (a pipe, a slow disk) would queue the whole result.
constexpr uint64_t kStreamPauseBytes = uint64_t{64} << 20;
constexpr uint64_t kStreamResumeBytes = uint64_t{16} << 20;

// A started Acero plan read batch by batch through a sink with backpressure.
class PlanStream : public arrow::RecordBatchReader {
 public:
  static arrow::Result<std::unique_ptr<PlanStream>> Start(ac::Declaration decl) {
    std::unique_ptr<PlanStream> stream(new PlanStream());
    ARROW_ASSIGN_OR_RAISE(stream->plan_, ac::ExecPlan::Make());
    ac::Declaration sink{
        "sink",
        {std::move(decl)},
        ac::SinkNodeOptions(&stream->batches_, &stream->schema_,
                            ac::BackpressureOptions(kStreamResumeBytes, kStreamPauseBytes))};
    // A plan that fails to build is dropped unstarted: Arrow aborts the process when one that
    // never started is stopped.
    arrow::Status built = sink.AddToPlan(stream->plan_.get()).status();
    if (built.ok()) built = stream->plan_->Validate();
    if (!built.ok()) {
      stream->plan_.reset();
      return built;
    }
    stream->plan_->StartProducing();
    return stream;
  }
  ~PlanStream() override { (void)Close(); }

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* out) override {
    *out = nullptr;
    if (plan_ == nullptr) return arrow::Status::OK();
    arrow::Future<std::optional<cp::ExecBatch>> pending = batches_();
    if (!WaitForBatch(pending)) {
      // The plan ended without ending its sink's stream: its own status says why.
      arrow::Status finished = plan_->finished().status();
      plan_.reset();
      return finished.ok() ? arrow::Status::Invalid(
                                 "internal: a query plan finished without ending its results")
                           : finished;
    }
    arrow::Result<std::optional<cp::ExecBatch>> next = pending.result();
    if (!next.ok()) {
      (void)Close();
      return next.status();
    }
    if (!next->has_value()) {
      // The end: the plan's own status says whether it got there cleanly.
      arrow::Status finished = plan_->finished().status();
      plan_.reset();
      return finished;
    }
    ARROW_ASSIGN_OR_RAISE(*out, (*next)->ToRecordBatch(schema_));
    return arrow::Status::OK();
  }

  // Stops the plan and waits for it; what it had queued is dropped. A plan stopped before its
  // end ends as cancelled.
  arrow::Status Close() override {
    if (plan_ == nullptr) return arrow::Status::OK();
    plan_->StopProducing();
    while (true) {
      arrow::Future<std::optional<cp::ExecBatch>> pending = batches_();
      if (!WaitForBatch(pending)) break;
      arrow::Result<std::optional<cp::ExecBatch>> next = pending.result();
      if (!next.ok() || !next->has_value()) break;
    }
    arrow::Status finished = plan_->finished().status();
    plan_.reset();
    return finished;
  }

 private:
  PlanStream() = default;

  // Waits for `pending`, the sink's next batch; false if the plan finished first and the batch
  // never came. Acero can end a plan that failed (a join key's cast, at random) without ending
  // its sink's stream, and a wait on the stream alone then never returns.
  bool WaitForBatch(const arrow::Future<std::optional<cp::ExecBatch>>& pending) {
    constexpr double kPollSeconds = 0.05;
    while (!pending.Wait(kPollSeconds)) {
      if (plan_->finished().is_finished()) return pending.Wait(kPollSeconds);
    }
    return true;
  }
  std::shared_ptr<ac::ExecPlan> plan_;
  std::shared_ptr<arrow::Schema> schema_;
  std::function<arrow::Future<std::optional<cp::ExecBatch>>()> batches_;
};

// A plan's result as a stream: the columns the query names (hidden sort keys dropped) under
// their names, and for a top LIMIT only its rows, after which the plan is stopped, which stops
// its scans.
class ResultReader : public arrow::RecordBatchReader {
 public:
  ResultReader(std::unique_ptr<arrow::RecordBatchReader> plan,
               std::shared_ptr<arrow::Schema> schema, int64_t offset, int64_t count)
      : plan_(std::move(plan)), schema_(std::move(schema)), skip_(offset), left_(count) {}
  ~ResultReader() override { (void)Close(); }

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* out) override {
    *out = nullptr;
    while (plan_ != nullptr && left_ != 0) {
      std::shared_ptr<arrow::RecordBatch> batch;
      ARROW_RETURN_NOT_OK(plan_->ReadNext(&batch));
      if (batch == nullptr) break;
      int64_t first = std::min(skip_, batch->num_rows());
      skip_ -= first;
      int64_t rows = batch->num_rows() - first;
      if (left_ >= 0) {
        rows = std::min(rows, left_);
        left_ -= rows;
      }
      if (rows == 0) continue;
      if (first > 0 || rows < batch->num_rows()) batch = batch->Slice(first, rows);
      std::vector<std::shared_ptr<arrow::Array>> columns(
          batch->columns().begin(), batch->columns().begin() + schema_->num_fields());
      *out = arrow::RecordBatch::Make(schema_, batch->num_rows(), std::move(columns));
      break;
    }
    // The LIMIT has its rows: the plan stops here, whatever it still had to read. How it ends
    // does not matter any more (a scan past the rows taken may have failed, or been cancelled).
    if (left_ == 0) (void)Close();
    return arrow::Status::OK();
  }

  arrow::Status Close() override {
    if (plan_ == nullptr) return arrow::Status::OK();
    arrow::Status closed = plan_->Close();
    plan_.reset();
    return left_ == 0 ? arrow::Status::OK() : closed;
  }

 private:
  std::unique_ptr<arrow::RecordBatchReader> plan_;
  std::shared_ptr<arrow::Schema> schema_;
  int64_t skip_;
  int64_t left_;  // rows still to give; -1: all
};

// `inputs`, and the result of each aggregate that `plan` computes more than once, computed
// once here, under each place's column names.
arrow::Result<NodeInputs> WithRepeatedAggregates(const PlanNode& plan, const NodeInputs* inputs) {
  NodeInputs out = inputs != nullptr ? *inputs : NodeInputs{};
  const auto given = [&](const PlanNode& n) { return out.count(&n) > 0; };
  for (const auto& group : RepeatedAggregates(plan, given)) {
    ARROW_ASSIGN_OR_RAISE(auto table, ExecuteInPlanTypes(*group[0], &out));
    for (const PlanNode* node : group) {
      arrow::FieldVector fields;
      const std::vector<std::string> names = node->OutputNames();
      for (size_t i = 0; i < names.size(); ++i) {
        fields.push_back(table->schema()->field(static_cast<int>(i))->WithName(names[i]));
      }
      out[node] =
          arrow::Table::Make(arrow::schema(std::move(fields)), table->columns(), table->num_rows());
    }
  }
  return out;
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ExecuteStream(
    const PlanNode& plan, const std::vector<std::string>& names, const NodeInputs* given) {
  const NarrowDecimals narrow = FindNarrowDecimals(plan);
  ScopedNarrowDecimals narrow_scope(&narrow);
  ARROW_ASSIGN_OR_RAISE(const NodeInputs shared, WithRepeatedAggregates(plan, given));
  const NodeInputs* inputs = &shared;
  // The top LIMIT is applied to the stream (keeping ORDER BY's order).
  const bool limited = plan.kind == PlanNode::Kind::kLimit;
  ARROW_ASSIGN_OR_RAISE(ac::Declaration decl, limited ? LimitInput(plan, nullptr, inputs)
                                                      : ToDeclaration(plan, nullptr, inputs));
  ARROW_ASSIGN_OR_RAISE(std::unique_ptr<arrow::RecordBatchReader> reader,
                        PlanStream::Start(std::move(decl)));
  const std::shared_ptr<arrow::Schema> body_schema = reader->schema();
  if (static_cast<int>(names.size()) > body_schema->num_fields()) {
    return arrow::Status::Invalid("internal: ", names.size(), " result names for ",
                                  body_schema->num_fields(), " columns");
  }
  arrow::FieldVector fields;
  for (size_t i = 0; i < names.size(); ++i) {
    fields.push_back(body_schema->field(static_cast<int>(i))->WithName(names[i]));
  }
  return std::make_shared<ResultReader>(std::move(reader), arrow::schema(std::move(fields)),
                                        limited ? plan.offset : 0, limited ? plan.count : -1);
}

arrow::Result<std::shared_ptr<arrow::Table>> Execute(const PlanNode& plan,
                                                     const std::vector<std::string>& names,
                                                     OperatorProbes* probes,
                                                     const NodeInputs* given) {
  if (probes == nullptr) {
    ARROW_ASSIGN_OR_RAISE(auto reader, ExecuteStream(plan, names, given));
    ARROW_ASSIGN_OR_RAISE(auto table, reader->ToTable());
    ARROW_RETURN_NOT_OK(reader->Close());
    return table->CombineChunks();
  }
  // Under EXPLAIN ANALYZE every operator runs to its end, and the top LIMIT slices the
  // finished rows here. An aggregate computed once for several places shows no counts.
  const NarrowDecimals narrow = FindNarrowDecimals(plan);
  ScopedNarrowDecimals narrow_scope(&narrow);
  ARROW_ASSIGN_OR_RAISE(const NodeInputs shared, WithRepeatedAggregates(plan, given));
  const NodeInputs* inputs = &shared;
  ARROW_ASSIGN_OR_RAISE(ac::Declaration decl, plan.kind == PlanNode::Kind::kLimit
                                                  ? LimitInput(plan, probes, inputs)
                                                  : ToDeclaration(plan, probes, inputs));
  const auto start = std::chrono::steady_clock::now();
  if (probes != nullptr) {
    for (auto& [node, stats] : *probes) stats->start = start;
  }
  ARROW_ASSIGN_OR_RAISE(auto table, ac::DeclarationToTable(std::move(decl)));
  if (plan.kind == PlanNode::Kind::kLimit) {
    const int64_t offset = std::min(plan.offset, table->num_rows());
    const int64_t count = plan.count < 0 ? table->num_rows() - offset : plan.count;
    table = table->Slice(offset, count);
    if (probes != nullptr) {
      auto stats = std::make_shared<OperatorStats>();
      stats->start = start;
      stats->rows = table->num_rows();
      stats->batches = 1;
      const int64_t done = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count();
      stats->first_ns = done;
      stats->last_ns = done;
      (*probes)[&plan] = stats;
    }
  }
  // Columns past the result's (hidden sort keys) are dropped.
  std::vector<int> keep(names.size());
  for (size_t i = 0; i < names.size(); ++i) keep[i] = static_cast<int>(i);
  ARROW_ASSIGN_OR_RAISE(table, table->SelectColumns(keep));
  ARROW_ASSIGN_OR_RAISE(table, table->RenameColumns(names));
  return table->CombineChunks();
}

arrow::Result<std::shared_ptr<arrow::Table>> ExecuteInPlanTypes(const PlanNode& node,
                                                                const NodeInputs* inputs) {
  ARROW_ASSIGN_OR_RAISE(auto table, Execute(node, node.OutputNames(), nullptr, inputs));
  ARROW_ASSIGN_OR_RAISE(auto schema, plan::OutputSchema(node));
  std::vector<std::shared_ptr<arrow::ChunkedArray>> columns;
  for (int i = 0; i < table->num_columns(); ++i) {
    arrow::Datum column = table->column(i);
    if (!column.type()->Equals(*schema->field(i)->type())) {
      ARROW_ASSIGN_OR_RAISE(column, cp::Cast(column, schema->field(i)->type()));
    }
    columns.push_back(column.chunked_array());
  }
  return arrow::Table::Make(schema, std::move(columns), table->num_rows());
}

}  // namespace sluice::exec
