// Decorrelation: every join to a subquery (kDependentJoin) becomes a plain join, the first pass
// of the optimizer. The binder leaves a subquery's conditions on the outer query in a Filter of
// their own inside it; this pass takes them out:
//   - an equality between a subquery column and an outer column becomes a join key;
//   - for EXISTS, any other such condition becomes the join's filter (Q21's
//     l3.l_suppkey <> l1.l_suppkey), so EXISTS and NOT EXISTS run as semi and anti joins;
//   - for a scalar subquery, its key columns become grouping keys of its aggregate and its first
//     outputs, so that `x < (SELECT avg(..) FROM t WHERE t.k = outer.k)` is a left join on k to
//     one row per k (no group for an outer row's key is the aggregate over no rows, NULL, as a
//     left join gives it); an uncorrelated one joins every outer row on a constant key;
//   - IN has its column pair as a key, and a correlated IN its equalities too, passed up as
//     outputs (and grouping keys) of the subquery as for a scalar subquery; it runs as a semi
//     join (NOT IN as an anti join).
// What the binder refuses (a condition other than an equality in a scalar subquery, one outside
// WHERE) never reaches the pass, so an error here is a bug.
#pragma once

#include <arrow/status.h>

#include "sql/plan_node.h"

namespace sluice::sql {

/// The decorrelate pass over a logical plan, inner subqueries first.
arrow::Status Decorrelate(PlanNode* plan);

}  // namespace sluice::sql
