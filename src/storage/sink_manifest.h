// Committed outputs. A sink writes its part files and then `<path>/_manifest.json` (format
// "sluice.sink-manifest/1") listing them; a path without a manifest does not exist. Every reader
// of outputs (a job's parquet or ipc source, a SQL table) goes through CommittedFiles, so a
// half-written or failed run is never read.
#pragma once

#include <arrow/result.h>

#include <string>
#include <vector>

#include "storage/object_store.h"

namespace sluice::storage {

inline constexpr char kSinkManifestFormat[] = "sluice.sink-manifest/1";

/// Files listed by the committed sink manifests under `prefix`, sorted. Under a prefix with no
/// manifest at all (plain files someone put there), every object ending in `extension`.
/// A manifest that is not a valid sink manifest is an Invalid error naming it.
arrow::Result<std::vector<std::string>> CommittedFiles(ObjectStore* store,
                                                       const std::string& prefix,
                                                       const std::string& extension);

}  // namespace sluice::storage
