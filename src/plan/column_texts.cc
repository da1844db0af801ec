#include "plan/column_texts.h"

#include <algorithm>
#include <vector>

#include "plan/stage_shape.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

bool Hidden(const std::string& name) { return name.rfind("__", 0) == 0; }

}  // namespace

bool ReadsHiddenColumn(const cp::Expression& expression) {
  for (const arrow::FieldRef& ref : cp::FieldsInExpression(expression)) {
    if (ref.name() != nullptr && Hidden(*ref.name())) return true;
  }
  return false;
}

ColumnTexts HiddenColumnTexts(const PlanNode& node) {
  // Pre-order reversed: every node after all of its inputs, so an expression's hidden columns
  // already have their texts.
  std::vector<const PlanNode*> nodes = NodesOf(node);
  std::reverse(nodes.begin(), nodes.end());
  ColumnTexts texts;
  for (const PlanNode* n : nodes) {
    switch (n->kind) {
      case PlanNode::Kind::kShuffleRead:
        for (const auto& [name, text] : n->shuffle_read.column_texts) texts[name] = text;
        break;
      case PlanNode::Kind::kProject:
        for (size_t i = 0; i < n->names.size() && i < n->expressions.size(); ++i) {
          if (!Hidden(n->names[i])) continue;
          texts[n->names[i]] = {ExpressionText(n->expressions[i], &texts),
                                IsInfixText(n->expressions[i]), false};
        }
        break;
      case PlanNode::Kind::kAggregate:
        for (const AggregateCall& a : n->aggregates) {
          if (!Hidden(a.output)) continue;
          const auto argument = texts.find(a.input);
          if (n->final_phase && argument != texts.end() && argument->second.aggregate) {
            texts[a.output] = argument->second;  // combines the partial results
          } else if (a.function == "count_all") {
            texts[a.output] = {"count(*)", false, true};
          } else {
            const std::string argument_text = ExpressionText(cp::field_ref(a.input), &texts);
            texts[a.output] = {a.function == "count_distinct"
                                   ? "count(DISTINCT " + argument_text + ")"
                                   : a.function + "(" + argument_text + ")",
                               false, true};
          }
        }
        break;
      default:
        break;
    }
  }
  return texts;
}

}  // namespace sluice::plan
