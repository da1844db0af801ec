#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/io/stdio.h>
#include <arrow/ipc/api.h>
#include <arrow/memory_pool.h>
#include <parquet/arrow/writer.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "cli/csv_text.h"
#include "common/config.h"
#include "common/hex.h"
#include "sql/query.h"
#include "storage/object_store.h"

namespace sluice::cli {

namespace {

struct QueryOptions {
  std::string sql;
  std::string file;
  std::string format;  // table | csv | json | parquet | arrow; empty: table on a TTY, else csv
  std::string output;
  int workers = 0;
  int64_t broadcast_limit = -1;
  std::string executor = "local";
};

// Binary columns in text output are written as PostgreSQL writes bytea, "\x" and hex: as raw
// bytes they are not text (the CSV writer refuses them as invalid UTF-8).
arrow::Result<std::shared_ptr<arrow::Table>> TextForm(const std::shared_ptr<arrow::Table>& table) {
  arrow::FieldVector fields;
  std::vector<std::shared_ptr<arrow::ChunkedArray>> columns;
  for (int c = 0; c < table->num_columns(); ++c) {
    auto field = table->field(c);
    auto column = table->column(c);
    const auto id = field->type()->id();
    if (id != arrow::Type::BINARY && id != arrow::Type::LARGE_BINARY &&
        id != arrow::Type::FIXED_SIZE_BINARY && id != arrow::Type::BINARY_VIEW) {
      fields.push_back(field);
      columns.push_back(column);
      continue;
    }
    arrow::StringBuilder text;
    for (const auto& chunk : column->chunks()) {
      for (int64_t r = 0; r < chunk->length(); ++r) {
        if (chunk->IsNull(r)) {
          ARROW_RETURN_NOT_OK(text.AppendNull());
          continue;
        }
        ARROW_ASSIGN_OR_RAISE(auto scalar, chunk->GetScalar(r));
        const auto& bytes = *static_cast<const arrow::BaseBinaryScalar&>(*scalar).value;
        ARROW_RETURN_NOT_OK(
            text.Append("\\x" + HexEncode(bytes.data(), static_cast<size_t>(bytes.size()))));
      }
    }
    ARROW_ASSIGN_OR_RAISE(auto array, text.Finish());
    fields.push_back(arrow::field(field->name(), arrow::utf8(), field->nullable()));
    columns.push_back(std::make_shared<arrow::ChunkedArray>(array));
  }
  return arrow::Table::Make(arrow::schema(fields), columns, table->num_rows());
}

std::string Cell(const arrow::Array& column, int64_t row) {
  if (column.IsNull(row)) return "NULL";
  if (column.type_id() == arrow::Type::DECIMAL128) {
    const auto& decimals = static_cast<const arrow::Decimal128Array&>(column);
    return PlainDecimal(arrow::Decimal128(decimals.GetValue(row)),
                        static_cast<const arrow::Decimal128Type&>(*column.type()).scale());
  }
  auto scalar = column.GetScalar(row);
  if (!scalar.ok()) return "?";
  if ((*scalar)->type->id() == arrow::Type::STRING) {
    return std::string(static_cast<const arrow::StringScalar&>(**scalar).view());
  }
  return (*scalar)->ToString();
}

// A cell on one line of the table: newlines, carriage returns and tabs as \n, \r and \t, as
// DuckDB's table shows them, so that a value cannot break the table's lines.
std::string OneLine(std::string s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else {
      out += ch;
    }
  }
  return out;
}

// The columns `s` takes on a terminal: its UTF-8 characters (each a lead byte), not its bytes.
size_t DisplayWidth(const std::string& s) {
  size_t n = 0;
  for (const char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

void PrintTable(const arrow::Table& table, std::ostream& out) {
  std::vector<std::vector<std::string>> cells(static_cast<size_t>(table.num_columns()));
  std::vector<size_t> width(cells.size());
  for (int c = 0; c < table.num_columns(); ++c) {
    width[c] = DisplayWidth(table.field(c)->name());
    if (table.num_rows() == 0) continue;  // no rows may mean no chunks
    auto column = table.column(c)->chunk(0);
    for (int64_t r = 0; r < table.num_rows(); ++r) {
      cells[c].push_back(OneLine(Cell(*column, r)));
      width[c] = std::max(width[c], DisplayWidth(cells[c].back()));
    }
  }
  auto line = [&](auto get) {
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string s = get(c);
      const size_t w = DisplayWidth(s);
      out << (c ? " | " : " ") << s << std::string(width[c] - std::min(width[c], w), ' ');
    }
    out << "\n";
  };
  line([&](size_t c) { return table.field(static_cast<int>(c))->name(); });
  for (size_t c = 0; c < cells.size(); ++c) out << (c ? "-+-" : "-") << std::string(width[c], '-');
  out << "\n";
  for (int64_t r = 0; r < table.num_rows(); ++r)
    line([&](size_t c) { return cells[c][static_cast<size_t>(r)]; });
  out << "(" << table.num_rows() << (table.num_rows() == 1 ? " row)\n" : " rows)\n");
}

// One cell as JSON: numbers and booleans as JSON's own, other values (decimals, dates, strings)
// as their text. JSON has no infinities or NaN, so those are the strings PostgreSQL's to_json
// gives: "Infinity", "-Infinity", "NaN".
nlohmann::ordered_json JsonCell(const arrow::Array& column, int64_t row) {
  if (column.IsNull(row)) return nullptr;
  auto number = [](double v) -> nlohmann::ordered_json {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    return v;
  };
  switch (column.type_id()) {
    case arrow::Type::BOOL:
      return static_cast<const arrow::BooleanArray&>(column).Value(row);
    case arrow::Type::INT8:
      return static_cast<const arrow::Int8Array&>(column).Value(row);
    case arrow::Type::INT16:
      return static_cast<const arrow::Int16Array&>(column).Value(row);
    case arrow::Type::INT32:
      return static_cast<const arrow::Int32Array&>(column).Value(row);
    case arrow::Type::INT64:
      return static_cast<const arrow::Int64Array&>(column).Value(row);
    case arrow::Type::UINT8:
      return static_cast<const arrow::UInt8Array&>(column).Value(row);
    case arrow::Type::UINT16:
      return static_cast<const arrow::UInt16Array&>(column).Value(row);
    case arrow::Type::UINT32:
      return static_cast<const arrow::UInt32Array&>(column).Value(row);
    case arrow::Type::UINT64:
      return static_cast<const arrow::UInt64Array&>(column).Value(row);
    case arrow::Type::FLOAT:
      return number(static_cast<const arrow::FloatArray&>(column).Value(row));
    case arrow::Type::DOUBLE:
      return number(static_cast<const arrow::DoubleArray&>(column).Value(row));
    default:
      return Cell(column, row);
  }
}

void PrintJson(const arrow::Table& table, std::ostream& out) {
  // Written key by key, not through a JSON object: two columns of one name (SELECT 1 AS a,
  // 2 AS a) both appear, as in PostgreSQL's row_to_json.
  const auto dump = [](const nlohmann::ordered_json& v) {
    return v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  };
  std::vector<std::string> keys;
  for (int c = 0; c < table.num_columns(); ++c) keys.push_back(dump(table.field(c)->name()));
  for (int64_t r = 0; r < table.num_rows(); ++r) {
    std::string line = "{";
    for (int c = 0; c < table.num_columns(); ++c) {
      if (c > 0) line += ',';
      line += keys[static_cast<size_t>(c)] + ':' + dump(JsonCell(*table.column(c)->chunk(0), r));
    }
    out << line << "}\n";
  }
}

// Where a result goes: standard output, or with --output a file written the way the object
// store writes, under a unique temporary name and renamed into place by Commit, so a query that
// fails never leaves a partial result at --output.
class Destination {
 public:
  static arrow::Result<Destination> Open(const QueryOptions& o) {
    Destination d;
    if (o.output.empty() || o.output == "-") {
      d.stdout_ = std::make_shared<arrow::io::StdoutStream>();
      return d;
    }
    const std::filesystem::path path = std::filesystem::absolute(o.output);
    ARROW_ASSIGN_OR_RAISE(auto dir,
                          storage::ObjectStore::Open("file://" + path.parent_path().string()));
    ARROW_ASSIGN_OR_RAISE(d.pending_, dir->Create(path.filename().string()));
    return d;
  }

  bool is_stdout() const { return pending_ == nullptr; }

  // The stream, shared without ownership where the pending file owns it.
  std::shared_ptr<arrow::io::OutputStream> stream() const {
    if (pending_ == nullptr) return stdout_;
    return std::shared_ptr<arrow::io::OutputStream>(std::shared_ptr<void>(), pending_->stream());
  }

  arrow::Status Write(const std::string& text) const { return stream()->Write(text); }

  // Publishes the file; on standard output, flushes it.
  arrow::Status Commit() {
    if (pending_ != nullptr) return pending_->Commit();
    std::cout.flush();
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<arrow::io::OutputStream> stdout_;
  std::unique_ptr<storage::PendingObject> pending_;
};

// The output format that a file name's extension names (`out.parquet`), CSV for any other.
std::string FormatOfPath(const std::string& path) {
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "csv";
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == "parquet") return "parquet";
  // An IPC file for the names Arrow gives files (which CREATE EXTERNAL TABLE ... STORED AS IPC
  // reads), the IPC stream of --format arrow for a stream's.
  if (ext == "arrow" || ext == "feather" || ext == "ipc") return "arrow-file";
  if (ext == "arrows") return "arrow";
  if (ext == "json" || ext == "jsonl" || ext == "ndjson") return "json";
  return "csv";
}

arrow::Status WriteBinary(arrow::RecordBatchReader* rows, const std::string& format,
                          Destination* out) {
  if (out->is_stdout() && isatty(STDOUT_FILENO)) {
    return arrow::Status::Invalid("--format ", format == "arrow-file" ? "arrow" : format,
                                  " writes binary data: give --output FILE or redirect stdout");
  }
  // Batch by batch, as they come: the writer holds one row group (Parquet) or nothing (IPC).
  if (format == "parquet") {
    // With page CRCs, which sluice verifies when it reads the file back as a table.
    ARROW_ASSIGN_OR_RAISE(
        auto writer, parquet::arrow::FileWriter::Open(
                         *rows->schema(), arrow::default_memory_pool(), out->stream(),
                         parquet::WriterProperties::Builder().enable_page_checksum()->build()));
    for (auto batch : *rows) {
      ARROW_ASSIGN_OR_RAISE(auto b, std::move(batch));
      ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*b));
    }
    ARROW_RETURN_NOT_OK(writer->Close());
  } else {
    std::shared_ptr<arrow::ipc::RecordBatchWriter> writer;
    if (format == "arrow-file") {
      ARROW_ASSIGN_OR_RAISE(writer, arrow::ipc::MakeFileWriter(out->stream(), rows->schema()));
    } else {
      ARROW_ASSIGN_OR_RAISE(writer, arrow::ipc::MakeStreamWriter(out->stream(), rows->schema()));
    }
    for (auto batch : *rows) {
      ARROW_ASSIGN_OR_RAISE(auto b, std::move(batch));
      ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*b));
    }
    ARROW_RETURN_NOT_OK(writer->Close());
  }
  return out->Commit();
}

// Writes the rows as text (csv, json) batch by batch, each batch's binary columns as hex.
arrow::Status WriteText(arrow::RecordBatchReader* rows, const std::string& format,
                        Destination* out) {
  // The CSV header is written with the first rows (or at the end, for none): a query that fails
  // on its first batch then prints nothing at all, rather than a header that looks like an
  // empty result.
  bool csv_started = false;
  std::string csv_lines;  // one batch's CSV lines, the buffer reused
  auto start_csv = [&]() -> arrow::Status {
    csv_started = true;
    return out->Write(CsvHeader(*rows->schema()));
  };
  for (auto batch : *rows) {
    ARROW_ASSIGN_OR_RAISE(auto b, std::move(batch));
    if (b->num_rows() == 0) continue;
    ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatches({b}));
    ARROW_ASSIGN_OR_RAISE(auto text, TextForm(table));
    if (format == "csv") {
      if (!csv_started) ARROW_RETURN_NOT_OK(start_csv());
      ARROW_ASSIGN_OR_RAISE(auto text_batch, text->CombineChunksToBatch());
      // A thousand rows at a time, as Arrow's writer writes them: the buffer stays in cache.
      constexpr int64_t kRows = 1024;
      for (int64_t r = 0; r < text_batch->num_rows(); r += kRows) {
        csv_lines.clear();
        ARROW_RETURN_NOT_OK(AppendCsvRows(*text_batch->Slice(r, kRows), &csv_lines));
        ARROW_RETURN_NOT_OK(out->Write(csv_lines));
      }
    } else {
      std::ostringstream lines;
      PrintJson(*text, lines);
      ARROW_RETURN_NOT_OK(out->Write(lines.str()));
    }
  }
  if (format == "csv" && !csv_started) ARROW_RETURN_NOT_OK(start_csv());
  return out->Commit();
}

arrow::Status RunQueryCommand(QueryOptions o) {
  // Arrow's allocator, chosen before its first use in this process: for queries jemalloc
  // returns freed memory gradually, where the wheel's default (mimalloc) peaked ~35 % higher
  // on TPC-H Q1 at SF 1 at the same speed. Short-lived pipeline workers keep mimalloc, which
  // starts faster (the 42 MB pipeline bench ran ~8 % slower with jemalloc). A user's
  // ARROW_DEFAULT_MEMORY_POOL wins.
  setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc", /*overwrite=*/0);
  // Arrow's jemalloc returns freed pages after a second (dirty_decay_ms:1000), which a query of
  // under a second never reaches: a GROUP BY's tables, grown by doubling, then stay resident.
  // 50 ms returns them while the query runs (TPC-H Q18 at SF 1: ~270 MB against ~335 MB, in
  // the same time); 0 returns each at once and costs several times the system time. A user's
  // JE_ARROW_MALLOC_CONF wins.
  if (getenv("JE_ARROW_MALLOC_CONF") == nullptr &&
      arrow::default_memory_pool()->backend_name() == "jemalloc") {
    (void)arrow::jemalloc_set_decay_ms(50);
  }
  if (o.sql.empty() || o.sql == "-") {
    std::istream* in = &std::cin;
    std::ifstream file;
    if (!o.file.empty()) {
      file.open(o.file);
      if (!file) return arrow::Status::IOError("cannot read '", o.file, "'");
      in = &file;
    }
    std::stringstream buffer;
    buffer << in->rdbuf();
    o.sql = buffer.str();
  }
  ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
  sql::RunOptions run;
  run.workers = o.workers;
  run.broadcast_limit_bytes = o.broadcast_limit;
  run.executor = o.executor;
  // Results are written as they are computed, so memory holds a few batches, not the result.
  run.stream = true;
  ARROW_ASSIGN_OR_RAISE(auto result, sql::RunQuery(config, o.sql, run));
  if (!result.message.empty()) {
    std::cout << result.message;
    if (result.message.back() != '\n') std::cout << "\n";
    return arrow::Status::OK();
  }
  std::shared_ptr<arrow::RecordBatchReader> rows = result.stream;
  if (rows == nullptr) rows = std::make_shared<arrow::TableBatchReader>(result.table);
  // With no --format: a table for a person at a terminal, the format a file's extension names,
  // CSV for a pipe or another file.
  const bool to_terminal = (o.output.empty() || o.output == "-") && isatty(STDOUT_FILENO);
  const std::string format =
      !o.format.empty() ? o.format : (to_terminal ? "table" : FormatOfPath(o.output));
  ARROW_ASSIGN_OR_RAISE(Destination out, Destination::Open(o));
  if (format == "parquet" || format == "arrow" || format == "arrow-file") {
    return WriteBinary(rows.get(), format, &out);
  }
  if (format != "table") return WriteText(rows.get(), format, &out);
  // A table is laid out to its widest cell: it needs every row first.
  ARROW_ASSIGN_OR_RAISE(auto table, rows->ToTable());
  ARROW_ASSIGN_OR_RAISE(table, table->CombineChunks());
  ARROW_ASSIGN_OR_RAISE(auto text, TextForm(table));
  std::ostringstream laid_out;
  PrintTable(*text, laid_out);
  ARROW_RETURN_NOT_OK(out.Write(laid_out.str()));
  return out.Commit();
}

}  // namespace

void AddQueryCommand(CLI::App& app, Action& action) {
  auto options = std::make_shared<QueryOptions>();
  auto* query = app.add_subcommand("query", "Run one SQL statement");
  query->add_option("sql", options->sql, "The statement; '-' or none reads standard input");
  query->add_option("-f,--file", options->file, "Read the statement from a file");
  query
      ->add_option("--format", options->format,
                   "table, csv, json, parquet or arrow (default: table on a terminal, else "
                   "the format the --output file's extension names, else csv)")
      ->check(CLI::IsMember({"table", "csv", "json", "parquet", "arrow"}));
  query->add_option(
      "-o,--output", options->output,
      "Write the result to this file (out.parquet is Parquet, out.json JSON lines, out.arrow "
      "an Arrow IPC file); it "
      "appears only when the "
      "query succeeds (written under a temporary name, then renamed)");
  query
      ->add_option("--workers", options->workers,
                   "Run aggregates across this many worker processes; 0 (the default) runs "
                   "the query in this process")
      ->check(CLI::Range(0, 256));
  query
      ->add_option("--executor", options->executor,
                   "Where a distributed query's tasks run: local (worker processes here) or ray "
                   "(Ray tasks on the cluster at RAY_ADDRESS; --workers defaults to its CPUs)")
      ->check(CLI::IsMember({"local", "ray"}))
      ->capture_default_str();
  query
      ->add_option("--broadcast-limit", options->broadcast_limit,
                   "With --workers: a join's build side whose tables weigh more bytes than this "
                   "(or more than the probe side) is hash-partitioned with the probe side "
                   "instead of read whole by every task (default 256 MiB)")
      ->check(CLI::NonNegativeNumber);
  query->callback([&action, options] { action = [options] { return RunQueryCommand(*options); }; });
}

}  // namespace sluice::cli
