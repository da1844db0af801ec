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

arrow::Result<std::string> TextAt(const Row& row, size_t i) {
  SLUICE_INTERNAL_CHECK(i < row.size() && std::holds_alternative<std::string>(row[i]));
  return std::get<std::string>(row[i]);
}

arrow::Result<int64_t> IntAt(const Row& row, size_t i) {
  SLUICE_INTERNAL_CHECK(i < row.size() && std::holds_alternative<int64_t>(row[i]));
  return std::get<int64_t>(row[i]);
}

arrow::Result<std::vector<uint8_t>> BytesAt(const Row& row, size_t i) {
  SLUICE_INTERNAL_CHECK(i < row.size() && std::holds_alternative<Blob>(row[i]));
  return std::get<Blob>(row[i]).bytes;
}

}  // namespace sluice::catalog
