// Committed outputs. A sink first writes a marker, `<path>/_sluice_run.json`, then its part
// files, and last `<path>/_manifest.json` (format "sluice.sink-manifest/1") listing every part
// with its size and BLAKE3. A path sluice writes to does not exist until its manifest does: with
// a marker and no manifest it reads as empty (the run is running, failed or was killed). Every
// reader of outputs (a job's parquet or ipc source, a SQL table) goes through CommittedFiles,
// so a half-written or failed run is never read, and a committed part that changed since its
// commit is an error naming it.
#pragma once

#include <arrow/result.h>

#include <optional>
#include <string>
#include <vector>

#include "storage/object_store.h"

namespace sluice::storage {

inline constexpr char kSinkManifestFormat[] = "sluice.sink-manifest/1";
inline constexpr char kSinkMarkerFormat[] = "sluice.sink-marker/1";
inline constexpr char kSinkManifestName[] = "_manifest.json";
inline constexpr char kSinkMarkerName[] = "_sluice_run.json";

struct CommittedFilesOptions {
  /// Hash every committed part and compare with its manifest entry (sizes are always checked).
  bool verify_digests = true;
};

struct CommittedListing {
  /// The files to read, sorted.
  std::vector<std::string> files;
  /// Sink paths under the prefix that sluice wrote to but never committed, with their run ids,
  /// as "path (run 'id')", for messages.
  std::vector<std::string> uncommitted;
};

/// Files listed by the committed sink manifests under `prefix`, sorted, each checked against
/// its manifest entry. Under a prefix with neither manifest nor marker (plain files someone
/// put there), every object ending in `extension`. A manifest that is not a valid sink
/// manifest is an Invalid error naming it.
arrow::Result<CommittedListing> ListCommitted(ObjectStore* store, const std::string& prefix,
                                              const std::string& extension,
                                              const CommittedFilesOptions& options = {});

/// The files of ListCommitted.
arrow::Result<std::vector<std::string>> CommittedFiles(ObjectStore* store,
                                                       const std::string& prefix,
                                                       const std::string& extension);

/// A committed sink's manifest, every field type-checked.
struct SinkManifest {
  std::string run_id;
  std::string attempt_id;  // "" in manifests written before attempts
  std::string job_manifest_blake3;
  int64_t rows = 0;
  struct File {
    std::string key;
    int64_t rows = -1;
    int64_t bytes = -1;
    std::string blake3;
  };
  std::vector<File> files;
};

/// The manifest of the sink at `sink_path`, or nullopt when there is none. A document that is
/// not a valid sink manifest is an Invalid error naming it and the field at fault.
arrow::Result<std::optional<SinkManifest>> ReadSinkManifest(ObjectStore* store,
                                                            const std::string& sink_path);

/// The key of the marker and of the manifest under a sink path.
std::string SinkMarkerKey(const std::string& sink_path);
std::string SinkManifestKey(const std::string& sink_path);

}  // namespace sluice::storage
