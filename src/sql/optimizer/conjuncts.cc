#include "sql/optimizer/conjuncts.h"

namespace sluice::sql {

std::optional<std::pair<std::string, std::string>> InnerOuterEquality(
    const arrow::compute::Expression& e, const std::set<std::string>& inner) {
  auto columns = ColumnEquality(e);
  if (!columns) return std::nullopt;
  auto [a, b] = std::move(*columns);
  if (!inner.count(a)) std::swap(a, b);
  if (!inner.count(a) || inner.count(b)) return std::nullopt;
  return std::make_pair(std::move(a), std::move(b));
}

}  // namespace sluice::sql
