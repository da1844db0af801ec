// A batch transform library loaded into this process, with its ABI version and identity
// checked. This is the unverified path for local development (`transform test`, tests); the
// verified loader for published artifacts (BLAKE3 first, then a sealed memfd) builds on it.
//
// Thread-safety: immutable after Open; the function may be called from several threads.
#pragma once

#include <arrow/result.h>
#include <sluice/transform_abi.h>

#include <memory>
#include <string>

#include "artifact/transform_identity.h"

namespace sluice::artifact {

class TransformLibrary {
 public:
  /// dlopens `path` and checks, in order: the two ABI symbols exist, the library's ABI version
  /// is one this host speaks, and the identity is present and well-formed. Each failure is an
  /// error naming the library and what is wrong.
  static arrow::Result<std::shared_ptr<TransformLibrary>> Open(const std::string& path);
  ~TransformLibrary();

  TransformLibrary(const TransformLibrary&) = delete;
  TransformLibrary& operator=(const TransformLibrary&) = delete;

  const std::string& path() const { return path_; }
  uint32_t abi_version() const { return abi_version_; }
  const TransformIdentity& identity() const { return identity_; }
  sluice_transform_batch_fn function() const { return fn_; }
  /// The optional Arrow C data entry (transform_batch_arrow), or null.
  sluice_transform_batch_arrow_fn arrow_function() const { return arrow_fn_; }

 private:
  TransformLibrary() = default;
  std::string path_;
  void* handle_ = nullptr;
  uint32_t abi_version_ = 0;
  sluice_transform_batch_fn fn_ = nullptr;
  sluice_transform_batch_arrow_fn arrow_fn_ = nullptr;
  TransformIdentity identity_;
};

}  // namespace sluice::artifact
