// The stage planner of a distributed query: where a bound plan is cut into stages that worker
// processes run. It cuts at a partial aggregate and the final one above it:
//
//   map stage    one task per group of one table's files (the split table) runs the subtree
//                below the partial aggregate and the partial aggregate itself, and
//                hash-partitions the partial rows on the final aggregate's keys (a global
//                aggregate has one partition);
//   final stage  one task per partition merges the partials of every map task;
//   driver       runs the rest of the plan in-process on the final stage's results (gather).
//
// The subtree below the partial aggregate may join tables. Exactly one scan in it is split; every
// other scan is a broadcast by re-scan: each map task reads that table whole from storage. This
// is right only where splitting the split table's rows splits the subtree's output rows, so that
// the map tasks' outputs are disjoint and together make the whole:
//   - filters and projections work row by row;
//   - a join's output rows each come from exactly one row of its `input` side, and which rows a
//     given `input` row yields depends on that row and the WHOLE `right` side only: true of an
//     inner join, a left join (`input` is the preserved side), and a semi or anti join (`input`
//     is the side whose rows are kept), whichever side the hash table is built on
//     (`build_input` is a physical choice; the rows are the same). So the split scan may sit on
//     the `input` side of a join, recursively, and never on `right`: splitting `right` would
//     null-pad, keep or drop `input` rows once per task;
//   - an aggregate, a sort or a limit needs all of its input rows: the split scan is never
//     below one (within the subtree). A broadcast subtree may hold an aggregate (a scalar or IN
//     subquery): each task computes it over the whole table.
// A sort or limit anywhere in the subtree, or any operator kind not named here, refuses the cut.
// The split scan is the largest splittable one by bytes (then rows). When the tables broadcast
// to every task weigh more than the split one (the largest table sits on a build side, say),
// the cut is refused: each task would re-read more than it splits. A refused cut runs
// in-process, with its reason: slower, never wrong.
//
// A plan can have several cuts (one per qualifying aggregate). Partitioning on the FINAL keys is
// what keeps count(DISTINCT) right: its partial step is a DISTINCT on the keys and the value,
// and all rows of a group must meet in one final task for count_distinct to count each value
// once.
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
  /// The scan below the partial aggregate whose files are divided among the map tasks.
  const PlanNode* scan = nullptr;
  /// Every other scan below the partial aggregate, in pre-order: each map task reads them whole.
  std::vector<const PlanNode*> broadcast;
  /// Stage ids: map_stage, map_stage + 1 is the final stage.
  int map_stage = 0;
};

struct StagePlan {
  /// In the order of a pre-order walk of the plan.
  std::vector<AggregateCut> cuts;
  /// Partial/final pairs that were not cut, each with why, in one line each.
  std::vector<std::string> refused;
  /// When there are no cuts: why, in one line.
  std::string not_cut_reason;
  /// The driver's stage id (the last).
  int driver_stage = 1;

  int stage_count() const { return driver_stage; }
};

/// The split and broadcast scans of a map stage whose subtree is `map_input` (the partial
/// aggregate's input), or, with `scan` null, why it cannot be a map stage.
struct SplitChoice {
  const PlanNode* scan = nullptr;
  std::vector<const PlanNode*> broadcast;
  std::string refused;
};
SplitChoice ChooseSplit(const PlanNode& map_input);

/// Why no map task can run `map_input` with some scan split (a sort or limit in it, no
/// splittable scan), or empty: the soundness half of ChooseSplit, which workers check again.
std::string MapShapeRefusal(const PlanNode& map_input);

/// Every scan below `node` (itself included), in pre-order, `input` before `right`: the order in
/// which a map task's stage bytes name its split scan.
std::vector<const PlanNode*> ScansOf(const PlanNode& node);

/// The scans below `node` whose splitting splits `node`'s output (see the top of this file).
std::vector<const PlanNode*> SplittableScans(const PlanNode& node);

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
