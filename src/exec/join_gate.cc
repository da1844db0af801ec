#include "exec/join_gate.h"

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/acero/util.h>
#include <arrow/util/future.h>

#include <atomic>
#include <mutex>
#include <variant>

#include "exec/int_key_join.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;

constexpr char kBuiltFactory[] = "sluice_join_built";
constexpr char kHoldFactory[] = "sluice_join_hold";

// Shared by a probe side's hold node and the build sides it waits for: its own join's, and
// those of the joins stacked on it, whose Bloom filters Acero pushes down to that join (or,
// where a join pushes none, at which the rows from below would queue). It opens
// once every build side has ended, whichever way (its last batch passed, or the plan stopped).
struct Gate {
  arrow::Future<> open = arrow::Future<>::Make();
  std::atomic<int> pending{0};
  std::atomic<bool> opened{false};

  void Wait() { pending.fetch_add(1); }
  void Ended() {
    if (pending.fetch_sub(1) == 1) Open();
  }
  void Open() {
    if (!opened.exchange(true)) open.MarkFinished();
  }
};

class GateOptions : public ac::ExecNodeOptions {
 public:
  explicit GateOptions(std::shared_ptr<Gate> gate) : gate(std::move(gate)) {}
  std::shared_ptr<Gate> gate;
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

template <typename Node>
arrow::Result<ac::ExecNode*> MakeNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                      const ac::ExecNodeOptions& options) {
  if (inputs.size() != 1) return arrow::Status::Invalid("internal: a join gate takes one input");
  return plan->EmplaceNode<Node>(plan, std::move(inputs),
                                 static_cast<const GateOptions&>(options).gate);
}

// Passes the build side's batches through and opens the gate once the last one has passed.
class BuiltNode : public PassThroughNode {
 public:
  using PassThroughNode::PassThroughNode;
  const char* kind_name() const override { return "JoinBuiltNode"; }

  arrow::Status InputReceived(ac::ExecNode*, arrow::compute::ExecBatch batch) override {
    ARROW_RETURN_NOT_OK(output_->InputReceived(this, std::move(batch)));
    if (passed_.Increment()) gate_->Ended();
    return arrow::Status::OK();
  }
  arrow::Status InputFinished(ac::ExecNode*, int total_batches) override {
    ARROW_RETURN_NOT_OK(output_->InputFinished(this, total_batches));
    if (passed_.SetTotal(total_batches)) gate_->Ended();
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
  ac::AtomicCounter passed_;
};

// Passes the probe side's batches through. Until the gate opens it lets kProbeAheadBytes through
// (the probe scan overlaps the build, as it would without the gate) and then pauses its input;
// the gate's opening resumes it. Its own output's pause requests are not passed on: Acero's
// counters for them would interleave with the gate's, and a hash join does not send any.
class HoldNode : public PassThroughNode {
 public:
  using PassThroughNode::PassThroughNode;
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
    }
    return output_->InputReceived(this, std::move(batch));
  }
  arrow::Status InputFinished(ac::ExecNode*, int total_batches) override {
    return output_->InputFinished(this, total_batches);
  }
  void PauseProducing(ac::ExecNode*, int32_t) override {}
  void ResumeProducing(ac::ExecNode*, int32_t) override {}

 private:
  // How much of the probe side may queue in the join while its hash table is not built yet.
  // With two cores the build side keeps both busy, so more overlap buys little: 32 MiB held
  // TPC-H Q21 at SF 1 at ~192 MB peak and Q3 at ~200 MB; 8 MiB at ~156 and ~165 MB.
  static constexpr int64_t kProbeAheadBytes = int64_t{8} << 20;

  std::atomic<int64_t> ahead_bytes_{0};
  std::atomic<bool> paused_{false};
};

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

arrow::Status GateProbeOnBuild(ac::Declaration* probe, ac::Declaration* build) {
  ARROW_RETURN_NOT_OK(RegisterGate());
  // A probe side that is itself a hash join stays as it is: Acero pushes each join's Bloom filter
  // down to a hash join directly below it on the probe side, and a node between them would stop
  // that (Q5's chain of five joins takes 10% more CPU). The join at the bottom of the chain
  // queues its probe batches until every filter pushed to it has come, so its gate waits for
  // this build side too.
  ac::Declaration* bottom = probe;
  while ((bottom->factory_name == "hashjoin" || bottom->factory_name == kIntKeyJoinFactory) &&
         !bottom->inputs.empty() && std::holds_alternative<ac::Declaration>(bottom->inputs[0])) {
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
  *build = ac::Declaration::Sequence({std::move(*build), {kBuiltFactory, GateOptions(gate)}});
  return arrow::Status::OK();
}

}  // namespace sluice::exec
