#include "exec/sink_writer.h"

#include <arrow/ipc/api.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include "common/status.h"
#include "exec/hashed_object.h"
#include "plan/fragment.h"

namespace sluice::exec {

arrow::Result<OutputFile> WriteSinkPart(storage::ObjectStore* store, const std::string& key,
                                        const std::string& format,
                                        const std::shared_ptr<arrow::Table>& input) {
  std::shared_ptr<arrow::Table> table = input;
  const int seq = table->schema()->GetFieldIndex(plan::kSequenceColumn);
  if (seq >= 0) {
    ARROW_ASSIGN_OR_RAISE(table, table->RemoveColumn(seq));
  }
  const std::string ctx = "writing sink part '" + key + "'";
  // Straight to the store, hashed on the way (hashed_object.h).
  ARROW_ASSIGN_OR_RAISE(auto object, HashedObjectWriter::Open(store, key));
  const std::shared_ptr<arrow::io::OutputStream>& sink = object->stream();
  if (format == "parquet") {
    // Page CRCs let a reader tell a damaged page from data (exec/plan_executor.cc verifies them).
    auto props = parquet::WriterProperties::Builder()
                     .compression(parquet::Compression::ZSTD)
                     ->max_row_group_length(128 * 1024)
                     ->enable_page_checksum()
                     ->build();
    auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
    SLUICE_RETURN_NOT_OK_CTX(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink,
                                                        128 * 1024, props, arrow_props),
                             ctx);
  } else if (format == "ipc") {
    ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeFileWriter(sink, table->schema()));
    SLUICE_RETURN_NOT_OK_CTX(writer->WriteTable(*table), ctx);
    SLUICE_RETURN_NOT_OK_CTX(writer->Close(), ctx);
  } else {
    return arrow::Status::Invalid("internal: unknown sink format '", format, "'");
  }
  ARROW_ASSIGN_OR_RAISE(OutputFile out, object->Commit());
  out.rows = table->num_rows();
  out.schema = table->schema()->ToString(/*show_metadata=*/true);
  return out;
}

}  // namespace sluice::exec
