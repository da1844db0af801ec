#include "sql/stage_planner.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace sluice::sql {

namespace {

bool IsCutPair(const PlanNode& node) {
  return node.kind == PlanNode::Kind::kAggregate && node.final_phase && node.input != nullptr &&
         node.input->kind == PlanNode::Kind::kAggregate && !node.input->final_phase;
}

// Why a map task cannot run the subtree at `node`, or empty: a sort or limit needs the order or
// count of all rows, and a kind this planner does not know is refused rather than guessed at.
std::string MapSubtreeRefusal(const PlanNode& node) {
  switch (node.kind) {
    case PlanNode::Kind::kScan:
    case PlanNode::Kind::kFilter:
    case PlanNode::Kind::kProject:
    case PlanNode::Kind::kAggregate:
    case PlanNode::Kind::kJoin: {
      for (const PlanNode* child : {node.input.get(), node.right.get()}) {
        if (child == nullptr) continue;
        std::string why = MapSubtreeRefusal(*child);
        if (!why.empty()) return why;
      }
      return "";
    }
    case PlanNode::Kind::kSort:
      return "a sort below the partial aggregate";
    case PlanNode::Kind::kLimit:
      return "a limit below the partial aggregate";
  }
  return "an operator the stage planner does not know below the partial aggregate";
}

void CollectSplittable(const PlanNode& node, std::vector<const PlanNode*>* out) {
  switch (node.kind) {
    case PlanNode::Kind::kScan:
      out->push_back(&node);
      return;
    case PlanNode::Kind::kFilter:
    case PlanNode::Kind::kProject:
      if (node.input != nullptr) CollectSplittable(*node.input, out);
      return;
    case PlanNode::Kind::kJoin:
      switch (node.join_type) {
        case JoinType::kInner:
        case JoinType::kLeft:
        case JoinType::kSemi:
        case JoinType::kAnti:
          // Only the probe (preserved, kept) side: never `right`.
          if (node.input != nullptr) CollectSplittable(*node.input, out);
          return;
      }
      return;
    case PlanNode::Kind::kAggregate:
    case PlanNode::Kind::kSort:
    case PlanNode::Kind::kLimit:
      return;  // needs all of its input's rows
  }
}

void CollectScans(const PlanNode& node, std::vector<const PlanNode*>* out) {
  if (node.kind == PlanNode::Kind::kScan) out->push_back(&node);
  if (node.input != nullptr) CollectScans(*node.input, out);
  if (node.right != nullptr) CollectScans(*node.right, out);
}

// A scan's size for choosing the split: bytes, then rows.
bool Smaller(const PlanNode* a, const PlanNode* b) {
  if (a->table->total_bytes != b->table->total_bytes) {
    return a->table->total_bytes < b->table->total_bytes;
  }
  return a->table->num_rows < b->table->num_rows;
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

std::string TableNames(const std::vector<const PlanNode*>& scans) {
  std::vector<std::string> names;
  for (const PlanNode* s : scans) names.push_back(s->table->name);
  return Join(names);
}

void Walk(const PlanNode& node, StagePlan* out) {
  if (IsCutPair(node) && node.input->input != nullptr) {
    SplitChoice split = ChooseSplit(*node.input->input);
    if (split.scan != nullptr) {
      AggregateCut cut;
      cut.final_aggregate = &node;
      cut.partial = node.input.get();
      cut.scan = split.scan;
      cut.broadcast = std::move(split.broadcast);
      out->cuts.push_back(std::move(cut));
      return;  // below a cut, everything runs in its map tasks
    }
    out->refused.push_back(split.refused);
  }
  if (node.input != nullptr) Walk(*node.input, out);
  if (node.right != nullptr) Walk(*node.right, out);
}

}  // namespace

std::vector<const PlanNode*> ScansOf(const PlanNode& node) {
  std::vector<const PlanNode*> out;
  CollectScans(node, &out);
  return out;
}

std::vector<const PlanNode*> SplittableScans(const PlanNode& node) {
  std::vector<const PlanNode*> out;
  CollectSplittable(node, &out);
  return out;
}

std::string MapShapeRefusal(const PlanNode& map_input) {
  std::string why = MapSubtreeRefusal(map_input);
  if (why.empty() && SplittableScans(map_input).empty()) {
    why =
        "no table below the aggregate can be split: each sits on a join's build side or below "
        "an aggregate";
  }
  return why;
}

SplitChoice ChooseSplit(const PlanNode& map_input) {
  SplitChoice out;
  out.refused = MapShapeRefusal(map_input);
  if (!out.refused.empty()) return out;
  const std::vector<const PlanNode*> splittable = SplittableScans(map_input);
  const PlanNode* split = splittable[0];
  for (const PlanNode* s : splittable) {
    if (Smaller(split, s)) split = s;
  }
  int64_t broadcast_bytes = 0;
  for (const PlanNode* s : ScansOf(map_input)) {
    if (s == split) continue;
    out.broadcast.push_back(s);
    broadcast_bytes += s->table->total_bytes;
  }
  if (broadcast_bytes > split->table->total_bytes) {
    out.refused = "the tables every map task would re-read whole (" + TableNames(out.broadcast) +
                  ": " + std::to_string(broadcast_bytes) + " bytes) outweigh the split table " +
                  split->table->name + " (" + std::to_string(split->table->total_bytes) +
                  " bytes), which is the largest that can be split";
    out.broadcast.clear();
    return out;
  }
  out.scan = split;
  return out;
}

StagePlan PlanStages(const PlanNode& root) {
  StagePlan out;
  Walk(root, &out);
  for (size_t i = 0; i < out.cuts.size(); ++i) out.cuts[i].map_stage = static_cast<int>(2 * i + 1);
  out.driver_stage = static_cast<int>(2 * out.cuts.size() + 1);
  if (out.cuts.empty()) {
    out.not_cut_reason = out.refused.empty() ? "the query has no aggregate to split"
                                             : "no aggregate can be cut: " + out.refused[0];
  }
  return out;
}

int MapTaskCount(size_t files, int workers) {
  const size_t most = static_cast<size_t>(std::max(1, workers)) * kMaxMapTasksPerWorker;
  return static_cast<int>(std::max<size_t>(1, std::min(files, most)));
}

int FinalPartitionCount(const AggregateCut& cut, int workers) {
  return cut.final_aggregate->keys.empty() ? 1 : std::max(1, workers);
}

std::string ExplainStages(const PlanNode& root, const StagePlan& stages, int workers,
                          const std::function<std::string(const PlanNode&)>& annotate) {
  std::map<const PlanNode*, std::string> mark;
  std::ostringstream out;
  out << "distributed plan: " << stages.stage_count() << " stages on " << workers << " workers\n";
  for (const AggregateCut& cut : stages.cuts) {
    const int map_tasks = MapTaskCount(cut.scan->table->files.size(), workers);
    const int partitions = FinalPartitionCount(cut, workers);
    out << "  stage " << cut.map_stage << " (map): " << map_tasks << " tasks over "
        << cut.scan->table->name << "'s " << cut.scan->table->files.size() << " files (split)";
    if (!cut.broadcast.empty()) {
      out << "; broadcast by re-scan, read whole by every task: " << TableNames(cut.broadcast);
    }
    out << "; exchange: hash on [" << Join(cut.final_aggregate->keys) << "] into " << partitions
        << " partitions\n";
    out << "  stage " << cut.map_stage + 1 << " (final): " << partitions
        << " tasks, one per partition, each reading all " << map_tasks
        << " map tasks' files; exchange: gather to the driver\n";
    std::function<void(const PlanNode&)> map_marks = [&](const PlanNode& n) {
      mark[&n] = "stage " + std::to_string(cut.map_stage);
      if (n.input != nullptr) map_marks(*n.input);
      if (n.right != nullptr) map_marks(*n.right);
    };
    map_marks(*cut.partial);
    mark[cut.scan] += "] [split";
    for (const PlanNode* b : cut.broadcast) mark[b] += "] [broadcast";
    mark[cut.final_aggregate] = "stage " + std::to_string(cut.map_stage + 1);
  }
  for (const std::string& why : stages.refused) out << "  not cut: " << why << "\n";
  out << "  stage " << stages.driver_stage << " (driver): the rest of the plan, in-process\n";
  out << root.Explain(1, [&](const PlanNode& n) {
    auto it = mark.find(&n);
    std::string text =
        "[" + (it == mark.end() ? "stage " + std::to_string(stages.driver_stage) : it->second) +
        "]";
    if (annotate) {
      std::string more = annotate(n);
      if (!more.empty()) text += " " + more;
    }
    return text;
  });
  return out.str();
}

}  // namespace sluice::sql
