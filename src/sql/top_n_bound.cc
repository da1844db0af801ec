#include "sql/top_n_bound.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "exec/plan_executor.h"
#include "plan/conjuncts.h"
#include "sql/optimizer/column_pruning.h"
#include "sql/optimizer/plan_rewrite.h"

namespace sluice::sql {

namespace cp = arrow::compute;

namespace {

// Types whose order `>=` and `<=` give as the sort does, and whose row-group statistics prune
// (floating point's NaN sorts apart).
bool BoundableType(const arrow::DataType& type) {
  const auto id = type.id();
  return arrow::is_integer(id) || id == arrow::Type::DECIMAL128 || id == arrow::Type::DATE32 ||
         id == arrow::Type::DATE64 || id == arrow::Type::TIMESTAMP || id == arrow::Type::STRING ||
         id == arrow::Type::LARGE_STRING;
}

// The scan column that `name`, an output of `node`, passes on unchanged through projections and
// filters, and that scan; null where anything else is in the way or `name` is computed.
PlanNode* ScanColumn(PlanNode* node, std::string name, std::string* column) {
  while (node != nullptr) {
    switch (node->kind) {
      case PlanNode::Kind::kFilter:
        node = node->input.get();
        continue;
      case PlanNode::Kind::kProject: {
        auto source = SourceColumn(*node, name);
        if (!source) return nullptr;
        name = *source;
        node = node->input.get();
        continue;
      }
      case PlanNode::Kind::kScan: {
        if (std::find(node->names.begin(), node->names.end(), name) == node->names.end()) {
          return nullptr;
        }
        *column = name;
        return node;
      }
      default:
        return nullptr;
    }
  }
  return nullptr;
}

// Drops from the projections of the chain under `node` (projections and filters down to a
// scan) every column that nothing above reads, of `needed` at the top. Column pruning narrows
// scans, not projections.
void NarrowProjections(PlanNode* node, std::set<std::string> needed) {
  for (; node != nullptr && node->kind != PlanNode::Kind::kScan; node = node->input.get()) {
    if (node->kind == PlanNode::Kind::kFilter) {
      plan::AddColumnNames(node->predicate, &needed);
      continue;
    }
    std::vector<cp::Expression> expressions;
    std::vector<std::string> names;
    std::set<std::string> below;
    for (size_t i = 0; i < node->names.size(); ++i) {
      if (!needed.count(node->names[i])) continue;
      plan::AddColumnNames(node->expressions[i], &below);
      expressions.push_back(node->expressions[i]);
      names.push_back(node->names[i]);
    }
    if (node->keep_input) {
      for (const auto& n : needed) {
        if (std::find(names.begin(), names.end(), n) == names.end()) below.insert(n);
      }
    }
    node->expressions = std::move(expressions);
    node->names = std::move(names);
    needed = std::move(below);
  }
}

}  // namespace

arrow::Status BoundTopNScan(PlanNode* plan) {
  if (plan == nullptr || plan->kind != PlanNode::Kind::kLimit || plan->count <= 0 ||
      plan->offset < 0 || plan->offset > kTopNBoundMaxRows - plan->count) {
    return arrow::Status::OK();
  }
  const PlanNode& sort = *plan->input;
  if (sort.kind != PlanNode::Kind::kSort || sort.sort_keys.empty()) return arrow::Status::OK();
  const cp::SortKey& first = sort.sort_keys[0];
  if (first.target.name() == nullptr) return arrow::Status::OK();
  std::string column;
  PlanNode* scan = ScanColumn(sort.input.get(), *first.target.name(), &column);
  if (scan == nullptr || scan->split || scan->table == nullptr ||
      scan->table->format != "parquet" || scan->names.size() < 2) {
    return arrow::Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto scan_schema, OutputSchema(*scan));
  const auto key_field = scan_schema->GetFieldByName(column);
  if (key_field == nullptr || !BoundableType(*key_field->type())) return arrow::Status::OK();

  // The first pass: the same rows, ordered by the first key alone (the k-th row's first key is
  // the same whatever breaks its ties) and limited alike, carrying only that key; its scan then
  // reads only it and what the filters read. Where that is all the scan reads, nothing is saved.
  std::unique_ptr<PlanNode> first_pass = CopyPlan(*plan);
  PlanNode* copied_sort = first_pass->input.get();
  copied_sort->sort_keys = {first};
  auto key_only = plan::MakeNode(PlanNode::Kind::kProject, std::move(copied_sort->input));
  key_only->expressions.push_back(cp::field_ref(*first.target.name()));
  key_only->names.push_back(*first.target.name());
  NarrowProjections(key_only->input.get(), {*first.target.name()});
  copied_sort->input = std::move(key_only);
  PruneColumns(first_pass.get());
  std::string copied_column;
  const PlanNode* copied_scan =
      ScanColumn(copied_sort->input.get(), *first.target.name(), &copied_column);
  if (copied_scan == nullptr || copied_scan->names.size() >= scan->names.size()) {
    return arrow::Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto table, exec::Execute(*first_pass, first_pass->OutputNames(), nullptr));
  const int64_t needed = plan->offset + plan->count;
  if (table->num_rows() < needed) return arrow::Status::OK();
  const auto keys = table->column(0);
  if (keys->null_count() > 0) return arrow::Status::OK();
  ARROW_ASSIGN_OR_RAISE(auto last, keys->GetScalar(needed - 1));
  if (!last->type->Equals(*key_field->type())) {
    ARROW_ASSIGN_OR_RAISE(last, last->CastTo(key_field->type()));
  }
  const bool descending = first.order == cp::SortOrder::Descending;
  cp::Expression bound = descending ? cp::greater_equal(cp::field_ref(column), cp::literal(last))
                                    : cp::less_equal(cp::field_ref(column), cp::literal(last));
  scan->scan_filter =
      scan->scan_filter.Equals(cp::literal(true)) ? bound : cp::and_(scan->scan_filter, bound);
  return arrow::Status::OK();
}

}  // namespace sluice::sql
