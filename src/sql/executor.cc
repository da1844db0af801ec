#include "sql/executor.h"

#include <arrow/acero/api.h>
#include <arrow/compute/api.h>
#include <arrow/dataset/api.h>
#include <arrow/dataset/file_parquet.h>
#include <arrow/dataset/plan.h>

#include <mutex>

namespace sluice::sql {

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;
namespace ds = arrow::dataset;

arrow::Status EnsureInitialized() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    status = cp::Initialize();
    if (status.ok()) ds::internal::Initialize();
  });
  return status;
}

// True when every field the expression reads has the same type in the files as in SQL's
// schema, so the filter can be pushed into the Parquet scan as it is.
bool Pushable(const cp::Expression& e, const TableSource& table) {
  for (const auto& ref : cp::FieldsInExpression(e)) {
    const std::string* name = ref.name();
    if (name == nullptr) return false;
    auto file = table.file_schema->GetFieldByName(*name);
    auto sql = table.schema->GetFieldByName(*name);
    if (!file || !sql || !file->type()->Equals(*sql->type())) return false;
  }
  return true;
}

arrow::Result<ac::Declaration> Scan(const PlanNode& node) {
  const TableSource& table = *node.table;
  std::vector<std::string> paths;
  for (const auto& key : table.files) paths.push_back(table.store->FileSystemPath(key));
  auto format = std::make_shared<ds::ParquetFileFormat>();
  ARROW_ASSIGN_OR_RAISE(auto factory, ds::FileSystemDatasetFactory::Make(table.store->filesystem(),
                                                                         paths, format, {}));
  ds::FinishOptions finish;
  finish.schema = table.file_schema;  // the schema carried in the plan, not re-read per file
  ARROW_ASSIGN_OR_RAISE(auto dataset, factory->Finish(finish));
  auto options = std::make_shared<ds::ScanOptions>();
  options->dataset_schema = table.file_schema;
  std::vector<cp::Expression> columns;
  for (const auto& c : node.columns) columns.push_back(cp::field_ref(c));
  options->projection = cp::call("make_struct", columns, cp::MakeStructOptions(node.columns));
  if (Pushable(node.scan_filter, table)) options->filter = node.scan_filter;
  ac::Declaration scan{"scan", ds::ScanNodeOptions{dataset, options}};
  // Scan output carries extra fields; keep the needed columns, with view types made plain.
  std::vector<cp::Expression> exprs;
  for (const auto& c : node.columns) {
    auto sql_type = table.schema->GetFieldByName(c)->type();
    auto file_type = table.file_schema->GetFieldByName(c)->type();
    exprs.push_back(sql_type->Equals(*file_type)
                        ? cp::field_ref(c)
                        : cp::call("cast", {cp::field_ref(c)}, cp::CastOptions::Safe(sql_type)));
  }
  return ac::Declaration::Sequence(
      {std::move(scan), {"project", ac::ProjectNodeOptions(exprs, node.columns)}});
}

}  // namespace

arrow::Result<ac::Declaration> ToDeclaration(const PlanNode& node) {
  ARROW_RETURN_NOT_OK(EnsureInitialized());
  if (node.kind == PlanNode::Kind::kScan) return Scan(node);
  if (node.kind == PlanNode::Kind::kLimit) return ToDeclaration(*node.input);
  if (node.kind == PlanNode::Kind::kJoin) {
    ARROW_ASSIGN_OR_RAISE(ac::Declaration probe, ToDeclaration(*node.input));
    ARROW_ASSIGN_OR_RAISE(ac::Declaration build, ToDeclaration(*node.right));
    std::vector<arrow::FieldRef> left, right;
    for (const auto& k : node.left_keys) left.emplace_back(k);
    for (const auto& k : node.right_keys) right.emplace_back(k);
    ac::HashJoinNodeOptions options(ac::JoinType::INNER, left, right);
    return ac::Declaration("hashjoin", {std::move(probe), std::move(build)}, std::move(options));
  }
  ARROW_ASSIGN_OR_RAISE(ac::Declaration input, ToDeclaration(*node.input));
  switch (node.kind) {
    case PlanNode::Kind::kFilter:
      return ac::Declaration::Sequence(
          {std::move(input), {"filter", ac::FilterNodeOptions(node.predicate)}});
    case PlanNode::Kind::kProject:
      return ac::Declaration::Sequence(
          {std::move(input), {"project", ac::ProjectNodeOptions(node.expressions, node.names)}});
    case PlanNode::Kind::kAggregate: {
      std::vector<cp::Aggregate> aggregates;
      const bool grouped = !node.keys.empty();
      for (const auto& a : node.aggregates) {
        const std::string function = (grouped ? "hash_" : "") + a.function;
        std::shared_ptr<cp::FunctionOptions> options;
        if (a.function == "count")
          options = std::make_shared<cp::CountOptions>(cp::CountOptions::ONLY_VALID);
        if (a.function == "sum" || a.function == "min" || a.function == "max") {
          // SQL: an aggregate over no non-null rows is NULL, not 0.
          options =
              std::make_shared<cp::ScalarAggregateOptions>(/*skip_nulls=*/true, /*min_count=*/1);
        }
        if (a.function == "count_all") {
          aggregates.emplace_back(function, options, std::vector<arrow::FieldRef>{}, a.output);
        } else {
          aggregates.emplace_back(function, options, arrow::FieldRef(a.input), a.output);
        }
      }
      std::vector<arrow::FieldRef> keys;
      for (const auto& k : node.keys) keys.emplace_back(k);
      return ac::Declaration::Sequence(
          {std::move(input), {"aggregate", ac::AggregateNodeOptions(aggregates, keys)}});
    }
    case PlanNode::Kind::kSort:
      return ac::Declaration::Sequence(
          {std::move(input), {"order_by", ac::OrderByNodeOptions(cp::Ordering(node.sort_keys))}});
    default:
      return arrow::Status::Invalid("internal: unexpected plan node");
  }
}

arrow::Result<std::shared_ptr<arrow::Table>> Execute(const PlanNode& plan,
                                                     const std::vector<std::string>& names) {
  ARROW_ASSIGN_OR_RAISE(ac::Declaration decl, ToDeclaration(plan));
  ARROW_ASSIGN_OR_RAISE(auto table, ac::DeclarationToTable(std::move(decl)));
  if (plan.kind == PlanNode::Kind::kLimit) {
    const int64_t offset = std::min(plan.offset, table->num_rows());
    const int64_t count = plan.count < 0 ? table->num_rows() - offset : plan.count;
    table = table->Slice(offset, count);
  }
  ARROW_ASSIGN_OR_RAISE(table, table->RenameColumns(names));
  return table->CombineChunks();
}

}  // namespace sluice::sql
