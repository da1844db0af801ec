// The Acero sink that ends a task with one sink part (plan::WriteSink): the task's rows, in
// their job order, written atomically as a Parquet or Arrow IPC object (sink_writer.h), and
// reported with its rows, size, BLAKE3 and schema for the sink manifest. A task whose last
// stage writes `any` and emitted no stream has no rows and no schema, and writes no part.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>

#include <memory>

#include "exec/job_task.h"
#include "plan/fragment.h"

namespace sluice::exec {

inline constexpr char kSinkWriteNode[] = "sluice_sink_write";

class SinkWriteNodeOptions : public arrow::acero::ExecNodeOptions {
 public:
  SinkWriteNodeOptions(plan::WriteSink sink, std::shared_ptr<JobTask> task)
      : sink(std::move(sink)), task(std::move(task)) {}

  plan::WriteSink sink;
  std::shared_ptr<JobTask> task;
};

arrow::Status RegisterSinkWriteNode(arrow::acero::ExecFactoryRegistry* registry);

}  // namespace sluice::exec
