#include "dist/worker_pool.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "dist/worker_process.h"
#include "plan/plan_codec.h"

namespace sluice::dist {

namespace {

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

// "signal 9 (Killed)" or "status 3", for a worker that ended by itself.
std::string HowItEnded(const ProcessResult& result) {
  if (result.end == ProcessResult::End::kSignaled) {
    return "signal " + std::to_string(result.signal) + " (" + strsignal(result.signal) + ")";
  }
  return "status " + std::to_string(result.exit_code);
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

// Starts every worker of a pool from one thread that lives as long as the pool. A worker asks
// for SIGTERM when its parent dies (PR_SET_PDEATHSIG), and Linux means the *thread* that started
// it: a worker started from a stage's thread would die when that stage ends.
class WorkerPool::Launcher {
 public:
  using Started = arrow::Result<std::unique_ptr<SupervisedChild>>;

  Launcher() : thread_([this] { Loop(); }) {}
  ~Launcher() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  Started Start(const std::vector<std::string>& argv) {
    std::packaged_task<Started()> task([&argv] { return SupervisedChild::Start(argv); });
    std::future<Started> started = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(task));
    }
    wake_.notify_one();
    return started.get();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::packaged_task<Started()> task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<Started()>> queue_;
  bool done_ = false;
  std::thread thread_;
};

WorkerPool::WorkerPool(PoolOptions options)
    : options_(std::move(options)),
      launcher_(std::make_unique<Launcher>()),
      slots_(static_cast<size_t>(std::max(1, options_.workers))) {}

WorkerPool::~WorkerPool() {
  // Idle workers hold nothing worth a clean exit: they are killed at once.
  for (auto& worker : slots_) {
    if (worker == nullptr) continue;
    const pid_t pid = worker->pid();
    ProcessResult end = worker->Stop(std::chrono::milliseconds(0));
    if (end.end == ProcessResult::End::kSignaled) {
      std::fprintf(stderr, "sluice: worker %d ended by %s while idle; no task was lost\n",
                   static_cast<int>(pid), HowItEnded(end).c_str());
    }
  }
}

int CpuThreadsPerWorker(int workers, unsigned cores) {
  if (workers < 1 || cores < 1) return 1;
  return std::max(1, static_cast<int>(cores) / workers);
}

void WorkerPool::StartWorkers() {
  for (size_t slot = 0; slot < slots_.size(); ++slot) (void)EnsureWorker(slot);
}

arrow::Status WorkerPool::EnsureWorker(size_t slot) {
  std::unique_ptr<SupervisedChild>& worker = slots_[slot];
  if (worker != nullptr && !worker->Alive()) {
    // Killed between tasks: no task was lost, so nothing is retried.
    const pid_t pid = worker->pid();
    ProcessResult end = worker->Stop(std::chrono::milliseconds(0));
    std::fprintf(stderr, "sluice: worker %d ended by %s while idle; starting another\n",
                 static_cast<int>(pid), HowItEnded(end).c_str());
    worker.reset();
  }
  if (worker != nullptr) return arrow::Status::OK();
  // The worker dies with this process: it checks that its parent is still the pid it was given.
  std::vector<std::string> argv = {options_.worker_binary, "worker",
                                   "--parent-pid",         std::to_string(getpid()),
                                   "--progress-fd",        std::to_string(kProgressFd),
                                   "--report-fd",          std::to_string(kReplyFd)};
  for (const std::string& path : options_.hidden_paths) {
    argv.push_back("--hide");
    argv.push_back(path);
  }
  if (!options_.memory_pool.empty()) {
    argv.push_back("--memory-pool");
    argv.push_back(options_.memory_pool);
  }
  if (options_.cpu_threads > 0) {
    argv.push_back("--cpu-threads");
    argv.push_back(std::to_string(options_.cpu_threads));
  }
  ARROW_ASSIGN_OR_RAISE(worker, launcher_->Start(argv));
  ++workers_started_;
  return arrow::Status::OK();
}

arrow::Result<exec::TaskReport> WorkerPool::RunTask(size_t slot, const plan::Fragment& fragment,
                                                    const std::atomic<bool>* cancel) {
  ARROW_ASSIGN_OR_RAISE(auto plan_bytes, plan::EncodeFragment(fragment));
  arrow::Status started = EnsureWorker(slot);
  if (!started.ok()) {
    return arrow::Status::IOError("cannot start a worker for task ", fragment.task_name(), ": ",
                                  started.message());
  }
  ProcessLimits limits;
  limits.timeout = std::chrono::seconds(options_.task_timeout_seconds);
  limits.memory_bytes = TaskMemoryBytes(options_);
  ProcessResult run = slots_[slot]->Call(plan_bytes, limits, cancel);
  if (run.end != ProcessResult::End::kReplied) slots_[slot].reset();  // dead: the next is fresh
  const std::string task = fragment.task_name() + " attempt " + std::to_string(fragment.attempt);
  switch (run.end) {
    case ProcessResult::End::kTimedOut:
      return LimitReport(
          fragment,
          "task " + task + " was killed after " + std::to_string(options_.task_timeout_seconds) +
              " s, its time limit (dataflow.limits.task_timeout_seconds)," + WhileDoing(run));
    case ProcessResult::End::kOverMemory:
      return LimitReport(fragment, "task " + task + " was killed when it used " +
                                       Mib(run.peak_memory_bytes) + ", over its memory limit of " +
                                       Mib(limits.memory_bytes) +
                                       " (dataflow.limits.task_memory_mb)," + WhileDoing(run));
    case ProcessResult::End::kCancelled:
      return arrow::Status::Cancelled("task ", task, " was cancelled");
    case ProcessResult::End::kSignaled:
      return arrow::Status::IOError("worker for task ", task, " was killed by signal ", run.signal,
                                    " (", strsignal(run.signal), ")", WhileDoing(run));
    case ProcessResult::End::kExited:
      return arrow::Status::IOError("worker for task ", task, " exited with status ", run.exit_code,
                                    " without a report", WhileDoing(run));
    case ProcessResult::End::kReplied:
      break;
  }
  auto report = exec::TaskReport::FromJsonLine(run.stdout_text);
  if (!report.ok()) {
    slots_[slot].reset();
    return arrow::Status::IOError("worker for task ", task, " sent a malformed report (",
                                  report.status().message(), ")", WhileDoing(run));
  }
  // A long-lived worker answers one task at a time; an answer for another task or attempt would
  // hand the next stage the wrong files, so the worker is replaced and the task tried again.
  if (report->status == "ok" &&
      (report->task != fragment.task_name() || report->attempt != fragment.attempt)) {
    slots_[slot].reset();
    return arrow::Status::IOError("worker for task ", task, " answered for task ", report->task,
                                  " attempt ", report->attempt);
  }
  return report;
}

arrow::Result<std::vector<exec::TaskReport>> RunStage(std::vector<plan::Fragment> fragments,
                                                      const PoolOptions& options) {
  WorkerPool pool(options);
  return pool.RunStage(std::move(fragments));
}

arrow::Result<std::vector<exec::TaskReport>> WorkerPool::RunStage(
    std::vector<plan::Fragment> fragments) {
  const PoolOptions& options = options_;
  std::vector<exec::TaskReport> reports(fragments.size());
  std::mutex mutex;
  size_t next = 0;
  arrow::Status failure;
  // Set at the first failure: no task starts after it, and running workers are killed.
  std::atomic<bool> stop{false};

  auto work = [&](size_t slot) {
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
        auto report = RunTask(slot, fragment, &stop);
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
  const size_t n = std::min(slots_.size(), std::max<size_t>(1, fragments.size()));
  for (size_t slot = 0; slot < n; ++slot) threads.emplace_back(work, slot);
  for (auto& t : threads) t.join();
  ARROW_RETURN_NOT_OK(failure);
  return reports;
}

}  // namespace sluice::dist
