// One task of a distributed SQL query, as the driver sends it to a `sluice worker` process
// inside a plan::RunSqlStage operator, and the code that runs it there.
//
// Format: the magic line "SLUICE-SQL-STAGE/2\n" followed by CBOR: the stage's plan as
// SLUICE-SQL-PLAN/1 bytes (decoded with all of that codec's checks), which scan is split, which
// plan nodes are read from shuffle files (with each file's BLAKE3 digest and the keys it was
// partitioned on), and the output exchange. The bytes are untrusted: every field is checked, the
// plan must have a shape whose split rows make a split output (StageShapeRefusal), and every key
// must be a valid store key under the query's shuffle folder.
//
// A task reads its inputs' files (checking each digest and schema), runs its plan on Acero with
// the split scan holding this task's subset of its table's files and the inputs standing in for
// their subtrees, splits the result by the hash of the output keys and writes one IPC file per
// partition. It writes under `<output_prefix>/<task>-<attempt>/`, so two attempts never share a
// file name and the driver decides, from the reports, which attempt's files the next stage
// reads.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <string>
#include <vector>

#include "exec/fragment_runner.h"
#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::sql {

inline constexpr char kStageTaskMagic[] = "SLUICE-SQL-STAGE/2\n";

/// Every shuffle folder lives under this store prefix; the driver removes its query's folder.
inline constexpr char kShufflePrefix[] = "_sluice/shuffle/";

/// A plan node whose rows a task reads from shuffle files instead of running its subtree.
struct StageTaskInput {
  /// The node, as an index into NodesOf(plan) (pre-order).
  int32_t node = 0;
  /// The columns its rows were hash-partitioned on (the worker checks the plan's shape by them).
  std::vector<std::string> partition_keys;
  /// This task's partition of every producing task, with their digests.
  std::vector<std::string> files;
  std::vector<std::string> blake3;
};

struct StageTask {
  /// "map", "join" or "final": for messages.
  std::string role = "map";
  /// SLUICE-SQL-PLAN/1 bytes of the stage's subtree; a split scan's file list is this task's
  /// subset.
  std::vector<uint8_t> plan;
  /// The split scan, as an index into ScansOf(plan), or -1.
  int32_t split_scan = -1;
  std::vector<StageTaskInput> inputs;
  /// The output exchange: hash on these columns into `partitions` files (no keys: one).
  std::vector<std::string> output_keys;
  int32_t partitions = 1;
  /// Write one row per distinct value of output_keys (a semi or anti join's build side).
  bool one_row_per_key = false;
  /// The folder of this stage's output: `_sluice/shuffle/q-<query id>/s<stage>`.
  std::string output_prefix;
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
