// EXPLAIN ANALYZE's measurements: a pass-through Acero node placed above each plan operator
// that counts the rows and batches the operator produced and when (since the query started) it
// produced its first and last batch. Acero pipelines operators, so "when its output finished"
// is the honest per-operator time: a pipeline breaker (aggregate, join build, sort) shows as the
// step where the finish time jumps.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/result.h>

#include <atomic>
#include <chrono>
#include <memory>

namespace sluice::exec {

struct OperatorStats {
  std::atomic<int64_t> rows{0};
  std::atomic<int64_t> batches{0};
  std::atomic<int64_t> first_ns{-1};
  std::atomic<int64_t> last_ns{-1};
  std::chrono::steady_clock::time_point start;

  /// "rows=N batches=B first=X ms done=Y ms"
  std::string ToString() const;
};

/// `decl` followed by a probe recording into `stats`.
arrow::Result<arrow::acero::Declaration> WithProbe(arrow::acero::Declaration decl,
                                                   std::shared_ptr<OperatorStats> stats);

}  // namespace sluice::exec
