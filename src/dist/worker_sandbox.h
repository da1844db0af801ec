// What a worker process may see of the machine, beyond its scrubbed environment
// (worker_process.h): paths the driver names are hidden from it and from everything it starts.
#pragma once

#include <arrow/status.h>

#include <string>
#include <vector>

namespace sluice::dist {

/// Hides `paths` from this process and its future children: in a private mount namespace, each
/// existing directory is covered by an empty read-only tmpfs and each existing file by
/// /dev/null, so a transform cannot read the signing key or the registry even knowing where
/// they are. The namespace is created directly with CAP_SYS_ADMIN, else inside a new user
/// namespace (unprivileged; the kernel must allow it). Call it while the process has one thread.
/// Returns an IOError naming what failed when the kernel refuses; the caller decides whether
/// that is fatal.
arrow::Status HidePaths(const std::vector<std::string>& paths);

}  // namespace sluice::dist
