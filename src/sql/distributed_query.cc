#include "sql/distributed_query.h"

#include <unistd.h>

#include <arrow/filesystem/filesystem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "common/progress.h"
#include "dist/driver_tag.h"
#include "dist/worker_pool.h"
#include "exec/shuffle.h"
#include "sql/executor.h"
#include "sql/query_plan_codec.h"
#include "sql/stage_task.h"

namespace sluice::sql {

namespace {

// "<driver tag>-<random>": the tag lets `sluice gc` remove the shuffle folder of a query whose
// driver was killed, and never one whose driver still runs.
std::string NewQueryId() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
  char id[17];
  std::snprintf(id, sizeof(id), "%016llx", static_cast<unsigned long long>(gen()));
  return dist::DriverTag() + "-" + id;
}

std::string Kib(int64_t bytes) {
  char out[32];
  std::snprintf(out, sizeof(out), "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  return out;
}

std::string Ms(double seconds) {
  char out[32];
  std::snprintf(out, sizeof(out), "%.1f ms", seconds * 1000.0);
  return out;
}

// Removes the query's shuffle folder when the query ends, whatever the outcome.
class ShuffleFolder {
 public:
  ShuffleFolder(std::shared_ptr<storage::ObjectStore> store, std::string prefix)
      : store_(std::move(store)), prefix_(std::move(prefix)) {}
  ~ShuffleFolder() {
    const std::string path = store_->FileSystemPath(prefix_);
    auto info = store_->filesystem()->GetFileInfo(path);
    if (info.ok() && info->type() == arrow::fs::FileType::NotFound) return;  // nothing written
    arrow::Status st = info.ok() ? store_->filesystem()->DeleteDir(path) : info.status();
    if (!st.ok()) {
      std::fprintf(stderr, "sluice: cannot remove shuffle folder %s: %s\n", prefix_.c_str(),
                   st.ToString().c_str());
    }
  }
  ShuffleFolder(const ShuffleFolder&) = delete;
  ShuffleFolder& operator=(const ShuffleFolder&) = delete;
  const std::string& prefix() const { return prefix_; }

 private:
  std::shared_ptr<storage::ObjectStore> store_;
  std::string prefix_;
};

// Swaps a scan's table for one with a subset of its files while a map task's plan is encoded.
// The driver owns the plan and nothing else reads it meanwhile.
class ScopedFiles {
 public:
  ScopedFiles(const PlanNode* scan, std::vector<std::string> files)
      : scan_(const_cast<PlanNode*>(scan)), saved_(scan_->table) {
    auto subset = std::make_shared<TableSource>(*saved_);
    subset->files = std::move(files);
    scan_->table = std::move(subset);
  }
  ~ScopedFiles() { scan_->table = saved_; }
  ScopedFiles(const ScopedFiles&) = delete;
  ScopedFiles& operator=(const ScopedFiles&) = delete;

 private:
  PlanNode* scan_;
  std::shared_ptr<TableSource> saved_;
};

plan::Fragment StageFragment(const std::string& query_id, int stage, int task,
                             const std::string& store_url, std::vector<uint8_t> body) {
  plan::Fragment f;
  f.run_id = "q-" + query_id;
  f.stage_id = stage;
  f.partition = task;
  f.session.store_url = store_url;
  f.operators.push_back(plan::RunSqlStage{std::move(body)});
  return f;
}

std::string StagePrefix(const ShuffleFolder& folder, int stage) {
  return folder.prefix() + "/s" + std::to_string(stage);
}

// Checks that a report names the files its task had to write, under its own attempt's folder:
// the next stage reads exactly these, never another attempt's.
arrow::Status CheckReportFiles(const exec::TaskReport& report, const std::string& prefix,
                               int partitions) {
  if (static_cast<int>(report.shuffle_files.size()) != partitions) {
    return arrow::Status::IOError("task ", report.task, " attempt ", report.attempt, " reported ",
                                  report.shuffle_files.size(), " shuffle files, expected ",
                                  partitions);
  }
  for (int p = 0; p < partitions; ++p) {
    const std::string want = ShuffleFileKey(prefix, report.task, report.attempt, p);
    if (report.shuffle_files[static_cast<size_t>(p)].key != want) {
      return arrow::Status::IOError(
          "task ", report.task, " attempt ", report.attempt, " reported shuffle file '",
          report.shuffle_files[static_cast<size_t>(p)].key, "', expected '", want, "'");
    }
  }
  return arrow::Status::OK();
}

struct CutResult {
  std::shared_ptr<arrow::Table> table;
  int64_t shuffle_bytes = 0;
};

arrow::Result<CutResult> RunCut(const AggregateCut& cut, const DistributedOptions& options,
                                const std::string& query_id, const ShuffleFolder& folder,
                                std::string* analyze) {
  dist::PoolOptions pool;
  pool.workers = options.workers;
  pool.max_attempts = options.max_attempts;
  pool.worker_binary =
      options.worker_binary.empty() ? dist::SelfExecutable() : options.worker_binary;
  const int map_stage = cut.map_stage;
  const int final_stage = cut.map_stage + 1;
  const int partitions = FinalPartitionCount(cut, options.workers);
  CutResult out;

  // Map stage: contiguous groups of the table's files.
  const std::vector<std::string>& files = cut.scan->table->files;
  const int map_tasks = MapTaskCount(files.size(), options.workers);
  std::vector<plan::Fragment> maps;
  const std::vector<std::string> partial_names = cut.partial->OutputNames();
  const std::vector<const PlanNode*> scans = ScansOf(*cut.partial);
  const auto at = std::find(scans.begin(), scans.end(), cut.scan);
  if (at == scans.end()) {
    return arrow::Status::Invalid("internal: the split scan is not in its cut");
  }
  const auto split_scan = static_cast<int32_t>(at - scans.begin());
  for (int t = 0; t < map_tasks; ++t) {
    const size_t begin = files.size() * static_cast<size_t>(t) / static_cast<size_t>(map_tasks);
    const size_t end = files.size() * static_cast<size_t>(t + 1) / static_cast<size_t>(map_tasks);
    StageTask task;
    task.role = StageTask::Role::kMap;
    {
      ScopedFiles subset(cut.scan,
                         std::vector<std::string>(files.begin() + begin, files.begin() + end));
      ARROW_ASSIGN_OR_RAISE(task.plan, EncodeQueryPlan(*cut.partial, partial_names));
    }
    task.split_scan = split_scan;
    task.partition_keys = cut.final_aggregate->keys;
    task.partitions = partitions;
    task.output_prefix = StagePrefix(folder, map_stage);
    ARROW_ASSIGN_OR_RAISE(auto body, EncodeStageTask(task));
    maps.push_back(StageFragment(query_id, map_stage, t, options.store_url, std::move(body)));
  }
  // A progress line per stage, on a terminal only: a query's stderr stays clean elsewhere.
  std::unique_ptr<Progress> progress;
  const bool tty = isatty(fileno(stderr)) != 0;
  auto start_progress = [&](int stage, const char* role, size_t tasks) {
    if (!tty) return;
    Progress::Options o;
    o.total = static_cast<int64_t>(tasks);
    o.unit = "tasks";
    o.secondary_unit = "rows";
    progress = std::make_unique<Progress>(
        "query q-" + query_id + " stage " + std::to_string(stage) + " (" + role + ")", o);
  };
  pool.on_report = [&progress](const exec::TaskReport& r) {
    if (progress) progress->Advance(1, r.rows_out);
  };
  // One pool of long-lived workers for the map and the final stage.
  dist::WorkerPool workers(pool);
  start_progress(map_stage, "map", maps.size());
  auto map_reports = workers.RunStage(std::move(maps));
  if (progress) progress->Finish();
  progress.reset();
  if (!map_reports.ok()) {
    return map_reports.status().WithMessage("query q-", query_id, " stage ", map_stage,
                                            " (map): ", map_reports.status().message());
  }
  for (const auto& r : *map_reports) {
    ARROW_RETURN_NOT_OK(CheckReportFiles(r, StagePrefix(folder, map_stage), partitions));
  }

  // Final stage: partition p reads part-p of every map task's successful attempt.
  ARROW_ASSIGN_OR_RAISE(auto final_plan,
                        EncodeQueryPlan(*cut.final_aggregate, cut.final_aggregate->OutputNames()));
  std::vector<plan::Fragment> finals;
  std::vector<int64_t> read_bytes(static_cast<size_t>(partitions), 0);
  std::vector<std::string> read_from(static_cast<size_t>(partitions));
  for (int p = 0; p < partitions; ++p) {
    StageTask task;
    task.role = StageTask::Role::kFinal;
    task.plan = final_plan;
    task.partitions = 1;
    task.output_prefix = StagePrefix(folder, final_stage);
    for (const auto& r : *map_reports) {
      const exec::OutputFile& file = r.shuffle_files[static_cast<size_t>(p)];
      task.input_keys.push_back(file.key);
      task.input_blake3.push_back(file.blake3);
      read_bytes[static_cast<size_t>(p)] += file.bytes;
      read_from[static_cast<size_t>(p)] += (read_from[static_cast<size_t>(p)].empty() ? "" : ",") +
                                           r.task + "-" + std::to_string(r.attempt);
    }
    ARROW_ASSIGN_OR_RAISE(auto body, EncodeStageTask(task));
    finals.push_back(StageFragment(query_id, final_stage, p, options.store_url, std::move(body)));
  }
  start_progress(final_stage, "final", finals.size());
  auto final_reports = workers.RunStage(std::move(finals));
  if (progress) progress->Finish();
  progress.reset();
  if (!final_reports.ok()) {
    return final_reports.status().WithMessage("query q-", query_id, " stage ", final_stage,
                                              " (final): ", final_reports.status().message());
  }

  // Gather.
  ARROW_ASSIGN_OR_RAISE(auto schema, OutputSchema(*cut.final_aggregate));
  std::vector<std::shared_ptr<arrow::Table>> tables;
  for (const auto& r : *final_reports) {
    ARROW_RETURN_NOT_OK(CheckReportFiles(r, StagePrefix(folder, final_stage), 1));
    const exec::OutputFile& file = r.shuffle_files[0];
    ARROW_ASSIGN_OR_RAISE(
        auto t, exec::ReadShuffleFile(options.store.get(), file.key, file.blake3, *schema));
    tables.push_back(std::move(t));
  }
  ARROW_ASSIGN_OR_RAISE(out.table, arrow::ConcatenateTables(tables));

  if (analyze != nullptr) {
    for (const auto& r : *map_reports) {
      int64_t written = 0;
      for (const auto& f : r.shuffle_files) written += f.bytes;
      out.shuffle_bytes += written;
      *analyze += "  stage " + std::to_string(map_stage) + " (map) task " + r.task + " attempt " +
                  std::to_string(r.attempt) + ": files=" + std::to_string(r.objects) +
                  " rows_in=" + std::to_string(r.records_in) +
                  " rows_out=" + std::to_string(r.rows_out) + " shuffle_written=" + Kib(written) +
                  " in " + std::to_string(r.shuffle_files.size()) + " files time=" + Ms(r.seconds) +
                  "\n";
    }
    for (size_t p = 0; p < final_reports->size(); ++p) {
      const auto& r = (*final_reports)[p];
      *analyze +=
          "  stage " + std::to_string(final_stage) + " (final) task " + r.task + " attempt " +
          std::to_string(r.attempt) + ": rows_in=" + std::to_string(r.records_in) +
          " rows_out=" + std::to_string(r.rows_out) + " shuffle_read=" + Kib(read_bytes[p]) +
          " from " + std::to_string(r.objects) + " map tasks [" + read_from[p] +
          "] written=" + Kib(r.shuffle_files[0].bytes) + " time=" + Ms(r.seconds) + "\n";
    }
  }
  return out;
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Table>> RunDistributed(const BoundQuery& query,
                                                            const StagePlan& stages,
                                                            const DistributedOptions& options,
                                                            std::string* analyze) {
  if (stages.cuts.empty()) return arrow::Status::Invalid("internal: a plan without cuts");
  const std::string query_id = NewQueryId();
  ShuffleFolder folder(options.store, std::string(kShufflePrefix) + "q-" + query_id);
  NodeInputs inputs;
  for (const AggregateCut& cut : stages.cuts) {
    const auto start = std::chrono::steady_clock::now();
    ARROW_ASSIGN_OR_RAISE(CutResult result, RunCut(cut, options, query_id, folder, analyze));
    inputs[cut.final_aggregate] = result.table;
    if (analyze != nullptr) {
      *analyze +=
          "  stages " + std::to_string(cut.map_stage) + "-" + std::to_string(cut.map_stage + 1) +
          ": " +
          Ms(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()) +
          " wall, " + Kib(result.shuffle_bytes) + " shuffled\n";
    }
  }
  const auto start = std::chrono::steady_clock::now();
  ARROW_ASSIGN_OR_RAISE(auto table, Execute(*query.plan, query.names, nullptr, &inputs));
  if (analyze != nullptr) {
    *analyze +=
        "  stage " + std::to_string(stages.driver_stage) +
        " (driver): rows_out=" + std::to_string(table->num_rows()) + " time=" +
        Ms(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()) + "\n";
  }
  return table;
}

}  // namespace sluice::sql
