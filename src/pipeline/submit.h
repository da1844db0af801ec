// `sluice submit`: runs a job manifest end to end on the execution core.
//
// The driver validates the manifest against the registry (pins exist, names match, specs are
// signed), resolves the source objects in sorted key order, compiles the job into one physical
// plan (a dedup is a hash exchange on its key), has the stage cutter (dist/stage_cutter.h) cut it
// into stages of fragments, runs them through the stage scheduler (dist/stage_scheduler.h) on
// worker processes (or, with workers = 0, in this process through the
// same fragment runner: in_process.h), and commits the sink: part files first, the manifest
// object last. A sink path without a manifest does not exist. A failed run removes what it wrote
// and leaves nothing that looks like output.
#pragma once

#include <arrow/result.h>

#include <string>
#include <vector>

#include "common/config.h"
#include "exec/task_report.h"

namespace sluice::pipeline {

struct SubmitOptions {
  std::string manifest_path;
  std::string run_id;
  std::string user_id;
  /// Worker processes; 0 runs every task in this process, one at a time, with no retries and
  /// no limits (in_process.h). The job is cut as for max(1, workers) workers.
  int workers = 2;
  /// The sluice binary whose `worker` subcommand runs a task; unused when workers is 0.
  std::string worker_binary;
  /// "local" (worker processes on this machine) or "ray" (Ray tasks on the cluster at
  /// RAY_ADDRESS; dist/ray_executor.h). With "ray", workers = 0 means one task per cluster CPU.
  std::string executor = "local";
};

struct SubmitResult {
  std::string run_id;
  /// True when this run id had already committed with the same manifest: nothing was run.
  bool already_committed = false;
  std::string store_url;
  std::string sink_path;
  int64_t objects = 0;
  int64_t records_in = 0;
  int64_t bad_records = 0;
  int64_t rows_out = 0;
  int64_t duplicates_dropped = 0;
  std::vector<exec::OutputFile> files;
  double seconds = 0;
};

arrow::Result<SubmitResult> Submit(const Config& config, const SubmitOptions& options);

/// The sink manifest's key under a sink path.
std::string SinkManifestKey(const std::string& sink_path);

/// Run ids become object keys: letters, digits, '.', '_' and '-', starting with a letter or
/// digit, at most 128 characters.
bool IsValidRunId(const std::string& run_id);

}  // namespace sluice::pipeline
