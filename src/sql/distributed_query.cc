#include "sql/distributed_query.h"

#include <arrow/filesystem/filesystem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "dist/driver_tag.h"
#include "dist/stage_cutter.h"
#include "dist/stage_scheduler.h"
#include "exec/plan_executor.h"
#include "exec/shuffle.h"
#include "plan/fragment.h"
#include "plan/split_key_ranges.h"

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

// The bound plan with an Exchange above each node that a stage reads from the stage below or the
// driver gathers, and each map stage's split scan marked `split`: what the stage cutter cuts.
struct ExchangePlan {
  std::unique_ptr<PlanNode> root;
  // The stage below each exchange of `root`, and the stage of each split scan.
  std::map<const PlanNode*, const Stage*> producer;
  std::map<const PlanNode*, const Stage*> split;
  // Each repeated aggregate of `root` (StagePlan::repeats), with the gather it reads again.
  std::vector<std::pair<const PlanNode*, const PlanNode*>> repeats;
};

ExchangePlan WithExchanges(const PlanNode& root, const StagePlan& plan) {
  std::map<const PlanNode*, const Stage*> producer_of, split_of;
  for (const Stage& s : plan.stages) {
    for (const StageInput& in : s.inputs) {
      producer_of[in.node] = &plan.stages[static_cast<size_t>(in.producer)];
    }
    if (s.split != nullptr) split_of[s.split] = &s;
  }
  for (const StageInput& g : plan.gathered) {
    producer_of[g.node] = &plan.stages[static_cast<size_t>(g.producer)];
  }
  ExchangePlan out;
  std::map<const PlanNode*, const PlanNode*> copied;  // of repeats and the nodes they repeat
  std::map<const PlanNode*, const PlanNode*> gather_of;
  for (const auto& [repeat, same] : plan.repeats) {
    copied[repeat] = nullptr;
    copied[same] = nullptr;
  }
  std::function<std::unique_ptr<PlanNode>(const PlanNode&)> copy = [&](const PlanNode& n) {
    auto c = std::make_unique<PlanNode>();
    static_cast<plan::PlanNodeFields&>(*c) = n;
    if (n.input != nullptr) c->input = copy(*n.input);
    if (n.right != nullptr) c->right = copy(*n.right);
    if (auto it = split_of.find(&n); it != split_of.end()) {
      c->split = true;
      out.split[c.get()] = it->second;
    }
    if (auto it = copied.find(&n); it != copied.end()) it->second = c.get();
    auto it = producer_of.find(&n);
    if (it == producer_of.end()) return c;
    const Stage& below = *it->second;
    auto exchange = plan::MakeNode(PlanNode::Kind::kExchange, std::move(c));
    exchange->exchange.gather = below.gather;
    if (!below.gather) {
      exchange->exchange.keys = below.output_keys;
      exchange->exchange.partitions = below.partitions;
      exchange->exchange.one_row_per_key = below.one_row_per_key;
    }
    out.producer[exchange.get()] = &below;
    gather_of[&n] = exchange.get();
    return exchange;
  };
  out.root = copy(root);
  for (const auto& [repeat, same] : plan.repeats) {
    out.repeats.emplace_back(copied.at(repeat), gather_of.at(same));
  }
  return out;
}

// The query's side of its stages: the plan with its exchanges, cut by the stage cutter
// (dist/stage_cutter.h), which builds each stage's tasks from its producers' reports; the
// splits of map stages' tables; what the gathering stages wrote, for the driver.
class QueryStages {
 public:
  explicit QueryStages(ExchangePlan exchanges) : ex_(std::move(exchanges)) {}

  arrow::Status Cut(const DistributedOptions& options, const std::string& query_id,
                    const ShuffleFolder& folder) {
    dist::CutOptions cut;
    cut.run_id = "q-" + query_id;
    cut.session.store_url = options.store_url;
    cut.session.cache_dir = options.cache_dir;
    cut.session.libraries = options.libraries;
    cut.shuffle_folder = folder.prefix();
    cut.root_stage = false;  // the driver runs what is above the gathering stages
    cut.stage_id = [this](const PlanNode&, const PlanNode* exchange) {
      return ex_.producer.at(exchange)->id;
    };
    cut.stage_name = [this](const PlanNode&, const PlanNode* exchange, int) {
      return StageName(*ex_.producer.at(exchange));
    };
    cut.split_tasks = [this](const PlanNode& leaf) { return ex_.split.at(&leaf)->tasks; };
    // Map stage: contiguous runs of the split table's row groups (or files).
    cut.split_share = [this](const PlanNode& leaf,
                             int task) -> arrow::Result<std::unique_ptr<PlanNode>> {
      auto scan = plan::CopyPlan(leaf);
      ARROW_ASSIGN_OR_RAISE(scan->table, ShareTable(leaf, task));
      scan_bytes_[ex_.split.at(&leaf)->id].push_back(
          shares_[&leaf][static_cast<size_t>(task)].bytes);
      return scan;
    };
    // A broadcast scan that meets the split scan on a join key: only the row groups whose keys
    // can meet the task's share (plan/split_key_ranges.h).
    cut.task_node = [this](const PlanNode& root, const PlanNode& leaf, const PlanNode& node,
                           int task) -> arrow::Result<std::unique_ptr<PlanNode>> {
      if (node.kind != PlanNode::Kind::kScan) return nullptr;
      auto it = key_ranges_.find(&root);
      if (it == key_ranges_.end()) {
        it = key_ranges_.emplace(&root, plan::SplitKeyRanges(root, leaf)).first;
      }
      std::unique_ptr<PlanNode> out;
      std::shared_ptr<TableSource> share;  // the task's share, made once for all its keys
      for (const plan::SplitKeyRange& k : it->second) {
        if (k.scan != &node) continue;
        if (share == nullptr) {
          ARROW_ASSIGN_OR_RAISE(share, ShareTable(leaf, task));
        }
        const auto range = plan::ShareKeyRange(*leaf.table, *share, k.split_column);
        if (!range) continue;
        if (out == nullptr) out = plan::CopyPlan(node);
        plan::RestrictScan(out.get(), k.scan_column, range->first, range->second);
      }
      return out;
    };
    ARROW_ASSIGN_OR_RAISE(cut_, dist::StageCut::Make(*ex_.root, std::move(cut)));
    return arrow::Status::OK();
  }

  const PlanNode& plan() const { return *ex_.root; }
  std::vector<dist::ScheduledStage> Scheduled() { return cut_->Scheduled(); }

  // The tables the driver reads in place of the gathering exchanges.
  arrow::Result<exec::NodeInputs> Gather(const DistributedOptions& options,
                                         const std::vector<dist::StageResult>& done) const {
    exec::NodeInputs inputs;
    for (const auto& [exchange, producer] : cut_->gathered()) {
      ARROW_ASSIGN_OR_RAISE(auto schema, OutputSchema(*exchange));
      std::vector<std::shared_ptr<arrow::Table>> tables;
      for (const auto& r : done[producer].reports) {
        const exec::OutputFile& file = r.shuffle_files[0];
        ARROW_ASSIGN_OR_RAISE(
            auto t, exec::ReadShuffleFile(options.store.get(), file.key, file.blake3, *schema));
        tables.push_back(std::move(t));
      }
      ARROW_ASSIGN_OR_RAISE(inputs[exchange], arrow::ConcatenateTables(tables));
    }
    // A repeated aggregate's rows are its twin's, under the repeat's own column names.
    for (const auto& [repeat, gather] : ex_.repeats) {
      const std::shared_ptr<arrow::Table>& rows = inputs.at(gather);
      ARROW_ASSIGN_OR_RAISE(auto schema, OutputSchema(*repeat));
      if (schema->num_fields() != rows->num_columns()) {
        return arrow::Status::Invalid("internal: a repeated aggregate has other columns");
      }
      for (int i = 0; i < schema->num_fields(); ++i) {
        if (!schema->field(i)->type()->Equals(*rows->schema()->field(i)->type())) {
          return arrow::Status::Invalid("internal: a repeated aggregate's column ",
                                        schema->field(i)->name(), " has another type");
        }
      }
      inputs[repeat] = arrow::Table::Make(schema, rows->columns(), rows->num_rows());
    }
    return inputs;
  }

  // EXPLAIN ANALYZE's lines of every stage, in the order the stages ran: one per task and one
  // per stage, then the query's total shuffle.
  std::string Analyze(const std::vector<dist::StageResult>& done) const {
    const std::vector<dist::CutStage>& stages = cut_->stages();
    std::vector<size_t> order(stages.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return done[a].wave != done[b].wave ? done[a].wave < done[b].wave
                                          : stages[a].id < stages[b].id;
    });
    std::string out;
    int64_t written = 0, read = 0;
    for (size_t index : order) {
      const dist::CutStage& stage = stages[index];
      const std::vector<exec::TaskReport>& reports = done[index].reports;
      const auto scanned = scan_bytes_.find(stage.id);
      int64_t stage_written = 0;
      for (size_t t = 0; t < reports.size(); ++t) {
        const exec::TaskReport& r = reports[t];
        int64_t task_written = 0;
        for (const auto& f : r.shuffle_files) task_written += f.bytes;
        stage_written += task_written;
        const int64_t task_read = t < stage.read_bytes.size() ? stage.read_bytes[t] : 0;
        read += task_read;
        std::string line =
            "  " + stage.name + " task " + r.task + " attempt " + std::to_string(r.attempt) + ": ";
        if (stage.split != nullptr) {
          line += "files=" + std::to_string(r.objects) + " ";
        } else {
          std::string from;
          int producers = 0;
          for (size_t producer : stage.producers) {
            const auto& produced = done[producer].reports;
            from += (from.empty() ? "" : ",") + TaskList(produced);
            producers += static_cast<int>(produced.size());
          }
          line += "shuffle_read=" + Kib(task_read) + " from " + std::to_string(producers) +
                  " tasks [" + from + "] ";
        }
        std::string bytes_in;
        if (stage.split != nullptr && scanned != scan_bytes_.end() && t < scanned->second.size()) {
          bytes_in = " bytes_in=" + Kib(scanned->second[t]);
        }
        if (r.broadcast_rows > 0) bytes_in += " broadcast_rows=" + std::to_string(r.broadcast_rows);
        line += "rows_in=" + std::to_string(r.records_in) + bytes_in +
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
  // Task `task`'s share of the split scan `leaf`'s table (its stage's shares made once).
  arrow::Result<std::shared_ptr<TableSource>> ShareTable(const PlanNode& leaf, int task) {
    auto& shares = shares_[&leaf];
    if (shares.empty()) shares = SplitShares(*leaf.table, ex_.split.at(&leaf)->tasks);
    if (task < 0 || task >= static_cast<int>(shares.size())) {
      return arrow::Status::Invalid("internal: no share for task ", task);
    }
    const SplitShare& share = shares[static_cast<size_t>(task)];
    auto subset = std::make_shared<TableSource>(*leaf.table);
    subset->files = share.files;
    subset->row_group_ranges = share.row_group_ranges;
    return subset;
  }

  ExchangePlan ex_;
  std::unique_ptr<dist::StageCut> cut_;
  // Per split scan of the exchange plan: its table's shares, one per task.
  std::map<const PlanNode*, std::vector<SplitShare>> shares_;
  // Per map stage id: the bytes of each task's share of the split table.
  std::map<int, std::vector<int64_t>> scan_bytes_;
  // Per map stage's top: its broadcast scans that meet the split scan on a join key.
  std::map<const PlanNode*, std::vector<plan::SplitKeyRange>> key_ranges_;
};

// The scheduler of one query: one pool of long-lived workers, which end with it.
std::unique_ptr<dist::StageScheduler> MakeScheduler(const DistributedOptions& options,
                                                    const std::string& query_id) {
  dist::PoolOptions pool;
  pool.workers = options.workers;
  pool.max_attempts = options.max_attempts;
  pool.worker_binary =
      options.worker_binary.empty() ? dist::SelfExecutable() : options.worker_binary;
  // The workers share this machine's cores: more threads than cores only take turns.
  pool.cpu_threads =
      dist::CpuThreadsPerWorker(options.workers, std::thread::hardware_concurrency());
  dist::SchedulerOptions scheduling;
  scheduling.label = "query q-" + query_id;
  // On a terminal only: a query's stderr stays clean elsewhere.
  scheduling.wave_progress = true;
  return options.ray != nullptr
             ? std::make_unique<dist::StageScheduler>(dist::RayExecutor::Runner(options.ray),
                                                      std::move(scheduling))
             : std::make_unique<dist::StageScheduler>(std::move(pool), std::move(scheduling));
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Table>> RunDistributed(const BoundQuery& query,
                                                            const StagePlan& plan,
                                                            const DistributedOptions& options,
                                                            std::string* analyze) {
  if (!plan.cut()) return arrow::Status::Invalid("internal: a plan without stages");
  const std::string query_id = NewQueryId();
  ShuffleFolder folder(options.store, std::string(plan::kShufflePrefix) + "q-" + query_id);
  // The workers load while the stages are cut (which reads the tables' footers).
  std::unique_ptr<dist::StageScheduler> scheduler = MakeScheduler(options, query_id);
  scheduler->StartWorkers();
  QueryStages stages(WithExchanges(*query.plan, plan));
  ARROW_RETURN_NOT_OK(stages.Cut(options, query_id, folder));
  std::vector<dist::StageResult> done;
  ARROW_RETURN_NOT_OK(scheduler->Run(stages.Scheduled(), &done));
  scheduler.reset();  // the workers end here, as before the result is gathered
  if (analyze != nullptr) *analyze += stages.Analyze(done);
  ARROW_ASSIGN_OR_RAISE(exec::NodeInputs inputs, stages.Gather(options, done));
  const auto start = std::chrono::steady_clock::now();
  ARROW_ASSIGN_OR_RAISE(auto table, exec::Execute(stages.plan(), query.names, nullptr, &inputs));
  if (analyze != nullptr) {
    *analyze +=
        "  stage " + std::to_string(plan.driver_stage) +
        " (driver): rows_out=" + std::to_string(table->num_rows()) + " time=" +
        Ms(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()) + "\n";
  }
  return table;
}

}  // namespace sluice::sql
