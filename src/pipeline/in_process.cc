#include "pipeline/in_process.h"

#include <arrow/memory_pool.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "common/status.h"
#include "exec/fragment_runner.h"
#include "plan/compute_init.h"
#include "plan/plan_codec.h"

namespace sluice::pipeline {

namespace {

// Points standard input and output at /dev/null while it lives, as a worker's are, and puts
// them back afterwards. Whatever a transform printed is flushed into /dev/null first.
class QuietStdio {
 public:
  QuietStdio() {
    Flush();
    const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) return;  // then the task runs with the driver's own: only output mixes
    // Above the standard descriptors, so that restoring one never closes another.
    null_ = fcntl(null_fd, F_DUPFD_CLOEXEC, 10);
    close(null_fd);
    if (null_ < 0) return;
    for (Saved& s : saved_) {
      s.copy = fcntl(s.fd, F_DUPFD_CLOEXEC, 10);  // -1: it was closed, and is closed again after
      s.replaced = dup2(null_, s.fd) >= 0;
    }
  }
  ~QuietStdio() {
    Flush();
    for (Saved& s : saved_) {
      if (!s.replaced) continue;
      if (s.copy >= 0) {
        (void)dup2(s.copy, s.fd);
        close(s.copy);
      } else {
        close(s.fd);
      }
    }
    if (null_ >= 0) close(null_);
  }
  QuietStdio(const QuietStdio&) = delete;
  QuietStdio& operator=(const QuietStdio&) = delete;

 private:
  struct Saved {
    int fd;
    int copy = -1;
    bool replaced = false;
  };
  static void Flush() {
    std::cout.flush();
    std::fflush(stdout);
  }
  int null_ = -1;
  Saved saved_[2] = {{STDIN_FILENO}, {STDOUT_FILENO}};
};

}  // namespace

arrow::Result<std::vector<exec::TaskReport>> RunStageInProcess(
    std::vector<plan::Fragment> fragments,
    const std::function<void(const exec::TaskReport&)>& on_report) {
  ARROW_RETURN_NOT_OK(plan::EnsureComputeInitialized());
  std::vector<exec::TaskReport> reports;
  reports.reserve(fragments.size());
  for (plan::Fragment& fragment : fragments) {
    // No retries here: the first attempt is the only one.
    fragment.attempt = 1;
    // The bytes a worker would receive, decoded with the worker's checks; they also carry this
    // process's parity values, which the runner checks as a worker does.
    const std::string context = "task " + fragment.task_name() + ": its plan";
    auto bytes = plan::EncodeFragment(fragment);
    SLUICE_RETURN_NOT_OK_CTX(bytes.status(), context);
    auto decoded = plan::DecodeFragment(bytes->data(), bytes->size());
    SLUICE_RETURN_NOT_OK_CTX(decoded.status(), context);
    exec::TaskReport report;
    {
      QuietStdio quiet;
      report = exec::RunFragment(*decoded);
    }
    // What the task freed goes back to the system before the next one, as in a worker.
    arrow::default_memory_pool()->ReleaseUnused();
    // A user or data error: the stage stops here, with the task's own message.
    if (report.status != "ok") return arrow::Status::Invalid(report.error);
    if (on_report) on_report(report);
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace sluice::pipeline
