// Physical plan fragments: what one task runs.
//
// A job (pipeline manifest) and a SQL query both compile to stages of one physical plan type
// (plan_node.h); each stage runs as tasks, and a task is a Fragment: the stage's plan with this
// task's share of its input (a split scan's files, or the shuffle files of its partition) and
// an exchange or sink write at the top. The driver encodes fragments with the one plan codec
// (plan_codec.h) and a `sluice worker` process decodes and runs them, so a fragment holds
// everything a task needs: object keys, schemas, pins, shuffle file names and the session spec.
// Nothing in it refers to the driver's memory.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plan/plan_node.h"

namespace sluice::plan {

/// What a worker needs to rebuild the driver's session.
struct SessionSpec {
  std::string store_url;
  std::string cache_dir;
  /// The driver's parity values (session_spec.h). EncodeFragment always writes the encoding
  /// process's own; DecodeFragment reads what was sent, for the worker to check.
  std::map<std::string, std::string> parity;
  /// The BLAKE3 digests (hex) of the function libraries the plan calls. A worker loads each
  /// through the verified loader before it decodes the plan, and refuses the task when one of
  /// them is a library it already has loaded from other bytes (library_functions.h).
  std::vector<std::string> libraries;
};

struct Fragment {
  std::string run_id;
  int32_t stage_id = 0;
  int32_t partition = 0;
  int32_t attempt = 1;
  SessionSpec session;
  /// The task's plan. Shared and never changed once built: a retried attempt is a copy of the
  /// fragment with another attempt number.
  std::shared_ptr<const PlanNode> root;

  /// "s<stage>p<partition>", for messages and reports.
  std::string task_name() const;
};

/// Every shuffle folder lives under this store prefix; the driver removes its run's or query's
/// folder.
inline constexpr char kShufflePrefix[] = "_sluice/shuffle/";

/// `<folder>/<task>-<attempt>`: where an attempt of a task writes its shuffle files, so that no
/// two attempts share a file name.
std::string ShuffleAttemptFolder(const std::string& folder, const std::string& task,
                                 int32_t attempt);

/// `<folder>/<task>-<attempt>/part-<p>.arrow`.
std::string ShuffleFileKey(const std::string& folder, const std::string& task, int32_t attempt,
                           int32_t partition);

/// The hidden column that carries each row's position in the job's deterministic order through
/// shuffles: (object index << 32) | row index within that object's output.
inline constexpr char kSequenceColumn[] = "__seq";

}  // namespace sluice::plan
