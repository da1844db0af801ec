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

void Walk(const PlanNode& node, StagePlan* out, bool* saw_pair) {
  if (IsCutPair(node)) {
    *saw_pair = true;
    const PlanNode* scan = SingleTablePipeline(*node.input->input);
    if (scan != nullptr) {
      AggregateCut cut;
      cut.final_aggregate = &node;
      cut.partial = node.input.get();
      cut.scan = scan;
      out->cuts.push_back(cut);
      return;  // below a cut there is only the pipeline
    }
  }
  if (node.input != nullptr) Walk(*node.input, out, saw_pair);
  if (node.right != nullptr) Walk(*node.right, out, saw_pair);
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

}  // namespace

const PlanNode* SingleTablePipeline(const PlanNode& node) {
  const PlanNode* at = &node;
  while (at->kind == PlanNode::Kind::kFilter || at->kind == PlanNode::Kind::kProject) {
    if (at->input == nullptr || at->right != nullptr) return nullptr;
    at = at->input.get();
  }
  return at->kind == PlanNode::Kind::kScan ? at : nullptr;
}

StagePlan PlanStages(const PlanNode& root) {
  StagePlan out;
  bool saw_pair = false;
  Walk(root, &out, &saw_pair);
  for (size_t i = 0; i < out.cuts.size(); ++i) out.cuts[i].map_stage = static_cast<int>(2 * i + 1);
  out.driver_stage = static_cast<int>(2 * out.cuts.size() + 1);
  if (out.cuts.empty()) {
    out.not_cut_reason = saw_pair ? "every aggregate's input joins tables (not cut yet)"
                                  : "the query has no aggregate to split";
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
        << cut.scan->table->name << "'s " << cut.scan->table->files.size()
        << " files; exchange: hash on [" << Join(cut.final_aggregate->keys) << "] into "
        << partitions << " partitions\n";
    out << "  stage " << cut.map_stage + 1 << " (final): " << partitions
        << " tasks, one per partition, each reading all " << map_tasks
        << " map tasks' files; exchange: gather to the driver\n";
    std::function<void(const PlanNode&)> map_marks = [&](const PlanNode& n) {
      mark[&n] = "stage " + std::to_string(cut.map_stage);
      if (n.input != nullptr) map_marks(*n.input);
    };
    map_marks(*cut.partial);
    mark[cut.final_aggregate] = "stage " + std::to_string(cut.map_stage + 1);
  }
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
