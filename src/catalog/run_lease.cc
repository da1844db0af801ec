#include "catalog/run_lease.h"

#include <unistd.h>

#include <chrono>
#include <fstream>

#include "common/proc_stat.h"

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
  auto stat = ReadProcStat(static_cast<pid_t>(pid));
  if (!stat.has_value() || stat->state == 'Z') return "";  // gone, or finished (a zombie)
  return BootId() + ":" + std::to_string(stat->start_ticks);
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
