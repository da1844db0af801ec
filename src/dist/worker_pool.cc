#include "dist/worker_pool.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "dist/worker_process.h"
#include "plan/plan_codec.h"

namespace sluice::dist {

namespace {

// The last non-empty line of a worker's stdout.
std::string LastLine(const std::string& out) {
  size_t end = out.size();
  while (end > 0 && (out[end - 1] == '\n' || out[end - 1] == '\r')) --end;
  const size_t start = out.rfind('\n', end == 0 ? 0 : end - 1);
  return out.substr(start == std::string::npos ? 0 : start + 1,
                    end - (start == std::string::npos ? 0 : start + 1));
}

// " while running stage 'x' on object 'k'", from the worker's last progress line.
std::string WhileDoing(const ProcessResult& result) {
  if (result.last_progress.empty()) return " before it started its first step";
  return " while " + result.last_progress;
}

std::string Mib(int64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

exec::TaskReport LimitReport(const plan::Fragment& fragment, std::string error) {
  exec::TaskReport report;
  report.task = fragment.task_name();
  report.attempt = fragment.attempt;
  report.status = "error";
  report.error = std::move(error) + "; a task stopped at a limit is not retried";
  return report;
}

}  // namespace

std::string SelfExecutable() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "sluice";
}

int64_t TaskMemoryBytes(const PoolOptions& options) {
  if (options.task_memory_bytes > 0) return options.task_memory_bytes;
  const int64_t pages = sysconf(_SC_PHYS_PAGES);
  const int64_t page = sysconf(_SC_PAGESIZE);
  return pages * page / std::max(1, options.workers);
}

arrow::Result<exec::TaskReport> RunInWorker(const plan::Fragment& fragment,
                                            const PoolOptions& options,
                                            const std::atomic<bool>* cancel) {
  ARROW_ASSIGN_OR_RAISE(auto plan_bytes, plan::EncodeFragment(fragment));
  ProcessLimits limits;
  limits.timeout = std::chrono::seconds(options.task_timeout_seconds);
  limits.memory_bytes = TaskMemoryBytes(options);
  // The worker dies with this process: it checks that its parent is still the pid it was given.
  std::vector<std::string> argv = {options.worker_binary, "worker",
                                   "--parent-pid",        std::to_string(getpid()),
                                   "--progress-fd",       std::to_string(kProgressFd)};
  for (const std::string& path : options.hidden_paths) {
    argv.push_back("--hide");
    argv.push_back(path);
  }
  auto run = RunSupervised(argv, plan_bytes, limits, cancel);
  if (!run.ok()) {
    return arrow::Status::IOError("cannot start a worker for task ", fragment.task_name(), ": ",
                                  run.status().message());
  }
  const std::string task = fragment.task_name() + " attempt " + std::to_string(fragment.attempt);
  switch (run->end) {
    case ProcessResult::End::kTimedOut:
      return LimitReport(
          fragment,
          "task " + task + " was killed after " + std::to_string(options.task_timeout_seconds) +
              " s, its time limit (dataflow.limits.task_timeout_seconds)," + WhileDoing(*run));
    case ProcessResult::End::kOverMemory:
      return LimitReport(fragment, "task " + task + " was killed when it used " +
                                       Mib(run->peak_memory_bytes) + ", over its memory limit of " +
                                       Mib(limits.memory_bytes) +
                                       " (dataflow.limits.task_memory_mb)," + WhileDoing(*run));
    case ProcessResult::End::kCancelled:
      return arrow::Status::Cancelled("task ", task, " was cancelled");
    case ProcessResult::End::kSignaled:
      return arrow::Status::IOError("worker for task ", task, " was killed by signal ", run->signal,
                                    " (", strsignal(run->signal), ")", WhileDoing(*run));
    case ProcessResult::End::kExited:
      break;
  }
  auto report = exec::TaskReport::FromJsonLine(LastLine(run->stdout_text));
  if (!report.ok()) {
    return arrow::Status::IOError("worker for task ", task, " exited with status ", run->exit_code,
                                  " without a report", WhileDoing(*run));
  }
  return report;
}

arrow::Result<std::vector<exec::TaskReport>> RunStage(std::vector<plan::Fragment> fragments,
                                                      const PoolOptions& options) {
  std::vector<exec::TaskReport> reports(fragments.size());
  std::mutex mutex;
  size_t next = 0;
  arrow::Status failure;
  // Set at the first failure: no task starts after it, and running workers are killed.
  std::atomic<bool> stop{false};

  auto work = [&] {
    while (!stop) {
      size_t index;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (next >= fragments.size()) return;
        index = next++;
      }
      plan::Fragment fragment = fragments[index];
      arrow::Status last_crash;
      bool done = false;
      for (int attempt = 1; attempt <= options.max_attempts && !stop; ++attempt) {
        fragment.attempt = attempt;
        auto report = RunInWorker(fragment, options, &stop);
        if (!report.ok()) {
          if (report.status().IsCancelled()) break;
          // Crashed or killed: try again in a new process.
          last_crash = report.status();
          if (attempt < options.max_attempts) {
            std::lock_guard<std::mutex> lock(mutex);
            std::fprintf(stderr, "sluice: %s; retrying (attempt %d of %d)\n",
                         last_crash.message().c_str(), attempt + 1, options.max_attempts);
          }
          continue;
        }
        std::lock_guard<std::mutex> lock(mutex);
        if (report->status != "ok") {
          if (failure.ok()) failure = arrow::Status::Invalid(report->error);
          stop = true;
        } else {
          reports[index] = *report;
          if (options.on_report) options.on_report(*report);
        }
        done = true;
        break;
      }
      if (!done && !stop) {
        std::lock_guard<std::mutex> lock(mutex);
        if (failure.ok()) {
          failure =
              arrow::Status::IOError("task ", fragment.task_name(), " failed ",
                                     options.max_attempts, " times; last: ", last_crash.message());
        }
        stop = true;
      }
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(options.workers, static_cast<int>(fragments.size())));
  for (int i = 0; i < n; ++i) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  ARROW_RETURN_NOT_OK(failure);
  return reports;
}

}  // namespace sluice::dist
