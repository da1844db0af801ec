#include "catalog/run_lease.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace sluice::catalog {

namespace {

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace

std::string ProcessStart(int64_t pid) {
  if (pid <= 0) return "";
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return "";
  // The command name (field 2) may hold spaces and parentheses; fields resume after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  // Field 3 is the state; the start time is field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return "";
    if (i == 3 && field == "Z") return "";  // a zombie has finished
  }
  return BootId() + ":" + field;
}

DriverIdentity ThisDriver() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const int64_t pid = getpid();
  return {host, pid, ProcessStart(pid)};
}

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool IsAbandoned(const RunRecord& run, int64_t now) {
  if (run.status != "running") return false;
  if (run.attempt_id.empty()) return true;  // written before leases: nobody renews it
  if (!run.driver_host.empty() && run.driver_host == ThisDriver().host) {
    // On this host the process table is the truth, whatever the heartbeat says.
    return ProcessStart(run.driver_pid) != run.driver_start;
  }
  return now - run.heartbeat_at > kRunLeaseSeconds;
}

std::string EffectiveStatus(const RunRecord& run, int64_t now) {
  return IsAbandoned(run, now) ? "abandoned" : run.status;
}

}  // namespace sluice::catalog
