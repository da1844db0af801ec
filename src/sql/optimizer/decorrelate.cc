#include "sql/optimizer/decorrelate.h"

#include <arrow/compute/api.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sql/optimizer/conjuncts.h"
#include "sql/optimizer/plan_rewrite.h"

namespace sluice::sql {

namespace cp = arrow::compute;

namespace {

using Names = std::set<std::string>;

Names NameSet(const PlanNode& node) {
  auto names = node.OutputNames();
  return Names(names.begin(), names.end());
}

bool ReadsOutside(const cp::Expression& e, const Names& inner) {
  for (const auto& ref : cp::FieldsInExpression(e)) {
    if (ref.name() != nullptr && !inner.count(*ref.name())) return true;
  }
  return false;
}

// `input` with a constant column `name` (1) after its own: an uncorrelated scalar subquery has at
// most one row, and every outer row joins it on this key.
std::unique_ptr<PlanNode> WithConstantKey(std::unique_ptr<PlanNode> input,
                                          const std::string& name) {
  auto p = plan::MakeNode(PlanNode::Kind::kProject, std::move(input));
  p->keep_input = true;
  p->expressions.push_back(cp::literal(int64_t{1}));
  p->names.push_back(name);
  return p;
}

// Makes `columns` outputs of `node` (a projection, filter or aggregate above the subquery's
// correlated Filter), first and in order: they are the join's keys.
arrow::Status PassThrough(PlanNode* node, const std::vector<std::string>& columns) {
  switch (node->kind) {
    case PlanNode::Kind::kFilter:
    case PlanNode::Kind::kJoin:  // a semi, anti or left join: its input's columns go on
      return arrow::Status::OK();
    case PlanNode::Kind::kProject: {
      if (node->keep_input) return arrow::Status::OK();
      std::vector<cp::Expression> expressions;
      std::vector<std::string> names;
      for (const auto& c : columns) {
        if (std::find(names.begin(), names.end(), c) != names.end() ||
            std::find(node->names.begin(), node->names.end(), c) != node->names.end()) {
          continue;
        }
        expressions.push_back(cp::field_ref(c));
        names.push_back(c);
      }
      node->expressions.insert(node->expressions.begin(), expressions.begin(), expressions.end());
      node->names.insert(node->names.begin(), names.begin(), names.end());
      return arrow::Status::OK();
    }
    case PlanNode::Kind::kAggregate: {
      std::vector<std::string> keys;
      for (const auto& c : columns) {
        if (std::find(keys.begin(), keys.end(), c) == keys.end()) keys.push_back(c);
      }
      for (const auto& k : node->keys) {
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      }
      node->keys = std::move(keys);
      return arrow::Status::OK();
    }
    default:
      return arrow::Status::Invalid("internal: decorrelate: a ", plan::KindName(node->kind),
                                    " between a subquery's output and its correlated Filter");
  }
}

// The join that replaces the dependent join at *slot.
arrow::Status DecorrelateAt(std::unique_ptr<PlanNode>* slot) {
  PlanNode& dependent = **slot;
  // The subquery's correlated Filter: the first Filter down its projections, filters and
  // aggregates that reads a column its input does not have.
  std::vector<PlanNode*> above;
  std::unique_ptr<PlanNode>* at = &dependent.right;
  while (*at != nullptr) {
    PlanNode& n = **at;
    if (n.kind == PlanNode::Kind::kFilter && ReadsOutside(n.predicate, NameSet(*n.input))) break;
    // Through what passes its input's columns on: a HAVING or select-list scalar subquery's
    // left join and its constant key sit between the subquery's output and its WHERE.
    const bool passes_input =
        (n.kind == PlanNode::Kind::kJoin && n.join_type != JoinType::kInner) ||
        (n.kind == PlanNode::Kind::kProject && n.keep_input);
    if (n.kind != PlanNode::Kind::kProject && n.kind != PlanNode::Kind::kFilter &&
        n.kind != PlanNode::Kind::kAggregate && !passes_input) {
      at = nullptr;
      break;
    }
    above.push_back(&n);
    at = &n.input;
  }
  if (at != nullptr && *at == nullptr) at = nullptr;
  if (dependent.correlated && at == nullptr) {
    return arrow::Status::Invalid(
        "internal: decorrelate: a correlated subquery's Filter is not "
        "below its projections, filters and aggregates");
  }

  std::vector<std::string> outer_keys = dependent.left_keys, inner_keys = dependent.right_keys;
  std::vector<cp::Expression> residual;
  std::vector<std::string> pulled;  // the subquery's columns the join now reads
  if (at != nullptr) {
    PlanNode& correlated = **at;
    const Names inner = NameSet(*correlated.input);
    std::vector<cp::Expression> conjuncts, local;
    Conjuncts(correlated.predicate, &conjuncts);
    for (const auto& c : conjuncts) {
      if (!ReadsOutside(c, inner)) {
        local.push_back(c);
        continue;
      }
      if (auto key = InnerOuterEquality(c, inner)) {
        inner_keys.push_back(key->first);
        outer_keys.push_back(key->second);
        pulled.push_back(key->first);
        continue;
      }
      residual.push_back(c);
      for (const auto& ref : cp::FieldsInExpression(c)) {
        if (ref.name() != nullptr && inner.count(*ref.name())) pulled.push_back(*ref.name());
      }
    }
    if (!residual.empty() && (dependent.join_type == JoinType::kLeft || !above.empty())) {
      return arrow::Status::Invalid(
          "internal: decorrelate: a correlated condition that is no key below a projection or "
          "aggregate");
    }
    if (local.empty()) {
      *at = std::move(correlated.input);
    } else {
      correlated.predicate = AndOf(local);
    }
    for (PlanNode* n : above) ARROW_RETURN_NOT_OK(PassThrough(n, pulled));
  }

  auto join = plan::MakeNode(PlanNode::Kind::kJoin, std::move(dependent.input));
  join->join_type = dependent.join_type;
  join->join_filter = AndOf(residual);
  join->input_cardinality = std::move(dependent.input_cardinality);
  join->right_cardinality = std::move(dependent.right_cardinality);
  join->right = std::move(dependent.right);
  if (dependent.join_type == JoinType::kLeft && pulled.empty()) {
    // An uncorrelated scalar subquery: the binder named the constant key of each side.
    if (outer_keys.size() != 1 || inner_keys.size() != 1) {
      return arrow::Status::Invalid("internal: decorrelate: a scalar subquery without its key");
    }
    join->input = WithConstantKey(std::move(join->input), outer_keys[0]);
    join->right = WithConstantKey(std::move(join->right), inner_keys[0]);
  }
  if (outer_keys.empty()) {
    return arrow::Status::Invalid("internal: decorrelate: a subquery without a join key");
  }
  join->left_keys = std::move(outer_keys);
  join->right_keys = std::move(inner_keys);
  *slot = std::move(join);
  return arrow::Status::OK();
}

}  // namespace

arrow::Status Decorrelate(PlanNode* plan) {
  // Inner subqueries first: a nested subquery is a join before its parent's Filter is sought.
  return RewriteBottomUp(plan, [](std::unique_ptr<PlanNode>* slot) {
    if ((*slot)->kind != PlanNode::Kind::kDependentJoin) return arrow::Status::OK();
    return DecorrelateAt(slot);
  });
}

}  // namespace sluice::sql
