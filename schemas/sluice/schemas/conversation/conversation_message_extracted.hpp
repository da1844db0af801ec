// ConversationMessageExtracted: one row per message of a conversation, keyed by the
// conversation and the message's position, so repeated copies of a message deduplicate on
// data_hash.
#pragma once

#include <optional>
#include <string>

#include "sluice/schemas/record.hpp"

namespace sluice::schemas::conversation {

struct ConversationMessageExtracted {
  static constexpr char kTypeId[] = "sluice.examples.conversation.ConversationMessageExtracted";
  /// "<conversation_id>:<position>".
  std::string primary_key;
  /// BLAKE3 of primary_key's UTF-8 bytes.
  Digest32 data_hash{};
  std::string conversation_id;
  std::string user_id;
  /// Zero-based position of the message in the conversation.
  int64_t position = 0;
  std::string role;
  std::string content;
  std::optional<std::string> name;
  /// The request in which this message was seen, and when.
  std::string request_id;
  Timestamp received_at;

  static constexpr auto Fields() {
    using R = ConversationMessageExtracted;
    return std::make_tuple(Field("primary_key", &R::primary_key), Field("data_hash", &R::data_hash),
                           Field("conversation_id", &R::conversation_id),
                           Field("user_id", &R::user_id), Field("position", &R::position),
                           Field("role", &R::role), Field("content", &R::content),
                           Field("name", &R::name), Field("request_id", &R::request_id),
                           Field("received_at", &R::received_at));
  }
  bool operator==(const ConversationMessageExtracted&) const = default;
};

}  // namespace sluice::schemas::conversation
