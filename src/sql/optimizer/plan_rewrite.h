// Bottom-up rewriting of a logical plan, for the passes that replace nodes (decorrelate,
// join_order): each node is visited after its inputs, join-set items and subqueries, in a slot
// that it may replace, the root included. Also what several passes read off a plan the same way:
// a side's scanned rows, and the column a projection passes on.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/status.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "sql/plan_node.h"

namespace sluice::sql {

/// The rows the scans under `node` read (their tables' row counts): what a side of a join costs
/// before its filters, where the passes after join_order weigh one side against another.
double ScanRows(const PlanNode& node);

/// Whether `node` outputs a column named `name`.
bool HasColumn(const PlanNode& node, const std::string& name);

/// The input column that `project` outputs unchanged as `name` (under that name or another, or
/// passed through with keep_input); nothing where it computes `name` or has no such column.
std::optional<std::string> SourceColumn(const PlanNode& project, const std::string& name);

/// `e` with each column that `to` names read as the one it maps to (the others as they are).
arrow::compute::Expression RenameColumns(const arrow::compute::Expression& e,
                                         const std::map<std::string, std::string>& to);

/// Calls `visit` on every node of `plan`, children first; `visit` may replace *slot.
arrow::Status RewriteBottomUp(
    PlanNode* plan, const std::function<arrow::Status(std::unique_ptr<PlanNode>*)>& visit);

}  // namespace sluice::sql
