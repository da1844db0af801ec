// The optimizer: an ordered list of named passes, each a rewrite of a bound plan in its own
// file with plan-text tests. The query path runs them after binding. Today they are expression
// simplification (constant_folding.h), filter pushdown (filter_pushdown.h), column pruning and
// the scan batch size. Join order (join_order.h), semi-join placement and build sides
// (semi_joins.h, physical_choices.h) have their own files too, but the binder still calls them
// as it binds each query level, since they need its estimates; they become passes here once
// estimates live on the plan.
#pragma once

#include <arrow/status.h>

#include <functional>
#include <string>
#include <vector>

#include "sql/plan_node.h"

namespace sluice::sql {

/// What the binder learned while binding that a pass needs and the plan does not carry.
struct PlanFacts {
  /// The most rows any hash join of the plan is estimated to build.
  double largest_build_rows = 0;
};

/// One pass. `run` rewrites the plan in place; an error is a bug, never the user's.
struct Pass {
  std::string name;
  std::function<arrow::Status(PlanNode* plan, const PlanFacts& facts)> run;
};

/// The passes every query runs, in order: "constant_folding", "filter_pushdown" (on folded
/// predicates, so that a condition folded to true is gone and one folded to false stays put),
/// "column_pruning" (after the filters have moved, as they read columns), "scan_batch_rows".
const std::vector<Pass>& DefaultPasses();

/// Runs `passes` over `plan` in order, appending each one's name to `ran` (when given).
arrow::Status Optimize(PlanNode* plan, const PlanFacts& facts, const std::vector<Pass>& passes,
                       std::vector<std::string>* ran = nullptr);

}  // namespace sluice::sql
