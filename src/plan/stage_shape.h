// Which stage plans split their output among tasks soundly: the rules the stage planner
// (sql/stage_planner.h) follows and every worker checks again on the plan it is sent, so that
// tasks' outputs are disjoint and together make the whole.
//
// Splitting one scan splits a subtree's output rows, so that tasks' outputs are disjoint and
// together make the whole, only when the path from the subtree's top to the scan passes through
// filters, projections and the `input` side of joins: a join's output rows each come from exactly
// one row of its `input` side, and which rows a given `input` row yields depends on that row and
// the WHOLE `right` side only (true of inner, left, semi and anti joins, whichever side the hash
// table is built on). An inner join's are symmetric, so the path may also pass through its
// `right` side. (A `right` side read whole may still skip rows that can match nothing: see
// plan/split_key_ranges.h.) The same holds of a hash partition read in place of `input`, and of a
// join whose two sides are partitions with the same number on exactly its keys. Rows stay
// partitioned on their columns through filters, projections that pass those columns on (under new
// names) and the `input` side of joins; and a final aggregate over partials partitioned on exactly
// its keys outputs rows partitioned on them, each task holding whole groups no other task has, so
// it may sit below a join of two partitions (a join with a grouped subquery on its group keys). Any
// other aggregate, a sort or a limit needs all of its rows: none sits between a stage's top and
// its split (a broadcast side may hold an aggregate: each task computes it over the whole
// table). A plan or a part of one that cannot be cut runs in-process, with its reason: slower,
// never wrong.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "plan/plan_node.h"

namespace sluice::plan {

/// Why a stage task cannot run the subtree at `root` with `split` (or null) divided among its
/// tasks and each of `inputs` (node -> the keys its rows were hash-partitioned on) read as one
/// partition, or empty: the soundness rules at the top of this file, which the planner follows
/// and every worker checks again on the plan it was sent.
std::string StageShapeRefusal(const PlanNode& root, const PlanNode* split,
                              const std::map<const PlanNode*, std::vector<std::string>>& inputs);

/// Every node below `node` (itself included) in pre-order, `input` before `right`: how a stage
/// task's bytes name the nodes it reads from shuffle files.
std::vector<const PlanNode*> NodesOf(const PlanNode& node);

/// Every scan below `node` (itself included), in pre-order: how a map task names its split scan.
std::vector<const PlanNode*> ScansOf(const PlanNode& node);

}  // namespace sluice::plan
