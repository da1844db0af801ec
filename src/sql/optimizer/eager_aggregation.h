// Grouping before a join (eager aggregation). A query that sums a fact table joined to a
// dimension and groups by the dimension's columns (TPC-DS q22's inventory by item names, q04's
// store sales by customer names) joins every fact row first and gathers the dimension's strings
// into each: 2.3M rows in q22, grouped afterwards into 9K. Summed per join key first, the fact
// side sends the join one row per key (18K in q22), and the grouping above adds those up.
//
// Correct whatever the dimension's keys: each pre-grouped row stands for the fact rows of one
// join key, so every dimension row it matches gets their sum, exactly as each of those fact rows
// would have given it. Holds for sum, count (summed) and min and max.
#pragma once

#include "sql/plan_node.h"

namespace sluice::sql {

/// The fact side must scan at least this many times the rows of the dimension it joins, so that
/// grouping it by the join key shrinks it.
inline constexpr double kEagerMinScanRatio = 4;

/// At most this many group keys of the fact side's own (beside its join keys), each an integer
/// or a date: each multiplies the pre-grouped rows by its values.
inline constexpr size_t kEagerMaxOwnKeys = 2;

/// The eager_aggregation pass. For a final aggregate over its partial step over a projection of
/// an inner join, where one side (the dimension) is a whole table and every aggregate reads the
/// other side (the fact side) alone (with count(*) alone, the side that scans more): the fact side
/// is grouped first by its join keys and the group keys it computes, with each aggregate's partial
/// step, and the aggregate above adds up those groups (sum, count) or takes their min or max. Only
/// sum, count, count(*), min and max; not with a join condition beyond the keys, NULL-equal keys or
/// a group key reading both sides; nor where an aggregate's input or a key computed below could
/// fail on the fact rows the join drops (a division by a column), which the query never computed
/// it on. EXPLAIN shows the grouping under the join, its aggregates named `…@eager`.
void AggregateBeforeJoins(PlanNode* plan);

}  // namespace sluice::sql
