// The stage planner of a distributed query: where Exchanges go in a bound plan, and the stages
// that worker processes run between them. Exchanges are an overlay on the plan (each stage
// names the plan nodes it reads from the stage below), so EXPLAIN, the in-process executor and
// the driver all work on one tree.
//
// A stage's rows are split among its tasks in one of two ways:
//   map    one task per worker, each with a contiguous share of one table's Parquet row groups
//          (or files) (the split scan);
//   join / final
//          one task per hash partition: task p reads partition p of every task of each stage
//          below it (a hash exchange).
// and its output leaves through one exchange:
//   hash   on keys into `partitions` files per task (the next stage's task p reads part p);
//   gather one file per task, which the driver reads (the final merge).
//
// Where the exchanges go:
//   - between a partial aggregate and its final one: hash on the final aggregate's keys (one
//     partition for a global aggregate), and a gather above the final aggregate and the
//     filters and projections right above it (HAVING, the select list: each task applies them
//     to its own groups); the driver runs the rest of the plan (ORDER BY, LIMIT, joins above the
//     aggregate) on what it gathered;
//   - a join below a cut aggregate whose build side (`right`) weighs more than the broadcast
//     limit, or more than the split probe side (every task would re-read it): hash on the join
//     keys on both sides, and the join runs in a join stage, one task per partition (a left,
//     semi or anti join's unmatched rows meet their only partition). A semi or anti join's build
//     side that is its keys alone drops repeated keys first (exec/key_repeats.h);
//   - a smaller build side is a broadcast by re-scan: every task of the stage reads it from
//     storage (no exchange); whole, or only the row groups whose join keys can meet the task's
//     share of the split table (plan/split_key_ranges.h). An inner join may split its build
//     side instead, every task re-reading the probe side, where that side weighs less.
// Which plans a stage may split, and why, is in plan/stage_shape.h: the planner follows those
// rules and every worker checks them again.
//
// Partitioning on the FINAL keys is what keeps count(DISTINCT) right: its partial step is a
// DISTINCT on the keys and the value, and all rows of a group must meet in one final task.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "plan/stage_shape.h"
#include "sql/plan_node.h"

namespace sluice::sql {

/// A build side whose tables weigh more than this is hash-partitioned with its probe side
/// rather than broadcast by re-scan (as is one that would outweigh the split probe side).
/// Measured at SF 1 on two cores: broadcasting orders (63 MB) to every lineitem task beat
/// hash-partitioning both sides (Q5: 0.59 s against 1.03 s: lineitem's 281 MB crossed the
/// exchange); past a few hundred MB, each task's copy of the build side's hash table is what a
/// worker's memory limit has to hold.
inline constexpr int64_t kDefaultBroadcastLimitBytes = int64_t{256} << 20;

/// A split table's row groups (or files) are grouped into at most this many map tasks per worker.
/// Measured at SF 1 on two cores: one task per worker made every query 5-20% faster than two
/// (each task pays a plan decode, footer reads and every broadcast table's re-scan), at the cost
/// of a retried task redoing a worker's whole share.
inline constexpr int kMaxMapTasksPerWorker = 1;

struct StageOptions {
  /// Worker processes (>= 1): hash exchanges have this many partitions.
  int workers = 1;
  int64_t broadcast_limit_bytes = kDefaultBroadcastLimitBytes;
};

enum class StageRole { kMap, kJoin, kFinal, kWindow };
/// "map", "join" or "final".
const char* StageRoleName(StageRole role);

/// A plan node whose rows a stage reads from the stage below it instead of running its subtree.
struct StageInput {
  const PlanNode* node = nullptr;
  /// The producing stage's index in StagePlan::stages.
  int producer = 0;
};

struct Stage {
  /// 1-based, in execution order; the driver's stage is StagePlan::driver_stage.
  int id = 0;
  StageRole role = StageRole::kMap;
  /// The stage runs this node's subtree, with `inputs` read in place of their subtrees.
  const PlanNode* root = nullptr;
  /// kMap: the scan whose files are divided among the tasks.
  const PlanNode* split = nullptr;
  /// kJoin and kFinal: hash-partitioned inputs; task p reads partition p of each.
  std::vector<StageInput> inputs;
  /// Every other scan in the stage, in pre-order: each task reads it whole.
  std::vector<const PlanNode*> broadcast;
  /// What re-reading them weighs in every task, against `bytes`.
  int64_t broadcast_bytes = 0;
  /// The output exchange: gather (one file per task, for the driver) or hash on output_keys.
  bool gather = false;
  std::vector<std::string> output_keys;
  int partitions = 1;
  /// Each task drops repeats of output_keys, to about one row per key: the build side of a semi
  /// or anti join, which asks only whether a key is there.
  bool one_row_per_key = false;
  /// kMap: MapTaskCount of the split table's units; otherwise the inputs' partition count.
  int tasks = 1;
  /// Bytes of the tables whose rows the stage splits (the split table, or every input's):
  /// what a broadcast is weighed against.
  int64_t bytes = 0;
};

struct StagePlan {
  /// Producers before their consumers.
  std::vector<Stage> stages;
  /// The nodes the driver reads from gathering stages, with the stage (index) of each.
  std::vector<StageInput> gathered;
  /// Aggregates that compute the same rows as one gathered (a WITH query or view read twice),
  /// each with that gathered node: the driver reads those rows, under the repeat's column names,
  /// and runs nothing of the repeat's subtree.
  std::vector<std::pair<const PlanNode*, const PlanNode*>> repeats;
  /// Partial/final pairs that were not cut, each with why, in one line each.
  std::vector<std::string> refused;
  /// When there are no stages: why, in one line.
  std::string not_cut_reason;
  /// The driver's stage id (the last).
  int driver_stage = 1;
  int workers = 1;

  int stage_count() const { return driver_stage; }
  bool cut() const { return !stages.empty(); }
};

/// Places the exchanges of `root` and cuts it into stages. The plan must outlive the result.
StagePlan PlanStages(const PlanNode& root, const StageOptions& options);

/// Map tasks for a table of `units` split units (TableSource::SplitUnits: row groups, else files)
/// and `workers` workers: one task per unit up to kMaxMapTasksPerWorker tasks per worker, at
/// least one.
int MapTaskCount(int64_t units, int workers);

/// One map task's share of its split table: the files it reads and, for Parquet files whose
/// row groups are known, which row groups of each.
struct SplitShare {
  std::vector<std::string> files;
  std::vector<std::pair<int32_t, int32_t>> row_group_ranges;
  /// What the share weighs: its row groups' compressed bytes, or its files'.
  int64_t bytes = 0;
};

/// `tasks` shares of `table`: contiguous runs of its units, each unit in exactly one share.
std::vector<SplitShare> SplitShares(const TableSource& table, int tasks);

/// The plan with every operator marked with its stage and every exchange with its kind, and a
/// header line per stage with its tasks and exchanges: EXPLAIN's form of a distributed query.
/// `annotate`, when given, adds text to an operator's line (EXPLAIN ANALYZE's measurements).
std::string ExplainStages(const PlanNode& root, const StagePlan& stages,
                          const std::function<std::string(const PlanNode&)>& annotate = {});

}  // namespace sluice::sql
