#include "exec/shuffle.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>

#include "artifact/blake3_digest.h"
#include "storage/ipc_stream.h"

namespace sluice::exec {

arrow::Result<std::vector<std::shared_ptr<arrow::Table>>> SplitRows(
    const std::shared_ptr<arrow::RecordBatch>& batch, const std::vector<int32_t>& assignment,
    int32_t partitions) {
  std::vector<arrow::Int64Builder> indices(static_cast<size_t>(partitions));
  for (size_t i = 0; i < assignment.size(); ++i) {
    ARROW_RETURN_NOT_OK(
        indices[static_cast<size_t>(assignment[i])].Append(static_cast<int64_t>(i)));
  }
  std::vector<std::shared_ptr<arrow::Table>> out;
  for (auto& b : indices) {
    ARROW_ASSIGN_OR_RAISE(auto idx, b.Finish());
    ARROW_ASSIGN_OR_RAISE(auto taken, arrow::compute::Take(batch, idx));
    ARROW_ASSIGN_OR_RAISE(auto t,
                          arrow::Table::FromRecordBatches(batch->schema(), {taken.record_batch()}));
    out.push_back(std::move(t));
  }
  return out;
}

arrow::Result<OutputFile> WriteShuffleFile(storage::ObjectStore* store, const std::string& key,
                                           const std::shared_ptr<arrow::Table>& table) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeFileWriter(sink, table->schema()));
  ARROW_RETURN_NOT_OK(writer->WriteTable(*table));
  ARROW_RETURN_NOT_OK(writer->Close());
  ARROW_ASSIGN_OR_RAISE(auto bytes, sink->Finish());
  ARROW_RETURN_NOT_OK(store->Put(key, bytes));
  return OutputFile{key, table->num_rows(), bytes->size(), artifact::Blake3(*bytes).ToHex(), ""};
}

arrow::Result<std::shared_ptr<arrow::Table>> ReadShuffleFile(storage::ObjectStore* store,
                                                             const std::string& key,
                                                             const std::string& expected_blake3,
                                                             const arrow::Schema& expected) {
  ARROW_ASSIGN_OR_RAISE(auto bytes, store->Get(key));
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
    arrow::Status st = (*batch)->ValidateFull();
    if (!st.ok()) return arrow::Status::Invalid(where, ": batch ", i, ": ", st.message());
    batches.push_back(*batch);
  }
  return arrow::Table::FromRecordBatches((*reader)->schema(), batches);
}

}  // namespace sluice::exec
