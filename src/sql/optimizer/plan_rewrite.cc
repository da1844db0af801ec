#include "sql/optimizer/plan_rewrite.h"

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

arrow::Status RewriteBottomUp(
    PlanNode* plan, const std::function<arrow::Status(std::unique_ptr<PlanNode>*)>& visit) {
  // The root may be replaced too: it moves into a slot of its own and back.
  auto root = std::make_unique<PlanNode>(std::move(*plan));
  arrow::Status st = Below(&root, visit);
  *plan = std::move(*root);
  return st;
}

}  // namespace sluice::sql
