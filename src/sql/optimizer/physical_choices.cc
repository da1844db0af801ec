#include "sql/optimizer/physical_choices.h"

#include <algorithm>

namespace sluice::sql {

namespace {

void SetScanBatchRows(PlanNode* node, int64_t rows) {
  if (node == nullptr) return;
  if (node->kind == PlanNode::Kind::kScan) node->batch_rows = rows;
  SetScanBatchRows(node->input.get(), rows);
  SetScanBatchRows(node->right.get(), rows);
}

}  // namespace

bool HashOuterSide(double outer_estimate, double other_estimate) {
  return outer_estimate * kHashOuterRatio < other_estimate;
}

void ChooseBuildSides(PlanNode* plan) {
  if (plan == nullptr) return;
  if (plan->kind == PlanNode::Kind::kJoin && plan->join_type != JoinType::kInner &&
      plan->input_estimate >= 0 && plan->right_estimate >= 0) {
    plan->build_input = HashOuterSide(plan->input_estimate, plan->right_estimate);
  }
  ChooseBuildSides(plan->input.get());
  ChooseBuildSides(plan->right.get());
}

double LargestBuildRows(const PlanNode& plan) {
  double most = 0;
  if (plan.kind == PlanNode::Kind::kJoin) {
    most = plan.build_input ? plan.input_estimate : plan.right_estimate;
  }
  if (plan.input != nullptr) most = std::max(most, LargestBuildRows(*plan.input));
  if (plan.right != nullptr) most = std::max(most, LargestBuildRows(*plan.right));
  return most;
}

void ChooseScanBatchRows(PlanNode* plan) {
  if (LargestBuildRows(*plan) >= kLargeBuildRows) SetScanBatchRows(plan, kSmallScanBatchRows);
}

}  // namespace sluice::sql
