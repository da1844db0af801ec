// `sluice query`: one SQL statement, from text to a result table (or a message for DDL, or plan
// text for EXPLAIN), using the external tables registered in the registry.
#pragma once

#include <arrow/result.h>
#include <arrow/table.h>

#include <cstdint>
#include <string>

#include "common/config.h"
#include "plan/plan_node.h"

namespace sluice::sql {

struct QueryResult {
  /// Set for SELECT, unless RunOptions::stream gave `stream` instead.
  std::shared_ptr<arrow::Table> table;
  /// The plan `stream` runs; declared before it, so that the stream is destroyed first.
  std::shared_ptr<const plan::PlanNode> stream_plan;
  /// With RunOptions::stream, set for a SELECT run in this process: its rows as they are
  /// computed, so that a caller writing them out holds a few batches, not the result.
  std::shared_ptr<arrow::RecordBatchReader> stream;
  /// Set for DDL and EXPLAIN.
  std::string message;
};

struct RunOptions {
  /// Worker processes for the stages of a distributed query (see distributed_query.h); 0 runs
  /// the whole query in this process. A plan that cannot be cut runs in-process, with a note on
  /// stderr.
  int workers = 0;
  /// A join's build side whose tables weigh more than this is hash-partitioned with its probe
  /// side instead of read whole by every task; below 0, the planner's default.
  int64_t broadcast_limit_bytes = -1;
  /// "local": stages run on worker processes here; "ray": as Ray tasks on the cluster at
  /// RAY_ADDRESS (dist/ray_executor.h), with workers 0 meaning one task per cluster CPU.
  std::string executor = "local";
  /// An in-process SELECT returns its rows as QueryResult::stream instead of a table (an error
  /// met while running then comes from reading it).
  bool stream = false;
};

arrow::Result<QueryResult> RunQuery(const Config& config, const std::string& sql,
                                    const RunOptions& options = {});

}  // namespace sluice::sql
