#include "sql/semi_join_reduction.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exec/plan_executor.h"
#include "sql/optimizer/filter_pushdown.h"
#include "sql/optimizer/plan_rewrite.h"

namespace sluice::sql {

namespace cp = arrow::compute;
using Kind = PlanNode::Kind;

namespace {

// A scan of `rows`, under their column names.
std::unique_ptr<PlanNode> MemoryScan(std::shared_ptr<arrow::Table> rows) {
  auto table = std::make_shared<plan::TableSource>();
  table->name = "outer side";
  table->format = plan::kMemoryFormat;
  table->schema = rows->schema();
  table->file_schema = rows->schema();
  table->num_rows = rows->num_rows();
  table->rows = std::move(rows);
  auto scan = plan::MakeNode(Kind::kScan);
  scan->columns = table->schema->field_names();
  scan->names = scan->columns;
  scan->table = std::move(table);
  return scan;
}

// Whether `node` joins or groups anything: work above its scans that fewer rows make cheaper.
// Scans and filters alone gain nothing: the semi join's own Bloom filter drops the rows of an
// inner scan without a match as cheaply (TPC-H Q4's and Q21's lineitem, where running the outer
// side first only made the query wait for it).
bool JoinsOrGroups(const PlanNode& node) {
  if (node.kind == Kind::kJoin || node.kind == Kind::kAggregate) return true;
  for (const PlanNode* child : {node.input.get(), node.right.get()}) {
    if (child != nullptr && JoinsOrGroups(*child)) return true;
  }
  return false;
}

arrow::Status Reduce(PlanNode* join) {
  if (join->kind != Kind::kJoin || join->join_type != JoinType::kSemi || !join->build_input ||
      join->null_equal_keys || join->left_keys.empty() ||
      join->left_keys.size() != join->right_keys.size() || join->input == nullptr ||
      join->right == nullptr || join->input_estimate < 0 ||
      join->input_estimate > kReduceMaxOuterRows ||
      ScanRows(*join->right) < kReduceMinInnerScanRows || !JoinsOrGroups(*join->right)) {
    return arrow::Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto right_schema, OutputSchema(*join->right));
  const auto right_key = right_schema->GetFieldByName(join->right_keys[0]);
  if (right_key == nullptr || !arrow::is_integer(right_key->type()->id())) {
    return arrow::Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto rows, exec::ExecuteInPlanTypes(*join->input));
  const auto key_column = rows->GetColumnByName(join->left_keys[0]);
  if (key_column == nullptr) {
    return arrow::Status::Invalid("internal: semi join key ", join->left_keys[0], " not found");
  }
  join->input = MemoryScan(rows);
  join->input_estimate = static_cast<double>(rows->num_rows());
  ARROW_ASSIGN_OR_RAISE(auto unique, cp::Unique(key_column));
  ARROW_ASSIGN_OR_RAISE(arrow::Datum keys, cp::DropNull(unique));
  if (keys.length() > kReduceMaxKeys) return arrow::Status::OK();
  // In the inner key's type; keys that do not fit it match no inner row.
  cp::CastOptions cast = cp::CastOptions::Safe(right_key->type());
  auto typed = cp::Cast(keys, cast);
  if (!typed.ok()) return arrow::Status::OK();
  auto filter = plan::MakeNode(Kind::kFilter, std::move(join->right));
  filter->predicate = cp::call("is_in", {cp::field_ref(join->right_keys[0])},
                               cp::SetLookupOptions(*typed, /*skip_nulls=*/true));
  PushDownFilters(filter.get());
  join->right = std::move(filter);
  return arrow::Status::OK();
}

arrow::Status Visit(PlanNode* node) {
  if (node == nullptr) return arrow::Status::OK();
  ARROW_RETURN_NOT_OK(Visit(node->input.get()));
  ARROW_RETURN_NOT_OK(Visit(node->right.get()));
  return Reduce(node);
}

}  // namespace

arrow::Status ReduceSemiJoinInputs(PlanNode* plan) { return Visit(plan); }

}  // namespace sluice::sql
