#include "exec/call_transform_node.h"

#include <arrow/api.h>

#include "artifact/verified_loader.h"
#include "exec/batch_transform.h"
#include "exec/object_chunks.h"
#include "storage/ipc_stream.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;

class CallTransformNode : public ChunkNode {
 public:
  // An `any` output has no schema until the first stream: Acero gets an empty placeholder, and
  // the schema the stage fixes goes downstream with SetStreamSchema.
  CallTransformNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                    const CallTransformNodeOptions& options)
      : ChunkNode(
            plan, std::move(inputs),
            options.call.output_schema != nullptr ? options.call.output_schema : arrow::schema({})),
        call_(options.call),
        task_(options.task) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) {
      return arrow::Status::Invalid("internal: plan: call_transform takes one input");
    }
    const auto& call = static_cast<const CallTransformNodeOptions&>(options);
    return plan->EmplaceNode<CallTransformNode>(plan, std::move(inputs), call);
  }

  const char* kind_name() const override { return "CallTransformNode"; }

 protected:
  arrow::Status Finish(std::vector<ObjectChunk> chunks,
                       std::shared_ptr<arrow::Schema> input_schema) override {
    const std::string stage = "stage '" + call_.qualified_name + "'";
    task_->Say("loading " + stage + " (pin " + call_.pin + ")");
    ARROW_ASSIGN_OR_RAISE(auto pin, artifact::Digest::FromHex(call_.pin, "pin_artifact_hash"));
    artifact::ArtifactCache cache(task_->store, task_->fragment->session.cache_dir);
    ARROW_ASSIGN_OR_RAISE(auto verified, cache.FetchVerified(pin));
    ARROW_ASSIGN_OR_RAISE(auto library, artifact::LoadVerified(verified, call_.qualified_name));
    const std::shared_ptr<arrow::Schema>& declared_input = library->identity().input_arrow_schema;
    // The declared output schema; for an `any` output, the first stream emitted fixes it.
    std::shared_ptr<arrow::Schema> output_schema = call_.output_schema;
    BatchTransform transform(library, call_.output_schema);
    // Through bytes (a library without the Arrow C data entry), each object's input stream is
    // encoded into the same memory: those outputs are copies, so nothing refers to an input once
    // its call returns. Through Arrow C data an output may share the input's arrays.
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::ResizableBuffer> input_bytes,
                          arrow::AllocateResizableBuffer(0));
    for (ObjectChunk& chunk : chunks) {
      const std::string object = chunk.Describe();
      task_->Say("running " + stage + " on " + object);
      if (chunk.schema == nullptr) {
        // The stage before writes `any` and emitted no stream at all for this object, so
        // there is no stream to pass on.
        continue;
      }
      if (declared_input != nullptr) {
        // The stage before may write `any`: what it wrote is checked against what this one
        // declares it reads, when the data flows.
        ARROW_RETURN_NOT_OK(
            storage::CheckSchema(*declared_input, *chunk.schema, stage + " input from " + object));
      }
      auto outputs = transform.CallBatches(chunk.schema, chunk.batches, input_bytes);
      if (!outputs.ok()) {
        return arrow::Status::Invalid(stage, " on ", object, ": ", outputs.status().message());
      }
      chunk.batches.clear();
      for (size_t i = 0; i < outputs->size(); ++i) {
        const storage::IpcStream& stream = (*outputs)[i];
        if (output_schema == nullptr) {
          output_schema = stream.schema;
        } else if (call_.output_schema == nullptr) {
          ARROW_RETURN_NOT_OK(storage::CheckSchema(
              *output_schema, *stream.schema,
              "transform '" + call_.qualified_name + "' (output schema 'any') output stream " +
                  std::to_string(i + 1) + " on " + object +
                  " differs from the first stream it emitted"));
        }
        for (const auto& b : stream.batches) {
          chunk.batches.push_back(b->ReplaceSchema(output_schema).ValueOr(b));
        }
      }
      chunk.schema = output_schema;
    }
    // Objects before the first stream of an `any` output hold no rows; they get its schema.
    int sent = 0;
    for (ObjectChunk& chunk : chunks) {
      if (chunk.schema == nullptr) chunk.schema = output_schema;
      ARROW_RETURN_NOT_OK(SendChunk(this, output_, chunk, &sent));
    }
    return FinishSending(this, output_, output_schema, sent);
  }

 private:
  const plan::CallTransform call_;
  const std::shared_ptr<JobTask> task_;
};

}  // namespace

arrow::Status RegisterCallTransformNode(ac::ExecFactoryRegistry* registry) {
  return registry->AddFactory(kCallTransformNode, CallTransformNode::Make);
}

}  // namespace sluice::exec
