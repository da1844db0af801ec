#include "dist/worker_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "common/proc_stat.h"

extern char** environ;

namespace sluice::dist {

namespace {

using Clock = std::chrono::steady_clock;

// How long the group's membership is trusted before /proc is scanned again for new members
// (a transform's children); the known members are sampled every kSampleInterval.
constexpr std::chrono::milliseconds kMembershipInterval{500};
// After the child exits and its group is killed, how long its pipes may take to reach EOF (a
// process that left the group may still hold them).
constexpr std::chrono::milliseconds kDrainDeadline{1000};

// Closes a descriptor once.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  void Reset(int fd) {
    Close();
    fd_ = fd;
  }
  int get() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A pipe whose ends sit above the standard descriptors and the progress descriptor, so that
// dup2 onto 0, 1 and 3 in the child never meets a descriptor that is already there (dup2 of a
// descriptor onto itself would leave its close-on-exec flag set).
arrow::Status MakePipe(Fd* read_end, Fd* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return arrow::Status::IOError("pipe: ", strerror(errno));
  for (int i = 0; i < 2; ++i) {
    const int high = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
    const int err = errno;
    close(fds[i]);
    fds[i] = high;
    if (high < 0) {
      if (i == 1) close(fds[0]);
      return arrow::Status::IOError("fcntl: ", strerror(err));
    }
  }
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return arrow::Status::OK();
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Reads what is available; returns false at EOF or on an error.
bool ReadAvailable(int fd, std::string* out) {
  char buf[65536];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
}

// Keeps the last complete progress line; `pending` holds a partial one.
void TakeProgressLines(std::string* pending, std::string* last) {
  size_t end;
  while ((end = pending->find('\n')) != std::string::npos) {
    std::string line = pending->substr(0, end);
    pending->erase(0, end + 1);
    if (!line.empty()) *last = std::move(line);
  }
  if (pending->size() > 65536) pending->clear();  // not lines: ignore
}

int64_t AnonymousResidentBytes(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/statm", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[256];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  long long size = 0, resident = 0, shared = 0;
  if (std::sscanf(buf, "%lld %lld %lld", &size, &resident, &shared) != 3) return 0;
  static const long page = sysconf(_SC_PAGESIZE);
  return std::max<long long>(0, resident - shared) * page;
}

// The process group id of `pid` (a /proc entry name); -1 if it is gone.
pid_t ProcessGroupOf(const char* pid) {
  auto stat = ReadProcStat(static_cast<pid_t>(std::atoi(pid)));
  return stat.has_value() ? stat->pgrp : -1;
}

std::vector<pid_t> GroupMembers(pid_t pgid) {
  std::vector<pid_t> members{pgid};
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return members;
  while (dirent* entry = readdir(proc)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid != pgid && ProcessGroupOf(entry->d_name) == pgid) members.push_back(pid);
  }
  closedir(proc);
  return members;
}

bool HasExited(pid_t pid) {
  siginfo_t info{};
  // WNOWAIT leaves the child a zombie, so its pid, and with it the group id, cannot be reused
  // before the group is killed.
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno != EINTR) return true;  // not our child any more: nothing to wait for
  }
  return info.si_pid == pid;
}

void WaitExited(pid_t pid) {
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
}

bool Allowed(std::string_view name) {
  static constexpr std::string_view kNames[] = {"PATH",
                                                "HOME",
                                                "LANG",
                                                "TZ",
                                                "TMPDIR",
                                                "LC_ALL",
                                                "SLUICE_FAILPOINT",
                                                "ARROW_DEFAULT_MEMORY_POOL"};
  static constexpr std::string_view kPrefixes[] = {"LC_", "AWS_"};
  for (auto n : kNames) {
    if (name == n) return true;
  }
  for (auto p : kPrefixes) {
    if (name.substr(0, p.size()) == p) return true;
  }
  // ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS: a sanitized build's workers behave like its driver.
  constexpr std::string_view kSanitizer = "SAN_OPTIONS";
  return name.size() > kSanitizer.size() &&
         name.substr(name.size() - kSanitizer.size()) == kSanitizer;
}

// Starts argv[0] with a scrubbed environment, in "/", in its own process group, with default
// signal handling, and with no descriptors but stderr and `dups` (ours, onto the child's); a
// standard descriptor not in `dups` is /dev/null.
arrow::Result<pid_t> SpawnScrubbed(const std::vector<std::string>& argv,
                                   const std::vector<std::pair<int, int>>& dups) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int highest = STDERR_FILENO;
  for (int target : {STDIN_FILENO, STDOUT_FILENO}) {
    const bool given =
        std::any_of(dups.begin(), dups.end(), [&](const auto& d) { return d.second == target; });
    if (!given) {
      posix_spawn_file_actions_addopen(&actions, target, "/dev/null",
                                       target == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0);
    }
  }
  for (const auto& [ours, theirs] : dups) {
    posix_spawn_file_actions_adddup2(&actions, ours, theirs);
    highest = std::max(highest, theirs);
  }
  // Nothing else of ours (registry files, sockets) reaches the child.
  posix_spawn_file_actions_addclosefrom_np(&actions, highest + 1);
  posix_spawn_file_actions_addchdir_np(&actions, "/");
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so that one kill reaches the child and everything it starts.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env = WorkerEnvironment(environ);
  std::vector<char*> envp, args;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);

  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return arrow::Status::IOError("cannot start '", argv[0], "': ", strerror(rc));
  }
  return pid;
}

}  // namespace

std::vector<std::string> WorkerEnvironment(const char* const* env) {
  std::vector<std::string> out;
  for (; env != nullptr && *env != nullptr; ++env) {
    const std::string_view entry(*env);
    const size_t eq = entry.find('=');
    if (eq != std::string_view::npos && Allowed(entry.substr(0, eq))) out.emplace_back(entry);
  }
  return out;
}

namespace {

// The limits of one task, checked once per sample: the time since `start`, cancellation, and
// the anonymous resident memory of the process group of `pid` (whose members are listed again
// every kMembershipInterval). Shared by one-shot workers and long-lived workers' tasks.
class LimitWatch {
 public:
  LimitWatch(pid_t pid, Clock::time_point start)
      : pid_(pid), start_(start), members_{pid}, members_at_(start) {}

  /// How the task ends now, or nullopt while it is within its limits.
  std::optional<ProcessResult::End> Check(Clock::time_point now, const ProcessLimits& limits,
                                          const std::atomic<bool>* cancel, int64_t* peak_memory) {
    if (limits.timeout.count() > 0 && now - start_ >= limits.timeout) {
      return ProcessResult::End::kTimedOut;
    }
    if (cancel != nullptr && cancel->load()) return ProcessResult::End::kCancelled;
    if (limits.memory_bytes > 0) {
      if (now - members_at_ >= kMembershipInterval) {
        members_ = GroupMembers(pid_);
        members_at_ = now;
      }
      int64_t total = 0;
      for (pid_t m : members_) total += AnonymousResidentBytes(m);
      *peak_memory = std::max(*peak_memory, total);
      if (total > limits.memory_bytes) return ProcessResult::End::kOverMemory;
    }
    return std::nullopt;
  }

 private:
  pid_t pid_;
  Clock::time_point start_;
  std::vector<pid_t> members_;
  Clock::time_point members_at_;
};

}  // namespace

arrow::Result<ProcessResult> RunSupervised(const std::vector<std::string>& argv,
                                           const std::vector<uint8_t>& input,
                                           const ProcessLimits& limits,
                                           const std::atomic<bool>* cancel) {
  Fd in_read, in_write, out_read, out_write, progress_read, progress_write;
  ARROW_RETURN_NOT_OK(MakePipe(&in_read, &in_write));
  ARROW_RETURN_NOT_OK(MakePipe(&out_read, &out_write));
  ARROW_RETURN_NOT_OK(MakePipe(&progress_read, &progress_write));
  ARROW_ASSIGN_OR_RAISE(const pid_t pid,
                        SpawnScrubbed(argv, {{in_read.get(), STDIN_FILENO},
                                             {out_write.get(), STDOUT_FILENO},
                                             {progress_write.get(), kProgressFd}}));
  const auto start = Clock::now();
  in_read.Close();
  out_write.Close();
  progress_write.Close();
  SetNonBlocking(in_write.get());
  SetNonBlocking(out_read.get());
  SetNonBlocking(progress_read.get());
  // A pidfd wakes poll() the moment the child exits; without one (old kernels) the sampling
  // interval bounds the delay.
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));

  ProcessResult result;
  std::string progress_pending;
  size_t written = 0;
  if (input.empty()) in_write.Close();
  LimitWatch watch(pid, start);
  bool exited = false;

  auto read_outputs = [&] {
    if (out_read.open()) {
      if (!ReadAvailable(out_read.get(), &result.stdout_text)) out_read.Close();
      if (result.stdout_text.size() > kStdoutTail) {
        result.stdout_text.erase(0, result.stdout_text.size() - kStdoutTail / 2);
      }
    }
    if (progress_read.open()) {
      if (!ReadAvailable(progress_read.get(), &progress_pending)) progress_read.Close();
      TakeProgressLines(&progress_pending, &result.last_progress);
    }
  };

  while (true) {
    const auto now = Clock::now();
    if (auto end = watch.Check(now, limits, cancel, &result.peak_memory_bytes)) {
      result.end = *end;
      break;
    }
    pollfd fds[4];
    nfds_t n = 0;
    if (in_write.open()) fds[n++] = {in_write.get(), POLLOUT, 0};
    if (out_read.open()) fds[n++] = {out_read.get(), POLLIN, 0};
    if (progress_read.open()) fds[n++] = {progress_read.get(), POLLIN, 0};
    if (pidfd.open()) fds[n++] = {pidfd.get(), POLLIN, 0};
    auto wait = kSampleInterval;
    if (limits.timeout.count() > 0) {
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(limits.timeout -
                                                                                  (now - start)) +
                                std::chrono::milliseconds(1));
    }
    poll(fds, n, static_cast<int>(wait.count()));
    if (in_write.open()) {
      while (written < input.size()) {
        const ssize_t w = write(in_write.get(), input.data() + written, input.size() - written);
        if (w > 0) {
          written += static_cast<size_t>(w);
        } else if (w < 0 && errno == EINTR) {
          continue;
        } else {
          if (w < 0 && errno != EAGAIN) written = input.size();  // the child closed stdin
          break;
        }
      }
      if (written >= input.size()) in_write.Close();
    }
    read_outputs();
    if (HasExited(pid)) {
      exited = true;
      break;
    }
  }

  // The child has exited (a zombie, so its group id is still ours) or must be stopped: either
  // way nothing in its group may outlive the task or keep its pipes open.
  kill(-pid, SIGKILL);
  if (!exited) WaitExited(pid);
  in_write.Close();
  const auto drain_until = Clock::now() + kDrainDeadline;
  while ((out_read.open() || progress_read.open()) && Clock::now() < drain_until) {
    pollfd fds[2];
    nfds_t n = 0;
    if (out_read.open()) fds[n++] = {out_read.get(), POLLIN, 0};
    if (progress_read.open()) fds[n++] = {progress_read.get(), POLLIN, 0};
    poll(fds, n, static_cast<int>(kSampleInterval.count()));
    read_outputs();
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (exited) {
    if (WIFSIGNALED(status)) {
      result.end = ProcessResult::End::kSignaled;
      result.signal = WTERMSIG(status);
    } else {
      result.end = ProcessResult::End::kExited;
      result.exit_code = WEXITSTATUS(status);
    }
  }
  return result;
}

bool ReadFully(int fd, void* out, size_t size) {
  auto* p = static_cast<uint8_t*>(out);
  while (size > 0) {
    const ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool WriteFully(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

uint64_t FrameLength(const uint8_t* header) {
  uint64_t size = 0;
  for (int i = 0; i < 8; ++i) size |= uint64_t{header[i]} << (8 * i);
  return size;
}

std::string Frame(const void* bytes, size_t size) {
  std::string out(8 + size, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((uint64_t{size} >> (8 * i)) & 0xff);
  if (size > 0) std::memcpy(out.data() + 8, bytes, size);
  return out;
}

struct SupervisedChild::Pipes {
  Fd in_write, reply_read, progress_read, pidfd;
  std::string progress_pending;

  void ReadProgress(std::string* last) {
    if (!progress_read.open()) return;
    if (!ReadAvailable(progress_read.get(), &progress_pending)) progress_read.Close();
    TakeProgressLines(&progress_pending, last);
  }
};

SupervisedChild::SupervisedChild(pid_t pid, std::unique_ptr<Pipes> pipes)
    : pid_(pid), pipes_(std::move(pipes)) {}

arrow::Result<std::unique_ptr<SupervisedChild>> SupervisedChild::Start(
    const std::vector<std::string>& argv) {
  auto pipes = std::make_unique<Pipes>();
  Fd in_read, progress_write, reply_write;
  ARROW_RETURN_NOT_OK(MakePipe(&in_read, &pipes->in_write));
  ARROW_RETURN_NOT_OK(MakePipe(&pipes->progress_read, &progress_write));
  ARROW_RETURN_NOT_OK(MakePipe(&pipes->reply_read, &reply_write));
  // Its stdout is /dev/null: a transform's prints go nowhere and cannot fill a pipe.
  ARROW_ASSIGN_OR_RAISE(const pid_t pid, SpawnScrubbed(argv, {{in_read.get(), STDIN_FILENO},
                                                              {progress_write.get(), kProgressFd},
                                                              {reply_write.get(), kReplyFd}}));
  SetNonBlocking(pipes->in_write.get());
  SetNonBlocking(pipes->progress_read.get());
  SetNonBlocking(pipes->reply_read.get());
  pipes->pidfd.Reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  return std::unique_ptr<SupervisedChild>(new SupervisedChild(pid, std::move(pipes)));
}

SupervisedChild::~SupervisedChild() {
  if (!reaped_) {
    ProcessResult ignored;
    Reap(false, &ignored);
  }
}

bool SupervisedChild::Alive() { return !reaped_ && !HasExited(pid_); }

void SupervisedChild::Reap(bool ended_by_itself, ProcessResult* result) {
  // The child is a zombie or still running, so its group id is still ours.
  kill(-pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  if (ended_by_itself) {
    if (WIFSIGNALED(status)) {
      result->end = ProcessResult::End::kSignaled;
      result->signal = WTERMSIG(status);
    } else {
      result->end = ProcessResult::End::kExited;
      result->exit_code = WEXITSTATUS(status);
    }
  }
  pipes_->ReadProgress(&result->last_progress);
  pipes_->in_write.Close();
  pipes_->reply_read.Close();
  pipes_->progress_read.Close();
  pipes_->pidfd.Close();
}

ProcessResult SupervisedChild::Call(const std::vector<uint8_t>& request,
                                    const ProcessLimits& limits, const std::atomic<bool>* cancel) {
  ProcessResult result;
  if (reaped_) {
    result.end = ProcessResult::End::kCancelled;
    return result;
  }
  Pipes& p = *pipes_;
  p.progress_pending.clear();
  const std::string out = Frame(request.data(), request.size());
  size_t written = 0;
  std::string reply;
  const auto start = Clock::now();
  LimitWatch watch(pid_, start);
  bool exited = false;
  bool broken = false;
  while (true) {
    const auto now = Clock::now();
    if (auto end = watch.Check(now, limits, cancel, &result.peak_memory_bytes)) {
      result.end = *end;
      break;
    }
    pollfd fds[4];
    nfds_t n = 0;
    if (written < out.size() && p.in_write.open()) fds[n++] = {p.in_write.get(), POLLOUT, 0};
    if (p.reply_read.open()) fds[n++] = {p.reply_read.get(), POLLIN, 0};
    if (p.progress_read.open()) fds[n++] = {p.progress_read.get(), POLLIN, 0};
    if (p.pidfd.open()) fds[n++] = {p.pidfd.get(), POLLIN, 0};
    auto wait = kSampleInterval;
    if (limits.timeout.count() > 0) {
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(limits.timeout -
                                                                                  (now - start)) +
                                std::chrono::milliseconds(1));
    }
    poll(fds, n, static_cast<int>(wait.count()));
    while (written < out.size() && p.in_write.open()) {
      const ssize_t w = write(p.in_write.get(), out.data() + written, out.size() - written);
      if (w > 0) {
        written += static_cast<size_t>(w);
      } else if (w < 0 && errno == EINTR) {
        continue;
      } else {
        if (w < 0 && errno != EAGAIN) p.in_write.Close();  // it closed stdin: it is ending
        break;
      }
    }
    if (p.reply_read.open() && !ReadAvailable(p.reply_read.get(), &reply)) p.reply_read.Close();
    p.ReadProgress(&result.last_progress);
    if (reply.size() >= 8) {
      const uint64_t size = FrameLength(reinterpret_cast<const uint8_t*>(reply.data()));
      if (size > kMaxFrameBytes || reply.size() > 8 + size) {
        broken = true;  // not our protocol: a reply we did not ask for, or garbage
        break;
      }
      if (reply.size() == 8 + size) {
        result.end = ProcessResult::End::kReplied;
        result.stdout_text = reply.substr(8);
        break;
      }
    }
    if (HasExited(pid_)) {
      exited = true;
      break;
    }
  }
  if (result.end == ProcessResult::End::kReplied) {
    // Progress lines written before the reply are in the pipe by now; none may reach the next
    // request. Nothing the request started may outlive it either.
    p.ReadProgress(&result.last_progress);
    for (pid_t m : GroupMembers(pid_)) {
      if (m != pid_) kill(m, SIGKILL);
    }
    return result;
  }
  Reap(exited, &result);
  if (broken) {
    result.end = ProcessResult::End::kExited;
    result.exit_code = -1;
  }
  return result;
}

ProcessResult SupervisedChild::Stop(std::chrono::milliseconds grace) {
  ProcessResult result;
  result.end = ProcessResult::End::kExited;
  if (reaped_) return result;
  pipes_->in_write.Close();
  const auto until = Clock::now() + grace;
  bool exited = HasExited(pid_);
  while (!exited && Clock::now() < until) {
    pollfd fd = {pipes_->pidfd.get(), POLLIN, 0};
    poll(&fd, pipes_->pidfd.open() ? 1 : 0, 10);
    exited = HasExited(pid_);
  }
  if (!exited) result.end = ProcessResult::End::kCancelled;
  Reap(exited, &result);
  return result;
}

}  // namespace sluice::dist
