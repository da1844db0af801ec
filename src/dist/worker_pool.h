// Runs a stage's tasks in `sluice worker` processes, at most `workers` at a time.
//
// A WorkerPool keeps up to `workers` long-lived worker processes (SupervisedChild in
// worker_process.h: how each is started and watched) for all the stages a driver runs through it,
// so a process start and Arrow's initialization are paid once per worker, not once per task. The
// driver frames each task's encoded fragment on a worker's stdin and reads the framed report from
// the worker's report descriptor (a transform's prints go to /dev/null and cannot pass for one).
// While a task runs, the worker says what it is doing on its progress channel, so that every
// failure below names the stage and the object even when the worker is killed.
//
// - A worker that crashes (abort, segfault), is killed by someone else, or exits without a report
//   fails only the task it was running, which is retried in a new process with attempt + 1, up to
//   max_attempts; each retry is announced on stderr, and the last failure names the task, the
//   signal and what the worker was doing.
// - A worker that passes its time or memory limit is killed with its whole process group and is
//   NOT retried: it would only do the same again. The stage fails naming the limit, the stage
//   and the object.
// - A report with status "error" is a user or data error: it is not retried either.
// After any of these no further tasks start, running ones are killed, and the stage fails.
// A worker that died while idle lost no task: it is replaced, with a note on stderr.
//
// Thread-safety: RunStage may be called from one thread at a time; on_report is called from the
// pool's threads, one call at a time.
#pragma once

#include <arrow/result.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
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
  /// The Arrow memory pool the workers should allocate from (worker_memory.h); empty: Arrow's
  /// default.
  std::string memory_pool{};
  /// Threads in each worker's Arrow CPU pool; 0: Arrow's default, one per core.
  int cpu_threads = 0;
};

/// Arrow CPU threads for each of `workers` workers that share `cores` cores: the cores divided
/// among them, at least one. Measured with TPC-H at SF 1 on two cores with two workers: one
/// thread each took the 22 queries from 6.60 to 6.20 s, against two each (Arrow's default), whose
/// four threads took turns on the two cores.
int CpuThreadsPerWorker(int workers, unsigned cores);

class SupervisedChild;

/// Long-lived workers for the stages of one run or query. Workers start when a stage first
/// needs them; the destructor ends them all.
class WorkerPool {
 public:
  explicit WorkerPool(PoolOptions options);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Runs every fragment; returns the reports in fragment order.
  arrow::Result<std::vector<exec::TaskReport>> RunStage(std::vector<plan::Fragment> fragments);

  /// Starts every worker now rather than at its first task, so that their start-up (tens of
  /// milliseconds of loading Arrow) overlaps the caller's planning. A worker that cannot start
  /// here is tried again by its first task, which reports the error.
  void StartWorkers();

  /// How many worker processes this pool has started so far.
  int workers_started() const { return workers_started_.load(); }

 private:
  // Runs one fragment attempt on slot `slot`'s worker, starting one if it has none. A crash is
  // an IOError (retryable); a task stopped at a limit, like a user error, comes back as a report
  // with status "error". `cancel`, when set, kills the worker.
  arrow::Result<exec::TaskReport> RunTask(size_t slot, const plan::Fragment& fragment,
                                          const std::atomic<bool>* cancel);
  arrow::Status EnsureWorker(size_t slot);

  class Launcher;
  PoolOptions options_;
  std::unique_ptr<Launcher> launcher_;
  std::vector<std::unique_ptr<SupervisedChild>> slots_;
  std::atomic<int> workers_started_{0};
};

/// Runs every fragment on a pool of its own; returns the reports in fragment order.
arrow::Result<std::vector<exec::TaskReport>> RunStage(std::vector<plan::Fragment> fragments,
                                                      const PoolOptions& options);

/// The memory limit that `options` give each task, in bytes.
int64_t TaskMemoryBytes(const PoolOptions& options);

/// The path of the running executable.
std::string SelfExecutable();

}  // namespace sluice::dist
