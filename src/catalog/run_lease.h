// A driver's lease on a run. The driver that claims a run records who it is (host, pid and the
// process's start, which tells a reused pid apart) and renews a heartbeat while it works. A
// run whose status says "running" but whose driver is gone is *abandoned*: its output was never
// committed, and submitting the same run id again takes it over cleanly.
//
// A driver on this host is known to be gone at once (its pid no longer runs the process that
// claimed the run); one on another host once its heartbeat is older than kRunLeaseSeconds.
#pragma once

#include <cstdint>
#include <string>

#include "catalog/registry.h"

namespace sluice::catalog {

/// How often a driver renews its lease, and how old a lease may get before the run counts as
/// abandoned. The ratio leaves room for a slow registry.
inline constexpr int64_t kHeartbeatSeconds = 5;
inline constexpr int64_t kRunLeaseSeconds = 60;

struct DriverIdentity {
  std::string host;
  int64_t pid = 0;
  /// "<boot id>:<start time in clock ticks>" of the process.
  std::string start;
};

/// This process, as a driver.
DriverIdentity ThisDriver();

/// The start identity of process `pid` on this host, or "" when it does not run.
std::string ProcessStart(int64_t pid);

/// Seconds since the epoch.
int64_t NowSeconds();

/// True when `run` says "running" but its driver is gone.
bool IsAbandoned(const RunRecord& run, int64_t now);

/// The status to show: "abandoned" for an abandoned run, else the recorded status.
std::string EffectiveStatus(const RunRecord& run, int64_t now);

}  // namespace sluice::catalog
