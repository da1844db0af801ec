#include "dist/stage_scheduler.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iterator>
#include <utility>

namespace sluice::dist {

arrow::Status CheckShuffleFiles(
    const exec::TaskReport& report, const plan::Fragment& task, int files,
    const std::function<std::string(const plan::Fragment&, int32_t, int32_t)>& key) {
  if (static_cast<int>(report.shuffle_files.size()) != files) {
    return arrow::Status::IOError("task ", report.task, " attempt ", report.attempt, " reported ",
                                  report.shuffle_files.size(), " shuffle files, expected ", files);
  }
  if (files > 0 && !key) {
    return arrow::Status::Invalid("internal: a stage with shuffle files but no names for them");
  }
  for (int32_t p = 0; p < files; ++p) {
    const std::string want = key(task, report.attempt, p);
    const std::string& got = report.shuffle_files[static_cast<size_t>(p)].key;
    if (got != want) {
      return arrow::Status::IOError("task ", report.task, " attempt ", report.attempt,
                                    " reported shuffle file '", got, "', expected '", want, "'");
    }
  }
  return arrow::Status::OK();
}

StageScheduler::StageScheduler(PoolOptions pool, SchedulerOptions options)
    : options_(std::move(options)) {
  pool.on_report = [this](const exec::TaskReport& r) { OnReport(r); };
  pool_ = std::make_unique<WorkerPool>(std::move(pool));
  // The pool already reports to OnReport.
  runner_ = [this](std::vector<plan::Fragment> fragments, const ReportFn&) {
    return pool_->RunStage(std::move(fragments));
  };
}

StageScheduler::StageScheduler(TaskRunner runner, SchedulerOptions options)
    : options_(std::move(options)), runner_(std::move(runner)) {}

StageScheduler::~StageScheduler() = default;

void StageScheduler::StartWorkers() {
  if (pool_ != nullptr) pool_->StartWorkers();
}

void StageScheduler::OnReport(const exec::TaskReport& report) {
  if (progress_) progress_->Advance(1, report.rows_out);
  if (options_.on_report) options_.on_report(report);
}

arrow::Status StageScheduler::Run(const std::vector<ScheduledStage>& stages,
                                  std::vector<StageResult>* done) {
  done->assign(stages.size(), StageResult{});
  for (size_t i = 0; i < stages.size(); ++i) {
    for (size_t producer : stages[i].producers) {
      if (producer >= i) {
        return arrow::Status::Invalid("internal: ", stages[i].name,
                                      " reads a stage that does not come before it");
      }
    }
  }
  int wave_index = 0;
  for (size_t count = 0; count < stages.size(); ++wave_index) {
    // Every stage whose producers are done; there is one at least, as producers come first.
    std::vector<size_t> wave;
    for (size_t i = 0; i < stages.size(); ++i) {
      bool ready = !(*done)[i].finished();
      for (size_t producer : stages[i].producers) ready = ready && (*done)[producer].finished();
      if (ready) wave.push_back(i);
    }
    ARROW_RETURN_NOT_OK(RunWave(stages, wave, wave_index, done));
    count += wave.size();
  }
  return arrow::Status::OK();
}

arrow::Status StageScheduler::RunWave(const std::vector<ScheduledStage>& stages,
                                      const std::vector<size_t>& wave, int wave_index,
                                      std::vector<StageResult>* done) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<plan::Fragment> fragments;
  std::vector<size_t> counts;
  std::string names;
  for (size_t index : wave) {
    const ScheduledStage& stage = stages[index];
    ARROW_ASSIGN_OR_RAISE(auto more, stage.fragments(*done));
    counts.push_back(more.size());
    for (auto& f : more) fragments.push_back(std::move(f));
    names += (names.empty() ? "" : ", ") + stage.name;
  }
  const std::string what = options_.label.empty() ? names : options_.label + " " + names;
  auto named = [&](const arrow::Status& st) {
    return st.ok() || options_.label.empty() ? st : st.WithMessage(what, ": ", st.message());
  };
  if (options_.wave_progress && isatty(fileno(stderr)) != 0) {
    Progress::Options o;
    o.total = static_cast<int64_t>(fragments.size());
    o.unit = "tasks";
    o.secondary_unit = "rows";
    progress_ = std::make_unique<Progress>(what, o);
  }
  // The runner gets a copy: the fragments name the files each report must list.
  auto reports = runner_(fragments, [this](const exec::TaskReport& r) { OnReport(r); });
  if (progress_) progress_->Finish();
  progress_.reset();
  if (!reports.ok()) return named(reports.status());
  if (reports->size() != fragments.size()) {
    return arrow::Status::Invalid("internal: ", reports->size(), " reports for ", fragments.size(),
                                  " tasks");
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  size_t next = 0;
  for (size_t w = 0; w < wave.size(); ++w) {
    const ScheduledStage& stage = stages[wave[w]];
    StageResult& result = (*done)[wave[w]];
    for (size_t t = next; t < next + counts[w]; ++t) {
      ARROW_RETURN_NOT_OK(named(CheckShuffleFiles((*reports)[t], fragments[t], stage.shuffle_files,
                                                  stage.shuffle_file_key)));
    }
    result.reports.assign(
        std::make_move_iterator(reports->begin() + static_cast<std::ptrdiff_t>(next)),
        std::make_move_iterator(reports->begin() + static_cast<std::ptrdiff_t>(next + counts[w])));
    result.seconds = seconds;
    result.wave = wave_index;
    next += counts[w];
  }
  return arrow::Status::OK();
}

}  // namespace sluice::dist
