// Scalar aggregate merging: aggregates without GROUP BY over the same table, each with its own
// WHERE (TPC-DS q09's fifteen scalar subqueries over store_sales), read the table once.
//
// Each such aggregate becomes a copy of one merged aggregate: one scan of the columns they all
// read, filtered by the OR of their conditions, and every aggregate of every one of them, each
// fed only the rows its own condition keeps (its input is CASE WHEN condition THEN input END, so
// other rows give NULL, which aggregates skip; COUNT(*) counts such a flag instead). The copies
// differ only in column names, each naming its own original's results as before, so the
// executors run them once (exec/shared_subplans.h) and every consumer reads that one result.
#pragma once

#include <arrow/status.h>

#include "sql/plan_node.h"

namespace sluice::sql {

/// Rewrites every group of two or more merge-able scalar aggregates over one table in `plan`:
/// a final aggregate without keys over a partial one (count, count(*), sum, min or max), over
/// an optional projection, an optional filter and a scan. Runs after the passes that choose
/// scan batch sizes, since the copies must stay the same subplan.
void MergeScalarAggregates(PlanNode* plan);

}  // namespace sluice::sql
