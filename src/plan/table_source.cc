#include "plan/table_source.h"

#include <arrow/api.h>
#include <arrow/dataset/discovery.h>
#include <arrow/dataset/file_json.h>
#include <arrow/ipc/reader.h>
#include <parquet/arrow/reader.h>

#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/statistics.h>
#include <algorithm>

#include "storage/sink_manifest.h"

namespace sluice::plan {

namespace {

namespace ds = arrow::dataset;

// The type SQL sees for a file column of `type`: views as their plain types, decimal32 and
// decimal64 as decimal128.
std::shared_ptr<arrow::DataType> Plain(const std::shared_ptr<arrow::DataType>& type) {
  switch (type->id()) {
    case arrow::Type::STRING_VIEW:
      return arrow::utf8();
    case arrow::Type::BINARY_VIEW:
      return arrow::binary();
    case arrow::Type::DECIMAL32:
    case arrow::Type::DECIMAL64: {
      // Arrow >= 19 may store these in a file's schema; SQL's decimals (and our kernels, and
      // Arrow's sum) are decimal128. The executor reads narrow ones as decimal64 where it can.
      const auto& d = static_cast<const arrow::DecimalType&>(*type);
      return arrow::decimal128(d.precision(), d.scale());
    }
    default:
      return type;
  }
}

// Row counts and integer ranges from the Parquet footers; the schema from the first.
arrow::Status ReadParquetFooters(TableSource* table) {
  for (size_t f = 0; f < table->files.size(); ++f) {
    ARROW_ASSIGN_OR_RAISE(auto file, table->store->OpenForRead(table->files[f]));
    auto reader = parquet::arrow::OpenFile(file, arrow::default_memory_pool());
    if (!reader.ok()) {
      return arrow::Status::Invalid("table '", table->name, "': '", table->files[f],
                                    "' is not a Parquet file: ", reader.status().message());
    }
    if (f == 0) {
      ARROW_RETURN_NOT_OK((*reader)->GetSchema(&table->file_schema));
    } else {
      // A column is NOT NULL only where every file says so (count(x) of one is count(*)).
      std::shared_ptr<arrow::Schema> schema;
      ARROW_RETURN_NOT_OK((*reader)->GetSchema(&schema));
      arrow::FieldVector fields = table->file_schema->fields();
      for (auto& field : fields) {
        const auto other = schema->GetFieldByName(field->name());
        if (!field->nullable() && (other == nullptr || other->nullable())) {
          field = field->WithNullable(true);
        }
      }
      table->file_schema = arrow::schema(std::move(fields), table->file_schema->metadata());
    }
    auto metadata = (*reader)->parquet_reader()->metadata();
    table->num_rows += metadata->num_rows();
    // Each leaf column's top-level field, which its bytes count towards.
    std::vector<std::string> fields;
    for (int c = 0; c < metadata->num_columns(); ++c) {
      const auto path = metadata->schema()->Column(c)->path()->ToDotVector();
      fields.push_back(path.empty() ? std::string() : path[0]);
    }
    std::vector<int64_t> row_groups;
    for (int rg = 0; rg < metadata->num_row_groups(); ++rg) {
      auto row_group = metadata->RowGroup(rg);
      row_groups.push_back(row_group->total_compressed_size());
      for (int c = 0; c < row_group->num_columns(); ++c) {
        table->column_bytes[fields[static_cast<size_t>(c)]] +=
            row_group->ColumnChunk(c)->total_compressed_size();
      }
    }
    table->row_group_bytes.push_back(std::move(row_groups));
    // Decimals stored as integers in every file (a top-level column each).
    std::set<std::string> integer_decimals;
    for (int c = 0; c < metadata->num_columns(); ++c) {
      const auto* column = metadata->schema()->Column(c);
      const auto logical = column->logical_type();
      if (column->path()->ToDotVector().size() == 1 && logical != nullptr &&
          logical->is_decimal() &&
          static_cast<const parquet::DecimalLogicalType&>(*logical).precision() <= 18 &&
          (column->physical_type() == parquet::Type::INT32 ||
           column->physical_type() == parquet::Type::INT64) &&
          (f == 0 || table->integer_decimal_columns.count(column->name()))) {
        integer_decimals.insert(column->name());
      }
    }
    table->integer_decimal_columns = std::move(integer_decimals);
    if (f == 0) {
      for (const auto& field : table->file_schema->fields()) {
        const auto id = field->type()->id();
        if (id == arrow::Type::STRING || id == arrow::Type::STRING_VIEW) {
          table->dictionary_columns.insert(field->name());
        }
      }
    }
    for (int rg = 0; rg < metadata->num_row_groups(); ++rg) {
      auto row_group = metadata->RowGroup(rg);
      for (int c = 0; c < row_group->num_columns(); ++c) {
        const std::string column = metadata->schema()->Column(c)->name();
        if (!table->dictionary_columns.count(column)) continue;
        const auto chunk = row_group->ColumnChunk(c);  // owns the stats read below
        const auto& stats = chunk->encoding_stats();
        bool dictionary = !stats.empty();
        for (const auto& page : stats) {
          const bool data = page.page_type == parquet::PageType::DATA_PAGE ||
                            page.page_type == parquet::PageType::DATA_PAGE_V2;
          dictionary = dictionary && (!data || page.encoding == parquet::Encoding::RLE_DICTIONARY ||
                                      page.encoding == parquet::Encoding::PLAIN_DICTIONARY);
        }
        // A dictionary nearly as large as the values (names, addresses, comments) saves
        // nothing and costs a hash of every value as the reader interns it.
        if (dictionary && chunk->has_dictionary_page() && row_group->num_rows() > 0 &&
            chunk->data_page_offset() > chunk->dictionary_page_offset() &&
            static_cast<double>(chunk->data_page_offset() - chunk->dictionary_page_offset()) >
                kMaxDictionaryBytesPerRow * static_cast<double>(row_group->num_rows())) {
          dictionary = false;
        }
        if (!dictionary) table->dictionary_columns.erase(column);
      }
    }
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
        if (metadata->schema()->Column(c)->path()->ToDotVector().size() == 1) {  // not nested
          auto& per_file = table->row_group_int_ranges[column];
          per_file.resize(table->files.size());
          per_file[f].resize(static_cast<size_t>(metadata->num_row_groups()), {1, 0});
          per_file[f][static_cast<size_t>(rg)] = {lo, hi};
        }
        auto [it, inserted] = table->int_ranges.emplace(column, std::make_pair(lo, hi));
        if (!inserted) {
          it->second.first = std::min(it->second.first, lo);
          it->second.second = std::max(it->second.second, hi);
        }
      }
    }
  }
  return arrow::Status::OK();
}

// IPC files: every footer is read (which validates it), rows counted from batch metadata.
arrow::Status ReadIpcFooters(TableSource* table) {
  for (size_t f = 0; f < table->files.size(); ++f) {
    ARROW_ASSIGN_OR_RAISE(auto file, table->store->OpenForRead(table->files[f]));
    auto reader = arrow::ipc::RecordBatchFileReader::Open(file);
    if (!reader.ok()) {
      return arrow::Status::Invalid("table '", table->name, "': '", table->files[f],
                                    "' is not an Arrow IPC file: ", reader.status().message());
    }
    if (f == 0) {
      table->file_schema = (*reader)->schema();
    } else if (!(*reader)->schema()->Equals(*table->file_schema, /*check_metadata=*/false)) {
      return arrow::Status::Invalid("table '", table->name, "': '", table->files[f],
                                    "' has schema ", (*reader)->schema()->ToString(), ", but '",
                                    table->files[0], "' has ", table->file_schema->ToString());
    }
    auto rows = (*reader)->CountRows();
    if (!rows.ok()) {
      return arrow::Status::Invalid("table '", table->name, "': '", table->files[f],
                                    "': ", rows.status().message());
    }
    table->num_rows += *rows;
  }
  return arrow::Status::OK();
}

// JSONL: the schema is inferred from the first file, as Arrow's JSON reader types it.
arrow::Status InferJsonSchema(TableSource* table) {
  auto factory = ds::FileSystemDatasetFactory::Make(table->store->filesystem(),
                                                    {table->store->FileSystemPath(table->files[0])},
                                                    std::make_shared<ds::JsonFileFormat>(), {});
  if (factory.ok()) {
    auto schema = (*factory)->Inspect();
    if (schema.ok()) {
      table->file_schema = *schema;
      // No footer: estimate rows for join ordering from the size.
      table->num_rows = std::max<int64_t>(1, table->total_bytes / 100);
      return arrow::Status::OK();
    }
    factory = schema.status();
  }
  return arrow::Status::Invalid("table '", table->name, "': '", table->files[0],
                                "' is not readable as JSONL: ", factory.status().message());
}

const char* Extension(const std::string& format) {
  return format == "parquet" ? ".parquet" : format == "ipc" ? ".arrow" : ".jsonl";
}

const char* FormatName(const std::string& format) {
  return format == "parquet" ? "Parquet" : format == "ipc" ? "Arrow IPC (.arrow)" : "JSONL";
}

}  // namespace

arrow::Result<std::shared_ptr<TableSource>> OpenTable(std::shared_ptr<storage::ObjectStore> store,
                                                      const std::string& name,
                                                      const std::string& location,
                                                      const std::string& format) {
  auto table = std::make_shared<TableSource>();
  table->name = name;
  table->location = location;
  table->store = store;
  table->format = format;
  std::string prefix = location;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  // A single file, or a directory whose committed outputs (or, with no sink manifest there,
  // whose files of the format) form the table.
  ARROW_ASSIGN_OR_RAISE(bool single, store->Exists(prefix));
  if (single) {
    table->files = {prefix};
    if (format == "auto") {
      table->format =
          prefix.size() >= 8 && prefix.substr(prefix.size() - 8) == ".parquet" ? "parquet" : "ipc";
    }
  }
  // Paths sluice wrote to but never committed read as empty; the message says why.
  std::vector<std::string> uncommitted;
  if (!single) {
    for (const char* f : {"parquet", "ipc"}) {
      const std::string try_format = format == "auto" ? f : format;
      ARROW_ASSIGN_OR_RAISE(
          auto listing, storage::ListCommitted(store.get(), prefix + "/", Extension(try_format)));
      table->files = std::move(listing.files);
      uncommitted = std::move(listing.uncommitted);
      table->format = try_format;
      if (!table->files.empty() || format != "auto") break;
    }
  }
  if (table->files.empty()) {
    std::string why;
    for (const auto& u : uncommitted) {
      why += (why.empty() ? "; " : ", ") + u;
    }
    if (!why.empty()) why += " not committed: a run's output exists once its _manifest.json does";
    return arrow::Status::Invalid("table '", name, "': no ", FormatName(table->format),
                                  " files at '", location, "' in store ", store->display_url(),
                                  why);
  }
  ARROW_ASSIGN_OR_RAISE(auto listed, store->List(single ? prefix : prefix + "/"));
  table->file_bytes.assign(table->files.size(), 0);
  for (const auto& o : listed) {
    auto at = std::lower_bound(table->files.begin(), table->files.end(), o.key);
    if (at != table->files.end() && *at == o.key) {
      table->file_bytes[static_cast<size_t>(at - table->files.begin())] = o.size;
      table->total_bytes += o.size;
    }
  }
  if (table->format == "parquet") {
    ARROW_RETURN_NOT_OK(ReadParquetFooters(table.get()));
  } else if (table->format == "ipc") {
    ARROW_RETURN_NOT_OK(ReadIpcFooters(table.get()));
  } else {
    ARROW_RETURN_NOT_OK(InferJsonSchema(table.get()));
  }
  arrow::FieldVector fields;
  for (const auto& f : table->file_schema->fields()) {
    fields.push_back(arrow::field(f->name(), Plain(f->type()), f->nullable()));
  }
  table->schema = arrow::schema(fields);
  return table;
}

int64_t TableSource::SplitUnits() const {
  if (row_group_bytes.size() != files.size()) return static_cast<int64_t>(files.size());
  int64_t units = 0;
  for (const auto& groups : row_group_bytes) {
    units += std::max<int64_t>(1, static_cast<int64_t>(groups.size()));
  }
  return units;
}

int64_t TableSource::ScanBytes(const std::vector<std::string>& columns) const {
  if (column_bytes.empty()) return total_bytes;
  int64_t bytes = 0;
  for (const auto& c : columns) {
    auto it = column_bytes.find(c);
    if (it == column_bytes.end()) return total_bytes;  // not a file column: weigh the files
    bytes += it->second;
  }
  return bytes;
}

int64_t TableSource::DistinctBound(const std::string& column) const {
  auto it = int_ranges.find(column);
  if (it == int_ranges.end()) return std::max<int64_t>(num_rows, 1);
  // The span in 128 bits: a range from -5e18 to 5e18 overflows int64.
  const __int128 span = static_cast<__int128>(it->second.second) - it->second.first + 1;
  return std::max<int64_t>(1, static_cast<int64_t>(std::min<__int128>(num_rows, span)));
}

}  // namespace sluice::plan
