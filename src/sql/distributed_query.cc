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

// Swaps a scan's table for its share of the files while a map task's plan is encoded. The driver
// owns the plan and nothing else reads it meanwhile.
class ScopedShare {
 public:
  ScopedShare(const PlanNode* scan, SplitShare share)
      : scan_(const_cast<PlanNode*>(scan)), saved_(scan_->table) {
    auto subset = std::make_shared<TableSource>(*saved_);
    subset->files = std::move(share.files);
    subset->row_group_ranges = std::move(share.row_group_ranges);
    scan_->table = std::move(subset);
  }
  ~ScopedShare() { scan_->table = saved_; }
  ScopedShare(const ScopedShare&) = delete;
  ScopedShare& operator=(const ScopedShare&) = delete;

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

std::string TaskList(const std::vector<exec::TaskReport>& reports) {
  std::string out;
  for (const auto& r : reports) {
    out += (out.empty() ? "" : ",") + r.task + "-" + std::to_string(r.attempt);
  }
  return out;
}

// Runs the stages of one query, producers first, on one pool of long-lived workers.
class StageDriver {
 public:
  StageDriver(const StagePlan& plan, const DistributedOptions& options, std::string query_id,
              const ShuffleFolder& folder, std::string* analyze)
      : plan_(plan),
        options_(options),
        query_id_(std::move(query_id)),
        folder_(folder),
        analyze_(analyze),
        reports_(plan.stages.size()) {}

  arrow::Status RunAll() {
    dist::PoolOptions pool;
    pool.workers = options_.workers;
    pool.max_attempts = options_.max_attempts;
    pool.worker_binary =
        options_.worker_binary.empty() ? dist::SelfExecutable() : options_.worker_binary;
    pool.on_report = [this](const exec::TaskReport& r) {
      if (progress_) progress_->Advance(1, r.rows_out);
    };
    dist::WorkerPool workers(pool);
    // Stages whose inputs are all written run together as one wave (a join's two map stages,
    // say), so that a stage of few tasks does not leave workers idle.
    std::vector<bool> done(plan_.stages.size(), false);
    for (size_t finished = 0; finished < plan_.stages.size();) {
      std::vector<size_t> wave;
      for (size_t i = 0; i < plan_.stages.size(); ++i) {
        bool ready = !done[i];
        for (const StageInput& in : plan_.stages[i].inputs) {
          ready = ready && done[static_cast<size_t>(in.producer)];
        }
        if (ready) wave.push_back(i);
      }
      if (wave.empty()) return arrow::Status::Invalid("internal: stages that wait on each other");
      ARROW_RETURN_NOT_OK(RunWave(&workers, wave));
      for (size_t i : wave) done[i] = true;
      finished += wave.size();
    }
    if (analyze_ != nullptr) {
      *analyze_ += "  total shuffle: " + std::to_string(written_) + " bytes written, " +
                   std::to_string(read_) + " bytes read\n";
    }
    return arrow::Status::OK();
  }

  // The tables the driver reads in place of the gathered nodes.
  arrow::Result<NodeInputs> Gather() const {
    NodeInputs inputs;
    for (const StageInput& g : plan_.gathered) {
      ARROW_ASSIGN_OR_RAISE(auto schema, OutputSchema(*g.node));
      std::vector<std::shared_ptr<arrow::Table>> tables;
      for (const auto& r : reports_[static_cast<size_t>(g.producer)]) {
        const exec::OutputFile& file = r.shuffle_files[0];
        ARROW_ASSIGN_OR_RAISE(
            auto t, exec::ReadShuffleFile(options_.store.get(), file.key, file.blake3, *schema));
        tables.push_back(std::move(t));
      }
      ARROW_ASSIGN_OR_RAISE(inputs[g.node], arrow::ConcatenateTables(tables));
    }
    return inputs;
  }

 private:
  // The stage's tasks, and the bytes each reads from the shuffle.
  arrow::Result<std::vector<plan::Fragment>> Fragments(const Stage& stage,
                                                       std::vector<int64_t>* read_bytes) {
    const std::string prefix = StagePrefix(folder_, stage.id);
    const std::vector<std::string> names = stage.root->OutputNames();
    StageTask base;
    base.role = StageRoleName(stage.role);
    base.output_prefix = prefix;
    if (!stage.gather) {
      base.output_keys = stage.output_keys;
      base.partitions = stage.partitions;
    }
    std::vector<plan::Fragment> out;
    if (stage.split != nullptr) {
      // Map stage: contiguous runs of the split table's row groups (or files).
      const std::vector<const PlanNode*> scans = ScansOf(*stage.root);
      const auto at = std::find(scans.begin(), scans.end(), stage.split);
      if (at == scans.end()) {
        return arrow::Status::Invalid("internal: the split is not in its stage");
      }
      base.split_scan = static_cast<int32_t>(at - scans.begin());
      std::vector<SplitShare> shares = SplitShares(*stage.split->table, stage.tasks);
      for (size_t t = 0; t < shares.size(); ++t) {
        StageTask task = base;
        {
          ScopedShare subset(stage.split, std::move(shares[t]));
          ARROW_ASSIGN_OR_RAISE(task.plan, EncodeQueryPlan(*stage.root, names));
        }
        ARROW_ASSIGN_OR_RAISE(auto body, EncodeStageTask(task));
        out.push_back(StageFragment(query_id_, stage.id, static_cast<int>(t), options_.store_url,
                                    std::move(body)));
        read_bytes->push_back(0);
      }
      return out;
    }
    // Partitioned stage: task p reads part p of every task of each producer's successful
    // attempt, named by the reports (never a file found by listing).
    ARROW_ASSIGN_OR_RAISE(base.plan, EncodeQueryPlan(*stage.root, names));
    const std::vector<const PlanNode*> nodes = NodesOf(*stage.root);
    for (int p = 0; p < stage.tasks; ++p) {
      StageTask task = base;
      int64_t bytes = 0;
      for (const StageInput& in : stage.inputs) {
        const auto at = std::find(nodes.begin(), nodes.end(), in.node);
        if (at == nodes.end())
          return arrow::Status::Invalid("internal: an input outside its stage");
        StageTaskInput input;
        input.node = static_cast<int32_t>(at - nodes.begin());
        input.partition_keys = plan_.stages[static_cast<size_t>(in.producer)].output_keys;
        for (const auto& r : reports_[static_cast<size_t>(in.producer)]) {
          const exec::OutputFile& file = r.shuffle_files[static_cast<size_t>(p)];
          input.files.push_back(file.key);
          input.blake3.push_back(file.blake3);
          bytes += file.bytes;
        }
        task.inputs.push_back(std::move(input));
      }
      ARROW_ASSIGN_OR_RAISE(auto body, EncodeStageTask(task));
      out.push_back(StageFragment(query_id_, stage.id, p, options_.store_url, std::move(body)));
      read_bytes->push_back(bytes);
    }
    return out;
  }

  arrow::Status RunWave(dist::WorkerPool* workers, const std::vector<size_t>& wave) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<plan::Fragment> fragments;
    std::vector<std::vector<int64_t>> read_bytes(wave.size());
    std::vector<size_t> counts;
    std::string name;
    for (size_t w = 0; w < wave.size(); ++w) {
      const Stage& stage = plan_.stages[wave[w]];
      ARROW_ASSIGN_OR_RAISE(auto more, Fragments(stage, &read_bytes[w]));
      counts.push_back(more.size());
      for (auto& f : more) fragments.push_back(std::move(f));
      name += (name.empty() ? "" : ", ") + std::string("stage ") + std::to_string(stage.id) + " (" +
              StageRoleName(stage.role) + ")";
    }
    // A progress line per wave, on a terminal only: a query's stderr stays clean elsewhere.
    if (isatty(fileno(stderr)) != 0) {
      Progress::Options o;
      o.total = static_cast<int64_t>(fragments.size());
      o.unit = "tasks";
      o.secondary_unit = "rows";
      progress_ = std::make_unique<Progress>("query q-" + query_id_ + " " + name, o);
    }
    auto reports = workers->RunStage(std::move(fragments));
    if (progress_) progress_->Finish();
    progress_.reset();
    if (!reports.ok()) {
      return reports.status().WithMessage("query q-", query_id_, " ", name, ": ",
                                          reports.status().message());
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    size_t next = 0;
    for (size_t w = 0; w < wave.size(); ++w) {
      std::vector<exec::TaskReport> mine(
          std::make_move_iterator(reports->begin() + static_cast<std::ptrdiff_t>(next)),
          std::make_move_iterator(reports->begin() +
                                  static_cast<std::ptrdiff_t>(next + counts[w])));
      next += counts[w];
      ARROW_RETURN_NOT_OK(Finish(wave[w], std::move(mine), read_bytes[w], seconds));
    }
    return arrow::Status::OK();
  }

  // Checks a stage's reports, keeps them for the stages above, and writes its analyze lines.
  arrow::Status Finish(size_t index, std::vector<exec::TaskReport> reports,
                       const std::vector<int64_t>& read_bytes, double seconds) {
    const Stage& stage = plan_.stages[index];
    const char* role = StageRoleName(stage.role);
    const int files = stage.gather ? 1 : stage.partitions;
    for (const auto& r : reports) {
      ARROW_RETURN_NOT_OK(CheckReportFiles(r, StagePrefix(folder_, stage.id), files));
    }
    int64_t stage_written = 0;
    for (size_t t = 0; t < reports.size(); ++t) {
      const exec::TaskReport& r = reports[t];
      int64_t written = 0;
      for (const auto& f : r.shuffle_files) written += f.bytes;
      stage_written += written;
      read_ += read_bytes[t];
      if (analyze_ == nullptr) continue;
      std::string line = "  stage " + std::to_string(stage.id) + " (" + role + ") task " + r.task +
                         " attempt " + std::to_string(r.attempt) + ": ";
      if (stage.split != nullptr) {
        line += "files=" + std::to_string(r.objects) + " ";
      } else {
        std::string from;
        int producers = 0;
        for (const StageInput& in : stage.inputs) {
          const auto& produced = reports_[static_cast<size_t>(in.producer)];
          from += (from.empty() ? "" : ",") + TaskList(produced);
          producers += static_cast<int>(produced.size());
        }
        line += "shuffle_read=" + Kib(read_bytes[t]) + " from " + std::to_string(producers) +
                " tasks [" + from + "] ";
      }
      line += "rows_in=" + std::to_string(r.records_in) +
              " rows_out=" + std::to_string(r.rows_out) + " shuffle_written=" + Kib(written) +
              " in " + std::to_string(r.shuffle_files.size()) + " files time=" + Ms(r.seconds) +
              "\n";
      *analyze_ += line;
    }
    written_ += stage_written;
    if (analyze_ != nullptr) {
      *analyze_ += "  stage " + std::to_string(stage.id) + ": " + Ms(seconds) +
                   " wall (its wave), " + Kib(stage_written) + " shuffled\n";
    }
    reports_[index] = std::move(reports);
    return arrow::Status::OK();
  }

  const StagePlan& plan_;
  const DistributedOptions& options_;
  const std::string query_id_;
  const ShuffleFolder& folder_;
  std::string* analyze_;
  std::vector<std::vector<exec::TaskReport>> reports_;
  std::unique_ptr<Progress> progress_;
  int64_t written_ = 0;
  int64_t read_ = 0;
};

}  // namespace

arrow::Result<std::shared_ptr<arrow::Table>> RunDistributed(const BoundQuery& query,
                                                            const StagePlan& plan,
                                                            const DistributedOptions& options,
                                                            std::string* analyze) {
  if (!plan.cut()) return arrow::Status::Invalid("internal: a plan without stages");
  const std::string query_id = NewQueryId();
  ShuffleFolder folder(options.store, std::string(kShufflePrefix) + "q-" + query_id);
  StageDriver driver(plan, options, query_id, folder, analyze);
  ARROW_RETURN_NOT_OK(driver.RunAll());
  ARROW_ASSIGN_OR_RAISE(NodeInputs inputs, driver.Gather());
  const auto start = std::chrono::steady_clock::now();
  ARROW_ASSIGN_OR_RAISE(auto table, Execute(*query.plan, query.names, nullptr, &inputs));
  if (analyze != nullptr) {
    *analyze +=
        "  stage " + std::to_string(plan.driver_stage) +
        " (driver): rows_out=" + std::to_string(table->num_rows()) + " time=" +
        Ms(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()) + "\n";
  }
  return table;
}

}  // namespace sluice::sql
