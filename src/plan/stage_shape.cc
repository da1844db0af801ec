#include "plan/stage_shape.h"

#include <optional>
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
// Rows split by a hash exchange also know the columns they are partitioned on (`keys`).
struct Shape {
  bool split = false;
  std::string refused;
  std::optional<std::vector<std::string>> keys;
};

// `keys` under the names a projection gives them, or none where it drops or computes one.
std::optional<std::vector<std::string>> ProjectedKeys(const PlanNode& project,
                                                      const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  for (const auto& k : keys) {
    std::optional<std::string> name;
    if (project.keep_input) name = k;
    for (size_t i = 0; !name && i < project.expressions.size(); ++i) {
      const arrow::FieldRef* ref = project.expressions[i].field_ref();
      if (ref != nullptr && ref->name() != nullptr && *ref->name() == k) name = project.names[i];
    }
    if (!name) return std::nullopt;
    out.push_back(*name);
  }
  return out;
}

class ShapeChecker {
 public:
  ShapeChecker(const PlanNode* split,
               const std::map<const PlanNode*, std::vector<std::string>>& inputs)
      : split_(split), inputs_(inputs) {}

  Shape Check(const PlanNode& n, bool at_top) {
    if (auto it = inputs_.find(&n); it != inputs_.end()) {
      reached_.insert(&n);
      return {true, "", it->second};
    }
    if (&n == split_) {
      reached_.insert(&n);
      return {true, "", std::nullopt};
    }
    switch (n.kind) {
      case PlanNode::Kind::kScan:
        return {};
      case PlanNode::Kind::kFilter:
        return Check(*n.input, false);
      case PlanNode::Kind::kProject: {
        Shape in = Check(*n.input, false);
        if (in.keys) in.keys = ProjectedKeys(n, *in.keys);
        return in;
      }
      case PlanNode::Kind::kJoin: {
        Shape l = Check(*n.input, false);
        if (!l.refused.empty()) return l;
        Shape r = Check(*n.right, false);
        if (!r.refused.empty()) return r;
        if (n.join_type == JoinType::kFull && l.split != r.split) {
          return {false, "a full outer join of split rows with whole ones", std::nullopt};
        }
        if (!r.split) return l;  // each output row comes from one row of `input`
        if (!l.split) {
          // An inner join's output rows each come from one row of `right` too.
          if (n.join_type == JoinType::kInner) return r;
          return {false, "split rows on the build side of a left, semi or anti join", std::nullopt};
        }
        if (l.keys != n.left_keys || r.keys != n.right_keys) {
          return {false, "a join of two split sides that are not partitions on its own keys",
                  std::nullopt};
        }
        return l;
      }
      case PlanNode::Kind::kAggregate: {
        Shape in = Check(*n.input, false);
        if (!in.refused.empty() || !in.split) return in;
        // A final aggregate over partials partitioned on its keys has every row of its groups
        // and no other task has any: its output is split, and partitioned on the same keys.
        if (n.final_phase) {
          if (in.keys != n.keys) {
            return {false, "a final aggregate over partials not partitioned on its keys",
                    std::nullopt};
          }
          return in;
        }
        if (!at_top) {
          return {false, "an aggregate over split rows below the stage's top", std::nullopt};
        }
        return in;  // partials: the final stage merges them
      }
      case PlanNode::Kind::kWindow: {
        Shape in = Check(*n.input, false);
        if (!in.refused.empty() || !in.split) return in;
        // Every partition's rows must be in one task: split rows partitioned on its keys.
        for (const auto& w : n.windows) {
          if (!in.keys || w.partition_keys.empty() || *in.keys != w.partition_keys) {
            return {false, "a window over split rows not partitioned on its PARTITION BY keys",
                    std::nullopt};
          }
        }
        return in;
      }
      case PlanNode::Kind::kUnion: {
        Shape l = Check(*n.input, false);
        if (!l.refused.empty()) return l;
        Shape r = Check(*n.right, false);
        if (!r.refused.empty()) return r;
        if (l.split || r.split) return {false, "a union over split rows", std::nullopt};
        return l;
      }
      case PlanNode::Kind::kSort:
      case PlanNode::Kind::kLimit: {
        Shape in = Check(*n.input, false);
        if (!in.refused.empty() || !in.split) return in;
        return {
            false,
            n.kind == PlanNode::Kind::kSort ? "a sort over split rows" : "a limit over split rows",
            std::nullopt};
      }
      default:
        break;
    }
    return {false, "an operator the stage planner does not know", std::nullopt};
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
