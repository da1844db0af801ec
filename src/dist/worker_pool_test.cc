// Long-lived workers, with the fake `sluice worker` of fake_worker_testing.h, so that each guard
// of SupervisedChild and WorkerPool can be provoked on demand: the request's text picks the fake's
// behaviour.
#include <signal.h>

#include <set>

#include "common/proc_stat.h"
#include "dist/fake_worker_testing.h"
#include "dist/worker_pool.h"
#include "dist/worker_process.h"

namespace sluice::dist {
namespace {

using End = ProcessResult::End;

using testing::FakeWorkerTest;

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

TEST_F(FakeWorkerTest, WorkersStartedAheadRunTheFirstStage) {
  WorkerPool pool(Options(2));
  pool.StartWorkers();
  EXPECT_EQ(pool.workers_started(), 2);
  pool.StartWorkers();  // already running: none more
  EXPECT_EQ(pool.workers_started(), 2);
  auto reports = pool.RunStage(Fragments({"a", "b", "c"}));
  ASSERT_TRUE(reports.ok()) << reports.status().ToString();
  EXPECT_EQ(reports->size(), 3u);
  EXPECT_EQ(pool.workers_started(), 2);
}

// A pool's memory pool and CPU threads reach its workers' command lines, and nothing when unset.
TEST_F(FakeWorkerTest, WorkersAreAskedForThePoolsMemoryPoolAndCpuThreads) {
  PoolOptions options = Options(1);
  options.memory_pool = "jemalloc";
  options.cpu_threads = 3;
  WorkerPool with(options);
  ASSERT_TRUE(with.RunStage(Fragments({"a"})).ok());
  WorkerPool without(Options(1));
  ASSERT_TRUE(without.RunStage(Fragments({"b"})).ok());
  const std::vector<std::string> argv = Log("argv");
  ASSERT_EQ(argv.size(), 2u);
  for (const std::string flag : {"--memory-pool jemalloc", "--cpu-threads 3"}) {
    EXPECT_NE(argv[0].find(flag), std::string::npos) << argv[0];
    EXPECT_EQ(argv[1].find(flag.substr(0, flag.find(' '))), std::string::npos) << argv[1];
  }
}

TEST(CpuThreadsPerWorker, DividesTheCoresAmongTheWorkers) {
  EXPECT_EQ(CpuThreadsPerWorker(2, 2), 1);
  EXPECT_EQ(CpuThreadsPerWorker(2, 16), 8);
  EXPECT_EQ(CpuThreadsPerWorker(3, 16), 5);
  EXPECT_EQ(CpuThreadsPerWorker(1, 2), 2);
  EXPECT_EQ(CpuThreadsPerWorker(8, 2), 1);  // more workers than cores: one each
  EXPECT_EQ(CpuThreadsPerWorker(2, 0), 1);  // cores unknown (hardware_concurrency() is 0)
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
