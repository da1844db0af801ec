#include <cstdlib>

#include "catalog/database_internal.h"
#include "catalog/libpq_library.h"

namespace sluice::catalog::internal {

namespace {

// '?' placeholders to $1, $2, ... outside quoted strings.
std::string NumberPlaceholders(std::string_view sql) {
  std::string out;
  int n = 0;
  bool quoted = false;
  for (char c : sql) {
    if (c == '\'') quoted = !quoted;
    if (c == '?' && !quoted) {
      out += "$" + std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 0;
}

class PostgresDatabase : public Database {
 public:
  PostgresDatabase(const LibPq* pq, PGconn* conn, std::string display_url)
      : Database(std::move(display_url)), pq_(pq), conn_(conn) {}
  ~PostgresDatabase() override { pq_->finish(conn_); }

  std::string_view dialect() const override { return "postgresql"; }

  arrow::Status ExecScript(std::string_view sql) override {
    PGresult* res = pq_->exec(conn_, std::string(sql).c_str());
    std::unique_ptr<PGresult, decltype(&PQclear)> guard(res, pq_->clear);
    const auto status = pq_->result_status(res);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      return Error(pq_->result_error_message(res));
    }
    return arrow::Status::OK();
  }

  arrow::Status Exec(std::string_view sql, const std::vector<Value>& params) override {
    return Query(sql, params).status();
  }

  arrow::Result<std::vector<Row>> Query(std::string_view sql,
                                        const std::vector<Value>& params) override {
    const std::string text = NumberPlaceholders(sql);
    std::vector<std::string> storage(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    std::vector<int> lengths(params.size(), 0), formats(params.size(), 0);
    for (size_t i = 0; i < params.size(); ++i) {
      if (auto* v = std::get_if<int64_t>(&params[i])) {
        storage[i] = std::to_string(*v);
      } else if (auto* s = std::get_if<std::string>(&params[i])) {
        storage[i] = *s;
      } else if (auto* b = std::get_if<Blob>(&params[i])) {
        storage[i].assign(b->bytes.begin(), b->bytes.end());
        formats[i] = 1;  // binary
      } else {
        continue;  // NULL
      }
      values[i] = storage[i].data();
      lengths[i] = static_cast<int>(storage[i].size());
    }
    PGresult* res = pq_->exec_params(conn_, text.c_str(), static_cast<int>(params.size()), nullptr,
                                     values.data(), lengths.data(), formats.data(), /*text*/ 0);
    std::unique_ptr<PGresult, decltype(&PQclear)> guard(res, pq_->clear);
    const auto status = pq_->result_status(res);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      return Error(pq_->result_error_message(res));
    }
    std::vector<Row> rows;
    for (int r = 0; r < pq_->ntuples(res); ++r) {
      Row row;
      for (int c = 0; c < pq_->nfields(res); ++c) {
        if (pq_->getisnull(res, r, c)) {
          row.emplace_back(std::monostate{});
          continue;
        }
        const char* v = pq_->getvalue(res, r, c);
        const Oid type = pq_->ftype(res, c);
        if (type == 20 || type == 21 || type == 23) {  // int8, int2, int4
          row.emplace_back(static_cast<int64_t>(std::strtoll(v, nullptr, 10)));
        } else if (type == 17) {  // bytea, text form "\x0a1b..."
          std::vector<uint8_t> bytes;
          const size_t len = static_cast<size_t>(pq_->getlength(res, r, c));
          for (size_t i = 2; i + 1 < len; i += 2) {
            bytes.push_back(static_cast<uint8_t>(HexValue(v[i]) * 16 + HexValue(v[i + 1])));
          }
          row.emplace_back(Blob{std::move(bytes)});
        } else {
          row.emplace_back(std::string(v, static_cast<size_t>(pq_->getlength(res, r, c))));
        }
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

 private:
  arrow::Status Error(const char* message) const {
    std::string text = message != nullptr ? message : "unknown error";
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return arrow::Status::IOError("registry ", display_url(), ": ", text);
  }
  const LibPq* pq_;
  PGconn* conn_;
};

}  // namespace

arrow::Result<std::unique_ptr<Database>> OpenPostgres(const std::string& conninfo,
                                                      const std::string& display_url) {
  auto pq = LoadLibPq();
  if (!pq.ok()) {
    return arrow::Status::IOError("registry ", display_url, ": ", pq.status().message());
  }
  PGconn* conn = (*pq)->connectdb(conninfo.c_str());
  if (conn == nullptr || (*pq)->status(conn) != CONNECTION_OK) {
    std::string message = conn != nullptr ? (*pq)->error_message(conn) : "out of memory";
    while (!message.empty() && message.back() == '\n') message.pop_back();
    (*pq)->finish(conn);
    return arrow::Status::IOError("registry ", display_url, ": cannot connect: ", message);
  }
  // Quiet NOTICEs (e.g. "relation already exists, skipping") so they never reach stdout.
  (*pq)->set_notice_processor(
      conn, [](void*, const char*) {}, nullptr);
  return std::make_unique<PostgresDatabase>(*pq, conn, display_url);
}

}  // namespace sluice::catalog::internal
