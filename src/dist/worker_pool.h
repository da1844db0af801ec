// Runs a stage's tasks in `sluice worker` processes, at most `workers` at a time.
//
// Each task gets a fresh process: the driver writes the encoded fragment to its stdin and reads
// the report from the last line of its stdout (a transform's stray prints before it do not
// matter). A worker that crashes, is killed, or exits without a report is retried in a new
// process with attempt + 1, up to max_attempts. A report with status "error" is a user or data
// error: it is not retried, no further tasks start, and the stage fails with that message.
//
// Thread-safety: RunStage may be called from one thread at a time; on_report is called from the
// pool's threads, one call at a time.
#pragma once

#include <arrow/result.h>

#include <functional>
#include <string>
#include <vector>

#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::dist {

struct PoolOptions {
  int workers = 2;
  int max_attempts = 3;
  /// The sluice binary; its `worker` subcommand runs a fragment.
  std::string worker_binary;
  /// Called for every finished task.
  std::function<void(const exec::TaskReport&)> on_report;
};

/// Runs every fragment; returns the reports in fragment order.
arrow::Result<std::vector<exec::TaskReport>> RunStage(std::vector<plan::Fragment> fragments,
                                                      const PoolOptions& options);

/// Runs one fragment attempt in a child process. A crash is an IOError (retryable); the
/// returned report may still carry status "error".
arrow::Result<exec::TaskReport> RunInWorker(const plan::Fragment& fragment,
                                            const std::string& worker_binary);

/// The path of the running executable.
std::string SelfExecutable();

}  // namespace sluice::dist
