#include "exec/shuffle_write_node.h"

#include "exec/object_chunks.h"
#include "exec/row_partition.h"
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
      return arrow::Status::Invalid("internal: plan: shuffle_write takes one input");
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
    ARROW_RETURN_NOT_OK(WriteExchange(table, exchange_, *task_));
    task_->report->rows_out = table->num_rows();
    return arrow::Status::OK();
  }

 private:
  const plan::ShuffleWrite exchange_;
  const std::shared_ptr<JobTask> task_;
};

}  // namespace

arrow::Status WriteExchange(const std::shared_ptr<arrow::Table>& table,
                            const plan::ShuffleWrite& exchange, const JobTask& task) {
  ARROW_ASSIGN_OR_RAISE(auto parts, HashPartitionByKeys(table, exchange.keys, exchange.partitions));
  task.MaybeFail();
  // Under the task's attempt: a retried task never writes the name its lost attempt used, and
  // the next stage reads only the files the successful attempt reported.
  const plan::Fragment& f = *task.fragment;
  task.Say("writing shuffle files under '" +
           plan::ShuffleAttemptFolder(exchange.folder, f.task_name(), f.attempt) + "'");
  for (int32_t p = 0; p < exchange.partitions; ++p) {
    const std::string key = plan::ShuffleFileKey(exchange.folder, f.task_name(), f.attempt, p);
    auto file = WriteShuffleFile(task.store.get(), key, parts[static_cast<size_t>(p)]);
    if (!file.ok()) {
      return arrow::Status::IOError("writing shuffle file '", key, "': ", file.status().message());
    }
    task.report->shuffle_files.push_back(*std::move(file));
  }
  task.MaybeFail("kill-after-write");
  return arrow::Status::OK();
}

arrow::Status RegisterShuffleWriteNode(ac::ExecFactoryRegistry* registry) {
  return registry->AddFactory(kShuffleWriteNode, ShuffleWriteNode::Make);
}

}  // namespace sluice::exec
