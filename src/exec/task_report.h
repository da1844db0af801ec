// What a task reports back to the driver, as one line of JSON: a long-lived worker frames it on
// its report descriptor, a one-shot `sluice worker` prints it as the last line of its stdout.
#pragma once

#include <arrow/result.h>

#include <string>
#include <vector>

namespace sluice::exec {

struct OutputFile {
  std::string key;
  int64_t rows = 0;
  int64_t bytes = 0;
  std::string blake3;
  /// A sink part's Arrow schema, as text with metadata: the driver refuses to commit parts
  /// whose schemas differ (an `any` output is fixed per task, so tasks can disagree).
  std::string schema;
};

struct TaskReport {
  std::string task;
  int32_t attempt = 1;
  /// "ok" or "error". An error is a user or data error: the driver does not retry it.
  std::string status = "ok";
  std::string error;
  int64_t objects = 0;
  int64_t records_in = 0;
  /// A SQL map task: rows its scans read besides its share of the split table (the broadcast
  /// tables it re-read).
  int64_t broadcast_rows = 0;
  int64_t bad_records = 0;
  int64_t rows_out = 0;
  int64_t duplicates_dropped = 0;
  double seconds = 0;
  /// The worker process that ran the task; 0 when it ran in-process.
  int64_t worker_pid = 0;
  std::vector<OutputFile> files;
  /// Shuffle files written by a map task, in partition order.
  std::vector<OutputFile> shuffle_files;

  std::string ToJsonLine() const;
  static arrow::Result<TaskReport> FromJsonLine(const std::string& line);
};

}  // namespace sluice::exec
