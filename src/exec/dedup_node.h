// The Acero node of a dedup stage (plan::DedupFirst): keeps the first row of each key in the
// job order (__seq), whatever order the rows arrived in (dedup.h). A pipeline breaker: it needs
// every row of its partition before it knows which is first. It adds the rows it dropped to
// the task's report and passes the kept rows on, sorted by __seq, as one batch.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>

#include <memory>

#include "exec/job_task.h"
#include "plan/fragment.h"

namespace sluice::exec {

inline constexpr char kDedupNode[] = "sluice_dedup_first";

class DedupNodeOptions : public arrow::acero::ExecNodeOptions {
 public:
  DedupNodeOptions(plan::DedupFirst dedup, std::shared_ptr<JobTask> task)
      : dedup(std::move(dedup)), task(std::move(task)) {}

  plan::DedupFirst dedup;
  std::shared_ptr<JobTask> task;
};

arrow::Status RegisterDedupNode(arrow::acero::ExecFactoryRegistry* registry);

}  // namespace sluice::exec
