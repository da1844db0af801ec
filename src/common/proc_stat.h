// Reading a process's line in /proc/<pid>/stat, the one place that knows its layout.
//
// The command name (field 2) may hold spaces and parentheses, so fields are counted from the
// last ')'. Used to tell a dead driver from a live one (its start time tells a reused pid apart),
// to find a worker's process group, and by tests that wait for a process to die.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>

namespace sluice {

struct ProcStat {
  char state = '?';  // 'R', 'S', 'Z' (a zombie: finished, not reaped), ...
  pid_t ppid = 0;
  pid_t pgrp = 0;
  /// Field 22: when the process started, in clock ticks since boot.
  uint64_t start_ticks = 0;
};

/// The stat line of `pid`, or nullopt when there is no such process.
std::optional<ProcStat> ReadProcStat(pid_t pid);

/// True once `pid` is gone or a zombie (finished, not yet reaped), polling up to `timeout`.
bool WaitUntilGone(pid_t pid, std::chrono::milliseconds timeout);

}  // namespace sluice
