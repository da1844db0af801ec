// Loading published transforms by pin, trusting nothing but the digest.
//
// Order, so that no unverified byte is ever executed:
//   1. fetch transforms/batch/<pin>.so through a local cache keyed by digest;
//   2. verify its BLAKE3 against the pin before anything else (a bad cache entry is dropped and
//      fetched again; a bad store object is refused);
//   3. copy the verified bytes into a sealed memfd and dlopen it through /proc/self/fd, so the
//      file that is loaded is the memory that was verified: swapping the cache file afterwards
//      changes nothing;
//   4. check the ABI version and that the embedded identity names the stage's transform.
//
// A verified library stays loaded, with its memfd open, for the life of the process: the
// descriptor number is the library's name to the dynamic loader, so it must never be reused
// by another artifact (two versions of one transform would otherwise run the first one's code).
// Loading a digest again returns the library already loaded.
//
// Thread-safety: an ArtifactCache may be shared; concurrent fetches of one pin may both write
// the cache, and the rename makes either result complete. LoadVerified may be called from any
// thread.
#pragma once

#include <arrow/buffer.h>
#include <arrow/result.h>

#include <memory>
#include <string>

#include "artifact/blake3_digest.h"
#include "artifact/function_library.h"
#include "artifact/transform_library.h"
#include "storage/object_store.h"

namespace sluice::artifact {

/// Bytes whose BLAKE3 has been checked against `digest`.
struct VerifiedArtifact {
  Digest digest;
  std::shared_ptr<arrow::Buffer> bytes;
};

/// What a published artifact is; each kind has its own store prefix and cache folder.
enum class ArtifactKind { kTransform, kFunctionLibrary };

/// The store key of a published transform.
std::string TransformObjectKey(const Digest& digest);
/// The store key of a published function library: functions/<digest>.so.
std::string FunctionLibraryObjectKey(const Digest& digest);
std::string ArtifactObjectKey(ArtifactKind kind, const Digest& digest);

class ArtifactCache {
 public:
  ArtifactCache(std::shared_ptr<storage::ObjectStore> store, std::string cache_dir);

  /// Returns the artifact's bytes, verified. Errors name the pin and the store.
  arrow::Result<VerifiedArtifact> FetchVerified(const Digest& pin,
                                                ArtifactKind kind = ArtifactKind::kTransform) const;

  /// The cache file for a pin (whether or not it exists).
  std::string CachePath(const Digest& pin, ArtifactKind kind = ArtifactKind::kTransform) const;

 private:
  std::shared_ptr<storage::ObjectStore> store_;
  std::string cache_dir_;
};

/// Loads verified bytes from a sealed memfd and checks the ABI version and that the library's
/// qualified name is `expected_qualified_name`.
arrow::Result<std::shared_ptr<TransformLibrary>> LoadVerified(
    const VerifiedArtifact& artifact, const std::string& expected_qualified_name);

/// Loads a verified function library the same way (sealed memfd, loaded once per digest) and
/// checks its table against its identity.
arrow::Result<std::shared_ptr<FunctionLibrary>> LoadVerifiedFunctionLibrary(
    const VerifiedArtifact& artifact);

}  // namespace sluice::artifact
