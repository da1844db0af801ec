// The optimizer: an ordered list of named passes, each a rewrite of a bound plan in its own
// file with plan-text tests. The query path runs them after binding. The logical passes come
// first: decorrelation (decorrelate.h) turns joins to subqueries into joins, and join order
// (join_order.h) orders each query level's FROM items and places its semi joins
// (semi_joins.h), from the cardinalities the binder attached. Then expression simplification
// (constant_folding.h), filter pushdown (filter_pushdown.h), column pruning, and the physical
// planner's choices from the estimates on each join (physical_choices.h): build sides and the
// scan batch size.
#pragma once

#include <arrow/status.h>

#include <functional>
#include <string>
#include <vector>

#include "sql/plan_node.h"

namespace sluice::sql {

/// One pass. `run` rewrites the plan in place; an error is a bug, never the user's.
struct Pass {
  std::string name;
  std::function<arrow::Status(PlanNode* plan)> run;
};

/// The passes every query runs, in order: "window_subqueries", "decorrelate",
/// "outer_join_simplification" (left joins the WHERE makes inner), "outer_join_conditions" (which
/// finds query levels by the shape decorrelate leaves), "join_order" (which reads the
/// subqueries' joins decorrelate made, and the conditions the previous pass moved into the
/// levels under outer joins), "constant_folding", "filter_pushdown" (on folded
/// predicates, so that a condition folded to true is gone and one folded to false stays put),
/// "column_pruning" (after the filters have moved, as they read columns), "build_sides",
/// "constant_group_keys", "scan_batch_rows" (from the build sides chosen).
const std::vector<Pass>& DefaultPasses();

/// DefaultPasses with "eager_aggregation" before "build_sides" (eager_aggregation.h): for a
/// query that runs in one process. The stage planner would cut the grouping under the join into
/// stages of its own and run the join and the grouping above it on the driver, which it does not
/// yet weigh against keeping the join in the map stage.
const std::vector<Pass>& InProcessPasses();

/// Runs `passes` over `plan` in order, appending each one's name to `ran` (when given).
arrow::Status Optimize(PlanNode* plan, const std::vector<Pass>& passes,
                       std::vector<std::string>* ran = nullptr);

}  // namespace sluice::sql
