#include "plan/stage_shape.h"

#include <set>

namespace sluice::plan {

namespace {

void CollectScans(const PlanNode& node, std::vector<const PlanNode*>* out) {
  if (node.kind == PlanNode::Kind::kScan) out->push_back(&node);
  if (node.input != nullptr) CollectScans(*node.input, out);
  if (node.right != nullptr) CollectScans(*node.right, out);
}

void CollectNodes(const PlanNode& node, std::vector<const PlanNode*>* out) {
  out->push_back(&node);
  if (node.input != nullptr) CollectNodes(*node.input, out);
  if (node.right != nullptr) CollectNodes(*node.right, out);
}

// Whether a subtree's rows are split among a stage's tasks, or why the subtree breaks the rules.
struct Shape {
  bool split = false;
  std::string refused;
};

class ShapeChecker {
 public:
  ShapeChecker(const PlanNode* split,
               const std::map<const PlanNode*, std::vector<std::string>>& inputs)
      : split_(split), inputs_(inputs) {}

  Shape Check(const PlanNode& n, bool at_top) {
    if (inputs_.count(&n) != 0 || &n == split_) {
      reached_.insert(&n);
      return {true, ""};
    }
    switch (n.kind) {
      case PlanNode::Kind::kScan:
        return {};
      case PlanNode::Kind::kFilter:
      case PlanNode::Kind::kProject:
        return Check(*n.input, false);
      case PlanNode::Kind::kJoin: {
        Shape l = Check(*n.input, false);
        if (!l.refused.empty()) return l;
        Shape r = Check(*n.right, false);
        if (!r.refused.empty()) return r;
        if (!r.split) return l;
        if (!l.split) return {false, "split rows on a join's build side"};
        auto li = inputs_.find(n.input.get());
        auto ri = inputs_.find(n.right.get());
        if (li == inputs_.end() || ri == inputs_.end() || li->second != n.left_keys ||
            ri->second != n.right_keys) {
          return {false, "a join of two split sides that are not partitions on its own keys"};
        }
        return {true, ""};
      }
      case PlanNode::Kind::kAggregate: {
        Shape in = Check(*n.input, false);
        if (!in.refused.empty() || !in.split) return in;
        if (!at_top) return {false, "an aggregate over split rows below the stage's top"};
        if (!n.final_phase) return in;  // partials: the final stage merges them
        auto it = inputs_.find(n.input.get());
        if (it == inputs_.end() || it->second != n.keys) {
          return {false, "a final aggregate over partials not partitioned on its keys"};
        }
        return in;
      }
      case PlanNode::Kind::kSort:
      case PlanNode::Kind::kLimit: {
        Shape in = Check(*n.input, false);
        if (!in.refused.empty() || !in.split) return in;
        return {false, n.kind == PlanNode::Kind::kSort ? "a sort over split rows"
                                                       : "a limit over split rows"};
      }
      default:
        break;
    }
    return {false, "an operator the stage planner does not know"};
  }

  bool ReachedAll() const {
    return reached_.size() == inputs_.size() + (split_ != nullptr ? 1 : 0);
  }

 private:
  const PlanNode* split_;
  const std::map<const PlanNode*, std::vector<std::string>>& inputs_;
  std::set<const PlanNode*> reached_;
};

}  // namespace

std::string StageShapeRefusal(const PlanNode& root, const PlanNode* split,
                              const std::map<const PlanNode*, std::vector<std::string>>& inputs) {
  if (split != nullptr && split->kind != PlanNode::Kind::kScan) return "the split is not a scan";
  if (split == nullptr && inputs.empty()) return "the stage splits nothing";
  if (split != nullptr && !inputs.empty()) return "a stage both splits a scan and reads partitions";
  if (inputs.count(&root) != 0) return "the stage's top is read from another stage";
  ShapeChecker checker(split, inputs);
  Shape shape = checker.Check(root, true);
  if (!shape.refused.empty()) return shape.refused;
  if (!checker.ReachedAll()) {
    return "a split scan or partition input that its stage's plan does not reach";
  }
  if (!shape.split) return "the stage's output is not split: every task would compute all of it";
  return "";
}

std::vector<const PlanNode*> NodesOf(const PlanNode& node) {
  std::vector<const PlanNode*> out;
  CollectNodes(node, &out);
  return out;
}

std::vector<const PlanNode*> ScansOf(const PlanNode& node) {
  std::vector<const PlanNode*> out;
  CollectScans(node, &out);
  return out;
}

}  // namespace sluice::plan
