#include "storage/schema_message.h"

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <arrow/type.h>

namespace sluice::storage {

arrow::Result<std::string> SerializeSchemaMessage(const arrow::Schema& schema) {
  ARROW_ASSIGN_OR_RAISE(auto buffer, arrow::ipc::SerializeSchema(schema));
  return buffer->ToString();
}

arrow::Result<std::shared_ptr<arrow::Schema>> ReadSchemaMessage(std::string_view bytes,
                                                                std::string_view what) {
  if (bytes.empty()) return arrow::Status::Invalid(what, ": empty schema message");
  // Non-owning: the message is decoded (and copied into the schema) before this returns.
  auto buffer = std::make_shared<arrow::Buffer>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                static_cast<int64_t>(bytes.size()));
  arrow::io::BufferReader reader(buffer);
  auto message = arrow::ipc::ReadMessage(&reader);
  if (!message.ok()) {
    return arrow::Status::Invalid(
        what, ": not an Arrow IPC schema message: ", message.status().message());
  }
  if (*message == nullptr) return arrow::Status::Invalid(what, ": empty schema message");
  if ((*message)->type() != arrow::ipc::MessageType::SCHEMA) {
    return arrow::Status::Invalid(what, ": an Arrow IPC ",
                                  arrow::ipc::FormatMessageType((*message)->type()),
                                  " message, not a schema message");
  }
  ARROW_ASSIGN_OR_RAISE(int64_t end, reader.Tell());
  if (end != buffer->size()) {
    return arrow::Status::Invalid(what, ": ", buffer->size() - end,
                                  " bytes after the schema message");
  }
  arrow::ipc::DictionaryMemo memo;
  auto schema = arrow::ipc::ReadSchema(**message, &memo);
  if (!schema.ok()) {
    return arrow::Status::Invalid(what,
                                  ": not an Arrow IPC schema message: ", schema.status().message());
  }
  return schema;
}

}  // namespace sluice::storage
