// A small SQL connection interface with two backends: SQLite (the embedded default) and
// PostgreSQL (libpq). The registry speaks plain SQL through it, with '?' placeholders that the
// PostgreSQL backend rewrites to $1, $2, ...
//
// Not thread-safe: one connection belongs to one thread at a time.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sluice::catalog {

struct Blob {
  std::vector<uint8_t> bytes;
  bool operator==(const Blob&) const = default;
};

/// NULL, an integer, text, or bytes.
using Value = std::variant<std::monostate, int64_t, std::string, Blob>;
using Row = std::vector<Value>;

class Database {
 public:
  /// Opens sqlite://PATH (creating the file and its directory) or postgresql://... .
  /// Errors name the URL with any password masked.
  static arrow::Result<std::unique_ptr<Database>> Open(const std::string& url);
  virtual ~Database() = default;

  virtual arrow::Status Exec(std::string_view sql, const std::vector<Value>& params = {}) = 0;
  virtual arrow::Result<std::vector<Row>> Query(std::string_view sql,
                                                const std::vector<Value>& params = {}) = 0;
  /// Runs several statements without parameters (a migration).
  virtual arrow::Status ExecScript(std::string_view sql) = 0;

  arrow::Status Begin() { return ExecScript("BEGIN"); }
  arrow::Status Commit() { return ExecScript("COMMIT"); }
  arrow::Status Rollback() { return ExecScript("ROLLBACK"); }

  /// "sqlite" or "postgresql".
  virtual std::string_view dialect() const = 0;
  const std::string& display_url() const { return display_url_; }

 protected:
  explicit Database(std::string display_url) : display_url_(std::move(display_url)) {}

 private:
  std::string display_url_;
};

/// Reads column `i` of a row as text / integer / bytes. A NULL or another type is an Invalid
/// error naming the column: the registry's schema decides the types, but its file may have been
/// edited by hand. Callers add which row they were reading.
arrow::Result<std::string> TextAt(const Row& row, size_t i);
arrow::Result<int64_t> IntAt(const Row& row, size_t i);
/// An integer or NULL.
arrow::Result<std::optional<int64_t>> OptionalIntAt(const Row& row, size_t i);
arrow::Result<std::vector<uint8_t>> BytesAt(const Row& row, size_t i);

}  // namespace sluice::catalog
