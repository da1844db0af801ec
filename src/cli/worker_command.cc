// `sluice worker` (internal): reads one encoded plan fragment from stdin, runs it, and prints
// its report as the last line of stdout. With --report-fd it is a long-lived worker instead: it
// reads framed fragments (dist::Frame: 8-byte little-endian length, then the bytes) from stdin
// until EOF or a zero length, and frames one report per fragment on that descriptor; tasks get
// /dev/null as stdin. With --progress-fd it writes one line per step on that
// descriptor ("running stage 'x' on object 'k'"), which the driver keeps so that it can say what
// a killed worker was doing. With --parent-pid it dies with that process (see TieToParent); the
// paths given with --hide (the signing keys, a SQLite registry) are hidden from it. With
// --memory-pool it allocates from that Arrow pool (dist/worker_memory.h); with --cpu-threads
// Arrow's CPU pool has that many threads (a query's workers share the machine's cores).
#include <arrow/memory_pool.h>
#include <arrow/util/thread_pool.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "dist/worker_memory.h"
#include "dist/worker_process.h"
#include "dist/worker_sandbox.h"
#include "exec/fragment_runner.h"
#include "plan/compute_init.h"
#include "plan/plan_codec.h"

namespace sluice::cli {

namespace {

struct WorkerOptions {
  int parent_pid = 0;
  int progress_fd = -1;
  int report_fd = -1;
  std::vector<std::string> hide;
  std::string memory_pool;
  int cpu_threads = 0;
};

// Kills this worker's whole process group: the worker and whatever a transform started.
void KillGroup(int) { kill(0, SIGKILL); }

// The driver starts each worker in its own process group. When the driver dies, even by
// SIGKILL, the kernel sends this worker SIGTERM (PR_SET_PDEATHSIG), whose handler kills the
// group, so neither the worker nor a transform's children outlive the run. A driver that died
// before prctl took effect is caught by comparing getppid() with the pid it passed us.
arrow::Status TieToParent(pid_t parent) {
  if (getpgrp() == getpid()) {
    struct sigaction action {};
    action.sa_handler = KillGroup;
    sigaction(SIGTERM, &action, nullptr);
  }
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
    return arrow::Status::IOError("worker: prctl(PR_SET_PDEATHSIG) failed");
  }
  if (getppid() != parent) raise(SIGTERM);
  return arrow::Status::OK();
}

// Runs one encoded fragment; every failure is in the report.
exec::TaskReport RunTask(const std::vector<uint8_t>& bytes, const exec::ProgressFn& progress) {
  exec::TaskReport report;
  auto fragment = plan::DecodeFragment(bytes.data(), bytes.size());
  if (!fragment.ok()) {
    report.task = "unknown";
    report.status = "error";
    report.error = "worker: " + fragment.status().ToString();
  } else {
    arrow::Status init = plan::EnsureComputeInitialized();
    if (!init.ok()) {
      report.task = fragment->task_name();
      report.status = "error";
      report.error = init.ToString();
    } else {
      // A job's task and a SQL query's stage task are both plans of the one plan type.
      report = exec::RunFragment(*fragment, progress);
    }
  }
  report.worker_pid = getpid();
  return report;
}

// The long-lived loop: one framed fragment in, one framed report out, until EOF.
arrow::Status ServeTasks(int report_fd, const exec::ProgressFn& progress) {
  // The requests and the reports stay the worker's own: a transform (or a child it starts)
  // reads /dev/null on stdin and cannot reach either descriptor by exec.
  const int requests = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 10);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (requests < 0 || null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0) {
    return arrow::Status::IOError("worker: cannot set up its request descriptor");
  }
  close(null_fd);
  const int reports = fcntl(report_fd, F_DUPFD_CLOEXEC, 10);
  if (reports < 0) return arrow::Status::IOError("worker: bad --report-fd");
  close(report_fd);
  while (true) {
    uint8_t header[8];
    if (!dist::ReadFully(requests, header, sizeof(header)))
      return arrow::Status::OK();  // EOF: done
    const uint64_t size = dist::FrameLength(header);
    if (size == 0) return arrow::Status::OK();
    if (size > dist::kMaxFrameBytes) {
      return arrow::Status::IOError("worker: a request of ", size, " bytes is not a plan");
    }
    std::vector<uint8_t> bytes(size);
    if (!dist::ReadFully(requests, bytes.data(), bytes.size())) {
      return arrow::Status::IOError("worker: the request ended early");
    }
    const std::string line = RunTask(bytes, progress).ToJsonLine();
    // Whatever the task left behind in this process is not the next task's: its children are
    // reaped (the driver kills them), and memory it freed goes back to the system.
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    arrow::default_memory_pool()->ReleaseUnused();
    std::fflush(stdout);
    if (!dist::WriteFully(reports, dist::Frame(line.data(), line.size()))) {
      return arrow::Status::IOError("worker: cannot write its report");
    }
  }
}

arrow::Status RunWorker(const WorkerOptions& options) {
  // Before anything allocates: Arrow fixes its default pool at the first allocation.
  dist::UseWorkerMemoryPool(options.memory_pool);
  if (options.parent_pid > 0) ARROW_RETURN_NOT_OK(TieToParent(options.parent_pid));
  // Before any thread starts (a user namespace needs a single-threaded process). Where the
  // kernel refuses namespaces (some containers) the task still runs, without this layer.
  (void)dist::HidePaths(options.hide);
  // A crashing transform must not leave core files behind (the worker runs in "/").
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  // After the namespace: sizing Arrow's CPU pool may start its threads.
  if (options.cpu_threads > 0) {
    ARROW_RETURN_NOT_OK(arrow::SetCpuThreadPoolCapacity(options.cpu_threads));
  }
  exec::ProgressFn progress;
  if (options.progress_fd >= 0) {
    // A transform's children must not inherit it (they could write lines the driver would
    // quote, or hold the pipe open).
    (void)fcntl(options.progress_fd, F_SETFD, FD_CLOEXEC);
    progress = [fd = options.progress_fd](const std::string& doing) {
      const std::string line = doing + "\n";
      // One write of a short line is atomic on a pipe; a driver that is gone is not our problem.
      (void)!write(fd, line.data(), line.size());
    };
  }
  if (options.report_fd >= 0) return ServeTasks(options.report_fd, progress);
  std::vector<uint8_t> bytes;
  uint8_t buf[65536];
  while (true) {
    const ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return arrow::Status::IOError("worker: cannot read the plan from stdin");
    if (n == 0) break;
    bytes.insert(bytes.end(), buf, buf + n);
  }
  exec::TaskReport report = RunTask(bytes, progress);
  // Whatever a transform printed comes first; the report is the last line.
  std::fflush(stdout);
  const std::string line = "\n" + report.ToJsonLine() + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
  return arrow::Status::OK();
}

}  // namespace

void AddWorkerCommand(CLI::App& app, Action& action) {
  auto* worker = app.add_subcommand("worker", "Internal: run one plan fragment read from stdin");
  worker->group("");  // hidden from --help
  auto options = std::make_shared<WorkerOptions>();
  worker->add_option("--parent-pid", options->parent_pid, "Die with this process");
  worker->add_option("--progress-fd", options->progress_fd, "Write progress lines here");
  worker->add_option("--report-fd", options->report_fd,
                     "Serve framed fragments from stdin; frame reports here");
  worker->add_option("--hide", options->hide, "Paths that transforms must not see");
  worker->add_option(
      "--memory-pool", options->memory_pool,
      "Allocate from this Arrow memory pool unless ARROW_DEFAULT_MEMORY_POOL is set");
  worker
      ->add_option("--cpu-threads", options->cpu_threads,
                   "Threads in Arrow's CPU pool (default: one per core)")
      ->check(CLI::Range(1, 1024));
  worker->callback([&action, options] { action = [options] { return RunWorker(*options); }; });
}

}  // namespace sluice::cli
