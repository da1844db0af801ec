// The one driver loop of a distributed run: `sluice submit`'s job stages and `sluice query`'s
// SQL stages both go through it.
//
// The stage cutter (stage_cutter.h) cuts a plan at its exchanges into stages, each naming the
// earlier stages it reads. The scheduler runs every stage whose producers are done together, as
// one wave (a join's two map stages, say, so that a stage of few tasks does not leave workers
// idle), on one pool of long-lived workers for the whole run (worker_pool.h: retries of a lost
// task, time and memory limits). A stage's fragments are built only when its wave starts, from its
// producers' reports: the next stage is handed exactly the files of each task's successful attempt,
// never a file found by listing.
//
// Every report must name exactly the shuffle files its own attempt had to write, or the run
// fails: the stage says which (a SQL task writes `<stage folder>/<task>-<attempt>/part-<p>.arrow`,
// so two attempts never share a name). The reports of each
// stage, one per task in fragment order, and the wall time of its wave come back to the caller,
// which reads its gathered output, commits, or prints EXPLAIN ANALYZE from them.
//
// `submit --workers 0` runs the same stages through a runner injected in place of the pool.
//
// Thread-safety: one Run at a time per scheduler; the callbacks are called from the calling
// thread, except on_report (see SchedulerOptions).
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/progress.h"
#include "dist/worker_pool.h"
#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::dist {

using ReportFn = std::function<void(const exec::TaskReport&)>;

/// Runs one wave's fragments and returns one report per fragment, in fragment order, each of a
/// successful attempt; calls `on_report` for every successful task. WorkerPool::RunStage is one;
/// pipeline::RunStageInProcess is another.
using TaskRunner = std::function<arrow::Result<std::vector<exec::TaskReport>>(
    std::vector<plan::Fragment> fragments, const ReportFn& on_report)>;

/// What a finished stage left: what the next stages are built from.
struct StageResult {
  /// One report per task, in fragment order, each of the attempt that succeeded.
  std::vector<exec::TaskReport> reports;
  /// Wall time of the wave the stage ran in.
  double seconds = 0;
  /// Which wave it ran in (0 first; stages of one wave ran together), or -1: it did not finish.
  int wave = -1;

  bool finished() const { return wave >= 0; }
};

struct ScheduledStage {
  /// The stage's id, as its fragments carry it (Fragment::stage_id).
  int id = 0;
  /// "stage 1 (map)": names the stage in progress lines and failures.
  std::string name;
  /// The stages (indices into the list given to Run) whose output this one reads; each comes
  /// earlier in the list.
  std::vector<size_t> producers;
  /// Builds the stage's tasks once its producers are done. `done` is indexed as the stages are;
  /// the producers' entries, and those of every earlier wave, are finished.
  std::function<arrow::Result<std::vector<plan::Fragment>>(const std::vector<StageResult>& done)>
      fragments;
  /// How many shuffle files each task writes (0: none), and the key of file `file` that attempt
  /// `attempt` of `task` (one of the stage's fragments) must have written.
  int shuffle_files = 0;
  std::function<std::string(const plan::Fragment& task, int32_t attempt, int32_t file)>
      shuffle_file_key;
};

struct SchedulerOptions {
  /// Names the run, e.g. "query q-<id>". When set, a wave's failure reads "<label> <stage
  /// names>: <why>"; when empty, it is the runner's message as it is.
  std::string label;
  /// On a terminal only, one progress line per wave, "<label> <stage names>", counting tasks
  /// and rows: a piped stderr stays clean.
  bool wave_progress = false;
  /// Called for every successful task, from the runner's threads, one call at a time.
  ReportFn on_report;
};

class StageScheduler {
 public:
  /// Runs every wave on one pool of long-lived workers started from `pool`; they end with the
  /// scheduler. `pool.on_report` is replaced: use SchedulerOptions::on_report.
  StageScheduler(PoolOptions pool, SchedulerOptions options);
  /// Runs every wave through `runner` instead of a pool.
  StageScheduler(TaskRunner runner, SchedulerOptions options);
  ~StageScheduler();
  StageScheduler(const StageScheduler&) = delete;
  StageScheduler& operator=(const StageScheduler&) = delete;

  /// Runs `stages`, producers first. The first failure (a task's error, a task lost
  /// max_attempts times, a report naming other shuffle files than its attempt's) stops the run:
  /// no later wave starts. `done` gets one result per stage, indexed as `stages`; the stages
  /// that finished have theirs even when a later one failed (a run's record counts what ran).
  arrow::Status Run(const std::vector<ScheduledStage>& stages, std::vector<StageResult>* done);

  /// With a pool: starts its workers now (WorkerPool::StartWorkers). Without: nothing.
  void StartWorkers();

 private:
  arrow::Status RunWave(const std::vector<ScheduledStage>& stages, const std::vector<size_t>& wave,
                        int wave_index, std::vector<StageResult>* done);
  void OnReport(const exec::TaskReport& report);

  SchedulerOptions options_;
  std::unique_ptr<WorkerPool> pool_;
  TaskRunner runner_;
  // The running wave's line; set only while no task runs.
  std::unique_ptr<Progress> progress_;
};

/// Checks that `report` names exactly the `files` shuffle files that its attempt of `task` had
/// to write, in order, as `key` names them: the next stage reads exactly these, never another
/// attempt's.
arrow::Status CheckShuffleFiles(
    const exec::TaskReport& report, const plan::Fragment& task, int files,
    const std::function<std::string(const plan::Fragment&, int32_t, int32_t)>& key);

}  // namespace sluice::dist
