#include "storage/ipc_stream.h"

#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <arrow/type.h>

#include <sstream>

#include "storage/validate.h"

namespace sluice::storage {

namespace {

std::string FieldList(const arrow::Schema& schema) {
  std::ostringstream out;
  out << "[";
  for (int i = 0; i < schema.num_fields(); ++i) {
    if (i > 0) out << ", ";
    out << schema.field(i)->ToString();
  }
  out << "]";
  return out.str();
}

}  // namespace

int64_t IpcStream::num_rows() const {
  int64_t n = 0;
  for (const auto& b : batches) n += b->num_rows();
  return n;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> WriteIpcStream(
    const std::shared_ptr<arrow::Schema>& schema,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeStreamWriter(sink, schema));
  for (const auto& batch : batches) ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
  ARROW_RETURN_NOT_OK(writer->Close());
  return sink->Finish();
}

arrow::Result<std::shared_ptr<arrow::Buffer>> WriteIpcStream(
    const std::shared_ptr<arrow::Schema>& schema,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
    const std::shared_ptr<arrow::ResizableBuffer>& buffer) {
  auto sink = std::make_shared<arrow::io::BufferOutputStream>(buffer);
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeStreamWriter(sink, schema));
  for (const auto& batch : batches) ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
  ARROW_RETURN_NOT_OK(writer->Close());
  return sink->Finish();
}

arrow::Result<IpcStream> ReadIpcStream(const std::shared_ptr<arrow::Buffer>& bytes,
                                       std::string_view what) {
  auto invalid = [&](std::string_view stage, const arrow::Status& st) {
    return arrow::Status::Invalid(what, ": ", stage, ": ", st.message());
  };
  auto reader =
      arrow::ipc::RecordBatchStreamReader::Open(std::make_shared<arrow::io::BufferReader>(bytes));
  if (!reader.ok()) return invalid("not a valid Arrow IPC stream", reader.status());
  IpcStream out;
  out.schema = (*reader)->schema();
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    arrow::Status st = (*reader)->ReadNext(&batch);
    if (!st.ok()) {
      return invalid("cannot read batch " + std::to_string(out.batches.size()), st);
    }
    if (batch == nullptr) break;
    st = ValidateFull(*batch);
    if (!st.ok()) return invalid("invalid batch " + std::to_string(out.batches.size()), st);
    out.batches.push_back(std::move(batch));
  }
  return out;
}

arrow::Status CheckSchema(const arrow::Schema& expected, const arrow::Schema& actual,
                          std::string_view what) {
  if (actual.Equals(expected, /*check_metadata=*/false)) return arrow::Status::OK();
  return arrow::Status::TypeError(what, ": schema mismatch: expected ", FieldList(expected),
                                  ", got ", FieldList(actual));
}

}  // namespace sluice::storage
