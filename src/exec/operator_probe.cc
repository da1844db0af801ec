#include "exec/operator_probe.h"

#include <arrow/acero/map_node.h>
#include <arrow/acero/options.h>

#include <cstdio>
#include <mutex>

#include "exec/kept_rows.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;

constexpr char kProbeFactory[] = "sluice_probe";

class ProbeOptions : public ac::ExecNodeOptions {
 public:
  explicit ProbeOptions(std::shared_ptr<OperatorStats> stats) : stats(std::move(stats)) {}
  std::shared_ptr<OperatorStats> stats;
};

class ProbeNode : public ac::MapNode {
 public:
  ProbeNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
            std::shared_ptr<OperatorStats> stats)
      : MapNode(plan, inputs, inputs[0]->output_schema()),
        stats_(std::move(stats)),
        kept_rows_(KeptRowsIndex(*inputs[0]->output_schema())) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) return arrow::Status::Invalid("internal: a probe takes one input");
    const auto& probe = static_cast<const ProbeOptions&>(options);
    return plan->EmplaceNode<ProbeNode>(plan, std::move(inputs), probe.stats);
  }

  const char* kind_name() const override { return "ProbeNode"; }

 protected:
  arrow::Result<arrow::compute::ExecBatch> ProcessBatch(arrow::compute::ExecBatch batch) override {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - stats_->start)
                            .count();
    // Rows a filter marked rather than dropped count as dropped (exec/kept_rows.h).
    stats_->rows += kept_rows_ >= 0 ? CountKeptRows(batch, kept_rows_) : batch.length;
    ++stats_->batches;
    int64_t expected = -1;
    stats_->first_ns.compare_exchange_strong(expected, now);
    int64_t last = stats_->last_ns.load();
    while (last < now && !stats_->last_ns.compare_exchange_weak(last, now)) {
    }
    return batch;
  }

 private:
  std::shared_ptr<OperatorStats> stats_;
  const int kept_rows_;  // the input's kKeptRowsColumn, or -1
};

arrow::Status RegisterProbe() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    status = ac::default_exec_factory_registry()->AddFactory(kProbeFactory, ProbeNode::Make);
  });
  return status;
}

}  // namespace

std::string OperatorStats::ToString() const {
  char text[160];
  std::snprintf(text, sizeof(text), "rows=%lld batches=%lld first=%.1f ms done=%.1f ms",
                static_cast<long long>(rows.load()), static_cast<long long>(batches.load()),
                first_ns.load() < 0 ? 0.0 : static_cast<double>(first_ns.load()) / 1e6,
                last_ns.load() < 0 ? 0.0 : static_cast<double>(last_ns.load()) / 1e6);
  return text;
}

arrow::Result<ac::Declaration> WithProbe(ac::Declaration decl,
                                         std::shared_ptr<OperatorStats> stats) {
  ARROW_RETURN_NOT_OK(RegisterProbe());
  return ac::Declaration::Sequence(
      {std::move(decl), {kProbeFactory, ProbeOptions(std::move(stats))}});
}

}  // namespace sluice::exec
