// Constant folding and boolean simplification of a plan's expressions: a subexpression that
// reads no column becomes its value (0.06 - 0.01 is 0.05), and the identities of SQL's
// three-valued AND, OR and NOT drop what cannot change a result (x AND true is x).
//
// The binder folds too, with FoldConstantSubtrees, as it binds: its typing rules look at
// literals (an integer literal next to a decimal takes just its digits; LIKE patterns, IN lists
// and SUBSTRING positions must be constants), the estimates that order joins read them (a range
// on a date needs the folded date), and a constant that cannot be evaluated (1 / 0) is the
// user's error at its SQL position. The "constant_folding" pass then simplifies whatever is
// still foldable in the bound plan: expressions the binder builds after typing (an aggregate
// ratio's casts to double), the select list after GROUP BY, and the boolean identities.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/result.h>

#include "sql/plan_node.h"

namespace sluice::sql {

/// `e` with every constant subtree (a call that reads no column) replaced by its value. A
/// subtree whose evaluation fails is an error.
arrow::Result<arrow::compute::Expression> FoldConstantSubtrees(const arrow::compute::Expression& e);

/// `e` simplified, bottom-up: constant subtrees folded (one whose evaluation fails is kept, to
/// fail when the query runs, as it would have); x AND true and x OR false become x, x AND false
/// becomes false and x OR true true (Kleene logic, as SQL's and Arrow's *_kleene kernels: these
/// hold for a NULL x too; the NULL-propagating "and"/"or" kernels get only the first two); NOT
/// NOT x becomes x.
arrow::compute::Expression Simplify(const arrow::compute::Expression& e);

/// Simplifies every expression of `plan` (filters, projections, join and scan filters); a
/// Filter whose predicate becomes true goes.
void SimplifyExpressions(PlanNode* plan);

}  // namespace sluice::sql
