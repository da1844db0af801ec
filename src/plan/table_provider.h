// Tables from function libraries' table providers (include/sluice/function_abi.h).
//
// A provider table is a TableSource of format "provider" whose `files` are the provider's
// partitions (so a distributed scan splits them among tasks as it splits files) and whose
// `provider` is its durable description: which library (by digest) and table, the options, and
// the schema the provider gave. The description is versioned text a person can read, with the
// schema as an IPC message in hex:
//   SLUICE-TABLE-PROVIDER/1\n{"library":"<digest>","table":"...","options":"...",
//                             "schema":"<hex>"}
// so that a worker rebuilds the scan from the plan alone, with the library loaded through its
// session spec.
//
// Every batch a provider's scan returns is checked against the projected schema and with
// ValidateFull before anything reads it; errors name the provider, its library and the
// partition.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plan/table_source.h"
#include "storage/object_store.h"

namespace sluice::plan {

inline constexpr char kProviderFormat[] = "provider";
inline constexpr char kProviderMagic[] = "SLUICE-TABLE-PROVIDER/1\n";

/// Opens table `table` of the registered library `digest_hex` with `options`: asks the provider
/// for its schema and partitions. `name` is the SQL table's name.
arrow::Result<std::shared_ptr<TableSource>> OpenProviderTable(
    std::shared_ptr<storage::ObjectStore> store, const std::string& name,
    const std::string& digest_hex, const std::string& table, const std::string& options);

/// The description of a provider table (TableSource::provider's bytes).
arrow::Result<std::string> ProviderDescription(const std::string& digest_hex,
                                               const std::string& table, const std::string& options,
                                               const arrow::Schema& schema);

struct ProviderTable {
  std::string digest_hex;
  std::string table;
  std::string options;
  std::shared_ptr<arrow::Schema> schema;
};

/// Parses and checks a description: magic, fields, schema; the library must be registered in
/// this process and have the table. Errors start with `where`.
arrow::Result<ProviderTable> ParseProviderDescription(std::string_view bytes,
                                                      const std::string& where);

/// The rows of `table`'s partitions (its `files`), in order, with `columns` only.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ScanProvider(
    const TableSource& table, const std::vector<std::string>& columns);

}  // namespace sluice::plan
