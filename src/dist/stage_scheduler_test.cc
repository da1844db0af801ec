// The stage scheduler: waves, the shuffle-file check and failures with an injected runner (no
// processes), and one run on a real pool of the fake workers of fake_worker_testing.h, where a
// lost task's retry is what the next stage reads.
#include "dist/stage_scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "dist/fake_worker_testing.h"

namespace sluice::dist {
namespace {

// `tasks` fragments of stage `id`, each with `run_id` (which the fake worker reads).
std::vector<plan::Fragment> StageFragments(int id, int tasks, const std::string& run_id = "q") {
  std::vector<plan::Fragment> out;
  for (int t = 0; t < tasks; ++t) {
    plan::Fragment f;
    f.run_id = run_id;
    f.stage_id = id;
    f.partition = t;
    f.root = testing::AnyPlan();
    out.push_back(std::move(f));
  }
  return out;
}

// "sh/<task>-<attempt>/part-<file>.arrow", as the fake worker names its one shuffle file.
std::string AttemptKey(const plan::Fragment& task, int32_t attempt, int32_t file) {
  return "sh/" + task.task_name() + "-" + std::to_string(attempt) + "/part-" +
         std::to_string(file) + ".arrow";
}

// Shuffle files with these keys, as a report lists them.
std::vector<exec::OutputFile> Files(const std::vector<std::string>& keys) {
  std::vector<exec::OutputFile> out(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) out[i].key = keys[i];
  return out;
}

ScheduledStage Stage(int id, int tasks, std::vector<size_t> producers = {}) {
  ScheduledStage s;
  s.id = id;
  s.name = "stage " + std::to_string(id) + " (test)";
  s.producers = std::move(producers);
  s.fragments = [id, tasks](const std::vector<StageResult>&) { return StageFragments(id, tasks); };
  return s;
}

// Runs every fragment "successfully" as attempt `attempt`, reporting the shuffle files that
// `files` names for it, and records which stages each wave held.
class RecordingRunner {
 public:
  int attempt = 1;
  std::function<std::vector<exec::OutputFile>(const plan::Fragment&, int32_t)> files;
  std::vector<std::set<int>> waves;

  TaskRunner AsRunner() {
    return [this](std::vector<plan::Fragment> fragments,
                  const ReportFn& on_report) -> arrow::Result<std::vector<exec::TaskReport>> {
      std::set<int> stages;
      std::vector<exec::TaskReport> reports;
      for (const plan::Fragment& f : fragments) {
        stages.insert(f.stage_id);
        exec::TaskReport r;
        r.task = f.task_name();
        r.attempt = attempt;
        r.rows_out = 10;
        if (files) r.shuffle_files = files(f, attempt);
        if (on_report) on_report(r);
        reports.push_back(std::move(r));
      }
      waves.push_back(stages);
      return reports;
    };
  }
};

TEST(StageScheduler, RunsEveryReadyStageInOneWaveAndHandsEachStageItsProducersReports) {
  RecordingRunner runner;
  std::vector<ScheduledStage> stages = {Stage(1, 2), Stage(2, 3), Stage(3, 2, {0, 1}),
                                        Stage(4, 1, {2}), Stage(5, 1)};
  std::vector<std::string> seen_by_3;
  stages[2].fragments = [&](const std::vector<StageResult>& done) {
    EXPECT_TRUE(done[0].finished() && done[1].finished());
    EXPECT_FALSE(done[3].finished());
    for (size_t producer : {0, 1}) {
      for (const auto& r : done[producer].reports) seen_by_3.push_back(r.task);
    }
    return StageFragments(3, 2);
  };
  int reported = 0;
  SchedulerOptions options;
  options.on_report = [&](const exec::TaskReport&) { ++reported; };
  StageScheduler scheduler(runner.AsRunner(), options);
  std::vector<StageResult> done;
  ASSERT_TRUE(scheduler.Run(stages, &done).ok());
  EXPECT_EQ(runner.waves, (std::vector<std::set<int>>{{1, 2, 5}, {3}, {4}}));
  EXPECT_EQ(seen_by_3, (std::vector<std::string>{"s1p0", "s1p1", "s2p0", "s2p1", "s2p2"}));
  ASSERT_EQ(done.size(), 5u);
  EXPECT_EQ(done[1].reports.size(), 3u);
  EXPECT_EQ(done[1].reports[2].task, "s2p2");
  EXPECT_EQ(done[3].reports[0].task, "s4p0");
  const std::vector<int> waves = {done[0].wave, done[1].wave, done[2].wave, done[3].wave,
                                  done[4].wave};
  EXPECT_EQ(waves, (std::vector<int>{0, 0, 1, 2, 0}));
  EXPECT_EQ(reported, 9);
}

TEST(StageScheduler, AReportMustNameExactlyTheShuffleFilesOfItsOwnAttempt) {
  struct Case {
    std::function<std::vector<exec::OutputFile>(const plan::Fragment&, int32_t)> files;
    std::string error;  // empty: accepted
  };
  const std::vector<Case> cases = {
      {[](const plan::Fragment& f, int32_t a) {
         return Files({AttemptKey(f, a, 0), AttemptKey(f, a, 1)});
       },
       ""},
      {[](const plan::Fragment& f, int32_t a) { return Files({AttemptKey(f, a, 0)}); },
       "query q-x stage 1 (test): task s1p0 attempt 2 reported 1 shuffle files, expected 2"},
      // Another attempt's file: the next stage would read stale output.
      {[](const plan::Fragment& f, int32_t) {
         return Files({AttemptKey(f, 1, 0), AttemptKey(f, 1, 1)});
       },
       "query q-x stage 1 (test): task s1p0 attempt 2 reported shuffle file "
       "'sh/s1p0-1/part-0.arrow', expected 'sh/s1p0-2/part-0.arrow'"},
  };
  for (const Case& c : cases) {
    RecordingRunner runner;
    runner.attempt = 2;
    runner.files = [&](const plan::Fragment& f, int32_t a) {
      return f.stage_id == 1 ? c.files(f, a) : Files({});
    };
    std::vector<ScheduledStage> stages = {Stage(1, 2), Stage(2, 1, {0})};
    stages[0].shuffle_files = 2;
    stages[0].shuffle_file_key = AttemptKey;
    SchedulerOptions options;
    options.label = "query q-x";
    StageScheduler scheduler(runner.AsRunner(), options);
    std::vector<StageResult> done;
    arrow::Status st = scheduler.Run(stages, &done);
    if (c.error.empty()) {
      EXPECT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(runner.waves.size(), 2u);
      continue;
    }
    EXPECT_EQ(st.message(), c.error);
    EXPECT_EQ(runner.waves.size(), 1u) << "a stage ran on unchecked files";
    EXPECT_FALSE(done[0].finished());
  }
}

TEST(StageScheduler, AFailedWaveStopsTheRunAndKeepsWhatFinished) {
  for (const std::string label : {"query q-x", ""}) {
    int waves = 0;
    TaskRunner runner = [&](std::vector<plan::Fragment> fragments,
                            const ReportFn&) -> arrow::Result<std::vector<exec::TaskReport>> {
      if (++waves == 2) return arrow::Status::IOError("task s2p0 failed 3 times");
      std::vector<exec::TaskReport> reports(fragments.size());
      for (size_t i = 0; i < fragments.size(); ++i) reports[i].task = fragments[i].task_name();
      return reports;
    };
    std::vector<ScheduledStage> stages = {Stage(1, 1), Stage(2, 1, {0}), Stage(3, 1, {1})};
    SchedulerOptions options;
    options.label = label;
    StageScheduler scheduler(runner, options);
    std::vector<StageResult> done;
    arrow::Status st = scheduler.Run(stages, &done);
    EXPECT_TRUE(st.IsIOError()) << st.ToString();
    // With a label the wave's stages are named; without one the runner's message is the run's.
    EXPECT_EQ(st.message(), label.empty() ? "task s2p0 failed 3 times"
                                          : "query q-x stage 2 (test): task s2p0 failed 3 times");
    EXPECT_EQ(waves, 2);
    ASSERT_EQ(done.size(), 3u);
    EXPECT_TRUE(done[0].finished());
    EXPECT_EQ(done[0].reports[0].task, "s1p0");
    EXPECT_FALSE(done[1].finished());
    EXPECT_FALSE(done[2].finished());
  }
}

TEST(StageScheduler, AStageMustComeAfterItsProducers) {
  RecordingRunner runner;
  StageScheduler scheduler(runner.AsRunner(), {});
  std::vector<StageResult> done;
  arrow::Status st = scheduler.Run({Stage(1, 1, {1}), Stage(2, 1)}, &done);
  EXPECT_TRUE(st.IsInvalid()) << st.ToString();
  EXPECT_TRUE(runner.waves.empty());
}

using testing::FakeWorkerTest;

// One pool for the whole run: the second stage's task runs in a worker the first stage started,
// and it is handed the files of the attempt that succeeded, not of the one that was lost.
TEST_F(FakeWorkerTest, OnePoolRunsEveryStageAndTheNextStageReadsTheRetriedAttempt) {
  std::vector<std::string> read_by_2;
  ScheduledStage map;
  map.id = 1;
  map.name = "stage 1 (map)";
  map.fragments = [](const std::vector<StageResult>&) {
    std::vector<plan::Fragment> out = StageFragments(1, 2, "shuffle");
    out[1].run_id = "shuffle crash-once";
    return out;
  };
  map.shuffle_files = 1;
  map.shuffle_file_key = AttemptKey;
  ScheduledStage final_stage;
  final_stage.id = 2;
  final_stage.name = "stage 2 (final)";
  final_stage.producers = {0};
  final_stage.fragments = [&](const std::vector<StageResult>& done) {
    for (const auto& r : done[0].reports) read_by_2.push_back(r.shuffle_files[0].key);
    return StageFragments(2, 1);
  };
  StageScheduler scheduler(Options(1), SchedulerOptions{"query q-x", true, nullptr});
  std::vector<StageResult> done;
  arrow::Status st = scheduler.Run({map, final_stage}, &done);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(read_by_2,
            (std::vector<std::string>{"sh/s1p0-1/part-0.arrow", "sh/s1p1-2/part-0.arrow"}));
  EXPECT_EQ(done[0].reports[1].attempt, 2);
  EXPECT_EQ(done[1].reports[0].task, "s2p0");
  EXPECT_EQ(done[1].reports[0].worker_pid, done[0].reports[1].worker_pid);
  EXPECT_EQ(Log().size(), 4u);  // three tasks and one retry
}

}  // namespace
}  // namespace sluice::dist
