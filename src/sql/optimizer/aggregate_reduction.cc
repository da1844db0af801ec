#include "sql/optimizer/aggregate_reduction.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plan/table_provider.h"
#include "sql/optimizer/column_pruning.h"
#include "sql/optimizer/plan_rewrite.h"

namespace sluice::sql {

namespace {

namespace cp = arrow::compute;
using Kind = PlanNode::Kind;

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool HasAll(const std::vector<std::string>& names, const std::vector<std::string>& wanted) {
  return std::all_of(wanted.begin(), wanted.end(),
                     [&](const std::string& w) { return Has(names, w); });
}

// Whether a copy of `node` may run as a reducer: only scans, filters, projections and joins,
// which cost about their scans, over files (a function library's table could answer a second
// scan differently).
bool Copyable(const PlanNode& node) {
  switch (node.kind) {
    case Kind::kScan:
      return node.table != nullptr && node.table->format != plan::kProviderFormat;
    case Kind::kFilter:
    case Kind::kProject:
    case Kind::kJoin:
      break;
    default:
      return false;
  }
  if (node.input != nullptr && !Copyable(*node.input)) return false;
  return node.right == nullptr || Copyable(*node.right);
}

bool PassesOn(const PlanNode& project, const std::string& name) {
  return SourceColumn(project, name) == name;
}

// The aggregate under `side` (through projections that pass `keys` on, renamed or not, and
// HAVING filters) whose group keys include them; null where there is none. `keys` become the
// aggregate's names for them.
PlanNode* GroupedOn(PlanNode* side, std::vector<std::string>* keys) {
  while (side != nullptr) {
    if (side->kind == Kind::kProject) {
      for (auto& k : *keys) {
        auto source = SourceColumn(*side, k);
        if (!source) return nullptr;
        k = *source;
      }
      side = side->input.get();
    } else if (side->kind == Kind::kFilter) {
      side = side->input.get();
    } else if (side->kind == Kind::kAggregate) {
      return !side->keys.empty() && HasAll(side->keys, *keys) ? side : nullptr;
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

// The smallest subtree of `side` whose `keys` columns hold every value the join sees there:
// through projections that pass them on, and through joins toward the child that has them all
// where that child scans at most half of the join's rows. Not through filters: their values
// are the point.
const PlanNode* KeySource(const PlanNode* side, const std::vector<std::string>& keys) {
  while (true) {
    if (side->kind == Kind::kProject &&
        std::all_of(keys.begin(), keys.end(),
                    [&](const std::string& k) { return PassesOn(*side, k); })) {
      side = side->input.get();
      continue;
    }
    if (side->kind != Kind::kJoin || side->join_type == JoinType::kFull) return side;
    const PlanNode* child = nullptr;
    if (HasAll(side->input->OutputNames(), keys)) {
      child = side->input.get();  // the kept side of a left, semi or anti join
    } else if (side->join_type == JoinType::kInner && HasAll(side->right->OutputNames(), keys)) {
      child = side->right.get();
    }
    if (child == nullptr || 2 * ScanRows(*child) > ScanRows(*side)) return side;
    side = child;
  }
}

bool Filters(const PlanNode& node) {
  if (node.kind == Kind::kFilter || node.kind == Kind::kJoin) return true;
  return node.input != nullptr && Filters(*node.input);
}

// Moves the semi join at *slot below the operators under it that pass its keys on: projections
// (under the keys' names there), filters, and joins one of whose kept sides has them all. Where
// the keys come from a dimension (TPC-DS q59's weeks from date_dim), the semi join then drops
// that dimension's rows before the fact rows join it, not the joined rows after.
void SinkSemiJoin(std::unique_ptr<PlanNode>* slot) {
  std::vector<std::string> keys = (*slot)->left_keys;
  std::unique_ptr<PlanNode>* at = &(*slot)->input;
  std::unique_ptr<PlanNode>* target = nullptr;  // the deepest place below a join
  std::vector<std::string> target_keys;
  while (true) {
    PlanNode& below = **at;
    if (below.kind == Kind::kFilter) {
      at = &below.input;
    } else if (below.kind == Kind::kProject) {
      bool passed = true;
      for (auto& k : keys) {
        auto source = SourceColumn(below, k);
        passed = passed && source.has_value();
        if (source) k = *source;
      }
      if (!passed) break;
      at = &below.input;
    } else if (below.kind == Kind::kJoin && below.join_type != JoinType::kFull &&
               HasAll(below.input->OutputNames(), keys)) {
      at = &below.input;  // the kept side of a left, semi or anti join
      target = at;
      target_keys = keys;
    } else if (below.kind == Kind::kJoin && below.join_type == JoinType::kInner &&
               HasAll(below.right->OutputNames(), keys)) {
      at = &below.right;
      target = at;
      target_keys = keys;
    } else {
      break;
    }
  }
  if (target == nullptr) return;
  // Out of its place (nodes keep their addresses, so `target` stays valid), into the target.
  std::unique_ptr<PlanNode> semi = std::move(*slot);
  *slot = std::move(semi->input);
  semi->left_keys = std::move(target_keys);
  semi->input = std::move(*target);
  *target = std::move(semi);
}

// Semi joins the input of the aggregate under `side` to the `other` side's `other_keys`, when
// `side`'s `keys` are its group keys and a cheap enough reducer exists.
void Reduce(PlanNode* side, std::vector<std::string> keys, const PlanNode& other,
            const std::vector<std::string>& other_keys, bool null_equal_keys, int* counter) {
  PlanNode* aggregate = GroupedOn(side, &keys);
  if (aggregate == nullptr) return;
  // The step that reads rows: a final aggregate's partial step, or a single step.
  PlanNode* lowest = aggregate;
  if (lowest->final_phase && lowest->input != nullptr && lowest->input->kind == Kind::kAggregate &&
      !lowest->input->final_phase) {
    lowest = lowest->input.get();
  }
  if (!HasAll(lowest->keys, keys) || lowest->input == nullptr) return;
  const PlanNode* source = KeySource(&other, other_keys);
  const double input_rows = ScanRows(*lowest->input);
  if (!Copyable(*source) || !Filters(*source) || input_rows <= 0 ||
      ScanRows(*source) > kReducerMaxShare * input_rows) {
    return;
  }
  auto reducer = plan::MakeNode(Kind::kProject, plan::CopyPlan(*source));
  std::vector<std::string> reducer_keys;
  for (const auto& k : other_keys) {
    reducer->expressions.push_back(cp::field_ref(k));
    reducer_keys.push_back("__reduce" + std::to_string((*counter)++) + "_" + k);
    reducer->names.push_back(reducer_keys.back());
  }
  PruneColumns(reducer.get());
  auto semi = plan::MakeNode(Kind::kJoin, std::move(lowest->input));
  semi->join_type = JoinType::kSemi;
  semi->left_keys = keys;
  semi->right_keys = std::move(reducer_keys);
  semi->null_equal_keys = null_equal_keys;
  semi->right = std::move(reducer);
  lowest->input = std::move(semi);
  SinkSemiJoin(&lowest->input);
}

void Visit(PlanNode* node, int* counter) {
  if (node == nullptr) return;
  Visit(node->input.get(), counter);
  Visit(node->right.get(), counter);
  for (auto& item : node->items) Visit(item.get(), counter);
  if (node->kind != Kind::kJoin || node->input == nullptr || node->right == nullptr) return;
  const JoinType type = node->join_type;
  if (type == JoinType::kFull) return;
  // `right` is the side a left, semi or anti join does not keep; an inner join keeps neither.
  Reduce(node->right.get(), node->right_keys, *node->input, node->left_keys, node->null_equal_keys,
         counter);
  if (type == JoinType::kInner) {
    Reduce(node->input.get(), node->left_keys, *node->right, node->right_keys,
           node->null_equal_keys, counter);
  }
}

}  // namespace

void ReduceAggregatesByJoins(PlanNode* plan) {
  int counter = 0;
  Visit(plan, &counter);
}

}  // namespace sluice::sql
