// conversation-message-extract: one ConversationMessageGateway request in, one
// ConversationMessageExtracted row per message out. A request repeats the conversation so far,
// so the same message arrives many times; primary_key (conversation id and position) and its
// BLAKE3 data_hash let the pipeline's dedup stage keep one copy.
#include <blake3.h>

#include <sluice/sdk/transform.hpp>

#include "sluice/schemas/conversation/conversation_message_extracted.hpp"
#include "sluice/schemas/conversation/conversation_message_gateway.hpp"

namespace {

using sluice::schemas::Digest32;
using sluice::schemas::conversation::ConversationMessageExtracted;
using sluice::schemas::conversation::ConversationMessageGateway;

Digest32 Blake3Of(const std::string& text) {
  blake3_hasher hasher;
  blake3_hasher_init(&hasher);
  blake3_hasher_update(&hasher, text.data(), text.size());
  Digest32 out;
  blake3_hasher_finalize(&hasher, out.data(), out.size());
  return out;
}

arrow::Status RunTransform(std::shared_ptr<arrow::RecordBatchReader> input,
                           sluice::sdk::Emitter& out) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (int64_t index = 0;; ++index) {
    ARROW_ASSIGN_OR_RAISE(auto batch, input->Next());
    if (batch == nullptr) break;
    ARROW_ASSIGN_OR_RAISE(auto requests,
                          sluice::schemas::FromRecordBatch<ConversationMessageGateway>(
                              *batch, "input batch " + std::to_string(index)));
    std::vector<ConversationMessageExtracted> rows;
    for (const ConversationMessageGateway& request : requests) {
      if (request.conversation_id.empty()) {
        return arrow::Status::Invalid("request '", request.request_id,
                                      "' has an empty conversation_id");
      }
      for (size_t i = 0; i < request.messages.size(); ++i) {
        const auto& message = request.messages[i];
        ConversationMessageExtracted row;
        row.primary_key = request.conversation_id + ":" + std::to_string(i);
        row.data_hash = Blake3Of(row.primary_key);
        row.conversation_id = request.conversation_id;
        row.user_id = request.user_id;
        row.position = static_cast<int64_t>(i);
        row.role = message.role;
        row.content = message.content;
        row.name = message.name;
        row.request_id = request.request_id;
        row.received_at = request.received_at;
        rows.push_back(std::move(row));
      }
    }
    ARROW_ASSIGN_OR_RAISE(auto extracted, sluice::schemas::ToRecordBatch(rows));
    batches.push_back(std::move(extracted));
  }
  return out.Emit(sluice::schemas::ArrowSchema<ConversationMessageExtracted>(), batches);
}

}  // namespace

SLUICE_TRANSFORM(RunTransform, "conversation-message-extract", "0.1.0",
                 sluice::schemas::conversation::ConversationMessageGateway,
                 sluice::schemas::conversation::ConversationMessageExtracted)
