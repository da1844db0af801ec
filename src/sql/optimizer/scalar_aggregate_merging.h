// Scalar aggregate merging: aggregates without GROUP BY over the same rows but for their WHERE
// conditions read those rows once: TPC-DS q09's fifteen scalar subqueries over store_sales, or
// q88's eight over one join of store_sales with three dimensions, each with its own hour.
//
// Each such aggregate becomes a copy of one merged aggregate. Its rows: the same scans and
// joins, each filter the OR of the aggregates' conditions there (none where one has none), each
// scan reading the columns any of them reads. Every aggregate of every one of them is fed only
// the rows its own conditions keep: each condition becomes a column where it applied, carried up
// through the joins, and an aggregate's input is NULL where the AND of its own is not true
// (null_unless), which aggregates skip; COUNT(*) counts such a column instead. A COUNT(DISTINCT)
// (q28's six over store_sales) counts its value so masked: the merged partial step groups by
// each aggregate's masked copy of the value, and the final step counts its own distinctly,
// NULL (a row outside its conditions) left out. The copies differ
// only in column names, each naming its own original's results as before, so the executors run
// them once (exec/shared_subplans.h) and every consumer reads that one result.
#pragma once

#include <arrow/status.h>

#include "sql/plan_node.h"

namespace sluice::sql {

/// The fewest rows (of the scanned tables, before filters) a group's bodies must read to merge:
/// one-to-one, the copies run on their own before the rest of the query (in one process), so
/// merging a few lookups of a small dimension (TPC-DS q14b's two weeks of date_dim) gains nothing
/// and costs that wait.
inline constexpr double kMinMergedScanRows = 100'000;

/// Rewrites every group of two or more scalar aggregates in `plan` that merge: a final
/// aggregate without keys over a partial one (count, count(*), sum, min or max; grouped by the
/// value of a COUNT(DISTINCT), the same value in every one that has one), over an
/// optional projection and rows made of scans, filters, projections and inner joins that are
/// the same in each but for their filters and the columns they read. Runs after the passes that
/// choose scan batch sizes, since the copies must stay the same subplan.
void MergeScalarAggregates(PlanNode* plan);

}  // namespace sluice::sql
