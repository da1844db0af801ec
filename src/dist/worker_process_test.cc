#include "dist/worker_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "common/proc_stat.h"

namespace sluice::dist {
namespace {

using End = ProcessResult::End;

ProcessResult Sh(const std::string& script, const ProcessLimits& limits = {},
                 const std::atomic<bool>* cancel = nullptr, const std::string& input = "") {
  signal(SIGPIPE, SIG_IGN);  // as sluice's main does
  auto result = RunSupervised({"/bin/sh", "-c", script},
                              std::vector<uint8_t>(input.begin(), input.end()), limits, cancel);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return result.ok() ? *result : ProcessResult{};
}

// True once `pid` is gone or a zombie (killed, waiting for init to reap it).
bool Dead(pid_t pid) { return WaitUntilGone(pid, std::chrono::seconds(10)); }

TEST(WorkerEnvironment, KeepsOnlyTheAllowList) {
  const char* env[] = {"PATH=/usr/bin",
                       "HOME=/root",
                       "LANG=C.UTF-8",
                       "LC_CTYPE=C",
                       "TZ=UTC",
                       "TMPDIR=/tmp",
                       "AWS_ACCESS_KEY_ID=a",
                       "AWS_SECRET_ACCESS_KEY=b",
                       "ASAN_OPTIONS=x",
                       "SLUICE_FAILPOINT=kill:s0p0:1",
                       "ARROW_DEFAULT_MEMORY_POOL=system",
                       "SLUICE_HOME=/home/me/.sluice",
                       "SLUICE_STORE=file:///x",
                       "SLUICE_DATABASE_URL=postgresql://u:password@h/db",
                       "GITHUB_TOKEN=secret",
                       "PATHOLOGICAL=1",
                       "NOEQUALS",
                       nullptr};
  EXPECT_EQ(WorkerEnvironment(env),
            (std::vector<std::string>{
                "PATH=/usr/bin", "HOME=/root", "LANG=C.UTF-8", "LC_CTYPE=C", "TZ=UTC",
                "TMPDIR=/tmp", "AWS_ACCESS_KEY_ID=a", "AWS_SECRET_ACCESS_KEY=b", "ASAN_OPTIONS=x",
                "SLUICE_FAILPOINT=kill:s0p0:1", "ARROW_DEFAULT_MEMORY_POOL=system"}));
}

TEST(RunSupervised, PassesInputAndCapturesOutputAndExitCode) {
  ProcessResult r = Sh("cat; echo; echo report; exit 3", {}, nullptr, "plan bytes");
  EXPECT_EQ(r.end, End::kExited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.stdout_text, "plan bytes\nreport\n");
}

TEST(RunSupervised, ChildStartsScrubbedInRootWithOnlyItsDescriptors) {
  setenv("SLUICE_TEST_SECRET", "hunter2", 1);
  setenv("SLUICE_HOME", "/somewhere/.sluice", 1);
  // An inherited descriptor without close-on-exec, as a library might leave one.
  const int stray = fcntl(STDERR_FILENO, F_DUPFD, 50);
  ASSERT_GE(stray, 0);
  ProcessResult r = Sh("env; pwd; ls /proc/self/fd");
  close(stray);
  EXPECT_EQ(r.stdout_text.find("SLUICE_TEST_SECRET"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("SLUICE_HOME"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("PATH="), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("\n/\n"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("\n" + std::to_string(stray) + "\n"), std::string::npos)
      << r.stdout_text;
}

TEST(RunSupervised, KillsAtTheTimeoutAndKeepsTheLastProgressLine) {
  ProcessLimits limits;
  limits.timeout = std::chrono::milliseconds(300);
  ProcessResult r =
      Sh("echo 'reading x' >&3; echo 'running stage y' >&3; while :; do :; done", limits);
  EXPECT_EQ(r.end, End::kTimedOut);
  EXPECT_EQ(r.last_progress, "running stage y");
}

TEST(RunSupervised, AGrandchildHoldingStdoutNeitherHangsNorSurvives) {
  ProcessLimits limits;
  limits.timeout = std::chrono::seconds(60);
  ProcessResult r = Sh("sleep 1000 & echo $!; echo report", limits);
  EXPECT_EQ(r.end, End::kExited);
  EXPECT_EQ(r.exit_code, 0);
  const pid_t grandchild = std::atoi(r.stdout_text.c_str());
  ASSERT_GT(grandchild, 0) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("\nreport\n"), std::string::npos);
  EXPECT_TRUE(Dead(grandchild));
}

TEST(RunSupervised, KillsTheGroupWhenItPassesItsMemoryLimit) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  ProcessLimits limits;
  limits.timeout = std::chrono::seconds(60);
  limits.memory_bytes = int64_t{128} << 20;
  // The memory is in a child of the shell, so only counting the whole group finds it.
  ProcessResult r = Sh(
      "/usr/bin/python3 -c 'import time; x = bytearray(512 << 20); time.sleep(60)'; echo survived",
      limits);
  EXPECT_EQ(r.end, End::kOverMemory);
  EXPECT_GT(r.peak_memory_bytes, limits.memory_bytes);
  EXPECT_EQ(r.stdout_text.find("survived"), std::string::npos);
}

TEST(RunSupervised, ReportsACrashAsASignal) {
  ProcessResult r = Sh("kill -SEGV $$");
  EXPECT_EQ(r.end, End::kSignaled);
  EXPECT_EQ(r.signal, SIGSEGV);
}

TEST(RunSupervised, CancelKillsTheChild) {
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  ProcessResult r = Sh("sleep 1000", {}, &cancel);
  canceller.join();
  EXPECT_EQ(r.end, End::kCancelled);
}

TEST(RunSupervised, AMissingProgramIsAnError) {
  auto r = RunSupervised({"/nonexistent/sluice", "worker"}, {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot start '/nonexistent/sluice'"), std::string::npos);
}

}  // namespace
}  // namespace sluice::dist
