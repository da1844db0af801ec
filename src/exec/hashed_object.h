// A store object written as a stream, with its size and BLAKE3 taken on the way, for outputs
// (shuffle files, sink parts) whose digest goes into a task report.
//
// Writing through, instead of building the whole file in memory and Put()ting it, keeps a
// task's memory to what it already holds: a file's bytes pass through one small buffer, so
// they never need fresh pages of their own (the kernel zeroes every fresh page, and a growing
// in-memory file is copied at each doubling).
//
// Thread-safety: none; one writer belongs to one thread.
#pragma once

#include <arrow/io/interfaces.h>
#include <arrow/result.h>

#include <memory>
#include <string>

#include "exec/task_report.h"
#include "storage/object_store.h"

namespace sluice::exec {

class HashedObjectWriter {
 public:
  /// Starts an atomic write of `key` (ObjectStore::Create); nothing is visible until Commit.
  static arrow::Result<std::unique_ptr<HashedObjectWriter>> Open(storage::ObjectStore* store,
                                                                 const std::string& key);
  ~HashedObjectWriter();

  /// Where the object's bytes go. Buffered; Tell() is the object's size so far.
  const std::shared_ptr<arrow::io::OutputStream>& stream() const { return stream_; }

  /// Flushes, publishes the object and returns its key, size and BLAKE3 (rows and schema are
  /// the caller's). On failure the object is discarded.
  arrow::Result<OutputFile> Commit();

 private:
  class HashingStream;
  HashedObjectWriter() = default;

  std::unique_ptr<storage::PendingObject> pending_;
  std::shared_ptr<HashingStream> hashing_;
  std::shared_ptr<arrow::io::OutputStream> stream_;
};

}  // namespace sluice::exec
