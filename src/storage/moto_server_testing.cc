#include "storage/moto_server_testing.h"

#include "common/loopback_port.h"

#include <arpa/inet.h>
#include <arrow/filesystem/s3fs.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#ifndef SLUICE_VENV_BIN
#error "SLUICE_VENV_BIN must name the .venv/bin folder"
#endif

extern char** environ;

namespace sluice::storage::testing {

namespace {

bool Accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

arrow::Result<std::unique_ptr<MotoServer>> MotoServer::Start() {
  setenv("AWS_ACCESS_KEY_ID", "testing", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "testing", 1);
  setenv("AWS_DEFAULT_REGION", "us-east-1", 1);
  setenv("AWS_EC2_METADATA_DISABLED", "true", 1);

  ARROW_ASSIGN_OR_RAISE(int port, FreeLoopbackPort());
  const std::string binary = std::string(SLUICE_VENV_BIN) + "/moto_server";
  const std::string port_text = std::to_string(port);
  const char* argv[] = {binary.c_str(), "-H", "127.0.0.1", "-p", port_text.c_str(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // moto logs every request; keep test output readable.
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc =
      posix_spawn(&pid, binary.c_str(), &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return arrow::Status::IOError("cannot start ", binary, ": ", strerror(rc),
                                  " (run scripts/bootstrap)");
  }
  std::unique_ptr<MotoServer> server(new MotoServer(pid, "127.0.0.1:" + port_text));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!Accepts(port)) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      server->pid_ = 0;
      return arrow::Status::IOError(binary, " exited before accepting connections");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return arrow::Status::IOError(binary, " did not accept connections within 60s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return server;
}

MotoServer::~MotoServer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

std::string MotoServer::StoreUrl(const std::string& bucket, const std::string& prefix) const {
  return "s3://" + bucket + "/" + prefix + "?endpoint_override=" + endpoint_ +
         "&scheme=http&region=us-east-1";
}

arrow::Status MotoServer::CreateBucket(const std::string& bucket) const {
  ARROW_RETURN_NOT_OK(arrow::fs::EnsureS3Initialized());
  std::string path;
  ARROW_ASSIGN_OR_RAISE(auto fs, arrow::fs::FileSystemFromUri(
                                     "s3://" + bucket + "?endpoint_override=" + endpoint_ +
                                         "&scheme=http&region=us-east-1&allow_bucket_creation=true",
                                     &path));
  return fs->CreateDir(bucket);
}

}  // namespace sluice::storage::testing
