#include "sql/optimizer/column_pruning.h"

#include <arrow/compute/expression.h>

#include <utility>
#include <vector>

#include "plan/conjuncts.h"

namespace sluice::sql {

namespace {

namespace cp = arrow::compute;

// What `node` itself reads of its inputs' columns.
void ReadBy(const PlanNode* node, std::set<std::string>* out) {
  switch (node->kind) {
    case PlanNode::Kind::kScan:
      plan::AddColumnNames(node->scan_filter, out);
      break;
    case PlanNode::Kind::kFilter:
      plan::AddColumnNames(node->predicate, out);
      break;
    case PlanNode::Kind::kProject:
      for (const auto& e : node->expressions) plan::AddColumnNames(e, out);
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
      plan::AddColumnNames(node->join_filter, out);
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
}

void CollectRead(const PlanNode* node, std::set<std::string>* out) {
  if (node == nullptr) return;
  ReadBy(node, out);
  CollectRead(node->input.get(), out);
  CollectRead(node->right.get(), out);
}

void NarrowFilters(std::unique_ptr<PlanNode>* slot, std::set<std::string> above,
                   PlanNode::Kind parent);

// NarrowFilters under `node`, which returns or passes up `above`.
void NarrowInputs(PlanNode* node, const std::set<std::string>& above) {
  const auto kind = node->kind;
  // What the inputs must give: what this operator reads, and what it passes on from them.
  std::set<std::string> below;
  ReadBy(node, &below);
  const bool passes_input = !(kind == PlanNode::Kind::kAggregate ||
                              (kind == PlanNode::Kind::kProject && !node->keep_input));
  if (passes_input) below.insert(above.begin(), above.end());
  const bool known = kind == PlanNode::Kind::kFilter || kind == PlanNode::Kind::kProject ||
                     kind == PlanNode::Kind::kAggregate || kind == PlanNode::Kind::kSort ||
                     kind == PlanNode::Kind::kLimit || kind == PlanNode::Kind::kJoin ||
                     kind == PlanNode::Kind::kWindow || kind == PlanNode::Kind::kUnion;
  for (auto* input : {&node->input, &node->right}) {
    if (*input == nullptr) continue;
    std::set<std::string> needed = below;
    if (!known) {  // an operator this pass does not know keeps all its input's columns
      for (auto& n : (*input)->OutputNames()) needed.insert(std::move(n));
    }
    NarrowFilters(
        input, std::move(needed),
        kind == PlanNode::Kind::kProject && node->keep_input ? PlanNode::Kind::kFilter : kind);
  }
}

// Above each filter of a scan whose own columns nothing above reads, a project that drops
// them, so a join or an aggregate above does not carry them (a string tested once, then hashed
// and copied with every row). The executor runs the three as one. Likewise above each join
// whose output has columns nothing above reads (its keys, mostly): the executor makes such a
// project, or a project that is already there, the join's own output, so that the join neither
// copies them into every joined row nor holds them for its hashed side, nor queues them in a
// join above that is still hashing (TPC-H Q9 carries 14 columns out of lineitem's join, of which
// 6 are read). Not under a project, which drops them itself, nor a join under a filter, which
// reads the join's output as it is (and a project there would make nested subqueries nest
// deeper). `above`: the columns the operators above `*slot` read, or return; `parent`: the kind
// of the operator above (a project that keeps its input's columns counts as a filter).
void NarrowFilters(std::unique_ptr<PlanNode>* slot, std::set<std::string> above,
                   PlanNode::Kind parent) {
  PlanNode* node = slot->get();
  const bool join = node->kind == PlanNode::Kind::kJoin;
  if (parent != PlanNode::Kind::kProject &&
      ((join && parent != PlanNode::Kind::kFilter) ||
       (node->kind == PlanNode::Kind::kFilter && node->input->kind == PlanNode::Kind::kScan))) {
    std::vector<std::string> keep;
    const std::vector<std::string> outputs = node->OutputNames();
    for (const auto& n : outputs) {
      if (above.count(n)) keep.push_back(n);
    }
    // A join none of whose columns is read (count(*)) keeps one, for its rows.
    if (keep.empty() && join && !outputs.empty()) keep.push_back(outputs[0]);
    if (!keep.empty() && keep.size() < outputs.size()) {
      auto project = MakeNode(PlanNode::Kind::kProject, std::move(*slot));
      for (const auto& n : keep) project->expressions.push_back(cp::field_ref(n));
      project->names = keep;
      *slot = std::move(project);
    }
  }
  NarrowInputs(node, above);
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

void AddColumnsReadBy(const PlanNode& node, std::set<std::string>* out) { ReadBy(&node, out); }

void PruneColumns(PlanNode* plan) {
  PruneScans(plan, ColumnsRead(*plan));
  const std::vector<std::string> outputs = plan->OutputNames();
  NarrowInputs(plan, std::set<std::string>(outputs.begin(), outputs.end()));
}

}  // namespace sluice::sql
