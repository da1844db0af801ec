// Physical plan fragments: what one task runs, as a straight line of operators.
//
// A pipeline manifest (and, later, a SQL query) compiles to stages; each stage runs as tasks,
// one per partition, and each task is a Fragment. The driver encodes fragments with the plan
// codec (plan_codec.h) and a `sluice worker` process decodes and runs them, so a fragment holds
// everything a task needs: object keys, schemas, pins, shuffle file names and the session spec.
// Nothing in it refers to the driver's memory.
#pragma once

#include <arrow/type_fwd.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace sluice::plan {

/// Reads JSONL, Parquet or IPC objects and parses them against `schema`. Object i of this task
/// has global index first_object_index + i in the job's sorted object list; that index orders
/// rows for dedup.
struct ScanObjects {
  std::string format;  // "jsonl" | "parquet" | "ipc"
  std::vector<std::string> keys;
  int64_t first_object_index = 0;
  /// The schema record type id the rows are parsed as (JSONL), and its Arrow schema.
  std::string schema_id;
  std::shared_ptr<arrow::Schema> schema;
  /// With skip_bad_records a bad JSONL line is counted and dropped instead of failing the task.
  bool skip_bad_records = false;
};

/// Reads this task's partition from the shuffle files that the previous stage wrote. Each
/// file's BLAKE3, as its writer reported it, is checked before a byte of it is parsed: a flipped
/// bit that still makes valid Arrow must be an error, never another answer.
struct ScanShuffle {
  std::vector<std::string> keys;
  /// Hex digests, one per key.
  std::vector<std::string> blake3;
  std::shared_ptr<arrow::Schema> schema;
};

/// Calls a published batch transform, loaded by pin through the verified loader, once per
/// input object.
struct CallTransform {
  std::string qualified_name;
  std::string pin;
  std::shared_ptr<arrow::Schema> output_schema;
};

/// Ends a map stage: rows go to `partitions` shuffle files by the hash of `key`.
/// File p is `<folder>/<task>-<attempt>/part-<p>.arrow` (ShuffleAttemptFolder).
struct HashExchange {
  std::string key;
  int32_t partitions = 1;
  std::string folder;
};

/// Keeps the first row of each `key` in sequence order (the hidden __seq column).
struct DedupFirst {
  std::string key;
};

/// Ends a task by writing one sink part object.
struct WriteSink {
  std::string format;  // "parquet" | "ipc"
  std::string key;
};

/// A whole task of a distributed SQL query: the body is the SQL layer's own checked encoding
/// (sql/stage_task.h, "SLUICE-SQL-STAGE/1"), which the worker hands to the SQL stage runner.
/// It is the fragment's only operator.
struct RunSqlStage {
  std::vector<uint8_t> body;
};

using Operator = std::variant<ScanObjects, ScanShuffle, CallTransform, HashExchange, DedupFirst,
                              WriteSink, RunSqlStage>;

/// What a worker needs to rebuild the driver's session.
struct SessionSpec {
  std::string store_url;
  std::string cache_dir;
  /// The driver's parity values (session_spec.h). EncodeFragment always writes the encoding
  /// process's own; DecodeFragment reads what was sent, for the worker to check.
  std::map<std::string, std::string> parity;
};

struct Fragment {
  std::string run_id;
  int32_t stage_id = 0;
  int32_t partition = 0;
  int32_t attempt = 1;
  SessionSpec session;
  std::vector<Operator> operators;

  /// "s<stage>p<partition>", for messages and reports.
  std::string task_name() const;
};

/// `<folder>/<task>-<attempt>`: where an attempt of a task writes its shuffle files, so that no
/// two attempts share a file name.
std::string ShuffleAttemptFolder(const std::string& folder, const std::string& task,
                                 int32_t attempt);

/// The hidden column that carries each row's position in the job's deterministic order through
/// shuffles: (object index << 32) | row index within that object's output.
inline constexpr char kSequenceColumn[] = "__seq";

}  // namespace sluice::plan
