// Filter pushdown: every conjunct of a Filter moves down the plan to the lowest operator whose
// output has all the columns it reads, where it filters fewer rows, and a Filter that lands on
// a Parquet scan also becomes the scan's row-group filter (PlanNode::scan_filter). The logical
// passes leave WHERE where SQL wrote it (one Filter above the query level's joins, semi joins
// and scalar subquery joins) and a left join's ON conditions on the join; this pass places them.
//
// The rules, which keep every result as it was:
//  - Through an inner join into the side that has all of a conjunct's columns; one that reads
//    both sides stays above the join.
//  - Through a left join only into its preserved side (`input`). A WHERE condition on the
//    null-padded side stays above the join, where it sees the NULLs the join pads with
//    (`name IS NULL` keeps exactly the unmatched rows; `name = 'a'` drops them); below it, it
//    would see none. Of the join's own ON conditions (join_filter), those that read only the
//    null-padded side filter that side before the join; the others stay on the join.
//  - Through a semi or anti join into its outer side (its output is that side's rows). Its
//    join_filter is left alone: on an anti join, moving it would change which rows are kept.
//  - Through a projection when the rewritten conjunct (the projection's expressions put in for
//    its columns) then goes on below the operator under it, or onto a scan; otherwise it stays
//    above the projection, as computing the expression twice would buy nothing.
//  - Through an aggregate only a conjunct that reads its grouping keys alone: it keeps or drops
//    whole groups, so it may drop their rows before grouping. Into an aggregate the plan
//    computes more than once (a WITH query read twice, which the executor runs once), only when
//    every copy gets such a conjunct and it lands at the bottom of each copy's joins; otherwise
//    the one shared run costs less.
//  - Never through a sort or a limit.
//  - A conjunct that reads no column (`WHERE false`) stays where it was written; `true` goes.
//
// What the join_order pass does first, and why: which FROM item a WHERE condition belongs to
// also decides the join order, since join ordering (join_order.h) compares each item's rows
// after its own conditions, and the weaker single-item copies of an OR over several items
// (TPC-H Q7, Q19) are derived there for those estimates. OrderJoins therefore classifies the
// conditions and derives the copies, for its estimates only, and hands them all back for the
// WHERE Filter; this pass decides where they run.
#pragma once

#include "sql/plan_node.h"

namespace sluice::sql {

/// Moves the conjuncts of every Filter in `plan` (and a left join's ON conditions on its
/// null-padded side) down by the rules above, and sets each scan's scan_filter to the Filter
/// that lands on it.
void PushDownFilters(PlanNode* plan);

}  // namespace sluice::sql
