#include "catalog/database.h"

#include "catalog/database_internal.h"
#include "common/status.h"

namespace sluice::catalog {

namespace {

// postgresql://user:secret@host/db -> postgresql://user:***@host/db
std::string MaskPassword(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t at = url.find('@');
  if (scheme == std::string::npos || at == std::string::npos) return url;
  const size_t colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

}  // namespace

arrow::Result<std::unique_ptr<Database>> Database::Open(const std::string& url) {
  const std::string shown = MaskPassword(url);
  if (url.rfind("sqlite://", 0) == 0) {
    const std::string path = url.substr(9);
    if (path.empty() || path.front() != '/') {
      return arrow::Status::Invalid("database URL '", shown,
                                    "' is malformed: expected sqlite:///absolute/path.db");
    }
    return internal::OpenSqlite(path, shown);
  }
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) {
    return internal::OpenPostgres(url, shown);
  }
  return arrow::Status::Invalid("database URL '", shown,
                                "' has an unsupported scheme; use sqlite:///path or "
                                "postgresql://...");
}

namespace {

const char* KindOf(const Row& row, size_t i) {
  if (i >= row.size()) return "missing";
  switch (row[i].index()) {
    case 0:
      return "NULL";
    case 1:
      return "an integer";
    case 2:
      return "text";
    default:
      return "bytes";
  }
}

// The registry's own schema decides the types, but its file can be edited by anyone: a value of
// the wrong type is the data's fault, not ours.
arrow::Status WrongType(const Row& row, size_t i, const char* expected) {
  return arrow::Status::Invalid("registry column ", i + 1, " holds ", KindOf(row, i), ", expected ",
                                expected, " (was the registry database changed outside sluice?)");
}

}  // namespace

arrow::Result<std::string> TextAt(const Row& row, size_t i) {
  if (i >= row.size() || !std::holds_alternative<std::string>(row[i])) {
    return WrongType(row, i, "text");
  }
  return std::get<std::string>(row[i]);
}

arrow::Result<int64_t> IntAt(const Row& row, size_t i) {
  if (i >= row.size() || !std::holds_alternative<int64_t>(row[i])) {
    return WrongType(row, i, "an integer");
  }
  return std::get<int64_t>(row[i]);
}

arrow::Result<std::optional<int64_t>> OptionalIntAt(const Row& row, size_t i) {
  if (i < row.size() && std::holds_alternative<std::monostate>(row[i])) return std::nullopt;
  ARROW_ASSIGN_OR_RAISE(int64_t v, IntAt(row, i));
  return v;
}

arrow::Result<std::vector<uint8_t>> BytesAt(const Row& row, size_t i) {
  if (i >= row.size() || !std::holds_alternative<Blob>(row[i])) return WrongType(row, i, "bytes");
  return std::get<Blob>(row[i]).bytes;
}

}  // namespace sluice::catalog
