// An expression written back as SQL-like text, for error messages: Arrow's own text spells
// every call as a function with all of its options ("divide_checked(7, subtract_checked(x, 1))",
// a cast's eight flags), and plan columns carry the ids that keep them unique ("x#3").
#pragma once

#include <arrow/compute/expression.h>

#include <map>
#include <string>
#include <string_view>

namespace sluice::plan {

/// A plan column's name as the query wrote it, without the id that makes it unique in the plan:
/// "l_orderkey#3" becomes "l_orderkey".
std::string WithoutColumnId(std::string_view name);

/// What a hidden plan column (a name starting "__": an aggregate's result, the argument it
/// aggregates, a window's input) computes, as text: "sum(l_quantity)".
struct ColumnText {
  std::string text;
  /// An operator's text ("a * (1 - b)"), which needs parentheses inside another operator.
  bool infix = false;
  /// An aggregate's result, which a final aggregate over it only combines.
  bool aggregate = false;
};
/// By column name.
using ColumnTexts = std::map<std::string, ColumnText>;

/// `expression` as text close to the SQL it came from: operators infix, casts as
/// CAST(x AS type), column names without their ids, strings quoted. "7 / (x - 1) > 1". A
/// column in `texts` reads as what it computes: "sum(l_quantity) > 300", not "__agg3 > 300".
std::string ExpressionText(const arrow::compute::Expression& expression,
                           const ColumnTexts* texts = nullptr);

/// Whether ExpressionText writes `expression` as an operator.
bool IsInfixText(const arrow::compute::Expression& expression);

}  // namespace sluice::plan
