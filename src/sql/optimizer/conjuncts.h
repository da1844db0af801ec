// The parts of AND and OR trees of Arrow compute expressions: what the binder splits WHERE
// into, and what estimates multiply or add.
#pragma once

#include <arrow/compute/expression.h>

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sluice::sql {

/// The operands of nested calls to `function` or its "_kleene" form (Arrow nests a AND b AND
/// c as and(and(a, b), c)); an expression that is no such call is its own single operand.
void Flatten(const arrow::compute::Expression& e, const std::string& function,
             std::vector<arrow::compute::Expression>* out);

/// The conjuncts of an AND tree, appended to `out`.
void Conjuncts(const arrow::compute::Expression& e, std::vector<arrow::compute::Expression>* out);

/// The disjuncts of an OR tree, appended to `out`.
void Disjuncts(const arrow::compute::Expression& e, std::vector<arrow::compute::Expression>* out);

/// For `x = y` between two columns of which exactly one is in `inner`: that one, then the
/// other. It is how a subquery's condition on the outer query becomes a join key.
std::optional<std::pair<std::string, std::string>> InnerOuterEquality(
    const arrow::compute::Expression& e, const std::set<std::string>& inner);

}  // namespace sluice::sql
