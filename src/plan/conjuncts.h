// The parts of AND and OR trees of Arrow compute expressions: what the binder splits WHERE into,
// what estimates multiply or add, and what a scan prunes row groups by, one at a time.
#pragma once

#include <arrow/compute/expression.h>

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sluice::plan {

/// The operands of nested calls to `function` or its "_kleene" form (Arrow nests a AND b AND
/// c as and(and(a, b), c)); an expression that is no such call is its own single operand.
void Flatten(const arrow::compute::Expression& e, const std::string& function,
             std::vector<arrow::compute::Expression>* out);

/// The conjuncts of an AND tree, appended to `out`.
void Conjuncts(const arrow::compute::Expression& e, std::vector<arrow::compute::Expression>* out);

/// The disjuncts of an OR tree, appended to `out`.
void Disjuncts(const arrow::compute::Expression& e, std::vector<arrow::compute::Expression>* out);

/// For `x = y` between two columns (named references): the two names, else none.
std::optional<std::pair<std::string, std::string>> ColumnEquality(
    const arrow::compute::Expression& e);

/// a IS DISTINCT FROM b, as SQL means it (never NULL): `differ` (a <> b, its operands cast to
/// a common type) where both are known, else whether just one of `a` and `b` is NULL. Its NOT
/// is a IS NOT DISTINCT FROM b, which NotDistinctOperands reads back.
arrow::compute::Expression IsDistinctFrom(arrow::compute::Expression differ,
                                          arrow::compute::Expression a,
                                          arrow::compute::Expression b);

/// For NOT IsDistinctFrom(x <> y, a, b): x and y, which a join compares with NULLs equal; else
/// none.
std::optional<std::pair<arrow::compute::Expression, arrow::compute::Expression>>
NotDistinctOperands(const arrow::compute::Expression& e);

/// The names of the columns `e` reads (its named field references), added to `out`.
void AddColumnNames(const arrow::compute::Expression& e, std::set<std::string>* out);

/// The names of the columns `e` reads.
std::set<std::string> ColumnNames(const arrow::compute::Expression& e);

}  // namespace sluice::plan
