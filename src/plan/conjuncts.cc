#include "plan/conjuncts.h"

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
