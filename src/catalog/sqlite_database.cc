#include <sqlite3.h>

#include <filesystem>

#include "catalog/database_internal.h"

namespace sluice::catalog::internal {

namespace {

class SqliteDatabase : public Database {
 public:
  SqliteDatabase(sqlite3* db, std::string display_url)
      : Database(std::move(display_url)), db_(db) {}
  ~SqliteDatabase() override { sqlite3_close_v2(db_); }

  std::string_view dialect() const override { return "sqlite"; }

  arrow::Status ExecScript(std::string_view sql) override {
    char* err = nullptr;
    const std::string text(sql);
    if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      arrow::Status st = Error(err != nullptr ? err : sqlite3_errmsg(db_));
      sqlite3_free(err);
      return st;
    }
    return arrow::Status::OK();
  }

  arrow::Status Exec(std::string_view sql, const std::vector<Value>& params) override {
    return Query(sql, params).status();
  }

  arrow::Result<std::vector<Row>> Query(std::string_view sql,
                                        const std::vector<Value>& params) override {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
        SQLITE_OK) {
      return Error(sqlite3_errmsg(db_));
    }
    std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> guard(stmt, &sqlite3_finalize);
    for (size_t i = 0; i < params.size(); ++i) {
      const int index = static_cast<int>(i) + 1;
      int rc = SQLITE_OK;
      if (std::holds_alternative<std::monostate>(params[i])) {
        rc = sqlite3_bind_null(stmt, index);
      } else if (auto* v = std::get_if<int64_t>(&params[i])) {
        rc = sqlite3_bind_int64(stmt, index, *v);
      } else if (auto* s = std::get_if<std::string>(&params[i])) {
        rc = sqlite3_bind_text(stmt, index, s->data(), static_cast<int>(s->size()),
                               SQLITE_TRANSIENT);
      } else {
        const auto& b = std::get<Blob>(params[i]).bytes;
        rc = sqlite3_bind_blob(stmt, index, b.data(), static_cast<int>(b.size()), SQLITE_TRANSIENT);
      }
      if (rc != SQLITE_OK) return Error(sqlite3_errmsg(db_));
    }
    std::vector<Row> rows;
    while (true) {
      const int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return Error(sqlite3_errmsg(db_));
      Row row;
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_NULL:
            row.emplace_back(std::monostate{});
            break;
          case SQLITE_INTEGER:
            row.emplace_back(static_cast<int64_t>(sqlite3_column_int64(stmt, c)));
            break;
          case SQLITE_BLOB: {
            const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(stmt, c));
            row.emplace_back(Blob{std::vector<uint8_t>(p, p + sqlite3_column_bytes(stmt, c))});
            break;
          }
          default: {
            const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
            row.emplace_back(std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt, c))));
          }
        }
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

 private:
  arrow::Status Error(const char* message) const {
    return arrow::Status::IOError("registry ", display_url(), ": ", message);
  }
  sqlite3* db_;
};

}  // namespace

arrow::Result<std::unique_ptr<Database>> OpenSqlite(const std::string& path,
                                                    const std::string& display_url) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) {
    return arrow::Status::IOError("registry ", display_url,
                                  ": cannot create its directory: ", ec.message());
  }
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return arrow::Status::IOError("registry ", display_url, ": cannot open: ", message);
  }
  auto database = std::make_unique<SqliteDatabase>(db, display_url);
  // Concurrent writers (workers recording runs) wait instead of failing at once; WAL lets
  // readers proceed while one writes.
  sqlite3_busy_timeout(db, 30000);
  ARROW_RETURN_NOT_OK(database->ExecScript("PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;"));
  return database;
}

}  // namespace sluice::catalog::internal
