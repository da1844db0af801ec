#include "sql/optimizer/physical_choices.h"

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

void ChooseScanBatchRows(PlanNode* plan, double largest_build_rows) {
  if (largest_build_rows >= kLargeBuildRows) SetScanBatchRows(plan, kSmallScanBatchRows);
}

}  // namespace sluice::sql
