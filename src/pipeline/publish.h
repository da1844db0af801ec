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

#include <arrow/buffer.h>
#include <arrow/result.h>

#include <string>

#include "artifact/blake3_digest.h"
#include "common/config.h"
#include "storage/object_store.h"

namespace sluice::pipeline {

struct PublishResult {
  std::string qualified_name;
  std::string artifact_blake3;
  /// False when the store already held these exact bytes.
  bool uploaded = false;
};

/// Puts `bytes` (whose BLAKE3 is `digest`) at `key` unless the store already holds exactly those
/// bytes there; true when it uploaded. `where` names the publication in errors.
arrow::Result<bool> UploadArtifact(storage::ObjectStore* store, const std::string& key,
                                   const std::shared_ptr<arrow::Buffer>& bytes,
                                   const artifact::Digest& digest, const std::string& where);

arrow::Result<PublishResult> PublishTransform(const Config& config, const std::string& dir,
                                              const std::string& sluice_root);

}  // namespace sluice::pipeline
