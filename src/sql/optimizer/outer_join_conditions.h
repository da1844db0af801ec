// Outer join conditions: a WHERE condition that reads only the preserved side of an outer join
// moves into that side's own query level before join ordering. The binder makes each side of an
// outer join a level of its own (its FROM items, its inner joins' ON conditions, a WHERE Filter
// over them) and leaves the query's WHERE above the outer join, where the join_order pass of the
// preserved side would not see it: TPC-DS q72's eight inner joins under two left joins were
// ordered without `d1.d_year = 1999` and the other filters, and joined all of catalog_sales to
// inventory before any of them (63 s against DuckDB's 0.1 s).
//
// It keeps every result as it was: below a left join, a condition on its preserved side drops
// the same rows it dropped above (the join neither adds nor changes them, only repeats and pads
// them); the filter_pushdown pass moves it there anyway after join ordering. A condition that
// reads the null-padded side, a full join's sides, or a scalar subquery's result stays.
#pragma once

#include <arrow/status.h>

#include "sql/plan_node.h"

namespace sluice::sql {

/// The outer_join_conditions pass: moves the conjuncts of every query level's WHERE Filter that
/// read only columns of the level reached through left joins' preserved sides (`input`, through
/// the projections of their computed keys) into that level's Filter, nested levels in turn.
/// Runs after decorrelate and before join_order.
arrow::Status MoveConditionsIntoOuterJoins(PlanNode* plan);

}  // namespace sluice::sql
