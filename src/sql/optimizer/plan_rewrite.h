// Bottom-up rewriting of a logical plan, for the passes that replace nodes (decorrelate,
// join_order): each node is visited after its inputs, join-set items and subqueries, in a slot
// that it may replace, the root included.
#pragma once

#include <arrow/status.h>

#include <functional>
#include <memory>

#include "sql/plan_node.h"

namespace sluice::sql {

/// The rows the scans under `node` read (their tables' row counts): what a side of a join costs
/// before its filters, where the passes after join_order weigh one side against another.
double ScanRows(const PlanNode& node);

/// Calls `visit` on every node of `plan`, children first; `visit` may replace *slot.
arrow::Status RewriteBottomUp(
    PlanNode* plan, const std::function<arrow::Status(std::unique_ptr<PlanNode>*)>& visit);

}  // namespace sluice::sql
