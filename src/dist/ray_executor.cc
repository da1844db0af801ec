#include "dist/ray_executor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "dist/worker_process.h"
#include "plan/plan_codec.h"

extern char** environ;

namespace sluice::dist {

namespace {

using json = nlohmann::json;

// How long a closing bridge may take to cancel its tasks and leave Ray before it is killed.
constexpr std::chrono::seconds kBridgeGrace{20};
// How long the bridge may take to connect (or to start a local Ray, ~5 s on 2 cores) before the
// run gives up on it: Ray itself retries an unanswered cluster for minutes.
constexpr std::chrono::seconds kConnectTimeout{120};

std::string GetEnv(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

}  // namespace

RayOptions RayOptionsFromEnvironment() {
  RayOptions options;
  options.python = GetEnv("SLUICE_RAY_PYTHON", "python3");
  options.address = GetEnv("RAY_ADDRESS", "");
  options.worker_binary = SelfExecutable();
  return options;
}

RayExecutor::RayExecutor(RayOptions options, pid_t pid, int requests_fd, int replies_fd)
    : options_(std::move(options)), pid_(pid), requests_fd_(requests_fd), replies_fd_(replies_fd) {}

arrow::Result<std::shared_ptr<RayExecutor>> RayExecutor::Start(RayOptions options) {
  json config = {{"address", options.address},
                 {"binary", options.worker_binary},
                 {"env", WorkerEnvironment(environ)},
                 {"hide", options.hidden_paths},
                 {"timeout_s", options.task_timeout_seconds},
                 {"memory_bytes", options.task_memory_bytes},
                 {"driver_pid", static_cast<int64_t>(getpid())}};
  int requests[2], replies[2];
  if (pipe2(requests, O_CLOEXEC) != 0) {
    return arrow::Status::IOError("--executor ray: pipe: ", std::strerror(errno));
  }
  if (pipe2(replies, O_CLOEXEC) != 0) {
    const int err = errno;
    close(requests[0]);
    close(requests[1]);
    return arrow::Status::IOError("--executor ray: pipe: ", std::strerror(err));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, requests[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, replies[1], STDOUT_FILENO);
  const std::string script = kRayBridgeScript;
  // The configuration holds the workers' environment, S3 credentials included: it goes down
  // the pipe as the first frame, never on a command line that every user can read.
  const std::string config_text = config.dump(-1, ' ', false, json::error_handler_t::replace);
  std::vector<const char*> argv = {options.python.c_str(), "-c", script.c_str(), nullptr};
  pid_t pid = -1;
  // The bridge needs the whole environment (RAY_*, the interpreter's own settings); it hands
  // the tasks only WorkerEnvironment's allow-list.
  const int rc = posix_spawnp(&pid, options.python.c_str(), &actions, nullptr,
                              const_cast<char* const*>(argv.data()), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(requests[0]);
  close(replies[1]);
  if (rc != 0) {
    close(requests[1]);
    close(replies[0]);
    return arrow::Status::IOError("--executor ray: cannot start the Ray bridge with '",
                                  options.python, "' (", std::strerror(rc),
                                  "); set SLUICE_RAY_PYTHON to a Python that has ray installed");
  }
  std::shared_ptr<RayExecutor> executor(
      new RayExecutor(std::move(options), pid, requests[1], replies[0]));
  if (!WriteFully(executor->requests_fd_, Frame(config_text.data(), config_text.size()))) {
    return executor->ReadFrame().status();  // it died at once: say how
  }
  pollfd ready{executor->replies_fd_, POLLIN, 0};
  int polled = 0;
  do {
    polled = poll(&ready, 1, static_cast<int>(std::chrono::milliseconds(kConnectTimeout).count()));
  } while (polled < 0 && errno == EINTR);
  if (polled == 0) {
    kill(executor->pid_, SIGKILL);  // stuck inside Ray's connect: no clean exit to wait for
    return arrow::Status::IOError("--executor ray: the Ray bridge did not connect to ",
                                  executor->options_.address.empty()
                                      ? std::string("a local Ray")
                                      : "RAY_ADDRESS " + executor->options_.address,
                                  " within ", kConnectTimeout.count(), " s");
  }
  ARROW_ASSIGN_OR_RAISE(std::string hello_text, executor->ReadFrame());
  const json hello = json::parse(hello_text, nullptr, /*allow_exceptions=*/false);
  if (!hello.is_object()) {
    return arrow::Status::IOError("internal: --executor ray: the bridge's greeting is not JSON");
  }
  if (hello.contains("error")) {
    return arrow::Status::IOError("--executor ray: ", hello.value("error", std::string()));
  }
  executor->cpus_ = hello.value("cpus", 0);
  executor->nodes_ = hello.value("nodes", 0);
  return executor;
}

RayExecutor::~RayExecutor() {
  // EOF asks the bridge to cancel what still runs and leave Ray. Replies it still sends are
  // read and dropped, so that a full pipe never keeps it from exiting.
  if (requests_fd_ >= 0) close(requests_fd_);
  if (pid_ > 0) {
    const auto deadline = std::chrono::steady_clock::now() + kBridgeGrace;
    int status = 0;
    char sink[1 << 16];
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      pollfd ready{replies_fd_, POLLIN, 0};
      if (poll(&ready, 1, 20) > 0 && read(replies_fd_, sink, sizeof(sink)) <= 0) {
        // Its end is closed: it is exiting. Wait without spinning on the closed pipe.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  if (replies_fd_ >= 0) close(replies_fd_);
}

void RayExecutor::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

arrow::Result<std::string> RayExecutor::ReadFrame() {
  uint8_t header[8];
  uint64_t size = 0;
  const bool got = ReadFully(replies_fd_, header, sizeof(header));
  if (got) size = FrameLength(header);
  if (!got || size == 0 || size > kMaxFrameBytes) {
    // A bridge that broke the protocol is not trusted to end by itself.
    if (got) kill(pid_, SIGKILL);
    int status = 0;
    std::string how = "closed its pipe";
    if (waitpid(pid_, &status, 0) == pid_) {
      pid_ = -1;
      how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                : "exited with status " + std::to_string(WEXITSTATUS(status));
    }
    return arrow::Status::IOError("--executor ray: the Ray bridge (", options_.python, ") ", how,
                                  got ? " after a malformed reply" : "",
                                  "; its messages are above");
  }
  std::string bytes(size, '\0');
  if (!ReadFully(replies_fd_, bytes.data(), bytes.size())) {
    return arrow::Status::IOError("--executor ray: a reply from the Ray bridge ended early");
  }
  return bytes;
}

arrow::Status RayExecutor::Send(int64_t id, const plan::Fragment& fragment,
                                const std::string& avoid_node) {
  ARROW_ASSIGN_OR_RAISE(auto plan_bytes, plan::EncodeFragment(fragment));
  json head = {{"op", "run"},
               {"id", id},
               {"task", fragment.task_name()},
               {"attempt", fragment.attempt},
               {"avoid_node", avoid_node}};
  std::string message = head.dump() + "\n";
  message.append(reinterpret_cast<const char*>(plan_bytes.data()), plan_bytes.size());
  if (!WriteFully(requests_fd_, Frame(message.data(), message.size()))) {
    return arrow::Status::IOError("--executor ray: cannot send task ", fragment.task_name(),
                                  " to the Ray bridge: it has exited");
  }
  return arrow::Status::OK();
}

arrow::Status RayExecutor::SendCancel() {
  const std::string message = json{{"op", "cancel"}}.dump();
  if (!WriteFully(requests_fd_, Frame(message.data(), message.size()))) {
    return arrow::Status::IOError("--executor ray: the Ray bridge has exited");
  }
  return arrow::Status::OK();
}

arrow::Result<std::vector<exec::TaskReport>> RayExecutor::RunStage(
    std::vector<plan::Fragment> fragments, const ReportFn& on_report) {
  if (pid_ <= 0) return arrow::Status::IOError("--executor ray: the Ray bridge is gone");
  std::vector<exec::TaskReport> reports(fragments.size());
  // Request id -> the fragment it runs; ids are fragment indices, one attempt in flight each.
  std::map<int64_t, size_t> running;
  // The first failure. Every path after it cancels what runs and drains the replies, so no
  // task of this stage still writes when the caller cleans up.
  arrow::Status failure;
  auto fail = [&](arrow::Status st) {
    if (!failure.ok()) return;
    failure = std::move(st);
    (void)SendCancel();
  };
  auto send = [&](size_t index, const std::string& avoid_node) {
    arrow::Status sent = Send(static_cast<int64_t>(index), fragments[index], avoid_node);
    if (sent.ok()) {
      running[static_cast<int64_t>(index)] = index;
    } else {
      fail(std::move(sent));
    }
  };
  for (size_t i = 0; i < fragments.size() && failure.ok(); ++i) {
    fragments[i].attempt = 1;
    send(i, "");
  }
  while (!running.empty()) {
    auto text = ReadFrame();
    if (!text.ok()) {
      // The bridge is gone, and with it its Ray job and that job's tasks.
      Kill();
      return failure.ok() ? text.status() : failure;
    }
    const json reply = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!reply.is_object() || !reply.contains("id") || !reply["id"].is_number_integer() ||
        running.count(reply["id"].get<int64_t>()) == 0) {
      // Not our protocol: nothing it says can be trusted, so it is ended, not drained.
      Kill();
      return arrow::Status::IOError(
          "internal: --executor ray: the Ray bridge sent a reply for "
          "no running task: ",
          text->substr(0, 200));
    }
    const size_t index = running[reply["id"].get<int64_t>()];
    running.erase(reply["id"].get<int64_t>());
    plan::Fragment& fragment = fragments[index];
    const std::string task = fragment.task_name() + " attempt " + std::to_string(fragment.attempt);
    const std::string outcome = reply.value("outcome", std::string());
    const std::string message = reply.value("message", std::string());
    const std::string node = reply.value("node", std::string());
    // What the worker wrote to stderr: locally it would have gone to ours.
    const std::string err = reply.value("stderr", std::string());
    if (!err.empty()) std::fprintf(stderr, "%s%s", err.c_str(), err.back() == '\n' ? "" : "\n");
    if (!failure.ok()) continue;  // draining after a failure
    if (outcome == "report") {
      auto report = exec::TaskReport::FromJsonLine(reply.value("report", std::string()));
      if (!report.ok()) {
        fail(arrow::Status::IOError("worker for task ", task, " on node ", node,
                                    " sent a malformed report (", report.status().message(), ")"));
      } else if (report->status != "ok") {
        fail(arrow::Status::Invalid(report->error));
      } else if (report->task != fragment.task_name() || report->attempt != fragment.attempt) {
        fail(arrow::Status::IOError("worker for task ", task, " answered for task ", report->task,
                                    " attempt ", report->attempt));
      } else {
        reports[index] = std::move(*report);
        if (on_report) on_report(reports[index]);
      }
    } else if (outcome == "lost") {
      if (fragment.attempt >= options_.max_attempts) {
        fail(arrow::Status::IOError("task ", fragment.task_name(), " failed ",
                                    options_.max_attempts, " times on Ray; last: ", message));
        continue;
      }
      std::fprintf(stderr, "sluice: %s; retrying (attempt %d of %d)\n", message.c_str(),
                   fragment.attempt + 1, options_.max_attempts);
      ++fragment.attempt;
      send(index, node);
    } else if (outcome == "limit") {
      fail(arrow::Status::Invalid(message, "; a task stopped at a limit is not retried"));
    } else if (outcome == "cancelled") {
      fail(arrow::Status::Cancelled("task ", task, " was cancelled on Ray"));
    } else {
      fail(arrow::Status::IOError("task ", task, " could not run on Ray: ", message));
    }
  }
  ARROW_RETURN_NOT_OK(failure);
  return reports;
}

TaskRunner RayExecutor::Runner(std::shared_ptr<RayExecutor> executor) {
  return [executor](std::vector<plan::Fragment> fragments, const ReportFn& on_report) {
    return executor->RunStage(std::move(fragments), on_report);
  };
}

}  // namespace sluice::dist
