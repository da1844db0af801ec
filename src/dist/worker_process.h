// One supervised child process: what the worker pool runs each task attempt in.
//
// The child starts with a scrubbed environment (WorkerEnvironment), in its own process group, in
// "/" as its working directory, with no descriptors but stdin (the bytes given), stdout (captured)
// and descriptor 3, a progress channel on which it writes one line per step ("running stage 'x'
// on object 'k'"). The supervisor enforces a wall-clock limit and a memory limit and kills the
// whole process group when either is passed, when the caller cancels, and when the child exits,
// so a grandchild that inherited stdout can neither hang the driver nor outlive its task.
//
// Memory is the sum of the anonymous resident memory (RSS minus file-backed and shared pages,
// from /proc/<pid>/statm) of every process in the group, sampled every kSampleInterval. RLIMIT_AS
// and RLIMIT_DATA count address space that Arrow's allocators (mimalloc, jemalloc) reserve but
// never touch, so they would fail healthy tasks at small limits; the group's resident memory is
// what the machine actually loses. The price: a task that allocates faster than the sampling
// catches can overshoot by what it allocates in one interval.
//
// A SupervisedChild is the same child kept alive across requests: each request is framed on its
// stdin and its reply framed on descriptor kReplyFd (see its comment); the limits apply to one
// request at a time.
//
// Thread-safety: RunSupervised may be called from several threads at once, each for its own
// child; a SupervisedChild is used by one thread at a time. The process must ignore SIGPIPE
// (sluice's main does): writing the input to a child that died early must be an error, not a
// signal.
#pragma once

#include <arrow/result.h>

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::dist {

/// The descriptor on which a supervised child writes its progress lines.
inline constexpr int kProgressFd = 3;

/// How often the supervisor samples memory and checks the clock.
inline constexpr std::chrono::milliseconds kSampleInterval{50};

struct ProcessLimits {
  /// Wall-clock limit from the start of the child; zero for none.
  std::chrono::milliseconds timeout{0};
  /// Limit on the group's anonymous resident memory; zero for none.
  int64_t memory_bytes = 0;
};

struct ProcessResult {
  enum class End {
    kExited,      // exited by itself; exit_code holds its status
    kSignaled,    // killed by a signal it did not get from us (a crash, the OOM killer, a kill)
    kTimedOut,    // we killed it at limits.timeout
    kOverMemory,  // we killed it when its group passed limits.memory_bytes
    kCancelled,   // we killed it because the caller cancelled
    kReplied,     // SupervisedChild only: it framed its reply and waits for the next request
  };
  End end = End::kExited;
  int exit_code = 0;
  int signal = 0;
  /// The largest memory sample, in bytes.
  int64_t peak_memory_bytes = 0;
  /// What the child wrote to stdout (the last kStdoutTail bytes, if it wrote more).
  std::string stdout_text;
  /// The last complete line the child wrote on the progress channel; empty if none.
  std::string last_progress;
};

/// The most of a child's stdout that is kept; its report is the last line.
inline constexpr size_t kStdoutTail = size_t{8} << 20;

/// Runs argv[0] (an absolute path) with `input` on stdin under `limits`. `cancel`, when given
/// and set, kills the child. Returns an IOError only when the child cannot be started.
arrow::Result<ProcessResult> RunSupervised(const std::vector<std::string>& argv,
                                           const std::vector<uint8_t>& input,
                                           const ProcessLimits& limits,
                                           const std::atomic<bool>* cancel = nullptr);

/// The descriptor on which a SupervisedChild frames its replies.
inline constexpr int kReplyFd = 4;

/// The largest frame either side accepts (a plan or a report); a larger length is a broken
/// protocol, not a big task.
inline constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 30;

/// A frame: `bytes` after their length as 8 bytes, little-endian.
std::string Frame(const void* bytes, size_t size);

/// The length a frame's 8-byte header gives.
uint64_t FrameLength(const uint8_t* header);

/// Reads exactly `size` bytes from a blocking descriptor, retrying interrupted reads; false at
/// EOF or on an error. The frames on both sides of a pipe are read with it.
bool ReadFully(int fd, void* out, size_t size);

/// Writes all of `bytes` to a blocking descriptor, retrying interrupted writes; false when the
/// other end is gone (the process must ignore SIGPIPE) or on an error.
bool WriteFully(int fd, const std::string& bytes);

/// A long-lived supervised child that answers requests one at a time. A request is framed
/// (Frame) on its stdin; a zero length or EOF asks it to exit. It frames one reply per request on
/// kReplyFd, a descriptor of its own, so nothing it or its children print can pass for a reply:
/// its stdout is /dev/null and its stderr is ours. Progress lines on kProgressFd are kept per
/// request. Like RunSupervised it starts scrubbed, in "/", in its own process group.
class SupervisedChild {
 public:
  /// Starts argv[0] (an absolute path). An IOError when it cannot be started.
  static arrow::Result<std::unique_ptr<SupervisedChild>> Start(
      const std::vector<std::string>& argv);
  /// Kills the group if it is still running (see Stop for a clean end).
  ~SupervisedChild();
  SupervisedChild(const SupervisedChild&) = delete;
  SupervisedChild& operator=(const SupervisedChild&) = delete;

  pid_t pid() const { return pid_; }
  /// False once the child has exited or been killed.
  bool Alive();

  /// Sends one request and waits for its reply (end kReplied, the reply in stdout_text) under
  /// `limits`, counted from now. On any other end the child is dead and its group killed. After
  /// a reply, processes the request left behind in the group (a transform's children) are killed.
  ProcessResult Call(const std::vector<uint8_t>& request, const ProcessLimits& limits,
                     const std::atomic<bool>* cancel = nullptr);

  /// Asks the child to exit (EOF on its stdin), waits up to `grace`, then kills its group.
  /// Returns how it ended: kExited when it exited by itself, kSignaled when something else
  /// killed it before or during the wait, kCancelled when it had to be killed.
  ProcessResult Stop(std::chrono::milliseconds grace);

 private:
  struct Pipes;
  SupervisedChild(pid_t pid, std::unique_ptr<Pipes> pipes);
  // Kills the group, reaps the child and fills `result` from its status when it ended by itself.
  void Reap(bool ended_by_itself, ProcessResult* result);

  pid_t pid_ = -1;
  bool reaped_ = false;
  std::unique_ptr<Pipes> pipes_;
};

/// The environment a worker starts with: from `environ`-style `env`, only the variables on a
/// short allow-list (PATH, HOME, LANG, LC_*, TZ, TMPDIR, the AWS_* settings an S3 store needs,
/// the sanitizers' *SAN_OPTIONS, the SLUICE_FAILPOINT test hook, and ARROW_DEFAULT_MEMORY_POOL:
/// a user's choice of allocator, worker_memory.h). SLUICE_HOME, SLUICE_STORE,
/// SLUICE_DATABASE_URL and everything else stay behind: a task gets its store and cache from its
/// plan, and needs no path to the registry or the signing key.
std::vector<std::string> WorkerEnvironment(const char* const* env);

}  // namespace sluice::dist
