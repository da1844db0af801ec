#include "sql/optimizer/physical_choices.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/row_width.h"

namespace sluice::sql {

namespace {

void SetScanBatchRows(PlanNode* node, int64_t rows) {
  if (node == nullptr) return;
  if (node->kind == PlanNode::Kind::kScan) node->batch_rows = rows;
  SetScanBatchRows(node->input.get(), rows);
  SetScanBatchRows(node->right.get(), rows);
}

// A guess at the bytes of one row of `node`'s output (plan::GuessRowBytes); nullopt where its
// schema cannot be derived.
std::optional<double> RowBytes(const PlanNode& node) {
  auto schema = plan::OutputSchema(node);
  if (!schema.ok()) return std::nullopt;
  return plan::GuessRowBytes((*schema)->fields());
}

// Whether an inner join should hash `input` rather than `right`: when `input` is estimated
// clearly (kHashOuterRatio) smaller in bytes. Bytes, not rows: estimates of joined rows are
// rough (TPC-H Q5's chain is 5x its estimate), and the hashed side's width is what a build
// costs (Q10's customer side carries four strings). Never without both estimates.
bool HashInputInstead(const PlanNode& join) {
  if (join.input_estimate < 0 || join.right_estimate < 0) return false;
  const auto input_bytes = RowBytes(*join.input);
  const auto right_bytes = RowBytes(*join.right);
  if (!input_bytes || !right_bytes) return false;
  return HashOuterSide(join.input_estimate * *input_bytes, join.right_estimate * *right_bytes);
}

// `join` with its two sides swapped (so its output's column order too).
void SwapSides(PlanNode* join) {
  std::swap(join->input, join->right);
  std::swap(join->left_keys, join->right_keys);
  std::swap(join->input_estimate, join->right_estimate);
}

}  // namespace

bool HashOuterSide(double outer_estimate, double other_estimate) {
  return outer_estimate * kHashOuterRatio < other_estimate;
}

void ChooseBuildSides(PlanNode* plan) {
  if (plan == nullptr) return;
  if (plan->kind == PlanNode::Kind::kJoin && plan->input_estimate >= 0 &&
      plan->right_estimate >= 0) {
    if (plan->join_type != JoinType::kInner) {
      plan->build_input = HashOuterSide(plan->input_estimate, plan->right_estimate);
    } else if (HashInputInstead(*plan)) {
      // An inner join's sides are interchangeable: the smaller one becomes `right`, the hashed
      // side, under a project that keeps the join's column order.
      const std::vector<std::string> names = plan->OutputNames();
      auto join = std::make_unique<PlanNode>(std::move(*plan));
      SwapSides(join.get());
      *plan = PlanNode();
      plan->kind = PlanNode::Kind::kProject;
      for (const auto& n : names) plan->expressions.push_back(arrow::compute::field_ref(n));
      plan->names = names;
      plan->input = std::move(join);
      plan = plan->input.get();
    }
  } else if (plan->kind == PlanNode::Kind::kProject && !plan->keep_input &&
             plan->input->kind == PlanNode::Kind::kJoin &&
             plan->input->join_type == JoinType::kInner && HashInputInstead(*plan->input)) {
    // A project's columns are in its own order, whatever the join's: no project for it.
    SwapSides(plan->input.get());
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
