#include "sql/optimizer/plan_rewrite.h"

#include <algorithm>

namespace sluice::sql {

namespace {

arrow::Status Below(std::unique_ptr<PlanNode>* slot,
                    const std::function<arrow::Status(std::unique_ptr<PlanNode>*)>& visit) {
  PlanNode* node = slot->get();
  if (node == nullptr) return arrow::Status::OK();
  ARROW_RETURN_NOT_OK(Below(&node->input, visit));
  ARROW_RETURN_NOT_OK(Below(&node->right, visit));
  for (auto& item : node->items) ARROW_RETURN_NOT_OK(Below(&item, visit));
  return visit(slot);
}

}  // namespace

double ScanRows(const PlanNode& node) {
  double rows = 0;
  if (node.kind == PlanNode::Kind::kScan && node.table != nullptr) {
    rows += static_cast<double>(std::max<int64_t>(node.table->num_rows, 0));
  }
  if (node.input != nullptr) rows += ScanRows(*node.input);
  if (node.right != nullptr) rows += ScanRows(*node.right);
  for (const auto& item : node.items) rows += ScanRows(*item);
  return rows;
}

arrow::Status RewriteBottomUp(
    PlanNode* plan, const std::function<arrow::Status(std::unique_ptr<PlanNode>*)>& visit) {
  // The root may be replaced too: it moves into a slot of its own and back.
  auto root = std::make_unique<PlanNode>(std::move(*plan));
  arrow::Status st = Below(&root, visit);
  *plan = std::move(*root);
  return st;
}

}  // namespace sluice::sql
