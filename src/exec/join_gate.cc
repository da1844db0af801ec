#include "exec/join_gate.h"

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/acero/query_context.h>
#include <arrow/acero/util.h>
#include <arrow/array/array_primitive.h>
#include <arrow/buffer.h>
#include <arrow/chunked_array.h>
#include <arrow/compute/api_vector.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/bitmap_ops.h>
#include <arrow/util/future.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "exec/filter_node.h"
#include "exec/int_key_join.h"
#include "plan/set_kernels.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;

namespace cp = arrow::compute;

constexpr char kBuiltFactory[] = "sluice_join_built";
constexpr char kHoldFactory[] = "sluice_join_hold";

// A hashed side with more key rows than this keeps no key set: its keys are held until the
// side ends (8 bytes a row at most, beside the side's own rows that the join holds anyway).
constexpr int64_t kMaxKeyRows = int64_t{1} << 22;

// A key set that has seen this many probe rows and dropped fewer than one in kMinDropShare of
// them stops filtering: its lookups cost more than the join's Bloom filter and probe save.
constexpr int64_t kJudgeAfterRows = int64_t{1} << 18;
constexpr int64_t kMinDropShare = 16;

// The keys of one join's hashed side, collected as its batches pass, to drop the probe rows at
// the bottom of its chain whose key the join cannot match (exec/join_gate.h).
class KeySet {
 public:
  KeySet(std::string probe_name, std::string build_name)
      : probe_name_(std::move(probe_name)), build_name_(std::move(build_name)) {}

  const std::string& probe_name() const { return probe_name_; }
  const std::string& build_name() const { return build_name_; }

  // Holds `column`'s keys (the hashed side's key column of one batch).
  void Add(const arrow::Datum& column) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_) return;
    rows_ += column.length();
    if (!column.is_array() || rows_ > kMaxKeyRows) {
      failed_ = true;
      chunks_.clear();
      return;
    }
    chunks_.push_back(column.make_array());
  }

  // Once every batch of the side has passed: the set, where its keys are dense integers.
  void Finish(const std::shared_ptr<arrow::DataType>& type) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_ || type == nullptr) return;
    auto keys = arrow::ChunkedArray::Make(std::move(chunks_), type);
    chunks_.clear();
    if (!keys.ok()) return;
    // Whether any key is not NULL: an inner join matches none of its probe rows otherwise.
    if ((*keys)->length() == (*keys)->null_count()) {
      empty_ = true;
      return;
    }
    arrow::Datum values(*keys);
    if ((*keys)->null_count() != 0) {
      auto kept = cp::DropNull(values);
      if (!kept.ok()) return;
      values = *kept;
    }
    set_ = plan::IntBitSet::Make(values, *type);
  }

  // After Finish: whether it filters, and with what (every row dropped where `empty()`).
  bool filters() const { return (set_.has_value() || empty_) && active_.load(); }
  bool empty() const { return empty_; }
  const plan::IntBitSet& set() const { return *set_; }

  // Counts `rows` probe rows of which `kept` passed, and stops filtering where too few drop.
  void Judge(int64_t rows, int64_t kept) {
    const int64_t seen = seen_.fetch_add(rows) + rows;
    const int64_t dropped = dropped_.fetch_add(rows - kept) + rows - kept;
    if (seen >= kJudgeAfterRows && dropped * kMinDropShare < seen) active_.store(false);
  }

 private:
  const std::string probe_name_;
  const std::string build_name_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<arrow::Array>> chunks_;
  int64_t rows_ = 0;
  bool failed_ = false;  // more rows than kMaxKeyRows, or a key that is no array
  bool empty_ = false;   // every key NULL, or none
  std::optional<plan::IntBitSet> set_;
  std::atomic<bool> active_{true};
  std::atomic<int64_t> seen_{0};
  std::atomic<int64_t> dropped_{0};
};

// Shared by a probe side's hold node and the build sides it waits for: its own join's, and
// those of the joins stacked on it, whose Bloom filters Acero pushes down to that join (or,
// where a join pushes none, at which the rows from below would queue). It opens
// once every build side has ended, whichever way (its last batch passed, or the plan stopped).
// The key sets of the joins whose probe rows it may filter are complete once every build side
// has passed its last batch; they are never used where the plan stopped first.
struct Gate {
  arrow::Future<> open = arrow::Future<>::Make();
  std::atomic<int> pending{0};
  std::atomic<bool> opened{false};
  std::vector<std::shared_ptr<KeySet>> key_sets;
  std::atomic<bool> keys_complete{false};

  void Wait() { pending.fetch_add(1); }
  void Ended() {
    if (pending.fetch_sub(1) == 1) {
      keys_complete.store(true);
      Open();
    }
  }
  void Open() {
    if (!opened.exchange(true)) open.MarkFinished();
  }
};

class GateOptions : public ac::ExecNodeOptions {
 public:
  explicit GateOptions(std::shared_ptr<Gate> gate,
                       std::vector<std::shared_ptr<KeySet>> key_sets = {})
      : gate(std::move(gate)), key_sets(std::move(key_sets)) {}
  std::shared_ptr<Gate> gate;
  std::vector<std::shared_ptr<KeySet>> key_sets;  // a build side's, where its join filters
};

// A node that hands each batch on as it comes, on the caller's thread. (Acero's MapNode costs
// measurably more per batch, and a probe side passes through one of these per join.)
class PassThroughNode : public ac::ExecNode {
 public:
  PassThroughNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs, std::shared_ptr<Gate> gate)
      : ExecNode(plan, inputs, {"input"}, inputs[0]->output_schema()), gate_(std::move(gate)) {}

  const arrow::compute::Ordering& ordering() const override { return inputs_[0]->ordering(); }
  arrow::Status StartProducing() override { return arrow::Status::OK(); }

 protected:
  arrow::Status StopProducingImpl() override { return arrow::Status::OK(); }

  std::shared_ptr<Gate> gate_;
};

// Passes the build side's batches through, holding their keys where its join filters probe
// rows, and opens the gate once the last one has passed.
class BuiltNode : public PassThroughNode {
 public:
  BuiltNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs, std::shared_ptr<Gate> gate,
            const std::vector<std::shared_ptr<KeySet>>& key_sets)
      : PassThroughNode(plan, std::move(inputs), std::move(gate)) {
    const arrow::Schema& schema = *output_schema();
    for (const auto& key_set : key_sets) {
      const int index = schema.GetFieldIndex(key_set->build_name());
      // Keys of other types make no set: they are not held.
      if (index >= 0 && plan::IntBitSet::Holds(*schema.field(index)->type())) {
        keys_.push_back({key_set, index, schema.field(index)->type()});
      }
    }
  }
  const char* kind_name() const override { return "JoinBuiltNode"; }

  arrow::Status InputReceived(ac::ExecNode*, cp::ExecBatch batch) override {
    for (const auto& key : keys_) key.set->Add(batch.values[key.index]);
    ARROW_RETURN_NOT_OK(output_->InputReceived(this, std::move(batch)));
    if (passed_.Increment()) End();
    return arrow::Status::OK();
  }
  arrow::Status InputFinished(ac::ExecNode*, int total_batches) override {
    ARROW_RETURN_NOT_OK(output_->InputFinished(this, total_batches));
    if (passed_.SetTotal(total_batches)) End();
    return arrow::Status::OK();
  }
  void PauseProducing(ac::ExecNode*, int32_t counter) override {
    inputs_[0]->PauseProducing(this, counter);
  }
  void ResumeProducing(ac::ExecNode*, int32_t counter) override {
    inputs_[0]->ResumeProducing(this, counter);
  }

 protected:
  arrow::Status StopProducingImpl() override {
    gate_->Open();
    return arrow::Status::OK();
  }

 private:
  void End() {
    for (const auto& key : keys_) key.set->Finish(key.type);
    gate_->Ended();
  }

  // A key set, with its key's index in the side's batches and its type.
  struct Key {
    std::shared_ptr<KeySet> set;
    int index;
    std::shared_ptr<arrow::DataType> type;
  };

  ac::AtomicCounter passed_;
  std::vector<Key> keys_;
};

// Passes the probe side's batches through. Until the gate opens it lets kProbeAheadBytes through
// (the probe scan overlaps the build, as it would without the gate) and then pauses its input;
// the gate's opening resumes it. Its own output's pause requests are not passed on: Acero's
// counters for them would interleave with the gate's, and a hash join does not send any.
// Once the gate has opened with every key set complete, it drops the rows whose key a join
// above cannot match.
class HoldNode : public PassThroughNode {
 public:
  HoldNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs, std::shared_ptr<Gate> gate,
           const std::vector<std::shared_ptr<KeySet>>&)
      : PassThroughNode(plan, std::move(inputs), std::move(gate)) {
    const arrow::Schema& schema = *output_schema();
    for (const auto& key_set : gate_->key_sets) {
      const int index = schema.GetFieldIndex(key_set->probe_name());
      if (index >= 0) probe_keys_.emplace_back(key_set.get(), index);
    }
  }
  const char* kind_name() const override { return "JoinHoldNode"; }

  arrow::Status StartProducing() override {
    // The gate opens while this plan runs (the build side's node opens it at the latest when it
    // is stopped), so the node is alive when the callback runs. Counters: 1 pauses, 2 resumes;
    // a pause that arrives after the resume is ignored for its lower counter.
    gate_->open.AddCallback([this](const arrow::Status&) { inputs_[0]->ResumeProducing(this, 2); });
    return arrow::Status::OK();
  }
  arrow::Status InputReceived(ac::ExecNode*, arrow::compute::ExecBatch batch) override {
    if (!paused_.load(std::memory_order_relaxed) && !gate_->opened.load()) {
      const int64_t size = batch.TotalBufferSize();
      if (ahead_bytes_.fetch_add(size) + size > kProbeAheadBytes && !paused_.exchange(true)) {
        inputs_[0]->PauseProducing(this, 1);
      }
    } else if (!probe_keys_.empty() && gate_->keys_complete.load()) {
      ARROW_ASSIGN_OR_RAISE(batch, KeepMatchable(std::move(batch)));
    }
    return output_->InputReceived(this, std::move(batch));
  }
  arrow::Status InputFinished(ac::ExecNode*, int total_batches) override {
    return output_->InputFinished(this, total_batches);
  }
  void PauseProducing(ac::ExecNode*, int32_t) override {}
  void ResumeProducing(ac::ExecNode*, int32_t) override {}

 private:
  // `batch` without the rows whose key some key set lacks (a NULL key is in none).
  arrow::Result<cp::ExecBatch> KeepMatchable(cp::ExecBatch batch) {
    const int64_t length = batch.length;
    if (length == 0) return batch;
    arrow::MemoryPool* pool = plan()->query_context()->memory_pool();
    std::shared_ptr<arrow::Buffer> mask;
    int64_t kept = length;
    for (const auto& [key_set, index] : probe_keys_) {
      if (!key_set->filters()) continue;
      if (key_set->empty()) return batch.Slice(0, 0);
      const arrow::Datum& column = batch.values[index];
      if (!column.is_array() || !column.type()->Equals(key_set->set().type())) continue;
      const arrow::ArraySpan keys(*column.array());
      if (mask == nullptr) {
        ARROW_ASSIGN_OR_RAISE(mask, arrow::AllocateBitmap(length, pool));
        key_set->set().Test(keys, mask->mutable_data(), 0);
      } else {
        // Only the rows that the sets before kept are looked up.
        key_set->set().Refine(keys, mask->mutable_data());
      }
      const int64_t before = kept;
      kept = arrow::internal::CountSetBits(mask->data(), 0, length);
      key_set->Judge(before, kept);
      if (kept == 0) return batch.Slice(0, 0);
    }
    if (kept == length) return batch;
    auto mask_array = std::make_shared<arrow::BooleanArray>(length, std::move(mask));
    return KeepRows(std::move(batch), arrow::Datum(mask_array),
                    plan()->query_context()->exec_context());
  }

  // The key sets that filter this probe side, each with its key's index in the batches.
  std::vector<std::pair<KeySet*, int>> probe_keys_;

  // How much of the probe side may queue in the join while its hash table is not built yet.
  // With two cores the build side keeps both busy, so more overlap buys little: 32 MiB held
  // TPC-H Q21 at SF 1 at ~192 MB peak and Q3 at ~200 MB; 8 MiB at ~156 and ~165 MB.
  static constexpr int64_t kProbeAheadBytes = int64_t{8} << 20;

  std::atomic<int64_t> ahead_bytes_{0};
  std::atomic<bool> paused_{false};
};

template <typename Node>
arrow::Result<ac::ExecNode*> MakeNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                      const ac::ExecNodeOptions& options) {
  if (inputs.size() != 1) return arrow::Status::Invalid("internal: a join gate takes one input");
  const auto& gate_options = static_cast<const GateOptions&>(options);
  return plan->EmplaceNode<Node>(plan, std::move(inputs), gate_options.gate, gate_options.key_sets);
}

// Whether a join of `type` drops the probe rows that match no hashed row, passing the others'
// columns on as they are.
bool DropsUnmatchedProbeRows(ac::JoinType type) {
  return type == ac::JoinType::INNER || type == ac::JoinType::LEFT_SEMI;
}

arrow::Status RegisterGate() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    auto* registry = ac::default_exec_factory_registry();
    status = registry->AddFactory(kBuiltFactory, MakeNode<BuiltNode>);
    if (status.ok()) status = registry->AddFactory(kHoldFactory, MakeNode<HoldNode>);
  });
  return status;
}

}  // namespace

arrow::Status GateProbeOnBuild(ac::Declaration* probe, ac::Declaration* build,
                               const ac::HashJoinNodeOptions& options, bool filter_probe) {
  ARROW_RETURN_NOT_OK(RegisterGate());
  // A probe side that is itself a hash join stays as it is: Acero pushes each join's Bloom filter
  // down to a hash join directly below it on the probe side, and a node between them would stop
  // that (Q5's chain of five joins takes 10% more CPU). The join at the bottom of the chain
  // queues its probe batches until every filter pushed to it has come, so its gate waits for
  // this build side too.
  // The bottom's probe rows may be filtered by this join's keys where it and every join below
  // it keep only probe rows that match, with their columns as they are.
  filter_probe = filter_probe && DropsUnmatchedProbeRows(options.join_type);
  ac::Declaration* bottom = probe;
  while ((bottom->factory_name == "hashjoin" || bottom->factory_name == kIntKeyJoinFactory) &&
         !bottom->inputs.empty() && std::holds_alternative<ac::Declaration>(bottom->inputs[0])) {
    filter_probe = filter_probe &&
                   DropsUnmatchedProbeRows(
                       static_cast<const ac::HashJoinNodeOptions&>(*bottom->options).join_type);
    bottom = &std::get<ac::Declaration>(bottom->inputs[0]);
  }
  std::shared_ptr<Gate> gate;
  if (bottom == probe) {
    gate = std::make_shared<Gate>();
    *probe = ac::Declaration::Sequence({std::move(*probe), {kHoldFactory, GateOptions(gate)}});
  } else if (bottom->factory_name == kHoldFactory) {
    gate = static_cast<const GateOptions&>(*bottom->options).gate;
  } else {
    return arrow::Status::OK();  // an ungated chain (its bottom probe side was no plain input)
  }
  gate->Wait();
  // A key set for each key pair whose names are plain: a row must match every key, and each
  // filters on its own (TPC-H Q9's (l_suppkey, l_partkey) drops rows by the part only).
  std::vector<std::shared_ptr<KeySet>> key_sets;
  for (size_t i = 0; filter_probe && i < options.left_keys.size() && i < options.right_keys.size();
       ++i) {
    const bool equal = options.key_cmp.empty() || options.key_cmp[i] == ac::JoinKeyCmp::EQ;
    const std::string* probe_name = options.left_keys[i].name();
    const std::string* build_name = options.right_keys[i].name();
    if (equal && probe_name != nullptr && build_name != nullptr) {
      key_sets.push_back(std::make_shared<KeySet>(*probe_name, *build_name));
      gate->key_sets.push_back(key_sets.back());
    }
  }
  *build = ac::Declaration::Sequence(
      {std::move(*build), {kBuiltFactory, GateOptions(gate, std::move(key_sets))}});
  return arrow::Status::OK();
}

}  // namespace sluice::exec
