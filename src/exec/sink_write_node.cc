#include "exec/sink_write_node.h"

#include "exec/object_chunks.h"
#include "exec/sink_writer.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;

class SinkWriteNode : public ChunkNode {
 public:
  SinkWriteNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                const SinkWriteNodeOptions& options)
      : ChunkNode(plan, std::move(inputs), /*output_schema=*/nullptr),
        sink_(options.sink),
        task_(options.task) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) {
      return arrow::Status::Invalid("internal: plan: write_sink takes one input");
    }
    const auto& sink = static_cast<const SinkWriteNodeOptions&>(options);
    return plan->EmplaceNode<SinkWriteNode>(plan, std::move(inputs), sink);
  }

  const char* kind_name() const override { return "SinkWriteNode"; }

 protected:
  arrow::Status Finish(std::vector<ObjectChunk> chunks,
                       std::shared_ptr<arrow::Schema> schema) override {
    // The last stage writes `any` and emitted no stream in this task: no rows and no schema,
    // so no part.
    if (schema == nullptr) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(auto table, Sequence(chunks, schema));
    chunks.clear();
    task_->MaybeFail();
    task_->Say("writing sink part '" + sink_.key + "'");
    ARROW_ASSIGN_OR_RAISE(auto file,
                          WriteSinkPart(task_->store.get(), sink_.key, sink_.format, table));
    task_->report->rows_out = file.rows;
    task_->report->files.push_back(std::move(file));
    return arrow::Status::OK();
  }

 private:
  const plan::WriteSink sink_;
  const std::shared_ptr<JobTask> task_;
};

}  // namespace

arrow::Status RegisterSinkWriteNode(ac::ExecFactoryRegistry* registry) {
  return registry->AddFactory(kSinkWriteNode, SinkWriteNode::Make);
}

}  // namespace sluice::exec
