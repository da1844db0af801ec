// conversation-message-extract: one ConversationMessageGateway request in, one
// ConversationMessageExtracted row per message out. A request repeats the conversation so far,
// so the same message arrives many times; primary_key (conversation id and position) and its
// BLAKE3 data_hash let the pipeline's dedup stage keep one copy.
//
// It works on columns, not records: the messages' role, content and name columns are the
// flattened list values as they are (no copy), the request's columns are repeated with one
// Take, and only primary_key and data_hash are built row by row.
#include <arrow/compute/api.h>
#include <blake3.h>

#include <sluice/sdk/transform.hpp>

#include "sluice/schemas/conversation/conversation_message_extracted.hpp"
#include "sluice/schemas/conversation/conversation_message_gateway.hpp"

namespace {

using sluice::schemas::conversation::ConversationMessageExtracted;
using sluice::schemas::conversation::ConversationMessageGateway;

arrow::Result<std::shared_ptr<arrow::RecordBatch>> Extract(const arrow::RecordBatch& requests,
                                                           int64_t batch_index) {
  if (requests.num_rows() == 0) {
    return sluice::schemas::ToRecordBatch(std::vector<ConversationMessageExtracted>{});
  }
  const auto& request_id = static_cast<const arrow::StringArray&>(*requests.column(0));
  const auto& conversation = static_cast<const arrow::StringArray&>(*requests.column(2));
  const auto& messages = static_cast<const arrow::ListArray&>(*requests.column(5));
  const auto& flat = static_cast<const arrow::StructArray&>(*messages.values());

  // Which request each output row comes from, and its position in that request's messages.
  arrow::Int64Builder parents, positions;
  arrow::StringBuilder primary_keys;
  arrow::FixedSizeBinaryBuilder hashes(arrow::fixed_size_binary(32));
  const int64_t first = messages.value_offset(0);
  const int64_t total = messages.value_offset(messages.length()) - first;
  ARROW_RETURN_NOT_OK(parents.Reserve(total));
  ARROW_RETURN_NOT_OK(positions.Reserve(total));
  ARROW_RETURN_NOT_OK(hashes.Reserve(total));
  std::string key;
  for (int64_t r = 0; r < messages.length(); ++r) {
    const std::string_view conv = conversation.GetView(r);
    if (conv.empty()) {
      return arrow::Status::Invalid("request '", request_id.GetView(r),
                                    "' has an empty conversation_id (input batch ", batch_index,
                                    ", row ", r, ")");
    }
    for (int64_t i = 0; i < messages.value_length(r); ++i) {
      key.assign(conv);
      key += ':';
      key += std::to_string(i);
      uint8_t digest[32];
      blake3_hasher hasher;
      blake3_hasher_init(&hasher);
      blake3_hasher_update(&hasher, key.data(), key.size());
      blake3_hasher_finalize(&hasher, digest, sizeof(digest));
      parents.UnsafeAppend(r);
      positions.UnsafeAppend(i);
      hashes.UnsafeAppend(digest);
      ARROW_RETURN_NOT_OK(primary_keys.Append(key));
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto parent_idx, parents.Finish());
  auto take = [&](int column) -> arrow::Result<std::shared_ptr<arrow::Array>> {
    ARROW_ASSIGN_OR_RAISE(auto datum, arrow::compute::Take(requests.column(column), parent_idx));
    return datum.make_array();
  };
  ARROW_ASSIGN_OR_RAISE(auto pk, primary_keys.Finish());
  ARROW_ASSIGN_OR_RAISE(auto hash, hashes.Finish());
  ARROW_ASSIGN_OR_RAISE(auto position, positions.Finish());
  ARROW_ASSIGN_OR_RAISE(auto conversation_ids, take(2));
  ARROW_ASSIGN_OR_RAISE(auto user_ids, take(1));
  ARROW_ASSIGN_OR_RAISE(auto request_ids, take(0));
  ARROW_ASSIGN_OR_RAISE(auto received_at, take(4));
  // role, content and name: the message structs' own columns, sliced to this batch's messages.
  auto role = flat.field(0)->Slice(first, total);
  auto content = flat.field(1)->Slice(first, total);
  auto name = flat.field(2)->Slice(first, total);
  return arrow::RecordBatch::Make(sluice::schemas::ArrowSchema<ConversationMessageExtracted>(),
                                  total,
                                  {pk, hash, conversation_ids, user_ids, position, role, content,
                                   name, request_ids, received_at});
}

arrow::Status RunTransform(std::shared_ptr<arrow::RecordBatchReader> input,
                           sluice::sdk::Emitter& out) {
  ARROW_RETURN_NOT_OK(arrow::compute::Initialize());
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (int64_t index = 0;; ++index) {
    ARROW_ASSIGN_OR_RAISE(auto batch, input->Next());
    if (batch == nullptr) break;
    ARROW_ASSIGN_OR_RAISE(auto extracted, Extract(*batch, index));
    batches.push_back(std::move(extracted));
  }
  return out.Emit(sluice::schemas::ArrowSchema<ConversationMessageExtracted>(), batches);
}

}  // namespace

SLUICE_TRANSFORM(RunTransform, "conversation-message-extract", "0.2.0",
                 sluice::schemas::conversation::ConversationMessageGateway,
                 sluice::schemas::conversation::ConversationMessageExtracted)
