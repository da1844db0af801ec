// `sluice submit --workers 0`: a stage's tasks run in the driver's own process, one at a time.
// RunStageInProcess is the runner (dist::TaskRunner) that the stage scheduler then uses in place
// of a pool of workers (dist/stage_scheduler.h).
//
// Each fragment goes through the plan codec (encoded and decoded with every check a worker
// makes, so the task runs exactly the plan a worker would receive, the driver's parity values
// included) and then through exec::RunFragment, the runner `sluice worker` calls: transforms are
// loaded by pin through the verified loader (BLAKE3 checked before the sealed-memfd dlopen),
// shuffle files are written and digest-checked, sink parts get their attempt-unique names, and
// the reports are the ones a worker would frame. While a task runs, standard input and output
// are /dev/null, as in a worker, so a transform's prints cannot mix with the driver's output.
//
// What a worker process adds, and this path does not have: no retry (a transform that crashes
// takes the driver with it), no time or memory limit, no scrubbed environment, no hidden signing
// key or registry, and no process group to end what a transform starts.
//
// Thread-safety: one stage at a time per process (it redirects the process's stdin and stdout
// while a task runs).
#pragma once

#include <arrow/result.h>

#include <functional>
#include <vector>

#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::pipeline {

/// Runs every fragment in order, in this process, each as attempt 1. Returns the reports in
/// fragment order; the first task whose report is an error fails the stage with that report's
/// message (as dist::WorkerPool::RunStage does) and no later task starts. `on_report`, when
/// set, is called for every successful task.
arrow::Result<std::vector<exec::TaskReport>> RunStageInProcess(
    std::vector<plan::Fragment> fragments,
    const std::function<void(const exec::TaskReport&)>& on_report = nullptr);

}  // namespace sluice::pipeline
