// The object store: every artifact, shuffle file, sink file and manifest lives here.
//
// One interface over arrow::fs, for a local directory (file:///abs/dir) and for S3
// (s3://bucket/prefix?endpoint_override=host:port&scheme=http&region=...). Keys are relative,
// '/'-separated paths below the store's root.
//
// Writes are atomic: a reader sees either nothing or the whole object. On a local directory an
// object is written under a temp name unique to its writer and renamed into place; on S3 the
// object appears only when its upload completes. Temp names are never listed or readable.
//
// Concurrency: an ObjectStore is immutable after Open and safe to share between threads.
// A PendingObject belongs to one thread.
#pragma once

#include <arrow/buffer.h>
#include <arrow/filesystem/filesystem.h>
#include <arrow/io/interfaces.h>
#include <arrow/result.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::storage {

struct ObjectInfo {
  std::string key;
  int64_t size = 0;
};

/// An object being written. Nothing is visible under its key until Commit() succeeds; the
/// destructor aborts an object that was neither committed nor aborted.
class PendingObject {
 public:
  virtual ~PendingObject() = default;
  /// Where to write the object's bytes.
  virtual arrow::io::OutputStream* stream() = 0;
  /// Finishes the write and publishes the object under its key, replacing any old one.
  virtual arrow::Status Commit() = 0;
  /// Discards everything written.
  virtual arrow::Status Abort() = 0;
  virtual const std::string& key() const = 0;
};

class ObjectStore {
 public:
  /// Opens a store from a URL. A malformed URL, an unsupported scheme or a relative file path
  /// is an Invalid error that quotes the URL.
  static arrow::Result<std::shared_ptr<ObjectStore>> Open(const std::string& url);

  /// The URL with any secret query values masked, for messages.
  const std::string& display_url() const { return display_url_; }
  bool is_local() const { return local_; }

  /// Reads a whole object. A missing object is an IOError naming the key and the store.
  arrow::Result<std::shared_ptr<arrow::Buffer>> Get(std::string_view key) const;
  /// Reads a whole object as Get does, without a copy where the store is local: the buffer maps
  /// the file, whose pages are then the page cache's own. Only for objects nothing rewrites in
  /// place while they are read (what this store writes is replaced by rename, never rewritten):
  /// a file cut short under a mapping faults its reader.
  arrow::Result<std::shared_ptr<arrow::Buffer>> GetMapped(std::string_view key) const;
  /// Opens an object for random access, e.g. for a Parquet reader.
  arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenForRead(
      std::string_view key) const;
  /// Writes a whole object atomically.
  arrow::Status Put(std::string_view key, const std::shared_ptr<arrow::Buffer>& data);
  /// Starts an atomic streaming write.
  arrow::Result<std::unique_ptr<PendingObject>> Create(std::string_view key);
  /// Objects whose key starts with `prefix` ("" lists everything), sorted by key.
  arrow::Result<std::vector<ObjectInfo>> List(std::string_view prefix) const;
  arrow::Result<bool> Exists(std::string_view key) const;
  /// Deletes an object; deleting a missing object succeeds.
  arrow::Status Delete(std::string_view key);
  /// Deletes the temp files of unfinished local writes under `prefix` whose names contain
  /// `contains` (a writer killed before its rename leaves one). With `only_abandoned`, only
  /// those whose writer process is gone or that are older than a day, so a live write is never
  /// cut short. S3 writes leave no temp object: a no-op there. Returns how many were deleted.
  arrow::Result<int64_t> RemoveTemps(std::string_view prefix, std::string_view contains,
                                     bool only_abandoned = false);

  /// The filesystem and the path of a key in it, for readers that need a filesystem (Arrow
  /// datasets). Prefer the object methods above everywhere else.
  const std::shared_ptr<arrow::fs::FileSystem>& filesystem() const { return fs_; }
  std::string FileSystemPath(std::string_view key) const { return PathOf(key); }

  /// Checks that `key` is a valid object key: relative, no empty, '.' or '..' segments, and not
  /// a reserved temp name. Keys often come from manifests and plans, i.e. from users.
  static arrow::Status ValidateKey(std::string_view key);

 private:
  ObjectStore(std::shared_ptr<arrow::fs::FileSystem> fs, std::string root, std::string display_url,
              bool local);
  std::string PathOf(std::string_view key) const;
  arrow::Result<std::vector<arrow::fs::FileInfo>> ListSelector(
      const arrow::fs::FileSelector& selector) const;
  arrow::Status NotFound(std::string_view key) const;

  std::shared_ptr<arrow::fs::FileSystem> fs_;
  std::string root_;  // path of the store's root inside fs_, without a trailing '/'
  std::string display_url_;
  bool local_;
};

/// Waits for reads still running on Arrow's thread pools (a plan stopped early leaves some),
/// then releases global filesystem state (the AWS SDK) before the process exits. Call once,
/// after every ObjectStore is gone; sluice's main() and test mains do.
arrow::Status FinalizeFilesystems();

}  // namespace sluice::storage
