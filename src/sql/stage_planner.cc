#include "sql/stage_planner.h"

#include <arrow/type.h>

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "exec/shared_subplans.h"
#include "plan/split_key_ranges.h"

namespace sluice::sql {

namespace {

bool IsCutPair(const PlanNode& node) {
  return node.kind == PlanNode::Kind::kAggregate && node.final_phase && node.input != nullptr &&
         node.input->kind == PlanNode::Kind::kAggregate && !node.input->final_phase;
}

// What every task re-reading `side` whole weighs against the split table's whole files: a scan
// the compressed bytes of the columns it reads (TPC-H Q21's re-read of lineitem's two key
// columns is a fifth of the file, and cheaper than hash-partitioning them: 0.70 s against
// 0.59 s on 2 workers), but one below an aggregate its whole files, since each task also
// recomputes the aggregate (Q17's and Q18's subqueries over lineitem ran 25-45 % slower when
// weighed by their columns alone). The split side keeps the weight of its whole files: weighed
// by columns too, Q22's grouped customers would no longer be cut.
int64_t BroadcastBytes(const PlanNode& side, bool under_aggregate = false) {
  if (side.kind == PlanNode::Kind::kScan) {
    return under_aggregate ? side.table->total_bytes : side.table->ScanBytes(side.columns);
  }
  under_aggregate = under_aggregate || side.kind == PlanNode::Kind::kAggregate;
  int64_t bytes = 0;
  if (side.input != nullptr) bytes += BroadcastBytes(*side.input, under_aggregate);
  if (side.right != nullptr) bytes += BroadcastBytes(*side.right, under_aggregate);
  return bytes;
}

// Adds `side`, whose BroadcastBytes are `bytes`, to the tables every task of `stage` reads whole.
void AddBroadcast(Stage* stage, const PlanNode& side, int64_t bytes) {
  for (const PlanNode* s : ScansOf(side)) stage->broadcast.push_back(s);
  stage->broadcast_bytes += bytes;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

std::string TableNames(const std::vector<const PlanNode*>& scans) {
  std::vector<std::string> names;
  for (const PlanNode* s : scans) names.push_back(s->table->name);
  return JoinNames(names);
}

// Why a task cannot compute the subtree at `node` whole (a broadcast side), or empty. A sort or
// limit there would be right, but no query needs one and each would be paid once per task.
std::string WholeRefusal(const PlanNode& node) {
  switch (node.kind) {
    case PlanNode::Kind::kSort:
      return "a sort below the partial aggregate";
    case PlanNode::Kind::kLimit:
      return "a limit below the partial aggregate";
    case PlanNode::Kind::kWindow:
      return "a window function below the partial aggregate";
    default:
      break;
  }
  for (const PlanNode* child : {node.input.get(), node.right.get()}) {
    if (child == nullptr) continue;
    std::string why = WholeRefusal(*child);
    if (!why.empty()) return why;
  }
  return "";
}

// The type a key hashes as: the partition function hashes a dictionary as its values.
std::shared_ptr<arrow::DataType> HashedType(const std::shared_ptr<arrow::DataType>& type) {
  if (type->id() == arrow::Type::DICTIONARY) {
    return static_cast<const arrow::DictionaryType&>(*type).value_type();
  }
  return type;
}

// Whether rows of the two sides with equal keys land in the same partition: the keys must have
// the same types (an int32 hashes other bytes than an equal int64).
bool KeysHashAlike(const PlanNode& join) {
  for (const PlanNode* s : ScansOf(join)) {
    if (s->table == nullptr || s->table->schema == nullptr) return false;  // no types to compare
  }
  auto left = OutputSchema(*join.input);
  auto right = OutputSchema(*join.right);
  if (!left.ok() || !right.ok() || join.left_keys.size() != join.right_keys.size()) return false;
  for (size_t i = 0; i < join.left_keys.size(); ++i) {
    auto l = (*left)->GetFieldByName(join.left_keys[i]);
    auto r = (*right)->GetFieldByName(join.right_keys[i]);
    if (l == nullptr || r == nullptr || !HashedType(l->type())->Equals(*HashedType(r->type()))) {
      return false;
    }
  }
  return true;
}

// Whether a semi or anti join needs nothing of its build side but which keys it holds (no
// condition beyond the keys), and the build side's columns are its keys: one row per key says
// as much as all of them. Measured at SF 1: where the build side carries other columns too
// (TPC-H Q4's filter columns), grouping them costs more than the smaller shuffle saves (Q4
// 0.43 s against 0.33 s); where it is the keys alone it pays (Q22 0.18 s against 0.20 s).
bool KeysOnlyBuildSide(const PlanNode& join) {
  return (join.join_type == JoinType::kSemi || join.join_type == JoinType::kAnti) &&
         join.join_filter.Equals(arrow::compute::literal(true)) &&
         join.right->OutputNames() == join.right_keys;
}

// Why every task re-reading the stage's broadcast tables (weighed as BroadcastBytes says) would
// cost more than splitting saves.
std::string BroadcastRefusal(const Stage& stage) {
  const int64_t bytes = stage.broadcast_bytes;
  if (bytes <= stage.bytes) return "";
  const std::string split = stage.split != nullptr ? "the split table " + stage.split->table->name
                                                   : std::string("the partitioned inputs");
  return "the tables every map task would re-read whole (" + TableNames(stage.broadcast) + ": " +
         std::to_string(bytes) + " bytes to read) outweigh " + split + " (" +
         std::to_string(stage.bytes) + " bytes), which is the largest that can be split";
}

// The final aggregate (of a partial/final pair) below `node` through renaming projections whose
// group keys are `keys` under the names `node` gives them, or null. Not through a filter: a
// HAVING may keep few groups, which no estimate sees (TPC-H Q18 keeps 57 of 1.5M), and then
// gathering them for a join in the driver beats hashing the whole probe side (Q18 at SF 1 on
// 2 workers: 1.3-1.6 s gathered, 2.0 s co-partitioned).
const PlanNode* GroupedOn(const PlanNode& node, std::vector<std::string> keys) {
  if (node.kind == PlanNode::Kind::kProject) {
    for (auto& k : keys) {
      bool found = false;
      for (size_t i = 0; !found && i < node.names.size(); ++i) {
        if (node.names[i] != k) continue;
        const arrow::FieldRef* ref = node.expressions[i].field_ref();
        if (ref == nullptr || ref->name() == nullptr) return nullptr;  // computed, not passed on
        k = *ref->name();
        found = true;
      }
      if (!found && !node.keep_input) return nullptr;
    }
    return GroupedOn(*node.input, std::move(keys));
  }
  if (IsCutPair(node) && node.keys == keys && !keys.empty()) return &node;
  return nullptr;
}

// A subtree whose rows are produced split among the tasks of `open`, above the finished stages
// `done` that feed it (producers first).
struct Building {
  std::vector<Stage> done;
  Stage open;
};

class Planner {
 public:
  explicit Planner(const StageOptions& options) : options_(options) {
    options_.workers = std::max(1, options_.workers);
  }

  StagePlan Plan(const PlanNode& root) {
    // A WITH query or view read twice (TPC-H Q15's revenue0) is one aggregate bound twice: its
    // stages run once, and the driver reads their rows in both places.
    for (const auto& group :
         exec::RepeatedAggregates(root, [](const PlanNode&) { return false; })) {
      for (const PlanNode* n : group) repeated_[n] = group;
    }
    Walk(root);
    StagePlan out;
    out.workers = options_.workers;
    out.refused = refused_;
    // Temporary ids become indices and 1-based stage ids in execution order.
    std::map<int, int> index;
    for (size_t i = 0; i < stages_.size(); ++i) index[stages_[i].id] = static_cast<int>(i);
    for (Stage& s : stages_) {
      for (StageInput& in : s.inputs) in.producer = index.at(in.producer);
    }
    for (StageInput& g : gathered_) g.producer = index.at(g.producer);
    for (size_t i = 0; i < stages_.size(); ++i) stages_[i].id = static_cast<int>(i + 1);
    // The planner follows the rules that workers check; a stage that breaks them is a bug here,
    // and runs in-process rather than wrong.
    for (const Stage& s : stages_) {
      std::map<const PlanNode*, std::vector<std::string>> inputs;
      for (const StageInput& in : s.inputs) inputs[in.node] = stages_[in.producer].output_keys;
      std::string why = StageShapeRefusal(*s.root, s.split, inputs);
      if (!why.empty()) {
        out.not_cut_reason = "internal: stage " + std::to_string(s.id) + " is unsound: " + why;
        out.refused.clear();
        return out;
      }
    }
    out.stages = std::move(stages_);
    out.gathered = std::move(gathered_);
    out.repeats = std::move(repeats_);
    out.driver_stage = static_cast<int>(out.stages.size()) + 1;
    if (out.stages.empty()) {
      out.not_cut_reason = out.refused.empty()
                               ? "the query has no aggregate or window to split"
                               : "no aggregate or window can be cut: " + out.refused[0];
    }
    return out;
  }

 private:
  Stage NewStage(StageRole role) {
    Stage s;
    s.id = next_id_++;
    s.role = role;
    return s;
  }

  // Ends `b`'s open stage with a hash exchange; returns every finished stage, it last.
  std::vector<Stage> Close(Building b, std::vector<std::string> keys, int partitions) {
    b.open.output_keys = std::move(keys);
    b.open.partitions = partitions;
    if (b.open.role == StageRole::kMap) {
      b.open.tasks = MapTaskCount(b.open.split->table->SplitUnits(), options_.workers);
    }
    b.done.push_back(std::move(b.open));
    return std::move(b.done);
  }

  // `node`'s rows split among the tasks of an open stage, or why they cannot be.
  std::optional<Building> Split(const PlanNode& node, std::string* why) {
    switch (node.kind) {
      case PlanNode::Kind::kScan: {
        Building b;
        b.open = NewStage(StageRole::kMap);
        b.open.root = &node;
        b.open.split = &node;
        b.open.bytes = node.table->total_bytes;
        return b;
      }
      case PlanNode::Kind::kFilter:
      case PlanNode::Kind::kProject: {
        auto b = Split(*node.input, why);
        if (b) b->open.root = &node;
        return b;
      }
      case PlanNode::Kind::kJoin:
        if (node.join_type == JoinType::kFull) {
          // Each task would add the other side's unmatched rows once more.
          *why = "a full outer join below the partial aggregate";
          return std::nullopt;
        }
        return SplitJoin(node, why);
      case PlanNode::Kind::kAggregate:
        *why =
            "no table below the aggregate can be split: each sits on a join's build side or "
            "below an aggregate";
        return std::nullopt;
      case PlanNode::Kind::kSort:
        *why = "a sort below the partial aggregate";
        return std::nullopt;
      case PlanNode::Kind::kLimit:
        *why = "a limit below the partial aggregate";
        return std::nullopt;
      case PlanNode::Kind::kWindow:
        *why = "a window function below the partial aggregate";
        return std::nullopt;
      default:
        break;
    }
    *why = "an operator the stage planner does not know below the partial aggregate";
    return std::nullopt;
  }

  std::optional<Building> SplitJoin(const PlanNode& node, std::string* why) {
    auto b = Split(*node.input, why);
    if (node.join_type == JoinType::kInner) {
      if (auto swapped = SplitBuildSide(node, b)) return swapped;
    }
    if (!b) return std::nullopt;
    // A large build side: hash both sides on the join keys, when the build side can be split
    // too and neither side's stage re-reads more than it splits.
    // A build side that every task re-reading would outweigh the split side, or above the
    // broadcast limit, is hash-partitioned with the probe side instead.
    const int64_t right_bytes = BroadcastBytes(*node.right);
    Stage with_broadcast = b->open;
    AddBroadcast(&with_broadcast, *node.right, right_bytes);
    const bool hash =
        right_bytes > options_.broadcast_limit_bytes || !BroadcastRefusal(with_broadcast).empty();
    if (hash && !node.left_keys.empty() && KeysHashAlike(node) &&
        BroadcastRefusal(b->open).empty()) {
      std::string right_why;
      auto r = Split(*node.right, &right_why);
      if (!r) {
        if (auto grouped = SplitGrouped(node, b)) return grouped;
      }
      if (r && BroadcastRefusal(r->open).empty()) {
        Building j;
        j.open = NewStage(StageRole::kJoin);
        j.open.root = &node;
        j.open.bytes = b->open.bytes + r->open.bytes;
        j.open.tasks = options_.workers;
        j.open.inputs = {{node.input.get(), b->open.id}, {node.right.get(), r->open.id}};
        j.done = Close(std::move(*b), node.left_keys, options_.workers);
        // A semi or anti join asks only whether a key is on its build side: each task sends a
        // key once (lineitem's rows repeat an order key four times in TPC-H Q4).
        r->open.one_row_per_key = KeysOnlyBuildSide(node);
        for (Stage& s : Close(std::move(*r), node.right_keys, options_.workers)) {
          j.done.push_back(std::move(s));
        }
        return j;
      }
    }
    // A broadcast by re-scan: every task reads the build side whole.
    *why = WholeRefusal(*node.right);
    if (!why->empty()) return std::nullopt;
    AddBroadcast(&b->open, *node.right, right_bytes);
    b->open.root = &node;
    return b;
  }

  // An inner join's output rows each come from one row of either side, so its build side may be
  // split instead, every task reading the probe side whole: taken where that re-reads less than
  // splitting the probe side would, with the build side broadcast (TPC-H Q12 splits lineitem and
  // re-reads orders' two columns, rather than re-reading five of lineitem's in every task:
  // 0.21 s against 0.25 s on 2 workers, median of 11). Null where the probe side is better split,
  // or where either side cannot be treated so.
  std::optional<Building> SplitBuildSide(const PlanNode& node,
                                         const std::optional<Building>& probe) {
    if (!WholeRefusal(*node.input).empty()) return std::nullopt;
    const int64_t left_bytes = BroadcastBytes(*node.input);
    if (left_bytes > options_.broadcast_limit_bytes) return std::nullopt;
    std::string why;
    auto r = Split(*node.right, &why);
    if (!r) return std::nullopt;
    AddBroadcast(&r->open, *node.input, left_bytes);
    if (!BroadcastRefusal(r->open).empty()) return std::nullopt;
    if (probe &&
        r->open.broadcast_bytes >= probe->open.broadcast_bytes + BroadcastBytes(*node.right)) {
      return std::nullopt;
    }
    r->open.root = &node;
    return r;
  }

  // A join whose build side is a grouped subquery on the join keys (TPC-H Q17's average per
  // part, Q18's orders with large quantities): the aggregate's partials are hash-partitioned on
  // its keys, the probe side on the join keys, and one join stage runs the final aggregate and
  // the join per partition, instead of every task re-reading the subquery's tables whole.
  std::optional<Building> SplitGrouped(const PlanNode& node, std::optional<Building>& probe) {
    const PlanNode* final_agg = GroupedOn(*node.right, node.right_keys);
    if (final_agg == nullptr) return std::nullopt;
    const PlanNode& partial = *final_agg->input;
    std::string why;
    auto m = Split(*partial.input, &why);
    if (!m || !BroadcastRefusal(m->open).empty()) return std::nullopt;
    m->open.root = &partial;
    Building j;
    j.open = NewStage(StageRole::kJoin);
    j.open.root = &node;
    j.open.bytes = probe->open.bytes + m->open.bytes;
    j.open.tasks = options_.workers;
    j.open.inputs = {{node.input.get(), probe->open.id}, {&partial, m->open.id}};
    j.done = Close(std::move(*probe), node.left_keys, options_.workers);
    for (Stage& s : Close(std::move(*m), final_agg->keys, options_.workers)) {
      j.done.push_back(std::move(s));
    }
    return j;
  }

  // A window whose functions share their PARTITION BY keys, over rows a stage can split: the
  // rows are hash-partitioned on those keys, and one window stage per partition computes the
  // functions, every partition's rows being in one task. Empty when it cannot be.
  std::string CutWindow(const PlanNode& node) {
    const std::vector<std::string>& keys = node.windows.front().partition_keys;
    for (const auto& w : node.windows) {
      if (w.partition_keys.empty() || w.partition_keys != keys) {
        return "a window without PARTITION BY, or windows partitioned on different keys";
      }
    }
    std::string why;
    auto b = Split(*node.input, &why);
    if (b) why = BroadcastRefusal(b->open);
    if (!why.empty()) return why;
    Stage window_stage = NewStage(StageRole::kWindow);
    window_stage.root = &node;
    window_stage.inputs = {{node.input.get(), b->open.id}};
    window_stage.bytes = b->open.bytes;
    window_stage.gather = true;
    window_stage.tasks = options_.workers;
    for (Stage& s : Close(std::move(*b), keys, options_.workers)) stages_.push_back(std::move(s));
    gathered_.push_back({&node, window_stage.id});
    stages_.push_back(std::move(window_stage));
    return "";
  }

  // Cuts the partial/final pair `pair` into a map stage and a final stage whose top is `top`:
  // the pair's final aggregate, or the filters and projections right above it (a HAVING, the
  // select list), which each task applies to its own groups, so that the driver gathers only
  // the rows they keep (TPC-H Q18's HAVING keeps 57 of 1.5M groups). Empty, or why not.
  std::string CutAggregate(const PlanNode& top, const PlanNode& pair) {
    std::string why;
    auto b = Split(*pair.input->input, &why);
    if (b) why = BroadcastRefusal(b->open);
    if (!why.empty()) return why;
    b->open.root = pair.input.get();  // the partial aggregate runs in the stage below
    const int partitions = pair.keys.empty() ? 1 : options_.workers;
    Stage final_stage = NewStage(StageRole::kFinal);
    final_stage.root = &top;
    final_stage.inputs = {{pair.input.get(), b->open.id}};
    final_stage.bytes = b->open.bytes;
    final_stage.gather = true;
    final_stage.tasks = partitions;
    for (Stage& s : Close(std::move(*b), pair.keys, partitions)) stages_.push_back(std::move(s));
    gathered_.push_back({&top, final_stage.id});
    stages_.push_back(std::move(final_stage));
    return "";
  }

  void Walk(const PlanNode& node) {
    if (node.kind == PlanNode::Kind::kWindow) {
      std::string why = CutWindow(node);
      if (why.empty()) return;  // below the cut, everything runs in its stages
      refused_.push_back(why);
    }
    const PlanNode* pair = &node;
    while (pair->kind == PlanNode::Kind::kFilter || pair->kind == PlanNode::Kind::kProject) {
      pair = pair->input.get();
    }
    if (IsCutPair(*pair) && pair->input->input != nullptr) {
      const PlanNode* top = &node;
      if (auto it = repeated_.find(pair); it != repeated_.end()) {
        // The same rows in each place: gathered at the aggregate itself, whatever sits above
        // each one, and cut once.
        top = pair;
        for (const PlanNode* same : it->second) {
          if (same != pair && cut_at_.count(same) != 0) {
            repeats_.push_back({pair, same});
            return;
          }
        }
      }
      std::string why = CutAggregate(*top, *pair);
      if (why.empty()) {
        cut_at_.insert(pair);
        return;  // below a cut, everything runs in its stages
      }
      refused_.push_back(why);
      Walk(*pair->input);
      return;
    }
    if (node.input != nullptr) Walk(*node.input);
    if (node.right != nullptr) Walk(*node.right);
  }

  StageOptions options_;
  int next_id_ = 1;
  std::vector<Stage> stages_;
  std::vector<StageInput> gathered_;
  std::vector<std::string> refused_;
  // The repeated aggregates, each with its group; those cut so far; the repeats of those.
  std::map<const PlanNode*, std::vector<const PlanNode*>> repeated_;
  std::set<const PlanNode*> cut_at_;
  std::vector<std::pair<const PlanNode*, const PlanNode*>> repeats_;
};

}  // namespace

const char* StageRoleName(StageRole role) {
  switch (role) {
    case StageRole::kMap:
      return "map";
    case StageRole::kJoin:
      return "join";
    case StageRole::kFinal:
      return "final";
    case StageRole::kWindow:
      return "window";
  }
  return "?";
}

namespace {

bool ReadsConstantRow(const PlanNode& node) {
  if (node.kind == PlanNode::Kind::kScan && node.table->format == plan::kConstantRowFormat) {
    return true;
  }
  return (node.input != nullptr && ReadsConstantRow(*node.input)) ||
         (node.right != nullptr && ReadsConstantRow(*node.right));
}

}  // namespace

StagePlan PlanStages(const PlanNode& root, const StageOptions& options) {
  if (ReadsConstantRow(root)) {
    // No worker could read it (it is in no store), and a query over no table has nothing to
    // split.
    StagePlan out;
    out.workers = options.workers;
    out.not_cut_reason = "the query reads constant rows (a VALUES list or a SELECT without FROM)";
    return out;
  }
  return Planner(options).Plan(root);
}

int MapTaskCount(int64_t units, int workers) {
  const int64_t most = int64_t{std::max(1, workers)} * kMaxMapTasksPerWorker;
  return static_cast<int>(std::max<int64_t>(1, std::min(units, most)));
}

std::vector<SplitShare> SplitShares(const TableSource& table, int tasks) {
  // Units in order: (file, row group), or (file, -1) for a whole file.
  const bool by_row_group = table.row_group_bytes.size() == table.files.size();
  const bool sized = table.file_bytes.size() == table.files.size();
  std::vector<std::pair<size_t, int32_t>> units;
  for (size_t f = 0; f < table.files.size(); ++f) {
    const auto groups =
        by_row_group ? static_cast<int32_t>(table.row_group_bytes[f].size()) : int32_t{0};
    if (groups == 0) units.emplace_back(f, -1);
    for (int32_t rg = 0; rg < groups; ++rg) units.emplace_back(f, rg);
  }
  std::vector<SplitShare> out(static_cast<size_t>(std::max(1, tasks)));
  for (size_t t = 0; t < out.size(); ++t) {
    const size_t begin = units.size() * t / out.size();
    const size_t end = units.size() * (t + 1) / out.size();
    SplitShare& share = out[t];
    for (size_t u = begin; u < end; ++u) {
      const auto [file, rg] = units[u];
      if (share.files.empty() || share.files.back() != table.files[file]) {
        share.files.push_back(table.files[file]);
        if (by_row_group) share.row_group_ranges.emplace_back(std::max(rg, 0), std::max(rg, 0));
      }
      if (by_row_group && rg >= 0) share.row_group_ranges.back().second = rg + 1;
      if (rg >= 0) {
        share.bytes += table.row_group_bytes[file][static_cast<size_t>(rg)];
      } else if (sized) {
        share.bytes += table.file_bytes[file];
      }
    }
  }
  return out;
}

std::string ExplainStages(const PlanNode& root, const StagePlan& plan,
                          const std::function<std::string(const PlanNode&)>& annotate) {
  std::map<const PlanNode*, std::string> mark;
  std::ostringstream out;
  out << "distributed plan: " << plan.stage_count() << " stages on " << plan.workers
      << " workers\n";
  auto exchange = [&](const Stage& s) {
    if (s.gather) return std::string("gather to the driver");
    return std::string(s.one_row_per_key ? "one row per key, " : "") + "hash on [" +
           JoinNames(s.output_keys) + "] into " + std::to_string(s.partitions) + " partitions";
  };
  std::map<int, int> consumer;  // producer index -> consumer id
  for (const Stage& s : plan.stages) {
    for (const StageInput& in : s.inputs) consumer[in.producer] = s.id;
  }
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    out << "  stage " << s.id << " (" << StageRoleName(s.role) << "): " << s.tasks << " tasks";
    if (s.split != nullptr) {
      const TableSource& t = *s.split->table;
      out << " over " << t.name << "'s " << t.files.size() << " files";
      if (t.SplitUnits() != static_cast<int64_t>(t.files.size())) {
        out << ", " << t.SplitUnits() << " row groups";
      }
      out << " (split)";
    } else {
      std::string from;
      for (const StageInput& in : s.inputs) {
        const Stage& p = plan.stages[static_cast<size_t>(in.producer)];
        from += (from.empty() ? "" : " and ") + std::string("all ") + std::to_string(p.tasks) +
                " tasks of stage " + std::to_string(p.id);
      }
      out << ", one per partition, each reading its partition from " << from;
    }
    if (!s.broadcast.empty()) {
      // Scans read only where their keys can meet the task's share, and the rest, read whole.
      std::vector<const PlanNode*> whole;
      std::string ranged;
      const auto ranges = s.split != nullptr ? plan::SplitKeyRanges(*s.root, *s.split)
                                             : std::vector<plan::SplitKeyRange>{};
      for (const PlanNode* b : s.broadcast) {
        std::string keys;
        for (const auto& k : ranges) {
          if (k.scan != b) continue;
          keys += (keys.empty() ? "" : ", ") + k.scan_column + " by " + k.split_column;
        }
        if (keys.empty()) {
          whole.push_back(b);
        } else {
          ranged += (ranged.empty() ? "" : ", ") + b->table->name + " (" + keys + ")";
        }
      }
      out << "; broadcast by re-scan";
      if (!whole.empty()) out << ", read whole by every task: " << TableNames(whole);
      if (!ranged.empty()) {
        out << (whole.empty() ? "," : ";")
            << " read by every task where its keys can meet the task's share: " << ranged;
      }
    }
    out << "; exchange: " << exchange(s) << "\n";
    // Operators are marked with the innermost stage that runs them.
    std::set<const PlanNode*> inputs;
    for (const StageInput& in : s.inputs) inputs.insert(in.node);
    std::function<void(const PlanNode&)> marks = [&](const PlanNode& n) {
      if (inputs.count(&n) != 0) return;
      mark[&n] = "stage " + std::to_string(s.id);
      if (n.input != nullptr) marks(*n.input);
      if (n.right != nullptr) marks(*n.right);
    };
    marks(*s.root);
    if (s.split != nullptr) mark[s.split] += "] [split";
    for (const PlanNode* b : s.broadcast) mark[b] += "] [broadcast";
  }
  // The exchanges, on the operator whose rows cross them (after every stage's marks).
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    auto to = consumer.find(static_cast<int>(i));
    mark[s.root] += "] [exchange: " + exchange(s) +
                    (to == consumer.end() ? "" : " to stage " + std::to_string(to->second));
  }
  // A repeated aggregate runs nowhere: the driver reads the rows gathered at its twin again.
  for (const auto& [repeat, same] : plan.repeats) {
    int id = 0;
    for (const StageInput& g : plan.gathered) {
      if (g.node == same) id = plan.stages[static_cast<size_t>(g.producer)].id;
    }
    std::function<void(const PlanNode&)> not_run = [&](const PlanNode& n) {
      mark[&n] = "not run: the rows of stage " + std::to_string(id);
      if (n.input != nullptr) not_run(*n.input);
      if (n.right != nullptr) not_run(*n.right);
    };
    not_run(*repeat);
    mark[repeat] = "stage " + std::to_string(id) + "'s rows, read again by the driver";
  }
  for (const std::string& why : plan.refused) out << "  not cut: " << why << "\n";
  out << "  stage " << plan.driver_stage << " (driver): the rest of the plan, in-process\n";
  out << root.Explain(1, [&](const PlanNode& n) {
    auto it = mark.find(&n);
    std::string text =
        "[" + (it == mark.end() ? "stage " + std::to_string(plan.driver_stage) : it->second) + "]";
    if (annotate) {
      std::string more = annotate(n);
      if (!more.empty()) text += " " + more;
    }
    return text;
  });
  return out.str();
}

}  // namespace sluice::sql
