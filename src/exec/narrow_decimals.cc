#include "exec/narrow_decimals.h"

#include <arrow/api.h>
#include <arrow/compute/expression.h>
#include <arrow/dataset/scanner.h>
#include <arrow/util/async_generator.h>
#include <arrow/util/thread_pool.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/schema.h>

#include <string_view>
#include <utility>
#include <vector>

#include "plan/decimal_kernels.h"

namespace sluice::exec {

namespace {

namespace cp = arrow::compute;
namespace ds = arrow::dataset;
using plan::PlanNode;

constexpr int32_t kMaxNarrowPrecision = 18;

// Whether `function` is one of plan/decimal_kernels.h's, which take decimal64 operands.
bool TakesDecimal64(std::string_view function) { return function.starts_with("sluice_decimal_"); }

// The columns that `expression` (as the executor rewrites it) reads other than as an operand of
// a function that takes decimal64.
void WideReferences(const cp::Expression& expression, bool operand_of_ours,
                    std::set<std::string>* wide) {
  if (const auto* ref = expression.field_ref()) {
    if (!operand_of_ours && ref->name() != nullptr) wide->insert(*ref->name());
    return;
  }
  const cp::Expression::Call* call = expression.call();
  if (call == nullptr) return;
  const bool ours = TakesDecimal64(call->function_name);
  for (const auto& a : call->arguments) WideReferences(a, ours, wide);
}

// Whether the scan `node` may read its file column `column` as decimal64: a decimal128 of at most
// kMaxNarrowPrecision digits in the plan that every file stores as an integer.
bool Candidate(const PlanNode& node, const std::string& column) {
  if (node.table == nullptr || node.table->format != "parquet" || node.table->schema == nullptr ||
      !node.table->integer_decimal_columns.count(column)) {
    return false;
  }
  const auto field = node.table->schema->GetFieldByName(column);
  return field != nullptr && field->type()->id() == arrow::Type::DECIMAL128 &&
         static_cast<const arrow::Decimal128Type&>(*field->type()).precision() <=
             kMaxNarrowPrecision;
}

// Whether `node` scans a column that Candidate admits.
bool ReadsCandidates(const PlanNode& node) {
  if (node.kind == PlanNode::Kind::kScan) {
    for (const auto& c : node.columns) {
      if (Candidate(node, c)) return true;
    }
    return false;
  }
  for (const PlanNode* child : {node.input.get(), node.right.get()}) {
    if (child != nullptr && ReadsCandidates(*child)) return true;
  }
  for (const auto& item : node.items) {
    if (ReadsCandidates(*item)) return true;
  }
  return false;
}

class Analysis {
 public:
  explicit Analysis(NarrowDecimals* out) : out_(out) {}

  // `wide`: the columns of `node`'s output that must keep the plan's type (all where
  // `all_wide`).
  void Visit(const PlanNode& node, const std::set<std::string>& wide, bool all_wide);

 private:
  // `node`'s output schema, each node's computed once: plan::OutputSchema recomputes the whole
  // subtree, which for every node of a large plan (TPC-DS q09's) cost milliseconds.
  const arrow::Schema* SchemaOf(const PlanNode& node) {
    auto it = schemas_.find(&node);
    if (it != schemas_.end()) return it->second.get();
    std::shared_ptr<arrow::Schema> in, right, schema;
    bool known = node.items.empty();
    if (node.input != nullptr) {
      SchemaOf(*node.input);
      in = schemas_[node.input.get()];
      known &= in != nullptr;
    }
    if (node.right != nullptr) {
      SchemaOf(*node.right);
      right = schemas_[node.right.get()];
      known &= right != nullptr;
    }
    if (known) {
      auto computed = plan::NodeOutputSchema(node, in, right);
      if (computed.ok()) schema = *computed;
    }
    return (schemas_[&node] = std::move(schema)).get();
  }

  // The columns that `expression` over `input`'s output reads other than as an operand of one
  // of our decimal functions, as the executor rewrites it; every column it reads where the
  // input's types are not known.
  void WideReferencesOver(const cp::Expression& expression, const PlanNode& input,
                          std::set<std::string>* wide) {
    const arrow::Schema* schema = SchemaOf(input);
    if (schema == nullptr) {
      for (const auto& ref : cp::FieldsInExpression(expression)) {
        if (ref.name() != nullptr) wide->insert(*ref.name());
      }
      return;
    }
    if (const auto* ref = expression.field_ref(); ref != nullptr && ref->name() != nullptr) {
      wide->insert(*ref->name());
      return;
    }
    WideOperands(expression, *schema, wide);
  }

  // The decimal columns that calls in `expression` take as direct operands, other than as one of
  // our decimal functions takes them once the executor has rewritten the call. Each call is
  // rewritten alone (the rewrite decides a call by its operands' types only): rewriting a whole
  // expression binds each part again at every level.
  static void WideOperands(const cp::Expression& expression, const arrow::Schema& schema,
                           std::set<std::string>* wide) {
    const cp::Expression::Call* call = expression.call();
    if (call == nullptr) return;
    std::vector<std::string> decimals;
    for (const auto& a : call->arguments) {
      const auto* ref = a.field_ref();
      if (ref == nullptr || ref->name() == nullptr) continue;
      const auto field = schema.GetFieldByName(*ref->name());
      if (field == nullptr || field->type()->id() == arrow::Type::DECIMAL128) {
        decimals.push_back(*ref->name());
      }
    }
    if (!decimals.empty()) {
      std::set<std::string> outside;
      WideReferences(plan::WithDecimalKernels(expression, schema), false, &outside);
      for (const auto& name : decimals) {
        if (outside.count(name)) wide->insert(name);
      }
    }
    for (const auto& a : call->arguments) WideOperands(a, schema, wide);
  }

  NarrowDecimals* out_;
  std::map<const PlanNode*, std::shared_ptr<arrow::Schema>> schemas_;
};

void Analysis::Visit(const PlanNode& node, const std::set<std::string>& wide, bool all_wide) {
  auto all = [&](const PlanNode* child) {
    if (child != nullptr) Visit(*child, {}, true);
  };
  switch (node.kind) {
    case PlanNode::Kind::kScan: {
      if (all_wide) return;
      // A file column read under several names is narrow only where all of them are.
      std::set<std::string> narrow, kept_wide;
      for (size_t i = 0; i < node.columns.size() && i < node.names.size(); ++i) {
        if (Candidate(node, node.columns[i]) && !wide.count(node.names[i])) {
          narrow.insert(node.columns[i]);
        } else {
          kept_wide.insert(node.columns[i]);
        }
      }
      for (const auto& c : kept_wide) narrow.erase(c);
      if (!narrow.empty()) (*out_)[&node] = std::move(narrow);
      return;
    }
    case PlanNode::Kind::kFilter: {
      if (node.input == nullptr) return;
      std::set<std::string> wide_in = wide;
      WideReferencesOver(node.predicate, *node.input, &wide_in);
      Visit(*node.input, wide_in, all_wide);
      return;
    }
    case PlanNode::Kind::kProject: {
      if (node.input == nullptr) return;
      if (node.keep_input) return all(node.input.get());
      std::set<std::string> wide_in;
      for (size_t i = 0; i < node.expressions.size(); ++i) {
        const auto* ref = node.expressions[i].field_ref();
        if (ref != nullptr && ref->name() != nullptr) {
          if (all_wide || i >= node.names.size() || wide.count(node.names[i])) {
            wide_in.insert(*ref->name());
          }
        } else {
          WideReferencesOver(node.expressions[i], *node.input, &wide_in);
        }
      }
      Visit(*node.input, wide_in, false);
      return;
    }
    case PlanNode::Kind::kAggregate: {
      if (node.input == nullptr) return;
      // Keys and every aggregate but a sum or a count keep the plan's type: a sum's result is
      // decimal128 whatever its input, and a count reads validity only (AVG is both).
      std::set<std::string> wide_in(node.keys.begin(), node.keys.end());
      for (const auto& a : node.aggregates) {
        if (a.function != "sum" && a.function != "count" && !a.input.empty()) {
          wide_in.insert(a.input);
        }
      }
      Visit(*node.input, wide_in, false);
      return;
    }
    case PlanNode::Kind::kJoin: {
      // A column that a join passes on (not a key, not in its condition) keeps its width:
      // Acero's hash join and ours copy fixed-width values of any width.
      if (node.input == nullptr || node.right == nullptr) return;
      std::set<std::string> wide_in = wide;
      wide_in.insert(node.left_keys.begin(), node.left_keys.end());
      wide_in.insert(node.right_keys.begin(), node.right_keys.end());
      for (const auto& ref : cp::FieldsInExpression(node.join_filter)) {
        if (ref.name() != nullptr) wide_in.insert(*ref.name());
      }
      Visit(*node.input, wide_in, all_wide);
      Visit(*node.right, wide_in, all_wide);
      return;
    }
    default:
      all(node.input.get());
      all(node.right.get());
      for (const auto& item : node.items) all(item.get());
      return;
  }
}

// Cuts a generator's batches into batches of at most `batch_rows` rows, as Arrow's Parquet
// format does with the reader's row-group-sized ones.
class SlicingGenerator {
 public:
  SlicingGenerator(ds::RecordBatchGenerator source, int64_t batch_rows)
      : state_(std::make_shared<State>(std::move(source), batch_rows)) {}

  arrow::Future<std::shared_ptr<arrow::RecordBatch>> operator()() {
    if (state_->current != nullptr) return state_->Next();
    auto state = state_;
    return state_->source().Then([state](const std::shared_ptr<arrow::RecordBatch>& batch)
                                     -> std::shared_ptr<arrow::RecordBatch> {
      if (arrow::IsIterationEnd(batch)) return batch;
      state->current = batch;
      return state->Take();
    });
  }

 private:
  struct State {
    State(ds::RecordBatchGenerator s, int64_t rows) : source(std::move(s)), batch_rows(rows) {}
    std::shared_ptr<arrow::RecordBatch> Take() {
      if (current->num_rows() <= batch_rows) return std::exchange(current, nullptr);
      auto slice = current->Slice(0, batch_rows);
      current = current->Slice(batch_rows);
      return slice;
    }
    arrow::Future<std::shared_ptr<arrow::RecordBatch>> Next() {
      return arrow::Future<std::shared_ptr<arrow::RecordBatch>>::MakeFinished(Take());
    }
    ds::RecordBatchGenerator source;
    int64_t batch_rows;
    std::shared_ptr<arrow::RecordBatch> current;
  };
  std::shared_ptr<State> state_;
};

// The leaf column indices of the fields of `manifest` that `options` materializes.
std::vector<int> ColumnIndices(const parquet::arrow::SchemaManifest& manifest,
                               const ds::ScanOptions& options) {
  std::set<std::string> names;
  for (const auto& ref : options.MaterializedFields()) {
    if (ref.name() != nullptr) names.insert(*ref.name());
  }
  std::vector<int> indices;
  std::vector<const parquet::arrow::SchemaField*> stack;
  for (const auto& field : manifest.schema_fields) {
    if (!names.count(field.field->name())) continue;
    stack.push_back(&field);
    while (!stack.empty()) {
      const auto* f = stack.back();
      stack.pop_back();
      if (f->is_leaf()) indices.push_back(f->column_index);
      for (auto it = f->children.rbegin(); it != f->children.rend(); ++it) stack.push_back(&*it);
    }
  }
  return indices;
}

class NarrowFormat : public ds::ParquetFileFormat {
 public:
  explicit NarrowFormat(std::set<std::string> columns) : columns_(std::move(columns)) {}

  arrow::Result<ds::RecordBatchGenerator> ScanBatchesAsync(
      const std::shared_ptr<ds::ScanOptions>& options,
      const std::shared_ptr<ds::FileFragment>& file) const override {
    auto fragment = std::static_pointer_cast<ds::ParquetFileFragment>(file);
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<parquet::arrow::FileReader> reader,
                          GetReader(fragment->source(), options, fragment->metadata()));
    ARROW_RETURN_NOT_OK(fragment->EnsureCompleteMetadata(reader.get()));
    const std::vector<int> row_groups = fragment->row_groups();
    if (row_groups.empty()) return arrow::MakeEmptyGenerator<std::shared_ptr<arrow::RecordBatch>>();
    Relabel relabel = Narrow(reader.get());
    const std::vector<int> columns = ColumnIndices(reader->manifest(), *options);
    ARROW_ASSIGN_OR_RAISE(auto generator,
                          reader->GetRecordBatchGenerator(
                              reader, row_groups, columns, arrow::internal::GetCpuThreadPool(),
                              options->batch_readahead * options->batch_size));
    if (!relabel.empty()) {
      generator = arrow::MakeMappedGenerator(
          std::move(generator),
          [relabel = std::move(relabel)](const std::shared_ptr<arrow::RecordBatch>& batch) {
            return Relabeled(batch, relabel);
          });
    }
    ds::RecordBatchGenerator sliced = SlicingGenerator(std::move(generator), options->batch_size);
    if (options->batch_readahead == 0) return sliced;
    return arrow::MakeSerialReadaheadGenerator(std::move(sliced), options->batch_readahead);
  }

 private:
  // Columns the reader reads as int64 that the scan gives as decimal64: the same 8-byte values.
  using Relabel = std::map<std::string, std::shared_ptr<arrow::DataType>>;

  // The reader's Arrow types of columns_ set so that they come out as decimal64 where the file
  // holds 64- or 32-bit integers: its column readers take their types from the manifest, and
  // its own rules restore the decimal128 of a stored Arrow schema
  // (ArrowReaderProperties::smallest_decimal_enabled does not apply to such files, which
  // tpchgen-cli's and Arrow's writers make). A column of INT64s is read as int64, which the
  // reader hands over without a copy (to decimal64 it copies value by value: 3 % of TPC-H
  // Q1), and relabeled; one of INT32s is read as decimal64, which widens them.
  Relabel Narrow(parquet::arrow::FileReader* reader) const {
    Relabel relabel;
    // The manifest is the reader's own member; Arrow offers no other way to choose a column's
    // Arrow type.
    auto& manifest = const_cast<parquet::arrow::SchemaManifest&>(reader->manifest());
    for (auto& field : manifest.schema_fields) {
      if (!field.is_leaf() || !columns_.count(field.field->name())) continue;
      const auto& type = *field.field->type();
      if (type.id() != arrow::Type::DECIMAL128) continue;
      const auto& decimal = static_cast<const arrow::Decimal128Type&>(type);
      const auto physical = manifest.descr->Column(field.column_index)->physical_type();
      if (decimal.precision() > kMaxNarrowPrecision ||
          (physical != parquet::Type::INT64 && physical != parquet::Type::INT32)) {
        continue;
      }
      auto narrow = arrow::decimal64(decimal.precision(), decimal.scale());
      if (physical == parquet::Type::INT64) {
        relabel[field.field->name()] = std::move(narrow);
        field.field = field.field->WithType(arrow::int64());
      } else {
        field.field = field.field->WithType(std::move(narrow));
      }
    }
    return relabel;
  }

  // `batch` with the int64 columns named in `relabel` as the decimal64 of the same values.
  static std::shared_ptr<arrow::RecordBatch> Relabeled(
      const std::shared_ptr<arrow::RecordBatch>& batch, const Relabel& relabel) {
    if (arrow::IsIterationEnd(batch)) return batch;
    arrow::FieldVector fields = batch->schema()->fields();
    std::vector<std::shared_ptr<arrow::ArrayData>> columns = batch->column_data();
    for (size_t i = 0; i < fields.size(); ++i) {
      auto it = relabel.find(fields[i]->name());
      if (it == relabel.end() || columns[i]->type->id() != arrow::Type::INT64) continue;
      fields[i] = fields[i]->WithType(it->second);
      auto data = columns[i]->Copy();
      data->type = it->second;
      columns[i] = std::move(data);
    }
    return arrow::RecordBatch::Make(arrow::schema(std::move(fields), batch->schema()->metadata()),
                                    batch->num_rows(), std::move(columns));
  }

  std::set<std::string> columns_;
};

thread_local const NarrowDecimals* current_narrow = nullptr;

}  // namespace

NarrowDecimals FindNarrowDecimals(const PlanNode& plan) {
  NarrowDecimals out;
  if (ReadsCandidates(plan)) Analysis(&out).Visit(plan, {}, true);
  return out;
}

std::shared_ptr<ds::ParquetFileFormat> NarrowDecimalParquetFormat(std::set<std::string> columns) {
  return std::make_shared<NarrowFormat>(std::move(columns));
}

ScopedNarrowDecimals::ScopedNarrowDecimals(const NarrowDecimals* narrow)
    : previous_(current_narrow) {
  current_narrow = narrow;
}

ScopedNarrowDecimals::~ScopedNarrowDecimals() { current_narrow = previous_; }

std::set<std::string> ScopedNarrowDecimals::For(const PlanNode& scan) {
  if (current_narrow == nullptr) return {};
  auto it = current_narrow->find(&scan);
  return it == current_narrow->end() ? std::set<std::string>{} : it->second;
}

}  // namespace sluice::exec
