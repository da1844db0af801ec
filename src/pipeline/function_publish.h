// `sluice function new|check|test|publish`: a function library from its source directory or a
// built shared library to a content-addressed, registered artifact that CREATE FUNCTION LIBRARY
// pins.
//
// new scaffolds a directory that builds standalone against this checkout; check, test and
// publish take a built lib*.so, or a directory, which they build (Release) first.
// check reads the ELF file without loading it (loading would run its constructors). test loads
// it and calls every function through the host's kernels on generated Arrow data with NULLs,
// so a library that returns garbage fails there, naming the function. publish checks, uploads
// functions/<digest>.so (skipped when the store already holds those bytes) and registers it;
// the registry row is written after the upload, so a failure leaves nothing registered.
#pragma once

#include <arrow/result.h>

#include <string>

#include "artifact/function_library.h"
#include "common/config.h"

namespace sluice::pipeline {

/// Writes `parent/NAME/`: CMakeLists.txt and src/functions.cpp with one scalar function. The
/// name follows the transform rules (pipeline/transform_project.h). Returns the directory.
arrow::Result<std::string> NewFunctionLibrary(const std::string& parent, const std::string& name);

/// `path` itself when it is a file; for a directory, builds it against the checkout at
/// `sluice_root` and returns the one lib*.so its build folder holds.
arrow::Result<std::string> FunctionLibraryFile(const std::string& path,
                                               const std::string& sluice_root);

/// The identity of a built function library, with every structural problem listed.
arrow::Result<artifact::FunctionIdentity> CheckFunctionLibrary(const std::string& path);

/// One line per function: what `function check` prints.
std::string DescribeFunctions(const artifact::FunctionIdentity& identity);

/// Loads `path` and runs each function on generated rows; returns what ran, one line each.
arrow::Result<std::string> TestFunctionLibrary(const std::string& path);

struct FunctionPublishResult {
  std::string qualified_name;
  std::string artifact_blake3;
  bool uploaded = false;
  /// Who signed it; empty when the home has no signing identity.
  std::string publisher_id;
};

arrow::Result<FunctionPublishResult> PublishFunctionLibrary(const Config& config,
                                                            const std::string& path);

}  // namespace sluice::pipeline
