#include "catalog/postgres_server_testing.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "common/loopback_port.h"
#include "common/subprocess.h"

namespace sluice::catalog::testing {

namespace {

namespace fs = std::filesystem;

arrow::Result<std::string> FindBinDir() {
  std::vector<std::string> dirs;
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    if (fs::exists(e.path() / "bin" / "initdb")) dirs.push_back((e.path() / "bin").string());
  }
  if (dirs.empty()) {
    return arrow::Status::IOError(
        "no /usr/lib/postgresql/*/bin/initdb: install postgresql "
        "(scripts/bootstrap does)");
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs.back();
}

// runuser lives in /usr/sbin, which a non-login root shell (or `env -i`) may not have on PATH.
std::string Runuser() {
  for (const char* path : {"/usr/sbin/runuser", "/sbin/runuser"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "runuser";
}

}  // namespace

arrow::Result<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  std::unique_ptr<PostgresServer> server(new PostgresServer());
  ARROW_ASSIGN_OR_RAISE(server->bin_dir_, FindBinDir());
  ARROW_ASSIGN_OR_RAISE(server->port_, FreeLoopbackPort());
  char pattern[] = "/tmp/sluice-pg-XXXXXX";
  if (mkdtemp(pattern) == nullptr) return arrow::Status::IOError("mkdtemp failed");
  server->dir_ = pattern;
  server->as_postgres_user_ = geteuid() == 0;
  if (server->as_postgres_user_) {
    const passwd* pw = getpwnam("postgres");
    if (pw == nullptr) return arrow::Status::IOError("running as root but no 'postgres' user");
    if (chown(server->dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      return arrow::Status::IOError("cannot chown ", server->dir_, " to postgres");
    }
  }
  auto run = [&](std::vector<std::string> argv) -> arrow::Status {
    if (server->as_postgres_user_) argv.insert(argv.begin(), {Runuser(), "-u", "postgres", "--"});
    ProcessOptions quiet;
    quiet.stdout_to_stderr = true;
    ARROW_ASSIGN_OR_RAISE(int rc, RunProcess(argv, quiet));
    if (rc != 0) return arrow::Status::IOError(argv.front(), " ... exited ", rc);
    return arrow::Status::OK();
  };
  const std::string data = server->dir_ + "/data";
  ARROW_RETURN_NOT_OK(run({server->bin_dir_ + "/initdb", "-D", data, "-U", "postgres",
                           "--auth=trust", "--no-sync", "-E", "UTF8", "--no-instructions"}));
  ARROW_RETURN_NOT_OK(run({server->bin_dir_ + "/pg_ctl", "-D", data, "-l",
                           server->dir_ + "/server.log", "-w", "-t", "60", "-o",
                           "-p " + std::to_string(server->port_) + " -k " + server->dir_ +
                               " -c listen_addresses=127.0.0.1 -c fsync=off",
                           "start"}));
  server->running_ = true;
  return server;
}

PostgresServer::~PostgresServer() {
  if (running_) {
    std::vector<std::string> argv = {bin_dir_ + "/pg_ctl", "-D", dir_ + "/data", "-m",
                                     "immediate",          "-w", "stop"};
    if (as_postgres_user_) argv.insert(argv.begin(), {Runuser(), "-u", "postgres", "--"});
    ProcessOptions quiet;
    quiet.stdout_to_stderr = true;
    (void)RunProcess(argv, quiet);
  }
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

std::string PostgresServer::Url(const std::string& database) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

arrow::Result<std::string> PostgresServer::CreateDatabase(const std::string& name) const {
  std::vector<std::string> argv = {bin_dir_ + "/createdb", "-h", "127.0.0.1", "-p",
                                   std::to_string(port_),  "-U", "postgres",  name};
  ProcessOptions quiet;
  quiet.stdout_to_stderr = true;
  ARROW_ASSIGN_OR_RAISE(int rc, RunProcess(argv, quiet));
  if (rc != 0) return arrow::Status::IOError("createdb ", name, " exited ", rc);
  return Url(name);
}

}  // namespace sluice::catalog::testing
