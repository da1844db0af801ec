// Join order: FROM items and the WHERE conditions over them become a tree of hash joins with
// each item's own conditions pushed below the joins. The order is greedy from cardinality
// estimates (cardinality.h). The binder calls it as it binds each query level, since a level's
// estimate decides how its subqueries are joined; it becomes a pass over the plan once
// estimates live on the plan.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/result.h>

#include <memory>
#include <vector>

#include "sql/plan_node.h"
#include "sql/relation.h"

namespace sluice::sql {

/// `input` filtered by the AND of `conjuncts` (none: `input` itself). A filter right over a
/// scan is also pushed into it (`push_into_scan`), to skip row groups; the Filter still drops
/// the rows.
std::unique_ptr<PlanNode> WithFilter(std::unique_ptr<PlanNode> input,
                                     const std::vector<arrow::compute::Expression>& conjuncts,
                                     bool push_into_scan = false);

/// (a AND x) OR (b AND x) is x AND ((a) OR (b)): the conjuncts of `e` with the conditions
/// common to every OR branch factored out (TPC-H Q19 repeats its join key in every branch).
std::vector<arrow::compute::Expression> FactorOr(const arrow::compute::Expression& e);

/// `relations` joined by the equalities among `conditions`, each relation's own conditions
/// pushed into it, the rest filtered after the joins. Conditions that read a column of none of
/// `relations` (a scalar subquery's result, joined later) go to `rest`. Raises
/// `*largest_build` to the most rows any join built here is estimated to hash. A relation with
/// no equality to the others is a "not supported: a cross join" error.
///
/// The relation estimated largest after its filters probes; each step then hashes the connected
/// relation whose join multiplies the rows least (rows after filters per distinct key value),
/// ties going to the smaller relation.
arrow::Result<Relation> OrderJoins(std::vector<Relation> relations,
                                   const std::vector<arrow::compute::Expression>& conditions,
                                   std::vector<arrow::compute::Expression>* rest,
                                   double* largest_build);

}  // namespace sluice::sql
