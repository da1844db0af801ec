// The write end of an exchange (plan::ShuffleWrite), for both front doors: splits a task's rows
// by the hash of the exchange's keys into one Arrow IPC file per partition under the attempt's
// own folder (plan::ShuffleFileKey), and reports each file with its rows, size and BLAKE3, in
// partition order. As an Acero sink it ends a job's map stage, giving the rows their __seq
// positions first; a SQL stage's runner calls WriteExchange on the stage's result.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>

#include <memory>

#include "exec/job_task.h"
#include "plan/fragment.h"

namespace sluice::exec {

inline constexpr char kShuffleWriteNode[] = "sluice_shuffle_write";

class ShuffleWriteNodeOptions : public arrow::acero::ExecNodeOptions {
 public:
  ShuffleWriteNodeOptions(plan::ShuffleWrite exchange, std::shared_ptr<JobTask> task)
      : exchange(std::move(exchange)), task(std::move(task)) {}

  plan::ShuffleWrite exchange;
  std::shared_ptr<JobTask> task;
};

/// Writes `table` as the task's side of `exchange` and reports the files in task.report.
/// Test hook (JobTask::MaybeFail): `kill` before the first file, `kill-after-write` after the
/// last.
arrow::Status WriteExchange(const std::shared_ptr<arrow::Table>& table,
                            const plan::ShuffleWrite& exchange, const JobTask& task);

arrow::Status RegisterShuffleWriteNode(arrow::acero::ExecFactoryRegistry* registry);

}  // namespace sluice::exec
