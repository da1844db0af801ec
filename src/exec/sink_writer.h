// Writes one sink part: a table as a Parquet or IPC file object, atomically, and reports its
// rows, size and BLAKE3 for the sink manifest. The hidden __seq column is dropped first.
#pragma once

#include <arrow/result.h>
#include <arrow/table.h>

#include <string>

#include "exec/task_report.h"
#include "storage/object_store.h"

namespace sluice::exec {

arrow::Result<OutputFile> WriteSinkPart(storage::ObjectStore* store, const std::string& key,
                                        const std::string& format,
                                        const std::shared_ptr<arrow::Table>& table);

}  // namespace sluice::exec
