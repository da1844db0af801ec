#include "sql/optimizer/outer_join_conditions.h"

#include <arrow/compute/api.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "sql/optimizer/conjuncts.h"
#include "sql/optimizer/join_order.h"
#include "sql/optimizer/plan_rewrite.h"

namespace sluice::sql {

namespace cp = arrow::compute;

namespace {

// The WHERE Filter of the level that `item` (a FROM item) preserves through one or more left
// joins, or null. Between a left join and its preserved side's level there may be the
// projection that computes a key of the join (t1.k + 1 = t2.k).
PlanNode* PreservedLevel(PlanNode* item) {
  PlanNode* n = item;
  bool through_outer_join = false;
  while (n != nullptr) {
    if (n->kind == PlanNode::Kind::kJoin && n->join_type == JoinType::kLeft) {
      through_outer_join = true;
    } else if (!(n->kind == PlanNode::Kind::kProject && n->keep_input && through_outer_join)) {
      break;
    }
    n = n->input.get();
  }
  return through_outer_join && n != nullptr && IsLevelFilter(*n) ? n : nullptr;
}

// Moves what it can of the level Filter `filter`'s conjuncts into the levels its FROM items
// preserve, then theirs further down.
void MoveFromLevel(PlanNode* filter) {
  PlanNode* set = filter->input.get();
  while (IsSubqueryStep(*set)) set = set->input.get();
  std::vector<cp::Expression> kept = ConjunctsOf(filter->predicate);
  bool moved_any = false;
  for (auto& item : set->items) {
    PlanNode* level = PreservedLevel(item.get());
    if (level == nullptr) continue;
    const std::vector<std::string> names = level->OutputNames();
    const std::set<std::string> columns(names.begin(), names.end());
    std::vector<cp::Expression> into = ConjunctsOf(level->predicate), stay;
    const size_t before = into.size();
    for (auto& c : kept) {
      const auto refs = cp::FieldsInExpression(c);
      // One that reads no column (WHERE false) stays where it was written.
      const bool inside =
          !refs.empty() && std::all_of(refs.begin(), refs.end(),
                                       [&](const auto& r) { return columns.count(*r.name()) > 0; });
      (inside ? into : stay).push_back(std::move(c));
    }
    kept = std::move(stay);
    if (into.size() == before) continue;
    moved_any = true;
    level->predicate = AndOf(into);
    MoveFromLevel(level);
  }
  if (moved_any) filter->predicate = AndOf(kept);
}

}  // namespace

arrow::Status MoveConditionsIntoOuterJoins(PlanNode* plan) {
  return RewriteBottomUp(plan, [](std::unique_ptr<PlanNode>* slot) {
    if (IsLevelFilter(**slot)) MoveFromLevel(slot->get());
    return arrow::Status::OK();
  });
}

}  // namespace sluice::sql
