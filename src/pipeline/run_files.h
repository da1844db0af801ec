// The names of everything a run attempt writes, and how to remove exactly those.
//
// Every object an attempt writes carries its attempt id (unique per submit, recorded in the
// registry and the sink marker before the first write): sink parts are
// `<sink>/part-NNNNN-<attempt>.<ext>`, shuffle files live under `_sluice/shuffle/<run>-<attempt>/`.
// Cleanup after a failure, a takeover of an abandoned run and `sluice gc` delete by these names,
// so they never touch another run's output or a user's objects.
#pragma once

#include <arrow/result.h>

#include <string>

#include "plan/fragment.h"
#include "storage/object_store.h"

namespace sluice::pipeline {

/// Jobs and queries share one shuffle root.
inline constexpr const char* kShuffleRoot = plan::kShufflePrefix;

/// The sink part of one partition.
std::string PartKey(const std::string& sink_path, int partition, const std::string& attempt_id,
                    const std::string& ext);

/// The folder of an attempt's shuffle files, without a trailing '/'.
std::string ShuffleFolder(const std::string& run_id, const std::string& attempt_id);

/// Removes the part files, and their temp files, that `attempt_id` wrote under the sink path.
/// Returns how many objects were removed.
arrow::Result<int64_t> RemoveAttemptParts(storage::ObjectStore* store, const std::string& sink_path,
                                          const std::string& attempt_id);

/// Removes every object and temp file under a prefix that one attempt owns whole (its shuffle
/// folder). Returns how many were removed.
arrow::Result<int64_t> RemoveOwnedPrefix(storage::ObjectStore* store, const std::string& prefix);

}  // namespace sluice::pipeline
