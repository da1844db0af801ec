#include "exec/shuffle_write_node.h"

#include "exec/object_chunks.h"
#include "exec/shuffle.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;

class ShuffleWriteNode : public ChunkNode {
 public:
  ShuffleWriteNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                   const ShuffleWriteNodeOptions& options)
      : ChunkNode(plan, std::move(inputs), /*output_schema=*/nullptr),
        exchange_(options.exchange),
        task_(options.task) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) {
      return arrow::Status::Invalid("internal: plan: hash_exchange takes one input");
    }
    const auto& exchange = static_cast<const ShuffleWriteNodeOptions&>(options);
    return plan->EmplaceNode<ShuffleWriteNode>(plan, std::move(inputs), exchange);
  }

  const char* kind_name() const override { return "ShuffleWriteNode"; }

 protected:
  arrow::Status Finish(std::vector<ObjectChunk> chunks,
                       std::shared_ptr<arrow::Schema> schema) override {
    ARROW_ASSIGN_OR_RAISE(auto table, Sequence(chunks, schema));
    chunks.clear();
    ARROW_ASSIGN_OR_RAISE(auto parts, HashPartition(table, exchange_.key, exchange_.partitions));
    task_->MaybeFail();
    // Under the task's attempt: a retried task never writes the name its lost attempt used, and
    // the next stage reads only the files the successful attempt reported.
    const plan::Fragment& f = *task_->fragment;
    const std::string folder =
        plan::ShuffleAttemptFolder(exchange_.folder, f.task_name(), f.attempt);
    task_->Say("writing shuffle files under '" + folder + "'");
    for (int32_t p = 0; p < exchange_.partitions; ++p) {
      const std::string key = folder + "/part-" + std::to_string(p) + ".arrow";
      ARROW_ASSIGN_OR_RAISE(
          auto file, WriteShuffleFile(task_->store.get(), key, parts[static_cast<size_t>(p)]));
      task_->report->shuffle_files.push_back(std::move(file));
    }
    task_->MaybeFail("kill-after-write");
    task_->report->rows_out = table->num_rows();
    return arrow::Status::OK();
  }

 private:
  const plan::HashExchange exchange_;
  const std::shared_ptr<JobTask> task_;
};

}  // namespace

arrow::Status RegisterShuffleWriteNode(ac::ExecFactoryRegistry* registry) {
  return registry->AddFactory(kShuffleWriteNode, ShuffleWriteNode::Make);
}

}  // namespace sluice::exec
