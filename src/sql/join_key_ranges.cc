#include "sql/join_key_ranges.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/plan_executor.h"
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

// Whether `node` is filters and projections over one scan of a small table, with filters
// estimated to keep at most kKeyRangeMaxShare of its rows (`estimate`).
bool IsFilteredDimension(const PlanNode& node, double estimate) {
  bool filtered = false;
  const PlanNode* n = &node;
  while (n->kind == Kind::kFilter || n->kind == Kind::kProject) {
    filtered = filtered || n->kind == Kind::kFilter;
    n = n->input.get();
  }
  return filtered && n->kind == Kind::kScan && n->table != nullptr && !n->split &&
         n->table->num_rows <= kKeyRangeMaxBuildRows && estimate >= 0 &&
         estimate <= kKeyRangeMaxShare * static_cast<double>(n->table->num_rows);
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

// The min and max of `key` over the rows of `side` (a copy of it runs); nulls where it has none.
arrow::Result<std::shared_ptr<arrow::Table>> KeyRange(const PlanNode& side,
                                                      const std::string& key) {
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
  return exec::Execute(*final, {"lo", "hi"}, nullptr);
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

// First passes already run, by the text of the side and its key: a WITH query read several
// times (TPC-DS q14a joins the same days of date_dim 35 times) reads them once.
using RangeMemo = std::map<std::string, std::shared_ptr<arrow::Table>>;

arrow::Status BoundJoin(PlanNode* join, RangeMemo* memo) {
  const bool right_built = (join->join_type == JoinType::kInner && !join->build_input) ||
                           (join->join_type == JoinType::kSemi && !join->build_input);
  if (!right_built || join->null_equal_keys || join->right == nullptr ||
      !IsFilteredDimension(*join->right, join->right_estimate)) {
    return arrow::Status::OK();
  }
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
    std::shared_ptr<arrow::Table>& range =
        (*memo)[WithoutIds(join->right->Explain() + " key " + join->right_keys[i])];
    if (range == nullptr) {
      ARROW_ASSIGN_OR_RAISE(range, KeyRange(*join->right, join->right_keys[i]));
    }
    if (range->num_rows() != 1) continue;
    ARROW_ASSIGN_OR_RAISE(auto lo, range->column(0)->GetScalar(0));
    ARROW_ASSIGN_OR_RAISE(auto hi, range->column(1)->GetScalar(0));
    if (!lo->is_valid || !hi->is_valid) continue;  // no build rows: the join has no output
    ARROW_ASSIGN_OR_RAISE(lo, lo->CastTo(field->type()));
    ARROW_ASSIGN_OR_RAISE(hi, hi->CastTo(field->type()));
    // A range that leaves out no row group would only lengthen the scan's filter.
    ARROW_ASSIGN_OR_RAISE(auto lo64, lo->CastTo(arrow::int64()));
    ARROW_ASSIGN_OR_RAISE(auto hi64, hi->CastTo(arrow::int64()));
    if (!LeavesOutARowGroup(*scan->table, column,
                            static_cast<const arrow::Int64Scalar&>(*lo64).value,
                            static_cast<const arrow::Int64Scalar&>(*hi64).value)) {
      continue;
    }
    const cp::Expression bound = cp::and_(cp::greater_equal(cp::field_ref(name), cp::literal(lo)),
                                          cp::less_equal(cp::field_ref(name), cp::literal(hi)));
    scan->scan_filter =
        scan->scan_filter.Equals(cp::literal(true)) ? bound : cp::and_(scan->scan_filter, bound);
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
