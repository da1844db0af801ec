// Test support: a real PostgreSQL server in a temp directory on a free loopback port, started
// with Debian's initdb and pg_ctl and stopped afterwards. initdb refuses to run as root, and CI
// runs as root, so as root the server runs as the `postgres` user (runuser) in a directory that
// user owns.
#pragma once

#include <arrow/result.h>

#include <memory>
#include <string>

namespace sluice::catalog::testing {

class PostgresServer {
 public:
  static arrow::Result<std::unique_ptr<PostgresServer>> Start();
  ~PostgresServer();

  /// postgresql://postgres@127.0.0.1:PORT/DBNAME
  std::string Url(const std::string& database = "postgres") const;
  /// Creates an empty database and returns its URL.
  arrow::Result<std::string> CreateDatabase(const std::string& name) const;

 private:
  PostgresServer() = default;
  std::string bin_dir_;
  std::string dir_;
  int port_ = 0;
  bool as_postgres_user_ = false;
  bool running_ = false;
};

}  // namespace sluice::catalog::testing
