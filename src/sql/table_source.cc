#include "sql/table_source.h"

#include <arrow/api.h>
#include <parquet/arrow/reader.h>

#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/statistics.h>
#include <algorithm>

#include "storage/sink_manifest.h"

namespace sluice::sql {

namespace {

std::shared_ptr<arrow::DataType> Plain(const std::shared_ptr<arrow::DataType>& type) {
  switch (type->id()) {
    case arrow::Type::STRING_VIEW:
      return arrow::utf8();
    case arrow::Type::BINARY_VIEW:
      return arrow::binary();
    default:
      return type;
  }
}

}  // namespace

arrow::Result<std::shared_ptr<TableSource>> OpenParquetTable(
    std::shared_ptr<storage::ObjectStore> store, const std::string& name,
    const std::string& location) {
  auto table = std::make_shared<TableSource>();
  table->name = name;
  table->location = location;
  table->store = store;
  std::string prefix = location;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  // A single file, or a directory whose committed outputs (or, with no sink manifest there,
  // whose Parquet files) form the table.
  ARROW_ASSIGN_OR_RAISE(bool single, store->Exists(prefix));
  if (single) {
    table->files = {prefix};
  } else {
    ARROW_ASSIGN_OR_RAISE(table->files,
                          storage::CommittedFiles(store.get(), prefix + "/", ".parquet"));
  }
  if (table->files.empty()) {
    return arrow::Status::Invalid("table '", name, "': no Parquet files at '", location,
                                  "' in store ", store->display_url());
  }
  ARROW_ASSIGN_OR_RAISE(auto listed, store->List(single ? prefix : prefix + "/"));
  for (const auto& o : listed) {
    if (std::binary_search(table->files.begin(), table->files.end(), o.key)) {
      table->total_bytes += o.size;
    }
  }
  // Footers only: the schema from the first file, row counts and integer ranges from all.
  for (size_t f = 0; f < table->files.size(); ++f) {
    ARROW_ASSIGN_OR_RAISE(auto file, store->OpenForRead(table->files[f]));
    auto reader = parquet::arrow::OpenFile(file, arrow::default_memory_pool());
    if (!reader.ok()) {
      return arrow::Status::Invalid("table '", name, "': '", table->files[f],
                                    "' is not a Parquet file: ", reader.status().message());
    }
    if (f == 0) ARROW_RETURN_NOT_OK((*reader)->GetSchema(&table->file_schema));
    auto metadata = (*reader)->parquet_reader()->metadata();
    table->num_rows += metadata->num_rows();
    for (int rg = 0; rg < metadata->num_row_groups(); ++rg) {
      auto row_group = metadata->RowGroup(rg);
      for (int c = 0; c < row_group->num_columns(); ++c) {
        auto chunk = row_group->ColumnChunk(c);
        auto stats = chunk->statistics();
        if (stats == nullptr || !stats->HasMinMax()) continue;
        int64_t lo, hi;
        if (stats->physical_type() == parquet::Type::INT64) {
          auto typed = std::static_pointer_cast<parquet::Int64Statistics>(stats);
          lo = typed->min();
          hi = typed->max();
        } else if (stats->physical_type() == parquet::Type::INT32) {
          auto typed = std::static_pointer_cast<parquet::Int32Statistics>(stats);
          lo = typed->min();
          hi = typed->max();
        } else {
          continue;
        }
        const std::string column = metadata->schema()->Column(c)->name();
        auto [it, inserted] = table->int_ranges.emplace(column, std::make_pair(lo, hi));
        if (!inserted) {
          it->second.first = std::min(it->second.first, lo);
          it->second.second = std::max(it->second.second, hi);
        }
      }
    }
  }
  arrow::FieldVector fields;
  for (const auto& f : table->file_schema->fields()) {
    fields.push_back(arrow::field(f->name(), Plain(f->type()), f->nullable()));
  }
  table->schema = arrow::schema(fields);
  return table;
}

int64_t TableSource::DistinctBound(const std::string& column) const {
  auto it = int_ranges.find(column);
  if (it == int_ranges.end()) return std::max<int64_t>(num_rows, 1);
  return std::max<int64_t>(1, std::min(num_rows, it->second.second - it->second.first + 1));
}

}  // namespace sluice::sql
