// A batch transform's source directory (transforms/NAME/) as a project: scaffold it, check it
// structurally, build it and run its inline test. These back `sluice transform new/check/test`
// and the build step of `sluice transform publish`.
#pragma once

#include <arrow/result.h>

#include <string>
#include <string_view>
#include <vector>

#include "artifact/transform_identity.h"

namespace sluice::pipeline {

/// A transform name: lower-case letters, digits and single dashes, starting with a letter,
/// at most 64 characters, e.g. "conversation-message-extract". It is also the directory name,
/// the qualified name and the library name (lib<NAME>.so).
bool IsValidTransformName(const std::string& name);

/// Writes `text` with every @NAME@ replaced by `name` to `path`, creating its folder: a
/// scaffold's file.
arrow::Status WriteTemplate(const std::string& path, std::string_view text,
                            const std::string& name);

/// The library a build of `dir` produces: DIR/build/lib<NAME>.so.
std::string TransformLibraryPath(const std::string& dir, const std::string& name);

/// Writes the scaffold `parent/NAME/`: CMakeLists.txt, src/transform.cpp (an identity stage),
/// tests/transform_test.cpp (an inline ABI test on real Arrow IPC), transform.toml,
/// pipeline.toml and job.toml. Refuses an invalid name or an existing directory. Returns the
/// new directory.
arrow::Result<std::string> NewTransform(const std::string& parent, const std::string& name);

/// Structural checks of a transform directory; loads nothing. Every failure names the file and
/// the field, and all are reported, not only the first.
struct CheckReport {
  std::string qualified_name;
  std::string library;
  /// The identity read from the built library (when it could be read).
  artifact::TransformIdentity identity;
  std::vector<std::string> failures;
  bool ok() const { return failures.empty(); }
};
CheckReport CheckTransform(const std::string& dir, const std::string& library_override = "");

/// The identity's input and output schemas as `transform check` prints them: each schema id,
/// then its Arrow fields, one per line, or why there are none.
std::string DescribeSchemas(const artifact::TransformIdentity& identity);

/// Configures and builds the CMake project `dir` with Ninja into DIR/build, against the sluice
/// checkout at `sluice_root` (-DSLUICE_ROOT). Build output goes to stderr; `what` names the
/// project in errors.
arrow::Status ConfigureAndBuild(const std::string& dir, const std::string& sluice_root,
                                const std::string& build_type, const std::string& what);

/// Configures and builds `dir` with CMake and Ninja into DIR/build, against the sluice checkout
/// at `sluice_root`. Build output goes to stderr. Returns the built library's path.
arrow::Result<std::string> BuildTransform(const std::string& dir, const std::string& sluice_root,
                                          const std::string& build_type = "Release");

/// Builds `dir` and runs its inline tests with ctest.
arrow::Status TestTransform(const std::string& dir, const std::string& sluice_root);

}  // namespace sluice::pipeline
