// Test support: a real S3 HTTP endpoint (moto server) on a free loopback port, started and stopped
// by the test. Tests use it instead of a mock so that Arrow's S3 filesystem speaks real HTTP.
#pragma once

#include <arrow/result.h>
#include <sys/types.h>

#include <memory>
#include <string>

namespace sluice::storage::testing {

class MotoServer {
 public:
  /// Starts `moto_server` from the project's .venv and waits until it accepts connections.
  /// Also sets dummy AWS credentials and disables the EC2 metadata lookup, so nothing leaves
  /// the machine.
  static arrow::Result<std::unique_ptr<MotoServer>> Start();
  ~MotoServer();

  /// host:port of the endpoint.
  const std::string& endpoint() const { return endpoint_; }
  /// A store URL for `bucket`/`prefix` on this server.
  std::string StoreUrl(const std::string& bucket, const std::string& prefix) const;
  /// Creates a bucket.
  arrow::Status CreateBucket(const std::string& bucket) const;

 private:
  MotoServer(pid_t pid, std::string endpoint) : pid_(pid), endpoint_(std::move(endpoint)) {}
  pid_t pid_;
  std::string endpoint_;
};

}  // namespace sluice::storage::testing
