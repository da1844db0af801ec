// Runs a stage's tasks on a Ray cluster (`--executor ray`) instead of local worker processes.
//
// sluice's driver keeps every scheduling decision, exactly as with the local pool
// (worker_pool.h): stage order, attempt numbers and so attempt-unique shuffle file names, which
// attempt's files count, and when to stop retrying. Ray only runs tasks and decides where. A task
// is a Ray task, asking for one whole CPU, that runs `sluice worker` as a subprocess with the
// task's encoded fragment on stdin and returns its report (the last line of its stdout).
//
// The driver talks to Ray through a small Python bridge (ray_bridge.py, compiled into this
// binary) that it starts with SLUICE_RAY_PYTHON (default `python3`) and feeds over a pipe; no
// Ray C++ API is linked (its wheel is built with the old C++ string ABI, and exports thousands
// of gRPC and absl symbols). The bridge connects to RAY_ADDRESS, or starts a local Ray when it
// is unset.
//
// Retries, as the local pool does them:
// - a task whose worker dies by a signal or without a report, or whose node dies, is retried with
//   attempt + 1 (preferably on another node), up to max_attempts, with a note on stderr;
// - a report with status "error" (bad input, a failed transform) is a user or data error and is
//   not retried; neither is a task stopped at its time or memory limit, nor one whose node cannot
//   run it (no sluice binary there). The first of these cancels the stage's running tasks.
// Ray's own task retries are off: a retry by Ray would rerun the same attempt under the same
// file names without the driver knowing.
//
// Nodes share no disk: the store (SLUICE_STORE) must be one every node reaches, such as S3, and
// the same sluice build must be installed on every node (the session spec refuses another
// version by name).
//
// Thread-safety: RunStage may be called from one thread at a time; on_report is called from it.
// The bridge dies with the thread that started it (PR_SET_PDEATHSIG follows the thread), so Start
// must be called from a thread that outlives the executor: the main thread, or the thread that
// runs the whole query.
#pragma once

#include <arrow/result.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/stage_scheduler.h"
#include "dist/worker_pool.h"
#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::dist {

struct RayOptions {
  /// The Python interpreter with `ray` installed that runs the bridge.
  std::string python = "python3";
  /// The cluster (RAY_ADDRESS); empty: Ray's default (a local instance).
  std::string address;
  /// The sluice binary each task runs, at this path on every node.
  std::string worker_binary;
  int max_attempts = 3;
  /// Wall-clock and memory limits of one task attempt, enforced on its node; 0: none.
  int64_t task_timeout_seconds = kDefaultTaskTimeoutSeconds;
  int64_t task_memory_bytes = 0;
  /// Paths no worker may see (see worker_sandbox.h).
  std::vector<std::string> hidden_paths{};
};

/// RayOptions with `python` from SLUICE_RAY_PYTHON, `address` from RAY_ADDRESS and the worker
/// binary this executable.
RayOptions RayOptionsFromEnvironment();

/// The text of the Python bridge (ray_bridge.py), as compiled in.
extern const char* const kRayBridgeScript;

/// One bridge process and its Ray connection, for all the stages of one run or query.
class RayExecutor {
 public:
  /// Starts the bridge and waits until it has connected to Ray. Fails, naming the cause, when
  /// the interpreter cannot be started, lacks `ray`, or the cluster cannot be reached or has no
  /// CPU.
  static arrow::Result<std::shared_ptr<RayExecutor>> Start(RayOptions options);
  /// Closes the bridge: tasks still running are cancelled, and the bridge is killed if it has
  /// not exited within a grace period.
  ~RayExecutor();
  RayExecutor(const RayExecutor&) = delete;
  RayExecutor& operator=(const RayExecutor&) = delete;

  /// The cluster's CPUs when the bridge connected: how many tasks run at once.
  int cluster_cpus() const { return cpus_; }
  int cluster_nodes() const { return nodes_; }

  /// Runs every fragment as Ray tasks; returns the reports in fragment order.
  arrow::Result<std::vector<exec::TaskReport>> RunStage(std::vector<plan::Fragment> fragments,
                                                        const ReportFn& on_report);

  /// A runner for StageScheduler that runs its waves here; it keeps this executor alive.
  static TaskRunner Runner(std::shared_ptr<RayExecutor> executor);

 private:
  RayExecutor(RayOptions options, pid_t pid, int requests_fd, int replies_fd);
  // Ends a bridge that broke the protocol or died: its Ray job, and so its tasks, end with it.
  void Kill();
  arrow::Status Send(int64_t id, const plan::Fragment& fragment, const std::string& avoid_node);
  arrow::Status SendCancel();
  // The next reply, parsed; an IOError when the bridge has died or broke the protocol.
  arrow::Result<std::string> ReadFrame();

  RayOptions options_;
  pid_t pid_ = -1;
  int requests_fd_ = -1;
  int replies_fd_ = -1;
  int cpus_ = 0;
  int nodes_ = 0;
};

}  // namespace sluice::dist
