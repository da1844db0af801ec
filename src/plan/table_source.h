// The directory table provider: an external table is the sorted list of Parquet, Arrow IPC
// (file format, as sinks write it) or JSONL files under a store prefix, one partition per file.
// Its schema is read once, from the first file (inferred from it, for JSONL), and then carried
// in the plan; string_view columns (tpchgen-cli writes them) are read as plain strings, which
// every Acero kernel supports. Parquet footers also give row counts and integer ranges.
#pragma once

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "storage/object_store.h"

namespace sluice::plan {

/// The format of the one-row, no-column table that SELECT without FROM reads; it is never in a
/// store, so plans that read it run in one process.
inline constexpr char kConstantRowFormat[] = "constant_row";

/// The format of rows a query computed beforehand and holds in memory (`rows`): a part of its
/// plan run first (sql/semi_join_reduction.h). In one process only; never encoded.
inline constexpr char kMemoryFormat[] = "memory";

/// A string column whose Parquet dictionary pages take more compressed bytes than this per row
/// is read value by value: its values are mostly distinct, so a dictionary saves nothing.
inline constexpr double kMaxDictionaryBytesPerRow = 1.0;

struct TableSource {
  std::string name;
  std::string location;
  /// "parquet", "ipc", "jsonl", or "provider" (a function library's table).
  std::string format;
  std::shared_ptr<storage::ObjectStore> store;
  /// The URL `store` was opened from when the location is a path or URL of its own (see
  /// table_location.h); empty when the files are keys of the session's store.
  std::string store_url;
  /// Store keys, sorted: partition i is files[i].
  std::vector<std::string> files;
  /// The size of each of `files`, from the store's listing.
  std::vector<int64_t> file_bytes;
  /// Parquet: the compressed bytes of each row group of each file, from its footer (empty for
  /// other formats). A map task of a distributed query reads a share of a table's row groups, so
  /// one large file still splits among several tasks.
  std::vector<std::vector<int64_t>> row_group_bytes;
  /// When not empty, the row groups [first, second) of each of `files` are all that is read: a
  /// map task's share of the table.
  std::vector<std::pair<int32_t, int32_t>> row_group_ranges;
  /// Bytes of all files: a size estimate for join ordering.
  int64_t total_bytes = 0;
  /// Parquet: each column's compressed bytes over all files, from the footers (empty for other
  /// formats): what reading some of the columns costs.
  std::map<std::string, int64_t> column_bytes;
  /// Rows in all files, from the Parquet footers.
  int64_t num_rows = 0;
  /// min and max of each integer column, from row-group statistics: (max - min + 1) bounds a
  /// key's distinct count, which is what join ordering needs to avoid exploding joins.
  std::map<std::string, std::pair<int64_t, int64_t>> int_ranges;
  /// The same per row group: [column][file][row group], {1, 0} where a row group has no
  /// statistics. What a map task's share of the table holds of a join key
  /// (plan/split_key_ranges.h). Read from the footers; not sent to workers.
  std::map<std::string, std::vector<std::vector<std::pair<int64_t, int64_t>>>> row_group_int_ranges;

  /// String columns whose every Parquet data page is dictionary-encoded: read as dictionary
  /// indices and expanded once, instead of decoded value by value (TPC-H's flags and modes).
  /// Not one whose dictionary pages take more than kMaxDictionaryBytesPerRow per row.
  std::set<std::string> dictionary_columns;

  /// Decimal columns of at most 18 digits that every Parquet file stores as 32- or 64-bit
  /// integers: the executor may read them as decimal64 (exec/narrow_decimals.h), where a column
  /// stored as bytes would need a cast.
  std::set<std::string> integer_decimal_columns;

  /// The units a scan of this table splits into among tasks: row groups where the footers
  /// gave them, else files.
  int64_t SplitUnits() const;
  /// The bytes a scan of `columns` (file columns) reads: their compressed bytes where the
  /// footers give them, else the whole files'.
  int64_t ScanBytes(const std::vector<std::string>& columns) const;

  /// An upper bound of the distinct values of `column`: its integer range, capped by the rows.
  int64_t DistinctBound(const std::string& column) const;
  /// The schema as stored in the files.
  std::shared_ptr<arrow::Schema> file_schema;
  /// The schema SQL sees (view types replaced by their plain forms).
  std::shared_ptr<arrow::Schema> schema;
  /// Format kMemoryFormat: the rows, whose column names are the table's.
  std::shared_ptr<arrow::Table> rows;
  /// Format "provider": the table's durable description (plan/table_provider.h); `files` are
  /// the provider's partitions.
  std::string provider;
};

/// Opens the table at `location` (a file or a prefix) in `format`; "auto" takes Parquet files
/// where there are any, else IPC files (a run's committed output is either).
arrow::Result<std::shared_ptr<TableSource>> OpenTable(std::shared_ptr<storage::ObjectStore> store,
                                                      const std::string& name,
                                                      const std::string& location,
                                                      const std::string& format);

}  // namespace sluice::plan
