#include "sql/distributed_query.h"

#include <arrow/filesystem/filesystem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <random>

#include "dist/driver_tag.h"
#include "dist/stage_scheduler.h"
#include "exec/plan_executor.h"
#include "exec/shuffle.h"
#include "plan/fragment.h"

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

// A task of a query's stage: the stage's plan under `write`, with `replace` standing in for the
// nodes that this task reads differently (its share of the split scan, its partition of the
// stage's inputs).
plan::Fragment StageFragment(
    const std::string& query_id, const Stage& stage, int task, const std::string& store_url,
    const plan::ShuffleWrite& write,
    const std::function<std::unique_ptr<PlanNode>(const PlanNode&)>& replace) {
  plan::Fragment f;
  f.run_id = "q-" + query_id;
  f.stage_id = stage.id;
  f.partition = task;
  f.session.store_url = store_url;
  auto root = plan::MakeNode(PlanNode::Kind::kShuffleWrite, plan::CopyPlan(*stage.root, replace));
  root->shuffle_write = write;
  f.root = std::move(root);
  return f;
}

std::string StagePrefix(const ShuffleFolder& folder, int stage) {
  return folder.prefix() + "/s" + std::to_string(stage);
}

// "stage 1 (map)": how progress lines, failures and EXPLAIN ANALYZE name a stage.
std::string StageName(const Stage& stage) {
  return "stage " + std::to_string(stage.id) + " (" + StageRoleName(stage.role) + ")";
}

std::string TaskList(const std::vector<exec::TaskReport>& reports) {
  std::string out;
  for (const auto& r : reports) {
    out += (out.empty() ? "" : ",") + r.task + "-" + std::to_string(r.attempt);
  }
  return out;
}

// The query's side of its stages: builds each stage's tasks from its producers' reports, and
// reads what the gathering stages wrote. The scheduler (dist/stage_scheduler.h) runs them.
class QueryStages {
 public:
  QueryStages(const StagePlan& plan, const DistributedOptions& options, std::string query_id,
              const ShuffleFolder& folder)
      : plan_(plan),
        options_(options),
        query_id_(std::move(query_id)),
        folder_(folder),
        read_bytes_(plan.stages.size()),
        scan_bytes_(plan.stages.size()) {}

  // Every stage, as the scheduler runs it. The result refers to this object.
  std::vector<dist::ScheduledStage> Scheduled() {
    std::vector<dist::ScheduledStage> out;
    for (size_t i = 0; i < plan_.stages.size(); ++i) {
      const Stage& stage = plan_.stages[i];
      dist::ScheduledStage s;
      s.id = stage.id;
      s.name = StageName(stage);
      for (const StageInput& in : stage.inputs) {
        s.producers.push_back(static_cast<size_t>(in.producer));
      }
      s.fragments = [this, i](const std::vector<dist::StageResult>& done) {
        return Fragments(i, done);
      };
      s.shuffle_files = stage.gather ? 1 : stage.partitions;
      s.shuffle_file_key = [prefix = StagePrefix(folder_, stage.id)](
                               const plan::Fragment& task, int32_t attempt, int32_t file) {
        return plan::ShuffleFileKey(prefix, task.task_name(), attempt, file);
      };
      out.push_back(std::move(s));
    }
    return out;
  }

  // The tables the driver reads in place of the gathered nodes.
  arrow::Result<exec::NodeInputs> Gather(const std::vector<dist::StageResult>& done) const {
    exec::NodeInputs inputs;
    for (const StageInput& g : plan_.gathered) {
      ARROW_ASSIGN_OR_RAISE(auto schema, OutputSchema(*g.node));
      std::vector<std::shared_ptr<arrow::Table>> tables;
      for (const auto& r : done[static_cast<size_t>(g.producer)].reports) {
        const exec::OutputFile& file = r.shuffle_files[0];
        ARROW_ASSIGN_OR_RAISE(
            auto t, exec::ReadShuffleFile(options_.store.get(), file.key, file.blake3, *schema));
        tables.push_back(std::move(t));
      }
      ARROW_ASSIGN_OR_RAISE(inputs[g.node], arrow::ConcatenateTables(tables));
    }
    return inputs;
  }

  // EXPLAIN ANALYZE's lines of every stage, in the order the stages ran: one per task and one
  // per stage, then the query's total shuffle.
  std::string Analyze(const std::vector<dist::StageResult>& done) const {
    std::vector<size_t> order(plan_.stages.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return done[a].wave < done[b].wave; });
    std::string out;
    int64_t written = 0, read = 0;
    for (size_t index : order) {
      const Stage& stage = plan_.stages[index];
      const std::vector<exec::TaskReport>& reports = done[index].reports;
      int64_t stage_written = 0;
      for (size_t t = 0; t < reports.size(); ++t) {
        const exec::TaskReport& r = reports[t];
        int64_t task_written = 0;
        for (const auto& f : r.shuffle_files) task_written += f.bytes;
        stage_written += task_written;
        const int64_t task_read = read_bytes_[index][t];
        read += task_read;
        std::string line = "  " + StageName(stage) + " task " + r.task + " attempt " +
                           std::to_string(r.attempt) + ": ";
        if (stage.split != nullptr) {
          line += "files=" + std::to_string(r.objects) + " ";
        } else {
          std::string from;
          int producers = 0;
          for (const StageInput& in : stage.inputs) {
            const auto& produced = done[static_cast<size_t>(in.producer)].reports;
            from += (from.empty() ? "" : ",") + TaskList(produced);
            producers += static_cast<int>(produced.size());
          }
          line += "shuffle_read=" + Kib(task_read) + " from " + std::to_string(producers) +
                  " tasks [" + from + "] ";
        }
        line += "rows_in=" + std::to_string(r.records_in) +
                (stage.split != nullptr ? " bytes_in=" + Kib(scan_bytes_[index][t]) : "") +
                " rows_out=" + std::to_string(r.rows_out) +
                " shuffle_written=" + Kib(task_written) + " in " +
                std::to_string(r.shuffle_files.size()) + " files time=" + Ms(r.seconds) + "\n";
        out += line;
      }
      written += stage_written;
      out += "  stage " + std::to_string(stage.id) + ": " + Ms(done[index].seconds) +
             " wall (its wave), " + Kib(stage_written) + " shuffled\n";
    }
    out += "  total shuffle: " + std::to_string(written) + " bytes written, " +
           std::to_string(read) + " bytes read\n";
    return out;
  }

 private:
  // The tasks of stage `index`; notes the bytes each reads from the shuffle.
  arrow::Result<std::vector<plan::Fragment>> Fragments(size_t index,
                                                       const std::vector<dist::StageResult>& done) {
    const Stage& stage = plan_.stages[index];
    std::vector<int64_t>* read_bytes = &read_bytes_[index];
    const std::string prefix = StagePrefix(folder_, stage.id);
    plan::ShuffleWrite write;
    write.folder = prefix;
    if (!stage.gather) {
      write.keys = stage.output_keys;
      write.partitions = stage.partitions;
      write.one_row_per_key = stage.one_row_per_key;
    }
    std::vector<plan::Fragment> out;
    if (stage.split != nullptr) {
      // Map stage: contiguous runs of the split table's row groups (or files).
      std::vector<SplitShare> shares = SplitShares(*stage.split->table, stage.tasks);
      for (size_t t = 0; t < shares.size(); ++t) {
        scan_bytes_[index].push_back(shares[t].bytes);
        auto share = [&](const PlanNode& n) -> std::unique_ptr<PlanNode> {
          if (&n != stage.split) return nullptr;
          auto scan = plan::CopyPlan(n);
          auto subset = std::make_shared<TableSource>(*n.table);
          subset->files = std::move(shares[t].files);
          subset->row_group_ranges = std::move(shares[t].row_group_ranges);
          scan->table = std::move(subset);
          scan->split = true;
          return scan;
        };
        out.push_back(
            StageFragment(query_id_, stage, static_cast<int>(t), options_.store_url, write, share));
        read_bytes->push_back(0);
      }
      return out;
    }
    // Partitioned stage: task p reads part p of every task of each producer's successful
    // attempt, named by the reports (never a file found by listing).
    for (int p = 0; p < stage.tasks; ++p) {
      std::map<const PlanNode*, plan::ShuffleRead> reads;
      int64_t bytes = 0;
      for (const StageInput& in : stage.inputs) {
        plan::ShuffleRead read;
        ARROW_ASSIGN_OR_RAISE(read.schema, OutputSchema(*in.node));
        read.partition_keys = plan_.stages[static_cast<size_t>(in.producer)].output_keys;
        for (const auto& r : done[static_cast<size_t>(in.producer)].reports) {
          const exec::OutputFile& file = r.shuffle_files[static_cast<size_t>(p)];
          read.files.push_back(file.key);
          read.blake3.push_back(file.blake3);
          bytes += file.bytes;
        }
        reads[in.node] = std::move(read);
      }
      auto partition = [&](const PlanNode& n) -> std::unique_ptr<PlanNode> {
        auto it = reads.find(&n);
        if (it == reads.end()) return nullptr;
        auto node = plan::MakeNode(PlanNode::Kind::kShuffleRead);
        node->shuffle_read = it->second;
        return node;
      };
      out.push_back(StageFragment(query_id_, stage, p, options_.store_url, write, partition));
      read_bytes->push_back(bytes);
    }
    return out;
  }

  const StagePlan& plan_;
  const DistributedOptions& options_;
  const std::string query_id_;
  const ShuffleFolder& folder_;
  // Per stage and task: the shuffle bytes the task reads.
  std::vector<std::vector<int64_t>> read_bytes_;
  // Per map stage and task: the bytes of its share of the split table.
  std::vector<std::vector<int64_t>> scan_bytes_;
};

// Runs every stage of the query on one pool of long-lived workers, which end when it returns.
arrow::Result<std::vector<dist::StageResult>> RunStages(QueryStages* stages,
                                                        const DistributedOptions& options,
                                                        const std::string& query_id) {
  dist::PoolOptions pool;
  pool.workers = options.workers;
  pool.max_attempts = options.max_attempts;
  pool.worker_binary =
      options.worker_binary.empty() ? dist::SelfExecutable() : options.worker_binary;
  dist::SchedulerOptions scheduling;
  scheduling.label = "query q-" + query_id;
  // On a terminal only: a query's stderr stays clean elsewhere.
  scheduling.wave_progress = true;
  dist::StageScheduler scheduler(std::move(pool), std::move(scheduling));
  std::vector<dist::StageResult> done;
  ARROW_RETURN_NOT_OK(scheduler.Run(stages->Scheduled(), &done));
  return done;
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Table>> RunDistributed(const BoundQuery& query,
                                                            const StagePlan& plan,
                                                            const DistributedOptions& options,
                                                            std::string* analyze) {
  if (!plan.cut()) return arrow::Status::Invalid("internal: a plan without stages");
  const std::string query_id = NewQueryId();
  ShuffleFolder folder(options.store, std::string(plan::kShufflePrefix) + "q-" + query_id);
  QueryStages stages(plan, options, query_id, folder);
  ARROW_ASSIGN_OR_RAISE(auto done, RunStages(&stages, options, query_id));
  if (analyze != nullptr) *analyze += stages.Analyze(done);
  ARROW_ASSIGN_OR_RAISE(exec::NodeInputs inputs, stages.Gather(done));
  const auto start = std::chrono::steady_clock::now();
  ARROW_ASSIGN_OR_RAISE(auto table, exec::Execute(*query.plan, query.names, nullptr, &inputs));
  if (analyze != nullptr) {
    *analyze +=
        "  stage " + std::to_string(plan.driver_stage) +
        " (driver): rows_out=" + std::to_string(table->num_rows()) + " time=" +
        Ms(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()) + "\n";
  }
  return table;
}

}  // namespace sluice::sql
