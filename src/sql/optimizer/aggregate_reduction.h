// Semi-join reduction of grouped aggregates. A correlated subquery decorrelates into an
// aggregate over all of its table, grouped by the correlation keys, joined back to the outer
// query; the join then keeps the few groups the outer rows ask for (TPC-H Q17 groups 6M
// lineitem rows into 200K parts and keeps 204; Q20 543K groups and keeps 8.5K). Where the join
// keys are group keys, the rows of the groups the join drops can be dropped before grouping, by
// a semi join with the outer side's keys. DuckDB gets the same from its delim joins.
#pragma once

#include "sql/plan_node.h"

namespace sluice::sql {

/// The reducer runs a copy of part of the other side, so it must cost far less than the
/// aggregate's input: its scans read at most this share of the rows the aggregate's input scans.
/// TPC-H SF 1, CPU time: Q17 (200K part rows for 6M lineitem) 910 -> 549 ms, Q20 (1M for 6M)
/// 734 -> 398 ms; Q2 (200K part rows for 810K) gained nothing and cost 256 -> 301 ms.
inline constexpr double kReducerMaxShare = 0.2;

/// The aggregate_reduction pass. For each join (inner; or left, semi or anti with the aggregate
/// on the side that is not kept) whose one side is a grouped aggregate (through projections
/// that pass the keys on and HAVING filters) with the join keys among its group keys: the
/// aggregate's input is semi joined to the other side's keys first. The keys come from the
/// smallest part of the other side that produces them with no more values than the join sees
/// (joins are looked through toward the side that holds the keys, filters are not), which must
/// filter something (not a bare scan), hold no aggregate, window, sort or limit, and scan at most
/// kReducerMaxShare of the aggregate input's rows. The semi join then goes below the filters,
/// projections and joins under the aggregate to the side of a join that has the keys (TPC-DS
/// q59's weeks onto its date_dim, before store sales join it). Changes no result.
void ReduceAggregatesByJoins(PlanNode* plan);

}  // namespace sluice::sql
