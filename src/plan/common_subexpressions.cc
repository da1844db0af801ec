#include "plan/common_subexpressions.h"

#include <set>
#include <unordered_map>

#include "plan/library_functions.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

bool Conditional(const std::string& function) {
  return function == "if_else" || function == "case_when" || function == "coalesce" ||
         function == "choose";
}

size_t Size(const cp::Expression& e) {
  const auto* call = e.call();
  if (call == nullptr) return 1;
  size_t n = 1;
  for (const auto& a : call->arguments) n += Size(a);
  return n;
}

bool ReadsAColumn(const cp::Expression& e) {
  if (e.field_ref() != nullptr) return true;
  const auto* call = e.call();
  if (call == nullptr) return false;
  for (const auto& a : call->arguments) {
    if (ReadsAColumn(a)) return true;
  }
  return false;
}

using Counts = std::unordered_map<cp::Expression, int, cp::Expression::Hash>;

// Each call of `e` that could be shared, counted once per place.
void Count(const cp::Expression& e, Counts* counts) {
  const auto* call = e.call();
  if (call == nullptr) return;
  if (ReadsAColumn(e) && DependsOnArgumentsAlone(e)) ++(*counts)[e];
  if (Conditional(call->function_name)) return;
  for (const auto& a : call->arguments) Count(a, counts);
}

cp::Expression Replace(const cp::Expression& e, const cp::Expression& part,
                       const cp::Expression& with) {
  if (e.Equals(part)) return with;
  const auto* call = e.call();
  if (call == nullptr || Conditional(call->function_name)) return e;
  std::vector<cp::Expression> args;
  args.reserve(call->arguments.size());
  for (const auto& a : call->arguments) args.push_back(Replace(a, part, with));
  return cp::call(call->function_name, std::move(args), call->options);
}

}  // namespace

bool DependsOnArgumentsAlone(const cp::Expression& e) {
  const auto* call = e.call();
  if (call == nullptr) return true;
  if (call->function_name == "random" || ParseLibraryFunctionName(call->function_name)) {
    return false;
  }
  for (const auto& a : call->arguments) {
    if (!DependsOnArgumentsAlone(a)) return false;
  }
  return true;
}

CommonSubexpressions FactorCommonSubexpressions(const std::vector<cp::Expression>& expressions,
                                                const std::vector<std::string>& taken) {
  CommonSubexpressions out;
  out.expressions = expressions;
  std::set<std::string> names(taken.begin(), taken.end());
  for (;;) {
    Counts counts;
    for (const auto& e : out.expressions) Count(e, &counts);
    const cp::Expression* best = nullptr;
    size_t best_size = 0;
    for (const auto& [part, n] : counts) {
      const size_t size = Size(part);
      // Ties by text, so that a plan factors the same way on every run.
      if (n >= 2 &&
          (size > best_size || (size == best_size && part.ToString() < best->ToString()))) {
        best = &part;
        best_size = size;
      }
    }
    if (best == nullptr) return out;
    std::string name;
    for (size_t i = out.shared.size();; ++i) {
      name = "__common" + std::to_string(i);
      if (!names.count(name)) break;
    }
    names.insert(name);
    const cp::Expression part = *best;
    const cp::Expression ref = cp::field_ref(name);
    for (auto& e : out.expressions) e = Replace(e, part, ref);
    out.shared.push_back(part);
    out.names.push_back(name);
  }
}

}  // namespace sluice::plan
