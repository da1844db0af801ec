#include "sql/table_source.h"

#include <arrow/api.h>
#include <parquet/arrow/reader.h>

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
  ARROW_ASSIGN_OR_RAISE(auto listed, store->List(prefix));
  for (const auto& o : listed) {
    // The location is a file or a directory of files; a sibling that merely shares the prefix
    // ("lineitem2/...") is not part of the table.
    const bool inside = o.key == prefix || o.key.compare(0, prefix.size() + 1, prefix + "/") == 0;
    if (inside && o.key.ends_with(".parquet")) {
      table->files.push_back(o.key);
      table->total_bytes += o.size;
    }
  }
  if (table->files.empty()) {
    return arrow::Status::Invalid("table '", name, "': no Parquet files at '", location,
                                  "' in store ", store->display_url());
  }
  ARROW_ASSIGN_OR_RAISE(auto file, store->OpenForRead(table->files.front()));
  auto reader = parquet::arrow::OpenFile(file, arrow::default_memory_pool());
  if (!reader.ok()) {
    return arrow::Status::Invalid("table '", name, "': '", table->files.front(),
                                  "' is not a Parquet file: ", reader.status().message());
  }
  ARROW_RETURN_NOT_OK((*reader)->GetSchema(&table->file_schema));
  arrow::FieldVector fields;
  for (const auto& f : table->file_schema->fields()) {
    fields.push_back(arrow::field(f->name(), Plain(f->type()), f->nullable()));
  }
  table->schema = arrow::schema(fields);
  return table;
}

}  // namespace sluice::sql
