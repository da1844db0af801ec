// Job and pipeline manifests (TOML): what to read, which stages to run, where to write.
//
// A job (pipelines/jobs/*.toml, a transform's job.toml) has a source, stages and a sink:
//
//   [dataflow.source]    kind = "jsonl" | "parquet" | "ipc", prefix, limit?, on_error?
//   [[dataflow.stages]]  kind = "function": qualified_name, pin_artifact_hash
//                        kind = "dedup":    key
//   [dataflow.sink]      kind = "parquet" | "ipc", path (must contain {run_id})
//   [dataflow.limits]    task_timeout_seconds?, task_memory_mb? (each task attempt's limits)
//
// A route-less pipeline manifest (a transform's pipeline.toml) has only [pipeline] name and
// [[pipeline.stages]].
//
// Parsing is strict: unknown keys, wrong types and bad values are errors, each given as
// file:line:column, and every error in a file is reported at once.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::pipeline {

/// The pin a scaffolded job carries until its transform is published.
inline constexpr std::string_view kPlaceholderPin = "PUBLISH_RESULT_GOES_HERE";

struct SourceSpec {
  std::string kind = "jsonl";
  std::string prefix;
  /// A bounded job reads only the first `limit` objects in sorted key order.
  std::optional<int64_t> limit;
  /// "fail" stops at the first bad record; "skip" counts and reports bad records.
  std::string on_error = "fail";
};

struct StageSpec {
  enum class Kind { kFunction, kDedup };
  Kind kind = Kind::kFunction;
  std::string qualified_name;     // function
  std::string pin_artifact_hash;  // function: 64 hex characters, or the placeholder
  std::string key;                // dedup
  /// "file:line:column" of the stage's table, for later errors about this stage.
  std::string location;
};

struct SinkSpec {
  std::string kind = "parquet";
  std::string path;
};

/// What one task attempt may use; a task that passes a limit is killed and fails its run.
struct LimitsSpec {
  /// Wall-clock seconds; unset: the pool's default (dist::kDefaultTaskTimeoutSeconds).
  std::optional<int64_t> task_timeout_seconds;
  /// MiB of memory for the task's worker and its children; unset: the machine's memory divided
  /// by the workers.
  std::optional<int64_t> task_memory_mb;
};

inline constexpr int64_t kMaxTaskTimeoutSeconds = 7 * 24 * 3600;
inline constexpr int64_t kMinTaskMemoryMb = 64;  // a worker with Arrow loaded needs about 30
inline constexpr int64_t kMaxTaskMemoryMb = int64_t{1} << 30;

struct JobManifest {
  std::string file;
  SourceSpec source;
  std::vector<StageSpec> stages;
  SinkSpec sink;
  LimitsSpec limits;
};

struct PipelineManifest {
  std::string file;
  std::string name;
  std::vector<StageSpec> stages;
};

struct ParseOptions {
  /// Accept kPlaceholderPin (for checking a scaffold); submit refuses it.
  bool allow_placeholder_pin = false;
};

/// A transform's metadata (transforms/NAME/transform.toml, table [transform]).
struct TransformMetadata {
  std::string file;
  std::string qualified_name;
  std::string version;
  std::string input_dataset;
  std::string output_dataset;
  std::string input_schema;
  std::string output_schema;
  /// Paths relative to the transform directory.
  std::string example_job;
  std::string pipeline;
};

arrow::Result<TransformMetadata> ParseTransformMetadata(std::string_view text,
                                                        const std::string& file);
arrow::Result<TransformMetadata> ReadTransformMetadata(const std::string& path);

/// Parses a job from TOML text; `file` names it in errors.
arrow::Result<JobManifest> ParseJobManifest(std::string_view text, const std::string& file,
                                            const ParseOptions& options = {});
/// Parses a route-less pipeline manifest from TOML text.
arrow::Result<PipelineManifest> ParsePipelineManifest(std::string_view text,
                                                      const std::string& file,
                                                      const ParseOptions& options = {});

/// Reads and parses a file.
arrow::Result<JobManifest> ReadJobManifest(const std::string& path,
                                           const ParseOptions& options = {});
arrow::Result<PipelineManifest> ReadPipelineManifest(const std::string& path,
                                                     const ParseOptions& options = {});

/// Returns `pipeline_text` with the pin_artifact_hash of the function stage named
/// `qualified_name` set to `pin`, changing nothing else (comments and layout stay). The result is
/// parsed again strictly, so a placeholder left anywhere is an error.
arrow::Result<std::string> InjectPin(std::string_view pipeline_text, const std::string& file,
                                     const std::string& qualified_name, const std::string& pin);

/// Reads a whole text file; a missing file is an IOError naming it.
arrow::Result<std::string> ReadTextFile(const std::string& path);

}  // namespace sluice::pipeline
