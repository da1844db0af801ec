// How job nodes pass rows to each other object by object, through an Acero plan.
//
// A batch transform is called once per source object, on all of that object's rows as one
// IPC stream, and a row's place in the job's order is (object index, row within what the last
// stage emitted for the object). So the rows flowing between job nodes keep their object
// boundaries: an upstream node opens an object (BeginObject: its index, key and schema), sends
// its batches through Acero's InputReceived, and closes it (EndObject). An object may have no
// batches, or no schema at all where an `any` stage emitted no stream for it. Before
// InputFinished the upstream node tells the stream's schema (SetStreamSchema), which for an
// `any` output is only known once the first stream is emitted: such a node's Acero output
// schema is a placeholder, and job nodes read the told schema, never the placeholder.
//
// Batches that arrive without BeginObject (from one of Acero's own sources: rows read from a
// shuffle, which already carry __seq) form one chunk with object index -1.
//
// The framing relies on the plan running on one thread, so that batches arrive in the order
// they were sent; the fragment runner runs job plans on a serial executor.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/table.h>

#include <memory>
#include <string>
#include <vector>

namespace sluice::exec {

/// The rows of one source object as they travel between stages.
struct ObjectChunk {
  /// The object's index in the job's sorted object list; -1 for rows that already carry
  /// __seq (they came from a shuffle).
  int64_t object_index = -1;
  /// The source object; empty for shuffle input.
  std::string key;
  /// Null where an `any` stage emitted no stream for this object.
  std::shared_ptr<arrow::Schema> schema;
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;

  /// "object 'k'", or "its shuffle input", for messages.
  std::string Describe() const;
};

/// Sends `chunk` from `from` to `to` (from's output): framed when `to` is a ChunkNode, as plain
/// batches otherwise. Adds the number of batches sent to *sent.
arrow::Status SendChunk(arrow::acero::ExecNode* from, arrow::acero::ExecNode* to,
                        const ObjectChunk& chunk, int* sent);

/// Ends from's output: tells a ChunkNode the stream's schema (null: no stream at all), then
/// InputFinished with the number of batches sent.
arrow::Status FinishSending(arrow::acero::ExecNode* from, arrow::acero::ExecNode* to,
                            std::shared_ptr<arrow::Schema> schema, int sent);

/// The rows of `chunks` with their positions in the job order appended as __seq
/// ((object index << 32) | row within the chunk), in one table of `schema` plus __seq; chunks
/// of index -1 already carry __seq and are taken as they are. Every input batch stays one
/// batch of the table, so what is written from it is what the stages emitted.
arrow::Result<std::shared_ptr<arrow::Table>> Sequence(const std::vector<ObjectChunk>& chunks,
                                                      const std::shared_ptr<arrow::Schema>& schema);

/// `schema` with the __seq column appended.
arrow::Result<std::shared_ptr<arrow::Schema>> WithSequenceColumn(
    const std::shared_ptr<arrow::Schema>& schema);

/// A job node with one input that collects its input as object chunks and acts once the input
/// is complete (Finish): every job operator after the scan is a pipeline breaker, because a
/// transform runs over all of a task's objects before the next stage starts, so which error a
/// task reports first and what a killed task was doing are what they always were.
class ChunkNode : public arrow::acero::ExecNode {
 public:
  /// A null `output_schema` makes this a sink (no output).
  ChunkNode(arrow::acero::ExecPlan* plan, std::vector<arrow::acero::ExecNode*> inputs,
            std::shared_ptr<arrow::Schema> output_schema);

  arrow::Status BeginObject(int64_t object_index, std::string key,
                            std::shared_ptr<arrow::Schema> schema);
  arrow::Status EndObject();
  void SetStreamSchema(std::shared_ptr<arrow::Schema> schema);

  arrow::Status InputReceived(arrow::acero::ExecNode* input, arrow::ExecBatch batch) override;
  arrow::Status InputFinished(arrow::acero::ExecNode* input, int total_batches) override;
  arrow::Status StartProducing() override { return arrow::Status::OK(); }
  void PauseProducing(arrow::acero::ExecNode* output, int32_t counter) override {}
  void ResumeProducing(arrow::acero::ExecNode* output, int32_t counter) override {}

 protected:
  arrow::Status StopProducingImpl() override { return arrow::Status::OK(); }

  /// Called once, with every chunk in the order received and the input stream's schema.
  virtual arrow::Status Finish(std::vector<ObjectChunk> chunks,
                               std::shared_ptr<arrow::Schema> schema) = 0;

 private:
  arrow::Status MaybeFinish();

  std::vector<ObjectChunk> chunks_;
  bool in_object_ = false;
  /// The chunk that collects unframed batches, once there are any.
  int64_t unframed_ = -1;
  std::shared_ptr<arrow::Schema> stream_schema_;
  int received_ = 0;
  int total_ = -1;
  bool finished_ = false;
};

}  // namespace sluice::exec
