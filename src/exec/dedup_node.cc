#include "exec/dedup_node.h"

#include <arrow/api.h>

#include "exec/dedup.h"
#include "exec/object_chunks.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;

class DedupNode : public ChunkNode {
 public:
  DedupNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
            std::shared_ptr<arrow::Schema> output_schema, const DedupNodeOptions& options)
      : ChunkNode(plan, std::move(inputs), std::move(output_schema)),
        dedup_(options.dedup),
        task_(options.task) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) {
      return arrow::Status::Invalid("internal: plan: dedup_first takes one input");
    }
    const auto& dedup = static_cast<const DedupNodeOptions&>(options);
    // Rows from a shuffle carry __seq already; rows straight from a scan or a stage get it here.
    std::shared_ptr<arrow::Schema> schema = inputs[0]->output_schema();
    if (schema->GetFieldIndex(plan::kSequenceColumn) < 0) {
      ARROW_ASSIGN_OR_RAISE(schema, WithSequenceColumn(schema));
    }
    return plan->EmplaceNode<DedupNode>(plan, std::move(inputs), std::move(schema), dedup);
  }

  const char* kind_name() const override { return "DedupNode"; }

 protected:
  arrow::Status Finish(std::vector<ObjectChunk> chunks,
                       std::shared_ptr<arrow::Schema> schema) override {
    task_->Say("deduplicating on '" + dedup_.key + "'");
    ARROW_ASSIGN_OR_RAISE(auto table, Sequence(chunks, schema));
    chunks.clear();
    ARROW_ASSIGN_OR_RAISE(auto kept,
                          DedupFirst(table, dedup_.key, &task_->report->duplicates_dropped));
    // Its chunks go on as they are. With no rows, none: the sink still has the schema, from
    // FinishSending.
    ObjectChunk out{-1, "", kept->schema(), {}};
    arrow::TableBatchReader batches(*kept);
    std::shared_ptr<arrow::RecordBatch> batch;
    while (true) {
      ARROW_RETURN_NOT_OK(batches.ReadNext(&batch));
      if (batch == nullptr) break;
      if (batch->num_rows() > 0) out.batches.push_back(std::move(batch));
    }
    int sent = 0;
    ARROW_RETURN_NOT_OK(SendChunk(this, output_, out, &sent));
    return FinishSending(this, output_, kept->schema(), sent);
  }

 private:
  const plan::DedupFirst dedup_;
  const std::shared_ptr<JobTask> task_;
};

}  // namespace

arrow::Status RegisterDedupNode(ac::ExecFactoryRegistry* registry) {
  return registry->AddFactory(kDedupNode, DedupNode::Make);
}

}  // namespace sluice::exec
