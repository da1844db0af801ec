#include "sql/join_key_ranges.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/plan_executor.h"
#include "sql/optimizer/conjuncts.h"
#include "sql/optimizer/plan_rewrite.h"

namespace sluice::sql {

namespace cp = arrow::compute;
using Kind = PlanNode::Kind;

namespace {

// The scan whose output `*name` passes up unchanged to `node`'s output, through filters,
// projections that rename it, and the sides of joins that keep their rows, with `*name` set to
// the scan's name for it; null where anything else is in the way or `*name` is computed.
PlanNode* ProbeScan(PlanNode* node, std::string* name) {
  while (node != nullptr) {
    switch (node->kind) {
      case Kind::kFilter:
        node = node->input.get();
        continue;
      case Kind::kProject: {
        auto source = SourceColumn(*node, *name);
        if (!source) return nullptr;
        *name = *source;
        node = node->input.get();
        continue;
      }
      case Kind::kJoin: {
        if (node->join_type == JoinType::kFull) return nullptr;
        const auto in = node->input->OutputNames();
        if (std::find(in.begin(), in.end(), *name) != in.end()) {
          node = node->input.get();
        } else if (node->join_type == JoinType::kInner) {
          node = node->right.get();
        } else {
          return nullptr;
        }
        continue;
      }
      case Kind::kScan:
        return std::find(node->names.begin(), node->names.end(), *name) != node->names.end()
                   ? node
                   : nullptr;
      default:
        return nullptr;
    }
  }
  return nullptr;
}

// The scan under `node` where `node` is filters and projections over one scan of a table of at
// most kKeyRangeMaxBuildRows rows (read once more by a first pass, so cheaply), and whether any
// of them filters; null otherwise.
const PlanNode* SmallTableScan(const PlanNode& node, bool* filtered) {
  *filtered = false;
  const PlanNode* n = &node;
  while (n->kind == Kind::kFilter || n->kind == Kind::kProject) {
    *filtered = *filtered || n->kind == Kind::kFilter;
    n = n->input.get();
  }
  return n->kind == Kind::kScan && n->table != nullptr && !n->split &&
                 n->table->num_rows <= kKeyRangeMaxBuildRows
             ? n
             : nullptr;
}

// Whether `node` is filters and projections over one scan of a small table, with filters
// estimated to keep at most kKeyRangeMaxShare of its rows (`estimate`).
bool IsFilteredDimension(const PlanNode& node, double estimate) {
  bool filtered = false;
  const PlanNode* scan = SmallTableScan(node, &filtered);
  return filtered && scan != nullptr && estimate >= 0 &&
         estimate <= kKeyRangeMaxShare * static_cast<double>(scan->table->num_rows);
}

// Whether the row groups of `table` are nearly disjoint spans of file column `column`.
bool Clustered(const TableSource& table, const std::string& column) {
  const auto it = table.row_group_int_ranges.find(column);
  if (it == table.row_group_int_ranges.end()) return false;
  int64_t lo = 0, hi = 0;
  double spans = 0;
  size_t groups = 0;
  for (const auto& file : it->second) {
    for (const auto& [min, max] : file) {
      if (min > max) return false;  // a row group without statistics
      lo = groups == 0 ? min : std::min(lo, min);
      hi = groups == 0 ? max : std::max(hi, max);
      spans += static_cast<double>(max) - static_cast<double>(min) + 1;
      ++groups;
    }
  }
  return groups >= 2 && spans < kClusteredSpanRatio * (static_cast<double>(hi) - lo + 1);
}

// The least and greatest value of file column `column` over every row group of `table`, from
// their statistics; nothing where a row group has none.
std::optional<std::pair<int64_t, int64_t>> ColumnSpan(const TableSource& table,
                                                      const std::string& column) {
  const auto it = table.row_group_int_ranges.find(column);
  if (it == table.row_group_int_ranges.end()) return std::nullopt;
  std::optional<std::pair<int64_t, int64_t>> span;
  for (const auto& file : it->second) {
    for (const auto& [min, max] : file) {
      if (min > max) return std::nullopt;
      span = span ? std::pair{std::min(span->first, min), std::max(span->second, max)}
                  : std::pair{min, max};
    }
  }
  return span;
}

// Whether some row group of `table` holds no value of file column `column` in [lo, hi].
bool LeavesOutARowGroup(const TableSource& table, const std::string& column, int64_t lo,
                        int64_t hi) {
  const auto it = table.row_group_int_ranges.find(column);
  if (it == table.row_group_int_ranges.end()) return false;
  for (const auto& file : it->second) {
    for (const auto& [min, max] : file) {
      if (min <= max && (max < lo || min > hi)) return true;
    }
  }
  return false;
}

// `text` without the `#n` that make each reading's column names its own.
std::string WithoutIds(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '#' && i + 1 < text.size() &&
        std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      while (i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) ++i;
      continue;
    }
    out += text[i];
  }
  return out;
}

// An inclusive range of integer values.
struct Range {
  int64_t lo;
  int64_t hi;
};

// First passes already run, by the text of the side and its key: a WITH query read several
// times (TPC-DS q14a joins the same days of date_dim 35 times) reads them once. Nothing: the
// side has no row with a key, or its keys do not fit an int64.
using RangeMemo = std::map<std::string, std::optional<Range>>;

// The min and max of integer column `key` over the rows of `side` (a copy of it runs, once per
// text); nothing where it has no non-NULL key, or they do not fit an int64.
arrow::Result<std::optional<Range>> KeyRange(const PlanNode& side, const std::string& key,
                                             RangeMemo* memo) {
  const std::string text = WithoutIds(side.Explain() + " key " + key);
  if (auto known = memo->find(text); known != memo->end()) return known->second;
  auto project = plan::MakeNode(Kind::kProject, CopyPlan(side));
  project->expressions.push_back(cp::field_ref(key));
  project->names.push_back("__range_key");
  auto partial = plan::MakeNode(Kind::kAggregate, std::move(project));
  partial->aggregates = {{"min", "__range_key", "__range_min_p"},
                         {"max", "__range_key", "__range_max_p"}};
  auto final = plan::MakeNode(Kind::kAggregate, std::move(partial));
  final->final_phase = true;
  final->aggregates = {{"min", "__range_min_p", "__range_min"},
                       {"max", "__range_max_p", "__range_max"}};
  ARROW_ASSIGN_OR_RAISE(auto rows, exec::Execute(*final, {"lo", "hi"}, nullptr));
  std::optional<Range> range;
  if (rows->num_rows() == 1) {
    ARROW_ASSIGN_OR_RAISE(auto lo, rows->column(0)->GetScalar(0));
    ARROW_ASSIGN_OR_RAISE(auto hi, rows->column(1)->GetScalar(0));
    // A uint64 bound past int64 bounds nothing.
    auto lo64 = lo->is_valid ? lo->CastTo(arrow::int64()) : arrow::Status::Invalid("NULL");
    auto hi64 = hi->is_valid ? hi->CastTo(arrow::int64()) : arrow::Status::Invalid("NULL");
    if (lo64.ok() && hi64.ok()) {
      range = Range{static_cast<const arrow::Int64Scalar&>(**lo64).value,
                    static_cast<const arrow::Int64Scalar&>(**hi64).value};
    }
  }
  (*memo)[text] = range;
  return range;
}

// `column >= lo AND column <= hi`, with the bounds in `type`; nothing where they do not fit it.
std::optional<cp::Expression> Between(const std::string& column, const Range& range,
                                      const std::shared_ptr<arrow::DataType>& type) {
  auto lo = arrow::Int64Scalar(range.lo).CastTo(type);
  auto hi = arrow::Int64Scalar(range.hi).CastTo(type);
  if (!lo.ok() || !hi.ok()) return std::nullopt;
  return cp::and_(cp::greater_equal(cp::field_ref(column), cp::literal(std::move(*lo))),
                  cp::less_equal(cp::field_ref(column), cp::literal(std::move(*hi))));
}

// Operators deeper than this under a join's side are not looked into (TPC-DS q72's date_dim
// reading that bounds its inventory's days is 16 down).
constexpr int kMaxRangeDepth = 32;

// A range that holds every value of integer column `key` in the rows of `side` that can meet a
// row above, read cheaply; nothing where there is none. `conditions`, ranges of `side`'s columns
// that joins above showed the rows that meet theirs to be in, may narrow it. Through inner joins
// (to the side that has `key`, the other side's keys each bounding its partner), filters and
// projections, down to filters and projections over one scan of a small table, which a first
// pass reads under `conditions` (TPC-DS q72: the week of each of 1999's days bounds the days
// of another reading of date_dim, which its inventory join reads).
arrow::Result<std::optional<Range>> SideRange(const PlanNode& side, const std::string& key,
                                              const std::map<std::string, Range>& conditions,
                                              RangeMemo* memo, int depth) {
  if (depth > kMaxRangeDepth) return std::nullopt;
  bool filtered = false;
  if (SmallTableScan(side, &filtered) != nullptr) {
    // A whole table's range would rule out nothing that its keys' range in the footers does not.
    if (!filtered && conditions.empty()) return std::nullopt;
    ARROW_ASSIGN_OR_RAISE(auto schema, OutputSchema(side));
    std::vector<cp::Expression> conjuncts;
    for (const auto& [column, range] : conditions) {
      const auto field = schema->GetFieldByName(column);
      if (field == nullptr || !arrow::is_integer(field->type()->id())) continue;
      if (auto between = Between(column, range, field->type())) conjuncts.push_back(*between);
    }
    if (conjuncts.empty()) return KeyRange(side, key, memo);
    auto filter = plan::MakeNode(Kind::kFilter, CopyPlan(side));
    filter->predicate = AndOf(conjuncts);
    return KeyRange(*filter, key, memo);
  }
  switch (side.kind) {
    case Kind::kFilter:
      return SideRange(*side.input, key, conditions, memo, depth + 1);
    case Kind::kProject: {
      auto source = SourceColumn(side, key);
      if (!source) return std::nullopt;
      std::map<std::string, Range> below;
      for (const auto& [column, range] : conditions) {
        if (auto from = SourceColumn(side, column)) below.emplace(*from, range);
      }
      return SideRange(*side.input, *source, below, memo, depth + 1);
    }
    case Kind::kJoin: {
      if (side.join_type != JoinType::kInner || side.null_equal_keys || side.input == nullptr ||
          side.right == nullptr || side.left_keys.size() != side.right_keys.size()) {
        return std::nullopt;
      }
      const bool in_left = HasColumn(*side.input, key);
      const PlanNode& keyed = in_left ? *side.input : *side.right;
      const PlanNode& other = in_left ? *side.right : *side.input;
      const auto& keyed_keys = in_left ? side.left_keys : side.right_keys;
      const auto& other_keys = in_left ? side.right_keys : side.left_keys;
      std::map<std::string, Range> keyed_conditions, other_conditions;
      for (const auto& [column, range] : conditions) {
        if (HasColumn(keyed, column)) {
          keyed_conditions.emplace(column, range);
        } else if (HasColumn(other, column)) {
          other_conditions.emplace(column, range);
        }
      }
      // Each key of the keyed side meets the other side's partner: within that one's range.
      ARROW_ASSIGN_OR_RAISE(auto other_schema, OutputSchema(other));
      for (size_t i = 0; i < other_keys.size(); ++i) {
        const auto field = other_schema->GetFieldByName(other_keys[i]);
        if (field == nullptr || !arrow::is_integer(field->type()->id())) continue;
        ARROW_ASSIGN_OR_RAISE(auto range,
                              SideRange(other, other_keys[i], other_conditions, memo, depth + 1));
        if (!range) continue;
        auto [at, added] = keyed_conditions.emplace(keyed_keys[i], *range);
        if (!added) {
          at->second = {std::max(at->second.lo, range->lo), std::min(at->second.hi, range->hi)};
        }
      }
      return SideRange(keyed, key, keyed_conditions, memo, depth + 1);
    }
    default:
      return std::nullopt;
  }
}

arrow::Status BoundJoin(PlanNode* join, RangeMemo* memo) {
  const bool right_built = (join->join_type == JoinType::kInner && !join->build_input) ||
                           (join->join_type == JoinType::kSemi && !join->build_input);
  if (!right_built || join->null_equal_keys || join->right == nullptr) {
    return arrow::Status::OK();
  }
  const bool dimension = IsFilteredDimension(*join->right, join->right_estimate);
  for (size_t i = 0; i < join->left_keys.size() && i < join->right_keys.size(); ++i) {
    std::string name = join->left_keys[i];
    PlanNode* scan = ProbeScan(join->input.get(), &name);
    if (scan == nullptr || scan->split || scan->table == nullptr ||
        scan->table->format != "parquet") {
      continue;
    }
    const auto at = std::find(scan->names.begin(), scan->names.end(), name);
    const std::string& column = scan->columns[at - scan->names.begin()];
    if (!Clustered(*scan->table, column)) continue;
    ARROW_ASSIGN_OR_RAISE(auto scan_schema, OutputSchema(*scan));
    const auto field = scan_schema->GetFieldByName(name);
    if (field == nullptr || !arrow::is_integer(field->type()->id())) continue;
    // A filtered dimension is read as it is; another side where it bounds the key cheaply.
    std::optional<Range> range;
    if (dimension) {
      ARROW_ASSIGN_OR_RAISE(range, KeyRange(*join->right, join->right_keys[i], memo));
    } else {
      ARROW_ASSIGN_OR_RAISE(range, SideRange(*join->right, join->right_keys[i], {}, memo, 0));
    }
    if (!range) continue;  // no build rows (the join has no output), or no bound
    // A range that leaves out no row group would only lengthen the scan's filter.
    if (!LeavesOutARowGroup(*scan->table, column, range->lo, range->hi)) continue;
    auto bound = Between(name, *range, field->type());
    if (!bound) continue;
    scan->scan_filter =
        scan->scan_filter.Equals(cp::literal(true)) ? *bound : cp::and_(scan->scan_filter, *bound);
    // Where the range is a small part of the column's values, the rows of the row groups read
    // that fall outside it are dropped by a filter on the scan, not by the join, which would hash
    // and probe each of them.
    const auto span = ColumnSpan(*scan->table, column);
    if (span &&
        static_cast<double>(range->hi) - range->lo + 1 <=
            kKeyRangeRowFilterShare * (static_cast<double>(span->second) - span->first + 1)) {
      auto read = std::make_unique<PlanNode>();
      auto& fields = static_cast<plan::PlanNodeFields&>(*scan);
      static_cast<plan::PlanNodeFields&>(*read) = std::move(fields);
      fields = plan::PlanNodeFields{};
      scan->kind = Kind::kFilter;
      scan->predicate = *bound;
      scan->input = std::move(read);
    }
  }
  return arrow::Status::OK();
}

arrow::Status Visit(PlanNode* plan, RangeMemo* memo) {
  if (plan == nullptr) return arrow::Status::OK();
  ARROW_RETURN_NOT_OK(Visit(plan->input.get(), memo));
  ARROW_RETURN_NOT_OK(Visit(plan->right.get(), memo));
  if (plan->kind == Kind::kJoin) ARROW_RETURN_NOT_OK(BoundJoin(plan, memo));
  return arrow::Status::OK();
}

}  // namespace

arrow::Status BoundJoinKeyRanges(PlanNode* plan) {
  RangeMemo memo;
  return Visit(plan, &memo);
}

}  // namespace sluice::sql
