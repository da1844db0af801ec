// Runs a child process (cmake, ninja, ctest) with an argument vector, never through a shell, so
// paths with spaces or quotes cannot be misread.
#pragma once

#include <arrow/result.h>

#include <string>
#include <vector>

namespace sluice {

struct ProcessOptions {
  /// Working directory of the child; empty keeps ours.
  std::string cwd;
  /// Send the child's stdout to our stderr, keeping our stdout for results (e.g. publish's one
  /// line).
  bool stdout_to_stderr = false;
};

/// Runs argv[0] (looked up in PATH) and waits. Returns its exit status; a child killed by a
/// signal is reported as 128 + signal. Failure to start is an IOError naming the program.
arrow::Result<int> RunProcess(const std::vector<std::string>& argv,
                              const ProcessOptions& options = {});

}  // namespace sluice
