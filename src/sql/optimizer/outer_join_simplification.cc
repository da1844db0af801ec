#include "sql/optimizer/outer_join_simplification.h"

#include <arrow/compute/api.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sql/optimizer/column_pruning.h"
#include "sql/optimizer/conjuncts.h"
#include "sql/optimizer/join_order.h"

namespace sluice::sql {

namespace cp = arrow::compute;

namespace {

// Functions whose result is NULL where an argument is NULL.
bool Strict(const std::string& name) {
  static const std::set<std::string> kStrict = {"equal",       "not_equal",
                                                "less",        "less_equal",
                                                "greater",     "greater_equal",
                                                "add",         "add_checked",
                                                "subtract",    "subtract_checked",
                                                "multiply",    "multiply_checked",
                                                "divide",      "divide_checked",
                                                "negate",      "negate_checked",
                                                "abs",         "abs_checked",
                                                "cast",        "utf8_slice_codeunits",
                                                "utf8_upper",  "utf8_lower",
                                                "utf8_length", "binary_length",
                                                "match_like",  "match_substring",
                                                "starts_with", "ends_with",
                                                "year",        "month",
                                                "day"};
  return kStrict.count(name) > 0;
}

// Whether `e` is NULL or false wherever the columns in `padded` are NULL (and reads one).
bool RejectsNulls(const cp::Expression& e, const std::set<std::string>& padded) {
  if (const arrow::FieldRef* ref = e.field_ref()) {
    return ref->name() != nullptr && padded.count(*ref->name()) > 0;
  }
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return false;
  const std::string& f = call->function_name;
  auto any = [&] {
    return std::any_of(call->arguments.begin(), call->arguments.end(),
                       [&](const cp::Expression& a) { return RejectsNulls(a, padded); });
  };
  if (Strict(f) || f == "is_valid" || f == "and" || f == "and_kleene") return any();
  if (f == "or" || f == "or_kleene") {
    return std::all_of(call->arguments.begin(), call->arguments.end(),
                       [&](const cp::Expression& a) { return RejectsNulls(a, padded); });
  }
  if (f == "is_in") {
    // NULL in, NULL or false out, unless the set's NULL matches it.
    const auto* options = dynamic_cast<const cp::SetLookupOptions*>(call->options.get());
    return options != nullptr &&
           (options->null_matching_behavior == cp::SetLookupOptions::EMIT_NULL ||
            options->null_matching_behavior == cp::SetLookupOptions::SKIP) &&
           any();
  }
  return false;
}

// Adds to `out` the columns that the operators of `node` read, but for `join` and its joined
// side: what the rest of the plan reads of that side's columns.
void ReadOutside(const PlanNode& node, const PlanNode& join, std::set<std::string>* out) {
  if (&node == &join) {
    if (join.input != nullptr) ReadOutside(*join.input, join, out);
    return;
  }
  AddColumnsReadBy(node, out);
  for (const PlanNode* child : {node.input.get(), node.right.get()}) {
    if (child != nullptr) ReadOutside(*child, join, out);
  }
  for (const auto& item : node.items) ReadOutside(*item, join, out);
}

// Makes inner the left joins among the FROM items of the level whose WHERE Filter is `filter`,
// where its conjuncts or `above` (those of the levels that join this one inner) reject the
// joined side's NULLs; then the same in the levels among its items. `root`: the whole plan.
void SimplifyLevel(const PlanNode* root, PlanNode* filter,
                   const std::vector<cp::Expression>& above) {
  PlanNode* set = filter->input.get();
  while (IsSubqueryStep(*set)) set = set->input.get();
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<cp::Expression> where = ConjunctsOf(filter->predicate);
    std::vector<cp::Expression> rejecting = where;
    rejecting.insert(rejecting.end(), above.begin(), above.end());
    for (size_t i = 0; i < set->items.size() && !changed; ++i) {
      PlanNode* join = set->items[i].get();
      if (join->kind != PlanNode::Kind::kJoin || join->join_type != JoinType::kLeft ||
          join->right == nullptr || join->left_keys.size() != join->right_keys.size() ||
          !join->input_cardinality || !join->right_cardinality) {
        continue;
      }
      const std::vector<std::string> names = join->right->OutputNames();
      const std::set<std::string> padded(names.begin(), names.end());
      if (std::none_of(rejecting.begin(), rejecting.end(),
                       [&](const cp::Expression& c) { return RejectsNulls(c, padded); })) {
        continue;
      }
      // The ON condition joins the WHERE; the sides become items in the join's place.
      for (size_t k = 0; k < join->left_keys.size(); ++k) {
        where.push_back(
            cp::equal(cp::field_ref(join->left_keys[k]), cp::field_ref(join->right_keys[k])));
      }
      for (auto& c : ConjunctsOf(join->join_filter)) where.push_back(std::move(c));
      filter->predicate = AndOf(where);
      std::unique_ptr<PlanNode> owned = std::move(set->items[i]);
      const std::string name = set->item_names[i];
      set->items[i] = std::move(owned->input);
      set->item_cardinalities[i] = owned->input_cardinality;
      set->items.insert(set->items.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                        std::move(owned->right));
      set->item_cardinalities.insert(
          set->item_cardinalities.begin() + static_cast<std::ptrdiff_t>(i) + 1,
          owned->right_cardinality);
      set->item_names.insert(set->item_names.begin() + static_cast<std::ptrdiff_t>(i) + 1, name);
      changed = true;
    }
  }
  // A left join whose WHERE keeps only the rows it padded (`key IS NULL` on a key of the joined
  // side, which no matched row has NULL) and whose joined side nothing else reads: an anti join.
  for (auto& item : set->items) {
    PlanNode* join = item.get();
    if (join->kind != PlanNode::Kind::kJoin || join->join_type != JoinType::kLeft ||
        join->right == nullptr || join->null_equal_keys) {
      continue;
    }
    std::vector<cp::Expression> where = ConjunctsOf(filter->predicate);
    auto padded_test = std::find_if(where.begin(), where.end(), [&](const cp::Expression& c) {
      const cp::Expression::Call* call = c.call();
      if (call == nullptr || call->function_name != "is_null" || call->arguments.size() != 1) {
        return false;
      }
      const arrow::FieldRef* ref = call->arguments[0].field_ref();
      return ref != nullptr && ref->name() != nullptr &&
             std::find(join->right_keys.begin(), join->right_keys.end(), *ref->name()) !=
                 join->right_keys.end();
    });
    if (padded_test == where.end()) continue;
    where.erase(padded_test);
    const cp::Expression before = filter->predicate;
    filter->predicate = AndOf(where);
    std::set<std::string> read;
    ReadOutside(*root, *join, &read);
    const std::vector<std::string> names = join->right->OutputNames();
    if (std::any_of(names.begin(), names.end(), [&](const auto& n) { return read.count(n); })) {
      filter->predicate = before;
      continue;
    }
    join->join_type = JoinType::kAnti;
  }
  // Levels among the items are joined inner here: this level's conditions hold for their rows.
  std::vector<cp::Expression> inherited = ConjunctsOf(filter->predicate);
  inherited.insert(inherited.end(), above.begin(), above.end());
  for (auto& item : set->items) {
    if (IsLevelFilter(*item)) SimplifyLevel(root, item.get(), inherited);
  }
}

void Visit(const PlanNode* root, PlanNode* node) {
  if (node == nullptr) return;
  if (IsLevelFilter(*node)) SimplifyLevel(root, node, {});
  Visit(root, node->input.get());
  Visit(root, node->right.get());
  for (auto& item : node->items) Visit(root, item.get());
}

}  // namespace

arrow::Status SimplifyOuterJoins(PlanNode* plan) {
  Visit(plan, plan);
  return arrow::Status::OK();
}

}  // namespace sluice::sql
