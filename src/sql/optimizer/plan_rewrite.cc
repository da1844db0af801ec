#include "sql/optimizer/plan_rewrite.h"

#include <algorithm>

namespace sluice::sql {

bool HasColumn(const PlanNode& node, const std::string& name) {
  const std::vector<std::string> names = node.OutputNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

namespace {

arrow::Status Below(std::unique_ptr<PlanNode>* slot,
                    const std::function<arrow::Status(std::unique_ptr<PlanNode>*)>& visit) {
  PlanNode* node = slot->get();
  if (node == nullptr) return arrow::Status::OK();
  ARROW_RETURN_NOT_OK(Below(&node->input, visit));
  ARROW_RETURN_NOT_OK(Below(&node->right, visit));
  for (auto& item : node->items) ARROW_RETURN_NOT_OK(Below(&item, visit));
  return visit(slot);
}

}  // namespace

std::optional<std::string> SourceColumn(const PlanNode& project, const std::string& name) {
  for (size_t i = 0; i < project.names.size(); ++i) {
    if (project.names[i] != name) continue;
    const auto* ref = project.expressions[i].field_ref();
    if (ref == nullptr || ref->name() == nullptr) return std::nullopt;
    return *ref->name();
  }
  if (project.keep_input && HasColumn(*project.input, name)) return name;
  return std::nullopt;
}

arrow::compute::Expression RenameColumns(const arrow::compute::Expression& e,
                                         const std::map<std::string, std::string>& to) {
  if (const auto* ref = e.field_ref(); ref != nullptr && ref->name() != nullptr) {
    auto it = to.find(*ref->name());
    return it == to.end() ? e : arrow::compute::field_ref(it->second);
  }
  if (const auto* call = e.call()) {
    std::vector<arrow::compute::Expression> args;
    for (const auto& a : call->arguments) args.push_back(RenameColumns(a, to));
    return arrow::compute::call(call->function_name, std::move(args), call->options);
  }
  return e;
}

double ScanRows(const PlanNode& node) {
  double rows = 0;
  if (node.kind == PlanNode::Kind::kScan && node.table != nullptr) {
    rows += static_cast<double>(std::max<int64_t>(node.table->num_rows, 0));
  }
  if (node.input != nullptr) rows += ScanRows(*node.input);
  if (node.right != nullptr) rows += ScanRows(*node.right);
  for (const auto& item : node.items) rows += ScanRows(*item);
  return rows;
}

arrow::Status RewriteBottomUp(
    PlanNode* plan, const std::function<arrow::Status(std::unique_ptr<PlanNode>*)>& visit) {
  // The root may be replaced too: it moves into a slot of its own and back.
  auto root = std::make_unique<PlanNode>(std::move(*plan));
  arrow::Status st = Below(&root, visit);
  *plan = std::move(*root);
  return st;
}

}  // namespace sluice::sql
