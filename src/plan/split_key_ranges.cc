#include "plan/split_key_ranges.h"

#include <algorithm>

#include <arrow/compute/api.h>

#include "plan/conjuncts.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

struct Source {
  const PlanNode* scan = nullptr;
  std::string column;  // the file column
};

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The scan column that `node`'s output column `name` holds the values of, or none. Every value
// of `name` is one of the column's or NULL (a left join's padding). `through_groups` also
// follows an aggregate's group keys, for a build side (dropping a key's rows drops its group).
std::optional<Source> SourceOf(const PlanNode& node, const std::string& name, bool through_groups) {
  switch (node.kind) {
    case PlanNode::Kind::kScan:
      for (size_t i = 0; i < node.names.size() && i < node.columns.size(); ++i) {
        if (node.names[i] == name) return Source{&node, node.columns[i]};
      }
      return std::nullopt;
    case PlanNode::Kind::kFilter:
      return SourceOf(*node.input, name, through_groups);
    case PlanNode::Kind::kProject:
      for (size_t i = 0; i < node.names.size() && i < node.expressions.size(); ++i) {
        if (node.names[i] != name) continue;
        const arrow::FieldRef* ref = node.expressions[i].field_ref();
        if (ref == nullptr || ref->name() == nullptr) return std::nullopt;  // computed
        return SourceOf(*node.input, *ref->name(), through_groups);
      }
      if (node.keep_input) return SourceOf(*node.input, name, through_groups);
      return std::nullopt;
    case PlanNode::Kind::kJoin:
      if (node.input != nullptr && Has(node.input->OutputNames(), name)) {
        return SourceOf(*node.input, name, through_groups);
      }
      if (node.right != nullptr && node.join_type != JoinType::kSemi &&
          node.join_type != JoinType::kAnti && Has(node.right->OutputNames(), name)) {
        return SourceOf(*node.right, name, through_groups);
      }
      return std::nullopt;
    case PlanNode::Kind::kAggregate:
      if (through_groups && Has(node.keys, name)) {
        return SourceOf(*node.input, name, through_groups);
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

// Signed 32- or 64-bit integers of one type: statistics compare as the join compares.
bool SameIntegerType(const PlanNode& a, const std::string& a_column, const PlanNode& b,
                     const std::string& b_column) {
  if (a.table == nullptr || b.table == nullptr || a.table->schema == nullptr ||
      b.table->schema == nullptr) {
    return false;
  }
  const auto fa = a.table->schema->GetFieldByName(a_column);
  const auto fb = b.table->schema->GetFieldByName(b_column);
  if (fa == nullptr || fb == nullptr || !fa->type()->Equals(*fb->type())) return false;
  const auto id = fa->type()->id();
  return id == arrow::Type::INT32 || id == arrow::Type::INT64;
}

// The statistics of `column` in each row group of `table`'s file `f` ({1, 0} where a row group
// has none), or null where the footers gave none for the file at all.
const std::vector<std::pair<int64_t, int64_t>>* FileRanges(const TableSource& table,
                                                           const std::string& column, size_t f) {
  auto it = table.row_group_int_ranges.find(column);
  if (it == table.row_group_int_ranges.end() || f >= it->second.size() ||
      f >= table.row_group_bytes.size() ||
      it->second[f].size() != table.row_group_bytes[f].size()) {
    return nullptr;
  }
  return &it->second[f];
}

// Whether `table`'s row groups hold `column` in about key order: their ranges together span at
// most twice the column's whole range, so that a run of row groups holds a narrow range of keys
// (TPC-H's l_orderkey, not l_suppkey). Otherwise a share's range is the whole table's, and a
// range prunes nothing.
bool Clustered(const TableSource& table, const std::string& column) {
  long double spans = 0;
  std::optional<std::pair<int64_t, int64_t>> all;
  size_t groups = 0;
  for (size_t f = 0; f < table.files.size(); ++f) {
    const auto* file = FileRanges(table, column, f);
    if (file == nullptr) return false;
    for (const auto& [lo, hi] : *file) {
      if (lo > hi) return false;
      spans += static_cast<long double>(hi) - lo + 1;
      all = all ? std::make_pair(std::min(all->first, lo), std::max(all->second, hi))
                : std::make_pair(lo, hi);
      ++groups;
    }
  }
  return groups >= 2 && spans <= 2 * (static_cast<long double>(all->second) - all->first + 1);
}

void Collect(const PlanNode& node, const PlanNode& split, std::vector<SplitKeyRange>* out) {
  if (node.kind == PlanNode::Kind::kJoin && !node.null_equal_keys && node.input != nullptr &&
      node.right != nullptr && node.left_keys.size() == node.right_keys.size()) {
    // (probe side, its keys, build side, its keys): a build side's unmatched rows are dropped.
    struct Sides {
      const PlanNode* probe;
      const std::vector<std::string>* probe_keys;
      const PlanNode* build;
      const std::vector<std::string>* build_keys;
    };
    std::vector<Sides> sides;
    if (node.join_type != JoinType::kFull) {
      sides.push_back({node.input.get(), &node.left_keys, node.right.get(), &node.right_keys});
    }
    if (node.join_type == JoinType::kInner) {
      sides.push_back({node.right.get(), &node.right_keys, node.input.get(), &node.left_keys});
    }
    for (const Sides& s : sides) {
      for (size_t i = 0; i < s.probe_keys->size(); ++i) {
        auto probe = SourceOf(*s.probe, (*s.probe_keys)[i], /*through_groups=*/false);
        if (!probe || probe->scan != &split || !Clustered(*split.table, probe->column)) continue;
        auto build = SourceOf(*s.build, (*s.build_keys)[i], /*through_groups=*/true);
        if (!build || build->scan == &split || build->scan->split ||
            build->scan->table == nullptr || build->scan->table->format != "parquet" ||
            !Clustered(*build->scan->table, build->column) ||
            !SameIntegerType(split, probe->column, *build->scan, build->column)) {
          continue;
        }
        out->push_back(
            {build->scan, build->column, probe->column, (*s.probe_keys)[i], (*s.build_keys)[i]});
      }
    }
  }
  if (node.input != nullptr) Collect(*node.input, split, out);
  if (node.right != nullptr) Collect(*node.right, split, out);
}

}  // namespace

std::vector<SplitKeyRange> SplitKeyRanges(const PlanNode& root, const PlanNode& split) {
  std::vector<SplitKeyRange> out;
  if (split.kind != PlanNode::Kind::kScan || split.table == nullptr ||
      split.table->format != "parquet") {
    return out;
  }
  Collect(root, split, &out);
  return out;
}

std::optional<std::pair<int64_t, int64_t>> ShareKeyRange(const TableSource& whole,
                                                         const TableSource& table,
                                                         const std::string& column) {
  if (!table.row_group_ranges.empty() && table.row_group_ranges.size() != table.files.size()) {
    return std::nullopt;
  }
  std::optional<std::pair<int64_t, int64_t>> out;
  for (size_t i = 0; i < table.files.size(); ++i) {
    const auto at = std::find(whole.files.begin(), whole.files.end(), table.files[i]);
    if (at == whole.files.end()) return std::nullopt;
    const auto* groups = FileRanges(whole, column, static_cast<size_t>(at - whole.files.begin()));
    if (groups == nullptr) return std::nullopt;
    size_t first = 0, end = groups->size();
    if (!table.row_group_ranges.empty()) {
      first = static_cast<size_t>(std::max(0, table.row_group_ranges[i].first));
      end = static_cast<size_t>(std::max(0, table.row_group_ranges[i].second));
      if (end > groups->size()) return std::nullopt;
    }
    for (size_t rg = first; rg < end; ++rg) {
      const auto [lo, hi] = (*groups)[rg];
      if (lo > hi) return std::nullopt;  // a row group without statistics
      out = out ? std::make_pair(std::min(out->first, lo), std::max(out->second, hi))
                : std::make_pair(lo, hi);
    }
  }
  return out;
}

void RestrictScan(PlanNode* scan, const std::string& column, int64_t lo, int64_t hi) {
  std::string name;
  for (size_t i = 0; i < scan->columns.size() && i < scan->names.size(); ++i) {
    if (scan->columns[i] == column) name = scan->names[i];
  }
  if (name.empty()) return;
  const auto field = scan->table->schema->GetFieldByName(column);
  auto bound = [&](int64_t v) {
    return field != nullptr && field->type()->id() == arrow::Type::INT32
               ? cp::literal(static_cast<int32_t>(v))
               : cp::literal(v);
  };
  std::vector<cp::Expression> parts;
  if (!scan->scan_filter.Equals(cp::literal(true))) Conjuncts(scan->scan_filter, &parts);
  parts.push_back(cp::greater_equal(cp::field_ref(name), bound(lo)));
  parts.push_back(cp::less_equal(cp::field_ref(name), bound(hi)));
  scan->scan_filter = cp::and_(parts);
}

}  // namespace sluice::plan
