#include "sql/optimizer/column_pruning.h"

#include <arrow/compute/expression.h>

#include <utility>
#include <vector>

namespace sluice::sql {

namespace {

namespace cp = arrow::compute;

void AddFields(const cp::Expression& e, std::set<std::string>* out) {
  for (const auto& ref : cp::FieldsInExpression(e)) {
    if (ref.name() != nullptr) out->insert(*ref.name());
  }
}

void CollectRead(const PlanNode* node, std::set<std::string>* out) {
  if (node == nullptr) return;
  switch (node->kind) {
    case PlanNode::Kind::kScan:
      AddFields(node->scan_filter, out);
      break;
    case PlanNode::Kind::kFilter:
      AddFields(node->predicate, out);
      break;
    case PlanNode::Kind::kProject:
      for (const auto& e : node->expressions) AddFields(e, out);
      break;
    case PlanNode::Kind::kAggregate:
      out->insert(node->keys.begin(), node->keys.end());
      for (const auto& a : node->aggregates) {
        if (!a.input.empty()) out->insert(a.input);
      }
      break;
    case PlanNode::Kind::kSort:
      for (const auto& k : node->sort_keys) {
        if (k.target.name() != nullptr) out->insert(*k.target.name());
      }
      break;
    case PlanNode::Kind::kLimit:
      break;
    case PlanNode::Kind::kJoin:
      out->insert(node->left_keys.begin(), node->left_keys.end());
      out->insert(node->right_keys.begin(), node->right_keys.end());
      AddFields(node->join_filter, out);
      break;
    case PlanNode::Kind::kWindow:
      for (const auto& w : node->windows) {
        out->insert(w.arguments.begin(), w.arguments.end());
        out->insert(w.partition_keys.begin(), w.partition_keys.end());
        for (const auto& k : w.order_keys) {
          if (k.target.name() != nullptr) out->insert(*k.target.name());
        }
      }
      break;
    case PlanNode::Kind::kUnion:
      // Positional: a column either side drops would shift the other's.
      for (const PlanNode* side : {node->input.get(), node->right.get()}) {
        for (auto& n : side->OutputNames()) out->insert(std::move(n));
      }
      break;
    default:  // job operators and exchanges: not in a query's plan while it is optimized
      break;
  }
  CollectRead(node->input.get(), out);
  CollectRead(node->right.get(), out);
}

void PruneScans(PlanNode* node, const std::set<std::string>& used) {
  if (node == nullptr) return;
  if (node->kind == PlanNode::Kind::kScan) {
    std::vector<std::string> columns, names;
    for (size_t i = 0; i < node->names.size(); ++i) {
      if (used.count(node->names[i])) {
        columns.push_back(node->columns[i]);
        names.push_back(node->names[i]);
      }
    }
    if (columns.empty() && !node->columns.empty()) {  // count(*): read the first column only
      columns.push_back(node->columns[0]);
      names.push_back(node->names[0]);
    }
    node->columns = std::move(columns);
    node->names = std::move(names);
  }
  PruneScans(node->input.get(), used);
  PruneScans(node->right.get(), used);
}

}  // namespace

std::set<std::string> ColumnsRead(const PlanNode& plan) {
  std::set<std::string> out;
  CollectRead(&plan, &out);
  return out;
}

void PruneColumns(PlanNode* plan) { PruneScans(plan, ColumnsRead(*plan)); }

}  // namespace sluice::sql
