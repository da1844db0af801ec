#include "common/proc_stat.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

namespace sluice {

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  // open/read rather than streams: worker supervision calls this in a polling loop.
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  const char* close_paren = std::strrchr(buf, ')');
  if (close_paren == nullptr) return std::nullopt;
  ProcStat stat;
  int ppid = 0, pgrp = 0;
  unsigned long long start = 0;
  // Fields 3 (state), 4 (ppid), 5 (pgrp), then 6..21 skipped, 22 (starttime).
  if (std::sscanf(close_paren + 1,
                  " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                  &stat.state, &ppid, &pgrp, &start) != 4) {
    return std::nullopt;
  }
  stat.ppid = ppid;
  stat.pgrp = pgrp;
  stat.start_ticks = start;
  return stat;
}

bool WaitUntilGone(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto stat = ReadProcStat(pid);
    if (!stat.has_value() || stat->state == 'Z') return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace sluice
