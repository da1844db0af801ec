#include "plan/conjuncts.h"

#include <arrow/compute/api_scalar.h>

namespace sluice::plan {

namespace cp = arrow::compute;

void Flatten(const cp::Expression& e, const std::string& function,
             std::vector<cp::Expression>* out) {
  const cp::Expression::Call* call = e.call();
  if (call != nullptr &&
      (call->function_name == function || call->function_name == function + "_kleene")) {
    for (const auto& a : call->arguments) Flatten(a, function, out);
    return;
  }
  out->push_back(e);
}

void Conjuncts(const cp::Expression& e, std::vector<cp::Expression>* out) {
  Flatten(e, "and", out);
}

void Disjuncts(const cp::Expression& e, std::vector<cp::Expression>* out) { Flatten(e, "or", out); }

std::optional<std::pair<std::string, std::string>> ColumnEquality(const cp::Expression& e) {
  const cp::Expression::Call* call = e.call();
  if (call == nullptr || call->function_name != "equal" || call->arguments.size() != 2) {
    return std::nullopt;
  }
  const arrow::FieldRef* x = call->arguments[0].field_ref();
  const arrow::FieldRef* y = call->arguments[1].field_ref();
  if (x == nullptr || y == nullptr || x->name() == nullptr || y->name() == nullptr) {
    return std::nullopt;
  }
  return std::make_pair(*x->name(), *y->name());
}

cp::Expression IsDistinctFrom(cp::Expression differ, cp::Expression a, cp::Expression b) {
  return cp::call(
      "coalesce",
      {std::move(differ), cp::call("xor", {cp::is_null(std::move(a)), cp::is_null(std::move(b))})});
}

std::optional<std::pair<cp::Expression, cp::Expression>> NotDistinctOperands(
    const cp::Expression& e) {
  const cp::Expression::Call* invert = e.call();
  if (invert == nullptr || invert->function_name != "invert" || invert->arguments.size() != 1) {
    return std::nullopt;
  }
  const cp::Expression::Call* coalesce = invert->arguments[0].call();
  if (coalesce == nullptr || coalesce->function_name != "coalesce" ||
      coalesce->arguments.size() != 2) {
    return std::nullopt;
  }
  const cp::Expression::Call* differ = coalesce->arguments[0].call();
  const cp::Expression::Call* one_null = coalesce->arguments[1].call();
  if (differ == nullptr || differ->function_name != "not_equal" || differ->arguments.size() != 2 ||
      one_null == nullptr || one_null->function_name != "xor" || one_null->arguments.size() != 2) {
    return std::nullopt;
  }
  for (const auto& n : one_null->arguments) {
    const cp::Expression::Call* is_null = n.call();
    if (is_null == nullptr || is_null->function_name != "is_null") return std::nullopt;
  }
  return std::make_pair(differ->arguments[0], differ->arguments[1]);
}

void AddColumnNames(const cp::Expression& e, std::set<std::string>* out) {
  for (const auto& ref : cp::FieldsInExpression(e)) {
    if (ref.name() != nullptr) out->insert(*ref.name());
  }
}

std::set<std::string> ColumnNames(const cp::Expression& e) {
  std::set<std::string> out;
  AddColumnNames(e, &out);
  return out;
}

}  // namespace sluice::plan
