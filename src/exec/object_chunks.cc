#include "exec/object_chunks.h"

#include <arrow/api.h>

#include "plan/fragment.h"

namespace sluice::exec {

namespace ac = arrow::acero;

std::string ObjectChunk::Describe() const {
  return key.empty() ? std::string("its shuffle input") : "object '" + key + "'";
}

arrow::Status SendChunk(ac::ExecNode* from, ac::ExecNode* to, const ObjectChunk& chunk, int* sent) {
  auto* framed = dynamic_cast<ChunkNode*>(to);
  if (framed != nullptr) {
    ARROW_RETURN_NOT_OK(framed->BeginObject(chunk.object_index, chunk.key, chunk.schema));
  }
  for (const auto& batch : chunk.batches) {
    ++*sent;
    ARROW_RETURN_NOT_OK(to->InputReceived(from, arrow::ExecBatch(*batch)));
  }
  if (framed != nullptr) ARROW_RETURN_NOT_OK(framed->EndObject());
  return arrow::Status::OK();
}

arrow::Status FinishSending(ac::ExecNode* from, ac::ExecNode* to,
                            std::shared_ptr<arrow::Schema> schema, int sent) {
  if (auto* framed = dynamic_cast<ChunkNode*>(to)) framed->SetStreamSchema(std::move(schema));
  return to->InputFinished(from, sent);
}

arrow::Result<std::shared_ptr<arrow::Schema>> WithSequenceColumn(
    const std::shared_ptr<arrow::Schema>& schema) {
  return schema->AddField(schema->num_fields(),
                          arrow::field(plan::kSequenceColumn, arrow::int64(), false));
}

arrow::Result<std::shared_ptr<arrow::Table>> Sequence(
    const std::vector<ObjectChunk>& chunks, const std::shared_ptr<arrow::Schema>& schema) {
  if (schema == nullptr) return arrow::Status::Invalid("internal: sequencing rows of no schema");
  std::vector<std::shared_ptr<arrow::RecordBatch>> out;
  ARROW_ASSIGN_OR_RAISE(auto with_seq, WithSequenceColumn(schema));
  for (const ObjectChunk& c : chunks) {
    if (c.object_index < 0) {
      out.insert(out.end(), c.batches.begin(), c.batches.end());
      continue;
    }
    int64_t row = 0;
    for (const auto& b : c.batches) {
      arrow::Int64Builder seq;
      ARROW_RETURN_NOT_OK(seq.Reserve(b->num_rows()));
      for (int64_t i = 0; i < b->num_rows(); ++i) seq.UnsafeAppend((c.object_index << 32) | row++);
      ARROW_ASSIGN_OR_RAISE(auto seq_array, seq.Finish());
      auto columns = b->columns();
      columns.push_back(seq_array);
      out.push_back(arrow::RecordBatch::Make(with_seq, b->num_rows(), columns));
    }
  }
  const bool has_seq = schema->GetFieldIndex(plan::kSequenceColumn) >= 0;
  return arrow::Table::FromRecordBatches(has_seq ? schema : with_seq, out);
}

ChunkNode::ChunkNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                     std::shared_ptr<arrow::Schema> output_schema)
    : ac::ExecNode(plan, inputs, {"input"}, std::move(output_schema)),
      stream_schema_(inputs.empty() ? nullptr : inputs[0]->output_schema()) {}

arrow::Status ChunkNode::BeginObject(int64_t object_index, std::string key,
                                     std::shared_ptr<arrow::Schema> schema) {
  if (in_object_) return arrow::Status::Invalid("internal: ", label(), ": nested object frames");
  in_object_ = true;
  chunks_.push_back(ObjectChunk{object_index, std::move(key), std::move(schema), {}});
  return arrow::Status::OK();
}

arrow::Status ChunkNode::EndObject() {
  if (!in_object_) return arrow::Status::Invalid("internal: ", label(), ": no object to end");
  in_object_ = false;
  return arrow::Status::OK();
}

void ChunkNode::SetStreamSchema(std::shared_ptr<arrow::Schema> schema) {
  stream_schema_ = std::move(schema);
}

arrow::Status ChunkNode::InputReceived(ac::ExecNode* input, arrow::ExecBatch batch) {
  if (!in_object_ && unframed_ < 0) {
    // Unframed rows (from one of Acero's sources): one chunk of rows that carry __seq.
    unframed_ = static_cast<int64_t>(chunks_.size());
    chunks_.push_back(ObjectChunk{-1, "", input->output_schema(), {}});
  }
  ObjectChunk& chunk = in_object_ ? chunks_.back() : chunks_[static_cast<size_t>(unframed_)];
  if (chunk.schema == nullptr) {
    return arrow::Status::Invalid("internal: ", label(), ": rows for ", chunk.Describe(),
                                  ", which has no schema");
  }
  ARROW_ASSIGN_OR_RAISE(auto record_batch, batch.ToRecordBatch(chunk.schema));
  chunk.batches.push_back(std::move(record_batch));
  ++received_;
  return MaybeFinish();
}

arrow::Status ChunkNode::InputFinished(ac::ExecNode* input, int total_batches) {
  total_ = total_batches;
  return MaybeFinish();
}

arrow::Status ChunkNode::MaybeFinish() {
  if (finished_ || total_ < 0 || received_ < total_) return arrow::Status::OK();
  if (in_object_)
    return arrow::Status::Invalid("internal: ", label(), ": input ended in an object");
  finished_ = true;
  return Finish(std::move(chunks_), stream_schema_);
}

}  // namespace sluice::exec
