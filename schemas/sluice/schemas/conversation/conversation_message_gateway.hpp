// ConversationMessageGateway: one logged request to the model gateway. Each request repeats the
// conversation so far, which is why the same message appears in many requests.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sluice/schemas/record.hpp"

namespace sluice::schemas::conversation {

/// One message as sent to the model.
struct GatewayMessage {
  static constexpr char kTypeId[] = "sluice.examples.conversation.GatewayMessage";
  std::string role;
  std::string content;
  std::optional<std::string> name;

  static constexpr auto Fields() {
    return std::make_tuple(Field("role", &GatewayMessage::role),
                           Field("content", &GatewayMessage::content),
                           Field("name", &GatewayMessage::name));
  }
  bool operator==(const GatewayMessage&) const = default;
};

struct ConversationMessageGateway {
  static constexpr char kTypeId[] = "sluice.examples.conversation.ConversationMessageGateway";
  std::string request_id;
  std::string user_id;
  std::string conversation_id;
  std::string model;
  Timestamp received_at;
  std::vector<GatewayMessage> messages;

  static constexpr auto Fields() {
    return std::make_tuple(Field("request_id", &ConversationMessageGateway::request_id),
                           Field("user_id", &ConversationMessageGateway::user_id),
                           Field("conversation_id", &ConversationMessageGateway::conversation_id),
                           Field("model", &ConversationMessageGateway::model),
                           Field("received_at", &ConversationMessageGateway::received_at),
                           Field("messages", &ConversationMessageGateway::messages));
  }
  bool operator==(const ConversationMessageGateway&) const = default;
};

}  // namespace sluice::schemas::conversation
