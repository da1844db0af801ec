#include "exec/sink_writer.h"

#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include "artifact/blake3_digest.h"
#include "common/status.h"
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
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  if (format == "parquet") {
    auto props = parquet::WriterProperties::Builder()
                     .compression(parquet::Compression::ZSTD)
                     ->max_row_group_length(128 * 1024)
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
  ARROW_ASSIGN_OR_RAISE(auto bytes, sink->Finish());
  OutputFile out{key, table->num_rows(), bytes->size(), artifact::Blake3(*bytes).ToHex(),
                 table->schema()->ToString(/*show_metadata=*/true)};
  ARROW_RETURN_NOT_OK(store->Put(key, bytes));
  return out;
}

}  // namespace sluice::exec
