// The parts of AND and OR trees (plan/conjuncts.h, shared with the executor), and how a
// subquery's condition on the outer query becomes a join key.
#pragma once

#include <arrow/compute/expression.h>

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "plan/conjuncts.h"

namespace sluice::sql {

using plan::ColumnEquality;
using plan::Conjuncts;
using plan::Disjuncts;
using plan::Flatten;

/// The conjuncts of `predicate` but the literal trues (a level's WHERE as the binder leaves it).
std::vector<arrow::compute::Expression> ConjunctsOf(const arrow::compute::Expression& predicate);

/// The AND of `conjuncts`: true for none, the one itself for one.
arrow::compute::Expression AndOf(const std::vector<arrow::compute::Expression>& conjuncts);

/// For `x = y` between two columns of which exactly one is in `inner`: that one, then the
/// other. It is how a subquery's condition on the outer query becomes a join key.
std::optional<std::pair<std::string, std::string>> InnerOuterEquality(
    const arrow::compute::Expression& e, const std::set<std::string>& inner);

}  // namespace sluice::sql
