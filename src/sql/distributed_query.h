// The driver of a distributed query: puts an Exchange node where the stage planner
// (stage_planner.h) placed each exchange, has the stage cutter (dist/stage_cutter.h) make the
// stages' tasks, the one jobs use, and the stage scheduler (dist/stage_scheduler.h) run them,
// producers first, on one pool of long-lived `sluice worker` processes for the whole query, so
// crashed tasks are retried and time and memory limits apply, and runs the rest of the plan
// in-process on what the gathering stages produced.
//
// Shuffle files live in the session's store (SLUICE_STORE), not the table's: the session store
// is where sluice keeps its own state (_sluice/), it is writable wherever sluice runs, and a
// table may sit at a read-only path or in a bucket the query may only read. Every file of a
// query is under `_sluice/shuffle/q-<query id>/s<stage>/<task>-<attempt>/part-<p>.arrow`; the
// next stage reads only the files of the attempt whose report the pool returned, and the
// query's folder is removed when the query ends, whether it succeeded or not.
// EXPLAIN ANALYZE's lines end with `total shuffle: <n> bytes written, <m> bytes read`.
//
// Thread-safety: one call at a time per plan; the pool's threads only read the encoded tasks.
#pragma once

#include <arrow/result.h>
#include <arrow/table.h>

#include <memory>
#include <string>
#include <vector>

#include "dist/ray_executor.h"
#include "sql/binder.h"
#include "sql/stage_planner.h"
#include "storage/object_store.h"

namespace sluice::sql {

struct DistributedOptions {
  /// Worker processes at a time (>= 1).
  int workers = 1;
  /// The session store, where the shuffle lives, and its URL (sent to workers).
  std::shared_ptr<storage::ObjectStore> store;
  std::string store_url;
  /// Where workers cache verified artifacts (function libraries) by digest.
  std::string cache_dir;
  /// The digests of the function libraries the plan calls (BoundQuery::libraries), which every
  /// task's session spec lists.
  std::vector<std::string> libraries;
  /// The sluice binary whose `worker` subcommand runs a task; empty: this executable.
  std::string worker_binary;
  /// Attempts per task before the query fails.
  int max_attempts = 3;
  /// When set, the stages run as Ray tasks through it instead of on local worker processes.
  std::shared_ptr<dist::RayExecutor> ray;
};

/// Runs `query` cut as `stages` (which must have at least one stage). With `analyze`, appends one
/// line per stage and task (rows, bytes, time, shuffle bytes written and read, and which map
/// attempts' files each final task read) for EXPLAIN ANALYZE.
arrow::Result<std::shared_ptr<arrow::Table>> RunDistributed(const BoundQuery& query,
                                                            const StagePlan& stages,
                                                            const DistributedOptions& options,
                                                            std::string* analyze = nullptr);

}  // namespace sluice::sql
