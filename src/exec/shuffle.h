// The shuffle: rows move between stages as Arrow IPC files on the object store.
//
// A map task splits its rows by the hash of a key column into one file per reduce partition. A
// file is written under a temp name unique to its writer and renamed (ObjectStore::Put), so a
// reader sees whole files only. A reader checks each file's schema against the one the plan
// declares and names the file and both field lists on a mismatch.
#pragma once

#include <arrow/ipc/writer.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/table.h>

#include <memory>
#include <string>
#include <vector>

#include "exec/task_report.h"
#include "storage/object_store.h"

namespace sluice::exec {

/// Splits a batch's rows into `partitions` batches, row i going to partition assignment[i], in
/// row order; every batch has the input's schema, also when empty. Where every row goes to one
/// partition, that partition's batch is the input itself.
arrow::Result<std::vector<std::shared_ptr<arrow::RecordBatch>>> SplitBatch(
    const std::shared_ptr<arrow::RecordBatch>& batch, const std::vector<int32_t>& assignment,
    int32_t partitions);

class HashedObjectWriter;

/// One shuffle file written batch by batch as an IPC file object, straight to the store
/// (hashed_object.h): a map task's rows are never copied into a whole file in memory.
class ShuffleFileWriter {
 public:
  static arrow::Result<std::unique_ptr<ShuffleFileWriter>> Open(
      storage::ObjectStore* store, const std::string& key,
      const std::shared_ptr<arrow::Schema>& schema);
  ~ShuffleFileWriter();

  arrow::Status Write(const arrow::RecordBatch& batch);
  /// Ends and publishes the file; returns its key, rows, size and BLAKE3 for the task report,
  /// from which the reader learns what to expect. Without Finish nothing is published.
  arrow::Result<OutputFile> Finish();

 private:
  ShuffleFileWriter() = default;

  std::unique_ptr<HashedObjectWriter> object_;
  std::shared_ptr<arrow::ipc::RecordBatchWriter> writer_;
  int64_t rows_ = 0;
};

/// Writes a table as one IPC file object (ShuffleFileWriter).
arrow::Result<OutputFile> WriteShuffleFile(storage::ObjectStore* store, const std::string& key,
                                           const std::shared_ptr<arrow::Table>& table);

/// Reads one IPC file object: checks its BLAKE3 against `expected_blake3` (hex) first, then
/// validates every batch and checks the schema. Errors name the file.
arrow::Result<std::shared_ptr<arrow::Table>> ReadShuffleFile(storage::ObjectStore* store,
                                                             const std::string& key,
                                                             const std::string& expected_blake3,
                                                             const arrow::Schema& expected);

}  // namespace sluice::exec
