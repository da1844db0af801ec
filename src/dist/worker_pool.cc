#include "dist/worker_pool.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>
#include <thread>

#include "plan/plan_codec.h"

extern char** environ;

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

}  // namespace

std::string SelfExecutable() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "sluice";
}

arrow::Result<exec::TaskReport> RunInWorker(const plan::Fragment& fragment,
                                            const std::string& worker_binary) {
  ARROW_ASSIGN_OR_RAISE(auto plan_bytes, plan::EncodeFragment(fragment));
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return arrow::Status::IOError("pipe failed");
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]);
    close(in_pipe[1]);
    return arrow::Status::IOError("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  const char* argv[] = {worker_binary.c_str(), "worker", nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, worker_binary.c_str(), &actions, nullptr,
                             const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    return arrow::Status::IOError("cannot start worker '", worker_binary, "': ", strerror(rc));
  }
  // The worker reads its whole plan before it writes anything, so writing first cannot deadlock.
  size_t written = 0;
  while (written < plan_bytes.size()) {
    const ssize_t n = write(in_pipe[1], plan_bytes.data() + written, plan_bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the worker died early; its exit status tells why
    written += static_cast<size_t>(n);
  }
  close(in_pipe[1]);
  std::string out;
  char buf[65536];
  while (true) {
    const ssize_t n = read(out_pipe[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string task = fragment.task_name() + " attempt " + std::to_string(fragment.attempt);
  if (WIFSIGNALED(status)) {
    return arrow::Status::IOError("worker for task ", task, " was killed by signal ",
                                  WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  }
  auto report = exec::TaskReport::FromJsonLine(LastLine(out));
  if (!report.ok()) {
    return arrow::Status::IOError("worker for task ", task, " exited with status ",
                                  WEXITSTATUS(status), " without a report");
  }
  return report;
}

arrow::Result<std::vector<exec::TaskReport>> RunStage(std::vector<plan::Fragment> fragments,
                                                      const PoolOptions& options) {
  std::vector<exec::TaskReport> reports(fragments.size());
  std::mutex mutex;
  size_t next = 0;
  arrow::Status failure;
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
        auto report = RunInWorker(fragment, options.worker_binary);
        if (!report.ok()) {
          last_crash = report.status();  // crashed or killed: try again in a new process
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
