#include "exec/shuffle.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>

#include <algorithm>

#include "artifact/blake3_digest.h"
#include "exec/hashed_object.h"
#include "storage/ipc_stream.h"
#include "storage/validate.h"

namespace sluice::exec {

arrow::Result<std::vector<std::shared_ptr<arrow::RecordBatch>>> SplitBatch(
    const std::shared_ptr<arrow::RecordBatch>& batch, const std::vector<int32_t>& assignment,
    int32_t partitions) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> out(static_cast<size_t>(partitions));
  // Every row in one partition: the batch itself, not a copy.
  if (!assignment.empty() && std::all_of(assignment.begin(), assignment.end(),
                                         [&](int32_t p) { return p == assignment[0]; })) {
    for (int32_t p = 0; p < partitions; ++p) {
      if (p == assignment[0]) {
        out[static_cast<size_t>(p)] = batch;
      } else {
        ARROW_ASSIGN_OR_RAISE(out[static_cast<size_t>(p)],
                              arrow::RecordBatch::MakeEmpty(batch->schema()));
      }
    }
    return out;
  }
  std::vector<arrow::Int64Builder> indices(static_cast<size_t>(partitions));
  for (size_t i = 0; i < assignment.size(); ++i) {
    ARROW_RETURN_NOT_OK(
        indices[static_cast<size_t>(assignment[i])].Append(static_cast<int64_t>(i)));
  }
  for (int32_t p = 0; p < partitions; ++p) {
    ARROW_ASSIGN_OR_RAISE(auto idx, indices[static_cast<size_t>(p)].Finish());
    ARROW_ASSIGN_OR_RAISE(auto taken, arrow::compute::Take(batch, idx));
    out[static_cast<size_t>(p)] = taken.record_batch();
  }
  return out;
}

ShuffleFileWriter::~ShuffleFileWriter() = default;

arrow::Result<std::unique_ptr<ShuffleFileWriter>> ShuffleFileWriter::Open(
    storage::ObjectStore* store, const std::string& key,
    const std::shared_ptr<arrow::Schema>& schema) {
  std::unique_ptr<ShuffleFileWriter> out(new ShuffleFileWriter());
  ARROW_ASSIGN_OR_RAISE(out->object_, HashedObjectWriter::Open(store, key));
  ARROW_ASSIGN_OR_RAISE(out->writer_, arrow::ipc::MakeFileWriter(out->object_->stream(), schema));
  return out;
}

arrow::Status ShuffleFileWriter::Write(const arrow::RecordBatch& batch) {
  rows_ += batch.num_rows();
  return writer_->WriteRecordBatch(batch);
}

arrow::Result<OutputFile> ShuffleFileWriter::Finish() {
  ARROW_RETURN_NOT_OK(writer_->Close());
  ARROW_ASSIGN_OR_RAISE(OutputFile file, object_->Commit());
  file.rows = rows_;
  return file;
}

arrow::Result<OutputFile> WriteShuffleFile(storage::ObjectStore* store, const std::string& key,
                                           const std::shared_ptr<arrow::Table>& table) {
  ARROW_ASSIGN_OR_RAISE(auto writer, ShuffleFileWriter::Open(store, key, table->schema()));
  arrow::TableBatchReader batches(*table);
  std::shared_ptr<arrow::RecordBatch> batch;
  while (true) {
    ARROW_RETURN_NOT_OK(batches.ReadNext(&batch));
    if (batch == nullptr) break;
    ARROW_RETURN_NOT_OK(writer->Write(*batch));
  }
  return writer->Finish();
}

arrow::Result<std::shared_ptr<arrow::Table>> ReadShuffleFile(storage::ObjectStore* store,
                                                             const std::string& key,
                                                             const std::string& expected_blake3,
                                                             const arrow::Schema& expected) {
  // Mapped, not copied: shuffle files are written once and renamed into place.
  ARROW_ASSIGN_OR_RAISE(auto bytes, store->GetMapped(key));
  const std::string where = "shuffle file '" + key + "'";
  const std::string actual = artifact::Blake3(*bytes).ToHex();
  if (actual != expected_blake3) {
    return arrow::Status::IOError(where, " hashes to ", actual, ", but its writer reported ",
                                  expected_blake3, ": it was damaged or replaced");
  }
  auto reader =
      arrow::ipc::RecordBatchFileReader::Open(std::make_shared<arrow::io::BufferReader>(bytes));
  if (!reader.ok()) {
    return arrow::Status::Invalid(where,
                                  ": not a valid Arrow IPC file: ", reader.status().message());
  }
  ARROW_RETURN_NOT_OK(storage::CheckSchema(expected, *(*reader)->schema(), where));
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (int i = 0; i < (*reader)->num_record_batches(); ++i) {
    auto batch = (*reader)->ReadRecordBatch(i);
    if (!batch.ok())
      return arrow::Status::Invalid(where, ": batch ", i, ": ", batch.status().message());
    arrow::Status st = storage::ValidateFull(**batch);
    if (!st.ok()) return arrow::Status::Invalid(where, ": batch ", i, ": ", st.message());
    batches.push_back(*batch);
  }
  return arrow::Table::FromRecordBatches((*reader)->schema(), batches);
}

}  // namespace sluice::exec
