// The stage planner of a distributed query: where a bound plan is cut into stages that worker
// processes run. This first version cuts at a partial aggregate and the final one above it, when
// the partial aggregate's input is a pipeline over one table (scan, filter, project):
//
//   map stage    one task per group of the table's files runs the pipeline and the partial
//                aggregate, and hash-partitions the partial rows on the final aggregate's keys
//                (a global aggregate has one partition);
//   final stage  one task per partition merges the partials of every map task;
//   driver       runs the rest of the plan in-process on the final stage's results (gather).
//
// A plan can have several cuts (one per qualifying aggregate); every other operator, joins
// included, runs in the driver. Partitioning on the FINAL keys is what keeps count(DISTINCT)
// right: its partial step is a DISTINCT on the keys and the value, and all rows of a group must
// meet in one final task for count_distinct to count each value once.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sql/plan_node.h"

namespace sluice::sql {

/// One partial/final aggregate pair that runs as a map and a final stage.
struct AggregateCut {
  const PlanNode* final_aggregate = nullptr;
  const PlanNode* partial = nullptr;
  /// The one scan below the partial aggregate.
  const PlanNode* scan = nullptr;
  /// Stage ids: map_stage, map_stage + 1 is the final stage.
  int map_stage = 0;
};

struct StagePlan {
  /// In the order of a pre-order walk of the plan.
  std::vector<AggregateCut> cuts;
  /// When there are no cuts: why, in one line.
  std::string not_cut_reason;
  /// The driver's stage id (the last).
  int driver_stage = 1;

  int stage_count() const { return driver_stage; }
};

/// The scan at the bottom of a chain of filters and projections starting at `node`, or null
/// when the chain holds anything else (a join, an aggregate, a sort): what a map stage can run.
const PlanNode* SingleTablePipeline(const PlanNode& node);

/// Finds the cuts of `root`. The plan must outlive the result (it holds pointers into it).
StagePlan PlanStages(const PlanNode& root);

/// Map tasks of a cut for `files` files and `workers` workers: one task per file up to
/// kMaxMapTasksPerWorker tasks per worker, at least one.
int MapTaskCount(size_t files, int workers);

/// Files are grouped into at most this many tasks per worker: small enough that a retried task
/// redoes little, few enough that process start-up (~20 ms each) stays small against the scan.
inline constexpr int kMaxMapTasksPerWorker = 2;

/// The final stage's partitions: `workers`, or 1 for a global aggregate (no keys), whose
/// partials must all meet in one task.
int FinalPartitionCount(const AggregateCut& cut, int workers);

/// The plan with every operator marked with its stage, and a header line per stage with its
/// tasks and exchanges: EXPLAIN's form of a distributed query. `annotate`, when given, adds
/// text to an operator's line (EXPLAIN ANALYZE's measurements).
std::string ExplainStages(const PlanNode& root, const StagePlan& stages, int workers,
                          const std::function<std::string(const PlanNode&)>& annotate = {});

}  // namespace sluice::sql
