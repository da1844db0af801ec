// A correlated scalar subquery over a table the outer query also reads, computed as a window
// over the outer query's rows instead of a second read of that table (the WinMagic rewrite of
// Zuzarte et al., 2003). TPC-H Q17:
//
//   select ... from lineitem, part where p_partkey = l_partkey and p_brand = ... and
//     l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)
//
// reads lineitem twice when decorrelated (once to join with part, once to average by part);
// the outer rows of one part already hold every lineitem row of that part, as many times over
// as part has rows with that key, so avg(l_quantity) over (partition by l_partkey) on the outer
// rows is the subquery's value, and lineitem is read once.
#pragma once

#include <arrow/status.h>

#include "sql/plan_node.h"

namespace sluice::sql {

/// The window_subqueries pass, on the logical plan before decorrelate. A Filter over a left
/// DependentJoin (a scalar subquery in WHERE) whose outer side is a JoinSet becomes a window
/// over that JoinSet when all of these hold, which make the window's value the subquery's for
/// every outer row:
///   - the subquery is an aggregate without GROUP BY over scans of distinct tables, with
///     conditions among them and equalities `T.c = outer column`, and its value uses only avg,
///     min and max (each the same over rows repeated a like number of times; sum and count are
///     not);
///   - the outer JoinSet reads each of those tables once, with the same conditions among them
///     (TPC-H Q2's partsupp, supplier, nation and region in EUROPE), and equates each T'.c with
///     the outer column (so no outer row has a NULL c, and the T'.c are the partition keys);
///   - no other outer condition below the subquery reads those tables but through the keys, so
///     every row they join to of a partition meets the same outer rows, and the window sees
///     all of them;
///   - another item is joined on a key and filtered by a condition of its own, so the outer
///     rows are a few partitions (Q17's part), not all of the tables sorted into windows.
/// Changes no result.
arrow::Status WindowScalarSubqueries(PlanNode* plan);

}  // namespace sluice::sql
