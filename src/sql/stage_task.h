// One task of a distributed SQL query, as the driver sends it to a `sluice worker` process
// inside a plan::RunSqlStage operator, and the code that runs it there.
//
// Format: the magic line "SLUICE-SQL-STAGE/1\n" followed by CBOR: the role, the stage's plan as
// SLUICE-SQL-PLAN/1 bytes (decoded with all of that codec's checks), the shuffle layout and,
// for a final task, the shuffle files to read with their BLAKE3 digests. The bytes are
// untrusted: every field is checked, the plan must have the shape its role runs, and every key
// must be a valid store key under the query's shuffle folder.
//
// A map task runs its plan (a partial aggregate over a subtree in which one scan, the split scan,
// holds this task's subset of its table's files and every other scan its whole table), splits the
// rows by the hash of the partition keys and writes one IPC file per partition; a final task reads
// its partition's file of every map task, checks each digest and schema, runs its plan (the
// final aggregate) on them and writes the result as one IPC file. A task writes under
// `<output_prefix>/<task>-<attempt>/`, so two attempts never share a file name and the driver
// decides, from the reports, which attempt's files the next stage reads.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <string>
#include <vector>

#include "exec/fragment_runner.h"
#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::sql {

inline constexpr char kStageTaskMagic[] = "SLUICE-SQL-STAGE/1\n";

/// Every shuffle folder lives under this store prefix; the driver removes its query's folder.
inline constexpr char kShufflePrefix[] = "_sluice/shuffle/";

struct StageTask {
  enum class Role { kMap, kFinal };
  Role role = Role::kMap;
  /// SLUICE-SQL-PLAN/1 bytes. Map: a partial aggregate over a subtree the stage planner accepts
  /// (ChooseSplit), whose split scan's file list is this task's subset. Final: a final aggregate
  /// over a partial one, whose partial rows come from `input_keys` instead of running the partial's
  /// subtree.
  std::vector<uint8_t> plan;
  /// Map: the columns the partial rows are partitioned on (the final aggregate's keys).
  std::vector<std::string> partition_keys;
  /// Map: the split scan, as an index into ScansOf(plan) (pre-order). The worker checks that it
  /// is a scan whose splitting splits the plan's output.
  int32_t split_scan = 0;
  /// Map: the number of shuffle files to write.
  int32_t partitions = 1;
  /// The folder of this stage's output: `_sluice/shuffle/q-<query id>/s<stage>`.
  std::string output_prefix;
  /// Final: the shuffle files to read, one per map task, with their digests.
  std::vector<std::string> input_keys;
  std::vector<std::string> input_blake3;
};

arrow::Result<std::vector<uint8_t>> EncodeStageTask(const StageTask& task);
/// Checks the shape of the bytes; the plan inside is decoded (and checked) by RunStageTask.
arrow::Result<StageTask> DecodeStageTask(const uint8_t* data, size_t size);

/// `<output_prefix>/<task>-<attempt>/part-<p>.arrow`.
std::string ShuffleFileKey(const std::string& output_prefix, const std::string& task,
                           int32_t attempt, int32_t partition);

/// Runs the stage task carried by `fragment` (one RunSqlStage operator) and reports the files it
/// wrote. Never throws; errors are reports with status "error" that name the task and file.
/// Test hook: SLUICE_FAILPOINT=kill:<task>:<attempt|*> SIGKILLs the worker before it writes,
/// kill-after-write:<task>:<attempt|*> after it wrote its files (leaving stale output behind).
exec::TaskReport RunStageTask(const plan::Fragment& fragment, const exec::ProgressFn& progress);

}  // namespace sluice::sql
