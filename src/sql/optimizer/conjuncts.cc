#include "sql/optimizer/conjuncts.h"

#include <arrow/compute/api.h>

namespace sluice::sql {

namespace cp = arrow::compute;

std::optional<std::pair<std::string, std::string>> InnerOuterEquality(
    const arrow::compute::Expression& e, const std::set<std::string>& inner) {
  auto columns = ColumnEquality(e);
  if (!columns) return std::nullopt;
  auto [a, b] = std::move(*columns);
  if (!inner.count(a)) std::swap(a, b);
  if (!inner.count(a) || inner.count(b)) return std::nullopt;
  return std::make_pair(std::move(a), std::move(b));
}

std::vector<cp::Expression> ConjunctsOf(const cp::Expression& predicate) {
  std::vector<cp::Expression> all, out;
  Conjuncts(predicate, &all);
  for (auto& c : all) {
    if (!c.Equals(cp::literal(true))) out.push_back(std::move(c));
  }
  return out;
}

cp::Expression AndOf(const std::vector<cp::Expression>& conjuncts) {
  if (conjuncts.empty()) return cp::literal(true);
  return conjuncts.size() == 1 ? conjuncts[0] : cp::and_(conjuncts);
}

}  // namespace sluice::sql
