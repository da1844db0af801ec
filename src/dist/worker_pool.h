// Runs a stage's tasks in `sluice worker` processes, at most `workers` at a time.
//
// Each task gets a fresh process (see worker_process.h for how it is started and watched): the
// driver writes the encoded fragment to its stdin and reads the report from the last line of its
// stdout (a transform's stray prints before it do not matter). While it runs, the worker says
// what it is doing on its progress channel, so that every failure below names the stage and the
// object even when the worker is killed.
//
// - A worker that crashes (abort, segfault), is killed by someone else, or exits without a report
//   is retried in a new process with attempt + 1, up to max_attempts; each retry is announced on
//   stderr, and the last failure names the task, the signal and what the worker was doing.
// - A worker that passes its time or memory limit is killed with its whole process group and is
//   NOT retried: it would only do the same again. The stage fails naming the limit, the stage
//   and the object.
// - A report with status "error" is a user or data error: it is not retried either.
// After any of these no further tasks start, running ones are killed, and the stage fails.
//
// Thread-safety: RunStage may be called from one thread at a time; on_report is called from the
// pool's threads, one call at a time.
#pragma once

#include <arrow/result.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::dist {

/// The default wall-clock limit of one task attempt: long enough for any task the job compiler
/// cuts (tens of MiB of input each), short enough that a stuck transform fails its run within
/// minutes.
inline constexpr int64_t kDefaultTaskTimeoutSeconds = 600;

struct PoolOptions {
  int workers = 2;
  int max_attempts = 3;
  /// The sluice binary; its `worker` subcommand runs a fragment.
  std::string worker_binary;
  /// Called for every finished task.
  std::function<void(const exec::TaskReport&)> on_report;
  /// Wall-clock limit of one task attempt.
  int64_t task_timeout_seconds = kDefaultTaskTimeoutSeconds;
  /// Memory limit of one task attempt (its worker's process group); 0: the machine's physical
  /// memory divided by `workers`.
  int64_t task_memory_bytes = 0;
  /// Paths that no worker may see (the signing keys, a SQLite registry); see HidePaths.
  std::vector<std::string> hidden_paths{};
};

/// Runs every fragment; returns the reports in fragment order.
arrow::Result<std::vector<exec::TaskReport>> RunStage(std::vector<plan::Fragment> fragments,
                                                      const PoolOptions& options);

/// Runs one fragment attempt in a child process under the options' limits. A crash is an
/// IOError (retryable); a task stopped at a limit, like a user error, comes back as a report
/// with status "error". `cancel`, when set, kills the worker.
arrow::Result<exec::TaskReport> RunInWorker(const plan::Fragment& fragment,
                                            const PoolOptions& options,
                                            const std::atomic<bool>* cancel = nullptr);

/// The memory limit that `options` give each task, in bytes.
int64_t TaskMemoryBytes(const PoolOptions& options);

/// The path of the running executable.
std::string SelfExecutable();

}  // namespace sluice::dist
