#include "exec/shared_subplans.h"

#include <arrow/compute/api.h>

#include <map>
#include <string>

namespace sluice::exec {

using plan::PlanNode;

namespace {

namespace cp = arrow::compute;

// Compares two subplans while it learns a one-to-one renaming of the first's columns into the
// second's.
class Matcher {
 public:
  bool Name(const std::string& a, const std::string& b) {
    auto [ab, fresh_a] = forward_.emplace(a, b);
    auto [ba, fresh_b] = backward_.emplace(b, a);
    return ab->second == b && ba->second == a;
  }

  bool Names(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!Name(a[i], b[i])) return false;
    }
    return true;
  }

  bool Expr(const cp::Expression& a, const cp::Expression& b) {
    if (const auto* ra = a.field_ref()) {
      const auto* rb = b.field_ref();
      if (rb == nullptr) return false;
      if (ra->name() == nullptr || rb->name() == nullptr) return a.Equals(b);
      return Name(*ra->name(), *rb->name());
    }
    if (const auto* la = a.literal()) {
      const auto* lb = b.literal();
      return lb != nullptr && la->Equals(*lb);
    }
    const auto* ca = a.call();
    const auto* cb = b.call();
    if (ca == nullptr || cb == nullptr || ca->function_name != cb->function_name ||
        ca->arguments.size() != cb->arguments.size()) {
      return false;
    }
    if ((ca->options == nullptr) != (cb->options == nullptr)) return false;
    if (ca->options != nullptr && !ca->options->Equals(*cb->options)) return false;
    for (size_t i = 0; i < ca->arguments.size(); ++i) {
      if (!Expr(ca->arguments[i], cb->arguments[i])) return false;
    }
    return true;
  }

  bool Node(const PlanNode& a, const PlanNode& b) {
    if (a.kind != b.kind || (a.input == nullptr) != (b.input == nullptr) ||
        (a.right == nullptr) != (b.right == nullptr) || !a.items.empty() || !b.items.empty()) {
      return false;
    }
    if (a.input != nullptr && !Node(*a.input, *b.input)) return false;
    if (a.right != nullptr && !Node(*a.right, *b.right)) return false;
    switch (a.kind) {
      case PlanNode::Kind::kScan:
        return a.table != nullptr && b.table != nullptr && SameTable(*a.table, *b.table) &&
               a.columns == b.columns && Names(a.names, b.names) &&
               Expr(a.scan_filter, b.scan_filter) && a.batch_rows == b.batch_rows &&
               a.split == b.split;
      case PlanNode::Kind::kFilter:
        return Expr(a.predicate, b.predicate);
      case PlanNode::Kind::kProject:
        if (a.keep_input != b.keep_input || a.expressions.size() != b.expressions.size() ||
            !Names(a.names, b.names)) {
          return false;
        }
        for (size_t i = 0; i < a.expressions.size(); ++i) {
          if (!Expr(a.expressions[i], b.expressions[i])) return false;
        }
        return true;
      case PlanNode::Kind::kAggregate:
        if (a.final_phase != b.final_phase || a.repeats_keys != b.repeats_keys ||
            !Names(a.keys, b.keys) || a.aggregates.size() != b.aggregates.size()) {
          return false;
        }
        for (size_t i = 0; i < a.aggregates.size(); ++i) {
          const auto& x = a.aggregates[i];
          const auto& y = b.aggregates[i];
          if (x.function != y.function || x.input.empty() != y.input.empty() ||
              (!x.input.empty() && !Name(x.input, y.input)) || !Name(x.output, y.output)) {
            return false;
          }
        }
        return true;
      case PlanNode::Kind::kJoin:
        return a.join_type == b.join_type && a.build_input == b.build_input &&
               a.null_equal_keys == b.null_equal_keys && Names(a.left_keys, b.left_keys) &&
               Names(a.right_keys, b.right_keys) && Expr(a.join_filter, b.join_filter);
      case PlanNode::Kind::kUnion:
        return Names(a.names, b.names);
      default:
        return false;
    }
  }

 private:
  std::map<std::string, std::string> forward_, backward_;
};

bool Skipped(const PlanNode& node, const std::function<bool(const PlanNode&)>& skip) {
  if (skip(node)) return true;
  for (const PlanNode* child : {node.input.get(), node.right.get()}) {
    if (child != nullptr && Skipped(*child, skip)) return true;
  }
  return false;
}

void CollectAggregates(const PlanNode& node, std::vector<const PlanNode*>* out) {
  if (node.kind == PlanNode::Kind::kAggregate && node.final_phase) out->push_back(&node);
  for (const PlanNode* child : {node.input.get(), node.right.get()}) {
    if (child != nullptr) CollectAggregates(*child, out);
  }
  for (const auto& item : node.items) CollectAggregates(*item, out);
}

bool Inside(const PlanNode& inner, const PlanNode& outer) {
  if (&inner == &outer) return true;
  for (const PlanNode* child : {outer.input.get(), outer.right.get()}) {
    if (child != nullptr && Inside(inner, *child)) return true;
  }
  return false;
}

}  // namespace

bool SameTable(const plan::TableSource& a, const plan::TableSource& b) {
  if (&a == &b) return true;
  if (a.format == plan::kMemoryFormat || b.format == plan::kMemoryFormat) return false;
  return a.name == b.name && a.location == b.location && a.format == b.format &&
         a.store == b.store && a.store_url == b.store_url && a.files == b.files &&
         a.row_group_ranges == b.row_group_ranges && a.provider == b.provider &&
         a.schema != nullptr && b.schema != nullptr && a.schema->Equals(*b.schema);
}

bool SameSubplan(const PlanNode& a, const PlanNode& b) { return Matcher().Node(a, b); }

std::vector<std::vector<const PlanNode*>> RepeatedAggregates(
    const PlanNode& root, const std::function<bool(const PlanNode&)>& skip) {
  std::vector<const PlanNode*> candidates;
  CollectAggregates(root, &candidates);  // outer ones before the ones inside them
  std::vector<std::vector<const PlanNode*>> groups;
  std::vector<const PlanNode*> taken;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const PlanNode* first = candidates[i];
    auto claimed = [&](const PlanNode* n) {
      for (const PlanNode* t : taken) {
        if (Inside(*n, *t)) return true;
      }
      return false;
    };
    if (claimed(first) || Skipped(*first, skip)) continue;
    std::vector<const PlanNode*> group = {first};
    for (size_t j = i + 1; j < candidates.size(); ++j) {
      const PlanNode* other = candidates[j];
      if (!claimed(other) && !Inside(*other, *first) && !Skipped(*other, skip) &&
          SameSubplan(*first, *other)) {
        group.push_back(other);
      }
    }
    if (group.size() < 2) continue;
    taken.insert(taken.end(), group.begin(), group.end());
    groups.push_back(std::move(group));
  }
  return groups;
}

}  // namespace sluice::exec
