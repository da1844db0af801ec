#include "sql/optimizer/constant_folding.h"

#include <arrow/compute/api.h>
#include <arrow/type.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plan/decimal_kernels.h"

namespace sluice::sql {

namespace {

namespace cp = arrow::compute;

// A constant `e`'s value; an error if it cannot be evaluated, `e` itself if Arrow leaves it.
// Evaluated as the executor evaluates it, with our decimal kernels: a literal's cast that does
// not fit then names the value, as the same cast of a column does.
arrow::Result<cp::Expression> Evaluate(const cp::Expression& e) {
  const auto none = arrow::schema({});
  ARROW_ASSIGN_OR_RAISE(auto bound, plan::WithDecimalKernels(e, *none).Bind(*none));
  ARROW_ASSIGN_OR_RAISE(auto folded, cp::FoldConstants(bound));
  if (folded.literal() != nullptr) return folded;
  return e;
}

bool IsBool(const cp::Expression& e, bool value) { return e.Equals(cp::literal(value)); }

}  // namespace

arrow::Result<cp::Expression> FoldConstantSubtrees(const cp::Expression& e) {
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return e;
  if (cp::FieldsInExpression(e).empty()) return Evaluate(e);
  std::vector<cp::Expression> args;
  for (const auto& a : call->arguments) {
    ARROW_ASSIGN_OR_RAISE(auto f, FoldConstantSubtrees(a));
    args.push_back(std::move(f));
  }
  return cp::call(call->function_name, std::move(args), call->options);
}

cp::Expression Simplify(const cp::Expression& e) {
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return e;
  if (cp::FieldsInExpression(e).empty()) {
    auto value = Evaluate(e);
    if (value.ok() && value->literal() != nullptr) return *value;
  }
  std::vector<cp::Expression> args;
  for (const auto& a : call->arguments) args.push_back(Simplify(a));
  const std::string& name = call->function_name;
  if (args.size() == 2 &&
      (name == "and" || name == "and_kleene" || name == "or" || name == "or_kleene")) {
    const bool is_and = name == "and" || name == "and_kleene";
    const bool kleene = name == "and_kleene" || name == "or_kleene";
    for (int i = 0; i < 2; ++i) {
      const cp::Expression& mine = args[static_cast<size_t>(i)];
      const cp::Expression& other = args[static_cast<size_t>(1 - i)];
      if (IsBool(mine, is_and)) return other;            // x AND true, x OR false
      if (kleene && IsBool(mine, !is_and)) return mine;  // x AND false, x OR true
    }
  }
  if (name == "invert" && args.size() == 1) {
    const cp::Expression::Call* inner = args[0].call();
    if (inner != nullptr && inner->function_name == "invert" && inner->arguments.size() == 1) {
      return inner->arguments[0];
    }
  }
  return cp::call(name, std::move(args), call->options);
}

namespace {

void SimplifyAt(std::unique_ptr<PlanNode>* slot) {
  if (*slot == nullptr) return;
  PlanNode& node = **slot;
  SimplifyAt(&node.input);
  SimplifyAt(&node.right);
  switch (node.kind) {
    case PlanNode::Kind::kFilter:
      node.predicate = Simplify(node.predicate);
      if (IsBool(node.predicate, true)) *slot = std::move(node.input);
      break;
    case PlanNode::Kind::kProject:
      for (auto& e : node.expressions) e = Simplify(e);
      break;
    case PlanNode::Kind::kJoin:
      node.join_filter = Simplify(node.join_filter);
      break;
    case PlanNode::Kind::kScan:
      node.scan_filter = Simplify(node.scan_filter);
      break;
    default:
      break;
  }
}

}  // namespace

void SimplifyExpressions(PlanNode* plan) {
  // The root may itself be a Filter that goes away: work on a slot that owns it.
  auto root = std::make_unique<PlanNode>(std::move(*plan));
  SimplifyAt(&root);
  *plan = std::move(*root);
}

}  // namespace sluice::sql
