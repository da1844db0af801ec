// The Acero source of a map task: reads the task's source objects (JSONL, Parquet or Arrow IPC)
// from the store in key order and sends each as one object chunk (object_chunks.h).
//
// JSONL is parsed against the scan schema (bad lines fail the task, or with skip_bad_records
// are counted and dropped); Parquet and IPC objects must hold that schema, and every batch is
// validated. Errors name the object (and the line, for JSONL). The node counts objects,
// records and bad records into the task's report.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>

#include <memory>

#include "exec/job_task.h"
#include "plan/fragment.h"

namespace sluice::exec {

inline constexpr char kScanObjectsNode[] = "sluice_scan_objects";

class ScanObjectsNodeOptions : public arrow::acero::ExecNodeOptions {
 public:
  ScanObjectsNodeOptions(plan::ScanObjects scan, std::shared_ptr<JobTask> task)
      : scan(std::move(scan)), task(std::move(task)) {}

  plan::ScanObjects scan;
  std::shared_ptr<JobTask> task;
};

arrow::Status RegisterScanObjectsNode(arrow::acero::ExecFactoryRegistry* registry);

}  // namespace sluice::exec
