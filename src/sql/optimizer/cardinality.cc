#include "sql/optimizer/cardinality.h"

#include <arrow/compute/api.h>
#include <arrow/scalar.h>

#include <algorithm>
#include <optional>

#include "sql/optimizer/conjuncts.h"

namespace sluice::sql {

namespace cp = arrow::compute;

namespace {

// `column < constant` and the like, on a column whose range statistics know (dates as days).
struct RangeCondition {
  std::string column;
  double value;
  bool upper;  // keeps values below `value`
};

std::optional<RangeCondition> AsRange(const cp::Expression& e, const Cardinality& r) {
  const cp::Expression::Call* call = e.call();
  if (call == nullptr || call->arguments.size() != 2) return std::nullopt;
  const std::string& f = call->function_name;
  if (f != "less" && f != "less_equal" && f != "greater" && f != "greater_equal") {
    return std::nullopt;
  }
  const auto* ref = call->arguments[0].field_ref();
  const auto* lit = call->arguments[1].literal();
  bool column_left = true;
  if (ref == nullptr) {
    ref = call->arguments[1].field_ref();
    lit = call->arguments[0].literal();
    column_left = false;
  }
  if (ref == nullptr || ref->name() == nullptr || lit == nullptr || !lit->is_scalar() ||
      !lit->scalar()->is_valid || !r.ranges.count(*ref->name())) {
    return std::nullopt;
  }
  const auto& scalar = *lit->scalar();
  double v;
  if (scalar.type->id() == arrow::Type::INT64) {
    v = static_cast<double>(static_cast<const arrow::Int64Scalar&>(scalar).value);
  } else if (scalar.type->id() == arrow::Type::INT32) {
    v = static_cast<const arrow::Int32Scalar&>(scalar).value;
  } else if (scalar.type->id() == arrow::Type::DATE32) {
    v = static_cast<const arrow::Date32Scalar&>(scalar).value;
  } else {
    return std::nullopt;
  }
  return RangeCondition{*ref->name(), v, (f == "less" || f == "less_equal") == column_left};
}

}  // namespace

double ConjunctionSelectivity(const std::vector<cp::Expression>& conjuncts, const Cardinality& r) {
  std::map<std::string, std::pair<double, double>> windows;  // column -> [low, high]
  double s = 1;
  bool any_range_term = false;
  for (const auto& c : conjuncts) {
    auto range = AsRange(c, r);
    if (!range) {
      s *= Selectivity(c, r);
      continue;
    }
    any_range_term = true;
    const auto& [lo, hi] = r.ranges.at(range->column);
    auto [it, inserted] = windows.emplace(
        range->column, std::make_pair(static_cast<double>(lo), static_cast<double>(hi)));
    if (range->upper) {
      it->second.second = std::min(it->second.second, range->value);
    } else {
      it->second.first = std::max(it->second.first, range->value);
    }
  }
  if (!any_range_term) return s;
  for (const auto& [column, window] : windows) {
    const auto& [lo, hi] = r.ranges.at(column);
    const double width = static_cast<double>(hi) - static_cast<double>(lo) + 1;
    s *= std::clamp((window.second - window.first + 1) / width, kMinRangeSelectivity, 1.0);
  }
  return s;
}

double Selectivity(const cp::Expression& e, const Cardinality& r) {
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return kDefaultSelectivity;
  const std::string& f = call->function_name;
  auto column_distinct = [&]() -> double {
    for (const auto& a : call->arguments) {
      if (const auto* ref = a.field_ref(); ref != nullptr && ref->name() != nullptr) {
        if (r.distinct.count(*ref->name())) return std::max(1.0, r.DistinctBound(*ref->name()));
      }
    }
    return kUnknownDistinct;
  };
  if (f == "and_kleene" || f == "and") {
    std::vector<cp::Expression> conjuncts;
    Conjuncts(e, &conjuncts);
    return ConjunctionSelectivity(conjuncts, r);
  }
  if (f == "or_kleene" || f == "or") {
    double s = 0;
    for (const auto& a : call->arguments) s += Selectivity(a, r);
    return std::min(1.0, s);
  }
  if (f == "invert") return 1 - Selectivity(call->arguments[0], r);
  if (f == "equal") return 1 / column_distinct();
  if (f == "not_equal") return 1 - 1 / column_distinct();
  if (f == "less" || f == "less_equal" || f == "greater" || f == "greater_equal") {
    return AsRange(e, r) ? ConjunctionSelectivity({e}, r) : kRangeSelectivity;
  }
  if (f == "match_like") return kLikeSelectivity;
  if (f == "is_in") {
    const auto* options = static_cast<const cp::SetLookupOptions*>(call->options.get());
    const double n = options != nullptr && options->value_set.is_array()
                         ? static_cast<double>(options->value_set.length())
                         : 1;
    return std::min(1.0, n / column_distinct());
  }
  return kDefaultSelectivity;
}

double JoinEstimate(double left, double right, double key_distinct) {
  return std::max(1.0, left * right / key_distinct);
}

double SemiJoinEstimate(double rows) { return std::max(1.0, rows / kSemiJoinReduction); }

double HavingEstimate(double groups) { return groups / kHavingReduction; }

}  // namespace sluice::sql
