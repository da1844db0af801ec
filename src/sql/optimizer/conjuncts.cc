#include "sql/optimizer/conjuncts.h"

namespace sluice::sql {

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

}  // namespace sluice::sql
