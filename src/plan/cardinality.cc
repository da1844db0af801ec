#include "plan/cardinality.h"

#include <algorithm>

namespace sluice::plan {

double Cardinality::DistinctBound(const std::string& id) const {
  auto it = distinct.find(id);
  return it == distinct.end() ? rows : std::min<double>(rows, static_cast<double>(it->second));
}

}  // namespace sluice::plan
