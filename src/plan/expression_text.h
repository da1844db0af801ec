// An expression written back as SQL-like text, for error messages: Arrow's own text spells
// every call as a function with all of its options ("divide_checked(7, subtract_checked(x, 1))",
// a cast's eight flags), and plan columns carry the ids that keep them unique ("x#3").
#pragma once

#include <arrow/compute/expression.h>

#include <string>
#include <string_view>

namespace sluice::plan {

/// A plan column's name as the query wrote it, without the id that makes it unique in the plan:
/// "l_orderkey#3" becomes "l_orderkey".
std::string WithoutColumnId(std::string_view name);

/// `expression` as text close to the SQL it came from: operators infix, casts as
/// CAST(x AS type), column names without their ids, strings quoted. "7 / (x - 1) > 1".
std::string ExpressionText(const arrow::compute::Expression& expression);

}  // namespace sluice::plan
