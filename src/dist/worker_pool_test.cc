// Long-lived workers, with a fake `sluice worker` (a Python script that speaks the framing
// protocol) so that each guard of SupervisedChild and WorkerPool can be provoked on demand: the
// request's text picks the fake's behaviour.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/proc_stat.h"
#include "dist/worker_pool.h"
#include "dist/worker_process.h"

namespace sluice::dist {
namespace {

using End = ProcessResult::End;

// Per request (8-byte little-endian length, then the bytes; EOF or 0 ends it) the fake logs the
// request, then: "crash-once" SIGKILLs itself the first time (a marker file remembers);
// "sleep" hangs; "progress" writes a progress line; "fork" leaves a sleeping child behind and
// replies with its pid. Every reply is a task report framed on fd 4, with the fake's pid, the
// request's attempt and "objects": 1; a forged report with "objects": 999 goes to stdout first.
constexpr char kFakeWorker[] = R"PY(#!/usr/bin/python3
import json, os, re, signal, subprocess, sys, time
base = os.environ["SLUICE_FAILPOINT"]
requests = os.fdopen(0, "rb", 0)
def read(n):
    out = b""
    while len(out) < n:
        chunk = requests.read(n - len(out))
        if not chunk:
            sys.exit(0)
        out += chunk
    return out
def report(**fields):
    r = {"sluice_task_report": 1, "task": "t", "attempt": 1, "status": "ok", "error": "",
         "objects": 1, "records_in": 0, "bad_records": 0, "rows_out": 0,
         "duplicates_dropped": 0, "seconds": 0, "worker_pid": os.getpid(), "files": [],
         "shuffle_files": []}
    r.update(fields)
    return json.dumps(r).encode()
while True:
    n = int.from_bytes(read(8), "little")
    if n == 0:
        break
    body = read(n)
    with open(base + ".log", "ab") as log:
        log.write(body.replace(b"\n", b" ") + b"\n")
    if b"crash-once" in body and not os.path.exists(base + ".crashed"):
        open(base + ".crashed", "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    if b"progress" in body:
        os.write(3, b"running stage 'p' on object 'k'\n")
    if b"sleep" in body:
        time.sleep(1000)
    extra = ""
    if b"fork" in body:
        extra = str(subprocess.Popen(["sleep", "1000"]).pid)
    m = re.search(rb"attempt([\x00-\x17])", body)  # a small CBOR integer after its key
    stage = re.search(rb"stage_id([\x00-\x17])", body)
    part = re.search(rb"partition([\x00-\x17])", body)
    task = "s%dp%d" % (stage.group(1)[0], part.group(1)[0]) if stage and part else "t"
    if b"wrong-task" in body:
        task = "zz"
    sys.stdout.write(report(objects=999).decode() + "\n")
    sys.stdout.flush()
    line = report(task=task, attempt=m.group(1)[0] if m else 1, error=extra)
    os.write(4, len(line).to_bytes(8, "little") + line)
)PY";

class FakeWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
    signal(SIGPIPE, SIG_IGN);  // as sluice's main does
    char tmpl[] = "/tmp/sluice-pool-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    binary_ = dir_ + "/fake-worker";
    std::ofstream(binary_) << kFakeWorker;
    chmod(binary_.c_str(), 0755);
    // SLUICE_FAILPOINT passes the workers' scrubbed environment: the fake's files go there.
    setenv("SLUICE_FAILPOINT", (dir_ + "/fake").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("SLUICE_FAILPOINT");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::vector<std::string> Log() const {
    std::ifstream in(dir_ + "/fake.log");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  PoolOptions Options(int workers) const {
    PoolOptions options;
    options.workers = workers;
    options.worker_binary = binary_;
    options.task_timeout_seconds = 60;
    options.task_memory_bytes = int64_t{1} << 30;
    return options;
  }

  static std::vector<plan::Fragment> Fragments(const std::vector<std::string>& run_ids) {
    std::vector<plan::Fragment> out;
    for (size_t i = 0; i < run_ids.size(); ++i) {
      plan::Fragment f;
      f.run_id = run_ids[i];
      f.partition = static_cast<int32_t>(i);
      out.push_back(std::move(f));
    }
    return out;
  }

  std::unique_ptr<SupervisedChild> StartChild() const {
    auto child = SupervisedChild::Start({binary_, "worker"});
    EXPECT_TRUE(child.ok()) << child.status().ToString();
    return child.ok() ? std::move(*child) : nullptr;
  }

  static ProcessResult Call(SupervisedChild* child, const std::string& request,
                            const ProcessLimits& limits = {}) {
    return child->Call(std::vector<uint8_t>(request.begin(), request.end()), limits);
  }

  std::string dir_;
  std::string binary_;
};

bool Dead(pid_t pid) { return WaitUntilGone(pid, std::chrono::seconds(10)); }

TEST_F(FakeWorkerTest, OneWorkerRunsEveryTaskAndStdoutCannotForgeAReport) {
  WorkerPool pool(Options(1));
  auto reports = pool.RunStage(Fragments({"a", "b", "c", "d", "e"}));
  ASSERT_TRUE(reports.ok()) << reports.status().ToString();
  ASSERT_EQ(reports->size(), 5u);
  std::set<int64_t> pids;
  for (const auto& r : *reports) {
    pids.insert(r.worker_pid);
    EXPECT_EQ(r.objects, 1) << "the report printed on stdout was taken";
  }
  EXPECT_EQ(pids.size(), 1u);
  EXPECT_EQ(pool.workers_started(), 1);
  // A second stage reuses the same process.
  auto more = pool.RunStage(Fragments({"f", "g"}));
  ASSERT_TRUE(more.ok()) << more.status().ToString();
  EXPECT_EQ((*more)[0].worker_pid, *pids.begin());
  EXPECT_EQ(pool.workers_started(), 1);
  EXPECT_EQ(Log().size(), 7u);
}

TEST_F(FakeWorkerTest, ACrashRetriesOnlyItsTaskOnAFreshWorker) {
  WorkerPool pool(Options(1));
  auto reports = pool.RunStage(Fragments({"a", "b", "crash-once", "d"}));
  ASSERT_TRUE(reports.ok()) << reports.status().ToString();
  // One request per task, plus the crashed one's retry: the tasks before it are not run again.
  const std::vector<std::string> log = Log();
  ASSERT_EQ(log.size(), 5u);
  EXPECT_NE(log[2].find("crash-once"), std::string::npos);
  EXPECT_NE(log[3].find("crash-once"), std::string::npos);
  EXPECT_EQ((*reports)[2].attempt, 2);
  EXPECT_EQ((*reports)[3].attempt, 1);
  EXPECT_EQ((*reports)[0].worker_pid, (*reports)[1].worker_pid);
  EXPECT_NE((*reports)[1].worker_pid, (*reports)[2].worker_pid);
  EXPECT_EQ((*reports)[2].worker_pid, (*reports)[3].worker_pid);
  EXPECT_EQ(pool.workers_started(), 2);
}

// A report for another task would hand the next stage the wrong files: the worker is replaced
// and the task tried again, and a worker that keeps doing it fails the stage.
TEST_F(FakeWorkerTest, AReportForAnotherTaskIsNotTaken) {
  WorkerPool pool(Options(1));
  auto reports = pool.RunStage(Fragments({"a", "wrong-task"}));
  ASSERT_FALSE(reports.ok());
  EXPECT_NE(reports.status().message().find("worker for task s0p1 attempt 3 answered for task zz"),
            std::string::npos)
      << reports.status().message();
  auto good = pool.RunStage(Fragments({"a", "b"}));
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ((*good)[1].task, "s0p1");
}

TEST_F(FakeWorkerTest, AWorkerKilledWhileIdleIsReplacedWithoutARetry) {
  WorkerPool pool(Options(1));
  auto first = pool.RunStage(Fragments({"a"}));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const pid_t idle = static_cast<pid_t>((*first)[0].worker_pid);
  ASSERT_EQ(kill(idle, SIGKILL), 0);
  ASSERT_TRUE(Dead(idle));
  auto second = pool.RunStage(Fragments({"b"}));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)[0].attempt, 1);
  EXPECT_NE((*second)[0].worker_pid, idle);
  EXPECT_EQ(pool.workers_started(), 2);
}

TEST_F(FakeWorkerTest, ManyTasksOnTwoWorkersStartTwoProcesses) {
  WorkerPool pool(Options(2));
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) ids.push_back("t" + std::to_string(i));
  auto reports = pool.RunStage(Fragments(ids));
  ASSERT_TRUE(reports.ok()) << reports.status().ToString();
  std::set<int64_t> pids;
  for (const auto& r : *reports) pids.insert(r.worker_pid);
  EXPECT_LE(pids.size(), 2u);
  EXPECT_LE(pool.workers_started(), 2);
}

TEST_F(FakeWorkerTest, ATimedOutTaskKillsItsWorkerAndIsNotRetried) {
  PoolOptions options = Options(1);
  options.task_timeout_seconds = 1;
  WorkerPool pool(options);
  auto reports = pool.RunStage(Fragments({"sleep"}));
  ASSERT_FALSE(reports.ok());
  EXPECT_NE(reports.status().message().find("its time limit"), std::string::npos)
      << reports.status().ToString();
  EXPECT_EQ(Log().size(), 1u);
  // The next stage gets a fresh worker.
  auto next = pool.RunStage(Fragments({"a"}));
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(pool.workers_started(), 2);
}

TEST_F(FakeWorkerTest, ProgressAndChildrenOfOneRequestDoNotReachTheNext) {
  auto child = StartChild();
  ASSERT_NE(child, nullptr);
  ProcessResult first = Call(child.get(), "progress fork");
  ASSERT_EQ(first.end, End::kReplied);
  EXPECT_EQ(first.last_progress, "running stage 'p' on object 'k'");
  auto report = exec::TaskReport::FromJsonLine(first.stdout_text);
  ASSERT_TRUE(report.ok()) << first.stdout_text;
  const pid_t leftover = std::atoi(report->error.c_str());
  ASSERT_GT(leftover, 0);
  EXPECT_TRUE(Dead(leftover)) << "a request's child outlived it";
  ProcessResult second = Call(child.get(), "quiet");
  ASSERT_EQ(second.end, End::kReplied);
  EXPECT_EQ(second.last_progress, "");
  EXPECT_TRUE(child->Alive());
  const pid_t pid = child->pid();
  EXPECT_EQ(child->Stop(std::chrono::seconds(5)).end, End::kExited);
  EXPECT_TRUE(Dead(pid));
}

TEST_F(FakeWorkerTest, ARequestPastItsTimeLimitKillsTheChild) {
  auto child = StartChild();
  ASSERT_NE(child, nullptr);
  ProcessLimits limits;
  limits.timeout = std::chrono::milliseconds(500);
  ProcessResult r = Call(child.get(), "progress sleep", limits);
  EXPECT_EQ(r.end, End::kTimedOut);
  EXPECT_EQ(r.last_progress, "running stage 'p' on object 'k'");
  EXPECT_FALSE(child->Alive());
  EXPECT_TRUE(Dead(child->pid()));
}

TEST(Frame, IsALittleEndianLengthThenTheBytes) {
  EXPECT_EQ(Frame("ab", 2), std::string("\x02\0\0\0\0\0\0\0ab", 10));
  EXPECT_EQ(Frame(nullptr, 0), std::string(8, '\0'));
}

}  // namespace
}  // namespace sluice::dist
