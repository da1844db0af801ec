// Aggregates that a plan computes twice: a WITH query or a view read twice (TPC-H Q15's
// revenue0, as the table and as its max) is bound once per reference, under other column
// names. Such a subplan runs once, and both places read its result.
#pragma once

#include <vector>

#include "plan/plan_node.h"

namespace sluice::exec {

/// Whether `a` and `b` read the same rows of the same table (in-memory tables only where they
/// are one object).
bool SameTable(const plan::TableSource& a, const plan::TableSource& b);

/// Whether `a` and `b` compute the same rows: the same operators, tables, expressions, keys and
/// literals, with their columns renamed one to one. Only scans, filters, projects, joins,
/// aggregates and unions are compared; a plan with any other operator is never the same as
/// another.
bool SameSubplan(const plan::PlanNode& a, const plan::PlanNode& b);

/// Groups of two or more aggregates under `root` that are the same subplan (outermost ones
/// first; none inside another found), skipping subtrees that hold a node `skip` says to.
std::vector<std::vector<const plan::PlanNode*>> RepeatedAggregates(
    const plan::PlanNode& root, const std::function<bool(const plan::PlanNode&)>& skip);

}  // namespace sluice::exec
