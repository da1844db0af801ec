#include "exec/int_range_pruning.h"

#include <arrow/api.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

namespace sluice::exec {

namespace cp = arrow::compute;

namespace {

// The literal's value as an integer (dates as days), where it is an integer or a date.
std::optional<int64_t> IntValue(const cp::Expression& e) {
  const arrow::Datum* datum = e.literal();
  if (datum == nullptr || !datum->is_scalar() || !datum->scalar()->is_valid) return std::nullopt;
  const arrow::Scalar& scalar = *datum->scalar();
  if (scalar.type->id() == arrow::Type::DATE32) {
    return static_cast<const arrow::Date32Scalar&>(scalar).value;
  }
  if (!arrow::is_integer(scalar.type->id())) return std::nullopt;
  auto wide = scalar.CastTo(arrow::int64());
  if (!wide.ok()) return std::nullopt;
  return static_cast<const arrow::Int64Scalar&>(**wide).value;
}

// `column op value` as a comparison, with the column on the left.
struct Comparison {
  std::string column;
  std::string op;
  int64_t value;
};

std::optional<Comparison> AsComparison(const cp::Expression& e) {
  const cp::Expression::Call* call = e.call();
  if (call == nullptr || call->arguments.size() != 2) return std::nullopt;
  std::string op = call->function_name;
  if (op != "equal" && op != "less" && op != "less_equal" && op != "greater" &&
      op != "greater_equal") {
    return std::nullopt;
  }
  const cp::Expression* column = &call->arguments[0];
  const cp::Expression* literal = &call->arguments[1];
  if (column->field_ref() == nullptr) {
    std::swap(column, literal);
    if (op == "less")
      op = "greater";
    else if (op == "less_equal")
      op = "greater_equal";
    else if (op == "greater")
      op = "less";
    else if (op == "greater_equal")
      op = "less_equal";
  }
  const auto* ref = column->field_ref();
  if (ref == nullptr || ref->name() == nullptr) return std::nullopt;
  const auto value = IntValue(*literal);
  if (!value) return std::nullopt;
  return Comparison{*ref->name(), op, *value};
}

// Whether a value in [lo, hi] can satisfy `c`.
bool MayHold(const Comparison& c, int64_t lo, int64_t hi) {
  if (c.op == "equal") return lo <= c.value && c.value <= hi;
  if (c.op == "less") return lo < c.value;
  if (c.op == "less_equal") return lo <= c.value;
  if (c.op == "greater") return hi > c.value;
  return hi >= c.value;  // greater_equal
}

}  // namespace

std::set<int> IntRangeExcludes(const plan::TableSource& table, size_t file,
                               const std::vector<cp::Expression>& conjuncts, int* num_row_groups) {
  std::set<int> excluded;
  *num_row_groups = 0;
  for (const auto& [column, files] : table.row_group_int_ranges) {
    if (file < files.size()) {
      *num_row_groups = std::max(*num_row_groups, static_cast<int>(files[file].size()));
    }
  }
  for (const auto& conjunct : conjuncts) {
    const auto c = AsComparison(conjunct);
    if (!c) continue;
    // Statistics hold the physical integers: only where those are the values compared (not a
    // decimal's unscaled digits, nor an unsigned column's bits read as signed).
    const auto field = table.schema != nullptr ? table.schema->GetFieldByName(c->column) : nullptr;
    if (field == nullptr) continue;
    const auto id = field->type()->id();
    const bool is_signed = id == arrow::Type::INT8 || id == arrow::Type::INT16 ||
                           id == arrow::Type::INT32 || id == arrow::Type::INT64;
    if (!is_signed && id != arrow::Type::DATE32) continue;
    const auto ranges = table.row_group_int_ranges.find(c->column);
    if (ranges == table.row_group_int_ranges.end() || file >= ranges->second.size()) continue;
    const auto& groups = ranges->second[file];
    for (size_t rg = 0; rg < groups.size(); ++rg) {
      const auto [lo, hi] = groups[rg];
      if (lo > hi) continue;  // no statistics
      if (!MayHold(*c, lo, hi)) excluded.insert(static_cast<int>(rg));
    }
  }
  return excluded;
}

}  // namespace sluice::exec
