// `sluice transform publish DIR`: turns a transform directory into a pinned, signed, registered
// artifact.
//
// Steps, in order: a release build; its BLAKE3 digest; an upload to transforms/batch/<digest>.so;
// registration of the code metadata; injection of the pin into the pipeline.toml text, in
// memory; signing and registration of the pipeline spec. The registry writes happen in one
// transaction after the upload, so a failure at any step leaves nothing half-registered, and
// nothing in the directory is ever rewritten. Unchanged bytes get the same address and add no
// rows.
#pragma once

#include <arrow/result.h>

#include <string>

#include "common/config.h"

namespace sluice::pipeline {

struct PublishResult {
  std::string qualified_name;
  std::string artifact_blake3;
  /// False when the store already held these exact bytes.
  bool uploaded = false;
};

arrow::Result<PublishResult> PublishTransform(const Config& config, const std::string& dir,
                                              const std::string& sluice_root);

}  // namespace sluice::pipeline
